//! Sampling and timer probes for real: `profile` with kernel and user stacks, `software`
//! events, `hardware` events on a machine without a PMU, and `interval` in its units.
//!
//! Samples are filtered on the `-c` child's pid (`cpid`): other programs may run here.

mod common;
mod probes_support;

use common::{run_sonde, skip_unless_root, with_exit_maps};
use probes_support::{build_probe_target, frame_name, parse_stacks};
use std::time::Instant;

#[test]
fn profile_kstack_of_a_syscall_loop_shows_the_syscall_path() {
    if skip_unless_root("profile_kstack_of_a_syscall_loop_shows_the_syscall_path") {
        return;
    }
    let t = build_probe_target("prof-k");
    // busy_loop calls getppid() for 1.5 s: most samples land in the kernel's syscall path.
    let out = run_sonde(&[
        "-e",
        "profile:hz:99 /pid == cpid/ { @[kstack] = count(); }",
        "-c",
        &t.cmd("busy 1500"),
    ]);
    let stacks = parse_stacks(out.ok_stdout());
    assert!(!stacks.is_empty(), "no kernel stacks:\n{}", out.stdout);
    let has = |name: &str| {
        stacks
            .iter()
            .any(|(f, _)| f.iter().any(|fr| frame_name(fr).contains(name)))
    };
    assert!(
        has("do_syscall_64"),
        "no do_syscall_64 frame:\n{}",
        out.stdout
    );
    assert!(has("getppid"), "no getppid frame:\n{}", out.stdout);
    // Every frame is a resolved kernel symbol with an offset.
    for (frames, _) in &stacks {
        for f in frames {
            assert!(
                !f.starts_with("0x") && f.contains('+'),
                "unresolved frame {f}:\n{}",
                out.stdout
            );
        }
    }
}

#[test]
fn profile_ustack_shows_the_busy_function() {
    if skip_unless_root("profile_ustack_shows_the_busy_function") {
        return;
    }
    let t = build_probe_target("prof-u");
    let out = run_sonde(&[
        "-e",
        "profile:hz:99 /pid == cpid/ { @[ustack] = count(); }",
        "-c",
        &t.cmd("spin 1500"),
    ]);
    let stacks = parse_stacks(out.ok_stdout());
    let total: u64 = stacks.iter().map(|(_, n)| n).sum();
    let in_spin: u64 = stacks
        .iter()
        .filter(|(f, _)| {
            f.len() >= 2 && frame_name(&f[0]) == "spin_user" && frame_name(&f[1]) == "main"
        })
        .map(|(_, n)| n)
        .sum();
    // 1.5 s at 99 Hz is ~148 samples on an idle machine (fewer when the CPUs are shared);
    // nearly all of them are in spin_user called by main.
    assert!(total >= 15, "too few samples ({total}):\n{}", out.stdout);
    assert!(
        in_spin * 10 >= total * 9,
        "{in_spin} of {total} samples in spin_user:\n{}",
        out.stdout
    );
}

#[test]
fn software_page_faults_count_touched_pages() {
    if skip_unless_root("software_page_faults_count_touched_pages") {
        return;
    }
    let t = build_probe_target("prof-pf");
    // touch_pages writes to 512 fresh anonymous pages: at least one fault each.
    let out = run_sonde(&[
        "-e",
        "software:page-faults:1 /pid == cpid/ { @ = count(); }",
        "-c",
        &t.cmd("touch 512"),
    ]);
    let text = out.ok_stdout();
    let n: u64 = text
        .trim()
        .strip_prefix("@: ")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{text}"));
    assert!(n >= 512, "only {n} page faults");
}

#[test]
fn software_cpu_clock_samples_a_busy_child() {
    if skip_unless_root("software_cpu_clock_samples_a_busy_child") {
        return;
    }
    let t = build_probe_target("prof-cc");
    // One sample per 10 ms of CPU time: ~100 for a 1 s spin on an idle machine, fewer when
    // other work shares the CPUs, never more than the wall time allows.
    let out = run_sonde(&[
        "-e",
        "software:cpu-clock:10000000 /pid == cpid/ { @ = count(); }",
        "-c",
        &t.cmd("spin 1000"),
    ]);
    let text = out.ok_stdout();
    let n: u64 = text
        .trim()
        .strip_prefix("@: ")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        (10..=130).contains(&n),
        "{n} cpu-clock samples for 1 s of spinning"
    );
}

#[test]
fn hardware_events_fail_clearly_without_a_pmu() {
    if skip_unless_root("hardware_events_fail_clearly_without_a_pmu") {
        return;
    }
    if std::path::Path::new("/sys/bus/event_source/devices/cpu").exists() {
        eprintln!("skipping: this machine has a PMU");
        return;
    }
    let out = run_sonde(&["-e", "hardware:cycles:1000000 { @ = count(); }"]);
    assert_eq!(out.code, Some(1), "stderr: {}", out.stderr);
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    assert!(
        out.stderr.contains("sonde::attach::no_pmu"),
        "{}",
        out.stderr
    );
    // miette wraps long lines (with a `│` gutter): compare the words.
    let flat = out
        .stderr
        .split_whitespace()
        .filter(|w| *w != "│")
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        flat.contains("this machine has no hardware performance counters (no PMU)"),
        "{flat}"
    );
    assert!(
        flat.contains("`software:cpu-clock:1000000`"),
        "the help names an alternative: {flat}"
    );
    assert_eq!(out.stdout, "");
}

#[test]
fn interval_units() {
    if skip_unless_root("interval_units") {
        return;
    }
    for (probe, min_ms) in [
        ("interval:us:100000", 300),
        ("interval:ms:100", 300),
        ("interval:hz:10", 300),
        ("interval:s:1", 3000),
    ] {
        let start = Instant::now();
        let out = run_sonde(&[
            "-e",
            &format!("{probe} {{ @ = count(); if (@ >= 3) {{ exit(); }} }}"),
        ]);
        let ms = start.elapsed().as_millis();
        assert_eq!(out.ok_stdout(), with_exit_maps("", "@: 3\n"), "{probe}");
        assert!(ms >= min_ms, "{probe}: three ticks took only {ms} ms");
    }
}
