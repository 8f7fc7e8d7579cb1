//! A live tracing session (`sonde repl`): a script that grows entry by entry while it runs.
//!
//! Each entry is compiled as part of the whole script entered so far (so map types, event
//! numbers and definitions agree across entries), and only the new entry's probes are
//! loaded and attached ([`sonde_kernel::load::load_part`]). The maps every entry shares — user
//! maps, the event ring buffer, stack maps — are pinned under names that follow their role
//! ([`sonde_kernel::load::pin_name`]) in a bpffs of the session's own that is mounted nowhere
//! ([`PrivateBpffs`]): the load finds and reuses them, so a probe entered later sees and
//! updates the same `@maps`. No other process can see or plant anything there, and the
//! filesystem dies with the process (even one killed by `SIGKILL`), so nothing outlives the
//! session. Each load has its own error counters (their data section grows with the
//! script); the session sums them. Detaching an entry drops its programs and links (its
//! counts are kept); the maps stay until the session ends.
//!
//! Printing goes through the same [`Output`] as a script run, rebuilt for each new version
//! of the script. Event numbers only grow: entries are appended to the script, never
//! removed from it (a detached entry keeps its text), so an event a probe entered earlier
//! sends decodes with the newest script (checked on each entry).

#![allow(clippy::result_large_err)] // Diagnostic is the project-wide error type.

use std::collections::HashMap;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::Duration;

use sonde_compiler::program::{CompiledScript, EventSpec, MapRole, MapSpec};
use sonde_lang::diag::Diagnostic;
use sonde_lang::sema::MissingProbes;
use sonde_lang::span::Span;

use crate::detach_status::DetachStatus;
use crate::kernel_maps::Source;
use crate::resolver::RuntimeResolver;
use sonde_kernel::attach::{AttachOptions, attach_all};
use sonde_kernel::bpffs::PrivateBpffs;
use sonde_kernel::detach::detach_probes;
use sonde_kernel::events::EventReader;
use sonde_kernel::load::{LoadScope, Loaded, load_part, pin_name};
use sonde_kernel::maps::RawMap;
use sonde_kernel::trigger::{self, Trigger};
use sonde_present::output::{Counts, MapSource};
use sonde_present::output::{PrintOpts, Printer, TextPrinter};
use sonde_session::{Output, OutputOptions, Stop};
use sonde_system::symbols::Symbolizer;

/// Makes the writers a session's output goes to (one per version of the script).
pub type WriterFactory = Box<dyn Fn() -> Box<dyn Write>>;

/// One entry's loaded probes.
struct Part {
    id: usize,
    loaded: Loaded,
    probes: Vec<String>,
}

/// A probe entry of the session, as `:list` shows it.
#[derive(Clone, Debug)]
pub struct PartInfo {
    /// The entry's id.
    pub id: usize,
    /// Its attach points.
    pub probes: Vec<String>,
}

/// The kernel state of a live session: the loaded entries, the pinned shared maps, the
/// event reader and the output. Lives on one thread (its output is not `Send`).
pub struct Live {
    /// Where the shared maps are pinned.
    pins: PrivateBpffs,
    /// The shared maps, by pin name.
    held: HashMap<String, OwnedFd>,
    parts: Vec<Part>,
    script: Option<&'static CompiledScript>,
    out: Option<Output<'static>>,
    events: Option<EventReader>,
    symbols: Arc<Symbolizer>,
    opts: OutputOptions,
    writer: WriterFactory,
    print_maps_on_exit: bool,
    ended: bool,
    /// Error counts of the entries detached (each load counts in a counters map of its own).
    carried: Counts,
}

/// The shared maps of a session, as a [`MapSource`].
struct Pinned<'a>(&'a HashMap<String, OwnedFd>);

impl sonde_kernel::maps::RawMaps for Pinned<'_> {
    fn raw(&self, spec: &MapSpec) -> Option<RawMap> {
        let fd = self.0.get(&pin_name(&spec.role)?)?.try_clone().ok()?;
        RawMap::from_spec(fd, spec).ok()
    }
}

fn error(code: &'static str, msg: impl Into<String>) -> Diagnostic {
    Diagnostic::error(code, Span::default(), msg)
}

impl Live {
    /// A new session printing as `opts` say to writers from `writer`, with a private bpffs
    /// for its shared maps.
    pub fn new(opts: OutputOptions, writer: WriterFactory) -> Result<Live, Diagnostic> {
        let pins = PrivateBpffs::new().map_err(|e| {
            error(
                "sonde::repl::bpffs",
                format!("cannot create the session's private bpffs: {e}"),
            )
            .with_help("a live session shares its maps through a bpffs of its own, which takes CAP_SYS_ADMIN (run it as root) and Linux 5.2 or later")
        })?;
        Ok(Live {
            pins,
            held: HashMap::new(),
            parts: Vec::new(),
            script: None,
            out: None,
            events: None,
            symbols: Arc::new(Symbolizer::new()),
            opts,
            writer,
            print_maps_on_exit: true,
            ended: false,
            carried: Counts::default(),
        })
    }

    /// Loads part of `script`, reusing the shared maps pinned in the session's bpffs (and
    /// holding those it creates from then on).
    fn load(&mut self, script: &CompiledScript, probes: Vec<usize>) -> Result<Loaded, Diagnostic> {
        let scope = LoadScope {
            probes: Some(probes),
            pins: Some(&self.pins),
        };
        let loaded = load_part(script, &scope).map_err(|e| e.diagnostic)?;
        for m in &script.maps {
            if let Some(name) = pin_name(&m.role)
                && !self.held.contains_key(&name)
                && let Ok(fd) = loaded.map_descriptor(&m.symbol)
            {
                self.held.insert(name, fd);
            }
        }
        Ok(loaded)
    }

    /// The script as compiled for the latest entry.
    pub fn script(&self) -> Option<&CompiledScript> {
        self.script
    }

    /// Refuses a new version of the script that the maps already created cannot serve: a
    /// shared map whose kind, key or value size or number of entries changed, or events
    /// numbered differently (their places in the script may move).
    pub fn compatible(&self, new: &CompiledScript) -> Result<(), Diagnostic> {
        let Some(old) = self.script else {
            return Ok(());
        };
        for m in &new.maps {
            let Some(pin) = pin_name(&m.role) else {
                continue;
            };
            let Some(before) = old
                .maps
                .iter()
                .find(|o| pin_name(&o.role).as_ref() == Some(&pin))
            else {
                continue;
            };
            // The layout is what the map created already fixes; types of the same layout
            // (a signedness, a stack's frame limit) print as the newest script says.
            let same = before.kind == m.kind
                && before.key_size == m.key_size
                && before.value_size == m.value_size
                && before.max_entries == m.max_entries;
            if !same {
                let what = match (&before.role, &m.role) {
                    (
                        MapRole::User {
                            name, key, value, ..
                        },
                        MapRole::User {
                            key: k2, value: v2, ..
                        },
                    ) if describe(key, value) != describe(k2, v2) => format!(
                        "@{name} would change from {} to {} in this session",
                        describe(key, value),
                        describe(k2, v2)
                    ),
                    (MapRole::User { name, .. }, _) => format!(
                        "@{name} would change its layout in this session (from {} entries of {} bytes to {} of {})",
                        before.max_entries, before.value_size, m.max_entries, m.value_size
                    ),
                    _ => format!("the session's {pin} map would change its layout"),
                };
                return Err(error("sonde::repl::map_changed", what).with_help(
                    "maps keep their types while the session runs: use another map name, or start a new session",
                ));
            }
        }
        // Earlier entries' events keep their numbers; their places move when definitions
        // join the session (they come first in its text).
        let unplaced =
            |events: &[EventSpec]| events.iter().map(EventSpec::unplaced).collect::<Vec<_>>();
        let kept = new.events.get(..old.events.len()).map(unplaced);
        if kept != Some(unplaced(&old.events)) {
            return Err(error(
                "sonde::repl::internal",
                "this entry renumbers the events of earlier entries",
            )
            .with_help("this is a sonde bug; please report it with the session (:script)"));
        }
        Ok(())
    }

    /// User stack frames get their source lines and inlined functions from DWARF from now on
    /// when `on` (the entry's `show_debug_info`).
    pub fn set_debug_info(&self, on: bool) {
        self.symbols.set_debug_info(on);
    }

    /// Adopts `script` as the session's script (an entry of definitions only: nothing is
    /// loaded); cut strings print with `trailer` from now on (its `str_trunc_trailer`).
    pub fn adopt(&mut self, script: CompiledScript, trailer: &[u8]) -> Result<(), Diagnostic> {
        self.compatible(&script)?;
        self.opts.str_trunc_trailer = Some(trailer.to_vec());
        self.switch(script);
        Ok(())
    }

    /// Loads and attaches the probes `probes` (indices in the source) of `script`, the
    /// whole script with the new entry `id` last; runs the entry's BEGIN probes. Returns the
    /// number of probes attached. On an error nothing of the entry stays loaded. From then
    /// on, cut strings print with `trailer` (the script's `str_trunc_trailer`).
    pub fn add(
        &mut self,
        id: usize,
        script: CompiledScript,
        probes: Vec<usize>,
        missing: MissingProbes,
        print_maps_on_exit: bool,
        trailer: &[u8],
    ) -> Result<usize, Diagnostic> {
        self.compatible(&script)?;
        if let Some(p) = sonde_kernel::iter::iterator_program(&script)
            .filter(|p| probes.contains(&p.probe_index))
        {
            return Err(Diagnostic::error(
                "sonde::repl::iter",
                p.span,
                "iterator probes do not run in a live session",
            )
            .with_label("iterator probe")
            .with_help(
                "an iterator runs once, after BEGIN, and ends the script: run it with `sonde -e`",
            ));
        }
        let names: Vec<String> = script
            .programs
            .iter()
            .filter(|p| probes.contains(&p.probe_index))
            .flat_map(|p| p.attach.iter().map(|a| a.name.clone()))
            .collect();
        let mut loaded = self.load(&script, probes)?;
        if self.events.is_none()
            && let Some(events) = script
                .maps
                .iter()
                .find(|m| m.role == MapRole::Events)
                .map(|m| m.symbol.clone())
        {
            match loaded.take_events(&events) {
                Ok(r) => self.events = Some(r),
                Err(e) => {
                    return Err(error(
                        "sonde::runtime::internal",
                        format!("cannot open the event ring buffer: {e}"),
                    ));
                }
            }
        }
        let attached = attach_all(
            &mut loaded,
            &AttachOptions {
                pid: None,
                missing,
                watch_pid: None,
                skip_uprobes: false,
            },
        )?;
        self.print_maps_on_exit = print_maps_on_exit;
        self.opts.str_trunc_trailer = Some(trailer.to_vec());
        self.switch(script);
        let begin = trigger::run(&loaded, Trigger::Begin);
        self.parts.push(Part {
            id,
            loaded,
            probes: names,
        });
        self.drain();
        begin?;
        Ok(attached)
    }

    /// Prints with `script` from now on.
    fn switch(&mut self, script: CompiledScript) {
        self.drain();
        let script: &'static CompiledScript = Box::leak(Box::new(CompiledScript {
            // The object code is loaded already; the specs are what printing needs.
            elf: Vec::new(),
            ..script
        }));
        self.script = Some(script);
        self.rebuild_output(script);
    }

    /// A new output for `script` and the current options, carrying on from the old one.
    fn rebuild_output(&mut self, script: &'static CompiledScript) {
        let resolver = self.resolver(script);
        let mut out = Output::with_writer(script, &self.opts, resolver, (self.writer)());
        if let Some(old) = self.out.take() {
            out.continue_from(old);
        }
        self.out = Some(out);
    }

    fn resolver(&self, script: &CompiledScript) -> RuntimeResolver {
        RuntimeResolver::for_maps(script, &Pinned(&self.held), self.symbols.clone())
    }

    /// Changes the output format (text or JSON) from now on.
    pub fn set_json(&mut self, json: bool) {
        self.opts.json = json;
        if let Some(script) = self.script {
            self.drain();
            self.rebuild_output(script);
        }
    }

    /// The entries whose probes are attached, in the order entered.
    pub fn parts(&self) -> Vec<PartInfo> {
        self.parts
            .iter()
            .map(|p| PartInfo {
                id: p.id,
                probes: p.probes.clone(),
            })
            .collect()
    }

    /// Detaches entry `id`'s probes and unloads its programs; false when no such entry is
    /// attached.
    pub fn detach(&mut self, id: usize) -> bool {
        let Some(i) = self.parts.iter().position(|p| p.id == id) else {
            return false;
        };
        let mut part = self.parts.remove(i);
        let status = DetachStatus::start(part.loaded.link_count(), false);
        detach_probes(&mut part.loaded);
        drop(status);
        self.drain();
        self.carried = add_counts(self.carried, part_counts(&part.loaded));
        true
    }

    /// Handles the events that arrive within `timeout`, and reports new error counts.
    pub fn poll(&mut self, timeout: Duration) {
        let (Some(out), Some(reader)) = (self.out.as_mut(), self.events.as_mut()) else {
            std::thread::sleep(timeout);
            return;
        };
        let maps = Source(Pinned(&self.held));
        let _ = reader.poll(timeout, &mut |r: &[u8]| out.handle(r, &maps));
        out.flush();
        self.report_counts();
    }

    /// Handles every pending event.
    fn drain(&mut self) {
        let (Some(out), Some(reader)) = (self.out.as_mut(), self.events.as_mut()) else {
            return;
        };
        let maps = Source(Pinned(&self.held));
        reader.drain(&mut |r: &[u8]| out.handle(r, &maps));
        out.flush();
    }

    /// The error counts of every entry loaded, attached or detached.
    fn counts(&self) -> Counts {
        self.parts
            .iter()
            .map(|p| part_counts(&p.loaded))
            .fold(self.carried, add_counts)
    }

    fn report_counts(&mut self) {
        let counts = self.counts();
        if let Some(out) = self.out.as_mut() {
            out.report_counts(counts);
            out.flush();
        }
    }

    /// Why the session should end: a probe called `exit()`, or the output failed.
    pub fn stop(&self) -> Option<Stop> {
        self.out.as_ref().and_then(|o| o.stop)
    }

    /// The user maps: name (with `@`) and type, in name order.
    pub fn maps(&self) -> Vec<(String, String)> {
        let mut maps: Vec<(String, String)> = self
            .script
            .map(|s| s.maps.as_slice())
            .unwrap_or_default()
            .iter()
            .filter_map(|m| match &m.role {
                MapRole::User { name, key, value } => {
                    Some((format!("@{name}"), describe(key, value)))
                }
                _ => None,
            })
            .collect();
        maps.sort();
        maps
    }

    fn user_map(&self, name: &str) -> Result<&'static MapSpec, String> {
        let bare = name.strip_prefix('@').unwrap_or(name);
        self.script
            .and_then(|s| {
                s.maps
                    .iter()
                    .find(|m| matches!(&m.role, MapRole::User { name: n, .. } if n == bare))
            })
            .ok_or_else(|| format!("no map @{bare} in this session (:maps lists them)"))
    }

    /// Prints map `name` (`@x`) as `print(@x, top)` would.
    pub fn print_map(&mut self, name: &str, top: u64) -> Result<(), String> {
        let spec = self.user_map(name)?;
        self.drain();
        let entries = Source(Pinned(&self.held)).entries(spec).unwrap_or_default();
        let Some(out) = self.out.as_mut() else {
            return Ok(());
        };
        let MapRole::User { name: bare, .. } = &spec.role else {
            return Ok(());
        };
        if let Some(dump) = out.dump(bare, entries) {
            out.print_dump(dump, PrintOpts { top, div: 1 });
        }
        out.flush();
        Ok(())
    }

    /// Map `name` as text, as `print(@x, top)` prints it (for a view redrawn in place).
    pub fn render_map(&self, name: &str, top: u64) -> Result<String, String> {
        let spec = self.user_map(name)?;
        let (Some(out), Some(script)) = (self.out.as_ref(), self.script) else {
            return Ok(String::new());
        };
        let MapRole::User { name: bare, .. } = &spec.role else {
            return Ok(String::new());
        };
        let entries = Source(Pinned(&self.held)).entries(spec).unwrap_or_default();
        let Some(dump) = out.dump(bare, entries) else {
            return Ok(String::new());
        };
        let mut printer = TextPrinter::new(Vec::new(), self.resolver(script));
        printer
            .map(&dump, PrintOpts { top, div: 1 })
            .map_err(|e| e.to_string())?;
        Ok(String::from_utf8_lossy(&printer.into_inner()).into_owned())
    }

    /// Removes every entry of map `name` (`clear(@x)`).
    pub fn clear_map(&mut self, name: &str) -> Result<(), String> {
        let spec = self.user_map(name)?;
        Source(Pinned(&self.held)).clear(spec);
        Ok(())
    }

    /// Ends the session: detaches every probe, runs the END probes of the entries still
    /// attached, prints the maps (unless `print_maps_on_exit` is off) and the error counts,
    /// and lets go of the shared maps. Errors: a failed END or output.
    pub fn finish(&mut self) -> Result<(), Diagnostic> {
        if self.ended {
            return Ok(());
        }
        self.ended = true;
        let links = self.parts.iter().map(|p| p.loaded.link_count()).sum();
        let status = DetachStatus::start(links, false);
        for p in &mut self.parts {
            detach_probes(&mut p.loaded);
        }
        drop(status);
        self.drain();
        if let Some(out) = self.out.as_mut() {
            out.discard = false;
            out.in_end = true;
        }
        let mut result = Ok(());
        for p in &self.parts {
            if let Err(d) = trigger::run(&p.loaded, Trigger::End) {
                result = Err(d);
            }
        }
        self.drain();
        let counts = self.counts();
        let print = self.print_maps_on_exit;
        if let Some(out) = self.out.as_mut() {
            let dumps = out.exit_maps(&Source(Pinned(&self.held)));
            out.end(&dumps, print);
            if let Err(d) = out.finish(counts) {
                result = result.and(Err(d));
            }
        }
        self.parts.clear();
        self.events = None;
        self.held.clear();
        result
    }
}

/// The maps of one loaded entry.
struct PartMaps<'a>(&'a Loaded);

impl sonde_kernel::maps::RawMaps for PartMaps<'_> {
    fn raw(&self, spec: &MapSpec) -> Option<RawMap> {
        self.0.raw_map(&spec.symbol).ok()
    }
}

/// The error counts in an entry's own counters map.
fn part_counts(loaded: &Loaded) -> Counts {
    let Some(spec) = loaded.maps().iter().find(|m| m.role == MapRole::Counters) else {
        return Counts::default();
    };
    let [lost_events, map_full, loops_cut, stacks_dropped] =
        Source(PartMaps(loaded)).counters(spec);
    Counts {
        lost_events,
        map_full,
        loops_cut,
        stacks_dropped,
        probes_skipped: loaded.recursion_misses(),
        ..Counts::default()
    }
}

/// `a` and `b`'s counts added.
fn add_counts(a: Counts, b: Counts) -> Counts {
    Counts {
        lost_events: a.lost_events.saturating_add(b.lost_events),
        map_full: a.map_full.saturating_add(b.map_full),
        loops_cut: a.loops_cut.saturating_add(b.loops_cut),
        stacks_dropped: a.stacks_dropped.saturating_add(b.stacks_dropped),
        maps_lost: a.maps_lost.saturating_add(b.maps_lost),
        maps_evicted: a.maps_evicted.saturating_add(b.maps_evicted),
        probes_skipped: a.probes_skipped.saturating_add(b.probes_skipped),
    }
}

/// `@m`'s type as `:maps` shows it: `int64`, `count_t`, `[string] hist_t`.
fn describe(key: &Option<sonde_lang::types::Type>, value: &sonde_lang::types::Type) -> String {
    match key {
        Some(k) => format!("[{k}] {value}"),
        None => value.to_string(),
    }
}
