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

/// Whether /proc/kallsyms lists `runqueues` (a kernel built with CONFIG_KALLSYMS_ALL), where
/// the verifier finds a typed ksym's address.
fn kallsyms_has_runqueues() -> bool {
    let text = std::fs::read_to_string("/proc/kallsyms").expect("/proc/kallsyms");
    text.lines()
        .any(|l| l.split_whitespace().nth(2) == Some("runqueues"))
}

#[test]
fn percpu_kaddr_of_runqueues() {
    if skip_unless_root("percpu_kaddr_of_runqueues") {
        return;
    }
    let prog = r#"interval:ms:50 { printf("%d %d %d %d %d\n", cpu, (uint64)percpu_kaddr("runqueues"), (uint64)percpu_kaddr("runqueues", cpu), (uint64)percpu_kaddr("runqueues", 0), (uint64)percpu_kaddr("runqueues", 1)); printf("%d\n", (uint64)percpu_kaddr("runqueues", 100000)); exit(); }"#;
    let out = run_sonde_timeout(&["-q", "-e", prog], TIMEOUT);
    if !kallsyms_has_runqueues() {
        // This kernel (CONFIG_KALLSYMS_ALL off) cannot resolve the variable: refused when
        // the program is built, on the name, before the verifier would refuse it.
        assert_ne!(out.code, Some(0), "accepted: {}", out.stdout);
        assert!(
            out.stderr
                .contains("sonde::sema::unresolvable_kernel_variable")
                && out
                    .stderr
                    .contains("this kernel cannot give the address of `runqueues`"),
            "stderr: {}",
            out.stderr
        );
        return;
    }
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    let v: Vec<u64> = lines[0]
        .split(' ')
        .map(|w| w.parse().expect("number"))
        .collect();
    let (here, this_cpu, by_cpu, cpu0, cpu1) = (v[0], v[1], v[2], v[3], v[4]);
    assert_ne!(this_cpu, 0);
    assert_eq!(this_cpu, by_cpu, "this CPU ({here}) read both ways");
    assert_ne!(cpu0, cpu1, "each CPU has its own copy");
    // A CPU that does not exist: the helper's NULL.
    assert_eq!(lines[1], "0");
}
