//! Functions that call kernel functions by their BTF id (kfuncs): `comm(pid)` through
//! `bpf_task_from_pid`, on processes the test starts and names, from probes that fire in
//! other processes; a pid no task has; and the probes whose programs the kernel does not
//! let call kfuncs.

mod common;

use common::{
    ATTACH_TIMEOUT, TIMEOUT, Target, TempDir, Tracer, build_target, run_sonde_timeout, settle,
    skip_unless_root,
};
use std::path::Path;
use std::time::{Duration, Instant};

/// Starts `bin` named `name` and waits (up to 5 s) until its comm says so.
fn named(bin: &Path, name: &str) -> Target {
    let t = Target::spawn(bin, &[name]);
    let file = format!("/proc/{}/comm", t.pid());
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        if std::fs::read_to_string(&file).is_ok_and(|c| c.trim_end() == name) {
            return t;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("{bin:?} did not take the name {name}");
}

/// A pid no task has: pids are below `pid_max`.
fn absent_pid() -> u32 {
    let text = std::fs::read_to_string("/proc/sys/kernel/pid_max").expect("pid_max");
    text.trim().parse().expect("pid_max is a number")
}

#[test]
fn comm_of_pid_from_an_interval_probe() {
    if skip_unless_root("comm_of_pid_from_an_interval_probe") {
        return;
    }
    let dir = TempDir::new("kfunc-interval");
    let bin = build_target(&dir, "named_task");
    let alpha = named(&bin, "sonde_kf_alpha");
    let beta = named(&bin, "kf_beta");
    let missing = absent_pid();
    let prog = format!(
        r#"interval:ms:50 {{ printf("%s|%s|%s\n", comm({}), comm({}), comm({missing})); exit(); }}"#,
        alpha.pid(),
        beta.pid()
    );
    let out = run_sonde_timeout(&["-q", "-e", &prog], TIMEOUT);
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "sonde_kf_alpha|kf_beta|N/A\n\n\n");
    assert!(
        out.stderr
            .contains(&format!("WARNING: No such process (pid={missing})")),
        "stderr: {}",
        out.stderr
    );
}

#[test]
fn comm_of_pid_from_a_tracepoint_in_another_process() {
    if skip_unless_root("comm_of_pid_from_a_tracepoint_in_another_process") {
        return;
    }
    let dir = TempDir::new("kfunc-tracepoint");
    let bin = build_target(&dir, "named_task");
    let mut leaving = named(&bin, "kf_leaving");
    let staying = named(&bin, "kf_staying_here");
    // The probe fires in `leaving` as it exits and names `staying` (and `leaving` itself,
    // whose task is still found while it runs its exit).
    let prog = format!(
        r#"tracepoint:sched:sched_process_exit /pid == {l}/ {{ printf("%s %s %s\n", comm({s}), comm({l}), comm); exit(); }}"#,
        l = leaving.pid(),
        s = staying.pid()
    );
    let mut tracer = Tracer::start(&["-e", &prog]);
    let attached = tracer.wait_attached(ATTACH_TIMEOUT);
    assert!(
        attached,
        "sonde did not attach: {:?}",
        tracer.stderr_so_far()
    );
    settle();
    leaving.go();
    assert_eq!(leaving.wait(Duration::from_secs(10)), Some(0));
    let out = tracer.finish(Duration::from_secs(10));
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "kf_staying_here kf_leaving kf_leaving\n\n\n");
}

#[test]
fn kfuncs_are_refused_where_the_kernel_forbids_them() {
    // Refused when the program is built, before anything is loaded.
    let dir = TempDir::new("kfunc-refused");
    let bin = build_target(&dir, "named_task");
    let uprobe = format!("uprobe:{}:main {{ print(comm(1)); }}", bin.display());
    for (prog, kind) in [
        ("BEGIN { print(comm(1)); }", "raw tracepoint"),
        (
            "tracepoint:syscalls:sys_enter_* { print(comm(1)); }",
            "raw tracepoint",
        ),
        (uprobe.as_str(), "kprobe"),
    ] {
        let out = run_sonde_timeout(&["-e", prog], TIMEOUT);
        assert_ne!(out.code, Some(0), "{prog}: accepted");
        assert!(
            out.stderr.contains("sonde::compile::kfunc_program_type") && out.stderr.contains(kind),
            "{prog}: {}",
            out.stderr
        );
        // One diagnostic however many programs the probe expands into.
        assert_eq!(
            out.stderr.matches("kfunc_program_type").count(),
            1,
            "{prog}"
        );
    }
}
