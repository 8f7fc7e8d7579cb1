//! `sonde tool runqslower`: the three-thread target (`tests/targets/threads3.c`: 200 sleeps of
//! 1 ms per thread) waits in the run queue after each wakeup; with a threshold of 1 us
//! nearly every wait prints a line with the thread's name and id. `-p` keeps the process's threads, `-t`
//! one thread, `-P` adds the previous task, a large threshold prints none. Side by side with
//! /usr/sbin/runqslower, the same header lines and the same number of rows for the target,
//! within 2% (both trace the same scheduler events; a wait at the threshold may fall either
//! side in each).

mod common;
mod tools_support;

use common::{ATTACH_TIMEOUT, Target, TempDir, Tracer, compile_target, settle, skip_unless_root};
use std::time::Duration;
use tools_support::libbpf::{installed, side_by_side};

const BANNER_1: &str = "Tracing run queue latency higher than 1 us";
const HEADER: &str = "TIME     COMM             TID           LAT(us)";

/// Runs the target under `sonde tool runqslower <flags>` (`PID` in flags is the target's
/// pid); returns the output and the pid.
fn run(bin: &std::path::Path, flags: &[&str]) -> (String, String) {
    let mut target = Target::spawn(bin, &[]);
    let pid = target.pid();
    let mut args = vec!["tool", "runqslower"];
    args.extend(
        flags
            .iter()
            .map(|f| if *f == "PID" { pid.as_str() } else { f }),
    );
    let mut tracer = Tracer::start(&args);
    assert!(tracer.wait_attached(ATTACH_TIMEOUT));
    settle();
    target.go();
    assert_eq!(target.wait(Duration::from_secs(10)), Some(0));
    std::thread::sleep(Duration::from_millis(200));
    tracer.interrupt();
    let out = tracer.finish(Duration::from_secs(10));
    (out.ok_stdout().to_string(), pid)
}

/// The rows (split on whitespace) whose COMM is the target's.
fn target_rows(text: &str) -> Vec<Vec<&str>> {
    text.lines()
        .skip(2)
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|c| c.get(1) == Some(&"threads3"))
        .collect()
}

#[test]
fn runqslower_prints_each_wait_of_the_traced_threads() {
    if skip_unless_root("runqslower_prints_each_wait_of_the_traced_threads") {
        return;
    }
    let dir = TempDir::new("runqslower");
    let bin = compile_target(&dir, "threads3", &["-O2", "-pthread"]);

    // -p PID 1: (nearly) every wait of the three threads (200 wakeups each), and no other process.
    let (text, pid) = run(&bin, &["-p", "PID", "1"]);
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(BANNER_1), "{text}");
    assert_eq!(lines.next(), Some(HEADER), "{text}");
    let rows = target_rows(&text);
    let all = text.lines().skip(2).filter(|l| !l.is_empty()).count();
    assert_eq!(rows.len(), all, "only the target: {text}");
    assert!(rows.len() >= 500, "{} rows:\n{text}", rows.len());
    let mut tids: Vec<&str> = rows.iter().map(|r| r[2]).collect();
    tids.sort();
    tids.dedup();
    assert_eq!(tids.len(), 3, "the three threads: {tids:?}");
    assert!(tids.contains(&pid.as_str()), "{tids:?}");
    for r in &rows {
        assert_eq!(r.len(), 4, "{r:?}");
        assert!(
            r[0].len() == 8 && r[0].as_bytes()[2] == b':',
            "HH:MM:SS: {r:?}"
        );
        assert!(r[3].parse::<u64>().is_ok(), "{r:?}");
    }

    // -t TID: the main thread only; -P: the previous task's name and id.
    let (text, pid) = run(&bin, &["-t", "PID", "-P", "1"]);
    assert!(
        text.lines()
            .nth(1)
            .is_some_and(|h| h == format!("{HEADER} PREV COMM        PREV TID")),
        "{text}"
    );
    let rows = target_rows(&text);
    assert!(rows.len() >= 150, "{} rows:\n{text}", rows.len());
    assert!(rows.iter().all(|r| r[2] == pid && r.len() >= 6), "{text}");

    // A threshold of 10 s: none of the target's 1 ms sleeps waits that long.
    let (text, _) = run(&bin, &["-p", "PID", "10000000"]);
    assert_eq!(
        text.lines().next(),
        Some("Tracing run queue latency higher than 10000000 us")
    );
    assert!(target_rows(&text).is_empty(), "{text}");

    // 0 is refused, as libbpf-tools refuses it.
    let out = common::run_sonde(&["tool", "runqslower", "0"]);
    assert_ne!(out.code, Some(0));
    assert!(
        out.stderr.contains("Invalid delay (in us): 0"),
        "{}",
        out.stderr
    );
}

#[test]
fn runqslower_side_by_side_with_libbpf_tools() {
    if skip_unless_root("runqslower_side_by_side_with_libbpf_tools") {
        return;
    }
    if installed("runqslower").is_none() {
        return;
    }
    let dir = TempDir::new("runqslower-bcc");
    let bin = compile_target(&dir, "threads3", &["-O2", "-pthread"]);
    let mut target = Target::spawn(&bin, &[]);
    let pid = target.pid();
    let args = ["-p", pid.as_str(), "1"];
    let (sonde, bcc) = side_by_side("runqslower", &args, &args, &mut target);
    let (mine, theirs) = (sonde.ok_stdout().to_string(), bcc.stdout);
    let why = format!("sonde:\n{mine}\nbcc:\n{theirs}");
    assert_eq!(
        mine.lines().take(2).collect::<Vec<_>>(),
        theirs.lines().take(2).collect::<Vec<_>>(),
        "{why}"
    );
    let (m, t) = (target_rows(&mine).len(), target_rows(&theirs).len());
    assert!(
        t >= 500 && m.abs_diff(t) * 50 <= t,
        "sonde {m} rows, bcc {t}\n{why}"
    );
}
