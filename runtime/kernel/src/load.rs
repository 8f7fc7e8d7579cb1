//! Loads a compiled script into the kernel: creates its maps and loads (verifies) every
//! program, through aya 0.14's `EbpfLoader`.
//!
//! A verifier rejection becomes a `sonde::load::verifier` diagnostic on the source span of
//! the failing instruction (see [`crate::verifier`]); the raw log is kept in
//! [`LoadError::verifier_log`] for `-v`.
//!
//! Programs are loaded with the verifier log off. aya 0.14 retries a failed load with a
//! log ten times larger for as long as the kernel reports the log truncated (`ENOSPC`, up
//! to ~16 MB): a program rejected as too complex, whose log never fits, was verified about
//! eleven times (~30 s). With the log off it is verified once (aya's single retry, with a
//! buffer but log level 0, is refused by the kernel before verifying). Only on a rejection
//! is the log fetched, by loading that one program again (see [`verifier_log`]): first
//! with statistics only (a short log: the complaint and the instruction count, which aya
//! gets in one pass), then, when the verifier gave up early enough for its instruction log
//! to be small, with the full log that locates the failing instruction.
//!
//! No program of sonde needs CO-RE relocations, so the loader is told not to use kernel
//! BTF (`btf(None)`): aya then skips relocating against it. aya 0.14's `EbpfLoader::new()`
//! (its only constructor) nevertheless reads and parses all of `/sys/kernel/btf/vmlinux`
//! (~20 ms and ~15 MB of peak memory here) before `btf(None)` can throw the result away; see
//! [`loader_without_kernel_btf`] for how sonde avoids paying for that.

#![allow(clippy::result_large_err)] // Diagnostic is the project-wide error type.

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};

use aya::maps::Map;
use aya::programs::{Program, ProgramError};
use aya::{Ebpf, EbpfError, EbpfLoader, VerifierLogLevel};
use sonde_compiler::program::{AttachSpec, CompiledScript, MapRole, MapSpec, ProgramSpec};
use sonde_lang::diag::Diagnostic;
use sonde_lang::span::Span;

use crate::bpffs::PrivateBpffs;
use crate::errors::permission_denied;
use crate::events::EventReader;
use crate::link::LinkRecord;
use crate::maps::RawMap;
use crate::unavailable::fentry_unavailable;
use crate::verifier;

/// A loaded script: the aya object owning every map and program, plus attach state.
/// Dropping it detaches every probe and frees every map and program.
pub struct Loaded {
    pub(crate) ebpf: Ebpf,
    pub(crate) programs: Vec<ProgramSpec>,
    pub(crate) maps: Vec<MapSpec>,
    pub(crate) links: Vec<LinkRecord>,
    /// Programs loaded for uprobe-multi links ([`crate::uprobe_multi`]) instead of by aya,
    /// by symbol.
    pub(crate) multi: HashMap<String, OwnedFd>,
}

impl std::fmt::Debug for Loaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loaded")
            .field(
                "programs",
                &self.programs.iter().map(|p| &p.symbol).collect::<Vec<_>>(),
            )
            .field(
                "maps",
                &self.maps.iter().map(|m| &m.symbol).collect::<Vec<_>>(),
            )
            .field("links", &self.links.len())
            .finish()
    }
}

/// Why loading failed: the diagnostic to show, and the verifier log when there is one.
#[derive(Debug)]
pub struct LoadError {
    /// What went wrong, on the span of the responsible source.
    pub diagnostic: Diagnostic,
    /// The kernel verifier's full log, for `-v`.
    pub verifier_log: Option<String>,
}

impl From<Diagnostic> for LoadError {
    fn from(diagnostic: Diagnostic) -> Self {
        LoadError {
            diagnostic,
            verifier_log: None,
        }
    }
}

impl From<LoadError> for Diagnostic {
    fn from(e: LoadError) -> Self {
        e.diagnostic
    }
}

fn is_permission(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EPERM | libc::EACCES))
}

fn object_error(script: &CompiledScript, e: EbpfError) -> Diagnostic {
    let span = script
        .programs
        .first()
        .map_or_else(Span::default, |p| p.span);
    if let EbpfError::MapError(aya::maps::MapError::CreateError { name, io_error, .. }) = &e {
        if is_permission(io_error) {
            return permission_denied(span, &format!("creating map {name}"));
        }
        return Diagnostic::error(
            "sonde::load::map_create",
            span,
            format!("cannot create BPF map {name}: {io_error}"),
        )
        .with_help("the map may be too large for the memory lock limit or the kernel");
    }
    Diagnostic::error(
        "sonde::load::object",
        span,
        format!("cannot load the compiled object: {e}"),
    )
    .with_help("this is a sonde bug; please report it with the script")
}

/// Loads one program according to its aya type.
fn load_program(program: &mut Program, spec: &ProgramSpec) -> Result<(), ProgramError> {
    match program {
        Program::TracePoint(p) => p.load(),
        Program::RawTracePoint(p) => p.load(),
        Program::PerfEvent(p) => p.load(),
        Program::Xdp(p) => p.load(),
        Program::UProbe(p) => p.load(),
        Program::KProbe(p) => p.load(),
        Program::FEntry(p) => {
            let btf = aya::Btf::from_sys_fs()?;
            p.load(fentry_function(spec), &btf)
        }
        Program::FExit(p) => {
            let btf = aya::Btf::from_sys_fs()?;
            p.load(fentry_function(spec), &btf)
        }
        Program::Iter(p) => {
            let btf = aya::Btf::from_sys_fs()?;
            let name = spec.attach.iter().find_map(|t| match &t.spec {
                AttachSpec::Iter { name, .. } => Some(name.as_str()),
                _ => None,
            });
            p.load(name.unwrap_or(""), &btf)
        }
        _ => Err(ProgramError::UnexpectedProgramType),
    }
}

fn fentry_function(spec: &ProgramSpec) -> &str {
    spec.attach
        .iter()
        .find_map(|t| match &t.spec {
            AttachSpec::Fentry { function, .. } => Some(function.as_str()),
            _ => None,
        })
        .unwrap_or("")
}

/// Instructions processed under which a rejected program is loaded again for its full
/// (instruction by instruction) log, which then stays small and quick to produce.
const FULL_LOG_MAX_INSNS: u64 = 20_000;

/// The "processed N insns" count of a verifier log.
fn processed_insns(log: &str) -> Option<u64> {
    log.lines().rev().find_map(|l| {
        l.strip_prefix("processed ")?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    })
}

/// Loads program `spec` of `script` again, alone, with the verifier log at `level`;
/// returns the log of its rejection.
fn reload_for_log(
    script: &CompiledScript,
    spec: &ProgramSpec,
    level: VerifierLogLevel,
) -> Option<String> {
    let mut loader = loader_without_kernel_btf();
    loader.verifier_log_level(level);
    let mut ebpf = loader.load(&script.elf).ok()?;
    let program = ebpf.program_mut(&spec.symbol)?;
    match load_program(program, spec) {
        Err(ProgramError::LoadError { verifier_log, .. }) => Some(verifier_log.to_string()),
        _ => None,
    }
}

/// The verifier log of rejected program `spec` (see the module documentation).
fn verifier_log(script: &CompiledScript, spec: &ProgramSpec) -> String {
    let stats = reload_for_log(script, spec, VerifierLogLevel::STATS).unwrap_or_default();
    match processed_insns(&stats) {
        Some(n) if n > FULL_LOG_MAX_INSNS => stats,
        _ => reload_for_log(script, spec, VerifierLogLevel::default())
            .filter(|log| !log.trim().is_empty())
            .unwrap_or(stats),
    }
}

fn program_error(
    script: &CompiledScript,
    spec: &ProgramSpec,
    program: &Program,
    e: ProgramError,
) -> LoadError {
    let fentry = matches!(program, Program::FEntry(_) | Program::FExit(_));
    if let (true, Some(target)) = (fentry, spec.attach.first()) {
        let log = match &e {
            ProgramError::LoadError { verifier_log, .. } => Some(verifier_log.to_string()),
            _ => None,
        };
        return LoadError {
            diagnostic: fentry_unavailable(target),
            verifier_log: log,
        };
    }
    match e {
        ProgramError::LoadError {
            io_error,
            verifier_log,
        } => {
            // The log is off for the first load (see the module documentation).
            let mut log = verifier_log.to_string();
            if is_permission(&io_error) && log.trim().is_empty() {
                return permission_denied(spec.span, "loading a BPF program").into();
            }
            if log.trim().is_empty() {
                log = self::verifier_log(script, spec);
            }
            LoadError {
                diagnostic: verifier::diagnose(spec, &log),
                verifier_log: Some(log),
            }
        }
        ProgramError::UnexpectedProgramType => Diagnostic::error(
            "sonde::load::program_type",
            spec.span,
            format!(
                "section `{}` is not a program type sonde can load",
                spec.section
            ),
        )
        .with_help("this is a sonde bug; please report it with the script")
        .into(),
        other => Diagnostic::error(
            "sonde::load::program",
            spec.span,
            format!("cannot load this probe's program: {other}"),
        )
        .into(),
    }
}

/// A directory in which `sys/kernel/btf/vmlinux` cannot exist: `/proc/self/fdinfo` holds
/// only numbered files.
const BTF_FREE_ROOT: &std::ffi::CStr = c"/proc/self/fdinfo";

/// An `EbpfLoader` with no kernel BTF, built without parsing the kernel's BTF.
///
/// `EbpfLoader::new()` reads the fixed path `/sys/kernel/btf/vmlinux` and keeps the parse
/// only if it succeeds. It is therefore called on a short-lived thread that first takes a
/// private filesystem context (`unshare(CLONE_FS)`: root and working directory, nothing
/// else) and `chroot`s it into [`BTF_FREE_ROOT`]: the read fails at once with `ENOENT` and
/// the loader comes back with no BTF, exactly what `btf(None)` would leave. The rest of the
/// process keeps its root; the thread's context dies with it. Where that is not allowed
/// (no `CAP_SYS_CHROOT`, no `/proc`), the loader is built the ordinary, slower way.
fn loader_without_kernel_btf() -> EbpfLoader<'static> {
    let isolated = std::thread::spawn(|| {
        // SAFETY: unshare(CLONE_FS) and chroot affect only this thread's own (now private)
        // root and working directory; the path is a valid NUL-terminated string.
        let ok = unsafe {
            libc::unshare(libc::CLONE_FS) == 0 && libc::chroot(BTF_FREE_ROOT.as_ptr()) == 0
        };
        ok.then(EbpfLoader::new)
    })
    .join()
    .ok()
    .flatten();
    let mut loader = isolated.unwrap_or_else(EbpfLoader::new);
    loader.btf(None);
    loader
}

/// Loads `script`: creates its maps and loads every program of `script.programs`.
pub fn load(script: &CompiledScript) -> Result<Loaded, LoadError> {
    load_part(script, &LoadScope::default())
}

/// What part of a script [`load_part`] loads, and where the maps it shares are pinned: a
/// live session (`sonde repl`) loads each entry's probes from the whole script compiled so
/// far, and every entry uses the same user maps, ring buffer and stack maps.
#[derive(Clone, Debug, Default)]
pub struct LoadScope<'a> {
    /// The probes (by index in the source) whose programs are loaded; every program when
    /// `None`.
    pub probes: Option<Vec<usize>>,
    /// The session's own bpffs where the shared maps ([`pin_name`]) are pinned: a map already
    /// pinned there is reused, any other is created and pinned. Maps private to a program
    /// (scratch space, syscall tables, `delta` clocks, the error counters) are created for
    /// each load.
    pub pins: Option<&'a PrivateBpffs>,
}

/// The file name under which a map that every part of a live session shares is pinned
/// (user maps, the event ring buffer and stack maps), or `None` for a map private to each
/// load. Names follow the role, not the ELF symbol: a user map's symbol numbers it among the
/// script's maps, which a later entry can change. The error counters are each load's own:
/// their data section also holds the zeros that large aggregations start from, which grows
/// with the script (the session sums the counters of its loads).
pub fn pin_name(role: &MapRole) -> Option<String> {
    match role {
        MapRole::User { name, .. } => Some(format!(
            "user_{}",
            name.bytes().map(|b| format!("{b:02x}")).collect::<String>()
        )),
        MapRole::Events => Some("events".into()),
        MapRole::Stacks { kernel } => Some(if *kernel { "kstacks" } else { "ustacks" }.into()),
        MapRole::BuildIdStacks => Some("ustacks_build_id".into()),
        MapRole::Counters | MapRole::Scratch | MapRole::SyscallTable | MapRole::Delta => None,
    }
}

/// Loads the part of `script` that `scope` selects (see [`LoadScope`]).
pub fn load_part(script: &CompiledScript, scope: &LoadScope<'_>) -> Result<Loaded, LoadError> {
    let mut loader: EbpfLoader<'_> = loader_without_kernel_btf();
    loader.verifier_log_level(VerifierLogLevel::DISABLE);
    let created = match scope.pins {
        Some(fs) => {
            // Relative to the private bpffs's root, where the loading thread stands.
            for m in &script.maps {
                if let Some(name) = pin_name(&m.role) {
                    loader.map_pin_path(m.symbol.as_str(), std::path::PathBuf::from(name));
                }
            }
            fs.within(|| loader.load(&script.elf)).map_err(|e| {
                Diagnostic::error(
                    "sonde::load::pins",
                    Span::default(),
                    format!("cannot enter the session's private bpffs: {e}"),
                )
            })?
        }
        None => loader.load(&script.elf),
    };
    let mut ebpf = created.map_err(|e| object_error(script, e))?;
    let programs: Vec<ProgramSpec> = script
        .programs
        .iter()
        .filter(|p| {
            scope
                .probes
                .as_ref()
                .is_none_or(|set| set.contains(&p.probe_index))
        })
        .cloned()
        .collect();
    let mut multi = HashMap::new();
    // Built on the first uprobe program: the parsed object and the fds of aya's maps.
    let mut multi_loader = None;
    for spec in &programs {
        if crate::uprobe_multi::wanted(spec) {
            let loader = multi_loader.get_or_insert_with(|| {
                let fds: HashMap<String, RawFd> = script
                    .maps
                    .iter()
                    .filter_map(|m| {
                        let fd = map_fd(ebpf.map(&m.symbol), &m.symbol).ok()?;
                        Some((m.symbol.clone(), fd.as_raw_fd()))
                    })
                    .collect();
                crate::uprobe_multi::Loader::new(&script.elf, fds)
            });
            if let Some(fd) = loader.as_ref().and_then(|l| l.load(&spec.symbol)) {
                multi.insert(spec.symbol.clone(), fd);
                continue;
            }
        }
        let Some(program) = ebpf.program_mut(&spec.symbol) else {
            return Err(Diagnostic::error(
                "sonde::load::object",
                spec.span,
                format!(
                    "program {} is missing from the compiled object",
                    spec.symbol
                ),
            )
            .with_help("this is a sonde bug; please report it with the script")
            .into());
        };
        if let Err(e) = load_program(program, spec) {
            return Err(program_error(script, spec, program, e));
        }
    }
    Ok(Loaded {
        ebpf,
        programs,
        maps: script.maps.clone(),
        links: Vec::new(),
        multi,
    })
}

impl Loaded {
    /// The program specs, as given at load time.
    pub fn programs(&self) -> &[ProgramSpec] {
        &self.programs
    }

    /// How many links (attached probes) are held: what detaching will release.
    pub fn link_count(&self) -> usize {
        self.links.len()
    }

    /// How many times the kernel skipped one of the programs because a BPF program was
    /// already running on that CPU (its recursion guard): firings the maps never saw.
    pub fn recursion_misses(&self) -> u64 {
        use std::os::fd::AsFd;
        let aya = self
            .ebpf
            .programs()
            .filter_map(|(_, p)| p.fd().ok())
            .map(|fd| crate::syscall::recursion_misses(fd.as_fd()).unwrap_or(0));
        let multi = self
            .multi
            .values()
            .map(|fd| crate::syscall::recursion_misses(fd.as_fd()).unwrap_or(0));
        aya.chain(multi).sum()
    }

    /// The map specs, as given at load time.
    pub fn maps(&self) -> &[MapSpec] {
        &self.maps
    }

    /// The file descriptor of the loaded program `symbol`.
    /// Unloads the BEGIN programs (once they have run: nothing runs them again), so the
    /// kernel does not hold them while the script traces.
    pub fn unload_begin(&mut self) {
        for p in &self.programs {
            if p.attach.iter().all(|t| t.spec == AttachSpec::Begin)
                && let Some(Program::RawTracePoint(prog)) = self.ebpf.program_mut(&p.symbol)
            {
                // A failure leaves it loaded, as it was.
                let _ = prog.unload();
            }
        }
    }

    /// The program `symbol`'s descriptor, while it is loaded.
    pub fn program_fd(&self, symbol: &str) -> Option<BorrowedFd<'_>> {
        if let Some(fd) = self.multi.get(symbol) {
            return Some(fd.as_fd());
        }
        let program = self.ebpf.program(symbol)?;
        program.fd().ok().map(|fd| fd.as_fd())
    }

    /// A new descriptor of map `symbol` (while the object holds it).
    pub fn map_descriptor(&self, symbol: &str) -> io::Result<OwnedFd> {
        map_fd(self.ebpf.map(symbol), symbol)?.try_clone_to_owned()
    }

    /// Raw access to map `symbol` (through a duplicate of its descriptor).
    pub fn raw_map(&self, symbol: &str) -> io::Result<RawMap> {
        let spec = self
            .maps
            .iter()
            .find(|m| m.symbol == symbol)
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("no map {symbol} in the script"),
                )
            })?;
        let fd = map_fd(self.ebpf.map(symbol), symbol)?.try_clone_to_owned()?;
        RawMap::from_spec(fd, spec)
    }

    /// Takes ring buffer map `symbol` out of the object and returns a reader for it (once).
    pub fn take_events(&mut self, symbol: &str) -> io::Result<EventReader> {
        let map = self.ebpf.take_map(symbol).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("no map {symbol} (or already taken)"),
            )
        })?;
        EventReader::new(map)
    }
}

fn map_fd<'a>(map: Option<&'a Map>, symbol: &str) -> io::Result<BorrowedFd<'a>> {
    let data = match map {
        Some(
            Map::HashMap(d)
            | Map::PerCpuHashMap(d)
            | Map::Array(d)
            | Map::PerCpuArray(d)
            | Map::RingBuf(d)
            | Map::StackTraceMap(d)
            | Map::LruHashMap(d)
            | Map::PerCpuLruHashMap(d)
            | Map::Unsupported(d),
        ) => d,
        Some(_) => {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("map {symbol} has a type sonde does not read"),
            ));
        }
        None => {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("no map {symbol} loaded"),
            ));
        }
    };
    Ok(data.fd().as_fd())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn building_the_loader_leaves_the_process_root_alone() {
        let btf = std::path::Path::new(sonde_system::kernel_info::VMLINUX_BTF);
        let before = btf.exists();
        let _loader = loader_without_kernel_btf();
        // The chroot happened on a thread of its own (with its own filesystem context):
        // this thread still sees the real root, with `proc` and `sys` in it.
        let names: Vec<String> = std::fs::read_dir("/")
            .expect("/ is readable")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().any(|n| n == "proc"), "{names:?}");
        assert!(names.iter().any(|n| n == "sys"), "{names:?}");
        assert_eq!(btf.exists(), before);
    }
}
