//! Post-processing in rhai (`--post FILE`, `-P CODE`, the tools' reports).
//!
//! Data-driven cases in the userspace engine (no root): each `tests/post/NAME.sd` runs with
//! `NAME.rhai` as `--post` (when there is one), `NAME.in` on stdin and the flags of
//! `NAME.args`, and must print exactly `NAME.out` and exit 0; a case with a `NAME.err`
//! instead must fail (exit ≠ 0, within the time limit) with every line of `NAME.err` on
//! stderr. A case without `input` probes and without `.args` runs in both engines (the
//! kernel's when root, `--engine jit` always) and prints the same in both. `SONDE_BLESS=1`
//! writes the `.out` files (check them by eye).
//!
//! With root, the same callbacks against real probes: a target sleeps 90 times 2.5 ms and 10
//! times 20 ms, and the p50, p80 and p99 of its measured sleeps lie in the buckets of those
//! durations; `runqlat --extended` prints percentile lines; a tool's report is replaced with
//! `--post`.

mod common;
mod tools_support;

use common::bytes::{Input, Raw, sonde_raw, text};
use common::{TempDir, build_target, repo_root, run_sonde, skip_unless_root};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn cases() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(repo_root().join("tests/post"))
        .expect("tests/post")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "sd"))
        .collect();
    v.sort();
    v
}

/// The engines case `script` runs in (`None`: as its `.args` say).
fn engines(script: &Path) -> Vec<Option<&'static str>> {
    let source = std::fs::read_to_string(script).expect("read case");
    if script.with_extension("args").exists() || source.contains("input") {
        return vec![None];
    }
    if common::is_root() {
        vec![Some("bpf"), Some("jit")]
    } else {
        vec![Some("jit")]
    }
}

/// Runs case `script` (its `.rhai`, `.in` and `.args` beside it) in `engine`.
fn run_case(script: &Path, engine: Option<&str>) -> Raw {
    let path = |ext: &str| script.with_extension(ext);
    let extra = std::fs::read_to_string(path("args")).unwrap_or_default();
    let post = path("rhai");
    let mut args: Vec<String> = vec!["-q".into()];
    if let Some(e) = engine {
        args.push("--engine".into());
        args.push(e.into());
    }
    args.extend(extra.split_whitespace().map(String::from));
    if post.exists() {
        args.push("--post".into());
        args.push(post.display().to_string());
    }
    args.push(script.display().to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let input = path("in");
    if input.exists() {
        sonde_raw(&args, Input::File(&input))
    } else {
        sonde_raw(&args, Input::Null)
    }
}

#[test]
fn cases_print_what_their_files_say() {
    let bless = std::env::var_os("SONDE_BLESS").is_some();
    let mut failures = Vec::new();
    for (case, engine) in cases()
        .into_iter()
        .flat_map(|c| engines(&c).into_iter().map(move |e| (c.clone(), e)))
    {
        let name = format!("{} ({})", case.display(), engine.unwrap_or("its engine"));
        let start = Instant::now();
        let got = run_case(&case, engine);
        let took = start.elapsed();
        if got.timed_out || got.stderr.contains("panicked") {
            failures.push(format!("{name}: timed out or panicked:\n{}", got.stderr));
            continue;
        }
        let err_file = case.with_extension("err");
        if err_file.exists() {
            let want = std::fs::read_to_string(&err_file).expect("read .err");
            if got.code == Some(0) || got.code.is_none() {
                failures.push(format!("{name}: exit {:?}, expected an error", got.code));
            }
            for line in want.lines().filter(|l| !l.trim().is_empty()) {
                if !got.stderr.contains(line) {
                    failures.push(format!("{name}: stderr lacks {line:?}:\n{}", got.stderr));
                }
            }
            // A runaway script is stopped by the operation limit, in seconds.
            if took > Duration::from_secs(15) {
                failures.push(format!("{name}: took {took:?}"));
            }
            continue;
        }
        let out_file = case.with_extension("out");
        // Blessed from the first engine that runs the case (the kernel's, with root).
        if bless && (engine != Some("jit") || !common::is_root()) {
            std::fs::write(&out_file, &got.stdout).expect("write .out");
        }
        let want = std::fs::read_to_string(&out_file).unwrap_or_default();
        if got.code != Some(0) || text(&got.stdout) != want {
            failures.push(format!(
                "{name}: exit {:?}\n--- expected\n{want}--- got\n{}--- stderr\n{}",
                got.code,
                text(&got.stdout),
                got.stderr
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Runs `tests/post/NAME.sd` on its input with `args` before the script.
fn run_with(name: &str, args: &[&str]) -> Raw {
    let script = repo_root().join("tests/post").join(format!("{name}.sd"));
    let input = script.with_extension("in");
    let script = script.display().to_string();
    let mut all = vec!["-q"];
    all.extend_from_slice(args);
    all.push(&script);
    sonde_raw(&all, Input::File(&input))
}

#[test]
fn print_maps_and_print_map_print_what_sonde_prints() {
    for format in ["text", "json", "csv"] {
        let plain = run_with("library", &["-f", format]);
        let post = run_with(
            "library",
            &["-f", format, "-P", "fn on_end(maps) { print_maps(maps); }"],
        );
        assert_eq!(
            text(post.ok("print_maps")),
            text(plain.ok("plain")),
            "-f {format}"
        );
    }
    // on_interval: printing each map of the tick in print order is the default.
    let plain = run_with("interval", &[]);
    let post = run_with(
        "interval",
        &[
            "-P",
            "fn on_interval(maps) { print_map(maps[\"@bytes\"]); print_map(maps[\"@n\"]); }",
        ],
    );
    assert_eq!(text(post.ok("on_interval")), text(plain.ok("plain")));
}

#[test]
fn a_missing_or_unreadable_script_is_a_diagnostic() {
    let out = run_sonde(&[
        "--engine",
        "jit",
        "--post",
        "/nonexistent/r.rhai",
        "-e",
        "BEGIN { exit(); }",
    ]);
    assert_ne!(out.code, Some(0));
    assert!(
        out.stderr.contains("sonde::post::read")
            && out
                .stderr
                .contains("cannot read post-processing script /nonexistent/r.rhai"),
        "{}",
        out.stderr
    );
    let out = run_sonde(&[
        "--engine",
        "jit",
        "-P",
        "fn nothing() {}",
        "-e",
        "BEGIN { exit(); }",
    ]);
    assert_ne!(out.code, Some(0));
    assert!(
        out.stderr.contains("sonde::post::no_callback"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_runaway_callback_ends_the_run_with_its_diagnostic() {
    let start = Instant::now();
    let out = run_sonde(&[
        "--engine",
        "jit",
        "-P",
        "fn on_event(e) {\n  loop { e.n = 1; }\n}",
        "-e",
        "BEGIN { printf(\"first\\n\"); printf(\"second\\n\"); }",
    ]);
    // The callback's limit counts rhai operations: about 10 s in a debug build alone here,
    // more on a loaded or slower machine; the bound says it ends, not how fast.
    assert!(
        start.elapsed() < Duration::from_secs(60),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(
        out.stderr.contains("sonde::post::too_long"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("[-P:1:4]"), "{}", out.stderr);
    // What the script would have printed prints as sonde prints it, after the error: the
    // event whose callback failed, the next one and the (empty) maps at exit.
    assert_eq!(out.stdout, "first\nsecond\n\n\n");
}

#[test]
fn percentiles_of_known_sleeps_lie_in_their_buckets() {
    if skip_unless_root("percentiles_of_known_sleeps_lie_in_their_buckets") {
        return;
    }
    let dir = TempDir::new("post-sleeper");
    let bin = build_target(&dir, "sleeper");
    let cmd = format!("{} 90:2500 10:20000", bin.display());
    let script = r#"
tracepoint:syscalls:sys_enter_clock_nanosleep /pid == cpid/ { @start[tid] = nsecs; }
tracepoint:syscalls:sys_exit_clock_nanosleep /has_key(@start, tid)/ {
	$us = (nsecs - @start[tid]) / 1000;
	@us = hist($us);
	printf("slept %d us\n", $us);
	delete(@start, tid);
}
interval:ms:100 { print(@us); }
"#;
    // on_event keeps every measured sleep (and prints none); on_end prints each percentile
    // with the sample of its rank.
    let post = dir.path().join("p.rhai");
    std::fs::write(
        &post,
        r#"
fn on_event(e) {
    let s = this.samples ?? [];
    s.push(e.args[0]);
    this.samples = s;
}
fn on_interval(maps) {
    this.ticks = (this.ticks ?? 0) + 1;
    if maps.keys() != ["@us"] { throw "unexpected maps " + maps.keys(); }
}
fn on_end(maps) {
    let h = maps["@us"];
    let s = this.samples;
    s.sort();
    print(`events ${s.len()}`);
    print(`ticks ${if this.ticks >= 2 { "some" } else { this.ticks }}`);
    for p in [50, 80, 99] {
        print(`p${p} ${percentile(h, p)} ${s[(p * s.len() + 99) / 100 - 1]}`);
    }
}
"#,
    )
    .expect("write p.rhai");
    let post = post.display().to_string();
    let out = common::run_sonde_timeout(
        &["-q", "-c", &cmd, "--post", &post, "-e", script],
        Duration::from_secs(30),
    );
    let stdout = out.ok_stdout();
    let values = |name: &str| -> (i64, i64) {
        let v: Vec<i64> = stdout
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .map(|v| v.split(' ').filter_map(|x| x.parse().ok()).collect())
            .unwrap_or_default();
        match v[..] {
            [p, sample] => (p, sample),
            _ => panic!("no {name} in:\n{stdout}"),
        }
    };
    assert!(stdout.contains("events 100\n"), "{stdout}");
    assert!(stdout.contains("ticks some\n"), "{stdout}");
    // Each percentile lies in the power-of-two bucket of the sample of its rank: with the
    // machine idle, [2K, 4K) for the 2.5 ms sleeps (p50, p80), [16K, 32K) for the 20 ms ones
    // (p99); a loaded machine may stretch a few sleeps into later buckets.
    for name in ["p50", "p80", "p99"] {
        let (p, sample) = values(name);
        assert_eq!(
            p.ilog2(),
            sample.ilog2(),
            "{name}: {p} and {sample}\n{stdout}"
        );
    }
    assert!(
        values("p50").1 >= 2500 && values("p99").1 >= 20000,
        "{stdout}"
    );
}

#[test]
fn runqlat_extended_prints_percentiles() {
    if skip_unless_root("runqlat_extended_prints_percentiles") {
        return;
    }
    let loops: Vec<std::process::Child> = (0..3)
        .map(|_| {
            std::process::Command::new("/bin/sh")
                .args(["-c", "while :; do :; done"])
                .spawn()
                .expect("busy loop")
        })
        .collect();
    let out = common::run_sonde_timeout(
        &["tool", "runqlat", "-q", "--extended", "1", "1"],
        Duration::from_secs(30),
    );
    for mut c in loops {
        let _ = c.kill();
        let _ = c.wait();
    }
    let stdout = out.ok_stdout();
    assert!(
        stdout.contains("     usecs               : count    distribution\n"),
        "{stdout}"
    );
    let line = stdout
        .lines()
        .find(|l| l.starts_with("p50 = "))
        .unwrap_or_else(|| panic!("no percentile line:\n{stdout}"));
    assert!(
        line.contains(", p90 = ") && line.contains(", p99 = "),
        "{line}"
    );
}

#[test]
fn a_tools_report_is_replaced_with_post() {
    if skip_unless_root("a_tools_report_is_replaced_with_post") {
        return;
    }
    let dir = TempDir::new("post-memusage");
    let bin = tools_support::build_work(&dir);
    let cmd = format!("{} now alloc", bin.display());
    let mine = dir.path().join("mine.rhai");
    std::fs::write(
        &mine,
        "fn on_end(maps) {\n    print(`malloc calls: ${maps[\"@malloc_calls\"]}, free calls: ${maps[\"@free_calls\"]}`);\n}\n",
    )
    .expect("write mine.rhai");
    let mine = mine.display().to_string();
    let out = run_sonde(&["tool", "memusage", "-c", &cmd, "--post", &mine]);
    assert_eq!(out.ok_stdout(), "malloc calls: 9, free calls: 11\n");
}

#[test]
fn a_lookup_of_a_missing_map_fails_before_the_run() {
    // The typo used to be found after the run, as "Function not found: percentile ((),
    // i64)", with the run's data lost.
    let out = run_sonde(&[
        "--engine",
        "jit",
        "-P",
        "fn on_end(maps) { print(percentile(maps[\"@hh\"], 50)); }",
        "-e",
        "BEGIN { printf(\"ran\\n\"); @h = hist(3); @x = 1; exit(); }",
    ]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert_eq!(out.stdout, "", "nothing ran: {out:?}");
    for part in [
        "sonde::post::no_map",
        "looks up map @hh",
        "did you mean @h?",
        "maps are @h, @x",
    ] {
        assert!(out.stderr.contains(part), "{part}: {}", out.stderr);
    }
}

/// Runs sonde with `args`, its standard output and error into one file (to see their order).
fn sonde_merged(args: &[&str]) -> (Option<i32>, String) {
    let dir = TempDir::new("post-merged");
    let path = dir.path().join("out");
    let file = std::fs::File::create(&path).expect("create out");
    let mut cmd = std::process::Command::new(common::sonde());
    cmd.args(args)
        .stdin(std::process::Stdio::null())
        .stdout(file.try_clone().expect("clone out"))
        .stderr(file);
    let mut child = cmd.spawn().expect("spawn sonde");
    let (status, timed_out) = common::wait_with_timeout(&mut child, Duration::from_secs(60));
    assert!(!timed_out, "timed out: {args:?}");
    let text = std::fs::read_to_string(&path).expect("read out");
    (status.and_then(|s| s.code()), text)
}

#[test]
fn a_failed_report_shows_its_error_then_the_default_output() {
    let (code, text) = sonde_merged(&[
        "--engine",
        "jit",
        "-P",
        "fn on_end(maps) { print(\"partial\"); throw \"boom\"; }",
        "-e",
        "BEGIN { @x = 1; @h = hist(3); exit(); }",
    ]);
    assert_eq!(code, Some(1), "{text}");
    let at = |s: &str| {
        text.find(s)
            .unwrap_or_else(|| panic!("no {s:?} in:\n{text}"))
    };
    assert!(at("partial") < at("sonde::post::runtime"), "{text}");
    assert!(at("boom") < at("@x: 1"), "{text}");
    assert!(at("sonde::post::runtime") < at("@h:\n[2, 4)"), "{text}");
    // An on_event that fails: the event itself and the maps still print, after the error.
    let (code, text) = sonde_merged(&[
        "--engine",
        "jit",
        "-P",
        "fn on_event(e) { e.args[5] + 1 }\nfn on_end(maps) { print(\"never\"); }",
        "-e",
        "BEGIN { @n = 7; printf(\"event %d\\n\", 1); exit(); }",
    ]);
    assert_eq!(code, Some(1), "{text}");
    assert!(!text.contains("never\n"), "{text}");
    let at = |s: &str| {
        text.find(s)
            .unwrap_or_else(|| panic!("no {s:?} in:\n{text}"))
    };
    assert!(at("sonde::post::runtime") < at("event 1\n"), "{text}");
    assert!(at("event 1\n") < at("@n: 7"), "{text}");
}

/// Sends `signal` to a sonde whose report is stuck in a loop (`post`), once it has run a
/// moment; it must end within a few seconds, with the maps printed.
fn signal_ends_a_stuck_report(signal: libc::c_int, post: &str, script: &str) {
    let mut t = common::Tracer::start(&["--engine", "jit", "-P", post, "-e", script]);
    assert!(t.wait_attached(Duration::from_secs(20)), "never attached");
    std::thread::sleep(Duration::from_millis(1500));
    assert!(t.running(), "the loop ended by itself");
    // SAFETY: kill(2) on the pid of a child this test started and has not reaped.
    unsafe { libc::kill(t.pid() as libc::pid_t, signal) };
    let start = Instant::now();
    let out = t.finish(Duration::from_secs(10));
    let took = start.elapsed();
    assert!(
        !out.timed_out && took < Duration::from_secs(5),
        "{took:?} {out:?}"
    );
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr.contains("sonde::post::interrupted") && out.stderr.contains("stopped by Ctrl-C"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.contains("@x: 1"), "{out:?}");
}

#[test]
fn sigint_ends_a_report_stuck_in_on_end() {
    // Each push checks the array's size: this loop stays under the operation limit for
    // hours, and used to ignore Ctrl-C.
    signal_ends_a_stuck_report(
        libc::SIGINT,
        "fn on_end(maps) { let a = []; loop { a.push(1); } }",
        "BEGIN { @x = 1; exit(); }",
    );
}

#[test]
fn sigterm_ends_a_report_stuck_in_on_event() {
    signal_ends_a_stuck_report(
        libc::SIGTERM,
        "fn on_event(e) { let a = []; loop { a.push(1); } }",
        "BEGIN { @x = 1; printf(\"go\\n\"); exit(); }",
    );
}
