//! `sonde tool execsnoop`: the test execs a copy of `echo` under a unique name with known
//! arguments, and a missing program, and asserts both lines (PCOMM PID PPID RET ARGS).

mod common;

use common::{ATTACH_TIMEOUT, TempDir, Tracer, settle, skip_unless_root};
use std::process::Command;
use std::time::Duration;

#[test]
fn execsnoop_shows_a_successful_and_a_failed_exec() {
    if skip_unless_root("execsnoop_shows_a_successful_and_a_failed_exec") {
        return;
    }
    let dir = TempDir::new("execsnoop");
    let name = "sdexec_probe";
    let bin = dir.path().join(name);
    std::fs::copy("/bin/echo", &bin).expect("copy /bin/echo");
    let missing = dir.path().join("missing-program");

    // All execs, to see the success; a second tracer shows only failures.
    let mut all = Tracer::start(&["tool", "execsnoop", "-n", name]);
    let mut fails = Tracer::start(&["tool", "execsnoop", "-x", "-T"]);
    assert!(all.wait_attached(ATTACH_TIMEOUT) && fails.wait_attached(ATTACH_TIMEOUT));
    settle();
    let child = Command::new(&bin)
        .args(["alpha", "beta gamma"])
        .output()
        .expect("run echo copy");
    assert!(child.status.success());
    let err = Command::new(&missing)
        .arg("delta")
        .spawn()
        .expect_err("missing program");
    assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
    std::thread::sleep(Duration::from_millis(300));
    all.interrupt();
    fails.interrupt();
    let all = all.finish(Duration::from_secs(10));
    let fails = fails.finish(Duration::from_secs(10));
    let me = std::process::id();

    let text = all.ok_stdout();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("PCOMM            PID     PPID    RET ARGS")
    );
    let ok: Vec<&str> = lines.filter(|l| l.starts_with(name)).collect();
    assert_eq!(ok.len(), 1, "{text}");
    let cols: Vec<&str> = ok[0].split_whitespace().collect();
    assert_eq!(
        cols[2],
        me.to_string(),
        "PPID is the test process: {}",
        ok[0]
    );
    assert_eq!(cols[3], "0", "{}", ok[0]);
    assert_eq!(
        &ok[0][33..],
        format!("  0 {} alpha beta gamma", bin.display()),
        "{}",
        ok[0]
    );

    let text = fails.ok_stdout();
    assert!(
        text.starts_with("TIME     PCOMM            PID     PPID    RET ARGS\n"),
        "{text}"
    );
    let failed: Vec<&str> = text
        .lines()
        .filter(|l| l.ends_with(&format!("{} delta", missing.display())))
        .collect();
    assert_eq!(failed.len(), 1, "{text}");
    let cols: Vec<&str> = failed[0].split_whitespace().collect();
    assert_eq!(cols[0].len(), 8, "HH:MM:SS time column: {}", failed[0]);
    assert_eq!(cols[3], me.to_string(), "{}", failed[0]);
    assert_eq!(cols[4], "-2", "{}", failed[0]);
    assert!(
        !text.contains(name),
        "-x hides the successful exec:\n{text}"
    );
}
