//! Printing decoded values: bpftrace 0.17's text output, its `-f json` NDJSON, sonde's
//! folded stacks and `-f csv`.
//!
//! The event loop and the map reader hand [`Value`]s (from `sonde_compiler::value`) to a
//! [`Printer`]; names the program cannot know (stack frames, symbols, user names, cgroup
//! paths, formatted timestamps) come from a [`Resolver`] owned by the runtime. The printers
//! only format: they never touch the kernel, so their output is tested without one.

pub mod buffer;
pub mod cgroup_paths;
pub mod csv;
pub mod folded;
pub mod gfp;
pub mod hist;
pub mod json;
pub mod printf;
pub mod rows;
pub mod source;
pub mod stacks;
#[cfg(test)]
pub(crate) mod testing;
pub mod text;
pub mod tseries;

pub use csv::CsvPrinter;
pub use folded::FoldedPrinter;
pub use json::JsonPrinter;
pub use printf::{format_printf, format_printf_with};
pub use source::{Counts, MapSource, RawEntries, counters};
pub use text::TextPrinter;

use sonde_compiler::value::{Frame, Value};
use sonde_lang::span::Span;
use sonde_lang::types::Type;
use std::io;

/// Turns raw ids and addresses into names. Every method may return `None` (the value is then
/// printed raw: addresses as `0x...`, ids as numbers).
pub trait Resolver {
    /// The frames of the stack stored under `raw` (the 8 bytes the program wrote).
    fn stack(&self, kernel: bool, raw: u64, limit: u32) -> Option<Vec<Frame>> {
        let _ = (kernel, raw, limit);
        None
    }
    /// `func+off` for a code address.
    fn symbol(&self, kernel: bool, addr: u64) -> Option<String> {
        let _ = (kernel, addr);
        None
    }
    /// The function name of a user address in process `pid` (`usym()`).
    fn user_symbol(&self, pid: u32, addr: u64) -> Option<String> {
        let _ = (pid, addr);
        None
    }
    /// The user name of a uid.
    fn username(&self, uid: u64) -> Option<String> {
        let _ = uid;
        None
    }
    /// The path of a cgroup id.
    fn cgroup_path(&self, id: u64) -> Option<String> {
        let _ = id;
        None
    }
    /// The path of a cgroup id in the hierarchies whose name matches wildcard `filter`
    /// (`cgroup_path(id, filter)`); by default [`Resolver::cgroup_path`]'s text, filtered.
    fn cgroup_path_in(&self, id: u64, filter: &str) -> Option<String> {
        self.cgroup_path(id)
            .map(|paths| cgroup_paths::filter_paths(&paths, filter))
    }
    /// A `strftime()` timestamp formatted with the format the compiler tagged `tag`.
    fn timestamp(&self, tag: u64, nsecs: u64) -> Option<String> {
        let _ = (tag, nsecs);
        None
    }
    /// The enumerator of enum `tag` with this value (text output prints enums by name).
    fn enum_variant(&self, tag: &str, value: i64) -> Option<String> {
        let _ = (tag, value);
        None
    }
}

/// A [`Resolver`] that resolves nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoResolver;

impl Resolver for NoResolver {}

/// The contents of one map, read from the kernel and decoded.
#[derive(Clone, Debug, PartialEq)]
pub struct MapDump {
    /// Name without `@` (empty for `@`).
    pub name: String,
    /// The value type (`Type::Agg` for aggregations), which decides the layout even when the
    /// map is empty.
    pub value_type: Type,
    /// `(key, value)` pairs in kernel iteration order; the key is `Value::None` for a map
    /// without keys and a `Value::Tuple` for multi-key maps.
    pub entries: Vec<(Value, Value)>,
}

/// `print(@map, top, div)` options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrintOpts {
    /// Print only the last `top` entries after sorting (the largest); 0 = all.
    pub top: u64,
    /// Divide printed values by this (1 = unchanged; 0 is treated as 1).
    pub div: u64,
}

impl Default for PrintOpts {
    fn default() -> Self {
        PrintOpts { top: 0, div: 1 }
    }
}

/// An output format.
pub trait Printer {
    /// Announces that every probe is attached, on the output itself: the JSON printer writes
    /// bpftrace's `attached_probes` message; text formats print nothing here (sonde says
    /// "Attached N probes" on stderr in every format).
    fn attached(&mut self, probes: usize) -> io::Result<()> {
        let _ = probes;
        Ok(())
    }
    /// Reports error counters that grew (`new` holds the increases; `max_entries` is the
    /// largest user map's size). Text formats write bpftrace's "Lost N events" and sonde's
    /// warnings on stderr; JSON writes records on the output.
    fn counts(&mut self, new: crate::output::Counts, max_entries: u32) -> io::Result<()> {
        if new.lost_events > 0 {
            eprintln!("Lost {} events", new.lost_events);
        }
        if new.map_full > 0 {
            eprintln!(
                "WARNING: {} map updates failed because a map was full (max {max_entries} entries; raise config max_map_keys, or declare the map larger: `let @m = hash(N);`)",
                new.map_full
            );
        }
        if new.loops_cut > 0 {
            eprintln!(
                "WARNING: {} loops cut to {} iterations (the kernel's bpf_loop limit)",
                new.loops_cut,
                sonde_lang::limits::MAX_LOOP_ITERATIONS
            );
        }
        if new.stacks_dropped > 0 {
            eprintln!(
                "WARNING: {} stacks were not stored (the stack map's bucket held another stack): they print as empty stacks",
                new.stacks_dropped
            );
        }
        if new.maps_lost > 0 {
            eprintln!(
                "Lost {} process address-map records: user addresses of some processes may print unresolved",
                new.maps_lost
            );
        }
        if new.probes_skipped > 0 {
            let (n, were) = match new.probes_skipped {
                1 => ("firing", "was"),
                _ => ("firings", "were"),
            };
            eprintln!(
                "WARNING: {} probe {n} {were} skipped by the kernel (a BPF program was already running on that CPU): counts may be short",
                new.probes_skipped
            );
        }
        if new.maps_evicted > 0 {
            eprintln!(
                "WARNING: the address maps of {} exited processes were dropped (sonde keeps {}): their user addresses may print unresolved",
                new.maps_evicted,
                sonde_system::symbols::procmaps::MAX_EXITED_KEPT
            );
        }
        Ok(())
    }
    /// Output of `printf()` (already formatted).
    fn printf(&mut self, text: &[u8]) -> io::Result<()>;
    /// A `printf()` event: its text and its arguments. Formats that show the arguments
    /// rather than the text (CSV) override this; the others print the text.
    fn printf_event(&mut self, text: &[u8], args: &[Value]) -> io::Result<()> {
        let _ = args;
        self.printf(text)
    }
    /// Output of `time()` (already formatted).
    fn time(&mut self, text: &[u8]) -> io::Result<()>;
    /// The columns of an event tool's rows (its header line, `text`; see [`rows`]). Text
    /// formats print the text; CSV a row of the names; JSON nothing (each row names them).
    fn columns(&mut self, columns: &[String], text: &[u8]) -> io::Result<()> {
        let _ = columns;
        self.printf(text)
    }
    /// One event of an event tool: its line `text` and its `fields`, one per column (see
    /// [`rows`]). Text formats print the text; CSV a row; JSON a `row` record.
    fn row(&mut self, columns: &[String], fields: &[Value], text: &[u8]) -> io::Result<()> {
        let _ = (columns, fields);
        self.printf(text)
    }
    /// Output of `cat()`: the file's contents. JSON writes bpftrace's `cat` message; text
    /// formats print the bytes.
    fn cat(&mut self, text: &[u8]) -> io::Result<()> {
        self.printf(text)
    }
    /// Output of `join()`: the joined strings, without the newline text formats end it with.
    /// JSON writes bpftrace's `join` message.
    fn join(&mut self, text: &[u8]) -> io::Result<()> {
        let mut line = text.to_vec();
        line.push(b'\n');
        self.printf(&line)
    }
    /// Output of `system()`: what the command wrote on its standard output. JSON writes
    /// bpftrace's `syscall` message; text formats print the bytes.
    fn syscall(&mut self, text: &[u8]) -> io::Result<()> {
        self.printf(text)
    }
    /// A helper call failed (`-k`; `retcode` is its negative errno) at `span` of the script.
    /// Text formats warn on stderr with the place in the script, as bpftrace does; JSON
    /// writes bpftrace's `helper_error` message.
    fn helper_error(&mut self, helper: &str, retcode: i64, span: Span) -> io::Result<()> {
        sonde_system::warnings::helper_error(helper, retcode, span);
        Ok(())
    }
    /// `errorf`/`warnf` (`error` tells which) printed `text` at `span` of the script. Text
    /// formats write bpftrace's `FILE:LINE:COL-END: ERROR: text` on stderr (a warning
    /// unless warnings are silenced); JSON writes bpftrace's `errorf`/`warnf` message.
    fn log(&mut self, error: bool, text: &str, span: Span) -> io::Result<()> {
        sonde_system::warnings::log(error, text, span);
        Ok(())
    }
    /// A result of `--test` or `--bench` (see [`crate::selftest`]): text formats write
    /// `text`; JSON writes bpftrace's `record_type` record of `json` instead.
    fn self_test(&mut self, text: &[u8], record_type: &str, json: &str) -> io::Result<()> {
        let _ = (record_type, json);
        self.printf(text)
    }
    /// `print(value)` of a non-map value.
    fn value(&mut self, value: &Value) -> io::Result<()>;
    /// A whole map (`print(@m)` or at exit); entries are sorted here.
    fn map(&mut self, map: &MapDump, opts: PrintOpts) -> io::Result<()>;
    /// Written once at exit before the maps (bpftrace prints two newlines, in both formats).
    fn exit_maps_start(&mut self) -> io::Result<()>;
    /// The maps printed at exit: every map, in name order, after [`Printer::exit_maps_start`].
    fn exit_maps(&mut self, maps: &[MapDump]) -> io::Result<()> {
        self.exit_maps_start()?;
        self.maps_by_name(maps)
    }
    /// Writes out whatever the printer buffers. The run loop calls it after each batch of
    /// events, so output is written in large chunks yet never waits behind an idle loop.
    fn flush(&mut self) -> io::Result<()>;
    /// Every map, in name order (what [`Printer::exit_maps`] prints after its start).
    fn maps_by_name(&mut self, maps: &[MapDump]) -> io::Result<()> {
        let mut sorted: Vec<&MapDump> = maps.iter().collect();
        sorted.sort_by(|a, b| a.name.cmp(&b.name));
        for m in sorted {
            self.map(m, PrintOpts::default())?;
        }
        Ok(())
    }
}

/// Sorts a map's entries as bpftrace does and applies `top`.
pub(crate) fn ordered_entries(map: &MapDump, top: u64) -> Vec<(Value, Value)> {
    let mut entries = map.entries.clone();
    sonde_compiler::value::sort_entries(&mut entries);
    if top > 0 && (top as usize) < entries.len() {
        entries.drain(..entries.len() - top as usize);
    }
    entries
}
