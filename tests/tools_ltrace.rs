//! The ltrace tool: `ltrace -c` style counts and times of a library's functions called by a
//! `-c` child.

mod common;

use common::{TempDir, build_target, run_sonde_timeout, skip_unless_root};
use std::time::Duration;

#[test]
fn ltrace_counts_the_libc_calls_of_a_command() {
    if skip_unless_root("ltrace_counts_the_libc_calls_of_a_command") {
        return;
    }
    let dir = TempDir::new("ltrace");
    let bin = build_target(&dir, "burst");
    // burst makes its getppid calls through libc's syscall().
    let cmd = format!("{} 1000", bin.display());
    let out = run_sonde_timeout(
        &["tool", "ltrace", "-c", &cmd, "libc:sysc*"],
        Duration::from_secs(60),
    );
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        lines[0],
        "Tracing calls to \"libc:sysc*\"... Hit Ctrl-C to end."
    );
    assert_eq!(
        lines[1],
        "% time     seconds  usecs/call     calls      function"
    );
    let row: Vec<&str> = lines[3].split_whitespace().collect();
    assert_eq!(
        (row[0], row[3], row[4]),
        ("100.00", "1000", "syscall"),
        "{}",
        out.stdout
    );
    let total: Vec<&str> = lines[5].split_whitespace().collect();
    assert_eq!(
        (total[0], total[2], total[3]),
        ("100.00", "1000", "total"),
        "{}",
        out.stdout
    );
    assert_eq!(row[1], total[1], "the only function has all the time");
}
