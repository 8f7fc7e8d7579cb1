//! `sonde tool biosnoop`: the load (`tests/targets/tools_events.c bio`: 40 writes of 16 KiB
//! with O_DIRECT, each followed by fdatasync) makes one write request per write, which the
//! tool prints as a `W` line of 16384 bytes under the load's name and pid; `-Q` adds the
//! QUE(ms) column, `-d DISK` keeps that disk only, `-c CG` the requests submitted from that
//! cgroup, and `duration` stops the tool by itself. `sonde tool biotop` sums them in the
//! load's row. libbpf-tools' biosnoop and biotop need kprobes (they do not run here): their
//! columns are the reference.

mod common;
mod tools_support;

use common::{Target, TempDir, compile_target, run_sonde_timeout, skip_unless_root, trace_target};
use std::time::{Duration, Instant};

const HEADER: &str = "TIME(s)     COMM           PID     DISK    T    SECTOR     BYTES   LAT(ms)";

/// The tests of this file write to the disk one at a time: each counts its own writes.
static DISK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Starts `tools_events bio FILE` in `dir` (blocked until its go line).
fn load(dir: &TempDir) -> Target {
    let bin = compile_target(dir, "tools_events", &["-O2", "-g", "-pthread"]);
    let file = dir.path().join("bio.dat");
    Target::spawn(&bin, &["bio", file.to_str().expect("utf-8 path")])
}

/// Runs `sonde tool biosnoop FLAGS` on the load; returns the output and the load's pid.
fn run(flags: &[&str], setup: impl FnOnce(&str)) -> (String, String) {
    let dir = TempDir::new("biosnoop");
    let mut target = load(&dir);
    let pid = target.pid();
    setup(&pid);
    let mut args = vec!["tool", "biosnoop"];
    args.extend_from_slice(flags);
    let out = trace_target(&args, &mut target);
    (out.ok_stdout().to_string(), pid)
}

/// The load's 16 KiB write lines, split on whitespace.
fn writes<'a>(text: &'a str, pid: &str) -> Vec<Vec<&'a str>> {
    text.lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|c| c.get(2) == Some(&pid) && c.get(4).is_some_and(|t| t.starts_with('W')))
        .filter(|c| c.get(6) == Some(&"16384"))
        .collect()
}

#[test]
fn biosnoop_prints_each_write_of_the_load() {
    if skip_unless_root("biosnoop_prints_each_write_of_the_load") {
        return;
    }
    let _disk = DISK.lock().unwrap_or_else(|e| e.into_inner());
    let (text, pid) = run(&[], |_| {});
    assert_eq!(text.lines().next(), Some(HEADER), "{text}");
    let rows = writes(&text, &pid);
    // Each write is a request of its own (one may go out with the file's metadata).
    assert!(
        (38..=40).contains(&rows.len()),
        "{} writes:\n{text}",
        rows.len()
    );
    for r in &rows {
        assert_eq!(r.len(), 8, "{r:?}");
        assert_eq!(r[1], "tools_events", "{r:?}");
        let (s, us) = r[0].split_once('.').expect("seconds.micros");
        assert!(s.parse::<u64>().is_ok() && us.len() == 6, "{r:?}");
        let (ms, frac) = r[7].split_once('.').expect("ms.frac");
        assert!(ms.parse::<u64>().is_ok() && frac.len() == 3, "{r:?}");
        assert!(r[5].parse::<u64>().is_ok(), "{r:?}");
    }
    let disk = rows[0][3].to_string();

    // -Q: the queue time before the latency.
    let (text, pid) = run(&["-Q"], |_| {});
    assert_eq!(
        text.lines().next(),
        Some("TIME(s)     COMM           PID     DISK    T    SECTOR     BYTES   QUE(ms) LAT(ms)")
    );
    let rows = writes(&text, &pid);
    assert!((38..=40).contains(&rows.len()), "{text}");
    assert!(
        rows.iter().all(|r| r.len() == 9 && r[7].contains('.')),
        "{text}"
    );

    // -d: that disk's requests only; another disk's: none of the load's.
    let (text, pid) = run(&["-d", &disk], |_| {});
    assert!((38..=40).contains(&writes(&text, &pid).len()), "{text}");
    let rest = text.lines().skip(1).filter(|l| !l.is_empty());
    assert!(
        rest.clone()
            .all(|l| l.split_whitespace().nth(3) == Some(&disk)),
        "{text}"
    );
    let other = std::fs::read_dir("/sys/block")
        .expect("/sys/block")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|d| *d != disk);
    if let Some(other) = other {
        let (text, pid) = run(&["-d", &other], |_| {});
        assert!(writes(&text, &pid).is_empty(), "{text}");
    }
}

#[test]
fn biosnoop_cgroup_keeps_the_cgroups_requests() {
    if skip_unless_root("biosnoop_cgroup_keeps_the_cgroups_requests") {
        return;
    }
    let _disk = DISK.lock().unwrap_or_else(|e| e.into_inner());
    let cg = common::cgroup2_root().join(format!("sonde-biosnoop-{}", std::process::id()));
    std::fs::create_dir(&cg).expect("create a cgroup");
    let path = cg.to_str().expect("utf-8 path").to_string();
    let (text, pid) = run(&["-c", &path], |pid| {
        std::fs::write(cg.join("cgroup.procs"), pid).expect("move into the cgroup");
    });
    let _ = std::fs::remove_dir(&cg);
    assert!((38..=40).contains(&writes(&text, &pid).len()), "{text}");
    let mut rest = text.lines().skip(1).filter(|l| !l.is_empty());
    assert!(
        rest.all(|l| l.split_whitespace().nth(2) == Some(pid.as_str())),
        "only the cgroup's requests:\n{text}"
    );
}

#[test]
fn biosnoop_duration_stops_by_itself() {
    if skip_unless_root("biosnoop_duration_stops_by_itself") {
        return;
    }
    let start = Instant::now();
    let out = run_sonde_timeout(&["tool", "biosnoop", "1"], Duration::from_secs(30));
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.ok_stdout().lines().next(), Some(HEADER));
    assert!(start.elapsed() < Duration::from_secs(20));
}

/// Runs `sonde tool biotop FLAGS 2 1` (one table, after 2 s) on the bio load.
fn biotop(flags: &[&str]) -> (String, String) {
    let dir = TempDir::new("biotop");
    let mut target = load(&dir);
    let pid = target.pid();
    let mut args = vec!["tool", "biotop"];
    args.extend_from_slice(flags);
    args.extend_from_slice(&["2", "1"]);
    let mut tracer = common::Tracer::start(&args);
    assert!(tracer.wait_attached(common::ATTACH_TIMEOUT));
    common::settle();
    target.go();
    assert_eq!(target.wait(Duration::from_secs(10)), Some(0));
    let out = tracer.finish(Duration::from_secs(10));
    (out.ok_stdout().to_string(), pid)
}

#[test]
fn biotop_sums_the_loads_writes() {
    if skip_unless_root("biotop_sums_the_loads_writes") {
        return;
    }
    let _disk = DISK.lock().unwrap_or_else(|e| e.into_inner());
    // libbpf-tools' biotop needs kprobes: its columns are the reference.
    let (text, pid) = biotop(&["-C"]);
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("Tracing... Output every 2 secs. Hit Ctrl-C to end"),
        "{text}"
    );
    assert_eq!(
        lines.next().and_then(|l| l.get(8..18)),
        Some(" loadavg: "),
        "{text}"
    );
    assert_eq!(
        lines.next(),
        Some("PID     COMM             D MAJ MIN DISK       I/O  Kbytes  AVGms"),
        "{text}"
    );
    // The load's 40 writes of 16 KiB (one may go out with the file's metadata), with the
    // few metadata writes its fdatasync() calls submit.
    let rows: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|c| c.len() == 9 && c[0] == pid && c[2] == "W")
        .collect();
    assert_eq!(rows.len(), 1, "{text}");
    let r = &rows[0];
    assert_eq!(r[1], "tools_events", "{text}");
    let io: u64 = r[6].parse().expect("I/O");
    let kb: u64 = r[7].parse().expect("Kbytes");
    assert!(
        (38..=200).contains(&io) && (608..=2048).contains(&kb),
        "{text}"
    );
    assert!(
        r[8].split_once('.').is_some_and(|(_, f)| f.len() == 2),
        "{text}"
    );

    // -r 1 -s bytes: one row, the most kilobytes.
    let (text, _) = biotop(&["-C", "-r", "1", "-s", "bytes"]);
    let table: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("PID"))
        .skip(1)
        .collect();
    assert!(!table[0].is_empty() && table[1].is_empty(), "-r 1: {text}");
    // A bad -s is refused.
    let out = common::run_sonde(&["tool", "biotop", "-s", "nope"]);
    assert_ne!(out.code, Some(0));
    assert!(
        out.stderr.contains("Invalid sort method: nope"),
        "{}",
        out.stderr
    );
}
