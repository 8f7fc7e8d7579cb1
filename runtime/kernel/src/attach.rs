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
use std::io;
use std::num::NonZeroU32;

use aya::maps::ProgramArray;
use aya::programs::fentry::FEntryLinkId;
use aya::programs::fexit::FExitLinkId;
use aya::programs::kprobe::KProbeLinkId;
use aya::programs::perf_event::{PerfEventConfig, PerfEventLinkId, PerfEventScope, SamplePolicy};
use aya::programs::raw_trace_point::RawTracePointLinkId;
use aya::programs::trace_point::TracePointLinkId;
use aya::programs::uprobe::{UProbeAttachLocation, UProbeLinkId, UProbeScope};
use aya::programs::{KProbeError, Program, ProgramError};
use sonde_compiler::program::{
    AttachSpec, AttachTarget, PerfEventKind, PerfSample, ProgramSpec, syscall_table_symbol,
};
use sonde_lang::diag::Diagnostic;
use sonde_lang::span::Span;

use crate::load::{Loaded, permission_denied};
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
}

/// One live attachment, remembered for detaching.
#[derive(Debug)]
pub(crate) struct LinkRecord {
    /// The program's symbol.
    pub(crate) symbol: String,
    /// The link.
    pub(crate) id: LinkId,
}

/// A link by the mechanism that made it.
#[derive(Debug)]
pub(crate) enum LinkId {
    /// A perf event sonde opened itself (a uprobe with a reference counter).
    Owned(std::os::fd::OwnedFd),
    TracePoint(TracePointLinkId),
    RawTracePoint(RawTracePointLinkId),
    PerfEvent(PerfEventLinkId),
    UProbe(UProbeLinkId),
    KProbe(KProbeLinkId),
    FEntry(FEntryLinkId),
    FExit(FExitLinkId),
}

/// Tracepoints that serve the purpose of common kprobe targets: (kernel functions, entry
/// alternative, return alternative). Each tracepoint exists on Linux 6.x.
const KPROBE_ALTERNATIVES: &[(&[&str], &str, &str)] = &[
    (
        &[
            "tcp_set_state",
            "tcp_v4_connect",
            "tcp_v6_connect",
            "tcp_connect",
            "inet_csk_accept",
        ],
        "tracepoint:sock:inet_sock_set_state",
        "tracepoint:sock:inet_sock_set_state",
    ),
    (
        &["tcp_retransmit_skb"],
        "tracepoint:tcp:tcp_retransmit_skb",
        "tracepoint:tcp:tcp_retransmit_skb",
    ),
    (
        &["do_sys_openat2", "do_sys_open", "do_filp_open"],
        "tracepoint:syscalls:sys_enter_openat",
        "tracepoint:syscalls:sys_exit_openat",
    ),
    (
        &["vfs_read", "ksys_read"],
        "tracepoint:syscalls:sys_enter_read",
        "tracepoint:syscalls:sys_exit_read",
    ),
    (
        &["vfs_write", "ksys_write"],
        "tracepoint:syscalls:sys_enter_write",
        "tracepoint:syscalls:sys_exit_write",
    ),
    (
        &[
            "blk_account_io_start",
            "blk_mq_start_request",
            "blk_start_request",
        ],
        "tracepoint:block:block_rq_issue",
        "tracepoint:block:block_rq_issue",
    ),
    (
        &[
            "blk_account_io_done",
            "blk_mq_end_request",
            "blk_account_io_completion",
        ],
        "tracepoint:block:block_rq_complete",
        "tracepoint:block:block_rq_complete",
    ),
    (
        &["finish_task_switch", "schedule", "__schedule"],
        "tracepoint:sched:sched_switch",
        "tracepoint:sched:sched_switch",
    ),
    (
        &["try_to_wake_up", "ttwu_do_wakeup"],
        "tracepoint:sched:sched_wakeup",
        "tracepoint:sched:sched_wakeup",
    ),
    (
        &["wake_up_new_task"],
        "tracepoint:sched:sched_wakeup_new",
        "tracepoint:sched:sched_wakeup_new",
    ),
    (
        &["do_exit"],
        "tracepoint:sched:sched_process_exit",
        "tracepoint:sched:sched_process_exit",
    ),
    (
        &["kernel_clone", "_do_fork", "do_fork"],
        "tracepoint:sched:sched_process_fork",
        "tracepoint:sched:sched_process_fork",
    ),
    (
        &["do_execveat_common", "do_execve", "bprm_execve"],
        "tracepoint:sched:sched_process_exec",
        "tracepoint:sched:sched_process_exec",
    ),
    (
        &["kfree_skb", "kfree_skb_reason"],
        "tracepoint:skb:kfree_skb",
        "tracepoint:skb:kfree_skb",
    ),
    (
        &["oom_kill_process"],
        "tracepoint:oom:mark_victim",
        "tracepoint:oom:mark_victim",
    ),
];

/// The tracepoint to suggest instead of a k(ret)probe on `function`.
pub fn kprobe_alternative(function: &str, ret: bool) -> Option<&'static str> {
    KPROBE_ALTERNATIVES
        .iter()
        .find(|(functions, _, _)| functions.contains(&function))
        .map(|(_, entry, exit)| if ret { *exit } else { *entry })
}

/// The diagnostic for a kprobe or kretprobe on a kernel without kprobe support.
pub fn kprobe_unavailable(target: &AttachTarget, function: &str, ret: bool) -> Diagnostic {
    let kind = if ret { "kretprobe" } else { "kprobe" };
    let help = match kprobe_alternative(function, ret) {
        Some(tp) => format!("use `{tp}` instead; it serves the same purpose"),
        None => "use a tracepoint; list them with `sonde -l 'tracepoint:*'`".to_string(),
    };
    Diagnostic::error(
        "sonde::attach::kprobe_unavailable",
        target.span,
        format!("this kernel does not support {kind}s"),
    )
    .with_label(format!("cannot attach {kind} to `{function}`"))
    .with_help(help)
}

/// The diagnostic for fentry/fexit on a kernel without BPF trampolines.
pub fn fentry_unavailable(target: &AttachTarget) -> Diagnostic {
    let (function, ret) = match &target.spec {
        AttachSpec::Fentry { function, ret } => (function.as_str(), *ret),
        _ => (target.name.as_str(), false),
    };
    let kind = if ret { "fexit" } else { "fentry" };
    let help = match kprobe_alternative(function, ret) {
        Some(tp) => format!("use `{tp}` instead; it serves the same purpose"),
        None => "use a tracepoint; list them with `sonde -l 'tracepoint:*'`".to_string(),
    };
    Diagnostic::error(
        "sonde::attach::fentry_unavailable",
        target.span,
        format!("this kernel does not support {kind} probes (no BPF trampolines)"),
    )
    .with_label(format!("cannot attach {kind} to `{function}`"))
    .with_help(help)
}

/// True when the kernel exposes a CPU performance-monitoring unit (`cpu` or a hybrid
/// `cpu_core`/`cpu_atom` device in `/sys/bus/event_source/devices`). Virtual machines often
/// have none: only software, tracepoint and probe events then exist.
fn has_hardware_pmu() -> bool {
    let dir = std::path::Path::new("/sys/bus/event_source/devices");
    ["cpu", "cpu_core", "cpu_atom", "armv8_pmuv3_0"]
        .iter()
        .any(|d| dir.join(d).exists())
}

/// The diagnostic for a `hardware:` probe on a machine without a hardware PMU.
pub fn hardware_unavailable(target: &AttachTarget) -> Diagnostic {
    Diagnostic::error(
        "sonde::attach::no_pmu",
        target.span,
        format!(
            "cannot attach {}: this machine has no hardware performance counters (no PMU)",
            target.name
        ),
    )
    .with_label("hardware event unavailable here")
    .with_help(
        "hardware events need a CPU PMU (virtual machines often expose none); sample with \
         `profile:hz:99` or a `software:` event such as `software:cpu-clock:1000000` instead",
    )
}

fn is_not_found(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound
}

/// Maps an aya attach error to a diagnostic on the attach point.
fn attach_error(target: &AttachTarget, e: ProgramError) -> Diagnostic {
    match (&target.spec, &e) {
        (AttachSpec::Watchpoint { .. }, _) => crate::watchpoint::attach_error(target, &e),
        (
            AttachSpec::Kprobe { function, ret, .. },
            ProgramError::KProbeError(KProbeError::FileError { io_error, .. }),
        ) if is_not_found(io_error) => kprobe_unavailable(target, function, *ret),
        (AttachSpec::Fentry { .. }, _) => fentry_unavailable(target),
        (AttachSpec::Iter { name, .. }, _) => crate::iter::attach_error(target, name, &e),
        (
            AttachSpec::PerfEvent {
                event: PerfEventKind::Hardware(_),
                ..
            },
            _,
        ) if !has_hardware_pmu() => hardware_unavailable(target),
        (_, ProgramError::SyscallError(s))
            if matches!(s.io_error.raw_os_error(), Some(libc::EPERM | libc::EACCES)) =>
        {
            permission_denied(target.span, &format!("attaching {}", target.name))
        }
        (
            AttachSpec::Tracepoint { .. } | AttachSpec::Uprobe { .. } | AttachSpec::Kprobe { .. },
            _,
        ) if error_chain(&e).contains("os error 7)") => too_many_programs(target),
        (AttachSpec::Uprobe { .. }, _) if error_chain(&e).contains("os error 524") => Diagnostic::error(
            "sonde::attach::failed",
            target.span,
            format!("the kernel cannot place a uprobe at {} (ENOTSUPP)", target.name),
        )
        .with_label("attach point")
        .with_help("uprobes cannot be put on some instructions; probe the function's caller, or an offset (`func+N`) at another instruction"),
        _ => Diagnostic::error(
            "sonde::attach::failed",
            target.span,
            format!("cannot attach {}: {}", target.name, error_chain(&e)),
        )
        .with_label("attach point")
        .with_help("check that the attach point exists (list them with `sonde -l`)"),
    }
}

/// Code of an attach refused because the probe point holds the most programs it can.
pub const TOO_MANY_PROGRAMS: &str = "sonde::attach::too_many_programs";

/// The kernel's limit of BPF programs on one tracepoint, kprobe or uprobe
/// (`BPF_TRACE_MAX_PROGS`); one more fails with E2BIG.
pub const MAX_PROGRAMS_PER_POINT: usize = 64;

/// The diagnostic for E2BIG from attaching: the point already holds the kernel's maximum of
/// programs. [`attach_all`] adds how many this script puts there.
fn too_many_programs(target: &AttachTarget) -> Diagnostic {
    let what = match target.spec {
        AttachSpec::Tracepoint { .. } => "tracepoint",
        AttachSpec::Uprobe { .. } => "uprobe",
        _ => "kprobe",
    };
    Diagnostic::error(
        TOO_MANY_PROGRAMS,
        target.span,
        format!(
            "cannot attach {}: the kernel allows at most {MAX_PROGRAMS_PER_POINT} BPF programs on one {what}",
            target.name
        ),
    )
    .with_label(format!("one program too many on this {what}"))
}

/// `e` and its sources, joined with `: `.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

fn wrong_type(program: &ProgramSpec, target: &AttachTarget) -> Diagnostic {
    Diagnostic::error(
        "sonde::attach::program_type",
        target.span,
        format!(
            "program section `{}` cannot attach as {}",
            program.section, target.name
        ),
    )
    .with_help("this is a sonde bug; please report it with the script")
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
/// probe types run their programs in attach order.)
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
    order
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
        if matches!(target.spec, AttachSpec::SelfTest { .. }) {
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
                            sonde_present::warnings::warn(&format!(
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
                    sonde_present::warnings::warn(&format!(
                        "skipping {}: {}",
                        target.name, d.message
                    ));
                }
            }
        }
    }
    Ok(points)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_lang::span::Span;
    use std::path::PathBuf;

    fn kprobe(function: &str, ret: bool) -> AttachTarget {
        AttachTarget {
            spec: AttachSpec::Kprobe {
                function: function.into(),
                offset: 0,
                ret,
            },
            name: format!("kprobe:{function}"),
            span: Span::new(3, 20),
        }
    }

    #[test]
    fn missing_kprobe_pmu_becomes_a_diagnostic() {
        // The error aya 0.14 returns when /sys/bus/event_source/devices/kprobe is absent.
        let missing = || {
            ProgramError::KProbeError(KProbeError::FileError {
                filename: PathBuf::from("/sys/bus/event_source/devices/kprobe/type"),
                io_error: io::Error::from(io::ErrorKind::NotFound),
            })
        };
        let d = attach_error(&kprobe("tcp_set_state", false), missing());
        assert_eq!(d.code, "sonde::attach::kprobe_unavailable");
        assert_eq!(d.span, Span::new(3, 20));
        assert_eq!(d.message, "this kernel does not support kprobes");
        assert_eq!(
            d.help.as_deref(),
            Some("use `tracepoint:sock:inet_sock_set_state` instead; it serves the same purpose")
        );
        let d = attach_error(&kprobe("vfs_read", true), missing());
        assert_eq!(d.message, "this kernel does not support kretprobes");
        assert!(
            d.help
                .unwrap()
                .contains("tracepoint:syscalls:sys_exit_read")
        );
        let d = attach_error(&kprobe("some_obscure_fn", false), missing());
        assert_eq!(
            d.help.as_deref(),
            Some("use a tracepoint; list them with `sonde -l 'tracepoint:*'`")
        );
    }

    #[test]
    fn hardware_events_without_a_pmu_say_so() {
        let target = AttachTarget {
            spec: AttachSpec::PerfEvent {
                event: PerfEventKind::Hardware(0),
                sample: PerfSample::Period(1_000_000),
                all_cpus: true,
            },
            name: "hardware:cycles:1000000".into(),
            span: Span::new(0, 23),
        };
        let d = hardware_unavailable(&target);
        assert_eq!(d.code, "sonde::attach::no_pmu");
        assert_eq!(d.span, Span::new(0, 23));
        assert_eq!(
            d.message,
            "cannot attach hardware:cycles:1000000: this machine has no hardware performance counters (no PMU)"
        );
        if !has_hardware_pmu() {
            let e = ProgramError::IOError(io::Error::from(io::ErrorKind::NotFound));
            assert_eq!(attach_error(&target, e).code, "sonde::attach::no_pmu");
        }
    }

    #[test]
    fn other_errors_keep_their_cause() {
        let target = AttachTarget {
            spec: AttachSpec::Tracepoint {
                category: "nope".into(),
                name: "nope".into(),
            },
            name: "tracepoint:nope:nope".into(),
            span: Span::new(0, 20),
        };
        let e = ProgramError::IOError(io::Error::from(io::ErrorKind::NotFound));
        let d = attach_error(&target, e);
        assert_eq!(d.code, "sonde::attach::failed");
        assert!(
            d.message
                .starts_with("cannot attach tracepoint:nope:nope: "),
            "{}",
            d.message
        );
    }

    #[test]
    fn alternatives_table() {
        assert_eq!(
            kprobe_alternative("do_sys_openat2", false),
            Some("tracepoint:syscalls:sys_enter_openat")
        );
        assert_eq!(
            kprobe_alternative("blk_mq_start_request", false),
            Some("tracepoint:block:block_rq_issue")
        );
        assert_eq!(
            kprobe_alternative("finish_task_switch", false),
            Some("tracepoint:sched:sched_switch")
        );
        assert_eq!(
            kprobe_alternative("do_exit", true),
            Some("tracepoint:sched:sched_process_exit")
        );
        assert_eq!(kprobe_alternative("nothing_like_this", false), None);
        let target = AttachTarget {
            spec: AttachSpec::Fentry {
                function: "tcp_v4_connect".into(),
                ret: false,
            },
            name: "fentry:tcp_v4_connect".into(),
            span: Span::new(1, 2),
        };
        let d = fentry_unavailable(&target);
        assert_eq!(d.code, "sonde::attach::fentry_unavailable");
        assert_eq!(d.span, Span::new(1, 2));
        assert!(
            d.help
                .unwrap()
                .contains("tracepoint:sock:inet_sock_set_state")
        );
    }

    #[test]
    fn every_alternative_is_a_real_tracepoint_here() {
        // Checked against tracefs when it is mounted (it is on the project's machines).
        let root = std::path::Path::new("/sys/kernel/tracing/events");
        if !root.join("sched").exists() {
            return;
        }
        for (_, entry, exit) in KPROBE_ALTERNATIVES {
            for tp in [entry, exit] {
                let path = tp.strip_prefix("tracepoint:").unwrap().replace(':', "/");
                assert!(root.join(&path).exists(), "{tp} missing");
            }
        }
    }
}
