//! Running a compiled script: load, BEGIN, attach, the event loop, and at exit END and the
//! map printout — with bpftrace's ordering.

use crate::attach::{AttachOptions, attach_all, detach_probes};
use crate::child::HeldChild;
use crate::events::EventReader;
use crate::load::{Loaded, load};
use crate::output::{MapDump, PrintOpts, Printer};
use crate::resolver::RuntimeResolver;
use crate::symbols::Symbolizer;
use crate::trigger::{self, Trigger};
use sonde_compiler::program::{AttachSpec, CompiledScript, Counter, EventSpec, MapKind, MapRole};
use sonde_compiler::value::{Value, decode, decode_agg};
use sonde_lang::diag::Diagnostic;
use sonde_lang::format::{FmtPiece, parse_format};
use sonde_lang::sema::Checked;
use sonde_lang::span::Span;
use sonde_lang::types::{Type, tuple_layout};
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Options of a run, from the command line.
#[derive(Debug, Default)]
pub struct RunOptions {
    /// `-q`: no "Attached N probes" line.
    pub quiet: bool,
    /// `-v`: raw verifier logs.
    pub verbose: bool,
    /// `-f json`.
    pub json: bool,
    /// `-o FILE`.
    pub output: Option<PathBuf>,
    /// `-c CMD`: the child, already spawned and held.
    pub child: Option<HeldChild>,
    /// `-p PID`.
    pub pid: Option<u32>,
    /// `--dry-run`: load and attach, then exit.
    pub dry_run: bool,
    /// `--unsafe`.
    pub unsafe_allowed: bool,
    /// `-f folded`: maps keyed by stacks print as folded lines (see [`crate::output::folded`]).
    pub folded: bool,
    /// `--flamegraph FILE`: at exit, write a flame graph SVG of the maps keyed by stacks.
    pub flamegraph: Option<PathBuf>,
    /// A report hook (a shipped tool's user-space post-processing): after END, it is given
    /// every user map (empty ones included) and its text is printed.
    pub report: Option<fn(&[MapDump]) -> String>,
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

fn install_signal_handlers() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
}

/// Why the event loop ended.
enum Stop {
    /// `exit(code)` in the script.
    Exit(u8),
    /// Ctrl-C, SIGTERM, or the `-c` child exited.
    Interrupted,
}

/// The state of a running script.
struct Session<'a> {
    script: &'a CompiledScript,
    loaded: Loaded,
    events: Option<EventReader>,
    printer: Box<dyn Printer>,
    resolver: RuntimeResolver,
    symbols: Arc<Symbolizer>,
    /// Per event id: the parsed format and the argument offsets of printf-like events.
    formats: Vec<Option<(Vec<FmtPiece>, Vec<u32>)>>,
    stop: Option<Stop>,
    unsafe_allowed: bool,
    /// Set once `exit()` was seen: events the probes emit after it are dropped (as in
    /// bpftrace), until END runs.
    discard: bool,
    /// Key-less aggregation maps `zero()` reset: their array element prints even with every
    /// count zero (as bpftrace prints `@m: 0` after `zero(@m)`), until a `clear()`.
    zeroed: std::collections::HashSet<String>,
    /// User maps keyed by user stacks and the offsets of those stacks in their keys (found on
    /// first use; empty when the script records no user stack).
    stack_keyed: Option<Vec<(crate::maps::RawMap, Vec<usize>)>>,
}

/// Runs the script until it exits; returns the process exit code.
pub fn run(
    checked: &Checked,
    script: &CompiledScript,
    mut opts: RunOptions,
) -> Result<u8, Vec<Diagnostic>> {
    if let Err(e) = crate::tracefs::tracefs_root() {
        return Err(vec![
            Diagnostic::error("sonde::runtime::tracefs", Span::default(), e)
                .with_help("mount it with `mount -t tracefs nodev /sys/kernel/tracing` (as root)"),
        ]);
    }
    let loaded = match load(script) {
        Ok(l) => l,
        Err(e) => {
            if let Some(log) = e.verifier_log.as_ref().filter(|_| opts.verbose) {
                eprintln!("{log}");
            }
            return Err(vec![e.diagnostic]);
        }
    };
    let out: Box<dyn Write> = match &opts.output {
        Some(path) => match std::fs::File::create(path) {
            Ok(f) => Box::new(io::BufWriter::new(f)),
            Err(e) => {
                return Err(vec![Diagnostic::error(
                    "sonde::runtime::output",
                    Span::default(),
                    format!("cannot write {}: {e}", path.display()),
                )]);
            }
        },
        // Buffered, not line-buffered: the loop flushes after each batch of events, so a burst
        // of printf lines costs one write, not one per line.
        None => Box::new(io::BufWriter::with_capacity(1 << 16, io::stdout())),
    };
    let symbols = Arc::new(Symbolizer::new());
    let stack_map = |kernel: bool| {
        script
            .maps
            .iter()
            .find(|m| m.role == MapRole::Stacks { kernel })
            .and_then(|m| loaded.raw_map(&m.symbol).ok())
    };
    let resolver =
        RuntimeResolver::with_stacks(script, stack_map(false), stack_map(true), symbols.clone());
    let printer: Box<dyn Printer> = if opts.json {
        Box::new(crate::output::JsonPrinter::new(out, resolver.clone()))
    } else if opts.folded {
        Box::new(crate::output::FoldedPrinter::new(out, resolver.clone()))
    } else {
        Box::new(crate::output::TextPrinter::new(out, resolver.clone()))
    };
    let mut s = Session {
        script,
        loaded,
        events: None,
        printer,
        resolver,
        symbols,
        formats: script
            .events
            .iter()
            .map(|e| match e {
                EventSpec::Printf { format, args }
                | EventSpec::Cat { format, args }
                | EventSpec::System { format, args } => parse_format(format)
                    .ok()
                    .map(|pieces| (pieces, tuple_layout(args).0)),
                _ => None,
            })
            .collect(),
        stop: None,
        unsafe_allowed: opts.unsafe_allowed,
        discard: false,
        zeroed: Default::default(),
        stack_keyed: None,
    };
    if script.maps.iter().any(|m| m.kind == MapKind::RingBuf) {
        match s.loaded.take_events("events") {
            Ok(r) => s.events = Some(r),
            Err(e) => {
                return Err(vec![internal(format!(
                    "cannot open the event ring buffer: {e}"
                ))]);
            }
        }
    }
    install_signal_handlers();

    // BEGIN runs before anything else is attached, so its output comes first.
    trigger::run(&s.loaded, Trigger::Begin).map_err(|d| vec![d])?;
    s.drain();
    let attached =
        attach_all(&mut s.loaded, &AttachOptions { pid: opts.pid }).map_err(|d| vec![d])?;
    if !opts.quiet {
        eprintln!(
            "Attached {attached} probe{}",
            if attached == 1 { "" } else { "s" }
        );
        let _ = s.printer.attached(attached);
    }
    if let Some(Err(e)) = opts.child.as_mut().map(HeldChild::release) {
        return Err(vec![internal(format!("cannot start the -c command: {e}"))]);
    }
    let only_begin_end = script.programs.iter().all(|p| {
        p.attach
            .iter()
            .all(|t| matches!(t.spec, AttachSpec::Begin | AttachSpec::End))
    });
    let runs_until_stopped = !only_begin_end || opts.child.is_some();
    if !opts.dry_run && runs_until_stopped {
        while s.stop.is_none() {
            if STOP.load(Ordering::SeqCst) {
                s.stop = Some(Stop::Interrupted);
                break;
            }
            // The child is held at its exit until its address maps are snapshotted, so that
            // its user stacks and symbols resolve after it is gone.
            let symbols = s.symbols.clone();
            if opts.child.as_mut().is_some_and(|c| {
                c.poll(&mut |pid| {
                    symbols.processes().refresh(pid);
                })
            }) {
                s.drain();
                s.stop = Some(Stop::Interrupted);
                break;
            }
            // A held child waits for this loop at its exit: look at it more often.
            s.poll(Duration::from_millis(if opts.child.is_some() {
                20
            } else {
                100
            }));
            s.observe_user_stacks();
        }
    }
    detach_probes(&mut s.loaded);
    s.drain();
    let mut flamegraph = Ok(());
    if !opts.dry_run {
        s.discard = false;
        trigger::run(&s.loaded, Trigger::End).map_err(|d| vec![d])?;
        s.drain();
        if checked.config.print_maps_on_exit {
            s.print_all_maps(opts.output.is_some());
        }
        if let Some(report) = opts.report {
            let dumps: Vec<MapDump> = s
                .script
                .maps
                .iter()
                .filter_map(|m| match &m.role {
                    MapRole::User { name, .. } => s.read_map(name),
                    _ => None,
                })
                .collect();
            let text = report(&dumps);
            let _ = s.printer.printf(text.as_bytes());
        }
        if let Some(path) = &opts.flamegraph {
            flamegraph = s.write_flamegraph(path);
        }
    }
    s.flush();
    s.report_counters();
    if let Some(c) = opts.child.as_mut() {
        c.kill();
    }
    flamegraph?;
    Ok(match s.stop {
        Some(Stop::Exit(code)) => code,
        _ => 0,
    })
}

/// How long the loop waits after a batch of events before looking for more.
const BATCH_NAP: Duration = Duration::from_millis(1);

/// Sleeps for `d`, returning early on a signal (unlike `thread::sleep`, which resumes after
/// one): Ctrl-C must end the wait.
fn nap(d: Duration) {
    let ms = d.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: poll with no descriptors only sleeps; a signal interrupts it (EINTR).
    unsafe { libc::poll(std::ptr::null_mut(), 0, ms) };
}

fn internal(msg: String) -> Diagnostic {
    Diagnostic::error("sonde::runtime::internal", Span::default(), msg)
}

impl Session<'_> {
    fn poll(&mut self, timeout: Duration) {
        let Some(mut reader) = self.events.take() else {
            nap(timeout);
            return;
        };
        // Records are handled in place, straight out of the ring buffer.
        let n = reader.poll(timeout, &mut |r: &[u8]| self.handle(r));
        self.events = Some(reader);
        self.flush();
        if n.is_ok_and(|n| n > 0) {
            // Events are flowing: let them gather for a moment rather than being woken by
            // the kernel for nearly each one (a wakeup costs more than handling a record).
            // The ring buffer holds far more than arrives in this time at any rate seen.
            nap(BATCH_NAP);
        }
    }

    /// Processes every pending event.
    fn drain(&mut self) {
        let Some(mut reader) = self.events.take() else {
            return;
        };
        reader.drain(&mut |r: &[u8]| self.handle(r));
        self.events = Some(reader);
        self.flush();
    }

    /// Writes out buffered output; a closed pipe stops the run as when printing.
    fn flush(&mut self) {
        if self
            .printer
            .flush()
            .is_err_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
        {
            self.stop = Some(Stop::Interrupted);
        }
    }

    fn handle(&mut self, record: &[u8]) {
        if record.len() < 8 || self.discard {
            return;
        }
        let id = u64::from_le_bytes(record[..8].try_into().expect("8 bytes")) as usize;
        let payload = &record[8..];
        let Some(spec) = self.script.events.get(id) else {
            return;
        };
        let r = match spec {
            EventSpec::Printf { args, .. } => {
                let text = self.format(id, args, payload);
                self.printer.printf(&text)
            }
            EventSpec::PrintValue { ty } => self.printer.value(&decode(ty, payload)),
            EventSpec::PrintMap { map, top, div } => match self.read_map(map) {
                Some(dump) => self.printer.map(
                    &dump,
                    PrintOpts {
                        top: *top,
                        div: (*div).max(1),
                    },
                ),
                None => Ok(()),
            },
            EventSpec::ClearMap { map } => {
                self.zeroed.remove(map);
                self.with_map(map, |m| m.clear());
                Ok(())
            }
            EventSpec::ZeroMap { map } => {
                self.zeroed.insert(map.clone());
                self.with_map(map, |m| m.zero());
                Ok(())
            }
            EventSpec::Time { format } => {
                let text = crate::resolver::strftime_now(format);
                self.printer.time(text.as_bytes())
            }
            EventSpec::Cat { args, .. } => {
                let path = self.format(id, args, payload);
                let path = String::from_utf8_lossy(&path).into_owned();
                match std::fs::read(&path) {
                    Ok(bytes) => self.printer.printf(&bytes),
                    Err(e) => {
                        eprintln!("sonde: cat: cannot read {path}: {e}");
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
                match std::process::Command::new("/bin/sh")
                    .arg("-c")
                    .arg(&cmd)
                    .output()
                {
                    Ok(o) => self.printer.printf(&o.stdout),
                    Err(e) => {
                        eprintln!("sonde: system: {e}");
                        Ok(())
                    }
                }
            }
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
                self.printer.printf(line.as_bytes())
            }
            EventSpec::Exit => {
                let code = payload
                    .get(..8)
                    .map_or(0, |b| i64::from_le_bytes(b.try_into().expect("8 bytes")));
                if !matches!(self.stop, Some(Stop::Exit(_))) {
                    self.stop = Some(Stop::Exit(code as u8));
                }
                self.discard = true;
                Ok(())
            }
        };
        if r.is_err_and(|e| e.kind() == io::ErrorKind::BrokenPipe) {
            self.stop = Some(Stop::Interrupted);
        }
    }

    /// Formats a printf-style event whose arguments are laid out as a tuple of `args`.
    fn format(&self, id: usize, args: &[Type], payload: &[u8]) -> Vec<u8> {
        let Some(Some((pieces, offsets))) = self.formats.get(id) else {
            return Vec::new();
        };
        let values: Vec<Value> = args
            .iter()
            .zip(offsets.iter().copied())
            .map(|(ty, off)| {
                let off = off as usize;
                let end = (off + ty.size() as usize).min(payload.len());
                decode(ty, payload.get(off..end).unwrap_or(&[]))
            })
            .collect();
        crate::output::format_printf_with(pieces, &values, &self.resolver)
    }

    fn with_map(&self, name: &str, f: impl FnOnce(&crate::maps::RawMap) -> io::Result<()>) {
        let Some(spec) = self.user_map(name) else {
            return;
        };
        if let Ok(m) = self.loaded.raw_map(&spec.symbol) {
            let _ = f(&m);
        }
    }

    fn user_map(&self, name: &str) -> Option<&sonde_compiler::program::MapSpec> {
        self.script
            .maps
            .iter()
            .find(|m| matches!(&m.role, MapRole::User { name: n, .. } if n == name))
    }

    /// Remembers the address maps of processes whose user stacks are in a map, so that they
    /// still resolve when printed after those processes exit.
    fn observe_user_stacks(&mut self) {
        if self.stack_keyed.is_none() {
            // The user maps keyed by user stacks, and where the stacks sit in their keys:
            // worked out once.
            let found = self
                .script
                .maps
                .iter()
                .filter_map(|spec| {
                    let MapRole::User { key: Some(key), .. } = &spec.role else {
                        return None;
                    };
                    let offsets = user_stack_offsets(key, 0);
                    if offsets.is_empty() {
                        return None;
                    }
                    Some((self.loaded.raw_map(&spec.symbol).ok()?, offsets))
                })
                .collect();
            self.stack_keyed = Some(found);
        }
        for (m, offsets) in self.stack_keyed.iter().flatten() {
            let Ok(keys) = m.keys() else { continue };
            for k in keys {
                for &off in offsets {
                    if let Some(b) = k.get(off + 4..off + 8) {
                        self.symbols
                            .observe(u32::from_le_bytes(b.try_into().expect("4 bytes")));
                    }
                }
            }
        }
    }

    /// Reads and decodes a user map.
    fn read_map(&self, name: &str) -> Option<MapDump> {
        let spec = self.user_map(name)?;
        let MapRole::User { key, value, .. } = &spec.role else {
            return None;
        };
        let raw = self.loaded.raw_map(&spec.symbol).ok()?;
        let entries = raw.entries().ok()?;
        let entries = entries
            .into_iter()
            .map(|(k, slots)| {
                let key = match key {
                    Some(t) => decode(t, &k),
                    None => Value::None,
                };
                let val = match value {
                    Type::Agg(kind) => {
                        let refs: Vec<&[u8]> = slots.iter().map(Vec::as_slice).collect();
                        decode_agg(kind, &refs)
                    }
                    t => decode(t, slots.first().map_or(&[][..], Vec::as_slice)),
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

    /// Prints every non-empty map at exit. Like bpftrace, the two newlines that precede them go
    /// to stdout even when the output is a file.
    fn print_all_maps(&mut self, to_file: bool) {
        let mut dumps = Vec::new();
        for spec in &self.script.maps {
            if let MapRole::User { name, .. } = &spec.role
                && let Some(d) = self.read_map(name).filter(|d| !d.entries.is_empty())
            {
                dumps.push(d);
            }
        }
        if to_file {
            let _ = io::stdout().write_all(b"\n\n");
            let _ = self.printer.maps_by_name(&dumps);
        } else {
            let _ = self.printer.exit_maps(&dumps);
        }
    }

    /// Writes a flame graph of every map keyed by stacks (their folded lines together) to
    /// `path`. No such map, or no samples, is an error: the SVG would be empty.
    fn write_flamegraph(&self, path: &std::path::Path) -> Result<(), Vec<Diagnostic>> {
        let mut lines = Vec::new();
        for spec in &self.script.maps {
            if let MapRole::User { name, .. } = &spec.role
                && let Some(dump) = self.read_map(name)
                && let Some(folded) = crate::output::folded::folded_lines(&dump, &self.resolver)
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
        crate::output::folded::write_flamegraph(path, "Flame Graph", &lines)
            .map_err(|e| fail(format!("cannot write {}: {e}", path.display())))
    }

    /// Reports events lost and updates dropped because a map was full.
    fn report_counters(&self) {
        let Some(spec) = self
            .script
            .maps
            .iter()
            .find(|m| m.role == MapRole::Counters)
        else {
            return;
        };
        let Ok(m) = self.loaded.raw_map(&spec.symbol) else {
            return;
        };
        let read = |i: u32| -> u64 {
            m.lookup(&i.to_le_bytes()).ok().flatten().map_or(0, |v| {
                u64::from_le_bytes(v[..8].try_into().unwrap_or([0; 8]))
            })
        };
        let lost = read(Counter::LostEvents as u32);
        let full = read(Counter::MapFull as u32);
        if lost > 0 {
            eprintln!("Lost {lost} events");
        }
        if full > 0 {
            let max = self
                .script
                .maps
                .iter()
                .filter(|m| matches!(m.role, MapRole::User { .. }))
                .map(|m| m.max_entries)
                .max()
                .unwrap_or(0);
            eprintln!(
                "Warning: {full} map updates failed because a map was full (max {max} entries; raise config max_map_keys)"
            );
        }
    }
}

/// Byte offsets of user-stack values inside a key of type `ty` (at `base`).
fn user_stack_offsets(ty: &Type, base: usize) -> Vec<usize> {
    match ty {
        Type::Stack { kernel: false, .. } => vec![base],
        Type::Tuple(items) => {
            let (offs, _) = tuple_layout(items);
            items
                .iter()
                .zip(offs)
                .flat_map(|(t, o)| user_stack_offsets(t, base + o as usize))
                .collect()
        }
        _ => Vec::new(),
    }
}
