//! `tseries()` end to end, in both engines: the text chart, JSON, CSV, rhai, `print`,
//! `clear`, `zero`, keyed maps, recordings and the argument diagnostics.
//!
//! Deterministic runs take their clock from a map, as bpftrace's own tests do
//! (`BPFTRACE_DUMMY_TS_MAP=@ts`: `tseries()` reads the time from `@ts` instead of the
//! clock), and print in UTC (`TZ=UTC`). Their expected outputs are bpftrace 0.26's: the
//! charts of its docs/stdlib.md and the values its runtime tests expect. Runs on the real
//! clock check the structure of what they print. The userspace engine always runs; the
//! kernel's needs root.

mod common;

use common::{Output, TempDir, is_root, run_command, sonde};
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const TIMEOUT: Duration = Duration::from_secs(30);

/// The engines this machine can run: the kernel's (root only) and the userspace one.
fn engines() -> &'static [&'static str] {
    if is_root() { &["bpf", "jit"] } else { &["jit"] }
}

/// Runs sonde with `args` in `engine`, its clock read from `@ts` when `dummy_clock`, in UTC.
fn run(engine: &str, dummy_clock: bool, args: &[&str]) -> Output {
    let mut cmd = Command::new(sonde());
    cmd.env("TZ", "UTC").arg("--engine").arg(engine).args(args);
    if dummy_clock {
        cmd.env("BPFTRACE_DUMMY_TS_MAP", "@ts");
    } else {
        cmd.env_remove("BPFTRACE_DUMMY_TS_MAP");
    }
    run_command(cmd, TIMEOUT)
}

/// Runs sonde with `args` (a subcommand first), its clock read from `@ts`, in UTC.
fn run_command_line(args: &[&str]) -> Output {
    let mut cmd = Command::new(sonde());
    cmd.env("TZ", "UTC")
        .env("BPFTRACE_DUMMY_TS_MAP", "@ts")
        .args(args);
    run_command(cmd, TIMEOUT)
}

/// The same stdout from every engine, which is returned.
fn same_in_every_engine(dummy_clock: bool, args: &[&str]) -> String {
    let mut first: Option<String> = None;
    for engine in engines() {
        let out = run(engine, dummy_clock, args);
        let stdout = out.ok_stdout().to_string();
        match &first {
            Some(f) => assert_eq!(&stdout, f, "{engine} differs from bpf for {args:?}"),
            None => first = Some(stdout),
        }
    }
    first.expect("at least one engine")
}

/// The zigzag of bpftrace's docs/stdlib.md (tseries, example two), on a clock starting at
/// 10:39:49.300 (UTC, 1970-01-01) and advancing 100ms per value.
const ZIGZAG: &str = r#"BEGIN {
  @ts = (uint64)38389300000000;
  $c = -5; $dir = 1; $i = 0;
  while ($i < 20) {
    @ = tseries($c, 100ms, 20);
    @ts += 100000000;
    $c += $dir;
    if ($c > 5) { $dir = -1; $c = 4 } else if ($c < -5) { $dir = 1; $c = -4; }
    $i++;
  }
  delete(@ts);
  exit();
}"#;

#[test]
fn the_documented_zigzag_prints_as_in_bpftraces_docs() {
    // The chart of bpftrace 0.26's docs/stdlib.md, tseries example two.
    let want = format!("\n\n@:\n{}\n", include_str!("fixtures/tseries_zigzag.txt"));
    assert_eq!(same_in_every_engine(true, &["-q", "-e", ZIGZAG]), want);
}

/// 100 values `$i % 10`, ten per 100ms interval, into `@a = tseries(..., 100ms, 5, AGG)`
/// (bpftrace's runtime test "time series"), then `TAIL`.
fn ten_per_interval(agg: &str, tail: &str) -> String {
    format!(
        "BEGIN {{ @ts = (uint64)0; $i = (uint64)0; while ($i < 100) {{ @a = tseries($i % 10, 100ms, 5{agg}); @ts += 10000000; $i++; }} delete(@ts); {tail} exit(); }}"
    )
}

/// `{"type": "tseries", ...}` of `@a` with the last five 100ms intervals of the first second.
fn five_intervals(value: u64) -> String {
    let rows: Vec<String> = (5..10)
        .map(|i| {
            format!(r#"{{"interval_start":"1970-01-01 00:00:00.{i}00000000","value":{value}}}"#)
        })
        .collect();
    format!(
        "{{\"type\": \"tseries\", \"data\": {{\"@a\": [{}]}}}}\n",
        rows.join(",")
    )
}

#[test]
fn each_aggregation_keeps_what_bpftraces_runtime_tests_expect() {
    for (agg, value) in [
        ("", 9),
        (r#", "min""#, 0),
        (r#", "max""#, 9),
        (r#", "avg""#, 4),
        (r#", "sum""#, 45),
    ] {
        let prog = ten_per_interval(agg, "");
        let out = same_in_every_engine(true, &["-q", "-f", "json", "-e", &prog]);
        assert_eq!(out, five_intervals(value), "agg {agg:?}");
    }
}

#[test]
fn zero_leaves_no_data_and_clear_leaves_nothing() {
    let prog = ten_per_interval(r#", "avg""#, "zero(@a);");
    let json = same_in_every_engine(true, &["-q", "-f", "json", "-e", &prog]);
    assert_eq!(json, "{\"type\": \"tseries\", \"data\": {\"@a\": []}}\n");
    let text = same_in_every_engine(true, &["-q", "-e", &prog]);
    assert_eq!(text, "\n\n@a:\n<no data>\n");
    let prog = ten_per_interval("", "clear(@a);");
    assert_eq!(same_in_every_engine(true, &["-q", "-e", &prog]), "\n\n");
}

#[test]
fn keyed_series_share_their_maps_window() {
    // bpftrace's runtime test "multiple time series": @a["one"] in 0.0-0.4 s, @a["two"] in
    // 0.5-0.9 s, ten intervals.
    let prog = r#"BEGIN { @ts = (uint64)0; $i = 0; while ($i < 5) { @a["one"] = tseries(5, 100ms, 10); @ts += 100000000; $i++; } $i = 0; while ($i < 5) { @a["two"] = tseries(4, 100ms, 10); @ts += 100000000; $i++; } delete(@ts); exit(); }"#;
    let json = same_in_every_engine(true, &["-q", "-f", "json", "-e", prog]);
    let rows = |from: u32, values: &[u32]| -> String {
        let r: Vec<String> = values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                format!(
                    r#"{{"interval_start":"1970-01-01 00:00:00.{}00000000","value":{v}}}"#,
                    from + i as u32
                )
            })
            .collect();
        format!("[{}]", r.join(","))
    };
    // As bpftrace reads a write in epoch 0 (a test clock only): epoch 0, value 0.
    let want = format!(
        "{{\"type\": \"tseries\", \"data\": {{\"@a\": {{\"one\": {}, \"two\": {}}}}}}}\n",
        rows(0, &[0, 5, 5, 5, 5]),
        rows(5, &[4, 4, 4, 4, 4])
    );
    assert_eq!(json, want);
    let text = same_in_every_engine(true, &["-q", "-e", prog]);
    let two = text.split("@a[two]:\n").nth(1).expect("@a[two]");
    let lines: Vec<&str> = two.lines().collect();
    // The window's first five intervals are before @a[two]'s first value: not shown; a
    // flat series sits in the middle.
    assert_eq!(
        lines[2],
        "00:00:00.500 |                         *                         | 4"
    );
    assert_eq!(lines.len(), 2 + 5 + 2 + 1);
    let one = text.split("@a[one]:\n").nth(1).expect("@a[one]");
    assert!(
        one.contains("00:00:00.900 |                                                   | -\n"),
        "{one}"
    );
}

#[test]
fn keys_print_in_the_order_of_their_bytes_and_print_shows_the_map() {
    // 256 is 00 01 .. in memory, before 1 (01 00 ..), as bpftrace orders them; END's clear
    // leaves nothing to print at exit.
    let prog = r#"BEGIN { @ts = (uint64)5000000000; @a[1] = tseries(2, 1s, 3, "sum"); @a[256] = tseries(1, 1s, 3, "sum"); @ts += 1000000000; @a[1] = tseries(3, 1s, 3, "sum"); @a[1] = tseries(3, 1s, 3, "sum"); delete(@ts); print(@a); exit(); } END { clear(@a); }"#;
    let text = same_in_every_engine(true, &["-q", "-e", prog]);
    let want = "@a[256]:
         0                                                   2
hh:mm:ss |___________________________________________________|
00:00:05 |                         *                         | 1
00:00:06 |                                                   | -
         v___________________________________________________v
         0                                                   2

@a[1]:
         2                                                   6
hh:mm:ss |___________________________________________________|
00:00:05 *                                                   | 2
00:00:06 |                                                   * 6
         v___________________________________________________v
         2                                                   6



";
    assert_eq!(text, want);
}

#[test]
fn csv_and_rhai_get_the_intervals() {
    let prog = r#"BEGIN { @ts = (uint64)2000000000; @a["x"] = tseries(3, 1s, 3, "max"); @ts += 2000000000; @a["x"] = tseries(-2, 1s, 3, "max"); @a["y"] = tseries(7, 1s, 3, "max"); delete(@ts); exit(); }"#;
    let csv = same_in_every_engine(true, &["-q", "-f", "csv", "-e", prog]);
    assert_eq!(
        csv,
        "map,key,interval_start,value\n@a,x,1970-01-01 00:00:02.000000000,3\n@a,x,1970-01-01 00:00:04.000000000,-2\n@a,y,1970-01-01 00:00:04.000000000,7\n"
    );
    let post = r#"fn on_end(maps) { for r in maps["@a"] { print(`${r.key}: ${r.value}`); } }"#;
    let out = same_in_every_engine(true, &["-q", "-e", prog, "-P", post]);
    assert_eq!(
        out,
        "x: [#{\"time\": 2000000000, \"value\": 3}, #{\"time\": 3000000000, \"value\": ()}, #{\"time\": 4000000000, \"value\": -2}]\ny: [#{\"time\": 4000000000, \"value\": 7}]\n"
    );
}

#[test]
fn a_recording_replays_the_same_charts() {
    if !is_root() {
        eprintln!("skipping a_recording_replays_the_same_charts: sonde record needs root");
        return;
    }
    let dir = TempDir::new("tseries-rec");
    let rec = dir.path().join("ts.rec");
    let rec = rec.to_str().expect("utf-8 path");
    let live = run_command_line(&["record", "-q", "-o", rec, "-e", ZIGZAG]);
    let replayed = run_command_line(&["replay", rec]);
    assert_eq!(replayed.ok_stdout(), live.ok_stdout());
    assert!(
        live.stdout.contains("10:39:51.200 |    *"),
        "{}",
        live.stdout
    );
}

/// Milliseconds since the epoch of a chart's `HH:MM:SS.mmm` (today, UTC).
fn time_of_day_ms(t: &str) -> Option<u64> {
    let (hms, ms) = t.split_once('.')?;
    let mut parts = hms.split(':').map(|p| p.parse::<u64>().ok());
    let (h, m, s) = (parts.next()??, parts.next()??, parts.next()??);
    Some(((h * 60 + m) * 60 + s) * 1000 + ms.parse::<u64>().ok()?)
}

#[test]
fn the_kernel_clock_gives_wall_clock_intervals() {
    // A value rising every 10ms, in 100ms intervals: the chart's rows are consecutive
    // intervals of the last second, their values rising, the first at the left, the last
    // at the right.
    let prog = "BEGIN { @c = 0; } interval:ms:10 { @ = tseries(@c, 100ms, 5); @s = tseries(1, 100ms, 5, \"sum\"); @c++; } interval:ms:700 { exit(); }";
    for engine in engines() {
        let out = run(engine, false, &["-q", "-e", prog]);
        let text = out.ok_stdout();
        let now_ms = (SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("clock")
            .as_millis()
            % 86_400_000) as u64;
        let chart = text.split("@:\n").nth(1).expect("@:");
        let lines: Vec<&str> = chart.lines().collect();
        assert_eq!(
            lines[1],
            format!("hh:mm:ss.ms  |{}|", "_".repeat(51)),
            "{text}"
        );
        let rows: Vec<&str> = lines[2..]
            .iter()
            .take_while(|l| !l.starts_with(' '))
            .copied()
            .collect();
        assert!((3..=5).contains(&rows.len()), "{engine}: {text}");
        let times: Vec<u64> = rows
            .iter()
            .map(|r| time_of_day_ms(&r[..12]).expect("a time"))
            .collect();
        for w in times.windows(2) {
            assert_eq!(w[1], w[0] + 100, "{engine}: {text}");
        }
        assert!(times.iter().all(|t| t % 100 == 0), "{engine}: {text}");
        let last = *times.last().expect("rows");
        // TAI runs ahead of UTC by at most 37 s (when the kernel knows the offset).
        let ahead = (last + 86_400_000 - now_ms) % 86_400_000;
        assert!(
            ahead <= 38_000 || ahead >= 86_400_000 - 3_000,
            "{engine}: {last} vs {now_ms}"
        );
        let values: Vec<i64> = rows
            .iter()
            .map(|r| r.rsplit(' ').next().unwrap().parse().expect("a value"))
            .collect();
        assert!(values.windows(2).all(|w| w[0] < w[1]), "{engine}: {text}");
        assert_eq!(&rows[0][13..14], "*", "{engine}: {text}");
        assert_eq!(&rows[rows.len() - 1][65..66], "*", "{engine}: {text}");
        // About ten 10ms ticks per full interval.
        let sums = text.split("@s:\n").nth(1).expect("@s:");
        let full: Vec<i64> = sums
            .lines()
            .skip(2)
            .take_while(|l| !l.starts_with(' '))
            .map(|r| r.rsplit(' ').next().unwrap().parse().unwrap_or(0))
            .collect();
        assert!(
            full.iter().any(|n| (8..=12).contains(n)),
            "{engine}: {text}"
        );
    }
}

#[test]
fn bad_arguments_are_refused_with_bpftraces_messages() {
    for (prog, want) in [
        (
            "BEGIN { $i = 100; @a = tseries(1, $i, 5); }",
            "tseries: invalid interval_ns value (must be non-negative literal)",
        ),
        (
            "BEGIN { @a = tseries(1, 1s, -1); }",
            "tseries: invalid num_intervals value (must be non-negative literal)",
        ),
        (
            "BEGIN { @a = tseries(1, 0, 5); }",
            "tseries() interval_ns must be >= 1 (0 provided)",
        ),
        (
            r#"BEGIN { @a = tseries(1, 1s, 5, "median"); }"#,
            r#"tseries() expects one of the following aggregation functions: avg, max, min, sum ("median" provided)"#,
        ),
        (
            r#"BEGIN { @a = tseries("x", 1s, 5); }"#,
            "tseries() only supports integer arguments",
        ),
        (
            "BEGIN { @a = tseries(1, 1s, 1000001); }",
            "tseries() num_intervals must be < 1000000 (1000001 provided)",
        ),
        (
            "BEGIN { @a = tseries(1, 1s, 2000); }",
            "`tseries()` num_intervals is too large",
        ),
        (
            "BEGIN { tseries(1, 1s, 5); }",
            "`tseries()` can only be assigned to a map",
        ),
    ] {
        let out = run("jit", false, &["--check", "-e", prog]);
        assert_ne!(out.code, Some(0), "{prog}");
        let flat = out
            .stderr
            .split_whitespace()
            .filter(|w| *w != "│")
            .collect::<Vec<_>>()
            .join(" ");
        assert!(flat.contains(want), "{prog}: {}", out.stderr);
    }
}
