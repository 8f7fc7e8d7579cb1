//! `sonde replay FILE [SCRIPT]`: prints a recorded run again, byte for byte, or feeds its
//! printf events to a userspace script's `replay` probes.

use crate::record::{Entry, Header, RecordError, Recording, ReplayResolver};
use sonde_compiler::program::{CompiledScript, EventSpec};
use sonde_engine::ReplayEvent;
use sonde_lang::diag::Diagnostic;
use sonde_lang::kernel::{KernelInfo, RecordKind, RecordedEvent, TracepointField, UsdtProbe};
use sonde_lang::types::{Record, tuple_layout};
use sonde_session::{EventFormats, Output, OutputOptions};
use std::sync::Arc;

/// The script a recording was made from, as far as printing needs it.
fn recorded_script(header: &Header) -> CompiledScript {
    CompiledScript {
        elf: Vec::new(),
        programs: Vec::new(),
        maps: header.maps.clone(),
        events: header.events.clone(),
        enums: Default::default(),
    }
}

/// Prints the recorded run again: the same bytes the live run printed, in the format `opts`
/// asks for, through the post-processing script `post` if one is given. The entries come
/// one at a time (a recording of any size replays in bounded memory); the names they print
/// are learnt as they come, as the recorder wrote them. Returns the recorded exit code.
pub fn replay_print(
    header: &Header,
    entries: &mut dyn Iterator<Item = Result<Entry, RecordError>>,
    opts: &OutputOptions,
    quiet: bool,
    post: Option<sonde_present::report::Post>,
) -> Result<u8, Diagnostic> {
    let script = recorded_script(header);
    let resolver = ReplayResolver::new();
    let opts = OutputOptions {
        str_trunc_trailer: Some(header.str_trunc_trailer.clone()),
        ..opts.clone()
    };
    let mut out = Output::new(&script, &opts, resolver.clone())?;
    if let Some(post) = post {
        out.set_post(post)?;
    }
    let mut code = 0;
    let mut counts = sonde_present::output::Counts::default();
    for e in entries {
        let e = e.map_err(|e| {
            Diagnostic::error(
                "sonde::replay::read",
                sonde_lang::span::Span::default(),
                format!("the recording went wrong while it was replayed: {e}"),
            )
        })?;
        if resolver.learn(&e) {
            continue;
        }
        let e = &e;
        match e {
            Entry::Attached { probes } if !quiet => {
                eprintln!(
                    "Attached {probes} probe{}",
                    if *probes == 1 { "" } else { "s" }
                );
                out.attached(*probes as usize);
            }
            Entry::Event { record, .. } if record.len() >= 8 => {
                let id = u64::from_le_bytes(record[..8].try_into().expect("8 bytes")) as usize;
                let r = out.print_event(id, &record[8..]);
                out.wrote(r);
            }
            Entry::Text { event, text, .. } => {
                let r = out.replay_text(*event as usize, text);
                out.wrote(r);
            }
            Entry::MapPrint { event, entries, .. } => {
                out.replay_map_print(*event as usize, entries.clone());
            }
            Entry::ExitMaps { maps } => {
                let dumps = out.decode_maps(maps.clone());
                out.end(&dumps, header.print_maps_on_exit);
            }
            Entry::Counters {
                lost_events,
                map_full,
                loops_cut,
            } => {
                counts = sonde_present::output::Counts {
                    lost_events: *lost_events,
                    map_full: *map_full,
                    loops_cut: *loops_cut,
                    ..Default::default()
                }
            }
            Entry::End { exit_code } => code = *exit_code,
            _ => {}
        }
    }
    out.finish(counts)?;
    Ok(if out.post_has_failed() {
        code.max(1)
    } else {
        code
    })
}

/// The recorded printf events with their text, in order, for `replay` probes. Each payload is
/// padded to its event's full argument layout.
pub fn replay_events(rec: &Recording) -> Vec<ReplayEvent> {
    let formats = EventFormats::new(&rec.header.events, &rec.header.str_trunc_trailer);
    let resolver = ReplayResolver::from_recording(rec);
    let mut events = Vec::new();
    for e in &rec.entries {
        let Entry::Event { ts_ns, record } = e else {
            continue;
        };
        if record.len() < 8 {
            continue;
        }
        let id = u64::from_le_bytes(record[..8].try_into().expect("8 bytes")) as usize;
        let Some(EventSpec::Printf { args, .. }) = rec.header.events.get(id) else {
            continue;
        };
        let mut payload = record[8..].to_vec();
        let size = tuple_layout(args).1 as usize;
        if payload.len() < size {
            payload.resize(size, 0);
        }
        let mut text = formats.format(id, args, &payload, &resolver);
        if text.last() == Some(&b'\n') {
            text.pop();
        }
        events.push(ReplayEvent {
            ts_ns: *ts_ns,
            event: id as u32,
            payload,
            text,
        });
    }
    events
}

/// A [`KernelInfo`] that adds a recording's printf events (for `replay` probes) to another.
pub struct RecordingKernel<'a> {
    /// Where every other fact comes from.
    pub inner: &'a dyn KernelInfo,
    /// The recording's printf event kinds.
    pub events: Vec<RecordedEvent>,
}

impl<'a> RecordingKernel<'a> {
    /// The facts of `inner` plus the printf events of `rec`.
    pub fn new(inner: &'a dyn KernelInfo, rec: &Recording) -> Self {
        let events = rec
            .header
            .events
            .iter()
            .enumerate()
            .filter_map(|(i, e)| match e {
                EventSpec::Printf { format, args } => Some(RecordedEvent {
                    index: i as u32,
                    format: format.clone(),
                    args: args.clone(),
                }),
                _ => None,
            })
            .collect();
        RecordingKernel { inner, events }
    }
}

impl KernelInfo for RecordingKernel<'_> {
    fn tracepoints(&self) -> Vec<(String, String)> {
        self.inner.tracepoints()
    }
    fn tracepoint_format(&self, category: &str, name: &str) -> Option<Vec<TracepointField>> {
        self.inner.tracepoint_format(category, name)
    }
    fn btf_modules(&self) -> Vec<String> {
        self.inner.btf_modules()
    }
    fn raw_tracepoints(&self) -> Vec<String> {
        self.inner.raw_tracepoints()
    }
    fn kernel_functions(&self) -> Option<Vec<String>> {
        self.inner.kernel_functions()
    }
    fn record(&self, kind: RecordKind, name: &str) -> Option<Arc<Record>> {
        self.inner.record(kind, name)
    }
    fn enum_value(&self, name: &str) -> Option<(String, i64)> {
        self.inner.enum_value(name)
    }
    fn resolve_binary(&self, target: &str) -> Option<String> {
        self.inner.resolve_binary(target)
    }
    fn elf_functions(&self, path: &str) -> Result<Vec<String>, String> {
        self.inner.elf_functions(path)
    }
    fn elf_function_groups(&self, path: &str) -> Result<Vec<Vec<String>>, String> {
        self.inner.elf_function_groups(path)
    }
    fn elf_function_code(&self, path: &str, name: &str) -> Option<Vec<u8>> {
        self.inner.elf_function_code(path, name)
    }
    fn elf_function_at(&self, path: &str, offset: u64) -> Result<Option<(String, u64)>, String> {
        self.inner.elf_function_at(path, offset)
    }
    fn kernel_symbol_address(&self, name: &str) -> Option<u64> {
        self.inner.kernel_symbol_address(name)
    }

    fn cgroup_id(&self, path: &str) -> Option<u64> {
        self.inner.cgroup_id(path)
    }
    fn elf_symbol(&self, path: &str, name: &str) -> Option<sonde_lang::kernel::ElfSymbol> {
        self.inner.elf_symbol(path, name)
    }
    fn uprobe_address(&self, path: &str, symbol: Option<&str>, offset: u64) -> Option<u64> {
        self.inner.uprobe_address(path, symbol, offset)
    }
    fn usdt_probes(&self, path: &str) -> Result<Vec<UsdtProbe>, String> {
        self.inner.usdt_probes(path)
    }
    fn header_defines(
        &self,
        include: &str,
    ) -> Result<Vec<(String, String)>, sonde_lang::kernel::HeaderError> {
        self.inner.header_defines(include)
    }
    fn recorded_events(&self) -> Vec<RecordedEvent> {
        self.events.clone()
    }
    fn replaying(&self) -> bool {
        true
    }
}

/// The resolver of a userspace script run on a recording: names the recording holds first
/// (symbols and stacks of recorded values, resolved on the recording machine), then the live
/// resolver (the script's own values).
#[derive(Clone, Debug)]
pub struct ScriptResolver {
    /// The recording's answers (empty when not replaying).
    pub recorded: crate::record::ReplayResolver,
    /// Live answers.
    pub live: crate::resolver::RuntimeResolver,
}

impl sonde_present::output::Resolver for ScriptResolver {
    fn enum_variant(&self, tag: &str, value: i64) -> Option<String> {
        self.live.enum_variant(tag, value)
    }
    fn stack(
        &self,
        kernel: bool,
        raw: u64,
        limit: u32,
    ) -> Option<Vec<sonde_compiler::value::Frame>> {
        self.recorded
            .stack(kernel, raw, limit)
            .or_else(|| self.live.stack(kernel, raw, limit))
    }
    fn symbol(&self, kernel: bool, addr: u64) -> Option<String> {
        self.recorded
            .symbol(kernel, addr)
            .or_else(|| self.live.symbol(kernel, addr))
    }
    fn user_symbol(&self, pid: u32, addr: u64) -> Option<String> {
        self.recorded
            .user_symbol(pid, addr)
            .or_else(|| self.live.user_symbol(pid, addr))
    }
    fn username(&self, uid: u64) -> Option<String> {
        self.recorded
            .username(uid)
            .or_else(|| self.live.username(uid))
    }
    fn cgroup_path(&self, id: u64) -> Option<String> {
        self.recorded
            .cgroup_path(id)
            .or_else(|| self.live.cgroup_path(id))
    }
    fn timestamp(&self, tag: u64, nsecs: u64) -> Option<String> {
        self.live.timestamp(tag, nsecs)
    }
}
