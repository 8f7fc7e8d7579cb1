//! The run loop of the userspace engine: sorts a script's probes by kind, opens its inputs,
//! runs `BEGIN`, then the input, replay or interval loop, then `END` and the final printout.

use crate::host::Host;
use crate::input::{FieldSep, LineReader, Next, Record};
use crate::store::{HostMapSource, HostMaps};
use crate::{JitOptions, ReplayEvent, jit_compile, parallel};
use sonde_compiler::compile::Compiled;
use sonde_compiler::jit::JitProgram;
use sonde_compiler::program::{AttachSpec, CompiledScript, MapKind, PerfSample};
use sonde_lang::diag::Diagnostic;
use sonde_lang::sema::Checked;
use sonde_lang::span::Span;
use sonde_present::output::Resolver;
use sonde_present::report::Post;
use sonde_session::{Output, OutputOptions, Stop};
use sonde_system::signals::{install_signal_handlers, nap, stop_requested};
use std::os::fd::AsRawFd;
use std::time::Duration;

/// A periodic probe.
struct Timer {
    prog: usize,
    period_ns: u64,
    next_ns: u64,
}

/// One input source and the probes reading it.
struct Source {
    path: Option<String>,
    span: Span,
    progs: Vec<usize>,
}

/// An opened input source: what reads it, and its descriptor (polled for lines).
type Input = (Box<dyn std::io::Read>, std::os::fd::RawFd);

/// A script's probes, sorted by how the userspace engine fires them.
struct Probes {
    /// The `BEGIN` probes.
    begin: Vec<usize>,
    /// The `END` probes.
    end: Vec<usize>,
    /// The periodic probes.
    timers: Vec<Timer>,
    /// The input sources, each with the probes reading it.
    sources: Vec<Source>,
    /// The `replay` probes of each recorded event kind.
    replay: Vec<Vec<usize>>,
}

/// Runs a script compiled for the JIT engine until its input ends, it exits, or Ctrl-C.
/// Returns the process exit code.
pub fn run_jit(
    checked: &Checked,
    compiled: &Compiled,
    resolver: impl Resolver + Clone + 'static,
    opts: JitOptions,
) -> Result<u8, Vec<Diagnostic>> {
    let script = &compiled.script;
    let jit = jit_compile(compiled, opts.verbose)?;
    let Probes {
        begin,
        end,
        mut timers,
        sources,
        replay,
    } = sort_probes(script)?;
    let sources = with_input_files(sources, &opts.input_files);
    // Inputs are opened before BEGIN runs, so a missing file stops the run before any output.
    let readers = open_inputs(&sources)?;
    let host = new_host(script, &opts.field_sep);
    let mut out = new_output(checked, script, resolver, opts.output, opts.post)?;
    let mut served = opts.served;
    if let Some(s) = served.as_mut() {
        s.attach(&mut out);
    }
    // Maps served while the run goes on must be the main thread's.
    let threads = if served.is_some() { 1 } else { opts.threads };
    let mut e = Engine {
        jit,
        host,
        out,
        workers: Vec::new(),
        served,
        attached: 0,
    };
    install_signal_handlers();

    e.begin(script, &begin, opts.quiet);
    let now = sonde_system::clock::boot_ns();
    for t in &mut timers {
        t.next_ns = now + t.period_ns;
    }
    if !opts.replay.is_empty() || !replay.is_empty() {
        e.replay(&opts.replay, &replay, &mut timers);
    } else if !sources.is_empty() {
        e.read_sources(
            compiled,
            &sources,
            readers,
            &mut timers,
            &opts.field_sep,
            threads,
        )?;
    } else if !timers.is_empty() {
        e.tick(&mut timers);
    }
    e.finish(checked, script, &end)
}

/// Sorts `script`'s probes by kind; a probe that runs in the kernel is an error.
fn sort_probes(script: &CompiledScript) -> Result<Probes, Vec<Diagnostic>> {
    let mut begin = Vec::new();
    let mut end = Vec::new();
    let mut timers = Vec::new();
    let mut sources: Vec<Source> = Vec::new();
    let mut replay: Vec<Vec<usize>> = Vec::new();
    for (i, p) in script.programs.iter().enumerate() {
        for t in &p.attach {
            match &t.spec {
                AttachSpec::Begin => begin.push(i),
                AttachSpec::End => end.push(i),
                AttachSpec::PerfEvent { sample, .. } => timers.push(Timer {
                    prog: i,
                    period_ns: match sample {
                        PerfSample::Period(ns) => (*ns).max(1),
                        PerfSample::Frequency(hz) => 1_000_000_000 / (*hz).max(1),
                    },
                    next_ns: 0,
                }),
                AttachSpec::Input { path } => match sources.iter_mut().find(|s| s.path == *path) {
                    Some(s) => s.progs.push(i),
                    None => sources.push(Source {
                        path: path.clone(),
                        span: t.span,
                        progs: vec![i],
                    }),
                },
                AttachSpec::Replay { event } => {
                    let e = *event as usize;
                    if replay.len() <= e {
                        replay.resize(e + 1, Vec::new());
                    }
                    replay[e].push(i);
                }
                other => {
                    return Err(vec![Diagnostic::error(
                        "sonde::engine::kernel_probe",
                        t.span,
                        format!(
                            "the userspace engine cannot attach `{}` ({} probes run in the kernel)",
                            t.name,
                            other.section()
                        ),
                    )]);
                }
            }
        }
    }
    Ok(Probes {
        begin,
        end,
        timers,
        sources,
        replay,
    })
}

/// The sources with the one that reads standard input (a plain `input` probe) replaced by
/// one per file of `files`, in order, with the same probes (`-` stays standard input).
fn with_input_files(sources: Vec<Source>, files: &[String]) -> Vec<Source> {
    if files.is_empty() {
        return sources;
    }
    let mut out = Vec::with_capacity(sources.len() + files.len());
    for s in sources {
        if s.path.is_some() {
            out.push(s);
            continue;
        }
        out.extend(files.iter().map(|f| Source {
            path: (f != "-").then(|| f.clone()),
            span: s.span,
            progs: s.progs.clone(),
        }));
    }
    out
}

/// Opens every input source (standard input or a file), in order, with its descriptor.
fn open_inputs(sources: &[Source]) -> Result<Vec<Input>, Vec<Diagnostic>> {
    let mut readers: Vec<Input> = Vec::new();
    for s in sources {
        let reader: (Box<dyn std::io::Read>, _) = match &s.path {
            None => {
                let stdin = std::io::stdin();
                let fd = stdin.as_raw_fd();
                (Box::new(stdin), fd)
            }
            Some(p) => match std::fs::File::open(p) {
                Ok(f) => {
                    let fd = f.as_raw_fd();
                    (Box::new(f), fd)
                }
                Err(e) => {
                    return Err(vec![
                        Diagnostic::error(
                            "sonde::engine::input",
                            s.span,
                            format!("cannot read input file {p}: {e}"),
                        )
                        .with_label("this probe reads it")
                        .with_help(
                            "`input:PATH` reads the file PATH; `input` reads the script's file \
                             arguments, or standard input when there are none",
                        ),
                    ]);
                }
            },
        };
        readers.push(reader);
    }
    Ok(readers)
}

/// The host of `script`'s probes: its maps, the `input` record split by `field_sep`, and an
/// event queue as large as the script's ring buffer.
fn new_host(script: &CompiledScript, field_sep: &FieldSep) -> Host {
    let events_cap = script
        .maps
        .iter()
        .find(|m| m.kind == MapKind::RingBuf)
        .map_or(1 << 20, |m| m.max_entries as usize);
    Host::new(
        HostMaps::new(&script.maps),
        Record::new(field_sep.clone()),
        events_cap,
    )
}

/// The output of `script`'s events, printed as `output` says, with the script's string
/// truncation trailer and the post-processing script `post`, if any.
fn new_output<'a>(
    checked: &Checked,
    script: &'a CompiledScript,
    resolver: impl Resolver + Clone + 'static,
    output: OutputOptions,
    post: Option<Post>,
) -> Result<Output<'a>, Vec<Diagnostic>> {
    let oopts = OutputOptions {
        str_trunc_trailer: Some(checked.config.str_trunc_trailer.clone()),
        ..output
    };
    let mut out = Output::new(script, &oopts, resolver).map_err(|d| vec![d])?;
    if let Some(post) = post {
        out.set_post(post).map_err(|d| vec![d])?;
    }
    Ok(out)
}

/// A running userspace script.
struct Engine<'a> {
    jit: JitProgram,
    host: Host,
    out: Output<'a>,
    /// The maps of the workers that ran `input` probes in parallel (their per-CPU slots).
    workers: Vec<HostMaps>,
    /// What the run serves while it runs (`--metrics`).
    served: Option<Box<dyn sonde_session::scrape::Served>>,
    /// Probes attached.
    attached: usize,
}

impl Engine<'_> {
    /// True once the script exited, the output closed or Ctrl-C arrived.
    fn stopped(&mut self) -> bool {
        if stop_requested() && self.out.stop.is_none() {
            self.out.stop = Some(Stop::Interrupted);
        }
        self.out.stop.is_some()
    }

    /// Announces the attached probes (unless `quiet`), then runs the `BEGIN` probes.
    fn begin(&mut self, script: &CompiledScript, begin: &[usize], quiet: bool) {
        // Announced before BEGIN runs, so that its output follows the announcement, as with
        // kernel probes (and bpftrace's `attached_probes` message).
        let attached = script
            .programs
            .iter()
            .map(|p| p.attach.len())
            .sum::<usize>();
        self.attached = attached;
        if !quiet {
            eprintln!(
                "Attached {attached} probe{}",
                if attached == 1 { "" } else { "s" }
            );
            self.out.attached(attached);
        }
        for &p in begin {
            self.fire(p, std::ptr::null_mut());
        }
        self.out.flush();
    }

    /// Runs program `prog` once, then handles the events it queued.
    fn fire(&mut self, prog: usize, ctx: *mut u8) {
        let f = self.jit.entry(prog);
        // SAFETY: the program was compiled for this host's maps and intrinsics; `ctx` is null
        // or the record its provider's context layout describes.
        self.host.enter(|| unsafe { f(ctx) });
        self.host.maps.release();
        if !self.host.events.is_empty() {
            self.drain_events();
        }
    }

    /// Handles queued event records in order.
    fn drain_events(&mut self) {
        let buf = std::mem::take(&mut self.host.events);
        let script = self.out.script();
        let src = HostMapSource::new(&self.host.maps, &self.workers, &script.maps);
        let mut i = 0;
        while i + 4 <= buf.len() {
            let n = u32::from_le_bytes(buf[i..i + 4].try_into().expect("4 bytes")) as usize;
            let end = (i + 4 + n).min(buf.len());
            self.out.handle(&buf[i + 4..end], &src);
            i = end;
        }
        // Errors counted so far are reported with the output they go with, as in the kernel
        // engine's loop.
        let counts = sonde_present::output::counters(script, &src);
        self.out.report_counts(counts);
        let mut buf = buf;
        buf.clear();
        self.host.events = buf;
    }

    /// Serves the maps as they are now (`--metrics`; `last`: the run ends).
    fn serve(&mut self, last: bool) {
        let Some(served) = self.served.as_mut() else {
            return;
        };
        let script = self.out.script();
        let src = HostMapSource::new(&self.host.maps, &self.workers, &script.maps);
        let counts = sonde_present::output::counters(script, &src);
        let stats = sonde_export::metrics::RunStats {
            probes: self.attached as u64,
            lost_events: counts.lost_events,
            map_full: counts.map_full,
            ..Default::default()
        };
        served.serve(&mut self.out, &src, stats, last);
    }

    /// Runs every timer due at `now_ns`.
    fn run_timers(&mut self, timers: &mut [Timer], now_ns: u64) {
        for t in timers.iter_mut() {
            while t.next_ns <= now_ns && !self.stopped() {
                t.next_ns += t.period_ns;
                self.fire(t.prog, std::ptr::null_mut());
                self.out.flush();
            }
        }
    }

    /// Fires `progs` for every line of `reader`, and the timers when they are due.
    fn read(
        &mut self,
        reader: &mut LineReader,
        progs: &[usize],
        timers: &mut [Timer],
    ) -> Result<(), Vec<Diagnostic>> {
        let mut n = 0u32;
        loop {
            match reader.next_line() {
                Next::Line(l) => {
                    self.host.record.set(l);
                    for &p in progs {
                        self.fire(p, std::ptr::null_mut());
                        // `exit()` (or a closed output) stops at once, as awk's `exit`: no
                        // later probe sees this line, no later line is read.
                        if self.out.stop.is_some() {
                            return Ok(());
                        }
                    }
                    if self.out.stop.is_some() {
                        // exit() or a closed output: no further line reaches the probes.
                        return Ok(());
                    }
                    n = n.wrapping_add(1);
                    // Every 1024 lines: Ctrl-C, timers that came due, scrapes.
                    if n.is_multiple_of(1024) {
                        if self.stopped() {
                            return Ok(());
                        }
                        self.serve(false);
                        if !timers.is_empty() {
                            self.run_timers(timers, sonde_system::clock::boot_ns());
                            if self.out.stop.is_some() {
                                return Ok(());
                            }
                        }
                    }
                }
                Next::NeedInput => {
                    if self.stopped() {
                        return Ok(());
                    }
                    self.out.flush();
                    self.serve(false);
                    // Wait for input, waking for timers, Ctrl-C and (every 100 ms) scrapes.
                    let serving = self.served.is_some();
                    let wait_ms = timers
                        .iter()
                        .map(|t| {
                            t.next_ns.saturating_sub(sonde_system::clock::boot_ns()) / 1_000_000
                        })
                        .min()
                        .map_or(-1, |ms| ms.min(i32::MAX as u64) as i32);
                    let wait_ms = match (serving, wait_ms) {
                        (true, -1) => 100,
                        (true, ms) => ms.min(100),
                        (false, ms) => ms,
                    };
                    let mut pfd = libc::pollfd {
                        fd: reader.fd(),
                        events: libc::POLLIN,
                        revents: 0,
                    };
                    // SAFETY: one valid pollfd.
                    let ready = unsafe { libc::poll(&mut pfd, 1, wait_ms) };
                    if ready > 0
                        && let Err(e) = reader.fill()
                    {
                        if stop_requested() {
                            return Ok(());
                        }
                        return Err(vec![Diagnostic::error(
                            "sonde::engine::input",
                            Span::default(),
                            format!("cannot read input: {e}"),
                        )]);
                    }
                    self.run_timers(timers, sonde_system::clock::boot_ns());
                    if self.out.stop.is_some() {
                        return Ok(());
                    }
                }
                Next::Eof => return Ok(()),
            }
        }
    }

    /// Fires the `replay` probes for each recorded event, running timers on recorded time.
    fn replay(&mut self, events: &[ReplayEvent], progs: &[Vec<usize>], timers: &mut [Timer]) {
        if let Some(first) = events.first() {
            for t in timers.iter_mut() {
                t.next_ns = first.ts_ns + t.period_ns;
            }
        }
        for ev in events {
            if self.stopped() {
                return;
            }
            self.host.clock = Some(ev.ts_ns);
            self.run_timers(timers, ev.ts_ns);
            let Some(ps) = progs.get(ev.event as usize).filter(|p| !p.is_empty()) else {
                continue;
            };
            self.host.record.set(&ev.text);
            let mut payload = ev.payload.clone();
            for &p in ps {
                self.fire(p, payload.as_mut_ptr());
                if self.out.stop.is_some() {
                    return;
                }
            }
        }
    }

    /// Fires each source's `input` probes for its every line, source after source: on
    /// `threads` threads when its probes only aggregate and no timer runs.
    fn read_sources(
        &mut self,
        compiled: &Compiled,
        sources: &[Source],
        readers: Vec<Input>,
        timers: &mut [Timer],
        field_sep: &FieldSep,
        threads: usize,
    ) -> Result<(), Vec<Diagnostic>> {
        let threads = threads.max(1);
        for (s, (file, fd)) in sources.iter().zip(readers) {
            if self.stopped() {
                break;
            }
            if threads > 1 && timers.is_empty() && parallel::eligible(compiled, &s.progs) {
                self.read_parallel(compiled, s, file, field_sep, threads)?;
            } else {
                let mut reader = LineReader::new(file, fd);
                self.read(&mut reader, &s.progs, timers)?;
            }
        }
        Ok(())
    }

    /// Fires source `s`'s probes, which only aggregate, for every line of `file` on `threads`
    /// threads; their maps join the workers'.
    fn read_parallel(
        &mut self,
        compiled: &Compiled,
        s: &Source,
        file: Box<dyn std::io::Read>,
        field_sep: &FieldSep,
        threads: usize,
    ) -> Result<(), Vec<Diagnostic>> {
        let entries: Vec<_> = s.progs.iter().map(|&p| self.jit.entry(p)).collect();
        let mut file = file;
        let (done, r) = parallel::run(
            &mut *file,
            &entries,
            &compiled.script.maps,
            field_sep,
            threads,
            &stop_requested,
        );
        self.workers.extend(done.maps);
        self.host.record.nr += done.lines;
        if !done.warnings.is_empty() {
            self.host.events.extend(done.warnings);
            self.drain_events();
        }
        r.map_err(|err| {
            vec![Diagnostic::error(
                "sonde::engine::input",
                s.span,
                format!("cannot read input: {err}"),
            )]
        })
    }

    /// Runs the timers until the script stops (a script with neither input nor replay).
    fn tick(&mut self, timers: &mut [Timer]) {
        while !self.stopped() {
            let next = timers.iter().map(|t| t.next_ns).min().unwrap_or(u64::MAX);
            let now = sonde_system::clock::boot_ns();
            if next > now {
                nap(Duration::from_nanos((next - now).min(100_000_000)));
            }
            self.run_timers(timers, sonde_system::clock::boot_ns());
            self.serve(false);
        }
    }

    /// Runs the `END` probes, prints the maps and the error counts, and returns the exit code.
    fn finish(
        mut self,
        checked: &Checked,
        script: &CompiledScript,
        end: &[usize],
    ) -> Result<u8, Vec<Diagnostic>> {
        self.out.discard = false;
        self.host.clock = None;
        for &p in end {
            self.fire(p, std::ptr::null_mut());
        }
        self.serve(true);
        let src = HostMapSource::new(&self.host.maps, &self.workers, &script.maps);
        let dumps = self.out.exit_maps(&src);
        self.out.end(&dumps, checked.config.print_maps_on_exit);
        let counts = sonde_present::output::counters(script, &src);
        self.out.finish(counts).map_err(|d| vec![d])?;
        Ok(self.out.exit_code())
    }
}
