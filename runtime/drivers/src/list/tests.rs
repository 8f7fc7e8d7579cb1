//! Tests of probe listing and glob matching.

use super::*;

#[test]
fn glob_matching() {
    assert!(glob_match("*", ""));
    assert!(glob_match("*", "tracepoint:sched:sched_switch"));
    assert!(glob_match(
        "tracepoint:sched:*",
        "tracepoint:sched:sched_switch"
    ));
    assert!(!glob_match(
        "tracepoint:sched:*",
        "tracepoint:irq:irq_handler_entry"
    ));
    assert!(glob_match(
        "*openat*",
        "tracepoint:syscalls:sys_enter_openat"
    ));
    assert!(glob_match("sys_?nter_*", "sys_enter_read"));
    assert!(!glob_match("sys_?nter_*", "sys_exit_read"));
    assert!(glob_match("a*b*c", "aXbYbZc"));
    assert!(!glob_match("a*b*c", "aXbYbZ"));
    assert!(glob_match("exact", "exact"));
    assert!(!glob_match("exact", "exactly"));
    assert!(!glob_match("?", ""));
}

#[test]
fn aliases_and_bare_patterns() {
    assert_eq!(expand_alias("t:sched:*"), "tracepoint:sched:*");
    assert_eq!(expand_alias("rt:sys_*"), "rawtracepoint:sys_*");
    assert_eq!(expand_alias("*openat*"), "*openat*");
    assert!(selects("sched_switch", "tracepoint:sched:sched_switch"));
    assert!(selects("sched_switch", "rawtracepoint:sched_switch"));
    assert!(selects("cpu-clock", "software:cpu-clock:"));
    assert!(!selects("sched_switch", "tracepoint:sched:sched_switch_x"));
    assert!(!selects(
        "tracepoint:sched_switch",
        "rawtracepoint:sched_switch"
    ));
}

#[test]
fn lists_sched_tracepoints() {
    let k = SystemKernel::new();
    let list = list_probes(&k, Some("tracepoint:sched:*"), false).unwrap();
    assert!(list.iter().any(|p| p == "tracepoint:sched:sched_switch"));
    assert!(list.iter().all(|p| p.starts_with("tracepoint:sched:")));
    assert!(list.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn verbose_lists_tracepoint_args_like_bpftrace() {
    let k = SystemKernel::new();
    let list = list_probes(&k, Some("tracepoint:syscalls:sys_enter_openat"), true).unwrap();
    assert_eq!(
        list,
        [
            "tracepoint:syscalls:sys_enter_openat\n    int __syscall_nr\n    int dfd\n    \
          const char * filename\n    int flags\n    umode_t mode"
        ]
    );
    let exec = list_probes(&k, Some("t:sched:sched_process_exec"), true).unwrap();
    assert_eq!(
        exec,
        [
            "tracepoint:sched:sched_process_exec\n    __data_loc char[] filename\n    pid_t pid\n    \
          pid_t old_pid"
        ]
    );
}

#[test]
fn bare_pattern_searches_every_provider() {
    let k = SystemKernel::new();
    let list = list_probes(&k, Some("*sched_switch*"), false).unwrap();
    assert!(list.contains(&"tracepoint:sched:sched_switch".to_string()));
    assert!(list.contains(&"rawtracepoint:vmlinux:sched_switch".to_string()));
    assert!(!list.iter().any(|p| p.starts_with("software:")));
    let sw = list_probes(&k, Some("software:*"), false).unwrap();
    let events = sonde_compiler::catalog::providers::software::EVENTS;
    assert_eq!(sw.len(), perf_event_names(events).count());
    // Aliases too, as bpftrace lists them (`software:cpu:` after `software:cpu-clock:`).
    assert!(sw.contains(&"software:cpu-clock:".to_string()));
    assert!(sw.contains(&"software:cpu:".to_string()));
    let hw = list_probes(&k, Some("h:cpu-*"), false).unwrap();
    assert_eq!(hw, ["hardware:cpu-cycles:"]);
}

#[test]
fn kprobes_only_when_supported() {
    let k = SystemKernel::new();
    let list = list_probes(&k, Some("kprobe:*"), false).unwrap();
    if !k.has_kprobes() {
        assert!(list.is_empty());
    }
}

/// A function this test binary defines under a stable, unmangled name.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn sonde_list_test_probe_target(x: u32) -> u32 {
    std::hint::black_box(x + 1)
}

#[test]
fn lists_own_uprobe_symbols() {
    assert_eq!(sonde_list_test_probe_target(1), 2);
    let k = SystemKernel::new();
    let exe = std::env::current_exe()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let list = list_probes(&k, Some(&format!("uprobe:{exe}:*")), false).unwrap();
    assert!(list.contains(&format!("uprobe:{exe}:sonde_list_test_probe_target")));
    let one = list_probes(&k, Some(&format!("u:{exe}:sonde_list_test_probe_*")), false).unwrap();
    assert_eq!(one, [format!("uprobe:{exe}:sonde_list_test_probe_target")]);
}

#[test]
fn lists_libc_and_bash_uprobes() {
    let k = SystemKernel::new();
    let libc = list_probes(&k, Some("uprobe:libc:malloc"), false).unwrap();
    assert_eq!(libc.len(), 1);
    assert!(
        libc[0].starts_with("uprobe:/") && libc[0].ends_with("/libc.so.6:malloc"),
        "{libc:?}"
    );
    let bash = list_probes(&k, Some("uprobe:/bin/bash:readline"), false).unwrap();
    assert_eq!(bash, ["uprobe:/bin/bash:readline"]);
    let err = list_probes(&k, Some("uprobe:no_such_binary_xyz:*"), false).unwrap_err();
    assert!(
        err.starts_with("uprobe target `no_such_binary_xyz` not found"),
        "{err}"
    );
}

#[test]
fn describes_struct_sock() {
    let k = SystemKernel::new();
    let text = describe_type(&k, "struct sock").unwrap();
    assert!(
        text.starts_with("struct sock {\n\tstruct sock_common __sk_common;\n"),
        "{text}"
    );
    assert!(text.contains("\tvoid (*sk_data_ready)(struct sock *);\n"));
    assert!(text.contains("\n\tstruct {\n\t\tatomic_t rmem_alloc;\n"));
    assert!(text.contains("\n\t} sk_backlog;\n"));
}

#[test]
fn verbose_lists_raw_tracepoint_args() {
    let k = SystemKernel::new();
    let list = list_probes(&k, Some("rawtracepoint:sched_switch"), true).unwrap();
    assert_eq!(
        list,
        [
            "rawtracepoint:vmlinux:sched_switch\n    bool preempt\n    struct task_struct * prev\n    \
          struct task_struct * next\n    unsigned int prev_state"
        ]
    );
}

/// bpftrace 0.26 lists raw tracepoints with their module; both forms of pattern select them.
#[test]
fn raw_tracepoints_are_listed_with_their_module() {
    let k = SystemKernel::new();
    let want = ["rawtracepoint:vmlinux:sched_switch".to_string()];
    assert_eq!(
        list_probes(&k, Some("rt:sched_switch"), false).unwrap(),
        want
    );
    assert_eq!(
        list_probes(&k, Some("rawtracepoint:vmlinux:sched_switch"), false).unwrap(),
        want
    );
    assert_eq!(
        list_probes(&k, Some("rawtracepoint:*:sched_switch"), false).unwrap(),
        want
    );
}

#[test]
fn kernel_types_by_pattern() {
    let k = SystemKernel::new();
    assert!(is_type_pattern("struct task_struct"));
    assert!(is_type_pattern("enum cpu_usage_stat"));
    assert!(!is_type_pattern("tracepoint:sched:*"));
    let names = list_types(&k, "struct  task_s*", false).unwrap();
    assert!(
        names.contains(&"struct task_struct".to_string()),
        "{names:?}"
    );
    assert!(
        names.iter().all(|n| n.starts_with("struct task_s")),
        "{names:?}"
    );
    let fd = list_types(&k, "struct fd", true).unwrap();
    assert_eq!(fd.len(), 1);
    assert!(fd[0].starts_with("vmlinux: struct fd {\n\t"), "{fd:?}");
    let e = list_types(&k, "enum cpu_usage_stat", true).unwrap();
    assert!(
        e[0].starts_with("vmlinux: enum cpu_usage_stat {\n\tCPUTIME_USER = 0,\n"),
        "{e:?}"
    );
    assert!(e[0].ends_with("\n};"), "{e:?}");
    assert!(list_types(&k, "struct no_such_type_xyz", false).is_err());
    assert!(
        list_types(&k, "struct no_such_type_xyz*", false)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn probes_of_a_process() {
    // This test process maps its own executable and libc.
    let pid = std::process::id();
    let k = SystemKernel::new();
    let list = list_probes_for(
        &k,
        Some("uprobe:*:sonde_list_test_probe_*"),
        false,
        Some(pid),
    )
    .unwrap();
    // Named through the process's root, as bpftrace 0.26 names them.
    let exe = std::fs::read_link("/proc/self/exe").unwrap();
    assert_eq!(
        list,
        [format!(
            "uprobe:/proc/{pid}/root{}:sonde_list_test_probe_target",
            exe.display()
        )]
    );
    // The two-part form has any target.
    let libc = list_probes_for(&k, Some("u:malloc"), false, Some(pid)).unwrap();
    assert!(
        libc.iter().any(|p| p.ends_with("libc.so.6:malloc")),
        "{libc:?}"
    );
    let err = list_probes_for(&k, Some("uprobe:*:x"), false, Some(u32::MAX)).unwrap_err();
    assert!(err.contains("no process with pid"), "{err}");
}
