//! The file format of `sonde record` / `sonde replay`: everything needed to print a run
//! again, byte for byte, without root and on another machine.
//!
//! A recording is a [`Header`] (the script and what its compiled program sends) followed by
//! a stream of [`Entry`]s: the raw ring-buffer records as the kernel sent them, the text of
//! events whose output came from the recording machine (`time()`, `cat()`, `system()`), map
//! contents read by `print(@m)` and at exit, and every name a printer asked the
//! [`Resolver`](sonde_present::output::Resolver) for (stacks, symbols, user names, ...).
//! [`RecordWriter`] writes one, [`read_recording`] reads one back ([`EntryStream`] one entry
//! at a time, from a file of any size), [`RecordingResolver`]
//! remembers the names while recording and [`ReplayResolver`] answers with them on replay.
//!
//! # Layout (format version 1.2)
//!
//! All integers are little-endian. Notation used below:
//!
//! - `bool`: one byte, 0 or 1 (anything else is an error);
//! - `str`: `u32` byte length, then that many bytes of UTF-8 (invalid UTF-8 is an error);
//! - `bytes`: `u32` byte length, then the bytes;
//! - `opt<T>`: one byte 0 (none) or 1 followed by a `T`;
//! - `list<T>`: `u32` count, then that many `T`s.
//!
//! ## File
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `SONDEREC` |
//! | 8 | 2 | `u16` major version (1): a reader rejects a major it does not know |
//! | 10 | 2 | `u16` minor version (2): a newer minor only adds entry tags or appends fields |
//! | 12 | 8 | `u64` header length `H` |
//! | 20 | `H` | the header |
//! | 20+`H` | … | entries, up to the end of the file; the last one is `End` |
//!
//! ## Header
//!
//! `str` name (as shown in messages), `str` source text, `bool` print_maps_on_exit,
//! `list<EventSpec>` events, `list<MapSpec>` maps, `bytes` str_trunc_trailer (since 1.1; a
//! 1.0 recording printed bpftrace's default, `..`). Bytes after these, up to `H`, come from a
//! newer minor version and are skipped. Records (structs) are shared across the whole header:
//! see `Type` below.
//!
//! `EventSpec`: a `u8` tag then its fields —
//! 0 `Printf` (`str` format, `list<Type>` args), 1 `PrintValue` (`Type`),
//! 2 `PrintMap` (`str` map, `u64` top, `u64` div), 3 `ClearMap` (`str` map),
//! 4 `ZeroMap` (`str` map), 5 `Time` (`str` format), 6 `Cat` (`str` format, `list<Type>`),
//! 7 `System` (`str` format, `list<Type>`), 8 `Join` (`str` sep, `u32` count,
//! `u32` elem_size), 9 `Exit`, 10 `HelperError` (`str` helper, `u64` span start, `u64` span
//! end; `-k`), 11 `Log` (`u8` 1 for `errorf`, 0 for `warnf`, `str` format, `list<Type>`,
//! `u64` span start, `u64` span end).
//!
//! `MapSpec`: `str` symbol, `u8` kind (0 hash, 1 per-CPU hash, 2 array, 3 per-CPU array,
//! 4 ring buffer, 5 stack trace, 6 prog array, 7 LRU hash, 8 LRU per-CPU hash, 9 build-id
//! stack trace), `u32` key_size, `u32` value_size, `u32` max_entries, then
//! the role: a `u8` tag — 0 `User` (`str` name without `@`, `opt<Type>` key, `Type` value),
//! 1 `Events`, 2 `Scratch`, 3 `Stacks` (`bool` kernel), 4 `Counters`, 5 `SyscallTable`,
//! 6 `Delta`, 7 `BuildIdStacks`.
//!
//! `Type`: a `u8` tag then its fields — 0 `Void`, 1 `Bool`, 2 `Int` (`u8` bits, `bool`
//! signed), 3 `Str` (`u32` size), 4 `Buf` (`u32` size), 5 `Ptr` (`Type` pointee, `u8` space:
//! 0 kernel, 1 user, 2 unknown), 6 `Record` defined here (`str` name, `u32` size, `bool`
//! is_union, `list<Field>`), 7 `Array` (`Type` elem, `u32` len), 8 `Tuple` (`list<Type>`),
//! 9 `Enum` (`str` name, `u8` bits), 10 `Stack` (`bool` kernel, `u8` mode: 0 bpftrace,
//! 1 perf, 2 raw, 3 build_id, `u32` limit), 11 `Symbol` (`bool` kernel), 12 `Inet`, 13 `MacAddr`,
//! 14 `Timestamp`, 15 `Username`, 16 `CgroupPath`, 17 `Agg` (`AggKind`), 18 `Record` defined
//! earlier (`u32` record number), 19 `CgroupPath` with a filter (`str`). Records are numbered 0, 1, … in the order their definitions
//! (tag 6) *end* in the header, so a record used several times is written once. Types nest at
//! most [`MAX_TYPE_DEPTH`] deep. Unknown tags are an error.
//!
//! `Field`: `str` name, `u32` offset, `Type` ty, `opt<(u8 bit offset, u8 bit width)>`
//! bitfield, `bool` data_loc.
//!
//! `AggKind`: a `u8` tag — 0 `Count`, 1 `Sum`, 2 `Avg`, 3 `Min`, 4 `Max`, 5 `Stats` (each
//! of 1–5 followed by `bool` signed), 6 `Hist` (`u8` bits), 7 `Lhist` (`i64` min, `i64` max,
//! `i64` step), 8 `Tseries` (`i64` interval_ns, `i64` num_intervals, `u8` aggregation: 0 last,
//! 1 avg, 2 max, 3 min, 4 sum, `bool` signed).
//!
//! ## Entries
//!
//! Each entry is a `u8` tag, a `u64` body length `L` and `L` bytes of body. A reader skips
//! entries with a tag it does not know (a newer minor version), and ignores bytes at the end
//! of a known body after the fields it knows. Tag 0 is never written and is an error (it is
//! what a zero-filled tail looks like). Bodies, by tag:
//!
//! | tag | entry | body |
//! |---|---|---|
//! | 1 | `Attached` | `u64` probes |
//! | 2 | `Event` | `u64` ts_ns, `bytes` record: 8-byte event index into the header's events, then the payload, exactly as the kernel sent it |
//! | 3 | `Text` | `u64` ts_ns, `u32` event (a `Time`, `Cat` or `System` spec), `bytes` text |
//! | 4 | `MapPrint` | `u64` ts_ns, `u32` event (a `PrintMap` spec), `RawEntries` |
//! | 5 | `ExitMaps` | `list<(str map name without @, RawEntries)>` |
//! | 6 | `Stack` | `bool` kernel, `u64` raw, `u32` limit, `opt<(list<Frame>, list<FrameSource>)>` frames (the second list since 1.2, one per frame) |
//! | 7 | `Symbol` | `bool` kernel, `u64` addr, `opt<str>` name |
//! | 8 | `UserSymbol` | `u32` pid, `u64` addr, `opt<str>` name |
//! | 9 | `Username` | `u64` uid, `opt<str>` name |
//! | 10 | `CgroupPath` | `u64` id, `opt<str>` path |
//! | 11 | `Timestamp` | `u64` tag, `u64` nsecs, `opt<str>` text |
//! | 12 | `Counters` | `u64` lost_events, `u64` map_full, `u64` loops_cut (absent in older recordings: 0) |
//! | 13 | `End` | `u8` exit_code |
//!
//! `RawEntries`: `list<(bytes key, list<bytes> values)>`, one value per CPU slot for per-CPU
//! maps (what [`RawMap::entries`](sonde_kernel::maps::RawMap::entries) returns). `Frame`: `u64`
//! addr, `opt<str>` symbol, `opt<str>` module. `FrameSource`: `opt<str>` source
//! (`DIR/FILE:LINE`), `bool` inlined (a function inlined at the address, `show_debug_info`).
//!
//! The resolution entries (tags 6–11) hold the answer a [`Resolver`](sonde_present::output::Resolver)
//! method gave for its arguments; `none` is a recorded "could not resolve". A recorder writes
//! one when an answer is new or differs from the previous one for the same arguments, and
//! writes it *before* the entry whose printing asked for it, so a replay that learns them in
//! stream order always has the answer the recording run printed.
//!
//! ## Robustness
//!
//! [`read_recording`] never panics: a foreign file, a truncated header, an unknown major
//! version, a length or count larger than the bytes left inside an entry, an event index out
//! of range or invalid UTF-8 give a [`RecordError`] naming the byte offset where the file went
//! wrong. A file that ends before its `End` entry (a recording run killed by SIGKILL, which
//! leaves what the recorder flushed; it flushes at least once a second) is read up to its last
//! whole entry, and [`Recording::cut`] says where it stopped. [`recording_start`] checks the
//! magic and version from a file's first bytes, before it is read whole. Lengths and counts
//! are checked against the bytes remaining before anything is allocated. So are, to keep
//! replay from panicking or exhausting memory on a corrupt header, types printing could not
//! handle: integers and enums that are not whole bytes of 8 to 64 bits, bit fields of no bits
//! or reaching past bit 63, sizes past 32 bits, and types of printed values (event arguments,
//! map keys and values; pointees excepted) that would decode into more than 2^20 values. A
//! printf `Event` record must hold its whole argument layout (the kernel always sends it).

mod codec;
mod reader;
mod resolver;
mod spec;
mod stream;
mod writer;

#[cfg(test)]
#[path = "fixtures_tests.rs"]
mod fixtures;

pub use reader::{OpenError, START_LEN, open_recording, read_recording, recording_start};
pub use resolver::{RecordingResolver, ReplayResolver};
pub use stream::EntryStream;
pub use writer::RecordWriter;

use sonde_compiler::program::{EventSpec, MapSpec};
use sonde_compiler::value::Frame;
use std::fmt;

/// The bytes every recording starts with.
pub const MAGIC: &[u8; 8] = b"SONDEREC";
/// The format's major version: readers reject any other.
pub const VERSION_MAJOR: u16 = 1;
/// The format's minor version: newer minors stay readable (unknown entries are skipped).
pub const VERSION_MINOR: u16 = 2;
/// How deep types may nest (pointers, arrays, tuples, records); deeper ones are refused by
/// the writer and the reader alike.
pub const MAX_TYPE_DEPTH: u32 = 256;

/// What a recording knows of the script, written once at its start.
#[derive(Clone, Debug, PartialEq)]
pub struct Header {
    /// The script's display name (file name, or `-e` for an inline program).
    pub name: String,
    /// Its source text.
    pub source: String,
    /// The compiled script's event kinds (an `Event` record's first 8 bytes index them).
    pub events: Vec<EventSpec>,
    /// The compiled script's maps.
    pub maps: Vec<MapSpec>,
    /// The script's `print_maps_on_exit` config flag.
    pub print_maps_on_exit: bool,
    /// What the run printed after a string cut to its size (the script's
    /// `str_trunc_trailer`).
    pub str_trunc_trailer: Vec<u8>,
}

/// A map's contents: `(key bytes, one value byte vector per CPU slot)` per element, as
/// [`RawMap::entries`](sonde_kernel::maps::RawMap::entries) returns them.
pub type RawEntries = Vec<(Vec<u8>, Vec<Vec<u8>>)>;

/// One item of a recording's stream, in the order things happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    /// Every probe was attached.
    Attached {
        /// How many.
        probes: u64,
    },
    /// A raw ring-buffer record.
    Event {
        /// When it was read (nanoseconds, as the recorder's clock says).
        ts_ns: u64,
        /// The record as the kernel sent it: 8-byte little-endian event index, then payload.
        record: Vec<u8>,
    },
    /// The text a `time()`, `cat()` or `system()` event produced on the recording machine.
    Text {
        /// When it was handled.
        ts_ns: u64,
        /// Index of its event spec.
        event: u32,
        /// The output.
        text: Vec<u8>,
    },
    /// A map's contents when a `print(@m)` event was handled.
    MapPrint {
        /// When it was handled.
        ts_ns: u64,
        /// Index of the `PrintMap` event spec.
        event: u32,
        /// The map's contents.
        entries: RawEntries,
    },
    /// Every user map's contents at exit.
    ExitMaps {
        /// `(name without @, contents)` per map.
        maps: Vec<(String, RawEntries)>,
    },
    /// [`Resolver::stack`](sonde_present::output::Resolver::stack)'s answer.
    Stack {
        /// Kernel stack when true.
        kernel: bool,
        /// The 8 bytes the program wrote.
        raw: u64,
        /// Frame limit asked for.
        limit: u32,
        /// The answer.
        frames: Option<Vec<Frame>>,
    },
    /// [`Resolver::symbol`](sonde_present::output::Resolver::symbol)'s answer.
    Symbol {
        /// Kernel address when true.
        kernel: bool,
        /// The address.
        addr: u64,
        /// The answer.
        name: Option<String>,
    },
    /// [`Resolver::user_symbol`](sonde_present::output::Resolver::user_symbol)'s answer.
    UserSymbol {
        /// The process.
        pid: u32,
        /// The address.
        addr: u64,
        /// The answer.
        name: Option<String>,
    },
    /// [`Resolver::username`](sonde_present::output::Resolver::username)'s answer.
    Username {
        /// The uid.
        uid: u64,
        /// The answer.
        name: Option<String>,
    },
    /// [`Resolver::cgroup_path`](sonde_present::output::Resolver::cgroup_path)'s answer.
    CgroupPath {
        /// The cgroup id.
        id: u64,
        /// The answer.
        path: Option<String>,
    },
    /// [`Resolver::timestamp`](sonde_present::output::Resolver::timestamp)'s answer.
    Timestamp {
        /// The format tag.
        tag: u64,
        /// The boot-time nanoseconds.
        nsecs: u64,
        /// The answer.
        text: Option<String>,
    },
    /// The kernel-side counters read at exit.
    Counters {
        /// Events that did not fit in the ring buffer.
        lost_events: u64,
        /// Map updates that failed because the map was full.
        map_full: u64,
        /// `for` ranges cut to the `bpf_loop` limit.
        loops_cut: u64,
    },
    /// The run ended; always the last entry.
    End {
        /// The process exit code of the recording run.
        exit_code: u8,
    },
}

impl Entry {
    /// True for the answers of a [`Resolver`](sonde_present::output::Resolver) (`Stack` through
    /// `Timestamp`).
    pub fn is_resolution(&self) -> bool {
        matches!(
            self,
            Entry::Stack { .. }
                | Entry::Symbol { .. }
                | Entry::UserSymbol { .. }
                | Entry::Username { .. }
                | Entry::CgroupPath { .. }
                | Entry::Timestamp { .. }
        )
    }
}

/// A whole recording, read back.
#[derive(Clone, Debug, PartialEq)]
pub struct Recording {
    /// The script.
    pub header: Header,
    /// The stream, in file order, ending with [`Entry::End`] (unknown entries left out)
    /// unless the recording was cut.
    pub entries: Vec<Entry>,
    /// Where the file ended before its `End` entry, when it did.
    pub cut: Option<Cut>,
}

/// Where a recording without its `End` entry stops: a recording run killed (SIGKILL, a
/// crash, a full disk) leaves the entries it flushed, the last one perhaps in part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cut {
    /// The byte offset of the first entry that is not whole (the file's length when the
    /// cut fell between entries).
    pub offset: u64,
    /// How many whole entries come before it.
    pub entries: u64,
}

/// Why a recording could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordError {
    /// Byte offset in the file where it went wrong.
    pub offset: u64,
    /// What was wrong.
    pub message: String,
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at byte {}: {}", self.offset, self.message)
    }
}

impl std::error::Error for RecordError {}
