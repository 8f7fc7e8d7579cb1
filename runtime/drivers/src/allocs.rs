//! Allocation recordings read back: the file `sonde tool allocrecord -o FILE` writes (a sonde
//! recording of `stdlib/allocrecord.sd`) as the calls of [`sonde_allocs::ops`], for
//! `sonde tool allocreplay`.
//!
//! The recording is checked to be allocrecord's before anything else is read: the script's
//! name in its header, and its events exactly (each `printf` one of the tool's two formats
//! with its integer arguments, besides the `clear()` and `exit()` events of its END and
//! duration). Each call event is decoded into an [`Op`]; the calls are sorted by
//! [`Op::time_ns`] (stably: ties stay in recorded order). A file that is not a recording,
//! a recording of another script, a corrupt one and one cut short (its run was killed before
//! it ended) are refused with the byte offset where they went wrong: a replay of part of a
//! program's calls would measure something else.

use crate::record::{Entry, EntryStream, RawEntries, RecordError};
use sonde_allocs::ops::{Call, Op, Recording};
use sonde_compiler::program::EventSpec;
use sonde_lang::diag::Diagnostic;
use sonde_lang::span::Span;
use sonde_lang::types::{Type, tuple_layout};
use std::io::Read;
use std::path::Path;

/// The name an allocrecord recording's header gives its script.
pub const SCRIPT_NAME: &str = "tool:allocrecord";
/// The format of the event each recorded call sends (`stdlib/allocrecord.sd`'s `emit`).
pub const CALL_FORMAT: &str =
    "call=%lu tid=%lu time=%lu size=%lu align=%lu ptr=%lu result=%lu stack=%lu\n";
/// The format of the event that names what was recorded (its BEGIN).
pub const TARGET_FORMAT: &str = "allocrecord target=%d command=%s\n";
/// Where a recording's header starts: after the magic, the version and its length.
const HEADER_OFFSET: u64 = 20;

/// Code of a file that is not a sonde recording, or not one this sonde reads.
pub const NOT_A_RECORDING: &str = "sonde::allocs::not_a_recording";
/// Code of a sonde recording of another script.
pub const FOREIGN: &str = "sonde::allocs::foreign";
/// Code of a recording that is corrupt, or cut before its end.
pub const DAMAGED: &str = "sonde::allocs::damaged";

/// What the header's events are: for each event index, how its records decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A recorded call: its eight integers, at these offsets with these types.
    Call([(u32, Int); 8]),
    /// The target: its pid at offset 0, the command's text from offset `.0`.
    Target(u32),
    /// `clear()` or `exit()`: nothing to decode.
    Other,
}

/// Reads the allocation recording at `path`.
pub fn read(path: &Path) -> Result<Recording, Diagnostic> {
    let shown = path.display().to_string();
    let cannot = |e: std::io::Error| {
        Diagnostic::error(
            NOT_A_RECORDING,
            Span::default(),
            format!("cannot read {shown}: {e}"),
        )
    };
    let (file, len) = crate::record::open_recording(path).map_err(|e| match e {
        crate::record::OpenError::Io(e) => cannot(e),
        crate::record::OpenError::NotARecording(e) => not_a_recording(&shown, &e),
    })?;
    read_from(file, len, &shown)
}

/// Reads an allocation recording of `len` bytes from `input`, named `shown` in messages.
pub fn read_from(input: impl Read, len: u64, shown: &str) -> Result<Recording, Diagnostic> {
    let mut stream = EntryStream::open(input, len).map_err(|e| not_a_recording(shown, &e))?;
    let kinds = kinds(stream.header(), shown)?;
    let mut rec = Recording::default();
    let mut ended = false;
    for entry in stream.by_ref() {
        let entry = entry.map_err(|e| damaged(shown, &e, rec.ops.len()))?;
        match entry {
            Entry::Event { record, .. } => decode(&record, &kinds, &mut rec),
            Entry::ExitMaps { maps } => {
                rec.unfinished = map_total(&maps, "unfinished");
                rec.unstarted = map_total(&maps, "unstarted");
            }
            Entry::Counters { lost_events, .. } => rec.lost_events = lost_events,
            Entry::End { .. } => ended = true,
            _ => {}
        }
    }
    if let Some(cut) = stream.cut().filter(|_| !ended) {
        return Err(Diagnostic::error(
            DAMAGED,
            Span::default(),
            format!(
                "{shown} was cut at byte {} (after {} calls): its recording did not end",
                cut.offset,
                rec.ops.len()
            ),
        )
        .with_help(
            "a recording killed before it ended holds part of the program's calls: record again",
        ));
    }
    rec.ops.sort_by_key(|op| op.time_ns);
    Ok(rec)
}

/// An integer argument's width in bytes and signedness.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Int {
    bytes: u8,
    signed: bool,
}

impl Int {
    /// An integer type's, or `None` for another type.
    fn of(t: &Type) -> Option<Int> {
        match t {
            Type::Int { bits, signed } if matches!(bits, 8 | 16 | 32 | 64) => Some(Int {
                bytes: bits / 8,
                signed: *signed,
            }),
            _ => None,
        }
    }

    /// The value at `at` of `payload`, sign-extended when signed (0 past its end: the
    /// record reader checked that a printf record holds its whole layout).
    fn read(self, payload: &[u8], at: u32) -> u64 {
        let n = usize::from(self.bytes);
        let Some(b) = payload.get(at as usize..at as usize + n) else {
            return 0;
        };
        let mut v = [0u8; 8];
        v[..n].copy_from_slice(b);
        let raw = u64::from_le_bytes(v);
        let shift = 64 - 8 * n as u32;
        if self.signed && shift > 0 {
            (((raw << shift) as i64) >> shift) as u64
        } else {
            raw
        }
    }
}

/// How each of the header's events decodes, or why the recording is not allocrecord's.
fn kinds(header: &crate::record::Header, shown: &str) -> Result<Vec<Kind>, Diagnostic> {
    let foreign = |what: String| {
        Diagnostic::error(
            FOREIGN,
            Span::default(),
            format!("{shown} is not an allocation recording: at byte {HEADER_OFFSET} {what}"),
        )
        .with_help("record one with `sonde tool allocrecord -o FILE (-c CMD | -p PID)`")
    };
    if header.name != SCRIPT_NAME {
        return Err(foreign(format!(
            "its header names the script `{}`",
            header.name
        )));
    }
    let int64 = |t: &Type| matches!(t, Type::Int { bits: 64, .. });
    let ints = |args: &[Type]| args.iter().map(Int::of).collect::<Option<Vec<Int>>>();
    let mut kinds = Vec::with_capacity(header.events.len());
    let mut calls = 0;
    for (i, e) in header.events.iter().enumerate() {
        let kind = match e {
            EventSpec::Printf { format, args }
                if format == CALL_FORMAT && args.len() == 8 && ints(args).is_some() =>
            {
                calls += 1;
                let (offsets, _) = tuple_layout(args);
                let types = ints(args).unwrap_or_default();
                let mut at = [(0u32, Int::default()); 8];
                for (i, slot) in at.iter_mut().enumerate() {
                    *slot = (offsets[i], types[i]);
                }
                Kind::Call(at)
            }
            EventSpec::Printf { format, args }
                if format == TARGET_FORMAT
                    && args.len() == 2
                    && int64(&args[0])
                    && matches!(args[1], Type::Str { .. }) =>
            {
                Kind::Target(tuple_layout(args).0[1])
            }
            // A map-full warning (the counters say how many updates failed).
            EventSpec::ClearMap { .. } | EventSpec::Exit | EventSpec::HelperError { .. } => {
                Kind::Other
            }
            other => {
                return Err(foreign(format!(
                    "its event {i} is not one of allocrecord's ({other:?})"
                )));
            }
        };
        kinds.push(kind);
    }
    if calls == 0 {
        return Err(foreign("its events have no call event".into()));
    }
    Ok(kinds)
}

/// The little-endian u64 at `at` of `payload` (0 past its end: the reader checked that a
/// printf record holds its whole layout).
fn u64_at(payload: &[u8], at: u32) -> u64 {
    payload
        .get(at as usize..at as usize + 8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// Adds what event record `record` (8-byte event index, then its payload) says to `rec`.
fn decode(record: &[u8], kinds: &[Kind], rec: &mut Recording) {
    let Some((id, payload)) = record.split_first_chunk::<8>() else {
        return;
    };
    let Some(kind) = usize::try_from(u64::from_le_bytes(*id))
        .ok()
        .and_then(|i| kinds.get(i))
    else {
        return;
    };
    match *kind {
        Kind::Call(at) => {
            let f = at.map(|(o, int)| int.read(payload, o));
            // A code no version of the tool sends is skipped (the layout was checked).
            let Some(call) = Call::from_code(f[0]) else {
                return;
            };
            rec.ops.push(Op {
                call,
                tid: f[1] as u32,
                time_ns: f[2],
                size: f[3],
                align: f[4],
                ptr: f[5],
                result: f[6],
                stack: f[7],
            });
        }
        Kind::Target(text) => {
            let pid = u64_at(payload, 0) as u32;
            let command = payload.get(text as usize..).unwrap_or_default();
            let end = command
                .iter()
                .position(|&b| b == 0)
                .unwrap_or(command.len());
            let command = String::from_utf8_lossy(&command[..end]).into_owned();
            rec.pid = (pid != 0).then_some(pid);
            rec.target = if command.is_empty() {
                format!("pid {pid}")
            } else {
                command
            };
        }
        Kind::Other => {}
    }
}

/// The sum over every element and CPU slot of map `name`'s 8-byte values at exit (a
/// count's per-CPU slots, or one plain value); 0 when the map is absent or empty.
fn map_total(maps: &[(String, RawEntries)], name: &str) -> u64 {
    maps.iter()
        .filter(|(n, _)| n == name)
        .flat_map(|(_, entries)| entries.iter())
        .flat_map(|(_, slots)| slots.iter())
        .map(|v| u64_at(v, 0))
        .fold(0, u64::wrapping_add)
}

fn not_a_recording(shown: &str, e: &RecordError) -> Diagnostic {
    Diagnostic::error(NOT_A_RECORDING, Span::default(), format!("{shown}: {e}"))
        .with_help("give the file `sonde tool allocrecord -o FILE` wrote")
}

fn damaged(shown: &str, e: &RecordError, calls: usize) -> Diagnostic {
    Diagnostic::error(
        DAMAGED,
        Span::default(),
        format!("{shown} is corrupt {e} (after {calls} calls)"),
    )
    .with_help("the file was changed after it was recorded: record again")
}

#[cfg(test)]
#[path = "allocs_tests.rs"]
mod tests;
