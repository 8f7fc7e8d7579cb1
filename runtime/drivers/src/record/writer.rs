//! Writing a recording: the header, then one entry at a time.

use super::codec::{
    put_bool, put_bytes, put_count, put_opt_str, put_str, put_u8, put_u16, put_u32, put_u64,
};
use super::spec::TypeEncoder;
use super::{Entry, Header, MAGIC, RawEntries, VERSION_MAJOR, VERSION_MINOR};
use std::io::{self, Write};

/// Entry tags (see the module documentation).
pub(crate) mod tag {
    pub const ATTACHED: u8 = 1;
    pub const EVENT: u8 = 2;
    pub const TEXT: u8 = 3;
    pub const MAP_PRINT: u8 = 4;
    pub const EXIT_MAPS: u8 = 5;
    pub const STACK: u8 = 6;
    pub const SYMBOL: u8 = 7;
    pub const USER_SYMBOL: u8 = 8;
    pub const USERNAME: u8 = 9;
    pub const CGROUP_PATH: u8 = 10;
    pub const TIMESTAMP: u8 = 11;
    pub const COUNTERS: u8 = 12;
    pub const END: u8 = 13;
}

/// Writes a recording to `W` (wrap files in a `BufWriter`: each entry is one or two small
/// writes). The last entry written should be [`Entry::End`]: a reader refuses a recording
/// without it, taking it for a truncated file.
#[derive(Debug)]
pub struct RecordWriter<W: Write> {
    out: W,
    /// Reused encoding buffer for entry bodies.
    buf: Vec<u8>,
}

impl<W: Write> RecordWriter<W> {
    /// Writes the magic, the version and `header` to `out`.
    pub fn new(mut out: W, header: &Header) -> io::Result<Self> {
        let mut body = Vec::new();
        put_str(&mut body, &header.name)?;
        put_str(&mut body, &header.source)?;
        put_bool(&mut body, header.print_maps_on_exit);
        let mut types = TypeEncoder::default();
        put_count(&mut body, header.events.len())?;
        for e in &header.events {
            types.event(&mut body, e)?;
        }
        put_count(&mut body, header.maps.len())?;
        for m in &header.maps {
            types.map(&mut body, m)?;
        }
        put_bytes(&mut body, &header.str_trunc_trailer)?;
        let mut head = Vec::with_capacity(20);
        head.extend_from_slice(MAGIC);
        put_u16(&mut head, VERSION_MAJOR);
        put_u16(&mut head, VERSION_MINOR);
        put_u64(&mut head, body.len() as u64);
        out.write_all(&head)?;
        out.write_all(&body)?;
        Ok(RecordWriter {
            out,
            buf: Vec::new(),
        })
    }

    /// Appends one entry.
    pub fn write(&mut self, entry: &Entry) -> io::Result<()> {
        self.buf.clear();
        let tag = encode_entry(&mut self.buf, entry)?;
        let mut head = [0u8; 9];
        head[0] = tag;
        head[1..].copy_from_slice(&(self.buf.len() as u64).to_le_bytes());
        self.out.write_all(&head)?;
        self.out.write_all(&self.buf)
    }

    /// Appends several entries, in order.
    pub fn write_all(&mut self, entries: &[Entry]) -> io::Result<()> {
        entries.iter().try_for_each(|e| self.write(e))
    }

    /// Writes out what the output buffers (every entry written so far reaches the file).
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Flushes and hands back the output.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Appends `e`'s body to `out` and returns its tag.
pub(crate) fn encode_entry(out: &mut Vec<u8>, e: &Entry) -> io::Result<u8> {
    Ok(match e {
        Entry::Attached { probes } => {
            put_u64(out, *probes);
            tag::ATTACHED
        }
        Entry::Event { ts_ns, record } => {
            put_u64(out, *ts_ns);
            put_bytes(out, record)?;
            tag::EVENT
        }
        Entry::Text { ts_ns, event, text } => {
            put_u64(out, *ts_ns);
            put_u32(out, *event);
            put_bytes(out, text)?;
            tag::TEXT
        }
        Entry::MapPrint {
            ts_ns,
            event,
            entries,
        } => {
            put_u64(out, *ts_ns);
            put_u32(out, *event);
            put_raw_entries(out, entries)?;
            tag::MAP_PRINT
        }
        Entry::ExitMaps { maps } => {
            put_count(out, maps.len())?;
            for (name, entries) in maps {
                put_str(out, name)?;
                put_raw_entries(out, entries)?;
            }
            tag::EXIT_MAPS
        }
        Entry::Stack {
            kernel,
            raw,
            limit,
            frames,
        } => {
            put_bool(out, *kernel);
            put_u64(out, *raw);
            put_u32(out, *limit);
            put_bool(out, frames.is_some());
            if let Some(frames) = frames {
                put_count(out, frames.len())?;
                for f in frames {
                    put_u64(out, f.addr);
                    put_opt_str(out, f.symbol.as_deref())?;
                    put_opt_str(out, f.module.as_deref())?;
                }
                // Since 1.2: each frame's source line and inlined flag, appended so that
                // a 1.1 reader, which ignores the rest of a body, reads the frames.
                put_count(out, frames.len())?;
                for f in frames {
                    put_opt_str(out, f.source.as_deref())?;
                    put_bool(out, f.inlined);
                }
            }
            tag::STACK
        }
        Entry::Symbol { kernel, addr, name } => {
            put_bool(out, *kernel);
            put_u64(out, *addr);
            put_opt_str(out, name.as_deref())?;
            tag::SYMBOL
        }
        Entry::UserSymbol { pid, addr, name } => {
            put_u32(out, *pid);
            put_u64(out, *addr);
            put_opt_str(out, name.as_deref())?;
            tag::USER_SYMBOL
        }
        Entry::Username { uid, name } => {
            put_u64(out, *uid);
            put_opt_str(out, name.as_deref())?;
            tag::USERNAME
        }
        Entry::CgroupPath { id, path } => {
            put_u64(out, *id);
            put_opt_str(out, path.as_deref())?;
            tag::CGROUP_PATH
        }
        Entry::Timestamp {
            tag: t,
            nsecs,
            text,
        } => {
            put_u64(out, *t);
            put_u64(out, *nsecs);
            put_opt_str(out, text.as_deref())?;
            tag::TIMESTAMP
        }
        Entry::Counters {
            lost_events,
            map_full,
            loops_cut,
        } => {
            put_u64(out, *lost_events);
            put_u64(out, *map_full);
            put_u64(out, *loops_cut);
            tag::COUNTERS
        }
        Entry::End { exit_code } => {
            put_u8(out, *exit_code);
            tag::END
        }
    })
}

fn put_raw_entries(out: &mut Vec<u8>, entries: &RawEntries) -> io::Result<()> {
    put_count(out, entries.len())?;
    for (key, values) in entries {
        put_bytes(out, key)?;
        put_count(out, values.len())?;
        for v in values {
            put_bytes(out, v)?;
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "writer_tests.rs"]
mod tests;
