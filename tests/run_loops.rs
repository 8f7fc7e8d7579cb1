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
                .contains("Warning: 1 loops cut to 8388608 iterations"),
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
