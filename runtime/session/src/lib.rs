//! The output half of a run, shared by the kernel engine, the userspace engine and replay:
//! it handles event records (printf, print, clear, time, exit, ...), reads maps through a
//! [`MapSource`] and prints them with the text, JSON or folded printers.
//!
//! **Invariant:** nothing here knows where maps live (kernel maps, in-process maps or a
//! recording); every value printed goes through the same decoders and printers
//! (`sonde-present`). It touches no kernel facility; its only effects are the printers'
//! output, the commands of `system()` events and the answers to a metrics server's scrapes
//! ([`scrape`]). Depends on `lang`, `compiler`, `present`, `export` (the metrics it keeps)
//! and `system` (clocks, the stop request).

// `Diagnostic` (with its spans, labels and help) is the error type everywhere; boxing it
// would only move the allocation.
#![allow(clippy::result_large_err)]

use sonde_compiler::program::{CompiledScript, EventSpec, MapKind, MapRole, MapSpec};
use sonde_compiler::value::{DEFAULT_STR_TRUNC_TRAILER, Stack, Value, decode_agg};
use sonde_lang::diag::Diagnostic;
use sonde_lang::span::Span;
use sonde_lang::types::Type;
use sonde_present::output::{Counts, MapDump, MapSource, PrintOpts, Printer, RawEntries, Resolver};
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

mod counts;
mod map_full;
mod post;
pub mod scrape;
pub use post::EventKind;
mod commands;
mod formats;
mod unset;
pub use formats::EventFormats;

/// Observes what a session prints, so that it can be stored and printed again (`sonde record`).
pub trait Tap {
    /// A ring-buffer record was handled (8-byte event index, then the payload).
    fn event(&mut self, record: &[u8]);
    /// A `time`/`cat`/`system` event produced `text`.
    fn text(&mut self, event: u32, text: &[u8]);
    /// A `print(@m)` event read these entries.
    fn map_print(&mut self, event: u32, entries: &RawEntries);
    /// The probes were attached.
    fn attached(&mut self, probes: usize);
    /// The user maps at exit (name without `@`, raw entries).
    fn exit_maps(&mut self, maps: &[(String, RawEntries)]);
    /// The run ended with these error counters and exit code. An error (what the tap wrote
    /// is incomplete) is an error of the run.
    fn finish(&mut self, counts: Counts, exit_code: u8) -> Result<(), Diagnostic>;
    /// The output was flushed (after each batch of events, and every time the event loop
    /// wakes): a tap that buffers may write out what it holds, so that a run killed without
    /// warning loses little.
    fn flush(&mut self) {}
}

/// Why a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// `exit(code)` in the script.
    Exit(u8),
    /// Ctrl-C, SIGTERM, a failed write on the output (a closed pipe among them), the `-c`
    /// child or the `-p` process exited, or the input ended.
    Interrupted,
}

/// Output options of a run.
#[derive(Clone, Debug, Default)]
pub struct OutputOptions {
    /// `-f json`.
    pub json: bool,
    /// `-f folded`.
    pub folded: bool,
    /// `-f csv`.
    pub csv: bool,
    /// CSV and JSON print an event tool's lines as rows ([`sonde_present::output::rows`]).
    pub rows: bool,
    /// `printf` events go to the tap (a recording) and are not printed: a recording tool's
    /// per-call events (`sonde tool allocrecord`), whose report prints a summary at the end.
    pub unprinted_events: bool,
    /// `-o FILE`.
    pub output: Option<PathBuf>,
    /// `--unsafe` (lets `system()` events run).
    pub unsafe_allowed: bool,
    /// `-B MODE`: how output is buffered (`None`: written after each batch of events).
    pub buffering: Option<sonde_present::output::buffer::Buffering>,
    /// The pictures drawn from what the run prints (`--heatmap`, `--chart`).
    pub pictures: sonde_present::pictures::PictureOptions,
    /// What a string cut to its size ends with (the script's `str_trunc_trailer`); `None`:
    /// bpftrace's default, `..`.
    pub str_trunc_trailer: Option<Vec<u8>>,
}

/// The printing state of one run.
pub struct Output<'a> {
    script: &'a CompiledScript,
    printer: Box<dyn Printer>,
    resolver: Box<dyn Resolver>,
    /// Per event id: the parsed format and the argument offsets of printf-like events.
    formats: EventFormats,
    /// Why the run should end, once known.
    pub stop: Option<Stop>,
    unsafe_allowed: bool,
    /// Set once `exit()` was seen: later events are dropped (as in bpftrace) until END runs.
    pub discard: bool,
    /// Set while END's events are read: its `system()` commands run even after Ctrl-C.
    pub in_end: bool,
    /// Key-less aggregations `zero()` reset: printed even at zero (`@m: 0`) until a `clear()`.
    zeroed: std::collections::HashSet<String>,
    /// Where the output goes, for error messages (`standard output` or the `-o` path).
    dest: String,
    /// The first failed write (a closed pipe: quiet; others: [`Output::finish`] says): no more.
    write_failure: Option<io::Error>,
    tap: Option<Box<dyn Tap + 'a>>,
    /// `printf` events are tapped, not printed ([`OutputOptions::unprinted_events`]).
    unprinted_events: bool,
    /// The error counters reported so far (each increase is reported once).
    reported: Counts,
    /// Map-full warnings shown so far, by event id (each place's first few are shown).
    map_full_shown: HashMap<usize, u64>,
    /// The post-processing script (`--post`), if any.
    post: Option<sonde_present::report::Post>,
    /// The maps of the current run of `print(@map)` events, for the script's `on_interval`.
    tick: Vec<sonde_present::report::Printed>,
    /// The post-processing script's error not shown yet: the result of [`Output::finish`].
    post_failure: Option<Diagnostic>,
    /// Set when the post-processing script failed: the run ends, and exits with 1 at least.
    post_failed: bool,
    /// Set when the run ends: a fully buffered output (`-B full`) is then written out.
    at_exit: std::rc::Rc<std::cell::Cell<bool>>,
    /// What the run's pictures are drawn from (`--heatmap`, `--chart`), if any.
    pictures: Option<sonde_present::pictures::Pictures>,
    /// The run's metrics (`--metrics`), if it exports them.
    metrics: Option<scrape::Metrics>,
}

impl<'a> Output<'a> {
    /// An output for `script` printing with `resolver` as `opts` say.
    pub fn new<R: Resolver + Clone + 'static>(
        script: &'a CompiledScript,
        opts: &OutputOptions,
        resolver: R,
    ) -> Result<Self, Diagnostic> {
        let dest: Box<dyn Write> = match &opts.output {
            Some(path) => match std::fs::File::create(path) {
                Ok(f) => Box::new(f),
                Err(e) => {
                    return Err(Diagnostic::error(
                        "sonde::runtime::output",
                        Span::default(),
                        format!("cannot write {}: {e}", path.display()),
                    ));
                }
            },
            None => Box::new(io::stdout()),
        };
        let mut out = Self::with_writer(script, opts, resolver, dest);
        out.pictures = sonde_present::pictures::Pictures::new(opts.pictures.clone(), script)?;
        Ok(out)
    }

    /// An output for `script` writing to `dest` (in place of standard output or `-o`).
    pub fn with_writer<R: Resolver + Clone + 'static>(
        script: &'a CompiledScript,
        opts: &OutputOptions,
        resolver: R,
        dest: Box<dyn Write>,
    ) -> Self {
        // By default buffered, not line-buffered: the loops flush after each batch of events,
        // so a burst of printf lines costs one write, not one per line.
        let (out, at_exit) = sonde_present::output::buffer::writer(dest, opts.buffering);
        let printer: Box<dyn Printer> = if opts.json {
            Box::new(sonde_present::output::JsonPrinter::new(
                out,
                resolver.clone(),
            ))
        } else if opts.folded {
            Box::new(sonde_present::output::FoldedPrinter::new(
                out,
                resolver.clone(),
            ))
        } else if opts.csv {
            Box::new(sonde_present::output::CsvPrinter::new(
                out,
                resolver.clone(),
            ))
        } else {
            Box::new(sonde_present::output::TextPrinter::new(
                out,
                resolver.clone(),
            ))
        };
        let printer: Box<dyn Printer> = match opts.rows && (opts.json || opts.csv) {
            true => Box::new(sonde_present::output::rows::RowsPrinter::new(printer)),
            false => printer,
        };
        Self::with_printer(script, opts, resolver, printer, at_exit)
    }

    /// An output for `script` that prints one `--test` test's output as text to `dest`, its
    /// `errorf`/`warnf` messages and `-k` helper errors included: bpftrace's test runner
    /// captures its error stream with the output, and shows both when the test fails.
    pub fn capturing<R: Resolver + Clone + 'static>(
        script: &'a CompiledScript,
        resolver: R,
        dest: Box<dyn Write>,
    ) -> Self {
        let printer =
            sonde_present::output::TextPrinter::new(dest, resolver.clone()).with_logs_inline();
        let at_exit = std::rc::Rc::new(std::cell::Cell::new(true));
        let opts = OutputOptions::default();
        Self::with_printer(script, &opts, resolver, Box::new(printer), at_exit)
    }

    /// An output for `script` printing with `printer`.
    fn with_printer<R: Resolver + Clone + 'static>(
        script: &'a CompiledScript,
        opts: &OutputOptions,
        resolver: R,
        printer: Box<dyn Printer>,
        at_exit: std::rc::Rc<std::cell::Cell<bool>>,
    ) -> Self {
        Output {
            script,
            printer,
            resolver: Box::new(resolver),
            formats: EventFormats::new(
                &script.events,
                opts.str_trunc_trailer
                    .as_deref()
                    .unwrap_or(DEFAULT_STR_TRUNC_TRAILER),
            ),
            stop: None,
            unsafe_allowed: opts.unsafe_allowed,
            discard: false,
            in_end: false,
            zeroed: Default::default(),
            dest: opts.output.as_ref().map_or_else(
                || "standard output".to_string(),
                |p| p.display().to_string(),
            ),
            write_failure: None,
            tap: None,
            unprinted_events: opts.unprinted_events,
            reported: Counts::default(),
            map_full_shown: HashMap::new(),
            post: None,
            tick: Vec::new(),
            post_failure: None,
            post_failed: false,
            at_exit,
            pictures: None,
            metrics: None,
        }
    }

    /// Carries over what `previous` (an output of an earlier version of the same growing
    /// script, `sonde repl`) knew: the counts reported, the maps zeroed, the stop.
    pub fn continue_from(&mut self, mut previous: Output<'_>) {
        previous.flush();
        self.reported = previous.reported;
        self.zeroed = std::mem::take(&mut previous.zeroed);
        self.stop = previous.stop;
        self.discard = previous.discard;
    }

    /// Prints a map read outside any event (`:print @m` in a live session).
    pub fn print_dump(&mut self, dump: MapDump, opts: PrintOpts) {
        if self.silenced() {
            return;
        }
        let r = self.print_map(dump, opts);
        self.wrote(r);
    }

    /// Sends everything this output handles to `tap` as well.
    pub fn set_tap(&mut self, tap: Box<dyn Tap + 'a>) {
        self.tap = Some(tap);
    }

    /// The script being printed.
    pub fn script(&self) -> &'a CompiledScript {
        self.script
    }

    /// The resolver used for names.
    pub fn resolver(&self) -> &dyn Resolver {
        self.resolver.as_ref()
    }

    /// Prints the "attached" announcement (JSON output only; the text line goes to stderr).
    pub fn attached(&mut self, probes: usize) {
        if let Some(t) = self.tap.as_mut() {
            t.attached(probes);
        }
        let r = self.printer.attached(probes);
        self.wrote(r);
    }

    /// Prints a result of `--test` or `--bench` (see [`Printer::self_test`]).
    pub fn self_test(&mut self, text: &[u8], record_type: &str, json: &str) {
        let r = self.printer.self_test(text, record_type, json);
        self.wrote(r);
    }

    /// Reads every user map at exit (empty ones included) and decodes them.
    pub fn exit_maps(&mut self, maps: &dyn MapSource) -> Vec<MapDump> {
        let raw = self.raw_user_maps(maps);
        if let Some(t) = self.tap.as_mut() {
            t.exit_maps(&raw);
        }
        self.decode_maps(raw)
    }

    /// Every user map's raw entries, read now (those that can be read).
    fn raw_user_maps(&self, maps: &dyn MapSource) -> Vec<(String, RawEntries)> {
        self.script
            .maps
            .iter()
            .filter_map(|m| match &m.role {
                MapRole::User { name, .. } => Some((name.clone(), maps.entries(m)?)),
                _ => None,
            })
            .collect()
    }

    /// Decodes raw user maps (recorded or read at exit).
    pub fn decode_maps(&self, raw: Vec<(String, RawEntries)>) -> Vec<MapDump> {
        raw.into_iter()
            .filter_map(|(name, e)| self.dump(&name, e))
            .collect()
    }

    /// The exit code the run ends with.
    pub fn exit_code(&self) -> u8 {
        let code = match self.stop {
            Some(Stop::Exit(code)) => code,
            _ => 0,
        };
        if self.post_failed { code.max(1) } else { code }
    }

    /// Ends the run: reports the counters not reported yet, flushes, and tells the tap the
    /// counters and the exit code. A write that failed during the run (other than to a
    /// closed pipe), or the tap's failure (an incomplete recording), is the error returned.
    pub fn finish(&mut self, counts: Counts) -> Result<(), Diagnostic> {
        self.report_counts(counts);
        self.at_exit.set(true);
        self.flush();
        let code = self.exit_code();
        let tapped = self.tap.as_mut().map_or(Ok(()), |t| t.finish(counts, code));
        let drawn = self
            .pictures
            .take()
            .map_or(Ok(()), sonde_present::pictures::Pictures::finish);
        self.write_result().and(drawn).and(tapped)
    }

    /// Writes out buffered output; a failed write stops the run (see [`Output::wrote`]).
    pub fn flush(&mut self) {
        self.end_tick();
        if let Some(t) = self.tap.as_mut() {
            t.flush();
        }
        if self.closed() {
            return;
        }
        let r = self.printer.flush();
        self.wrote(r);
    }

    /// Takes note of the result of a write. The first failure stops the run: a closed pipe
    /// quietly (its reader wants no more, as `sonde ... | head`), any other error (a full
    /// disk, `/dev/full`, an I/O error) to be reported when the run ends.
    pub fn wrote(&mut self, r: io::Result<()>) {
        let Err(e) = r else { return };
        if self.write_failure.is_none() {
            self.write_failure = Some(e);
        }
        if self.stop.is_none() {
            self.stop = Some(Stop::Interrupted);
        }
    }

    /// True once a write failed: nothing more reaches the output.
    pub fn closed(&self) -> bool {
        self.write_failure.is_some()
    }

    /// The error of the first failed write, unless it was a closed pipe.
    pub fn write_result(&self) -> Result<(), Diagnostic> {
        if let Some(d) = &self.post_failure {
            return Err(d.clone());
        }
        match &self.write_failure {
            Some(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(Diagnostic::error(
                "sonde::runtime::output_write",
                Span::default(),
                format!("cannot write to {}: {e}", self.dest),
            )
            .with_help("the output is incomplete; check where it goes (free space, device)")),
            _ => Ok(()),
        }
    }

    /// Handles one event record (8-byte event index, then the payload).
    pub fn handle(&mut self, record: &[u8], maps: &dyn MapSource) {
        if record.len() < 8 || self.discard || self.silenced() {
            return;
        }
        let id = u64::from_le_bytes(record[..8].try_into().expect("8 bytes")) as usize;
        let payload = &record[8..];
        let script = self.script;
        let Some(spec) = script.events.get(id) else {
            return;
        };
        if !matches!(spec, EventSpec::PrintMap { .. }) {
            self.end_tick();
        }
        // After Ctrl-C no new command is started (a busy probe can have queued thousands:
        // bpftrace stops too), but END's: they are the script's report.
        let stopped = sonde_system::signals::stop_requested() && !self.in_end;
        if matches!(spec, EventSpec::System { .. }) && stopped {
            return;
        }
        if let Some(t) = self.tap.as_mut() {
            t.event(record);
            if self.unprinted_events && matches!(spec, EventSpec::Printf { .. }) {
                return;
            }
        }
        if let Some(m) = self.metrics.as_mut() {
            m.events += 1;
        }
        let r = match spec {
            EventSpec::PrintMap { map, top, div } => {
                let entries = self.user_map(map).and_then(|s| maps.entries(s));
                if let (Some(t), Some(e)) = (self.tap.as_mut(), entries.as_ref()) {
                    t.map_print(id as u32, e);
                }
                match entries
                    .and_then(|e| self.dump(map, e))
                    .map(|d| unset::zero_if_unset(d, self.user_map(map), &self.formats))
                {
                    Some(dump) => self.print_map(
                        dump,
                        PrintOpts {
                            top: *top,
                            div: (*div).max(1),
                        },
                    ),
                    None => Ok(()),
                }
            }
            EventSpec::ClearMap { map } => {
                self.before_reset(map, maps);
                self.zeroed.remove(map);
                if let Some(s) = self.user_map(map) {
                    maps.clear(s);
                }
                Ok(())
            }
            EventSpec::ZeroMap { map } => {
                self.before_reset(map, maps);
                self.zeroed.insert(map.clone());
                if let Some(s) = self.user_map(map) {
                    maps.zero(s);
                }
                Ok(())
            }
            EventSpec::Time { format } => {
                let text = sonde_system::clock::strftime_now(format);
                self.text(id, text.into_bytes())
            }
            EventSpec::Cat { args, .. } => {
                let path = self.format(id, args, payload);
                let path = String::from_utf8_lossy(&path).into_owned();
                match std::fs::read(&path) {
                    Ok(bytes) => self.text(id, bytes),
                    Err(e) => {
                        eprintln!(
                            "ERROR: failed to open file '{path}' ({})",
                            sonde_system::user_files::os_reason(&e)
                        );
                        Ok(())
                    }
                }
            }
            EventSpec::System { args, .. } => {
                if !self.unsafe_allowed {
                    return;
                }
                let cmd = self.format(id, args, payload);
                let cmd = String::from_utf8_lossy(&cmd).into_owned();
                match commands::run_system(&cmd) {
                    Ok(Some(stdout)) => self.text(id, stdout),
                    Ok(None) => Ok(()),
                    Err(e) => {
                        eprintln!("sonde: system: {e}");
                        Ok(())
                    }
                }
            }
            _ => self.print_event(id, payload),
        };
        self.wrote(r);
    }

    /// Prints text an iterator's programs formatted in the kernel (their `printf`s, read
    /// from the iterator by [`crate::iter`]), one line at a time, as `printf` output.
    pub fn iter_text(&mut self, text: &[u8]) {
        if self.silenced() {
            return;
        }
        let r = self.printer.printf(text);
        self.wrote(r);
    }

    /// Prints the text a `time`/`cat`/`system` event produced.
    fn text(&mut self, id: usize, text: Vec<u8>) -> io::Result<()> {
        if let Some(t) = self.tap.as_mut() {
            t.text(id as u32, &text);
        }
        self.replay_text(id, &text)
    }

    /// Prints the recorded text of a `time`/`cat`/`system` event.
    pub fn replay_text(&mut self, id: usize, text: &[u8]) -> io::Result<()> {
        let kind = match self.script.events.get(id) {
            Some(EventSpec::Time { .. }) => EventKind::Time,
            Some(EventSpec::System { .. }) => EventKind::System,
            _ => EventKind::Cat,
        };
        self.emit(kind, id, text.to_vec(), Vec::new())
    }

    /// Prints a `print(@m)` event from recorded entries.
    pub fn replay_map_print(&mut self, id: usize, entries: RawEntries) {
        if let Some(EventSpec::PrintMap { map, top, div }) = self.script.events.get(id)
            && let Some(dump) = self.dump(map, entries)
        {
            let r = self.print_map(
                dump,
                PrintOpts {
                    top: *top,
                    div: (*div).max(1),
                },
            );
            self.wrote(r);
        }
    }

    /// Prints the events whose output depends only on their payload (printf, print(value),
    /// join) and handles exit.
    pub fn print_event(&mut self, id: usize, payload: &[u8]) -> io::Result<()> {
        let script = self.script;
        let Some(spec) = script.events.get(id) else {
            return Ok(());
        };
        if !matches!(spec, EventSpec::PrintMap { .. }) {
            self.end_tick();
        }
        match spec {
            EventSpec::Printf { args, format } => {
                let values = self.formats.values(id, args, payload);
                if let Some(p) = self.pictures.as_mut() {
                    p.printf(format, &values);
                }
                let text = self
                    .formats
                    .format_values(id, &values, self.resolver.as_ref());
                self.emit(EventKind::Printf, id, text, values)
            }
            EventSpec::PrintValue { ty } => self.emit(
                EventKind::Value,
                id,
                Vec::new(),
                vec![self.formats.decode(ty, payload)],
            ),
            EventSpec::Join {
                sep,
                count,
                elem_size,
            } => {
                let mut parts = Vec::new();
                for i in 0..*count as usize {
                    let start = i * *elem_size as usize;
                    let Some(chunk) = payload.get(start..start + *elem_size as usize) else {
                        break;
                    };
                    let end = chunk.iter().position(|&b| b == 0).unwrap_or(chunk.len());
                    if end == 0 {
                        break;
                    }
                    parts.push(String::from_utf8_lossy(&chunk[..end]).into_owned());
                }
                let line = format!("{}\n", parts.join(sep));
                self.emit(EventKind::Join, id, line.into_bytes(), Vec::new())
            }
            EventSpec::Exit => {
                let code = payload
                    .get(..8)
                    .map_or(0, |b| i64::from_le_bytes(b.try_into().expect("8 bytes")));
                if !matches!(self.stop, Some(Stop::Exit(_))) {
                    self.stop = Some(Stop::Exit(exit_status(code)));
                }
                self.discard = true;
                Ok(())
            }
            EventSpec::Log {
                error, args, span, ..
            } => {
                let text = self.format(id, args, payload);
                self.printer
                    .log(*error, &String::from_utf8_lossy(&text), *span)
            }
            EventSpec::HelperError { helper, span } => {
                let rc = payload
                    .get(..8)
                    .map_or(0, |b| i64::from_le_bytes(b.try_into().expect("8 bytes")));
                self.helper_error(id, helper, rc, *span)
            }
            EventSpec::PrintMap { .. }
            | EventSpec::ClearMap { .. }
            | EventSpec::ZeroMap { .. }
            | EventSpec::Time { .. }
            | EventSpec::Cat { .. }
            | EventSpec::System { .. } => Ok(()),
        }
    }

    /// Formats a printf-style event whose arguments are laid out as a tuple of `args`.
    pub fn format(&self, id: usize, args: &[Type], payload: &[u8]) -> Vec<u8> {
        self.formats
            .format(id, args, payload, self.resolver.as_ref())
    }

    /// The spec of user map `name`.
    pub fn user_map(&self, name: &str) -> Option<&'a MapSpec> {
        self.script
            .maps
            .iter()
            .find(|m| matches!(&m.role, MapRole::User { name: n, .. } if n == name))
    }

    /// Decodes raw entries of user map `name`. Stacks in keys are resolved to the frames they
    /// print (`kstack(N)`/`ustack(N)` keep N), and entries whose keys then print the same are
    /// one entry, as bpftrace keys stacks by what it prints: their aggregations are merged
    /// with the aggregation's own merge (as if the entries were more CPUs); of plain values,
    /// the first one read is kept.
    pub fn dump(&self, name: &str, entries: RawEntries) -> Option<MapDump> {
        let spec = self.user_map(name)?;
        let MapRole::User { key, value, .. } = &spec.role else {
            return None;
        };
        let stacked = key.as_ref().is_some_and(has_stack);
        let mut groups: Vec<(Value, Vec<Vec<u8>>)> = Vec::with_capacity(entries.len());
        let mut by_printed: HashMap<Vec<u8>, usize> = HashMap::new();
        for (k, slots) in entries {
            let key = match key {
                Some(t) => self.formats.decode(t, &k),
                None => Value::None,
            };
            if !stacked {
                groups.push((key, slots));
                continue;
            }
            let key = resolve_stacks(key, self.resolver.as_ref());
            let printed =
                sonde_present::output::text::value_text(&key, self.resolver.as_ref(), true);
            match by_printed.entry(printed) {
                Entry::Occupied(e) => {
                    if matches!(value, Type::Agg(_)) {
                        groups[*e.get()].1.extend(slots);
                    }
                }
                Entry::Vacant(e) => {
                    e.insert(groups.len());
                    groups.push((key, slots));
                }
            }
        }
        let entries = groups
            .into_iter()
            .map(|(key, slots)| {
                let val = match value {
                    Type::Agg(kind) => {
                        let refs: Vec<&[u8]> = slots.iter().map(Vec::as_slice).collect();
                        decode_agg(kind, &refs)
                    }
                    t => self
                        .formats
                        .decode(t, slots.first().map_or(&[][..], Vec::as_slice)),
                };
                (key, val)
            })
            // An array element no update touched stands for an absent element.
            .filter(|(_, v)| {
                let untouched = matches!(v, Value::Agg(a) if spec.kind == MapKind::PerCpuArray && !a.is_recorded());
                !untouched || self.zeroed.contains(name)
            })
            .collect();
        Some(MapDump {
            name: name.to_string(),
            value_type: value.clone(),
            entries,
        })
    }

    /// Prints the maps at exit after two newlines (text output), as bpftrace 0.26 does: with
    /// `-o FILE` all of it goes to the file (0.17 wrote the newlines on stdout); an empty map
    /// prints nothing, except an empty `avg`/`stats` map in JSON (`{}`). No maps (`dumps`
    /// empty, `print_maps_on_exit = false`): the two newlines still end the output.
    pub fn print_exit_maps(&mut self, dumps: &[MapDump]) {
        if self.silenced() {
            return;
        }
        let r = self.printer.exit_maps(dumps);
        self.wrote(r);
    }

    /// Writes a flame graph of every map keyed by stacks (their folded lines together) to
    /// `path`. No such map, or no samples, is an error: the SVG would be empty.
    pub fn write_flamegraph(&self, path: &Path, dumps: &[MapDump]) -> Result<(), Vec<Diagnostic>> {
        let mut lines = Vec::new();
        for dump in dumps {
            if let Some(folded) =
                sonde_present::output::folded::folded_lines(dump, self.resolver.as_ref())
            {
                lines.extend(folded);
            }
        }
        let fail = |msg: String| {
            vec![Diagnostic::error("sonde::runtime::flamegraph", Span::default(), msg)
                .with_help("--flamegraph draws maps keyed by stacks with count() or integer values, e.g. @[kstack, ustack, comm] = count()")]
        };
        if lines.is_empty() {
            return Err(fail(format!(
                "no stack samples to draw in {}",
                path.display()
            )));
        }
        sonde_present::pictures::flame::write_flamegraph(path, "Flame Graph", &lines)
            .map_err(|e| fail(format!("cannot write {}: {e}", path.display())))?;
        eprintln!("flame graph written to {}", path.display());
        Ok(())
    }
}

/// The process exit status for `exit(code)`. Constants outside 0..=255 are refused when the
/// script is checked; a run-time value outside exits 255 with a warning, rather than with its
/// low 8 bits (which would turn 256, a failure, into 0).
fn exit_status(code: i64) -> u8 {
    u8::try_from(code).unwrap_or_else(|_| {
        eprintln!("sonde: warning: exit({code}): exit codes are 0 to 255; exiting with 255");
        255
    })
}

/// True when values of `ty` hold a stack (a map keyed so is a profile).
pub fn has_stack(ty: &Type) -> bool {
    match ty {
        Type::Stack { .. } => true,
        Type::Tuple(items) => items.iter().any(has_stack),
        _ => false,
    }
}

/// `v` with every stack id replaced by the frames it prints (at most its limit).
fn resolve_stacks(v: Value, r: &dyn Resolver) -> Value {
    match v {
        Value::StackId {
            kernel,
            mode,
            limit,
            raw,
        } => Value::Stack(Stack {
            kernel,
            mode,
            frames: r.stack(kernel, raw, limit).unwrap_or_default(),
        }),
        Value::Tuple(items) => {
            Value::Tuple(items.into_iter().map(|v| resolve_stacks(v, r)).collect())
        }
        v => v,
    }
}
