//! The probe types sonde runs itself or puts on addresses, as bpftrace 0.26 defines them:
//! `self:signal:SIGUSR1` (run when sonde receives the signal), `watchpoint:ADDR:LEN:MODE`
//! (hardware breakpoints, on `tests/targets/watch_target.c` built with `-no-pie` so that
//! `nm` gives its run-time addresses), and `test:`/`bench:` probes under `--test`/`--bench`.
//!
//! The target stores to `watched` 5 times, loads it 3 times and calls `watched_fn` 3 times.

mod common;

use common::{
    ATTACH_TIMEOUT, TIMEOUT, Target, TempDir, Tracer, compile_target, run_sonde, settle,
    skip_unless_root, with_exit_maps,
};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// The address of `symbol` in `bin`, from `nm`.
fn address_of(bin: &Path, symbol: &str) -> u64 {
    let out = Command::new("nm").arg(bin).output().expect("nm");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.split_whitespace().nth(2) == Some(symbol))
        .unwrap_or_else(|| panic!("{symbol} not in nm output:\n{text}"));
    u64::from_str_radix(line.split_whitespace().next().unwrap(), 16).unwrap()
}

/// The target, built without PIE.
fn target(dir: &TempDir) -> std::path::PathBuf {
    compile_target(dir, "watch_target", &["-O2", "-no-pie"])
}

/// Traces the waiting target with `-p` and `prog`; returns sonde's output once the target
/// exited (which ends the run).
fn trace_pid(bin: &Path, prog: &str) -> common::Output {
    let mut t = Target::spawn(bin, &["wait"]);
    let pid = t.pid();
    let mut tracer = Tracer::start(&["-p", &pid, "-e", prog]);
    assert!(tracer.wait_attached(ATTACH_TIMEOUT), "not attached");
    settle();
    t.go();
    assert_eq!(t.wait(Duration::from_secs(10)), Some(0));
    let out = tracer.finish(TIMEOUT);
    assert!(!out.timed_out, "{out:?}");
    out
}

#[test]
fn write_watchpoint_counts_every_store_of_the_process() {
    if skip_unless_root("write_watchpoint_counts_every_store_of_the_process") {
        return;
    }
    let dir = TempDir::new("watch-w");
    let bin = target(&dir);
    let addr = address_of(&bin, "watched");
    let prog = format!("watchpoint:{addr:#x}:8:w {{ @w = count(); @p[probe] = count(); }}");
    let out = trace_pid(&bin, &prog);
    // bpftrace names the probe after the traced program (`/proc/PID/exe`) and the address
    // in decimal.
    let stdout = out.ok_stdout();
    let pid_line = stdout
        .lines()
        .find(|l| l.starts_with("@p["))
        .unwrap_or_default();
    assert!(
        pid_line.starts_with("@p[watchpoint:/proc/")
            && pid_line.ends_with(&format!("/exe:{addr}:8:w]: 5")),
        "{stdout}"
    );
    assert!(stdout.contains("@w: 5\n"), "{stdout}");
}

#[test]
fn read_write_watchpoint_also_counts_loads() {
    if skip_unless_root("read_write_watchpoint_also_counts_loads") {
        return;
    }
    let dir = TempDir::new("watch-rw");
    let bin = target(&dir);
    let addr = address_of(&bin, "watched");
    // `wr` is `rw` once sorted, as in bpftrace.
    let prog = format!("w:{addr}:8:wr {{ @rw = count(); }}");
    let out = trace_pid(&bin, &prog);
    assert_eq!(out.ok_stdout(), with_exit_maps("", "@rw: 8\n"));
}

#[test]
fn execution_breakpoint_counts_calls() {
    if skip_unless_root("execution_breakpoint_counts_calls") {
        return;
    }
    let dir = TempDir::new("watch-x");
    let bin = target(&dir);
    let addr = address_of(&bin, "watched_fn");
    let prog = format!("watchpoint:{addr:#x}:1:x {{ printf(\"call %d\\n\", reg(\"di\")); }}");
    let out = trace_pid(&bin, &prog);
    assert_eq!(out.ok_stdout(), "call 0\ncall 1\ncall 2\n\n\n");
}

#[test]
fn watchpoint_on_a_command_is_named_after_its_path() {
    if skip_unless_root("watchpoint_on_a_command_is_named_after_its_path") {
        return;
    }
    let dir = TempDir::new("watch-c");
    let bin = target(&dir);
    let addr = address_of(&bin, "watched");
    let cmd = format!("{} now", bin.display());
    let prog = format!("watchpoint:{addr:#x}:8:w {{ @[probe] = count(); }}");
    let out = run_sonde(&["-c", &cmd, "-e", &prog]);
    assert_eq!(
        out.ok_stdout(),
        with_exit_maps(
            "",
            &format!("@[watchpoint:{}:{addr}:8:w]: 5\n", bin.display())
        )
    );
}

#[test]
fn watchpoint_refusals() {
    // Shape errors are the checker's (no root needed).
    let bad = run_sonde(&["--check", "-e", "watchpoint:0x1000:8:r { }"]);
    assert_eq!(bad.code, Some(1), "{bad:?}");
    assert!(
        bad.stderr.contains("invalid watchpoint mode: r"),
        "{}",
        bad.stderr
    );
    assert!(
        bad.stderr.contains("supported modes: rw,w,x"),
        "{}",
        bad.stderr
    );
    let len = run_sonde(&["--check", "-e", "watchpoint:0x1000:3:w { }"]);
    assert!(
        len.stderr
            .contains("watchpoint length must be one of (1,2,4,8)")
    );
    let func = run_sonde(&["--check", "-e", "watchpoint:increment+arg0:4:w { }"]);
    assert!(
        func.stderr.contains("bpftrace 0.26 removed it"),
        "{}",
        func.stderr
    );
    let aw = run_sonde(&["--check", "-e", "asyncwatchpoint:0x1000:4:w { }"]);
    assert!(aw.stderr.contains("unknown probe type `asyncwatchpoint`"));
    if skip_unless_root("watchpoint_refusals") {
        return;
    }
    // A user address needs the process it belongs to.
    let user = run_sonde(&["-e", "watchpoint:0x10000000:8:w { }"]);
    assert_eq!(user.code, Some(1), "{user:?}");
    assert!(
        user.stderr
            .contains("cannot watch 0x10000000: a user-space address needs the process"),
        "{}",
        user.stderr
    );
}

#[test]
fn self_signal_runs_in_sonde_at_each_sigusr1() {
    if skip_unless_root("self_signal_runs_in_sonde_at_each_sigusr1") {
        return;
    }
    let mut tracer = Tracer::start(&[
        "-e",
        r#"self:signal:SIGUSR1 { @n = count(); printf("%s %d %d\n", probe, @n, pid); }"#,
    ]);
    assert!(tracer.wait_attached(ATTACH_TIMEOUT));
    let me = tracer.pid();
    for _ in 0..3 {
        // SAFETY: kill(2) on the pid of the sonde this test started.
        unsafe { libc::kill(me as libc::pid_t, libc::SIGUSR1) };
        std::thread::sleep(Duration::from_millis(300));
    }
    tracer.interrupt();
    let out = tracer.finish(TIMEOUT);
    let line = |n: u32| format!("self:signal:SIGUSR1 {n} {me}\n");
    assert_eq!(
        out.ok_stdout(),
        with_exit_maps(&format!("{}{}{}", line(1), line(2), line(3)), "@n: 3\n")
    );
}

#[test]
fn sigusr1_without_self_probes_is_ignored() {
    if skip_unless_root("sigusr1_without_self_probes_is_ignored") {
        return;
    }
    let mut tracer = Tracer::start(&["-e", "interval:ms:50 { @t = count(); }"]);
    assert!(tracer.wait_attached(ATTACH_TIMEOUT));
    // SAFETY: kill(2) on the pid of the sonde this test started.
    unsafe { libc::kill(tracer.pid() as libc::pid_t, libc::SIGUSR1) };
    std::thread::sleep(Duration::from_millis(200));
    assert!(tracer.running(), "SIGUSR1 ended sonde");
    tracer.interrupt();
    let out = tracer.finish(TIMEOUT);
    assert_eq!(out.code, Some(0));
    assert!(out.stdout.contains("@t: "), "{out:?}");
}

/// `--test` output with each duration, `(1 ns)`/`(1000 μs)`..., replaced by `(D)`.
fn without_durations(text: &str) -> String {
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        match line.rfind(" (") {
            Some(i) if line.trim_end().ends_with(')') && line.contains("[ ") => {
                out.push_str(&line[..i]);
                out.push_str(" (D)\n");
            }
            _ => out.push_str(line),
        }
    }
    out
}

const G: &str = "\x1b[32m";
const R: &str = "\x1b[31m";
const Z: &str = "\x1b[0m";

#[test]
fn tests_pass_fail_and_show_the_output_of_failures() {
    if skip_unless_root("tests_pass_fail_and_show_the_output_of_failures") {
        return;
    }
    let prog = r#"
BEGIN { printf("begin\n"); }
test:okay { printf("hidden\n"); @ok = count(); }
test:exits { printf("shown %d\n", 7); exit(3); }
test:errs { errorf("bad %d", 1); }
test:zero_exit { exit(); }
END { printf("end %d\n", @ok); }
"#;
    let out = run_sonde(&["--test", "-e", prog]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert_eq!(
        without_durations(&out.stdout),
        format!(
            "begin\n\
             {G}[==========]{Z} Running 4 tests.\n\
             {G}[ RUN      ]{Z} okay\n\
             {G}[       OK ]{Z} okay (D)\n\
             {G}[ RUN      ]{Z} exits\n\
             shown 7\n\
             {R}[  FAILED  ]{Z} exits (D)\n\
             {G}[ RUN      ]{Z} errs\n\
             stdin:5:13-32: ERROR: bad 1\n\
             {R}[  FAILED  ]{Z} errs (D)\n\
             {G}[ RUN      ]{Z} zero_exit\n\
             {G}[       OK ]{Z} zero_exit (D)\n\
             {G}[==========]{Z} 4 tests ran.\n\
             {G}[  PASSED  ]{Z} 2 tests.\n\
             {R}[  FAILED  ]{Z} 2 tests, listed below:\n\
             {R}[  FAILED  ]{Z} exits\n\
             {R}[  FAILED  ]{Z} errs\n\
             end 1\n\n\n"
        )
    );
    // No "Attached" line, and the maps are not printed.
    assert!(!out.stderr.contains("Attached"), "{}", out.stderr);
    // `errorf` is shown with the failed test's output, as bpftrace captures it.
    assert!(!out.stderr.contains("bad 1"), "{}", out.stderr);
    // Each duration is bpftrace's unit scale.
    for line in out.stdout.lines().filter(|l| l.contains("[       OK ]")) {
        assert!(
            ["(1 ns)", "(1000 μs)", "(1000000 ms)"]
                .iter()
                .any(|d| line.ends_with(d)),
            "{line}"
        );
    }
}

#[test]
fn tests_fail_by_returning_non_zero() {
    if skip_unless_root("tests_fail_by_returning_non_zero") {
        return;
    }
    // The documentation's example, a value computed at run time, and `return` in a loop
    // whose body runs as a `bpf_loop` callback.
    let prog = r#"
test:okay { print("I'm okay! This output will be suppressed."); }
test:failure { print("This is a failure! This output will be shown"); return 1; }
test:zero { printf("hidden\n"); return 0; printf("never\n"); }
test:computed { $x = 5; if ($x > 2) { return $x - 5; } return 7; }
test:in_loop { $n = 10; for ($i : 0..$n) { if ($i == 3) { printf("i=%d\n", $i); return $i; } } }
"#;
    let out = run_sonde(&["--test", "-e", prog]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert_eq!(
        without_durations(&out.stdout),
        format!(
            "{G}[==========]{Z} Running 5 tests.\n\
             {G}[ RUN      ]{Z} okay\n\
             {G}[       OK ]{Z} okay (D)\n\
             {G}[ RUN      ]{Z} failure\n\
             This is a failure! This output will be shown\n\
             {R}[  FAILED  ]{Z} failure (D)\n\
             {G}[ RUN      ]{Z} zero\n\
             {G}[       OK ]{Z} zero (D)\n\
             {G}[ RUN      ]{Z} computed\n\
             {G}[       OK ]{Z} computed (D)\n\
             {G}[ RUN      ]{Z} in_loop\n\
             i=3\n\
             {R}[  FAILED  ]{Z} in_loop (D)\n\
             {G}[==========]{Z} 5 tests ran.\n\
             {G}[  PASSED  ]{Z} 3 tests.\n\
             {R}[  FAILED  ]{Z} 2 tests, listed below:\n\
             {R}[  FAILED  ]{Z} failure\n\
             {R}[  FAILED  ]{Z} in_loop\n\n\n"
        )
    );
    // `printf("never")` after `return 0` is bpftrace 0.27's one warning.
    assert_eq!(
        out.stderr.matches("Unreachable statement.").count(),
        1,
        "{out:?}"
    );
    let ok = run_sonde(&[
        "--test",
        "-e",
        "test:a { return 0; } test:b { $z = 0; return $z; }",
    ]);
    assert_eq!(ok.code, Some(0), "{ok:?}");
    assert!(without_durations(&ok.stdout).ends_with(&format!(
        "{G}[==========]{Z} 2 tests ran.\n{G}[  PASSED  ]{Z} 2 tests.\n\n\n"
    )));
    // A value that is no integer is refused before anything runs.
    let bad = run_sonde(&["--test", "-e", "test:s { return \"tomato\"; }"]);
    assert_eq!(bad.code, Some(1), "{bad:?}");
    assert_eq!(bad.stdout, "");
    assert!(
        bad.stderr.contains("sonde::sema::return_type"),
        "{}",
        bad.stderr
    );
    assert!(
        bad.stderr
            .contains("Probe return values can only be integers. Found string[7]"),
        "{}",
        bad.stderr
    );
}

#[test]
fn passing_tests_exit_zero_and_json_results() {
    if skip_unless_root("passing_tests_exit_zero_and_json_results") {
        return;
    }
    let prog = r#"test:a { @x = 1; } test:b { printf("quiet\n"); }"#;
    let out = run_sonde(&["--test", "-e", prog]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(without_durations(&out.stdout).ends_with(&format!(
        "{G}[==========]{Z} 2 tests ran.\n{G}[  PASSED  ]{Z} 2 tests.\n\n\n"
    )));
    let json = run_sonde(&[
        "--test",
        "-f",
        "json",
        "-e",
        "test:t { printf(\"x\\n\"); exit(1); }",
    ]);
    assert_eq!(json.code, Some(1), "{json:?}");
    let line = json.stdout.lines().next().unwrap_or_default();
    assert!(
        line.starts_with(r#"{"type": "test_result", "data": {"t": {"duration": "#)
            && line.ends_with(r#", "passed": false, "output": "x\n"}}}"#),
        "{line}"
    );
}

#[test]
fn benchmarks_are_timed_over_a_millisecond() {
    if skip_unless_root("benchmarks_are_timed_over_a_millisecond") {
        return;
    }
    let prog = r#"
bench:count { @b = count(); }
bench:my_loop { $a = 0; for ($i : 0..10) { $a++; } @a = $a; }
"#;
    let out = run_sonde(&["--bench", "-e", prog]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        lines[0],
        format!("{:<41}{:<15}Iterations", "Benchmark", "Time(ns)")
    );
    assert_eq!(lines[1], "-".repeat(66));
    let mut names = Vec::new();
    for row in &lines[2..4] {
        let name = row[..41].trim_end();
        let ns: u64 = row[41..56].trim_end().parse().unwrap();
        let iters: u64 = row[56..].parse().unwrap();
        // bpftrace's growth: 1, 1000, 100000 ... then doubling, until 1 ms in all.
        assert!(ns * iters >= 1_000_000, "{row}");
        assert!(ns > 0 && iters >= 1000, "{row}");
        names.push(name.to_string());
    }
    assert_eq!(names, ["count", "my_loop"]);
    assert_eq!(&lines[4..], ["", ""]);
}

#[test]
fn benchmarks_returning_non_zero_are_skipped() {
    if skip_unless_root("benchmarks_returning_non_zero_are_skipped") {
        return;
    }
    let prog = r#"
bench:count { @b = count(); }
bench:skipped { @c = count(); return 1; }
bench:last { $x = 1; if ($x) { return 0; } @d = count(); }
"#;
    let out = run_sonde(&["--bench", "-e", prog]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 6, "{}", out.stdout);
    assert_eq!(
        lines[0],
        format!("{:<41}{:<15}Iterations", "Benchmark", "Time(ns)")
    );
    let names: Vec<&str> = lines[2..4].iter().map(|r| r[..41].trim_end()).collect();
    assert_eq!(names, ["count", "last"]);
    assert_eq!(&lines[4..], ["", ""]);
    assert_eq!(out.stderr, "", "{out:?}");
    // The header comes with the first benchmark's row (bpftrace 0.26): skipping the first
    // leaves the table without it.
    let first = run_sonde(&["--bench", "-e", "bench:a { return 1; } bench:b { }"]);
    assert_eq!(first.code, Some(0), "{first:?}");
    let rows: Vec<&str> = first.stdout.lines().collect();
    assert_eq!(rows.len(), 3, "{}", first.stdout);
    assert_eq!(rows[0][..41].trim_end(), "b");
    assert_eq!(&rows[1..], ["", ""]);
}

#[test]
fn test_probes_need_test_mode() {
    if skip_unless_root("test_probes_need_test_mode") {
        return;
    }
    let out = run_sonde(&["-e", "test:a { }"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr
            .contains("No probes attached; use --test to run test probes."),
        "{}",
        out.stderr
    );
    // With other probes they are ignored.
    let out = run_sonde(&[
        "-e",
        "BEGIN { printf(\"b\\n\"); exit(); } test:a { printf(\"t\\n\"); }",
    ]);
    assert_eq!(out.ok_stdout(), "b\n\n\n");
    let dup = run_sonde(&["--test", "-e", "test:a { } test:a { }"]);
    assert!(
        dup.stderr
            .contains("\"a\" was used as the name for more than one TEST probe"),
        "{}",
        dup.stderr
    );
}

#[test]
fn list_shows_self_probes() {
    if skip_unless_root("list_shows_self_probes") {
        return;
    }
    let out = run_sonde(&["-l", "self:*"]);
    assert_eq!(out.ok_stdout(), "self:signal:SIGUSR1\n");
    let all = run_sonde(&["-l", "*SIGUSR*"]);
    assert_eq!(all.ok_stdout(), "");
}
