//! Attaches loaded programs to their kernel mechanisms: one exhaustive `match` on
//! [`AttachSpec`] (adding a mechanism adds exactly one arm here).
//!
//! Links are owned by the aya programs inside [`Loaded`]; [`crate::detach::detach_probes`]
//! detaches them (before END runs) and dropping `Loaded` detaches whatever is left. Every link is a file
//! descriptor, so even a killed process leaves nothing attached.
//!
//! Mechanisms this kernel lacks (kprobes, fentry) become diagnostics on the attach point's
//! span that name a tracepoint serving the same purpose.
//!
//! A uprobe on a function goes at the file offset [`crate::uprobe_functions`] gives (the
//! implementation of an IFUNC, one place for aliases), the same one the compiler's wildcard
//! expansion and offset checks used.

#![allow(clippy::result_large_err)] // Diagnostic is the project-wide error type.

use std::collections::HashMap;
use std::num::NonZeroU32;

use aya::maps::ProgramArray;
use aya::programs::perf_event::{PerfEventConfig, PerfEventScope, SamplePolicy};
use aya::programs::uprobe::{UProbeAttachLocation, UProbeScope};
use aya::programs::{Program, ProgramError};
use sonde_compiler::program::{
    AttachSpec, AttachTarget, PerfEventKind, PerfSample, ProgramSpec, syscall_table_symbol,
};
use sonde_lang::diag::Diagnostic;
use sonde_lang::span::Span;

use crate::attach_errors::{MAX_PROGRAMS_PER_POINT, TOO_MANY_PROGRAMS};
use crate::attach_errors::{attach_error, wrong_type};
use crate::link::{LinkId, LinkRecord};
use crate::load::Loaded;
use sonde_system::cpus::online_cpus;

/// Options of the command line that affect attaching.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AttachOptions {
    /// Only trace this process in uprobes (`-p PID`).
    pub pid: Option<u32>,
    /// `config = { missing_probes = ... }`: what a target that cannot attach does.
    pub missing: sonde_lang::sema::MissingProbes,
    /// The `-p` process or the `-c` child: where watchpoints watch (see [`crate::watchpoint`]).
    pub watch_pid: Option<u32>,
    /// Attach no uprobe, uretprobe or USDT probe (a tool run without its `-p`/`-c` traces
    /// only the kernel: bcc's memleak); they count neither as attached nor as failed.
    pub skip_uprobes: bool,
}

fn perf_config(kind: PerfEventKind) -> PerfEventConfig {
    match kind {
        PerfEventKind::Software(config) => PerfEventConfig::Pmu {
            pmu_type: 1,
            config,
        },
        PerfEventKind::Hardware(config) => PerfEventConfig::Pmu {
            pmu_type: 0,
            config,
        },
    }
}

/// Attaches `program` at `target`. Returns the number of kernel attachments made (one per
/// CPU for perf events; zero for BEGIN/END, which [`crate::trigger`] runs instead).
pub fn attach_target(
    loaded: &mut Loaded,
    program: &ProgramSpec,
    target: &AttachTarget,
    options: &AttachOptions,
) -> Result<usize, Diagnostic> {
    if let AttachSpec::SyscallSlot { nr, exit, .. } = target.spec {
        return fill_syscall_slot(loaded, program, nr, exit)
            .map(|()| 1)
            .map_err(|e| attach_error(target, e));
    }
    if let Some(result) = attach_uprobe_multi(loaded, program, target, options) {
        return result;
    }
    let Some(prog) = loaded.ebpf.program_mut(&program.symbol) else {
        return Err(wrong_type(program, target));
    };
    let mut ids = Vec::new();
    let result: Result<(), ProgramError> = match (&target.spec, prog) {
        // Run by sonde itself (`crate::trigger`, `crate::selftest`), never attached.
        (
            AttachSpec::Begin
            | AttachSpec::End
            | AttachSpec::Signal { .. }
            | AttachSpec::SelfTest { .. },
            _,
        ) => Ok(()),
        (AttachSpec::Watchpoint { .. }, Program::PerfEvent(p)) => {
            crate::watchpoint::attach(p, &target.spec, options.watch_pid, &mut ids)
        }
        (AttachSpec::Tracepoint { category, name }, Program::TracePoint(p)) => p
            .attach(category, name)
            .map(|id| ids.push(LinkId::TracePoint(id))),
        (AttachSpec::RawTracepoint { name }, Program::RawTracePoint(p)) => {
            p.attach(name).map(|id| ids.push(LinkId::RawTracePoint(id)))
        }
        (AttachSpec::SyscallDispatch { exit }, Program::RawTracePoint(p)) => p
            .attach(if *exit { "sys_exit" } else { "sys_enter" })
            .map(|id| ids.push(LinkId::RawTracePoint(id))),
        (
            AttachSpec::PerfEvent {
                event,
                sample,
                all_cpus,
            },
            Program::PerfEvent(p),
        ) => {
            let cpus = if *all_cpus {
                online_cpus().map_err(ProgramError::IOError)
            } else {
                Ok(vec![0])
            };
            let policy = match *sample {
                PerfSample::Period(n) => SamplePolicy::Period(n),
                PerfSample::Frequency(n) => SamplePolicy::Frequency(n),
            };
            cpus.and_then(|cpus| {
                for cpu in cpus {
                    let scope = PerfEventScope::AllProcessesOneCpu { cpu };
                    let id = p.attach(perf_config(*event), scope, policy, false)?;
                    ids.push(LinkId::PerfEvent(id));
                }
                Ok(())
            })
        }
        (
            AttachSpec::Uprobe {
                path,
                symbol: None,
                offset,
                ret,
                ref_ctr_offset,
            },
            Program::UProbe(p),
        ) if *ref_ctr_offset != 0 => p
            .fd()
            .and_then(|fd| {
                crate::perf_uprobe::attach(
                    std::os::fd::AsFd::as_fd(fd),
                    path,
                    *offset,
                    *ret,
                    *ref_ctr_offset,
                    options.pid,
                )
                .map_err(|io_error| {
                    aya::sys::SyscallError {
                        call: "perf_event_open",
                        io_error,
                    }
                    .into()
                })
            })
            .map(|fd| ids.push(LinkId::Owned(fd))),
        (
            AttachSpec::Uprobe {
                path,
                symbol,
                offset,
                ..
            },
            Program::UProbe(p),
        ) => {
            let at = uprobe_offset(target, path, symbol.as_deref(), *offset)?;
            let location = UProbeAttachLocation::AbsoluteOffset(at);
            let scope = match options.pid.and_then(NonZeroU32::new) {
                Some(pid) => UProbeScope::OneProcess(pid),
                None => UProbeScope::AllProcesses,
            };
            p.attach(location, path.as_str(), scope)
                .map(|id| ids.push(LinkId::UProbe(id)))
        }
        (
            AttachSpec::Kprobe {
                function, offset, ..
            },
            Program::KProbe(p),
        ) => p
            .attach(function, *offset)
            .map(|id| ids.push(LinkId::KProbe(id))),
        (AttachSpec::Fentry { ret: false, .. }, Program::FEntry(p)) => {
            p.attach().map(|id| ids.push(LinkId::FEntry(id)))
        }
        (AttachSpec::Fentry { ret: true, .. }, Program::FExit(p)) => {
            p.attach().map(|id| ids.push(LinkId::FExit(id)))
        }
        (AttachSpec::Iter { name, .. }, Program::Iter(p)) => {
            crate::iter::attach(p, name, options.pid).map(|fd| ids.push(LinkId::Owned(fd)))
        }
        (
            AttachSpec::Tracepoint { .. }
            | AttachSpec::RawTracepoint { .. }
            | AttachSpec::SyscallSlot { .. }
            | AttachSpec::SyscallDispatch { .. }
            | AttachSpec::PerfEvent { .. }
            | AttachSpec::Watchpoint { .. }
            | AttachSpec::Uprobe { .. }
            | AttachSpec::Kprobe { .. }
            | AttachSpec::Fentry { .. }
            | AttachSpec::Iter { .. },
            _,
        ) => return Err(wrong_type(program, target)),
        // The userspace engine runs these; the compiler never puts them in a kernel program.
        (AttachSpec::Input { .. } | AttachSpec::Replay { .. }, _) => {
            return Err(wrong_type(program, target));
        }
    };
    let count = ids.len();
    loaded.links.extend(ids.into_iter().map(|id| LinkRecord {
        symbol: program.symbol.clone(),
        id,
    }));
    result.map_err(|e| attach_error(target, e))?;
    Ok(count)
}

/// The file offset of a uprobe: a function is placed by [`crate::uprobe_functions`] (IFUNCs
/// at their implementation), never by aya's own symbol lookup.
fn uprobe_offset(
    target: &AttachTarget,
    path: &str,
    symbol: Option<&str>,
    offset: u64,
) -> Result<u64, Diagnostic> {
    let at = match symbol {
        None => Ok(offset),
        Some(s) => sonde_system::uprobe_functions::FileFunctions::of(path)
            .and_then(|f| f.attach_offset(s))
            .and_then(|base| {
                base.checked_add(offset)
                    .ok_or_else(|| format!("offset {offset} is out of range"))
            }),
    };
    at.and_then(|at| sonde_system::uprobe_functions::check_probe_instruction(path, at).map(|()| at))
        .map_err(|e| {
            Diagnostic::error(
                "sonde::attach::failed",
                target.span,
                format!("cannot attach {}: {e}", target.name),
            )
            .with_label("attach point")
        })
}

/// Attaches a uprobe whose program was loaded for uprobe-multi links
/// ([`crate::uprobe_multi`]).
fn attach_uprobe_multi(
    loaded: &mut Loaded,
    program: &ProgramSpec,
    target: &AttachTarget,
    options: &AttachOptions,
) -> Option<Result<usize, Diagnostic>> {
    let AttachSpec::Uprobe {
        path,
        symbol,
        offset,
        ret,
        ..
    } = &target.spec
    else {
        return None;
    };
    let prog = loaded.multi.get(&program.symbol)?;
    let at = match uprobe_offset(target, path, symbol.as_deref(), *offset) {
        Ok(at) => at,
        Err(d) => return Some(Err(d)),
    };
    let pid = options.pid.filter(|&p| p != 0);
    let link =
        match crate::uprobe_multi::attach(std::os::fd::AsFd::as_fd(prog), path, at, *ret, pid) {
            Ok(link) => link,
            Err(io_error) => {
                let e = ProgramError::SyscallError(aya::sys::SyscallError {
                    call: "bpf_link_create",
                    io_error,
                });
                return Some(Err(attach_error(target, e)));
            }
        };
    loaded.links.push(LinkRecord {
        symbol: program.symbol.clone(),
        id: LinkId::Owned(link),
    });
    Some(Ok(1))
}

/// Puts the program of a syscall tracepoint in its slot of the probe's dispatch table (see
/// `sonde_compiler::catalog::providers::syscall_dispatch`): from then on the probe's
/// dispatcher runs it for syscall `nr`.
fn fill_syscall_slot(
    loaded: &mut Loaded,
    program: &ProgramSpec,
    nr: u32,
    exit: bool,
) -> Result<(), ProgramError> {
    let fd = match loaded.ebpf.program(&program.symbol) {
        Some(Program::RawTracePoint(p)) => p.fd()?.try_clone()?,
        _ => return Err(ProgramError::NotLoaded),
    };
    let symbol = syscall_table_symbol(program.probe_index, exit);
    let map = loaded
        .ebpf
        .map_mut(&symbol)
        .ok_or(ProgramError::NotLoaded)?;
    let mut table = ProgramArray::try_from(map).map_err(ProgramError::MapError)?;
    table.set(nr, &fd, 0).map_err(ProgramError::MapError)
}

/// The order in which targets are attached: the script's, except that uprobe-multi links
/// (uprobes, uretprobes and USDT probes loaded by [`crate::uprobe_multi`]) go in reverse.
/// Each such link is a consumer of its uprobe, and the kernel adds consumers at the head of
/// the uprobe's list and runs them from there: attached last to first, several probes on one
/// point run in declaration order, as bpftrace's do. (Perf-event uprobes and the other
/// probe types run their programs in attach order.) Return probes go before all others.
fn attach_order<'p>(
    loaded: &Loaded,
    programs: &'p [ProgramSpec],
) -> Vec<(&'p ProgramSpec, &'p AttachTarget)> {
    let mut order: Vec<(&ProgramSpec, &AttachTarget)> = programs
        .iter()
        .flat_map(|p| p.attach.iter().map(move |t| (p, t)))
        .collect();
    let multi: Vec<usize> = (0..order.len())
        .filter(|&i| loaded.multi.contains_key(&order[i].0.symbol))
        .collect();
    let reversed: Vec<(&ProgramSpec, &AttachTarget)> =
        multi.iter().rev().map(|&i| order[i]).collect();
    for (&i, pair) in multi.iter().zip(reversed) {
        order[i] = pair;
    }
    // Return probes first: a call that enters while its entry probe is attached then has
    // its return seen too, so entry/return pairs are never left half-open (a tool that counts
    // outermost calls would otherwise stay "inside" a call for ever).
    order.sort_by_key(|(_, t)| !is_return_probe(t));
    order
}

fn is_return_probe(target: &AttachTarget) -> bool {
    matches!(target.spec, AttachSpec::Uprobe { ret: true, .. })
}

/// Attaches every program at every target except BEGIN and END. Returns the number of
/// attach points (as bpftrace counts them in "Attaching N probes...", BEGIN/END included).
pub fn attach_all(loaded: &mut Loaded, options: &AttachOptions) -> Result<usize, Diagnostic> {
    let programs = loaded.programs.clone();
    // An attach point that a wildcard expanded into several targets tolerates targets that
    // cannot attach (a function a uprobe cannot be placed on, say): they are skipped with a
    // warning, as bpftrace does. A point that attaches nowhere is still an error.
    let mut expanded: HashMap<Span, (usize, usize)> = HashMap::new();
    for t in programs.iter().flat_map(|p| &p.attach) {
        expanded.entry(t.span).or_default().0 += 1;
    }
    let mut points = 0;
    for (program, target) in attach_order(loaded, &programs) {
        // Tests and benchmarks run only under `--test`/`--bench` (`crate::selftest`).
        if matches!(target.spec, AttachSpec::SelfTest { .. })
            || (options.skip_uprobes && matches!(target.spec, AttachSpec::Uprobe { .. }))
        {
            continue;
        }
        {
            match attach_target(loaded, program, target, options) {
                // A dispatcher serves the syscall probes counted by their slots.
                Ok(_) if matches!(target.spec, AttachSpec::SyscallDispatch { .. }) => {}
                Ok(_) => points += 1,
                Err(d) if d.code == TOO_MANY_PROGRAMS => {
                    // Every probe on a point is its own program: say how many this script
                    // puts there, and how to need fewer.
                    let here = programs
                        .iter()
                        .flat_map(|p| &p.attach)
                        .filter(|t| t.name == target.name)
                        .count();
                    return Err(d.with_help(format!(
                        "this script has {here} probe{} on {}{}; merge probes on the same point into one (their bodies one after the other)",
                        if here == 1 { "" } else { "s" },
                        target.name,
                        if here < MAX_PROGRAMS_PER_POINT {
                            ", and other tracers hold the rest"
                        } else {
                            ""
                        }
                    )));
                }
                Err(d) => {
                    let entry = expanded.entry(target.span).or_default();
                    entry.1 += 1;
                    // `missing_probes = warn | ignore`: any target may fail to attach.
                    match options.missing {
                        sonde_lang::sema::MissingProbes::Ignore => continue,
                        sonde_lang::sema::MissingProbes::Warn => {
                            sonde_system::warnings::warn(&format!(
                                "skipping {}: {} (missing_probes = warn)",
                                target.name, d.message
                            ));
                            continue;
                        }
                        sonde_lang::sema::MissingProbes::Error => {}
                    }
                    if entry.0 <= 1 || entry.1 == entry.0 {
                        return Err(d);
                    }
                    sonde_system::warnings::warn(&format!(
                        "skipping {}: {}",
                        target.name, d.message
                    ));
                }
            }
        }
    }
    Ok(points)
}
