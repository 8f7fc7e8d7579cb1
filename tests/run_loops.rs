//! `for` loops: over a map (`bpf_for_each_map_elem`) and over ranges whose bounds are known only
//! at run time (`bpf_loop`), with break, continue, return and outer variables.

mod common;

use common::{TempDir, build_target, run_sonde, run_sonde_timeout, skip_unless_root};
use std::time::Duration;

#[test]
fn for_over_a_map_sees_every_element_and_updates_outer_variables() {
    if skip_unless_root("for_over_a_map_sees_every_element_and_updates_outer_variables") {
        return;
    }
    let prog = r#"BEGIN { @a[1] = 10; @a[2] = 20; @a[3] = 30; }
BEGIN { $sum = 0; $n = 0; for ($kv : @a) { $sum += $kv.1; $n++; } printf("n=%d sum=%d\n", $n, $sum); clear(@a); exit(); }"#;
    let out = run_sonde(&["-q", "-e", prog]);
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "n=3 sum=60\n\n\n");
}

#[test]
fn break_continue_and_return_inside_loops() {
    if skip_unless_root("break_continue_and_return_inside_loops") {
        return;
    }
    let prog = r#"BEGIN { $n = 10; $s = 0;
  for ($i : 0..$n) { if ($i == 2) { continue; } if ($i == 5) { break; } $s += $i; }
  printf("s=%d\n", $s);
  for ($j : 0..$n) { if ($j == 3) { printf("leaving at %d\n", $j); return; } }
  printf("not reached\n"); }
END { printf("end\n"); }"#;
    let out = run_sonde(&["-q", "-e", prog]);
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "s=8\nleaving at 3\nend\n\n\n");
}

/// A count map's value in the loop is the total over every CPU, as printing shows it.
#[test]
fn for_over_a_count_map_sums_all_cpus() {
    if skip_unless_root("for_over_a_count_map_sums_all_cpus") {
        return;
    }
    let dir = TempDir::new("loops");
    let bin = renamed(&build_target(&dir, "burst"), "loopburst");
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    // One burst of 1000 events per CPU, each pinned to its CPU.
    let mut cmd = String::from("sh -c '");
    for cpu in 0..cpus {
        cmd += &format!("taskset -c {cpu} {} 1000; ", bin.display());
    }
    cmd += "'";
    let prog = r#"tracepoint:syscalls:sys_enter_getppid /comm == "loopburst"/ { @c[comm] = count(); @cpu[cpu] = count(); }
END { for ($kv : @c) { printf("%s %d\n", $kv.0, $kv.1); } clear(@c); clear(@cpu); }"#;
    let out = run_sonde_timeout(&["-q", "-c", &cmd, "-e", prog], Duration::from_secs(30));
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout, format!("loopburst {}\n\n\n", 1000 * cpus));
}

/// Reading an aggregation in a probe gives its total over every CPU, as printing shows it.
#[test]
fn reading_an_aggregation_in_a_probe_combines_all_cpus() {
    if skip_unless_root("reading_an_aggregation_in_a_probe_combines_all_cpus") {
        return;
    }
    let dir = TempDir::new("aggread");
    let bin = renamed(&build_target(&dir, "burst"), "readburst");
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut cmd = String::from("sh -c '");
    for cpu in 0..cpus {
        cmd += &format!("taskset -c {cpu} {} {}; ", bin.display(), 100 * (cpu + 1));
    }
    cmd += "'";
    let prog = r#"tracepoint:syscalls:sys_enter_getppid /comm == "readburst"/ { @c = count(); @s = sum(2); @mx[comm] = max(cpu); @mn = min(cpu); @a = avg(cpu); }
END { printf("%d %d %d %d %d\n", @c, @s, @mx["readburst"], @mn, @a); clear(@c); clear(@s); clear(@mx); clear(@mn); clear(@a); }"#;
    let out = run_sonde_timeout(&["-q", "-c", &cmd, "-e", prog], Duration::from_secs(30));
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let n: usize = (1..=cpus).map(|c| 100 * c).sum();
    let weighted: usize = (0..cpus).map(|c| c * 100 * (c + 1)).sum();
    assert_eq!(
        out.stdout,
        format!("{n} {} {} 0 {}\n\n\n", 2 * n, cpus - 1, weighted / n)
    );
}

/// A copy of `bin` under another file name: its processes get that name as `comm`, so that
/// tests running at the same time tell their events apart.
fn renamed(bin: &std::path::Path, name: &str) -> std::path::PathBuf {
    let to = bin.with_file_name(name);
    std::fs::copy(bin, &to).expect("copy the target");
    to
}

/// A constant range longer than bpf_loop's limit (which would run zero times) is refused on
/// its span, naming the limit.
#[test]
fn a_constant_range_beyond_the_bpf_loop_limit_is_refused() {
    let out = run_sonde(&[
        "--check",
        "-e",
        "BEGIN { for ($i : 0..8388609) { printf(\"%d\\n\", $i); } }",
    ]);
    assert_ne!(out.code, Some(0), "stdout: {}", out.stdout);
    assert!(
        out.stderr.contains("sonde::sema::loop_too_long") && out.stderr.contains("8388608"),
        "stderr: {}",
        out.stderr
    );
    // At the limit it is accepted.
    let out = run_sonde(&[
        "--check",
        "-e",
        "BEGIN { for ($i : 0..8388608) { printf(\"%d\\n\", $i); } }",
    ]);
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
}

/// A run-time range beyond bpf_loop's limit runs the limit's iterations (not zero) and the
/// cut is reported, in both engines and both formats.
#[test]
fn a_runtime_range_beyond_the_bpf_loop_limit_is_cut_and_reported() {
    if skip_unless_root("a_runtime_range_beyond_the_bpf_loop_limit_is_cut_and_reported") {
        return;
    }
    let prog = "BEGIN { $n = 8388700; $s = 0; for ($i : 0..$n) { $s += 1; } printf(\"s=%d\\n\", $s); exit(); }";
    for engine in ["bpf", "jit"] {
        let out = run_sonde_timeout(
            &["-q", "--engine", engine, "-e", prog],
            Duration::from_secs(60),
        );
        assert_eq!(out.code, Some(0), "{engine}: stderr: {}", out.stderr);
        assert_eq!(
            out.stdout, "s=8388608\n\n\n",
            "{engine}: stderr: {}",
            out.stderr
        );
        assert!(
            out.stderr
                .contains("WARNING: 1 loops cut to 8388608 iterations"),
            "{engine}: stderr: {}",
            out.stderr
        );
        let out = run_sonde_timeout(
            &["-q", "-f", "json", "--engine", engine, "-e", prog],
            Duration::from_secs(60),
        );
        assert_eq!(out.code, Some(0), "{engine}: stderr: {}", out.stderr);
        assert!(
            out.stdout
                .contains(r#"{"type": "loops_cut", "data": {"loops": 1, "limit": 8388608}}"#),
            "{engine}: stdout: {}",
            out.stdout
        );
    }
}

/// Run-time loops nested in run-time loops load every time and count exactly. Each loop body
/// is a callback and an inner loop's body a callback of that callback; aya once linked these
/// in hash-map order and about one load in two was rejected ("same or smaller insn offset
/// than previous func info record"), so each script runs several times.
#[test]
fn nested_runtime_loops_load_every_time() {
    if skip_unless_root("nested_runtime_loops_load_every_time") {
        return;
    }
    let cases = [
        // Two levels, with the loop variables of both.
        (
            "BEGIN { $n = 3; $s = 0; for ($i : 0..$n) { for ($j : 0..$n) { @x += 1; $s += $i * 10 + $j; } } printf(\"x=%d s=%d\\n\", @x, $s); clear(@x); exit(); }",
            "x=9 s=99\n",
        ),
        // Three levels of different lengths.
        (
            "BEGIN { $a = 2; $b = 3; $c = 4; $s = 0; for ($i : 0..$a) { for ($j : 0..$b) { for ($k : 0..$c) { @x += 1; $s += $i * 100 + $j * 10 + $k; } } } printf(\"x=%d s=%d\\n\", @x, $s); clear(@x); exit(); }",
            "x=24 s=1476\n",
        ),
        // A range loop in a loop over a map (bpf_loop in bpf_for_each_map_elem).
        (
            "BEGIN { @m[1] = 2; @m[2] = 3; @m[3] = 4; $s = 0; for ($kv : @m) { $n = $kv.1; for ($j : 0..$n) { $s += $kv.0; } } printf(\"s=%d\\n\", $s); clear(@m); exit(); }",
            "s=20\n",
        ),
        // Nested range loops in a while loop, and a while loop in a nested range loop.
        (
            "BEGIN { $i = 0; $s = 0; while ($i < 4) { $i++; $n = $i; for ($j : 0..$n) { for ($k : 0..$n) { $s += 1; } } } $t = 0; for ($j : 0..$i) { for ($k : 0..$i) { $w = 0; while ($w < 3) { $w++; $t += $k; } } } printf(\"s=%d t=%d\\n\", $s, $t); exit(); }",
            "s=30 t=72\n",
        ),
        // Two nests in one probe and one in another probe.
        (
            "BEGIN { $n = 2; for ($i : 0..$n) { for ($j : 0..$n) { @a += 1; } } $m = 3; for ($i : 0..$m) { for ($j : 0..$m) { @b += 1; } } printf(\"a=%d b=%d\\n\", @a, @b); clear(@a); clear(@b); }
BEGIN { $n = 4; for ($i : 0..$n) { for ($j : 0..$n) { @c += 1; } } printf(\"c=%d\\n\", @c); clear(@c); exit(); }",
            "a=4 b=9\nc=16\n",
        ),
    ];
    for (prog, want) in cases {
        for run in 0..4 {
            let out = run_sonde(&["-q", "-e", prog]);
            assert_eq!(
                out.code,
                Some(0),
                "run {run} of {prog}: stderr: {}",
                out.stderr
            );
            assert_eq!(out.stdout, format!("{want}\n\n"), "run {run} of {prog}");
        }
    }
}

/// A uprobe with nested run-time loops (loaded by aya: its callbacks need linking) and one
/// without (loaded for a uprobe-multi link) both see every call.
#[test]
fn nested_runtime_loops_in_a_uprobe() {
    if skip_unless_root("nested_runtime_loops_in_a_uprobe") {
        return;
    }
    let dir = TempDir::new("uploops");
    let bin = renamed(&build_target(&dir, "burst"), "uploopburst");
    let cmd = format!("{} 5", bin.display());
    let prog = "uprobe:libc:syscall /pid == cpid/ { $n = 3; for ($i : 0..$n) { for ($j : 0..$n) { @x += 1; } } }
uprobe:libc:syscall /pid == cpid/ { @y += 1; }
END { printf(\"x=%d y=%d\\n\", @x, @y); clear(@x); clear(@y); }";
    for run in 0..3 {
        let out = run_sonde_timeout(&["-q", "-c", &cmd, "-e", prog], Duration::from_secs(30));
        assert_eq!(out.code, Some(0), "run {run}: stderr: {}", out.stderr);
        assert_eq!(out.stdout, "x=45 y=5\n\n\n", "run {run}");
    }
}
