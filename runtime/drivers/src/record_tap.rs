//! `sonde record`: a [`Tap`] that writes what a run prints into a recording file (format in
//! [`crate::record`]), and the [`RecordingResolver`] that remembers every name the printers
//! looked up.
//!
//! Each entry is held back until the next one arrives, so that the names its printing asked
//! for are written before it, as the format requires.
//!
//! What is written reaches the file at least once a second ([`FLUSH_EVERY`]), when the run's
//! output is flushed: a recording run killed without warning (SIGKILL) leaves a file that
//! replays up to its last whole entry.
//!
//! A write that fails (a full disk, `/dev/full`) is kept and reported when the run ends, as
//! the error of the run: the recording is incomplete.

use crate::record::{Entry, Header, RecordWriter, RecordingResolver};
use crate::resolver::RuntimeResolver;
use sonde_lang::diag::Diagnostic;
use sonde_lang::span::Span;
use sonde_present::output::RawEntries;
use sonde_session::Tap;
use std::fs::File;
use std::io::{self, BufWriter};
use std::path::Path;
use std::time::{Duration, Instant};

/// How long written entries may wait in the recorder's buffer before they go to the file.
pub const FLUSH_EVERY: Duration = Duration::from_secs(1);

/// Writes a recording as a run goes.
pub struct Recorder {
    writer: Option<RecordWriter<BufWriter<File>>>,
    /// When the buffer last went to the file.
    flushed: Instant,
    resolver: Option<RecordingResolver<RuntimeResolver>>,
    pending: Option<Entry>,
    path: String,
    /// The first write that failed.
    failure: Option<io::Error>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("path", &self.path)
            .finish()
    }
}

impl Recorder {
    /// Creates the recording file and writes its header.
    pub fn create(path: &Path, header: &Header) -> io::Result<Recorder> {
        let file = File::create(path)?;
        let mut writer = RecordWriter::new(BufWriter::with_capacity(1 << 16, file), header)?;
        // The header at once: even a run killed at its start leaves a recording.
        writer.flush()?;
        Ok(Recorder {
            writer: Some(writer),
            flushed: Instant::now(),
            resolver: None,
            pending: None,
            path: path.display().to_string(),
            failure: None,
        })
    }

    /// Wraps the run's resolver so that every name it gives is recorded too.
    pub fn resolver(&mut self, inner: RuntimeResolver) -> RecordingResolver<RuntimeResolver> {
        let r = RecordingResolver::new(inner);
        self.resolver = Some(r.clone());
        r
    }

    fn write(&mut self, entry: &Entry) {
        let Some(w) = self.writer.as_mut() else {
            return;
        };
        if let Err(e) = w.write(entry) {
            self.failure.get_or_insert(e);
        }
    }

    /// Writes the names looked up since the last entry, then the held-back entry, and holds
    /// back `next`.
    fn push(&mut self, next: Option<Entry>) {
        let names = self
            .resolver
            .as_ref()
            .map(RecordingResolver::take_entries)
            .unwrap_or_default();
        for n in &names {
            self.write(n);
        }
        if let Some(p) = self.pending.take() {
            self.write(&p);
        }
        self.pending = next;
    }
}

fn now() -> u64 {
    sonde_system::clock::boot_ns()
}

impl Tap for Recorder {
    fn event(&mut self, record: &[u8]) {
        self.push(Some(Entry::Event {
            ts_ns: now(),
            record: record.to_vec(),
        }));
    }
    fn text(&mut self, event: u32, text: &[u8]) {
        self.push(Some(Entry::Text {
            ts_ns: now(),
            event,
            text: text.to_vec(),
        }));
    }
    fn map_print(&mut self, event: u32, entries: &RawEntries) {
        self.push(Some(Entry::MapPrint {
            ts_ns: now(),
            event,
            entries: entries.clone(),
        }));
    }
    fn attached(&mut self, probes: usize) {
        self.push(Some(Entry::Attached {
            probes: probes as u64,
        }));
    }
    fn exit_maps(&mut self, maps: &[(String, RawEntries)]) {
        self.push(Some(Entry::ExitMaps {
            maps: maps.to_vec(),
        }));
    }
    fn flush(&mut self) {
        if self.flushed.elapsed() < FLUSH_EVERY {
            return;
        }
        self.flushed = Instant::now();
        // The held-back entry was printed by now: its names are known.
        self.push(None);
        if let Some(Err(e)) = self.writer.as_mut().map(RecordWriter::flush) {
            self.failure.get_or_insert(e);
        }
    }
    fn finish(
        &mut self,
        counts: sonde_present::output::Counts,
        exit_code: u8,
    ) -> Result<(), Diagnostic> {
        self.push(Some(Entry::Counters {
            lost_events: counts.lost_events,
            map_full: counts.map_full,
            loops_cut: counts.loops_cut,
        }));
        self.push(Some(Entry::End { exit_code }));
        self.push(None);
        if let Some(w) = self.writer.take()
            && let Err(e) = w.finish()
        {
            self.failure.get_or_insert(e);
        }
        match &self.failure {
            Some(e) => Err(Diagnostic::error(
                "sonde::runtime::record_write",
                Span::default(),
                format!("cannot write the recording {}: {e}", self.path),
            )
            .with_help("the recording is incomplete; check where it goes (free space, device)")),
            None => Ok(()),
        }
    }
}
