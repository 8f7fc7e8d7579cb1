//! `delta` and `delta(KEY)` (a sonde extension: the time since this probe last fired in the
//! thread, or for the key) end to end, in both engines.
//!
//! Kernel runs trace `tests/targets/delta_target.c`, filtered on its pid, which makes failing
//! system calls from one thread at known times: `nanosleep` between them, so each gap is at
//! least the sleep and, on an idle machine, a fraction of a millisecond more. The sleeps are
//! chosen so that a gap lands in one log2 bucket with room to spare (40 ms in `[32M, 64M)`,
//! 160 ms in `[128M, 256M)`); the tests require most values there and none below, since a
//! loaded machine may wake a sleeper late but never early. What is checked:
//! - the histogram of `delta` for a thread calling `getppid` every 40 ms, and the first call
//!   counted by `count()` but not by `hist(delta)` or `stats(delta)`;
//! - two keys interleaved (`close(-100)` every tick, `close(-101)` every fourth) give two
//!   separate streams for `delta(args.fd)`;
//! - the clocks are bounded by `max_map_keys`: with 64, 1000 keys each fired twice in a row all
//!   find their clock, and of 1000 keys fired in two rounds fewer than 64 find theirs in the second (with
//!   the default 4096 they all do), and no update is refused as "map full";
//! - the card's one-liner, `kprobe:tcp_set_state { @[comm] = hist(delta) }`, compiles, and on
//!   a kernel without kprobes fails at attach with the diagnostic that names
//!   `tracepoint:sock:inet_sock_set_state`; that tracepoint's version prints the time sockets
//!   spent in each TCP state under loopback traffic.
//!
//! The userspace engine (no root): `delta(field(1))` on lines gives one stream per key (counts
//! are exact: every line but the first of its key), lines written 100 and 400 ms apart give
//! their buckets, its LRU bound, and a script's own `delta` (variable, map, macro, `#define`)
//! keeps its meaning. The deterministic times of `replay` are in `engine_record/handmade.rs`.

mod common;

use common::bytes::{Raw, read_all, sonde_with_stdin, text};
use common::{
    Target, TempDir, build_target, run_sonde, skip_unless_root, sonde, trace_target,
    wait_with_timeout,
};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// Held by the tests that measure times, so that they do not run at the same time (the
/// harness runs tests on several threads): each one's gaps are not stretched by another's
/// load.
static TIMED: Mutex<()> = Mutex::new(());

/// Takes [`TIMED`] (a test that failed while holding it does not stop the others).
fn timed() -> MutexGuard<'static, ()> {
    TIMED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Starts `delta_target MODE ARGS...`, waiting for its go line.
fn target(dir: &TempDir, args: &[&str]) -> Target {
    let bin = build_target(dir, "delta_target");
    Target::spawn(&bin, args)
}

/// Whether this kernel can attach kprobes (then the attach failure cannot be observed).
fn kernel_has_kprobes() -> bool {
    std::path::Path::new("/sys/bus/event_source/devices/kprobe").exists()
        || std::path::Path::new("/sys/kernel/tracing/kprobe_events").exists()
}

/// The `.count` of stats map `name` in text output, if printed.
fn stats_count(out: &str, name: &str) -> Option<u64> {
    let line = out
        .lines()
        .find(|l| l.starts_with(&format!("{name}: {{ .count = ")))?;
    line.split(".count = ")
        .nth(1)?
        .split(',')
        .next()?
        .parse()
        .ok()
}

/// The buckets of hist map entry `name` (`@[1]`) in text output: (bucket label, count).
fn hist_buckets(out: &str, name: &str) -> Vec<(String, u64)> {
    let header = format!("{name}:");
    out.lines()
        .skip_while(|l| *l != header)
        .skip(1)
        .take_while(|l| l.starts_with('['))
        .map(|l| {
            let (label, rest) = l.split_once(')').or_else(|| l.split_once(']')).unwrap();
            let count = rest.split_whitespace().next().unwrap().parse().unwrap();
            (format!("{label})"), count)
        })
        .collect()
}

/// Log2 buckets by label, in order.
const BUCKETS: &[&str] = &[
    "[1M, 2M)",
    "[2M, 4M)",
    "[4M, 8M)",
    "[8M, 16M)",
    "[16M, 32M)",
    "[32M, 64M)",
    "[64M, 128M)",
    "[128M, 256M)",
    "[256M, 512M)",
    "[512M, 1G)",
];

/// Checks hist map entry `name` of `out`: `total` values, more than half in `bucket` (a
/// loaded machine may wake a sleeper late), and, when `at_least` (gaps of a sleeping thread),
/// none below it.
fn assert_hist(out: &str, name: &str, total: u64, bucket: &str, at_least: bool) {
    let buckets = hist_buckets(out, name);
    let sum: u64 = buckets.iter().map(|(_, n)| n).sum();
    assert_eq!(sum, total, "{name} in:\n{out}");
    let at = |label: &str| BUCKETS.iter().position(|b| *b == label);
    let want = at(bucket).expect("a known bucket");
    let inside = buckets.iter().find(|(l, _)| l == bucket).map_or(0, |b| b.1);
    assert!(
        inside * 2 > total,
        "{name}: most values in {bucket}:\n{out}"
    );
    if at_least {
        for (label, n) in &buckets {
            assert!(
                *n == 0 || at(label).is_some_and(|i| i >= want),
                "{name}: {n} values in {label}, below {bucket}:\n{out}"
            );
        }
    }
}

#[test]
fn delta_histogram_of_a_thread_calling_every_40ms() {
    if skip_unless_root("delta_histogram_of_a_thread_calling_every_40ms") {
        return;
    }
    let _timed = timed();
    let dir = TempDir::new("delta-interval");
    let mut t = target(&dir, &["interval", "12", "40"]);
    let prog = "tracepoint:syscalls:sys_enter_getppid /pid == $1/ { @h = hist(delta); @n = count(); @us = stats(delta / 1000); }";
    let pid = t.pid();
    let out = trace_target(&["-e", prog, &pid], &mut t);
    let stdout = out.ok_stdout();
    // 12 calls: 11 gaps of 40 ms and a bit; the first call adds to no aggregation of delta.
    assert_hist(stdout, "@h", 11, "[32M, 64M)", true);
    assert!(stdout.contains("\n@n: 12\n"), "{stdout}");
    assert_eq!(stats_count(stdout, "@us"), Some(11), "{stdout}");
    let total: u64 = stdout
        .split(".total = ")
        .nth(1)
        .and_then(|t| t.split(' ').next()?.parse().ok())
        .unwrap();
    assert!(total >= 11 * 40_000, "{stdout}");
}

#[test]
fn delta_of_a_key_keeps_one_clock_per_key() {
    if skip_unless_root("delta_of_a_key_keeps_one_clock_per_key") {
        return;
    }
    let _timed = timed();
    let dir = TempDir::new("delta-keys");
    let mut t = target(&dir, &["keys", "13", "40"]);
    let prog = "tracepoint:syscalls:sys_enter_close /pid == $1/ { @[(int32)args.fd] = hist(delta(args.fd)); }";
    let pid = t.pid();
    let out = trace_target(&["-e", prog, &pid], &mut t);
    let stdout = out.ok_stdout();
    // close(-100) on each of 13 ticks 40 ms apart, close(-101) on ticks 0, 4, 8 and 12.
    assert_hist(stdout, "@[-100]", 12, "[32M, 64M)", true);
    assert_hist(stdout, "@[-101]", 3, "[128M, 256M)", true);
}

/// Runs the `lru 1000` target under a script whose `@pairs` counts the keys fired twice in a
/// row that found their clock, and `@rounds` those of the second of two rounds.
fn lru_run(config: &str) -> (Option<u64>, Option<u64>, String) {
    let dir = TempDir::new("delta-lru");
    let mut t = target(&dir, &["lru", "1000"]);
    let prog = format!(
        "{config} tracepoint:syscalls:sys_enter_close /pid == $1/ {{ @pairs = stats(delta(args.fd)); }} tracepoint:syscalls:sys_enter_dup /pid == $1/ {{ @rounds = stats(delta(args.fildes)); }}"
    );
    let pid = t.pid();
    let out = trace_target(&["-e", &prog, &pid], &mut t);
    let stdout = out.ok_stdout().to_string();
    (
        stats_count(&stdout, "@pairs"),
        stats_count(&stdout, "@rounds"),
        out.stderr,
    )
}

#[test]
fn delta_clocks_are_bounded_by_max_map_keys() {
    if skip_unless_root("delta_clocks_are_bounded_by_max_map_keys") {
        return;
    }
    let _timed = timed();
    let (pairs, rounds, stderr) = lru_run("config = { max_map_keys = 64 }");
    assert_eq!(pairs, Some(1000), "{stderr}");
    assert!(rounds.unwrap_or(0) < 64, "{rounds:?}");
    assert!(!stderr.contains("full"), "{stderr}");
    let (pairs, rounds, stderr) = lru_run("");
    assert_eq!((pairs, rounds), (Some(1000), Some(1000)), "{stderr}");
}

/// The card's one-liner.
const CARD: &str = "kprobe:tcp_set_state { @[comm] = hist(delta) }";

#[test]
fn the_card_one_liner_compiles_and_names_the_tracepoint_at_attach() {
    let out = run_sonde(&["--check", "-e", CARD]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let out = run_sonde(&["--dump", "bpf", "-e", CARD]);
    assert!(out.ok_stdout().contains("(kprobe/"), "{}", out.stdout);
    if skip_unless_root("the_card_one_liner_compiles_and_names_the_tracepoint_at_attach") {
        return;
    }
    if kernel_has_kprobes() {
        eprintln!("skipping the attach failure: this kernel has kprobes");
        return;
    }
    let out = run_sonde(&["-e", CARD]);
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    let words = out.stderr.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("sonde::attach::kprobe_unavailable"),
        "{words}"
    );
    assert!(
        words.contains("use `tracepoint:sock:inet_sock_set_state` instead"),
        "{words}"
    );
}

#[test]
fn time_in_each_tcp_state_under_loopback_traffic() {
    if skip_unless_root("time_in_each_tcp_state_under_loopback_traffic") {
        return;
    }
    let _timed = timed();
    let dir = TempDir::new("delta-tcp");
    let mut t = target(&dir, &["tcp", "20"]);
    let prog = "tracepoint:sock:inet_sock_set_state /pid == $1/ { @[args.oldstate] = hist(delta(args.skaddr)); }";
    let pid = t.pid();
    let out = trace_target(&["-e", prog, &pid], &mut t);
    let stdout = out.ok_stdout();
    eprintln!("{stdout}");
    // ESTABLISHED (1) lasts the 2 ms the target sleeps before closing: the client's 20
    // sockets leave it in close(), in the target's context; the server's leave it when the
    // FIN arrives, in the target's context unless softirqs were deferred to ksoftirqd.
    let established = hist_buckets(stdout, "@[1]");
    let total: u64 = established.iter().map(|(_, n)| n).sum();
    assert!((20..=40).contains(&total), "{stdout}");
    for (label, n) in &established {
        assert!(
            *n == 0 || label.contains('M'),
            "{label} under 1 ms in ESTABLISHED: {stdout}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The userspace engine

/// Runs an `input` script on `lines`.
fn input(prog: &str, lines: &str) -> String {
    let out: Raw = sonde_with_stdin(&["-q", "-e", prog], lines.as_bytes());
    text(out.ok(prog))
}

#[test]
fn input_delta_of_field_gives_one_stream_per_key() {
    let lines = "a 1\nb 2\na 3\nc 4\na 5\nb 6\n";
    let prog = "input { @n[field(1)] = stats(delta(field(1))); @all = stats(delta); \
                printf(\"%s %d %d\\n\", field(1), delta(field(1)) == delta(field(1)), delta(field(1)) > 0); }";
    let out = input(prog, lines);
    // A key's first line is 0 and counts nothing; evaluated twice in one firing, the same.
    assert!(
        out.starts_with("a 1 0\nb 1 0\na 1 1\nc 1 0\na 1 1\nb 1 1\n"),
        "{out}"
    );
    assert_eq!(stats_count(&out, "@n[a]"), Some(2), "{out}");
    assert_eq!(stats_count(&out, "@n[b]"), Some(1), "{out}");
    assert_eq!(stats_count(&out, "@n[c]"), None, "{out}");
    assert_eq!(stats_count(&out, "@all"), Some(5), "{out}");
}

#[test]
fn input_delta_of_lines_written_100_and_400_ms_apart() {
    let _timed = timed();
    let prog = "input { @[field(1)] = hist(delta(field(1))); }";
    let mut child = Command::new(sonde())
        .args(["-e", prog])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sonde starts");
    let mut stdin = child.stdin.take().expect("stdin piped");
    let out = read_all(child.stdout.take().expect("stdout piped"));
    // Lines are timed as sonde reads them: start writing once its probe runs.
    let mut err = BufReader::new(child.stderr.take().expect("stderr piped"));
    let mut attached = String::new();
    err.read_line(&mut attached).unwrap();
    assert!(attached.starts_with("Attached"), "{attached}");
    let err = read_all(err);
    for tick in 0..9 {
        if tick > 0 {
            std::thread::sleep(Duration::from_millis(100));
        }
        let mut line = String::from("fast\n");
        if tick % 4 == 0 {
            line += "slow\n";
        }
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.flush().unwrap();
    }
    drop(stdin);
    let (status, timed_out) = wait_with_timeout(&mut child, Duration::from_secs(20));
    let err = text(&err.join().unwrap());
    assert!(!timed_out && status.is_some_and(|s| s.success()), "{err}");
    let out = text(&out.join().unwrap());
    // Lines are timed as sonde reads them, which a loaded machine may delay: a gap can be
    // shorter than the writer's sleep, or longer. 100 ms and 400 ms are in the middle of their
    // buckets.
    assert_hist(&out, "@[fast]", 8, "[64M, 128M)", false);
    assert_hist(&out, "@[slow]", 2, "[256M, 512M)", false);
}

#[test]
fn input_delta_clocks_are_bounded_by_max_map_keys() {
    let keys: Vec<String> = (0..10).map(|k| format!("k{k}\n")).collect();
    let pairs: String = keys.iter().map(|k| format!("{k}{k}")).collect();
    let rounds = keys.concat().repeat(2);
    let prog = "input { @s = stats(delta(field(1))); }";
    let bounded = format!("config = {{ max_map_keys = 4 }} {prog}");
    // Fired twice in a row, every key finds its clock; in rounds, at most 4 survive.
    assert_eq!(stats_count(&input(&bounded, &pairs), "@s"), Some(10));
    let n = stats_count(&input(&bounded, &rounds), "@s").unwrap_or(0);
    assert!(n <= 4, "{n}");
    assert_eq!(stats_count(&input(prog, &rounds), "@s"), Some(10));
}

#[test]
fn a_script_that_defines_delta_keeps_its_meaning() {
    let cases = [
        (
            "input { $delta = 5; @delta = $delta * 2; printf(\"%d %d\\n\", $delta, @delta); }",
            "5 10\n\n\n@delta: 10\n",
        ),
        (
            "macro delta(x) { x + 100 } input { printf(\"%d\\n\", delta(num(field(1)))); }",
            "101\n\n\n",
        ),
        (
            "#define delta 42\ninput { printf(\"%d %d\\n\", delta, delta()); }",
            "42 42\n\n\n",
        ),
        (
            "enum e { delta = 7 };\ninput { printf(\"%d\\n\", delta); }",
            "7\n\n\n",
        ),
    ];
    for (prog, want) in cases {
        let out = input(prog, "1\n");
        assert_eq!(out, want, "{prog}");
    }
}
