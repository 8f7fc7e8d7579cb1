//! Limits are reported, never silent: a full map and events lost in the ring buffer.
//! Traced scripts filter on the `-c` child's pid (other tracers may run on this machine).

mod common;

use common::{TempDir, build_target, run_sonde_timeout, skip_unless_root};
use std::time::Duration;

/// Updates beyond a map's 4096 entries are counted in the kernel and reported at exit, and
/// the map holds exactly its capacity.
#[test]
fn map_full_is_reported_with_the_number_of_failed_updates() {
    if skip_unless_root("map_full_is_reported_with_the_number_of_failed_updates") {
        return;
    }
    let dir = TempDir::new("mapfull");
    let bin = build_target(&dir, "burst");
    let cmd = format!("{} 5000", bin.display());
    // Each event has its own timestamp, so 5000 events want 5000 keys.
    let prog = "tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @[nsecs] = count(); }";
    let out = run_sonde_timeout(&["-q", "-c", &cmd, "-e", prog], Duration::from_secs(30));
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let entries = out.stdout.lines().filter(|l| l.starts_with("@[")).count();
    assert_eq!(entries, 4096);
    assert!(
        out.stderr.contains("Warning: 904 map updates failed because a map was full (max 4096 entries; raise config max_map_keys)"),
        "stderr: {}",
        out.stderr
    );
}

/// Every printf event is either printed or counted as lost: printed + lost = fired.
#[test]
fn lost_events_are_counted_exactly() {
    if skip_unless_root("lost_events_are_counted_exactly") {
        return;
    }
    let dir = TempDir::new("lost");
    let bin = build_target(&dir, "burst");
    let n = 200_000;
    let cmd = format!("{} {n}", bin.display());
    let prog = "tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { printf(\"%s %s %s %s\\n\", comm, comm, comm, comm); }";
    let out = run_sonde_timeout(&["-q", "-c", &cmd, "-e", prog], Duration::from_secs(60));
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let printed = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("burst burst burst burst"))
        .count();
    let lost: usize = out
        .stderr
        .lines()
        .find_map(|l| {
            l.strip_prefix("Lost ")?
                .strip_suffix(" events")?
                .parse()
                .ok()
        })
        .unwrap_or(0);
    assert_eq!(
        printed + lost,
        n,
        "printed {printed}, lost {lost}; stderr: {}",
        out.stderr
    );
}

/// `config = { max_map_keys = N }` sizes the maps: 5000 keys fit in 10000.
#[test]
fn max_map_keys_config_raises_the_limit() {
    if skip_unless_root("max_map_keys_config_raises_the_limit") {
        return;
    }
    let dir = TempDir::new("mapkeys");
    let bin = build_target(&dir, "burst");
    let cmd = format!("{} 5000", bin.display());
    let prog = "config = { max_map_keys = 10000 } tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @[nsecs] = count(); }";
    let out = run_sonde_timeout(&["-q", "-c", &cmd, "-e", prog], Duration::from_secs(30));
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(
        out.stdout.lines().filter(|l| l.starts_with("@[")).count(),
        5000
    );
    assert!(
        !out.stderr.contains("map was full"),
        "stderr: {}",
        out.stderr
    );
}
