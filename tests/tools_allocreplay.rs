//! `sonde tool allocreplay`: recordings of `tests/targets/allocpattern.c` (three threads
//! taking turns through a fragmenting pattern of every malloc-family function), made with
//! `sonde tool allocrecord` from `-c` and from `-p`, and of `sort` on a generated file,
//! replayed against glibc, jemalloc and tcmalloc.
//!
//! What is compared, per allocator: the calls the replay made, per function, equal the
//! recording's (computed here from the recording read back, frees of blocks the recording
//! never saw handed out left out and counted apart); between the program's markers they
//! equal what the program says it did; the replay's live bytes peak and end where the
//! recording's do (the program's own, its markers' blocks excluded, where it says). The
//! ranking of the allocators by peak RSS is the program's own (`vmhwm_kb`, run under each
//! with LD_PRELOAD). `-f json`, `-f csv`, `--post`, `--chart`, `--threads-free` and the
//! refusals (a missing library, a foreign file, a truncated recording) are checked on the
//! same recordings.

mod alloc_support;
mod common;

use alloc_support::{between_markers, build, program_report, spawn_waiting};
use common::{TempDir, run_sonde_timeout, skip_unless_root};
use sonde_allocs::ops::{Call, Recording};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// A replay of allocpattern's recording against three allocators takes a few seconds; the
/// bound leaves room for a loaded machine.
const REPLAY_TIMEOUT: Duration = Duration::from_secs(180);

const ALLOCATORS: [&str; 3] = ["glibc", "jemalloc", "tcmalloc"];

/// The tests of this file record one at a time: tracers of malloc side by side skip each
/// other's probes (the kernel's recursion guard).
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// `sonde tool allocrecord -c CMD -o FILE`: the program's report.
fn record_command(cmd: &str, file: &Path) -> String {
    let _serial = one_at_a_time();
    let out = run_sonde_timeout(
        &[
            "tool",
            "allocrecord",
            "-c",
            cmd,
            "-o",
            file.to_str().unwrap(),
        ],
        REPLAY_TIMEOUT,
    );
    out.ok_stdout().to_string()
}

/// What a replay of `rec` must do, computed here: calls per function (frees and reallocs
/// of blocks never handed out in the recording left out, and failed calls), peak and end
/// live bytes.
struct Expected {
    calls: BTreeMap<String, u64>,
    unknown: u64,
    peak_live: u64,
    end_live: u64,
}

fn expected(rec: &Recording) -> Expected {
    let mut e = Expected {
        calls: BTreeMap::new(),
        unknown: 0,
        peak_live: 0,
        end_live: 0,
    };
    let mut live: HashMap<u64, u64> = HashMap::new();
    let mut now = 0u64;
    for o in rec.ops.iter().filter(|o| o.call.replayed()) {
        let known = o.ptr == 0 || live.contains_key(&o.ptr);
        if matches!(o.call, Call::Free | Call::Realloc) && !known {
            e.unknown += 1;
            if o.call == Call::Free || o.result == 0 {
                continue;
            }
        } else if o.call != Call::Free && o.result == 0 && !(o.call == Call::Realloc && o.size == 0)
        {
            continue;
        }
        *e.calls.entry(o.call.name().to_string()).or_default() += 1;
        if o.ptr != 0 && known {
            now -= live.remove(&o.ptr).unwrap_or(0);
        }
        if o.call != Call::Free && o.result != 0 {
            live.insert(o.result, o.size);
            now += o.size;
        }
        e.peak_live = e.peak_live.max(now);
    }
    e.end_live = now;
    e
}

/// The maps of a `-f json` run: each map's entries by their key (a tuple's parts joined by
/// `,`, as sonde prints them).
fn json_maps(stdout: &str) -> HashMap<String, serde_json::Value> {
    let mut maps = HashMap::new();
    for line in stdout.lines() {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: `{line}`"));
        if v["type"] == "map" {
            for (name, value) in v["data"].as_object().unwrap() {
                maps.insert(name.clone(), value.clone());
            }
        }
    }
    maps
}

fn entry(maps: &HashMap<String, serde_json::Value>, map: &str, key: &str) -> u64 {
    maps.get(map)
        .and_then(|m| m[key].as_u64())
        .unwrap_or_else(|| panic!("no {map}[{key}] in {maps:?}"))
}

/// A diagnostic's text on one line: miette's wrapping and margins removed.
fn flat(stderr: &str) -> String {
    stderr
        .split_whitespace()
        .filter(|w| *w != "│")
        .collect::<Vec<_>>()
        .join(" ")
}

/// `sonde tool allocreplay FILE -q ARGS`.
fn replay(file: &Path, args: &[&str]) -> common::Output {
    let mut all = vec!["tool", "allocreplay", file.to_str().unwrap(), "-q"];
    all.extend_from_slice(args);
    run_sonde_timeout(&all, REPLAY_TIMEOUT)
}

/// Checks a `-f json` replay against what the recording says, for each allocator.
fn check_replay(maps: &HashMap<String, serde_json::Value>, e: &Expected, allocators: &[&str]) {
    for a in allocators {
        for (f, n) in &e.calls {
            assert_eq!(entry(maps, "@calls", &format!("{a},{f}")), *n, "{a}: {f}");
        }
        let made: u64 = maps["@calls"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, _)| k.starts_with(&format!("{a},")))
            .map(|(_, v)| v.as_u64().unwrap())
            .sum();
        assert_eq!(made, e.calls.values().sum::<u64>(), "{a}: calls made");
        assert_eq!(entry(maps, "@run", &format!("{a},failed")), 0, "{a}");
        assert_eq!(
            entry(maps, "@run", &format!("{a},peak_live")),
            e.peak_live,
            "{a}"
        );
        assert_eq!(
            entry(maps, "@run", &format!("{a},end_live")),
            e.end_live,
            "{a}"
        );
        assert!(entry(maps, "@run", &format!("{a},wall_ns")) > 0, "{a}");
        assert!(entry(maps, "@run", &format!("{a},peak_rss")) > 0, "{a}");
        assert!(
            entry(maps, "@ns", &format!("{a},malloc,p99"))
                >= entry(maps, "@ns", &format!("{a},malloc,p50"))
        );
    }
    assert_eq!(entry(maps, "@info", "pre_attach"), e.unknown);
    assert_eq!(entry(maps, "@info", "peak_live"), e.peak_live);
}

/// The program's own calls between its markers (malloc(3) ... free of malloc(5)), per
/// function, and their peak and end live bytes.
fn program_calls(rec: &Recording) -> (BTreeMap<&'static str, u64>, u64, u64) {
    let mut counts = BTreeMap::new();
    let mut live: HashMap<u64, u64> = HashMap::new();
    let (mut now, mut peak) = (0u64, 0u64);
    for o in between_markers(rec).iter().filter(|o| o.call.replayed()) {
        *counts.entry(o.call.name()).or_default() += 1;
        if o.ptr != 0 {
            now -= live.remove(&o.ptr).unwrap_or(0);
        }
        if o.call != Call::Free && o.result != 0 {
            live.insert(o.result, o.size);
            now += o.size;
        }
        peak = peak.max(now);
    }
    (counts, peak, now)
}

/// The recording's program calls equal the program's report (aligned_alloc and memalign
/// summed: glibc before 2.38 makes them one function).
fn check_program(rec: &Recording, program: &HashMap<String, u64>) {
    let (counts, peak, end) = program_calls(rec);
    let count = |f: &str| counts.get(f).copied().unwrap_or(0);
    for f in [
        "malloc",
        "calloc",
        "realloc",
        "free",
        "posix_memalign",
        "valloc",
    ] {
        assert_eq!(count(f), program[f], "{f}: {counts:?} {program:?}");
    }
    assert_eq!(
        count("aligned_alloc") + count("memalign"),
        program["aligned_alloc"] + program["memalign"]
    );
    assert_eq!((peak, end), (program["peak_live"], program["end_live"]));
}

#[test]
fn allocpattern_recorded_from_a_command_replays_exactly_under_each_allocator() {
    if skip_unless_root("allocpattern_recorded_from_a_command_replays_exactly_under_each_allocator")
    {
        return;
    }
    let dir = TempDir::new("allocreplay-c");
    let bin = build(&dir);
    let file = dir.path().join("app.allocs");
    let program = program_report(&record_command(bin.to_str().unwrap(), &file));
    let rec = sonde_drivers::allocs::read(&file).unwrap_or_else(|d| panic!("{}", d.message));
    check_program(&rec, &program);
    let e = expected(&rec);
    let out = replay(&file, &["-f", "json"]);
    let maps = json_maps(out.ok_stdout());
    check_replay(&maps, &e, &ALLOCATORS);
    // The allocators' system calls were counted: each made some memory call.
    for a in ALLOCATORS {
        let memory: u64 = ["mmap", "brk", "mprotect", "madvise"]
            .iter()
            .map(|s| entry(&maps, "@sys", &format!("{a},{s}")))
            .sum();
        assert!(
            memory > 0,
            "{a}: no memory system call counted: {:?}",
            maps["@sys"]
        );
    }
    // glibc runs the program's main thread on its main arena (brk) as the program does.
    assert!(entry(&maps, "@sys", "glibc,brk") > 0);

    // --threads-free: the same calls, the same live bytes at the end.
    let out = replay(&file, &["-f", "json", "--threads-free", "-a", "glibc"]);
    let free = json_maps(out.ok_stdout());
    for (f, n) in &e.calls {
        assert_eq!(entry(&free, "@calls", &format!("glibc,{f}")), *n, "{f}");
    }
    assert_eq!(entry(&free, "@run", "glibc,end_live"), e.end_live);
    assert_eq!(entry(&free, "@info", "threads_free"), 1);
}

#[test]
fn the_ranking_by_peak_rss_is_the_program_s_own() {
    if skip_unless_root("the_ranking_by_peak_rss_is_the_program_s_own") {
        return;
    }
    let dir = TempDir::new("allocreplay-rank");
    let bin = build(&dir);
    let file = dir.path().join("app.allocs");
    record_command(bin.to_str().unwrap(), &file);
    // The program under each allocator, preloaded: its peak resident set.
    let mut program = Vec::new();
    for a in ALLOCATORS {
        let mut cmd = Command::new(&bin);
        if a != "glibc" {
            let lib = sonde_allocs::allocators::find(a).unwrap().preload.unwrap();
            cmd.env("LD_PRELOAD", lib);
        }
        let out = common::run_command(cmd, REPLAY_TIMEOUT);
        program.push((a, program_report(out.ok_stdout())["vmhwm_kb"] * 1024));
    }
    // The replay, pages untouched as the program leaves them.
    let out = replay(&file, &["-f", "json"]);
    let maps = json_maps(out.ok_stdout());
    let replayed: Vec<(&str, u64)> = ALLOCATORS
        .iter()
        .map(|a| (*a, entry(&maps, "@run", &format!("{a},peak_rss"))))
        .collect();
    // Pairs the program tells apart by more than 15% are in the same order in the replay
    // (allocpattern's: jemalloc about 57 MiB, glibc 100 MiB, tcmalloc 117 MiB); closer
    // pairs are within the noise of a run and not compared, but one such pair at least
    // must be there to compare.
    let mut compared = 0;
    for (i, &(a, pa)) in program.iter().enumerate() {
        for &(b, pb) in &program[i + 1..] {
            if pa.max(pb) as f64 <= pa.min(pb) as f64 * 1.15 {
                continue;
            }
            compared += 1;
            let ra = replayed.iter().find(|r| r.0 == a).unwrap().1;
            let rb = replayed.iter().find(|r| r.0 == b).unwrap().1;
            assert_eq!(pa < pb, ra < rb, "program {program:?}, replay {replayed:?}");
        }
    }
    assert!(compared >= 2, "program {program:?}: no pair to rank");
}

#[test]
fn allocpattern_recorded_from_a_running_process_replays_with_every_output() {
    if skip_unless_root("allocpattern_recorded_from_a_running_process_replays_with_every_output") {
        return;
    }
    let dir = TempDir::new("allocreplay-p");
    let bin = build(&dir);
    let file = dir.path().join("app.allocs");
    let program = {
        let _serial = one_at_a_time();
        let (mut child, mut out, pid) = spawn_waiting(&bin);
        let pid_s = pid.to_string();
        let mut tracer = common::Tracer::start(&[
            "tool",
            "allocrecord",
            "-p",
            &pid_s,
            "-o",
            file.to_str().unwrap(),
        ]);
        assert!(
            tracer.wait_attached(common::ATTACH_TIMEOUT),
            "{:?}",
            tracer.stderr_so_far()
        );
        unsafe { libc::kill(pid as i32, libc::SIGUSR1) };
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
        let _ = child.wait();
        common::settle();
        if tracer.running() {
            tracer.interrupt();
        }
        let t = tracer.finish(REPLAY_TIMEOUT);
        assert_eq!(t.code, Some(0), "{}", t.stderr);
        program_report(&rest)
    };
    let rec = sonde_drivers::allocs::read(&file).unwrap_or_else(|d| panic!("{}", d.message));
    check_program(&rec, &program);
    let e = expected(&rec);
    let out = replay(&file, &["-f", "json"]);
    check_replay(&json_maps(out.ok_stdout()), &e, &ALLOCATORS);

    // The text report: a column per allocator, in the order given.
    let out = replay(&file, &["-a", "tcmalloc,glibc"]);
    let text = out.ok_stdout();
    let head = text
        .lines()
        .find(|l| l.trim_start().starts_with("tcmalloc"))
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(
        head.split_whitespace().collect::<Vec<_>>(),
        ["tcmalloc", "glibc"]
    );
    let calls = text.lines().find(|l| l.starts_with("calls ")).unwrap();
    let total = e.calls.values().sum::<u64>().to_string();
    assert_eq!(
        calls.split_whitespace().skip(1).collect::<Vec<_>>(),
        [total.as_str(), total.as_str()]
    );
    assert!(
        text.starts_with(&format!(
            "Replay of {total} calls on 3 threads (recorded order, pages not touched)"
        )),
        "{text}"
    );

    // -f csv: a header, then rows of the maps.
    let out = replay(&file, &["-f", "csv", "-a", "glibc"]);
    let csv = out.ok_stdout();
    assert!(csv.lines().any(|l| l == "map,key1,key2,value"), "{csv}");
    let row = format!("@calls,glibc,malloc,{}", e.calls["malloc"]);
    assert!(csv.lines().any(|l| l == row), "{row} in\n{csv}");

    // --post replaces the report.
    let post = dir.path().join("mine.rhai");
    std::fs::write(&post, "fn on_end(maps) { for r in maps[\"@run\"] { if r.key[1] == \"calls\" { print(`${r.key[0]} made ${r.value}`); } } }\n").unwrap();
    let out = replay(&file, &["-a", "glibc", "--post", post.to_str().unwrap()]);
    assert_eq!(out.ok_stdout(), format!("glibc made {total}\n"));

    // --chart: live bytes and a line per allocator, over the recorded time.
    let svg = dir.path().join("mem.svg");
    let out = replay(&file, &["--chart", svg.to_str().unwrap(), "--touch"]);
    assert!(out.ok_stdout().contains("pages touched"));
    let chart = std::fs::read_to_string(&svg).unwrap();
    // A line per series, each titled with its peak; the legend names them.
    for series in ["live_bytes", "glibc", "jemalloc", "tcmalloc"] {
        assert!(
            chart.contains(&format!("<title>{series}: peak "))
                && chart.contains(&format!("{series} (peak ")),
            "{series} not drawn in the chart"
        );
    }
    // live bytes peak where the recording does.
    assert!(chart.contains(&format!("live_bytes (peak {} bytes)", e.peak_live)));

    // A recording cut short is refused with the byte it was cut at.
    let bytes = std::fs::read(&file).unwrap();
    let cut = dir.path().join("cut.allocs");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let out = replay(&cut, &[]);
    assert_ne!(out.code, Some(0));
    assert!(
        flat(&out.stderr).contains("cut.allocs was cut at byte"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.is_empty(), "{}", out.stdout);
}

#[test]
fn a_real_program_replays_with_its_counts() {
    if skip_unless_root("a_real_program_replays_with_its_counts") {
        return;
    }
    let dir = TempDir::new("allocreplay-sort");
    let input = dir.path().join("lines.txt");
    let mut text = String::new();
    let mut x: u64 = 0x2545f4914f6cdd1d;
    for i in 0..200_000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        text += &format!("{:x} line {i}\n", x % 1_000_000_007);
    }
    std::fs::write(&input, text).unwrap();
    let file = dir.path().join("sort.allocs");
    let cmd = format!("/usr/bin/sort {}", input.display());
    record_command(&cmd, &file);
    let rec = sonde_drivers::allocs::read(&file).unwrap_or_else(|d| panic!("{}", d.message));
    let e = expected(&rec);
    assert!(
        e.calls.get("malloc").copied().unwrap_or(0) > 100,
        "{:?}",
        e.calls
    );
    let out = replay(&file, &["-f", "json", "--touch"]);
    check_replay(&json_maps(out.ok_stdout()), &e, &ALLOCATORS);
}

#[test]
fn bad_allocators_and_files_are_refused_with_a_reason() {
    let dir = TempDir::new("allocreplay-bad");
    let foreign = dir.path().join("foreign.allocs");
    std::fs::write(&foreign, "not a recording\n").unwrap();
    let out = replay(&foreign, &["-a", "glibc,/nonexistent/libnope.so"]);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("allocator /nonexistent/libnope.so: /nonexistent/libnope.so: No such file"),
        "{}",
        out.stderr
    );
    let out = replay(&foreign, &["-a", "hoard"]);
    assert!(
        out.stderr.contains(
            "unknown allocator `hoard`: glibc, jemalloc, tcmalloc, or the path of a shared library"
        ),
        "{}",
        out.stderr
    );
    assert_ne!(out.code, Some(0));
    // A library that is not an ELF file.
    let out = replay(&foreign, &["-a", foreign.to_str().unwrap()]);
    assert!(
        out.stderr
            .contains("is not a shared library (no ELF header at offset 0)"),
        "{}",
        out.stderr
    );
    // A foreign file: at byte 0.
    let out = replay(&foreign, &["-a", "glibc"]);
    assert_ne!(out.code, Some(0));
    assert!(
        flat(&out.stderr).contains("foreign.allocs: at byte 0: not a sonde recording"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.is_empty(), "{}", out.stdout);
}

#[test]
fn the_readme_example_runs_as_written() {
    if skip_unless_root("the_readme_example_runs_as_written") {
        return;
    }
    let dir = TempDir::new("allocreplay-readme");
    std::fs::create_dir_all(dir.path().join("docs/pictures")).unwrap();
    let bin = common::sonde();
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let lines = common::readme_block("## Allocation record and replay");
    assert_eq!(lines.len(), 3, "{lines:?}");
    let _serial = one_at_a_time();
    let mut last = String::new();
    for line in &lines {
        let mut c = Command::new("sh");
        c.args(["-c", line])
            .current_dir(dir.path())
            .env("PATH", &path);
        let out = common::run_command(c, REPLAY_TIMEOUT);
        last = out.ok_stdout().to_string();
    }
    assert!(
        last.lines().any(|l| l.split_whitespace().eq(ALLOCATORS)),
        "no column per allocator in:\n{last}"
    );
    assert!(last.starts_with("Replay of "), "{last}");
    let chart =
        std::fs::read_to_string(dir.path().join("docs/pictures/allocreplay-chart.svg")).unwrap();
    assert!(chart.contains("<title>tcmalloc: peak "));
}
