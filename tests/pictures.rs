//! Pictures (`--heatmap`, `--chart`, `--flamegraph`, `sonde flamediff`), opened in a real
//! browser: every SVG sonde draws here is loaded by headless Chromium (Debian's `chromium`
//! package, which `.ci/test` installs), whose DOM must hold the expected texts (titles, axis
//! labels, frame names, cell tooltips) and whose screenshot must not be blank.
//!
//! The heatmap tests count cells exactly: the tooltips of the cells, read back from the
//! browser's DOM, must add up to the events of a deterministic workload (printf events of
//! (time, latency) read from a file by an `input` probe; a histogram filled and printed by
//! an interval probe in the userspace engine). Neither needs root; the tool and stack tests
//! do.

mod common;
mod tools_support;

use common::{Output, TempDir, run_command, run_sonde, skip_unless_root};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

/// Chromium runs one at a time: the machine has few cores and each run starts a browser.
static BROWSER: Mutex<()> = Mutex::new(());

/// How long one browser run may take.
const BROWSER_TIMEOUT: Duration = Duration::from_secs(90);

fn chromium() -> PathBuf {
    let path = PathBuf::from("/usr/bin/chromium");
    assert!(
        path.exists(),
        "these tests open the pictures in Chromium: install Debian's `chromium` package (bash .ci/test does)"
    );
    path
}

/// Runs headless Chromium on `svg` with `args` (its own profile directory, no network).
fn browse(svg: &Path, args: &[String]) -> Output {
    let _one = BROWSER.lock().unwrap_or_else(|e| e.into_inner());
    let profile = TempDir::new("chromium-profile");
    let mut cmd = Command::new(chromium());
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
    ])
    .arg(format!("--user-data-dir={}", profile.path().display()))
    .args(args)
    .arg(format!("file://{}", svg.display()));
    let out = run_command(cmd, BROWSER_TIMEOUT);
    assert!(!out.timed_out, "chromium timed out on {}", svg.display());
    assert_eq!(out.code, Some(0), "chromium failed: {}", out.stderr);
    out
}

/// The DOM Chromium builds from `svg`, serialized.
fn dom(svg: &Path) -> String {
    let out = browse(svg, &["--dump-dom".to_string()]);
    assert!(
        out.stdout.contains("<svg"),
        "no SVG in the DOM: {}",
        out.stdout
    );
    // The `svg` crate writes the content of a `<text>` on a line of its own.
    out.stdout.replace('\n', "")
}

/// Takes a screenshot of `svg` and asserts it is not blank: many pixels differ from the
/// background, in several colours.
fn assert_drawn(svg: &Path, width: u32, height: u32) {
    let dir = TempDir::new("screenshot");
    let png = dir.path().join("shot.png");
    browse(
        svg,
        &[
            format!("--screenshot={}", png.display()),
            format!("--window-size={width},{height}"),
        ],
    );
    let file = std::io::BufReader::new(std::fs::File::open(&png).expect("a screenshot"));
    let mut reader = png::Decoder::new(file).read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size().expect("a size")];
    let info = reader.next_frame(&mut buf).expect("a frame");
    let channels = info.color_type.samples();
    let pixels: Vec<&[u8]> = buf[..info.buffer_size()]
        .chunks(channels)
        .map(|p| &p[..3.min(channels)])
        .collect();
    let background = pixels[0];
    let differing = pixels.iter().filter(|p| **p != background).count();
    let colours: std::collections::HashSet<&[u8]> = pixels.iter().copied().collect();
    let mean = pixels.iter().map(|p| f64::from(p[0])).sum::<f64>() / pixels.len() as f64;
    let variance = pixels
        .iter()
        .map(|p| (f64::from(p[0]) - mean).powi(2))
        .sum::<f64>()
        / pixels.len() as f64;
    assert!(
        differing * 50 > pixels.len() && colours.len() > 8 && variance > 20.0,
        "{} looks blank: {differing} of {} pixels differ from the background, {} colours, variance {variance:.1}",
        svg.display(),
        pixels.len(),
        colours.len()
    );
}

/// Asserts that each of `texts` is in `dom`.
fn assert_in_dom(dom: &str, texts: &[&str]) {
    for text in texts {
        assert!(dom.contains(text), "{text} is not in the DOM: {dom}");
    }
}

/// The texts of the `<title>` elements of a serialized DOM.
fn titles(dom: &str) -> Vec<String> {
    dom.split("<title>")
        .skip(1)
        .filter_map(|t| {
            t.split_once("</title>")
                .map(|(t, _)| t.replace("&amp;", "&"))
        })
        .collect()
}

/// The heatmap cells of a DOM: (time range, bucket) → count, read from their tooltips
/// (`2.0–2.1 s, latency [8, 16): 5 events, ...`).
fn cells(dom: &str) -> BTreeMap<(String, String), u64> {
    let mut out = BTreeMap::new();
    for t in titles(dom) {
        let Some((time, rest)) = t.split_once(" s, ") else {
            continue;
        };
        let Some((bucket, rest)) = rest.split_once(": ") else {
            continue;
        };
        let bucket = bucket.split_once(' ').map_or(bucket, |(_, b)| b);
        let count: u64 = rest.split(' ').next().unwrap().parse().unwrap();
        out.insert((time.to_string(), bucket.to_string()), count);
    }
    out
}

fn sonde_ok(args: &[&str]) -> Output {
    let out = run_sonde(args);
    out.ok_stdout();
    out
}

/// The `hist()` bucket label of `v` (v ≥ 2).
fn log2_label(v: u64) -> String {
    let lo = 1u64 << (63 - v.leading_zeros());
    let human = |n: u64| {
        if n >= 1024 && n.is_multiple_of(1024) {
            format!("{}K", n / 1024)
        } else {
            n.to_string()
        }
    };
    format!("[{}, {})", human(lo), human(lo * 2))
}

#[test]
fn heatmap_of_printf_events_counts_every_event() {
    let dir = TempDir::new("heatmap-printf");
    // Ten seconds of events: second s has 3(s+1) events, 1 ms apart, whose latencies
    // cycle through 10, 20, 40, 80 and 160.
    let mut lines = String::new();
    let mut expected: BTreeMap<(String, String), u64> = BTreeMap::new();
    for s in 0..10u64 {
        for k in 0..3 * (s + 1) {
            let lat = 10u64 << (k % 5);
            lines += &format!("{} {lat}\n", s * 1_000_000_000 + k * 1_000_000);
            let time = format!("{s}.0–{s}.1");
            *expected.entry((time, log2_label(lat))).or_default() += 1;
        }
    }
    let input = dir.path().join("events.txt");
    std::fs::write(&input, lines).unwrap();
    let svg = dir.path().join("heatmap.svg");
    let program = format!(
        "input:{} {{ printf(\"%d %d\\n\", num(field(1)), num(field(2))); }}",
        input.display()
    );
    let out = sonde_ok(&["-q", "--heatmap", svg.to_str().unwrap(), "-e", &program]);
    assert_eq!(
        out.stdout.lines().filter(|l| !l.is_empty()).count(),
        165,
        "the events still print"
    );
    let dom = dom(&svg);
    assert_eq!(cells(&dom), expected);
    assert_in_dom(
        &dom,
        &[
            "Latency heatmap: latency",
            ">time (s)<",
            ">latency<",
            ">[128, 256)<",
        ],
    );
    assert!(dom.contains("165 events in 91 columns"), "{dom}");
    // One cell's tooltip in full: 6 of the 30 events of second 9 had latency 80.
    assert!(
        titles(&dom).contains(
            &"9.0–9.1 s, latency [64, 128): 6 events, 20.0% of the column, 3.6% of all".to_string()
        ),
        "{:?}",
        titles(&dom)
    );
    assert_drawn(&svg, 1100, 700);
}

#[test]
fn heatmap_of_an_interval_histogram_has_a_column_per_print() {
    let dir = TempDir::new("heatmap-hist");
    let svg = dir.path().join("hist.svg");
    let lsvg = dir.path().join("lhist.svg");
    // Every 4 ticks, the histogram of the 4 tick numbers is printed and cleared: 5 columns.
    let program = "interval:ms:20 { @n++; @us = hist(@n * 10); @l = lhist(@n, 0, 20, 5);
        if (@n % 4 == 0) { print(@us); clear(@us); print(@l); clear(@l); }
        if (@n == 20) { exit(); } }";
    sonde_ok(&[
        "-q",
        "--engine",
        "jit",
        "--heatmap",
        svg.to_str().unwrap(),
        "-e",
        program,
    ]);
    let dom = dom(&svg);
    let got = cells(&dom);
    let mut per_column: BTreeMap<usize, BTreeMap<String, u64>> = BTreeMap::new();
    let times: Vec<&String> = {
        let mut t: Vec<&String> = got.keys().map(|(t, _)| t).collect();
        t.dedup();
        t
    };
    assert_eq!(times.len(), 5, "{got:?}");
    for ((time, bucket), count) in &got {
        let col = times.iter().position(|t| *t == time).unwrap();
        per_column
            .entry(col)
            .or_default()
            .insert(bucket.clone(), *count);
    }
    for (col, buckets) in &per_column {
        let mut want: BTreeMap<String, u64> = BTreeMap::new();
        for n in (col * 4 + 1)..=(col * 4 + 4) {
            *want.entry(log2_label(n as u64 * 10)).or_default() += 1;
        }
        assert_eq!(buckets, &want, "column {col}");
    }
    assert!(dom.contains("Latency heatmap: @us"));
    assert!(dom.contains(">@us<"), "the y axis names the map");
    assert_drawn(&svg, 1000, 650);

    // The same run with only the linear histogram printed.
    let program = program.replace("print(@us); clear(@us); ", "");
    sonde_ok(&[
        "-q",
        "--engine",
        "jit",
        "--heatmap",
        lsvg.to_str().unwrap(),
        "-e",
        &program,
    ]);
    let dom = std::fs::read_to_string(&lsvg).unwrap().replace('\n', "");
    let total: u64 = cells(&dom).values().sum();
    assert_eq!(total, 20);
    assert!(
        dom.contains(">[0, 5)<") && dom.contains(">[20, ...)<"),
        "{dom}"
    );
}

#[test]
fn chart_of_printf_series() {
    let dir = TempDir::new("chart");
    let svg = dir.path().join("chart.svg");
    let program = "interval:ms:10 { @n++; printf(\"%d heap=%d stack=%d\\n\", nsecs, @n * 1000, 64 * (@n % 3));
        if (@n == 30) { exit(); } }";
    sonde_ok(&[
        "-q",
        "--engine",
        "jit",
        "--chart",
        svg.to_str().unwrap(),
        "-e",
        program,
    ]);
    let dom = dom(&svg);
    assert_in_dom(
        &dom,
        &[
            "heap (peak 30000 bytes, left axis)",
            "stack (peak 128 bytes, right axis)",
            ">time (s)<",
            ">bytes<",
            "30 samples",
        ],
    );
    assert_drawn(&svg, 1000, 520);
}

#[test]
fn pictures_the_script_cannot_draw_are_diagnostics() {
    let dir = TempDir::new("pictures-bad");
    let svg = dir.path().join("x.svg");
    let svg = svg.to_str().unwrap();
    let out = run_sonde(&[
        "--engine",
        "jit",
        "--heatmap",
        svg,
        "-e",
        "BEGIN { printf(\"hi\\n\"); }",
    ]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr.contains("sonde::pictures::heatmap"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("no histogram"), "{}", out.stderr);
    let out = run_sonde(&[
        "--engine",
        "jit",
        "--chart",
        svg,
        "-e",
        "BEGIN { printf(\"%s\\n\", \"a\"); }",
    ]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr.contains("sonde::pictures::chart"),
        "{}",
        out.stderr
    );
    // A histogram that is only printed at exit has no interval columns.
    let out = run_sonde(&[
        "--engine",
        "jit",
        "--heatmap",
        svg,
        "-e",
        "BEGIN { @h = hist(3); print(@h); exit(); }",
    ]);
    assert_eq!(out.code, Some(0), "one column is drawn: {out:?}");
    let out = run_sonde(&[
        "--engine",
        "jit",
        "--heatmap",
        svg,
        "-e",
        "BEGIN { @h = hist(3); if (pid == 0) { print(@h); } exit(); }",
    ]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(out.stderr.contains("nothing to draw"), "{}", out.stderr);
    // An output that cannot be written.
    let out = run_sonde(&[
        "--engine",
        "jit",
        "--heatmap",
        "/nonexistent/dir/x.svg",
        "-e",
        "BEGIN { @h = hist(3); print(@h); exit(); }",
    ]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr.contains("cannot write /nonexistent/dir/x.svg"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("panicked"));
}

#[test]
fn pictures_are_checked_before_the_run_and_announced_after() {
    let dir = TempDir::new("pictures-where");
    let (chart, heat) = (dir.path().join("c.svg"), dir.path().join("h.svg"));
    let script = "BEGIN { printf(\"%d %d\\n\", nsecs, 5); exit(); }";
    let out = sonde_ok(&[
        "-q",
        "--engine",
        "jit",
        "--chart",
        chart.to_str().unwrap(),
        "--heatmap",
        heat.to_str().unwrap(),
        "-e",
        script,
    ]);
    for what in [
        format!("chart written to {}\n", chart.display()),
        format!("heatmap written to {}\n", heat.display()),
    ] {
        assert!(out.stderr.contains(&what), "{what}: {}", out.stderr);
    }
    // A path that cannot be written fails before anything runs (it used to fail after the
    // run): BEGIN's event is not printed.
    let a_dir = dir.path().to_str().unwrap();
    for (flag, path, why) in [
        (
            "--chart",
            "/nonexistent/dir/c.svg",
            "/nonexistent/dir is not a directory",
        ),
        ("--heatmap", a_dir, "it is a directory"),
        (
            "--flamegraph",
            "/nonexistent/f.svg",
            "/nonexistent is not a directory",
        ),
    ] {
        let out = run_sonde(&["--engine", "jit", flag, path, "-e", script]);
        assert_eq!(out.code, Some(1), "{flag}: {out:?}");
        assert_eq!(out.stdout, "", "{flag}: nothing ran: {out:?}");
        assert!(!out.stderr.contains("Attached"), "{flag}: {}", out.stderr);
        // The message as one line (miette wraps it).
        let flat = out
            .stderr
            .replace('│', " ")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        for part in [
            "sonde::pictures::write".to_string(),
            format!("{flag}: cannot write {path}"),
            why.to_string(),
        ] {
            assert!(flat.contains(&part), "{part}: {}", out.stderr);
        }
    }
    if skip_unless_root("pictures_are_checked_before_the_run_and_announced_after (kernel)") {
        return;
    }
    // A kernel run: refused before anything is loaded or attached.
    let out = run_sonde(&[
        "--flamegraph",
        "/nonexistent/f.svg",
        "-e",
        "profile:hz:99 { @[kstack] = count(); } interval:ms:300 { exit(); }",
    ]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(!out.stderr.contains("Attached"), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("--flamegraph: cannot write /nonexistent/f.svg"),
        "{}",
        out.stderr
    );
}

#[test]
fn flamediff_draws_the_difference_of_two_profiles() {
    let dir = TempDir::new("flamediff");
    let (a, b, svg) = (
        dir.path().join("before.folded"),
        dir.path().join("after.folded"),
        dir.path().join("diff.svg"),
    );
    std::fs::write(&a, "app;main;parse_input 70\napp;main;compute_result 30\n").unwrap();
    std::fs::write(
        &b,
        "app;main;parse_input 20\napp;main;compute_result 60\napp;main;write_output 20\n",
    )
    .unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let out = sonde_ok(&["flamediff", &s(&a), &s(&b), "-o", &s(&svg)]);
    assert!(
        out.stderr.contains(&format!(
            "differential flame graph written to {}",
            svg.display()
        )),
        "{}",
        out.stderr
    );
    let dom = dom(&svg);
    let titles = titles(&dom);
    for frame in ["parse_input", "compute_result", "write_output", "main"] {
        assert!(
            titles.iter().any(|t| t.starts_with(&format!("{frame} ("))),
            "{frame} is not a frame: {titles:?}"
        );
    }
    assert!(dom.contains("Differential Flame Graph"));
    // inferno's differential titles give the change in percentage points.
    assert!(
        titles
            .iter()
            .any(|t| t.starts_with("parse_input (20 samples") && t.contains("-50.00%")),
        "{titles:?}"
    );
    assert_drawn(&svg, 1200, 500);

    // Bad input: a missing file, a file that is not folded stacks, an unwritable output.
    let missing = dir.path().join("missing.folded");
    let out = run_sonde(&["flamediff", &s(&a), &s(&missing), "-o", &s(&svg)]);
    assert_eq!(out.code, Some(1));
    assert!(out.stderr.contains("cannot read"), "{}", out.stderr);
    let junk = dir.path().join("junk.folded");
    std::fs::write(&junk, "app;main 3\nthis is not a stack line\n").unwrap();
    let out = run_sonde(&["flamediff", &s(&junk), &s(&b), "-o", &s(&svg)]);
    assert_eq!(out.code, Some(1));
    assert!(
        out.stderr.contains("junk.folded:2: not a folded"),
        "{}",
        out.stderr
    );
    let out = run_sonde(&["flamediff", &s(&a), &s(&b), "-o", "/nonexistent/d.svg"]);
    assert_eq!(out.code, Some(1));
    assert!(
        out.stderr.contains("cannot write /nonexistent/d.svg"),
        "{}",
        out.stderr
    );
    let out = run_sonde(&["flamediff", &s(&a)]);
    assert_eq!(out.code, Some(2), "usage error: {out:?}");
}

#[test]
fn flamegraph_of_a_user_stack_one_liner() {
    if skip_unless_root("flamegraph_of_a_user_stack_one_liner") {
        return;
    }
    let dir = TempDir::new("ustack-flame");
    let bin = tools_support::build_work(&dir);
    let svg = dir.path().join("flame.svg");
    let folded = dir.path().join("out.folded");
    let cmd = format!("{} now spin 700", bin.display());
    let out = sonde_ok(&[
        "-q",
        "-f",
        "folded",
        "-o",
        folded.to_str().unwrap(),
        "--flamegraph",
        svg.to_str().unwrap(),
        "-c",
        &cmd,
        "-e",
        "profile:hz:99 /pid == cpid/ { @[ustack] = count(); }",
    ]);
    assert!(
        out.stderr
            .contains(&format!("flame graph written to {}", svg.display())),
        "{}",
        out.stderr
    );
    let text = std::fs::read_to_string(&folded).unwrap();
    assert!(
        text.lines()
            .any(|l| l.contains("main;spin_outer;spin_hot_function ")),
        "{text}"
    );
    let dom = dom(&svg);
    let titles = titles(&dom);
    assert!(
        titles.iter().any(|t| t.starts_with("spin_hot_function (")),
        "{titles:?}"
    );
    assert_drawn(&svg, 1200, 400);
}

#[test]
fn memusage_chart_draws_heap_and_stack() {
    if skip_unless_root("memusage_chart_draws_heap_and_stack") {
        return;
    }
    let dir = TempDir::new("memusage-chart");
    let bin = tools_support::build_work(&dir);
    let svg = dir.path().join("mem.svg");
    let cmd = format!("{} now alloc", bin.display());
    let out = sonde_ok(&[
        "tool",
        "memusage",
        "-c",
        &cmd,
        "--chart",
        svg.to_str().unwrap(),
    ]);
    // The report is unchanged: the chart's events do not print.
    assert!(out.stdout.contains("heap peak: 70000"), "{}", out.stdout);
    assert!(!out.stdout.contains("heap="), "{}", out.stdout);
    let dom = dom(&svg);
    assert_in_dom(
        &dom,
        &[
            "heap (peak 70000 bytes",
            "stack (peak ",
            "sonde tool memusage",
            ">bytes<",
        ],
    );
    assert_drawn(&svg, 1000, 520);
}

#[test]
fn runqlat_heatmap_has_a_column_per_second() {
    if skip_unless_root("runqlat_heatmap_has_a_column_per_second") {
        return;
    }
    let dir = TempDir::new("runqlat-heatmap");
    let svg = dir.path().join("runqlat.svg");
    // One-second columns, three of them (`count` 3).
    let out = run_sonde(&[
        "tool",
        "runqlat",
        "--heatmap",
        svg.to_str().unwrap(),
        "1",
        "3",
    ]);
    out.ok_stdout();
    let dom = dom(&svg);
    assert!(dom.contains("sonde tool runqlat"), "{dom}");
    assert!(dom.contains(">@usecs<"));
    assert!(dom.contains(" in 3 columns"), "{dom}");
}
