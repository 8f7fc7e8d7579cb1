//! `pid` and `tid` as seen from sonde's own pid namespace (bpftrace's `curr_ns`, the
//! default), `pid(init)`/`tid(init)` from the initial one: sonde started as the first
//! process of a new pid namespace (`unshare --pid`) sees itself as pid 1.

mod common;

use common::{TIMEOUT, run_command, skip_unless_root, sonde};
use std::process::Command;

#[test]
fn pid_and_tid_are_read_in_sondes_pid_namespace() {
    if skip_unless_root("pid_and_tid_are_read_in_sondes_pid_namespace") {
        return;
    }
    let prog = r#"BEGIN { printf("%d, %d, %d, %d, %d, %d\n", pid, pid(curr_ns), pid(init), tid, tid(curr_ns), tid(init)); exit(); }"#;
    let mut cmd = Command::new("unshare");
    cmd.args(["--fork", "--pid", "--mount-proc", "--kill-child"])
        .arg(sonde())
        .args(["-q", "-e", prog]);
    let out = run_command(cmd, TIMEOUT);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let line = out.stdout.lines().next().unwrap_or_default();
    let f: Vec<u64> = line.split(", ").filter_map(|v| v.parse().ok()).collect();
    assert_eq!(f.len(), 6, "{}", out.stdout);
    // Inside: pid 1; outside: the same task's pid in the initial namespace.
    assert_eq!((f[0], f[1], f[3], f[4]), (1, 1, 1, 1), "{line}");
    assert!(f[2] > 1 && f[2] == f[5], "{line}");
    // Outside any new namespace, both are the same.
    let out = common::run_sonde(&["-q", "-e", prog]);
    let line = out
        .ok_stdout()
        .lines()
        .next()
        .unwrap_or_default()
        .to_string();
    let f: Vec<u64> = line.split(", ").filter_map(|v| v.parse().ok()).collect();
    assert!(
        f.len() == 6 && f.iter().all(|v| *v == f[0] && *v > 1),
        "{line}"
    );
}
