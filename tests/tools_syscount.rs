//! `sonde tool syscount`: a target makes 3000 getppid() and 700 failing openat() calls; the
//! tool, filtered with `-p`, counts exactly those by name, by process with `-P`, only the
//! failures with `-x`, and sums their latency with `-L`.

mod common;

use common::{ATTACH_TIMEOUT, Target, TempDir, Tracer, build_target, settle, skip_unless_root};
use std::time::Duration;

/// Runs the target under `sonde tool syscount -p PID <flags>` and returns stdout.
fn syscount(bin: &std::path::Path, flags: &[&str]) -> (String, String) {
    let mut target = Target::spawn(bin, &[]);
    let pid = target.pid();
    let mut args = vec!["tool", "syscount", "-p", &pid];
    args.extend_from_slice(flags);
    let mut tracer = Tracer::start(&args);
    assert!(tracer.wait_attached(ATTACH_TIMEOUT));
    settle();
    target.go();
    assert_eq!(target.wait(Duration::from_secs(10)), Some(0));
    std::thread::sleep(Duration::from_millis(200));
    tracer.interrupt();
    (
        tracer
            .finish(Duration::from_secs(10))
            .ok_stdout()
            .to_string(),
        pid,
    )
}

#[test]
fn syscount_counts_one_process_by_name_process_and_failure() {
    if skip_unless_root("syscount_counts_one_process_by_name_process_and_failure") {
        return;
    }
    let dir = TempDir::new("syscount");
    let bin = build_target(&dir, "tools_syscalls");

    let (out, _) = syscount(&bin, &[]);
    assert!(
        out.starts_with("Tracing syscalls, printing the top 10... Hit Ctrl-C to end.\n["),
        "{out}"
    );
    assert!(out.contains("\n@syscalls[openat]: 700\n"), "{out}");
    assert!(out.contains("\n@syscalls[getppid]: 3000\n"), "{out}");
    // Sorted by value: getppid, the largest, is last.
    let last = out.lines().rfind(|l| l.starts_with("@syscalls["));
    assert_eq!(last, Some("@syscalls[getppid]: 3000"), "{out}");

    let (out, pid) = syscount(&bin, &["-P", "-x"]);
    let mine: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("@processes["))
        .collect();
    // Failures only: the 700 missing-file opens, plus whatever failed while the loader ran.
    assert_eq!(mine.len(), 1, "{out}");
    let count: u64 = mine[0].rsplit(' ').next().unwrap().parse().unwrap();
    assert!(
        mine[0].starts_with(&format!("@processes[{pid}, tools_syscalls]: ")),
        "{out}"
    );
    assert!((700..720).contains(&count), "{out}");

    let (out, _) = syscount(&bin, &["-L", "-x"]);
    assert!(out.contains("\n@syscalls[openat]: 700\n"), "{out}");
    assert!(
        !out.contains("@syscalls[getppid]"),
        "getppid never fails:\n{out}"
    );
    let t = out
        .lines()
        .find(|l| l.starts_with("@time_us[openat]: "))
        .expect("openat latency");
    let us: u64 = t.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(us < 5_000_000, "{t}");
}

#[test]
fn syscall_names_match_the_kernels_syscall_numbers() {
    if skip_unless_root("syscall_names_match_the_kernels_syscall_numbers") {
        return;
    }
    // The kernel reports each call's number in its syscalls:sys_enter_* tracepoints; the
    // name syscall_name() gives that number must be the tracepoint's name.
    let dir = TempDir::new("syscount-names");
    let bin = build_target(&dir, "tools_syscalls");
    let mut target = Target::spawn(&bin, &[]);
    let pid = target.pid();
    let script = format!(
        "tracepoint:syscalls:sys_enter_getppid, tracepoint:syscalls:sys_enter_openat  \
         /pid == {pid}/ {{ @[probe, syscall_name(args.__syscall_nr)] = count(); }}"
    );
    let mut tracer = Tracer::start(&["-e", &script]);
    assert!(tracer.wait_attached(ATTACH_TIMEOUT));
    settle();
    target.go();
    assert_eq!(target.wait(Duration::from_secs(10)), Some(0));
    std::thread::sleep(Duration::from_millis(200));
    tracer.interrupt();
    let out = tracer.finish(Duration::from_secs(10));
    let text = out.ok_stdout();
    assert!(
        text.contains("@[tracepoint:syscalls:sys_enter_getppid, getppid]: 3000\n"),
        "{text}"
    );
    assert!(
        text.contains("@[tracepoint:syscalls:sys_enter_openat, openat]: 700\n"),
        "{text}"
    );
}
