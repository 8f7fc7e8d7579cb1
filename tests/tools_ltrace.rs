//! The ltrace tool: `ltrace -c` style counts and times of a library's functions called by a
//! `-c` child. Calls are counted at the functions themselves: an IFUNC (glibc's `strlen`) at
//! the implementation the dynamic linker picks, not at its resolver (which runs once), and
//! aliases of one function (`malloc`, `__libc_malloc`) once, under the public name.

mod common;

use common::{TempDir, build_target, compile_target, run_sonde_timeout, skip_unless_root};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// The `(calls, function)` rows of an `ltrace -c` report (the total line excluded).
fn report_rows(stdout: &str) -> BTreeMap<String, u64> {
    let mut rows = BTreeMap::new();
    for line in stdout.lines().skip(3) {
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols.len() == 5
            && cols[4] != "total"
            && let Ok(calls) = cols[3].parse()
        {
            rows.insert(cols[4].to_string(), calls);
        }
    }
    rows
}

/// Runs the ltrace tool on `cmd` for `functions` and returns its rows, after checking that
/// it ran cleanly.
fn ltrace(cmd: &str, functions: &str) -> (BTreeMap<String, u64>, String) {
    let out = run_sonde_timeout(
        &["tool", "ltrace", "-c", cmd, functions],
        Duration::from_secs(60),
    );
    assert!(!out.timed_out, "timed out: {}", out.stderr);
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    (report_rows(&out.stdout), out.stdout)
}

#[test]
fn ltrace_counts_ifunc_calls_at_the_implementation_and_aliases_once() {
    if skip_unless_root("ltrace_counts_ifunc_calls_at_the_implementation_and_aliases_once") {
        return;
    }
    let dir = TempDir::new("ltrace-ifunc");
    // strlen exactly 1000 times, malloc exactly 300 times, all through libc.
    let bin = compile_target(&dir, "ltrace_calls", &["-O0", "-fno-builtin"]);
    let cmd = bin.display().to_string();
    // libc's strlen is an IFUNC: its symbol is the resolver, run once per relocation.
    let (rows, stdout) = ltrace(&cmd, "libc:strlen");
    assert_eq!(rows.get("strlen"), Some(&1000), "{stdout}");
    // malloc and __libc_malloc are one function: one probe, one line, every call once.
    let (rows, stdout) = ltrace(&cmd, "libc:*malloc");
    assert_eq!(rows.get("malloc"), Some(&300), "{stdout}");
    assert!(!rows.contains_key("__libc_malloc"), "{stdout}");
}

/// Builds `tests/targets/libifunc.c` (stripped, like the system libc) and
/// `tests/targets/ifunc_calls.c` linked to it; returns (program, library).
fn build_ifunc_target(dir: &TempDir) -> (PathBuf, PathBuf) {
    let targets = common::repo_root().join("tests/targets");
    let lib = dir.path().join("libifunc.so");
    let bin = dir.path().join("ifunc_calls");
    let gcc = |args: &[&str]| {
        let out = Command::new("gcc").args(args).output().expect("gcc runs");
        assert!(
            out.status.success(),
            "gcc {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let d = dir.path().to_str().unwrap();
    gcc(&[
        "-O2",
        "-fPIC",
        "-shared",
        "-s",
        "-Wl,-soname,libifunc.so",
        "-o",
        lib.to_str().unwrap(),
        targets.join("libifunc.c").to_str().unwrap(),
    ]);
    gcc(&[
        "-O2",
        "-o",
        bin.to_str().unwrap(),
        targets.join("ifunc_calls.c").to_str().unwrap(),
        &format!("-L{d}"),
        "-lifunc",
        &format!("-Wl,-rpath,{d}"),
    ]);
    (bin, lib)
}

#[test]
fn ifuncs_of_a_library_sonde_has_not_loaded_are_resolved_outside_sonde() {
    if skip_unless_root("ifuncs_of_a_library_sonde_has_not_loaded_are_resolved_outside_sonde") {
        return;
    }
    let dir = TempDir::new("ltrace-ifunc-lib");
    let (bin, lib) = build_ifunc_target(&dir);
    let log = dir.path().join("ctor.log");
    let cmd = format!("{} 500", bin.display());
    let out = Command::new(common::sonde())
        .args(["tool", "ltrace", "-c", &cmd])
        .arg(format!("{}:ifunc_*", lib.display()))
        .env("SONDE_CTOR_LOG", &log)
        .output()
        .expect("sonde runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(
        report_rows(&stdout).get("ifunc_pick"),
        Some(&500),
        "{stdout}{stderr}"
    );
    assert!(!stderr.contains("Warning"), "{stderr}");
    // The library's constructor ran in the traced program and in the resolution helper
    // (sonde re-executed as `/proc/self/exe --sonde-internal-resolve-ifuncs LIB NAME...`),
    // never in sonde itself.
    let loaders = std::fs::read_to_string(&log).unwrap_or_default();
    let helper = format!(
        "/proc/self/exe --sonde-internal-resolve-ifuncs {} ifunc_pick",
        lib.display()
    );
    let program = format!("{} 500", bin.display());
    let mut lines: Vec<&str> = loaders.lines().map(str::trim_end).collect();
    lines.sort_unstable();
    let mut expected = [helper.as_str(), program.as_str()];
    expected.sort_unstable();
    assert_eq!(lines, expected, "{loaders}");
}

#[test]
fn listing_shows_each_function_once() {
    let out = common::run_sonde(&["-l", "uprobe:libc:*malloc"]);
    let names: Vec<&str> = out
        .ok_stdout()
        .lines()
        .map(|l| l.rsplit(':').next().unwrap())
        .collect();
    assert!(names.contains(&"malloc"), "{names:?}");
    assert!(!names.contains(&"__libc_malloc"), "{names:?}");
    let out = common::run_sonde(&["-l", "uprobe:libc:str*"]);
    let lines: Vec<&str> = out.ok_stdout().lines().collect();
    let mut unique = lines.clone();
    unique.dedup();
    assert_eq!(lines, unique);
    assert!(lines.iter().any(|l| l.ends_with(":strlen")), "{lines:?}");
}

#[test]
fn ltrace_counts_the_libc_calls_of_a_command() {
    if skip_unless_root("ltrace_counts_the_libc_calls_of_a_command") {
        return;
    }
    let dir = TempDir::new("ltrace");
    let bin = build_target(&dir, "burst");
    // burst makes its getppid calls through libc's syscall().
    let cmd = format!("{} 1000", bin.display());
    let out = run_sonde_timeout(
        &["tool", "ltrace", "-c", &cmd, "libc:sysc*"],
        Duration::from_secs(60),
    );
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        lines[0],
        "Tracing calls to \"libc:sysc*\"... Hit Ctrl-C to end."
    );
    assert_eq!(
        lines[1],
        "% time     seconds  usecs/call     calls      function"
    );
    let row: Vec<&str> = lines[3].split_whitespace().collect();
    assert_eq!(
        (row[0], row[3], row[4]),
        ("100.00", "1000", "syscall"),
        "{}",
        out.stdout
    );
    let total: Vec<&str> = lines[5].split_whitespace().collect();
    assert_eq!(
        (total[0], total[2], total[3]),
        ("100.00", "1000", "total"),
        "{}",
        out.stdout
    );
    assert_eq!(row[1], total[1], "the only function has all the time");
}
