//! Detaching many probes is quick: syscall tracepoints go through one dispatching raw
//! tracepoint per probe and uprobes through uprobe-multi links, never through one perf event
//! each (whose release the kernel serialises, ~50 ms apiece: 13 s for `sys_enter_*`). Where
//! perf events remain (other tracepoints), a terminal shows a status line while they go.

mod common;

use common::{
    Target, TempDir, Tracer, anon_fds, build_target, run_command, run_sonde, skip_unless_root,
    sonde,
};
use std::process::Command;
use std::time::Duration;

/// How many perf events and BPF links process `pid` holds.
fn events_and_links(pid: u32) -> (usize, usize) {
    let fds = anon_fds(pid);
    let count = |kind: &str| fds.iter().filter(|k| *k == kind).count();
    (count("perf_event"), count("bpf_link"))
}

/// All 720 syscall tracepoints hold two kernel links, not 720 perf events, so Ctrl-C ends
/// the run at once, with every count printed.
#[test]
fn every_syscall_tracepoint_attaches_through_two_links() {
    if skip_unless_root("every_syscall_tracepoint_attaches_through_two_links") {
        return;
    }
    let mut tracer = Tracer::start(&[
        "-e",
        "tracepoint:syscalls:sys_enter_*, tracepoint:syscalls:sys_exit_* { @[probe] = count(); }",
    ]);
    assert!(tracer.wait_attached(Duration::from_secs(60)));
    assert_eq!(events_and_links(tracer.pid()), (0, 2), "perf events, links");
    std::thread::sleep(Duration::from_millis(200));
    tracer.interrupt();
    let out = tracer.finish(Duration::from_secs(10));
    assert!(!out.timed_out, "no exit within 10 s of SIGINT");
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stdout.contains("@[tracepoint:syscalls:sys_exit_"),
        "{}",
        out.stdout
    );
}

/// 48 uprobes and uretprobes are 48 uprobe-multi links, and count every call.
#[test]
fn uprobes_attach_as_uprobe_multi_links() {
    if skip_unless_root("uprobes_attach_as_uprobe_multi_links") {
        return;
    }
    let dir = TempDir::new("detach-uprobes");
    let bin = build_target(&dir, "many_functions");
    let bin = bin.to_str().unwrap();
    let mut target = Target::spawn(std::path::Path::new(bin), &[]);
    let script = format!(
        "uprobe:{bin}:sonde_many_f* /pid == {pid}/ {{ @[func] = count(); }} \
         uretprobe:{bin}:sonde_many_f* /pid == {pid}/ {{ @returns = count(); }}",
        pid = target.pid()
    );
    let mut tracer = Tracer::start(&["-e", &script]);
    assert!(tracer.wait_attached(Duration::from_secs(60)));
    assert_eq!(
        events_and_links(tracer.pid()),
        (0, 48),
        "perf events, links"
    );
    target.go();
    assert_eq!(target.wait(Duration::from_secs(10)), Some(0));
    std::thread::sleep(Duration::from_millis(200));
    tracer.interrupt();
    let out = tracer.finish(Duration::from_secs(10));
    assert!(!out.timed_out, "no exit within 10 s of SIGINT");
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    for i in 0..24 {
        assert!(
            out.stdout.contains(&format!("@[sonde_many_f{i}]: 1\n")),
            "{}",
            out.stdout
        );
    }
    assert!(out.stdout.contains("@returns: 24\n"), "{}", out.stdout);
}

/// Detaching many perf-event links takes the kernel a while (~50 ms each): on a terminal a
/// status line says so, and is erased once done; a pipe gets it only as a line of its own
/// once detaching has lasted a second.
#[test]
fn detaching_many_probes_shows_a_status_line_on_a_terminal() {
    if skip_unless_root("detaching_many_probes_shows_a_status_line_on_a_terminal") {
        return;
    }
    let script = "tracepoint:sched:* { @ = count(); } interval:ms:300 { exit(); }";
    let command = format!("{} -e '{script}'", sonde().display());
    // `script` runs the command on a pseudo-terminal and copies what it printed.
    let mut pty = Command::new("script");
    pty.args(["-qec", &command, "/dev/null"]);
    let out = run_command(pty, Duration::from_secs(60));
    assert_eq!(out.code, Some(0), "{}{}", out.stdout, out.stderr);
    let status = out.stdout.find("Detaching ").expect(&out.stdout);
    assert!(
        out.stdout[status..].contains(" probes...\r\x1b[K"),
        "{:?}",
        out.stdout
    );
    // Piped, the line is never drawn and erased: it appears (a line of its own) only when
    // detaching lasted a second, which a busy machine can make it do.
    let piped = run_sonde(&["-e", script]);
    assert!(!piped.stderr.contains('\r'), "{:?}", piped.stderr);
    if let Some(at) = piped.stderr.find("Detaching ") {
        let line = piped.stderr[at..].lines().next().unwrap_or_default();
        assert!(line.ends_with(" probes..."), "{}", piped.stderr);
    }
}
