//! Mechanisms this kernel may lack (kprobes, fentry/fexit, a hardware PMU): diagnostics on
//! the attach point's span that name a tracepoint serving the same purpose.

use sonde_compiler::program::{AttachSpec, AttachTarget};
use sonde_lang::diag::Diagnostic;

/// Tracepoints that serve the purpose of common kprobe targets: (kernel functions, entry
/// alternative, return alternative). Each tracepoint exists on Linux 6.x.
pub(crate) const KPROBE_ALTERNATIVES: &[(&[&str], &str, &str)] = &[
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

/// Kernel functions no tracepoint can stand in for, with what to say instead.
const NO_TRACEPOINT: &[(&[&str], &str)] = &[(
    &["cap_capable", "security_capable", "ns_capable", "capable"],
    "no tracepoint sees capability checks: `cap_capable` needs a kernel with kprobes \
     (CONFIG_KPROBES) or BPF trampolines (fentry)",
)];

/// The tracepoint to suggest instead of a k(ret)probe on `function`.
pub fn kprobe_alternative(function: &str, ret: bool) -> Option<&'static str> {
    KPROBE_ALTERNATIVES
        .iter()
        .find(|(functions, _, _)| functions.contains(&function))
        .map(|(_, entry, exit)| if ret { *exit } else { *entry })
}

/// What to use instead of a k(ret)probe or fentry on `function`: its tracepoint, or why
/// there is none, or where to look for one.
fn instead(function: &str, ret: bool) -> String {
    if let Some(tp) = kprobe_alternative(function, ret) {
        return format!("use `{tp}` instead; it serves the same purpose");
    }
    match NO_TRACEPOINT.iter().find(|(f, _)| f.contains(&function)) {
        Some((_, why)) => why.to_string(),
        None => "use a tracepoint; list them with `sonde -l 'tracepoint:*'`".to_string(),
    }
}

/// The diagnostic for a kprobe or kretprobe on a kernel without kprobe support.
pub fn kprobe_unavailable(target: &AttachTarget, function: &str, ret: bool) -> Diagnostic {
    let kind = if ret { "kretprobe" } else { "kprobe" };
    let help = instead(function, ret);
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
    let help = instead(function, ret);
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
pub fn has_hardware_pmu() -> bool {
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
