//! `sonde tool allocrecord`: the malloc-family calls of `tests/targets/allocpattern.c` (three
//! threads taking turns through a fragmenting pattern of every function) recorded from `-c`
//! and from `-p`, read back with `sonde_drivers::allocs::read`, and compared with what the
//! program says it did.
//!
//! Between its two marker calls (malloc(3) ... free of malloc(5)) the recording holds exactly
//! the program's calls: per function, the same counts; the live bytes computed from the
//! recording peak at the program's peak_live and end at its end_live; every block freed or
//! reallocated was handed out before; three threads. One difference is glibc's, not the
//! recorder's: glibc before 2.38 makes aligned_alloc and memalign one function (one address),
//! so a uprobe cannot tell their calls apart: their sum is compared. Outside the markers the
//! recording holds libc's own calls (thread creation's calloc, the frees of each thread's
//! tcache when it exits): they are counted and shown, not compared.
//!
//! Attached to a process in the middle of a stream of calls (`tools_work churn`), the
//! recording starts cleanly: a return whose entry came before the attach is counted as
//! unstarted and leaves no guard behind, so every later call is recorded.

mod alloc_support;
mod common;
mod tools_support;

use alloc_support::{between_markers, build, program_report, spawn_waiting};
use common::{
    ATTACH_TIMEOUT, Target, TempDir, Tracer, run_sonde_timeout, settle, skip_unless_root,
};
use sonde_allocs::ops::{Call, Recording};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The tests of this file run one at a time: tracers of malloc side by side skip each
/// other's probes (the kernel's recursion guard).
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// Compares the recording's calls between the markers with the program's report.
fn check(rec: &Recording, program: &HashMap<String, u64>) {
    assert_eq!(rec.lost_events, 0, "events were lost");
    let ops = between_markers(rec);
    let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
    for o in ops {
        *counts.entry(o.call.name()).or_default() += 1;
    }
    let count = |n: &str| counts.get(n).copied().unwrap_or(0);
    for f in [
        "malloc",
        "calloc",
        "realloc",
        "free",
        "posix_memalign",
        "valloc",
    ] {
        assert_eq!(
            count(f),
            program[f],
            "{f}: recorded {counts:?}, program {program:?}"
        );
    }
    // glibc's aligned_alloc is memalign (one address): the two are recorded as one.
    assert_eq!(
        count("aligned_alloc") + count("memalign"),
        program["aligned_alloc"] + program["memalign"],
        "{counts:?}"
    );
    // Live bytes through the calls: every block freed was handed out before.
    let mut live: HashMap<u64, u64> = HashMap::new();
    let (mut now, mut peak) = (0u64, 0u64);
    for o in ops {
        if matches!(o.call, Call::Free | Call::Realloc) && o.ptr != 0 {
            let size = live
                .remove(&o.ptr)
                .unwrap_or_else(|| panic!("{o:?} hands in a block never handed out"));
            now -= size;
        }
        if o.call.replayed() && o.call != Call::Free && o.result != 0 {
            assert!(
                live.insert(o.result, o.size).is_none(),
                "{o:?}: block handed out twice"
            );
            now += o.size;
        }
        peak = peak.max(now);
    }
    assert_eq!(peak, program["peak_live"], "peak live bytes");
    assert_eq!(now, program["end_live"], "live bytes at the end");
    let tids: HashSet<u32> = ops.iter().map(|o| o.tid).collect();
    assert_eq!(tids.len(), 3, "threads: {tids:?}");
    assert!(ops.windows(2).all(|w| w[0].time_ns <= w[1].time_ns));
    assert!(ops.iter().any(|o| o.stack != 0), "no stack recorded");
    let outside: BTreeMap<&str, usize> =
        rec.ops
            .iter()
            .filter(|o| !ops.contains(o))
            .fold(BTreeMap::new(), |mut m, o| {
                *m.entry(o.call.name()).or_default() += 1;
                m
            });
    eprintln!("libc's own calls around the program's: {outside:?}");
}

#[test]
fn allocrecord_of_a_command_holds_its_calls() {
    if skip_unless_root("allocrecord_of_a_command_holds_its_calls") {
        return;
    }
    let _serial = one_at_a_time();
    let dir = TempDir::new("allocrecord-c");
    let bin = build(&dir);
    let file = dir.path().join("app.allocs");
    let out = run_sonde_timeout(
        &[
            "tool",
            "allocrecord",
            "-c",
            bin.to_str().unwrap(),
            "-o",
            file.to_str().unwrap(),
        ],
        Duration::from_secs(120),
    );
    let stdout = out.ok_stdout();
    let program = program_report(stdout);
    let rec = sonde_drivers::allocs::read(&file).unwrap_or_else(|d| panic!("{}", d.message));
    check(&rec, &program);
    assert_eq!(rec.target, bin.to_str().unwrap());
    // The whole recording of a command (every call of the process, libc's own included) has the
    // heap peak glibc's memusage measures of the same program (deterministic: its threads take
    // turns), to the byte, but for one thing memusage itself changes: its library, preloaded,
    // is one more module with thread-local storage, so glibc's vector of each thread's TLS
    // blocks (a `calloc(N, 16)` when the thread starts, before the program's start marker) is
    // one 16-byte entry longer there (measured: calloc(17, 16) without it, 288 bytes with it).
    let reference = Command::new("memusage")
        .arg(&bin)
        .output()
        .expect("memusage runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&reference.stderr),
        String::from_utf8_lossy(&reference.stdout)
    );
    let peak: u64 = text
        .split("heap peak: ")
        .nth(1)
        .and_then(|t| t.split(',').next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no heap peak in memusage's report:\n{text}"));
    assert_eq!(memusage_heap_peak(&rec, 16), peak, "{text}");
    assert_eq!((rec.unfinished, rec.unstarted), (0, 0));
    // The summary line: every recorded call, per function.
    let summary = stdout
        .lines()
        .find(|l| l.starts_with("allocrecord: "))
        .unwrap_or_else(|| panic!("no summary in:\n{stdout}"));
    let expected = format!(
        "allocrecord: {} calls of {} recorded to {} (malloc {}, ",
        rec.ops.len(),
        bin.display(),
        file.display(),
        rec.ops.iter().filter(|o| o.call == Call::Malloc).count()
    );
    assert!(
        summary.starts_with(&expected),
        "{summary}\nexpected: {expected}"
    );
    assert!(
        summary.ends_with("; 0 unfinished, 0 unstarted; 0 lost)"),
        "{summary}"
    );
    // Cut anywhere before its end, or not a recording at all: refused with the offset.
    let bytes = std::fs::read(&file).unwrap();
    let cut = dir.path().join("cut.allocs");
    std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let e = sonde_drivers::allocs::read(&cut).unwrap_err().message;
    assert!(
        e.starts_with(&format!("{} was cut at byte ", cut.display())),
        "{e}"
    );
    assert!(e.contains(" calls): its recording did not end"), "{e}");
    let e = sonde_drivers::allocs::read(&bin).unwrap_err().message;
    assert!(e.contains("at byte 0: not a sonde recording"), "{e}");
}

#[test]
fn allocrecord_of_a_running_process_holds_its_calls_only() {
    if skip_unless_root("allocrecord_of_a_running_process_holds_its_calls_only") {
        return;
    }
    let _serial = one_at_a_time();
    let dir = TempDir::new("allocrecord-p");
    let bin = build(&dir);
    let file = dir.path().join("app.allocs");
    let (mut target, mut target_out, pid) = spawn_waiting(&bin);
    let mut tracer = Tracer::start(&[
        "tool",
        "allocrecord",
        "-p",
        &pid.to_string(),
        "-o",
        file.to_str().unwrap(),
    ]);
    assert!(tracer.wait_attached(ATTACH_TIMEOUT), "sonde did not attach");
    settle();
    // Another allocpattern, untraced, allocates at the same time.
    let mut other = Command::new(&bin)
        .stdout(Stdio::piped())
        .spawn()
        .expect("the other allocpattern starts");
    // SAFETY: kill(2) of the child we started and have not reaped.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGUSR1) };
    let mut report = String::new();
    std::io::Read::read_to_string(&mut target_out, &mut report).unwrap();
    let (status, _) = common::wait_with_timeout(&mut target, Duration::from_secs(60));
    assert!(status.is_some_and(|s| s.success()), "allocpattern failed");
    let other_pid = other.id();
    let (status, _) = common::wait_with_timeout(&mut other, Duration::from_secs(60));
    assert!(
        status.is_some_and(|s| s.success()),
        "the other allocpattern failed"
    );
    // sonde ends when the process it records exits.
    let out = tracer.finish(Duration::from_secs(30));
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let rec = sonde_drivers::allocs::read(&file).unwrap_or_else(|d| panic!("{}", d.message));
    check(&rec, &program_report(&report));
    assert_eq!(
        (rec.pid, rec.target.clone()),
        (Some(pid), format!("pid {pid}"))
    );
    // Only the recorded process's threads: the other allocpattern's calls are not there.
    let tids: HashSet<u32> = rec.ops.iter().map(|o| o.tid).collect();
    assert!(!tids.contains(&other_pid), "the other process was recorded");
    assert_eq!(tids.len(), 3, "{tids:?}");
    assert!(tids.contains(&pid));
}

#[test]
fn allocrecord_stops_after_its_duration() {
    if skip_unless_root("allocrecord_stops_after_its_duration") {
        return;
    }
    let _serial = one_at_a_time();
    let dir = TempDir::new("allocrecord-d");
    let bin = build(&dir);
    let file = dir.path().join("idle.allocs");
    let (mut target, _out, pid) = spawn_waiting(&bin);
    let started = Instant::now();
    let out = run_sonde_timeout(
        &[
            "tool",
            "allocrecord",
            "-p",
            &pid.to_string(),
            "-o",
            file.to_str().unwrap(),
            "1",
        ],
        Duration::from_secs(60),
    );
    let took = started.elapsed();
    let _ = target.kill();
    let _ = target.wait();
    assert!(!out.timed_out && out.code == Some(0), "{}", out.stderr);
    assert!(took >= Duration::from_secs(1), "stopped after {took:?}");
    let rec = sonde_drivers::allocs::read(&file).unwrap_or_else(|d| panic!("{}", d.message));
    // The process waited for its signal all along: no call.
    assert_eq!(rec.ops.iter().filter(|o| o.call.replayed()).count(), 0);
    assert!(
        out.stdout.contains(&format!(
            "allocrecord: {} calls of pid {pid} recorded to",
            rec.ops.len()
        )),
        "{}",
        out.stdout
    );
}

#[test]
fn allocrecord_attached_in_a_stream_of_calls_records_every_later_call() {
    if skip_unless_root("allocrecord_attached_in_a_stream_of_calls_records_every_later_call") {
        return;
    }
    let _serial = one_at_a_time();
    let dir = TempDir::new("allocrecord-churn");
    let bin = tools_support::build_work(&dir);
    let file = dir.path().join("churn.allocs");
    // malloc(32)+free without end until the go line, then 5000 malloc(777)+free.
    let mut target = Target::spawn(&bin, &["now", "churn", "5000"]);
    let pid = target.pid();
    let mut tracer = Tracer::start(&[
        "tool",
        "allocrecord",
        "-p",
        &pid,
        "-o",
        file.to_str().unwrap(),
    ]);
    if !tracer.wait_attached(ATTACH_TIMEOUT) {
        panic!(
            "sonde did not attach: {}",
            tracer.finish(Duration::from_secs(5)).stderr
        );
    }
    settle();
    target.go();
    assert_eq!(target.wait(Duration::from_secs(60)), Some(0));
    let out = tracer.finish(Duration::from_secs(30));
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let rec = sonde_drivers::allocs::read(&file).unwrap_or_else(|d| panic!("{}", d.message));
    assert_eq!(rec.lost_events, 0);
    // Return probes attach before entry probes: the calls that returned between the two
    // are unstarted (as many as the churn made meanwhile), and none is in flight at the
    // end (the process exited).
    eprintln!("unstarted: {}", rec.unstarted);
    assert_eq!(rec.unfinished, 0);
    let blocks: HashSet<u64> = rec
        .ops
        .iter()
        .filter(|o| o.call == Call::Malloc && o.size == 777)
        .map(|o| o.result)
        .collect();
    let mallocs = rec
        .ops
        .iter()
        .filter(|o| o.call == Call::Malloc && o.size == 777)
        .count();
    assert_eq!(mallocs, 5000, "malloc(777) recorded");
    let frees = rec
        .ops
        .iter()
        .filter(|o| o.call == Call::Free && blocks.contains(&o.ptr))
        .count();
    assert!(frees >= 5000, "frees of the 777-byte blocks: {frees}");
    // The churn before them was recorded too, malloc and free in turn.
    let churn = rec
        .ops
        .iter()
        .filter(|o| o.call == Call::Malloc && o.size == 32)
        .count();
    assert!(churn > 0, "no malloc(32) recorded");
}

/// The heap as glibc's memusage counts it, from a recording: malloc, calloc and realloc
/// (`realloc(p, 0)` a free) add what they hand out, free takes back what it frees, blocks it
/// never saw handed out count nothing, and the memalign family is not counted. Each calloc
/// made before the program's start marker (glibc's own: a thread's vector of TLS blocks)
/// counts `dtv_growth` bytes more. Returns the peak.
fn memusage_heap_peak(rec: &Recording, dtv_growth: u64) -> u64 {
    let start = between_markers(rec).as_ptr() as usize - rec.ops.as_ptr() as usize;
    let start = start / std::mem::size_of::<sonde_allocs::ops::Op>();
    let mut live: HashMap<u64, u64> = HashMap::new();
    let (mut now, mut peak) = (0i64, 0i64);
    for (i, o) in rec.ops.iter().enumerate() {
        let mut o = *o;
        if o.call == Call::Calloc && i < start {
            o.size += dtv_growth;
        }
        let counted = matches!(
            o.call,
            Call::Malloc | Call::Calloc | Call::Realloc | Call::Free
        );
        if !counted {
            continue;
        }
        if o.ptr != 0
            && let Some(size) = live.remove(&o.ptr)
        {
            now -= size as i64;
        }
        if o.call != Call::Free && o.result != 0 {
            live.insert(o.result, o.size);
            now += o.size as i64;
        }
        peak = peak.max(now);
    }
    peak as u64
}
