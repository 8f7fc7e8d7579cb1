//! An attach that failed, as a diagnostic on the attach point: each mechanism's own reasons
//! ([`crate::iter`], [`crate::watchpoint`], [`crate::unavailable`]), privileges, the kernel's
//! limit of programs on one point, and the kernel's own words otherwise.

use std::io;

use aya::programs::{KProbeError, ProgramError};
use sonde_compiler::program::{AttachSpec, AttachTarget, PerfEventKind, ProgramSpec};
use sonde_lang::diag::Diagnostic;

use crate::errors::{error_chain, permission_denied};
use crate::unavailable::{
    fentry_unavailable, hardware_unavailable, has_hardware_pmu, kprobe_unavailable,
};

fn is_not_found(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound
}

/// Maps an aya attach error to a diagnostic on the attach point.
pub fn attach_error(target: &AttachTarget, e: ProgramError) -> Diagnostic {
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
pub fn too_many_programs(target: &AttachTarget) -> Diagnostic {
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

/// The diagnostic for a program whose section cannot attach as its target (a sonde bug).
pub fn wrong_type(program: &ProgramSpec, target: &AttachTarget) -> Diagnostic {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::unavailable::{KPROBE_ALTERNATIVES, kprobe_alternative};
    use sonde_compiler::program::PerfSample;
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
        // No tracepoint sees capability checks (capable's kprobe): the help says so.
        let d = attach_error(&kprobe("cap_capable", false), missing());
        assert!(
            d.help
                .as_deref()
                .is_some_and(|h| h.starts_with("no tracepoint sees capability checks")),
            "{:?}",
            d.help
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
