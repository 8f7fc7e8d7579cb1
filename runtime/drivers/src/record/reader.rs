//! Reading a recording back, checking everything against the bytes the file holds.

use super::codec::{Cursor, Result};
use super::spec::TypeDecoder;
use super::stream::EntryStream;
use super::writer::tag;
use super::{Entry, Header, MAGIC, RawEntries, RecordError, Recording, VERSION_MAJOR};
use sonde_compiler::program::EventSpec;
use sonde_compiler::program::MapRole;
use sonde_compiler::value::{DEFAULT_STR_TRUNC_TRAILER, Frame};
use sonde_lang::types::tuple_layout;

/// Size of the fixed part before the header body: magic, versions, header length.
pub(super) const PREAMBLE: u64 = 20;

/// Reads a whole recording; errors name the byte offset where the file went wrong.
///
/// A recording that ends without [`Entry::End`], at the end of an entry or inside one (the
/// recording run was killed, or the file was cut), is read up to its last whole entry and
/// says where it was cut ([`Recording::cut`]); its header must be whole. Entries with a tag
/// this version does not know are skipped.
pub fn read_recording(bytes: &[u8]) -> std::result::Result<Recording, RecordError> {
    let mut stream = EntryStream::open(bytes, bytes.len() as u64)?;
    let entries = stream.by_ref().collect::<Result<Vec<Entry>>>()?;
    Ok(Recording {
        header: stream.header().clone(),
        entries,
        cut: stream.cut(),
    })
}

/// How many bytes [`recording_start`] looks at: the magic and the version.
pub const START_LEN: usize = 12;

/// Why a recording file could not be opened.
#[derive(Debug)]
pub enum OpenError {
    /// The file could not be opened or read (or is not a regular file).
    Io(std::io::Error),
    /// Its first bytes are not a recording's magic and a version this sonde reads.
    NotARecording(RecordError),
}

/// Opens the recording at `path` for a read from its start: refused unless it is a regular
/// file whose first bytes are a recording's magic and a version this sonde reads (so that a
/// file that is not a recording is named so before anything else is read). Returns it and
/// its length.
pub fn open_recording(
    path: &std::path::Path,
) -> std::result::Result<(std::io::BufReader<std::fs::File>, u64), OpenError> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = sonde_system::user_files::open(path, sonde_system::user_files::Pipes::Refuse)
        .map_err(OpenError::Io)?;
    let len = file.metadata().map_err(OpenError::Io)?.len();
    let mut start = Vec::new();
    (&mut file)
        .take(START_LEN as u64)
        .read_to_end(&mut start)
        .map_err(OpenError::Io)?;
    recording_start(&start).map_err(OpenError::NotARecording)?;
    file.seek(SeekFrom::Start(0)).map_err(OpenError::Io)?;
    Ok((std::io::BufReader::with_capacity(1 << 20, file), len))
}

/// Checks the first bytes of a file (its first [`START_LEN`], or the whole file when it is
/// shorter): the magic and a major version this sonde reads. So that a file that is not a
/// recording is refused before it is read whole.
pub fn recording_start(first: &[u8]) -> std::result::Result<(), RecordError> {
    let mut c = Cursor::new(&first[..first.len().min(START_LEN)], 0);
    read_preamble(&mut c).map(|_| ())
}

/// The magic and version; returns the minor version.
fn read_preamble(c: &mut Cursor<'_>) -> Result<u16> {
    if c.remaining() == 0 {
        return Err(c.error("the file is empty, not a sonde recording"));
    }
    let magic = &MAGIC[..];
    let n = c.remaining().min(magic.len());
    let start = c.take(n as u64, "the magic")?;
    if start != &magic[..n] {
        return Err(c.error_at(
            0,
            "not a sonde recording (it does not start with `SONDEREC`)",
        ));
    }
    if n < magic.len() {
        return Err(c.error("the file ends inside the magic `SONDEREC` (truncated)"));
    }
    let version_at = c.offset();
    let major = c.u16("the major version")?;
    let minor = c.u16("the minor version")?;
    if major != VERSION_MAJOR {
        let why = if major > VERSION_MAJOR {
            "newer than this sonde can read; replay it with a newer sonde"
        } else {
            "not a version sonde ever wrote"
        };
        return Err(c.error_at(
            version_at,
            format!(
                "recording format version {major}.{minor} is {why} (this sonde reads \
                 {VERSION_MAJOR}.x)"
            ),
        ));
    }
    Ok(minor)
}

pub(super) fn read_header(c: &mut Cursor<'_>) -> Result<Header> {
    let minor = read_preamble(c)?;
    let len = c.u64("the header length")?;
    debug_assert_eq!(c.offset(), PREAMBLE);
    let mut h = c.sub(len, "the header")?;
    let name = h.string("the script name")?;
    let source = h.string("the script source")?;
    let print_maps_on_exit = h.bool("the print_maps_on_exit flag")?;
    let mut types = TypeDecoder::default();
    // The smallest event is its kind byte; the smallest map spec is 18 bytes (symbol length,
    // kind, three sizes, role).
    let events = h.list(1, "the event count", |h| types.event(h))?;
    let maps = h.list(18, "the map count", |h| types.map(h))?;
    // Version 1.1 appended the trailer; a 1.0 recording printed bpftrace's default.
    let str_trunc_trailer = if minor >= 1 {
        h.bytes("the str_trunc_trailer")?
    } else {
        DEFAULT_STR_TRUNC_TRAILER.to_vec()
    };
    // Anything left in the header was appended by a newer minor version.
    Ok(Header {
        name,
        source,
        events,
        maps,
        print_maps_on_exit,
        str_trunc_trailer,
    })
}

/// Decodes one entry body; `None` for a tag this version does not know.
pub(super) fn read_entry(t: u8, c: &mut Cursor<'_>, header: &Header) -> Result<Option<Entry>> {
    Ok(Some(match t {
        tag::ATTACHED => Entry::Attached {
            probes: c.u64("the probe count")?,
        },
        tag::EVENT => read_event(c, header)?,
        tag::TEXT => read_text(c, header)?,
        tag::MAP_PRINT => read_map_print(c, header)?,
        tag::EXIT_MAPS => Entry::ExitMaps {
            // name (4) + entry count (4)
            maps: c.list(8, "the exit map count", |c| {
                let name = c.string("a map name")?;
                let entries = raw_entries(c, header, &name)?;
                Ok((name, entries))
            })?,
        },
        tag::STACK => read_stack(c)?,
        tag::SYMBOL => Entry::Symbol {
            kernel: c.bool("a symbol's kernel flag")?,
            addr: c.u64("a symbol address")?,
            name: opt_string(c, "a symbol name")?,
        },
        tag::USER_SYMBOL => Entry::UserSymbol {
            pid: c.u32("a user symbol's pid")?,
            addr: c.u64("a user symbol address")?,
            name: opt_string(c, "a user symbol name")?,
        },
        tag::USERNAME => Entry::Username {
            uid: c.u64("a uid")?,
            name: opt_string(c, "a user name")?,
        },
        tag::CGROUP_PATH => Entry::CgroupPath {
            id: c.u64("a cgroup id")?,
            path: opt_string(c, "a cgroup path")?,
        },
        tag::TIMESTAMP => Entry::Timestamp {
            tag: c.u64("a timestamp tag")?,
            nsecs: c.u64("a timestamp")?,
            text: opt_string(c, "a formatted timestamp")?,
        },
        tag::COUNTERS => Entry::Counters {
            lost_events: c.u64("the lost event count")?,
            map_full: c.u64("the map-full count")?,
            loops_cut: if c.remaining() == 0 {
                0
            } else {
                c.u64("the cut loop count")?
            },
        },
        tag::END => Entry::End {
            exit_code: c.u8("the exit code")?,
        },
        _ => return Ok(None),
    }))
}

/// Decodes an `Event` body: its record must name an event of the header and, for a printf,
/// hold the whole argument layout.
fn read_event(c: &mut Cursor<'_>, header: &Header) -> Result<Entry> {
    let ts_ns = c.u64("an event time")?;
    let at = c.offset() + 4;
    let record = c.bytes("an event record")?;
    let Some(index) = record.get(..8) else {
        return Err(c.error_at(
            at,
            format!(
                "an event record of {} bytes is shorter than its 8-byte header",
                record.len()
            ),
        ));
    };
    let index = u64::from_le_bytes(index.try_into().unwrap_or_default());
    check_event(c, at, index, header, |_| true, "event")?;
    // The kernel sends a printf's whole argument layout, which `replay` probes read.
    if let Some(EventSpec::Printf { args, .. }) = header.events.get(index as usize) {
        let need = tuple_layout(args).1 as usize;
        if record.len() - 8 < need {
            return Err(c.error_at(
                at,
                format!(
                    "a printf event record of {} bytes is shorter than its 8-byte \
                     header and {need} bytes of arguments",
                    record.len()
                ),
            ));
        }
    }
    Ok(Entry::Event { ts_ns, record })
}

/// Decodes a `Text` body: the output of a `time`, `cat` or `system` event.
fn read_text(c: &mut Cursor<'_>, header: &Header) -> Result<Entry> {
    let ts_ns = c.u64("a text time")?;
    let at = c.offset();
    let event = c.u32("a text's event")?;
    let output = |e: &EventSpec| {
        matches!(
            e,
            EventSpec::Time { .. } | EventSpec::Cat { .. } | EventSpec::System { .. }
        )
    };
    check_event(
        c,
        at,
        event.into(),
        header,
        output,
        "time, cat or system event",
    )?;
    Ok(Entry::Text {
        ts_ns,
        event,
        text: c.bytes("a text")?,
    })
}

/// Decodes a `MapPrint` body: the entries a `print(@map)` event printed.
fn read_map_print(c: &mut Cursor<'_>, header: &Header) -> Result<Entry> {
    let ts_ns = c.u64("a map print time")?;
    let at = c.offset();
    let event = c.u32("a map print's event")?;
    let print = |e: &EventSpec| matches!(e, EventSpec::PrintMap { .. });
    check_event(c, at, event.into(), header, print, "print(@map) event")?;
    let name = match header.events.get(event as usize) {
        Some(EventSpec::PrintMap { map, .. }) => map.clone(),
        _ => String::new(),
    };
    Ok(Entry::MapPrint {
        ts_ns,
        event,
        entries: raw_entries(c, header, &name)?,
    })
}

/// Decodes a `Stack` body: a stack id and the frames it resolved to.
fn read_stack(c: &mut Cursor<'_>) -> Result<Entry> {
    Ok(Entry::Stack {
        kernel: c.bool("a stack's kernel flag")?,
        raw: c.u64("a stack id")?,
        limit: c.u32("a stack limit")?,
        // addr (8) + two option flags (2)
        frames: c.option("a stack's presence flag", |c| {
            let mut frames = c.list(10, "a frame count", |c| {
                Ok(Frame {
                    addr: c.u64("a frame address")?,
                    symbol: opt_string(c, "a frame symbol")?,
                    module: opt_string(c, "a frame module")?,
                    ..Frame::default()
                })
            })?;
            read_frame_sources(c, &mut frames)?;
            Ok(frames)
        })?,
    })
}

/// Reads the source lines and inlined flags of `frames` (since 1.2; absent in older
/// recordings: none). A list of another length than the frames' is an error.
fn read_frame_sources(c: &mut Cursor<'_>, frames: &mut [Frame]) -> Result<()> {
    if c.remaining() == 0 {
        return Ok(());
    }
    let at = c.offset();
    // option flag (1) + inlined flag (1)
    let sources = c.list(2, "a frame source count", |c| {
        Ok((
            opt_string(c, "a frame's source line")?,
            c.bool("a frame's inlined flag")?,
        ))
    })?;
    if sources.len() != frames.len() {
        return Err(c.error_at(
            at,
            format!(
                "{} frame sources for {} frames",
                sources.len(),
                frames.len()
            ),
        ));
    }
    for (f, (source, inlined)) in frames.iter_mut().zip(sources) {
        f.source = source;
        f.inlined = inlined;
    }
    Ok(())
}

/// Checks that event index `index` (read at `at`) names an event spec that `ok` accepts.
fn check_event(
    c: &Cursor<'_>,
    at: u64,
    index: u64,
    header: &Header,
    ok: impl Fn(&EventSpec) -> bool,
    what: &str,
) -> Result<()> {
    let spec = usize::try_from(index)
        .ok()
        .and_then(|i| header.events.get(i));
    match spec {
        None => Err(c.error_at(
            at,
            format!(
                "event index {index} is out of range (the script has {} events)",
                header.events.len()
            ),
        )),
        Some(spec) if !ok(spec) => {
            Err(c.error_at(at, format!("event index {index} does not name a {what}")))
        }
        Some(_) => Ok(()),
    }
}

fn opt_string(c: &mut Cursor<'_>, what: &str) -> Result<Option<String>> {
    c.option(what, |c| c.string(what))
}

/// Most value slots (CPUs) one map entry may hold.
const MAX_SLOTS: usize = 4096;

/// Reads the entries of user map `name`, whose keys and values must have the sizes the
/// header gives it (so that decoding them takes no more memory than the file holds).
fn raw_entries(c: &mut Cursor<'_>, header: &Header, name: &str) -> Result<RawEntries> {
    let at = c.offset();
    let Some(spec) = header
        .maps
        .iter()
        .find(|m| matches!(&m.role, MapRole::User { name: n, .. } if n == name))
    else {
        return Err(c.error_at(at, format!("map `@{name}` is not in the header")));
    };
    let (key_size, value_size) = (spec.key_size as usize, spec.value_size as usize);
    // key length (4) + value count (4)
    c.list(8, "a map entry count", |c| {
        let at = c.offset();
        let key = c.bytes("a map key")?;
        let values = c.list(4, "a map value count", |c| c.bytes("a map value"))?;
        if key.len() != key_size
            || values.len() > MAX_SLOTS
            || values.iter().any(|v| v.len() != value_size)
        {
            return Err(c.error_at(
                at,
                format!(
                    "an entry of `@{name}` does not have the map's sizes (key {key_size}, value {value_size} bytes)"
                ),
            ));
        }
        Ok((key, values))
    })
}

#[cfg(test)]
#[path = "reader_tests.rs"]
mod tests;
