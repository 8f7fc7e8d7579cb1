//! Running a compiled script: load, BEGIN, attach, the event loop, and at exit END and the
//! map printout — with bpftrace's ordering.

use crate::child::HeldChild;
use crate::detach_status::DetachStatus;
use crate::kernel_maps::Source;
use crate::resolver::RuntimeResolver;
use sonde_compiler::program::{AttachSpec, CompiledScript, EventSpec, MapKind, MapRole, MapSpec};
use sonde_kernel::attach::{AttachOptions, attach_all};
use sonde_kernel::detach::detach_probes;
use sonde_kernel::events::EventReader;
use sonde_kernel::load::{LoadError, Loaded, load};
use sonde_kernel::trigger::{self, Trigger};
use sonde_lang::diag::Diagnostic;
use sonde_lang::sema::Checked;
use sonde_lang::span::Span;
use sonde_lang::types::{Type, tuple_layout};
use sonde_session::{Output, OutputOptions, Stop};
use sonde_system::kernel_info::debug_search::DebugPath;
use sonde_system::signals::{install_signal_handlers, nap, stop_requested};
use sonde_system::symbols::Symbolizer;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::RecvTimeoutError;
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
    /// `-B MODE`: output buffering (`None`: written after each batch of events).
    pub buffering: Option<sonde_present::output::buffer::Buffering>,
    /// `-c CMD`: the child, already spawned and held.
    pub child: Option<HeldChild>,
    /// `-p PID`.
    pub pid: Option<u32>,
    /// A tool's `-p PID`/`-c CMD`: where its uprobes attach (a script's fire in every
    /// process using the binary, its predicates filter).
    pub uprobes_in: UprobeScope,
    /// `--dry-run`: load and attach, then exit.
    pub dry_run: bool,
    /// `--unsafe`.
    pub unsafe_allowed: bool,
    /// `-f folded`: maps keyed by stacks print as folded lines (see [`sonde_present::output::folded`]).
    pub folded: bool,
    /// `-f csv` (see [`sonde_present::output::csv`]).
    pub csv: bool,
    /// An event tool's lines are rows (see [`sonde_present::output::rows`]).
    pub rows: bool,
    /// A recording tool's printf events are recorded and not printed (see
    /// [`OutputOptions::unprinted_events`]).
    pub unprinted_events: bool,
    /// `--flamegraph FILE`: at exit, write a flame graph SVG of the maps keyed by stacks.
    pub flamegraph: Option<PathBuf>,
    /// The pictures drawn from what the run prints (`--heatmap`, `--chart`).
    pub pictures: sonde_present::pictures::PictureOptions,
    /// The post-processing script (`--post`, a tool's report; see [`crate::report`]).
    pub post: Option<sonde_present::report::Post>,
    /// `sonde record`: where the run is recorded.
    pub record: Option<crate::record_tap::Recorder>,
    /// `--test` / `--bench`: run the script's `test:`/`bench:` probes instead of attaching
    /// (see [`crate::selftest`]).
    pub self_test: Option<crate::selftest::SelfTestMode>,
    /// `--metrics`, `--metrics-file`: the maps exported while the script runs.
    pub metrics: Option<crate::metrics::MetricsRun>,
    /// `--debuginfo DIR[:DIR]`: where separate debug files are looked for first, for the
    /// source lines of stack frames (`show_debug_info`) as for uprobe arguments.
    pub debuginfo: Vec<String>,
}

/// Where uprobes (and USDT probes) attach, besides what `-p` says.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UprobeScope {
    /// In every process that maps the binary (bpftrace's way for scripts).
    #[default]
    Everywhere,
    /// In this process only (a tool's `-p PID`).
    Process(u32),
    /// In the `-c` child only (a tool's `-c CMD`).
    Child,
    /// Nowhere: a tool run without the `-p`/`-c` its uprobes need traces the kernel only
    /// (bcc's memleak without `-p`).
    Nowhere,
}

/// The kernel's maps of a loaded script, as a [`MapSource`].
struct KernelMaps<'a>(&'a Loaded);

impl sonde_kernel::maps::RawMaps for KernelMaps<'_> {
    fn raw(&self, spec: &MapSpec) -> Option<sonde_kernel::maps::RawMap> {
        self.0.raw_map(&spec.symbol).ok()
    }
}

/// The state of a running script.
struct Session<'a> {
    script: &'a CompiledScript,
    loaded: Loaded,
    events: Option<EventReader>,
    out: Output<'a>,
    symbols: Arc<Symbolizer>,
    /// User maps keyed by user stacks and the offsets of those stacks in their keys (found on
    /// first use; empty when the script records no user stack).
    stack_keyed: Option<Vec<(sonde_kernel::maps::RawMap, Vec<usize>)>>,
    /// The maps exported while the script runs, if they are.
    metrics: Option<crate::metrics::MetricsRun>,
    /// Probes attached.
    attached: usize,
}

/// Runs the script until it exits; returns the process exit code.
pub fn run(
    checked: &Checked,
    script: &CompiledScript,
    mut opts: RunOptions,
) -> Result<u8, Vec<Diagnostic>> {
    // `-p PID`: a process that does not exist is refused before anything is loaded; one that
    // exits during the run ends it.
    let watched = match opts.pid {
        Some(pid) => Some(crate::child::WatchedPid::open(pid).map_err(|e| {
            vec![
                Diagnostic::error("sonde::runtime::no_process", Span::default(), format!("-p {pid}: {e}"))
                    .with_help("-p traces a running process: give the pid of one (see `ps`), or start the command with -c"),
            ]
        })?),
        None => None,
    };
    if let Err(e) = sonde_system::tracefs::tracefs_root() {
        return Err(vec![
            Diagnostic::error("sonde::runtime::tracefs", Span::default(), e)
                .with_help("mount it with `mount -t tracefs nodev /sys/kernel/tracing` (as root)"),
        ]);
    }
    // Handlers first: Ctrl-C during a long verification ends the run (see
    // `load_interruptibly`).
    install_signal_handlers();
    trigger::install_sigusr1();
    let Some(result) = load_interruptibly(script) else {
        return Ok(EXIT_INTERRUPTED);
    };
    let loaded = match result {
        Ok(l) => l,
        Err(e) => {
            if let Some(log) = e.verifier_log.as_ref().filter(|_| opts.verbose) {
                eprintln!("{log}");
            }
            return Err(vec![e.diagnostic]);
        }
    };
    let (mut s, test_resolver) = Session::open(checked, script, loaded, &mut opts)?;
    if let (Some(mode), Some(resolver)) = (opts.self_test, test_resolver) {
        return self_test(s, checked, mode, resolver, opts.dry_run);
    }
    s.begin_and_attach(checked, &mut opts)?;
    s.run_until_stopped(&mut opts, watched.as_ref())?;
    s.end(checked, opts)
}

impl<'a> Session<'a> {
    /// The session of `loaded`: its symbolizer, resolver and output as `opts` say, and its
    /// ring buffer. With `--test`/`--bench`, also the resolver the tests print with.
    fn open(
        checked: &Checked,
        script: &'a CompiledScript,
        loaded: Loaded,
        opts: &mut RunOptions,
    ) -> Result<(Session<'a>, Option<RuntimeResolver>), Vec<Diagnostic>> {
        let symbols = Arc::new(Symbolizer::with_debug_search(DebugPath::with_dirs(
            &opts.debuginfo,
        )));
        symbols.set_debug_info(checked.config.show_debug_info);
        // Before anything is attached: a process the probes see has its mappings reported.
        if !opts.dry_run
            && uses_user_addresses(script)
            && let Err(e) = sonde_kernel::mmap_tracker::MmapTracker::open()
                .map(|t| symbols.track_mappings(Box::new(t)))
        {
            eprintln!(
                "sonde: warning: cannot track process mappings ({e}): user addresses of processes that exit before they are printed may not resolve"
            );
        }
        let resolver = RuntimeResolver::for_maps(script, &KernelMaps(&loaded), symbols.clone());
        let oopts = OutputOptions {
            json: opts.json,
            folded: opts.folded,
            csv: opts.csv,
            rows: opts.rows,
            unprinted_events: opts.unprinted_events,
            output: opts.output.clone(),
            unsafe_allowed: opts.unsafe_allowed,
            buffering: opts.buffering,
            pictures: std::mem::take(&mut opts.pictures),
            str_trunc_trailer: Some(checked.config.str_trunc_trailer.clone()),
        };
        let test_resolver = opts.self_test.map(|_| resolver.clone());
        let mut out = match opts.record.take() {
            Some(mut rec) => {
                let resolver = rec.resolver(resolver);
                let mut out = Output::new(script, &oopts, resolver).map_err(|d| vec![d])?;
                out.set_tap(Box::new(rec));
                out
            }
            None => Output::new(script, &oopts, resolver).map_err(|d| vec![d])?,
        };
        if let Some(post) = opts.post.take() {
            out.set_post(post).map_err(|d| vec![d])?;
        }
        let mut metrics = opts.metrics.take();
        if let Some(m) = metrics.as_mut() {
            sonde_session::scrape::Served::attach(m, &mut out);
        }
        let mut s = Session {
            script,
            loaded,
            events: None,
            out,
            symbols,
            stack_keyed: None,
            metrics,
            attached: 0,
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
        Ok((s, test_resolver))
    }

    /// bpftrace 0.26's order: BEGIN runs (not under --dry-run) before any other probe is
    /// attached, so its output comes before every event's; then every probe attaches,
    /// "Attached N probes" is printed, BEGIN's output is read, and only then does the -c
    /// command start. An iterator runs once, then.
    fn begin_and_attach(
        &mut self,
        checked: &Checked,
        opts: &mut RunOptions,
    ) -> Result<(), Vec<Diagnostic>> {
        if !opts.dry_run {
            trigger::run(&self.loaded, Trigger::Begin).map_err(|d| vec![d])?;
            self.loaded.unload_begin();
        }
        let attached = attach_all(
            &mut self.loaded,
            &AttachOptions {
                pid: opts.pid.or(match opts.uprobes_in {
                    UprobeScope::Everywhere | UprobeScope::Nowhere => None,
                    UprobeScope::Process(pid) => Some(pid),
                    UprobeScope::Child => opts.child.as_ref().map(HeldChild::pid),
                }),
                missing: checked.config.missing_probes,
                watch_pid: opts.pid.or(opts.child.as_ref().map(HeldChild::pid)),
                skip_uprobes: opts.uprobes_in == UprobeScope::Nowhere,
            },
        )
        .map_err(|d| vec![d])?;
        if attached == 0 {
            return Err(vec![nothing_attached(self.script)]);
        }
        self.attached = attached;
        // An agent (`--metrics`) runs for long: what it needs no more, it gives up.
        if self.metrics.is_some()
            && let Err(e) = sonde_kernel::privilege::drop_after_attach()
        {
            eprintln!("sonde: warning: cannot drop privileges after attaching: {e}");
        }
        if !opts.quiet {
            eprintln!(
                "Attached {attached} probe{}",
                if attached == 1 { "" } else { "s" }
            );
            self.out.attached(attached);
        }
        self.drain();
        let counts = self.counts();
        self.out.report_counts(counts);
        if let Some(Err(e)) = opts.child.as_mut().map(HeldChild::release) {
            return Err(vec![internal(format!("cannot start the -c command: {e}"))]);
        }
        // An iterator runs once, now, and the script ends (see `sonde_kernel::iter`).
        if !opts.dry_run && sonde_kernel::iter::has_iterator(&self.loaded) {
            crate::iterate::run(&self.loaded, &mut self.out).map_err(|d| vec![d])?;
            self.drain();
            self.out.stop.get_or_insert(Stop::Interrupted);
        }
        Ok(())
    }

    /// The event loop: until the script exits, Ctrl-C or SIGTERM, or the `-c` child or the
    /// `-p` process ends. A script of BEGIN and END probes alone does not loop.
    fn run_until_stopped(
        &mut self,
        opts: &mut RunOptions,
        watched: Option<&crate::child::WatchedPid>,
    ) -> Result<(), Vec<Diagnostic>> {
        // Tests and benchmarks are not run (nor attached) here.
        let only_begin_end = self.script.programs.iter().all(|p| {
            p.attach.iter().all(|t| {
                matches!(
                    t.spec,
                    AttachSpec::Begin | AttachSpec::End | AttachSpec::SelfTest { .. }
                )
            })
        });
        let runs_until_stopped = !only_begin_end || opts.child.is_some();
        if opts.dry_run || !runs_until_stopped {
            return Ok(());
        }
        while self.out.stop.is_none() {
            if stop_requested() {
                self.out.stop = Some(Stop::Interrupted);
                break;
            }
            // The child is held at its exit until its address maps are snapshotted, so that
            // its user stacks and symbols resolve after it is gone.
            let symbols = self.symbols.clone();
            if opts.child.as_mut().is_some_and(|c| {
                c.poll(&mut |pid| {
                    symbols.processes().refresh(pid);
                })
            }) {
                self.drain();
                self.out.stop = Some(Stop::Interrupted);
                break;
            }
            if watched.is_some_and(crate::child::WatchedPid::exited) {
                self.drain();
                self.out.stop = Some(Stop::Interrupted);
                break;
            }
            // `self:signal:SIGUSR1` probes run in this task, between batches of events.
            if trigger::take_sigusr1() {
                trigger::run(&self.loaded, Trigger::Signal(libc::SIGUSR1)).map_err(|d| vec![d])?;
            }
            // A held child waits for this loop at its exit: look at it more often.
            self.poll(Duration::from_millis(if opts.child.is_some() {
                20
            } else {
                100
            }));
            // Mappings reported by the kernel first: a process known from them needs no
            // snapshot.
            self.symbols.sync_maps();
            self.observe_user_stacks();
            // Lost events, full maps and cut loops are reported as they happen (bpftrace
            // prints "Lost N events" during the run): a few array lookups per tick.
            let counts = self.counts();
            self.out.report_counts(counts);
            self.serve_metrics(counts, false);
        }
        Ok(())
    }

    /// The end of a run: every probe detached, END run, the maps printed (and the flame
    /// graph drawn), the output finished and the `-c` child killed; the exit code.
    fn end(mut self, checked: &Checked, mut opts: RunOptions) -> Result<u8, Vec<Diagnostic>> {
        let status = DetachStatus::start(self.loaded.link_count(), opts.quiet);
        detach_probes(&mut self.loaded);
        drop(status);
        self.symbols.sync_maps();
        self.drain();
        let mut flamegraph = Ok(());
        if !opts.dry_run {
            self.out.discard = false;
            self.out.in_end = true;
            trigger::run(&self.loaded, Trigger::End).map_err(|d| vec![d])?;
            self.drain();
            let dumps = self.out.exit_maps(&Source(KernelMaps(&self.loaded)));
            // The counters first: a report's `lost_events()` is the run's.
            let counts = self.counts();
            self.out.report_counts(counts);
            self.out.end(&dumps, checked.config.print_maps_on_exit);
            if let Some(path) = &opts.flamegraph {
                flamegraph = self.out.write_flamegraph(path, &dumps);
            }
        }
        let counts = self.counts();
        self.serve_metrics(counts, true);
        let written = self.out.finish(counts);
        if let Some(c) = opts.child.as_mut() {
            c.kill();
        }
        written.map_err(|d| vec![d])?;
        flamegraph?;
        Ok(self.out.exit_code())
    }
}

/// The error of a run with nothing to attach: bpftrace's, which points at `--test` or
/// `--bench` when the script has such probes.
fn nothing_attached(script: &CompiledScript) -> Diagnostic {
    let kinds: Vec<bool> = script
        .programs
        .iter()
        .flat_map(|p| &p.attach)
        .filter_map(|t| match t.spec {
            AttachSpec::SelfTest { bench, .. } => Some(bench),
            _ => None,
        })
        .collect();
    let message = if kinds.contains(&false) {
        "No probes attached; use --test to run test probes."
    } else if kinds.contains(&true) {
        "No probes attached; use --bench to run benchmark probes."
    } else {
        "Attachment failed for all probes."
    };
    let span = script
        .programs
        .first()
        .map_or_else(Span::default, |p| p.span);
    Diagnostic::error("sonde::attach::nothing_attached", span, message)
        .with_help("test: and bench: probes run only under `sonde --test` or `sonde --bench`")
}

/// `--test` / `--bench` (see [`crate::selftest`]): BEGIN, the tests or benchmarks, END;
/// no "Attached" line and no maps printed at exit. Exit code 1 when a test failed.
fn self_test(
    mut s: Session<'_>,
    checked: &Checked,
    mode: crate::selftest::SelfTestMode,
    resolver: RuntimeResolver,
    dry_run: bool,
) -> Result<u8, Vec<Diagnostic>> {
    let _ = checked;
    if dry_run {
        return Ok(0);
    }
    trigger::run(&s.loaded, Trigger::Begin).map_err(|d| vec![d])?;
    s.drain();
    let maps = Source(KernelMaps(&s.loaded));
    let mut runner = crate::selftest::Runner {
        script: s.script,
        loaded: &s.loaded,
        events: &mut s.events,
        maps: &maps,
        resolver,
    };
    let (_, all_passed) = runner.run(mode, &mut s.out).map_err(|d| vec![d])?;
    s.out.discard = false;
    s.out.stop = None;
    s.out.in_end = true;
    trigger::run(&s.loaded, Trigger::End).map_err(|d| vec![d])?;
    s.drain();
    s.out.end(&[], false);
    let counts = s.counts();
    s.out.finish(counts).map_err(|d| vec![d])?;
    Ok(if all_passed { s.out.exit_code() } else { 1 })
}

/// How long the loop waits after a batch of events before looking for more.
const BATCH_NAP: Duration = Duration::from_millis(1);

/// The exit code of a run interrupted while its programs were being loaded (128 + SIGINT).
pub const EXIT_INTERRUPTED: u8 = 130;

/// Loads `script` on a thread of its own while this one watches for Ctrl-C or SIGTERM:
/// verifying a complex program can take seconds, during which the `bpf()` call cannot be
/// abandoned. On a stop request this returns `None` at once, leaving the loading thread
/// behind; returning from `main` ends the process, and the kernel frees whatever it had
/// loaded.
fn load_interruptibly(script: &CompiledScript) -> Option<Result<Loaded, LoadError>> {
    let owned = script.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("sonde-load".into())
        .spawn(move || {
            let _ = tx.send(load(&owned));
        });
    let Ok(handle) = spawned else {
        return Some(load(script));
    };
    loop {
        match rx.recv_timeout(Duration::from_millis(50)) {
            // A signal may also have cut the verification short: the stop wins.
            Ok(_) | Err(RecvTimeoutError::Timeout) if stop_requested() => return None,
            Ok(result) => return Some(result),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => match handle.join() {
                Err(panic) => std::panic::resume_unwind(panic),
                Ok(()) => return Some(load(script)),
            },
        }
    }
}

fn internal(msg: String) -> Diagnostic {
    Diagnostic::error("sonde::runtime::internal", Span::default(), msg)
}

impl Session<'_> {
    /// The error counters: the programs' and the mapping tracker's.
    fn counts(&self) -> sonde_present::output::Counts {
        let (maps_lost, maps_evicted) = self.symbols.map_losses();
        sonde_present::output::Counts {
            maps_lost,
            maps_evicted,
            probes_skipped: self.loaded.recursion_misses(),
            ..sonde_present::output::counters(self.script, &Source(KernelMaps(&self.loaded)))
        }
    }

    /// Answers the metrics server's scrapes and writes the metrics file when due (`last`:
    /// the run ends, the file gets the final values).
    fn serve_metrics(&mut self, counts: sonde_present::output::Counts, last: bool) {
        let Some(m) = self.metrics.as_mut() else {
            return;
        };
        let stats = sonde_export::metrics::RunStats {
            probes: self.attached as u64,
            lost_events: counts.lost_events,
            map_full: counts.map_full,
            ..Default::default()
        };
        let maps = Source(KernelMaps(&self.loaded));
        sonde_session::scrape::Served::serve(m, &mut self.out, &maps, stats, last);
    }

    fn poll(&mut self, timeout: Duration) {
        let Some(mut reader) = self.events.take() else {
            nap(timeout);
            return;
        };
        // Records are handled in place, straight out of the ring buffer.
        let maps = Source(KernelMaps(&self.loaded));
        let out = &mut self.out;
        let n = reader.poll(timeout, &mut |r: &[u8]| out.handle(r, &maps));
        self.events = Some(reader);
        self.out.flush();
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
        let maps = Source(KernelMaps(&self.loaded));
        let out = &mut self.out;
        reader.drain(&mut |r: &[u8]| out.handle(r, &maps));
        self.events = Some(reader);
        self.out.flush();
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
}

/// True when the script records user stacks or user addresses to print by name (`ustack`,
/// `usym`): the only values whose printing needs the address maps of processes.
fn uses_user_addresses(script: &CompiledScript) -> bool {
    fn user(ty: &Type) -> bool {
        match ty {
            Type::Stack { kernel: false, .. } | Type::Symbol { kernel: false } => true,
            Type::Tuple(items) => items.iter().any(user),
            Type::Array { elem, .. } => user(elem),
            _ => false,
        }
    }
    let in_maps = script.maps.iter().any(|m| match &m.role {
        MapRole::Stacks { kernel: false } => true,
        MapRole::User { key, value, .. } => key.as_ref().is_some_and(user) || user(value),
        _ => false,
    });
    in_maps
        || script.events.iter().any(|e| match e {
            EventSpec::Printf { args, .. }
            | EventSpec::Cat { args, .. }
            | EventSpec::System { args, .. }
            | EventSpec::Log { args, .. } => args.iter().any(user),
            EventSpec::PrintValue { ty } => user(ty),
            _ => false,
        })
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
