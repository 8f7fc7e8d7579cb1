//! `sonde tool runqlat`: bcc's histograms of run-queue latency. Busy loops compete for this
//! machine's CPUs (one more than there are CPUs, at least three) so they wait in the run
//! queue; a three-thread target (tests/targets/threads3.c: each thread sleeps 1 ms 200
//! times) shows that `-p PID` sees every thread of a process, `-L` one histogram per thread,
//! `-P` one per process; `-m`, `-T`, `--pidnss`, `-c` and `[interval [count]]` as in bcc.
//! Side by side with libbpf-tools' runqlat on the same target, the same headers and threads.

mod common;
mod tools_support;

use common::{ATTACH_TIMEOUT, Target, TempDir, Tracer, compile_target, settle, skip_unless_root};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tools_support::libbpf::{installed, side_by_side};

const HEADER_US: &str = "     usecs               : count    distribution";
const HEADER_MS: &str = "     msecs               : count    distribution";

/// Sum of the counts of bcc's histogram lines (`    2 -> 3    : 95    |***|`) in `text`.
fn total(text: &str) -> u64 {
    text.lines()
        .filter(|l| l.contains(" -> "))
        .filter_map(|l| {
            l.split(':')
                .nth(1)?
                .split('|')
                .next()?
                .trim()
                .parse::<u64>()
                .ok()
        })
        .sum()
}

/// The `LABEL = ...` sections of `text` and the total count of each.
fn sections(text: &str, label: &str) -> Vec<(String, u64)> {
    let prefix = format!("{label} = ");
    let mut out: Vec<(String, u64)> = Vec::new();
    for l in text.lines() {
        if let Some(k) = l.strip_prefix(&prefix) {
            out.push((k.to_string(), 0));
        } else if let Some(last) = out.last_mut() {
            last.1 += total(l);
        }
    }
    out
}

fn busy_loops() -> Vec<Child> {
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    (0..(cpus + 1).max(3))
        .map(|_| {
            Command::new("/bin/sh")
                .args(["-c", "while :; do :; done"])
                .stdout(Stdio::null())
                .spawn()
                .expect("busy loop")
        })
        .collect()
}

/// Runs a busy loop under `sonde tool runqlat -p LOOP <flags>` for 1.5 s.
fn run(flags: &[&str]) -> String {
    let mut loops = busy_loops();
    let pid = loops[0].id().to_string();
    let mut args = vec!["tool", "runqlat", "-p", &pid];
    args.extend_from_slice(flags);
    let mut tracer = Tracer::start(&args);
    let attached = tracer.wait_attached(ATTACH_TIMEOUT);
    std::thread::sleep(Duration::from_millis(1500));
    tracer.interrupt();
    let out = tracer.finish(Duration::from_secs(10));
    for c in &mut loops {
        let _ = c.kill();
        let _ = c.wait();
    }
    assert!(attached, "{}", out.stderr);
    format!("{pid}\n{}", out.ok_stdout())
}

/// Runs the three-thread target under `sonde tool runqlat -p PID <flags>`: the output, the
/// pid and the target's thread ids.
fn threads(bin: &std::path::Path, flags: &[&str]) -> (String, String, Vec<String>) {
    let mut target = Target::spawn(bin, &[]);
    let pid = target.pid();
    let mut args = vec!["tool", "runqlat", "-p", &pid];
    args.extend_from_slice(flags);
    let mut tracer = Tracer::start(&args);
    assert!(tracer.wait_attached(ATTACH_TIMEOUT));
    settle();
    target.go();
    std::thread::sleep(Duration::from_millis(100));
    let tids = thread_ids(&pid);
    assert_eq!(target.wait(Duration::from_secs(10)), Some(0));
    tracer.interrupt();
    let out = tracer.finish(Duration::from_secs(10));
    (out.ok_stdout().to_string(), pid, tids)
}

/// The thread ids of process `pid`, sorted.
fn thread_ids(pid: &str) -> Vec<String> {
    let mut tids: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    tids.sort();
    tids
}

#[test]
fn runqlat_histogram_of_a_busy_loop() {
    if skip_unless_root("runqlat_histogram_of_a_busy_loop") {
        return;
    }
    let text = run(&[]);
    assert!(
        text.contains("\nTracing run queue latency... Hit Ctrl-C to end.\n\n"),
        "{text}"
    );
    assert!(
        text.contains(&format!("\n{HEADER_US}\n         0 -> 1          : ")),
        "{text}"
    );
    assert!(
        total(&text) >= 3,
        "a busy loop sharing CPUs waits several times in 1.5 s:\n{text}"
    );

    let text = run(&["-m", "-P"]);
    let pid = text.lines().next().unwrap().to_string();
    let s = sections(&text, "pid");
    assert_eq!(s.len(), 1, "{text}");
    assert_eq!(s[0].0, format!("{pid} sh"), "{text}");
    assert!(s[0].1 >= 3, "{text}");
    assert!(text.contains(HEADER_MS), "{text}");
    assert!(!text.contains("usecs"), "{text}");
}

#[test]
fn runqlat_pid_sees_every_thread_of_the_process() {
    if skip_unless_root("runqlat_pid_sees_every_thread_of_the_process") {
        return;
    }
    let dir = TempDir::new("runqlat-threads");
    let bin = compile_target(&dir, "threads3", &["-O2", "-pthread"]);

    // -L: one histogram per thread, for the three threads, each woken about 200 times (a
    // wakeup can come before the tracer sees the thread sleep).
    let (out, _, tids) = threads(&bin, &["-L"]);
    assert_eq!(tids.len(), 3, "{tids:?}");
    let s = sections(&out, "tid");
    let mut seen: Vec<String> = s
        .iter()
        .map(|(k, _)| k.split(' ').next().unwrap().to_string())
        .collect();
    seen.sort();
    assert_eq!(seen, tids, "{out}");
    for (k, n) in &s {
        assert!(k.ends_with(" threads3"), "{out}");
        assert!((190..400).contains(n), "{k}: {n}\n{out}");
    }

    // -P: one histogram, the process, holding the three threads' wakeups.
    let (out, pid, _) = threads(&bin, &["-P"]);
    let s = sections(&out, "pid");
    assert_eq!(s.len(), 1, "{out}");
    assert_eq!(s[0].0, format!("{pid} threads3"), "{out}");
    assert!((570..1200).contains(&s[0].1), "{out}");

    // Plain -p: one histogram with them all; --pidnss: one for the initial pid namespace.
    let (out, _, _) = threads(&bin, &[]);
    assert!((570..1200).contains(&total(&out)), "{out}");
    let (out, _, _) = threads(&bin, &["--pidnss"]);
    let ns = std::fs::read_link("/proc/self/ns/pid").unwrap();
    let ns = ns.to_string_lossy();
    let inum = ns.trim_start_matches("pid:[").trim_end_matches(']');
    // (A thread that has exited reads namespace 0 in its last switches: a few.)
    let s = sections(&out, "pidns");
    let mine = s.iter().find(|(k, _)| k == inum).map_or(0, |(_, n)| *n);
    assert!((570..1200).contains(&mine), "{out}");
    let others: u64 = s.iter().filter(|(k, _)| k != inum).map(|(_, n)| n).sum();
    assert!(others < 10, "{out}");
}

#[test]
fn runqlat_interval_count_and_timestamps() {
    if skip_unless_root("runqlat_interval_count_and_timestamps") {
        return;
    }
    // `-T 1 2`: two one-second histograms, each under an empty line and the time; then exit.
    let mut loops = busy_loops();
    let out = common::run_sonde_timeout(
        &["tool", "runqlat", "-mT", "1", "2"],
        Duration::from_secs(30),
    );
    for c in &mut loops {
        let _ = c.kill();
        let _ = c.wait();
    }
    assert_eq!(out.code, Some(0), "{out:?}");
    let text = out.ok_stdout();
    let lines: Vec<&str> = text.lines().collect();
    let stamps: Vec<usize> = (0..lines.len())
        .filter(|&i| {
            let b = lines[i].as_bytes();
            b.len() == 8 && b[2] == b':' && b[5] == b':'
        })
        .collect();
    assert_eq!(stamps.len(), 2, "{text}");
    for i in stamps {
        assert_eq!(lines[i - 1], "", "{text}");
        assert_eq!(lines[i + 1], HEADER_MS, "{text}");
    }
}

#[test]
fn runqlat_cgroup_filters_on_the_running_tasks_cgroup() {
    if skip_unless_root("runqlat_cgroup_filters_on_the_running_tasks_cgroup") {
        return;
    }
    let root = common::cgroup2_root().to_str().expect("utf-8 path");
    // An empty cgroup runs nothing: no histogram. The root cgroup holds every task (those
    // of the cgroups below it too): the busy loops' latencies.
    let cg = format!("{root}/sonde-runqlat-{}", std::process::id());
    std::fs::create_dir(&cg).expect("create a cgroup");
    let mut loops = busy_loops();
    let empty = common::run_sonde_timeout(
        &["tool", "runqlat", "-c", &cg, "1", "1"],
        Duration::from_secs(30),
    );
    let root = common::run_sonde_timeout(
        &["tool", "runqlat", "-c", root, "1", "1"],
        Duration::from_secs(30),
    );
    for c in &mut loops {
        let _ = c.kill();
        let _ = c.wait();
    }
    let _ = std::fs::remove_dir(&cg);
    assert_eq!(total(empty.ok_stdout()), 0, "{empty:?}");
    assert!(!empty.ok_stdout().contains("usecs"), "{empty:?}");
    assert!(total(root.ok_stdout()) > 0, "{root:?}");
}

#[test]
fn runqlat_side_by_side_with_libbpf_tools() {
    if skip_unless_root("runqlat_side_by_side_with_libbpf_tools") {
        return;
    }
    if installed("runqlat").is_none() {
        return;
    }
    let dir = TempDir::new("runqlat-bcc");
    let bin = compile_target(&dir, "threads3", &["-O2", "-pthread"]);
    for flags in [&["-L"][..], &["-P", "-m"]] {
        let mut target = Target::spawn(&bin, &[]);
        let pid = target.pid();
        let mut args = vec!["-p", &pid];
        args.extend_from_slice(flags);
        let (sonde, bcc) = side_by_side("runqlat", &args, &args, &mut target);
        let (mine, theirs) = (sonde.ok_stdout().to_string(), bcc.stdout);
        let why = format!("{flags:?}\nsonde:\n{mine}\nbcc:\n{theirs}");
        assert_eq!(mine.lines().next(), theirs.lines().next(), "{why}");
        let label = if flags.contains(&"-L") { "tid" } else { "pid" };
        let (mut m, mut t) = (sections(&mine, label), sections(&theirs, label));
        m.sort();
        t.sort();
        // The same threads (or process), with their names; each counts the same wakeups,
        // within 5% (the two tracers' own activity can preempt the target differently).
        assert_eq!(
            m.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            t.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            "{why}"
        );
        assert!(!m.is_empty(), "{why}");
        for ((_, a), (_, b)) in m.iter().zip(&t) {
            assert!(a.abs_diff(*b) * 20 <= *b.max(a), "{why}");
        }
        let header = if flags.contains(&"-m") {
            HEADER_MS
        } else {
            HEADER_US
        };
        assert!(mine.contains(header) && theirs.contains(header), "{why}");
    }
}
