//! `sonde tool hardirqs` and `sonde tool softirqs` side by side with libbpf-tools' namesakes
//! during a load of disk writes (`tests/targets/tools_events.c bio`: 40 O_DIRECT writes of
//! 16 KiB, each followed by fdatasync()). Interrupts are system-wide: the tools see the same
//! ones but attach and stop at slightly different times, so counts must agree within a
//! quarter (plus 10 for the machine's other activity); headers, columns and names exactly.

mod common;
mod tools_support;

use common::{Target, TempDir, compile_target, skip_unless_root};
use std::collections::BTreeMap;
use tools_support::libbpf::side_by_side;

/// Runs `tool FLAGS` side by side with libbpf-tools' during the disk load: (sonde, theirs).
fn run(tool: &str, flags: &[&str]) -> (String, String) {
    let dir = TempDir::new(tool);
    let file = dir.path().join("direct.dat");
    let bin = compile_target(&dir, "tools_events", &["-O2", "-g", "-pthread"]);
    let mut target = Target::spawn(&bin, &["bio", file.to_str().expect("utf-8 path")]);
    let (sonde, bcc) = side_by_side(tool, flags, flags, &mut target);
    (sonde.ok_stdout().to_string(), bcc.stdout)
}

/// The `NAME  VALUE` rows under the `HEADER  TOTAL_...` line.
fn totals(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .skip_while(|l| !l.contains(" TOTAL_"))
        .skip(1)
        .filter_map(|l| {
            let (name, value) = l.rsplit_once(' ')?;
            Some((name.trim().to_string(), value.trim().parse().ok()?))
        })
        .collect()
}

fn close(a: u64, b: u64) -> bool {
    a.abs_diff(b) <= a.max(b) / 4 + 10
}

/// True when the temporary directory takes O_DIRECT writes (not a tmpfs); else the load
/// cannot run and the test is skipped.
fn o_direct_works() -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = TempDir::new("irqs-direct");
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_DIRECT)
        .open(dir.path().join("probe"))
        .is_ok()
}

#[test]
fn hardirqs_matches_libbpf_tools() {
    if skip_unless_root("hardirqs_matches_libbpf_tools") || !o_direct_works() {
        return;
    }
    let (mine, theirs) = run("hardirqs", &["-C"]);
    let head = |t: &str| t.lines().take(3).map(str::to_string).collect::<Vec<_>>();
    assert_eq!(
        head(&mine),
        head(&theirs),
        "sonde:\n{mine}\nlibbpf-tools:\n{theirs}"
    );
    assert_eq!(
        head(&mine),
        [
            "Tracing hard irq events... Hit Ctrl-C to end.",
            "",
            "HARDIRQ                    TOTAL_count"
        ]
    );
    let (a, b) = (totals(&mine), totals(&theirs));
    let (sa, sb) = (a.values().sum::<u64>(), b.values().sum::<u64>());
    // 40 writes and 40 flushes: at least 40 completions interrupt.
    assert!(sa >= 40, "{mine}");
    assert!(
        close(sa, sb),
        "sonde {sa}, libbpf-tools {sb}\n{mine}\n{theirs}"
    );
    let busiest =
        |m: &BTreeMap<String, u64>| m.iter().max_by_key(|(_, v)| **v).map(|(k, _)| k.clone());
    assert_eq!(busiest(&a), busiest(&b), "{mine}\n{theirs}");
    for l in mine.lines().skip(3).filter(|l| !l.is_empty()) {
        assert_eq!(l.len(), 38, "%-26s %11llu: {l:?}");
    }

    // Time, and -d: one histogram per handler, labelled as libbpf-tools labels it.
    let (mine, theirs) = run("hardirqs", &["-N"]);
    assert_eq!(head(&mine), head(&theirs), "{mine}\n{theirs}");
    assert_eq!(head(&mine)[2], "HARDIRQ                    TOTAL_nsecs");
    let (mine, theirs) = run("hardirqs", &["-d"]);
    let labels = |t: &str| t.lines().filter(|l| l.starts_with("hardirq = ")).count();
    assert!(
        labels(&mine) >= 1 && labels(&theirs) >= 1,
        "{mine}\n{theirs}"
    );
    assert!(
        mine.contains("\n     usecs               : count    distribution\n"),
        "{mine}"
    );
}

#[test]
fn softirqs_matches_libbpf_tools() {
    if skip_unless_root("softirqs_matches_libbpf_tools") || !o_direct_works() {
        return;
    }
    let (mine, theirs) = run("softirqs", &[]);
    let head = |t: &str| t.lines().take(3).map(str::to_string).collect::<Vec<_>>();
    assert_eq!(
        head(&mine),
        head(&theirs),
        "sonde:\n{mine}\nlibbpf-tools:\n{theirs}"
    );
    assert_eq!(
        head(&mine),
        [
            "Tracing soft irq event time... Hit Ctrl-C to end.",
            "",
            "SOFTIRQ          TOTAL_usecs"
        ]
    );
    let order = [
        "hi", "timer", "net_tx", "net_rx", "block", "irq_poll", "tasklet", "sched", "hrtimer",
        "rcu",
    ];
    let names = |t: &str| -> Vec<usize> {
        t.lines()
            .skip(3)
            .filter_map(|l| {
                order
                    .iter()
                    .position(|n| Some(*n) == l.split_whitespace().next())
            })
            .collect()
    };
    let got = names(&mine);
    assert!(
        !got.is_empty() && got.windows(2).all(|w| w[0] < w[1]),
        "vector order: {mine}"
    );
    for l in mine.lines().skip(3).filter(|l| !l.is_empty()) {
        assert_eq!(l.len(), 28, "%-16s %11llu: {l:?}");
    }

    let (mine, theirs) = run("softirqs", &["-d", "-N"]);
    let labels = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| l.starts_with("softirq = "))
            .map(str::to_string)
            .collect()
    };
    let (la, lb) = (labels(&mine), labels(&theirs));
    assert!(!la.is_empty() && !lb.is_empty(), "{mine}\n{theirs}");
    assert!(
        mine.contains("\n     nsecs               : count    distribution\n"),
        "{mine}"
    );
    // The vectors that ran often enough to be in both appear in the same (vector) order.
    let common: Vec<&String> = la.iter().filter(|l| lb.contains(l)).collect();
    let theirs_common: Vec<&String> = lb.iter().filter(|l| la.contains(l)).collect();
    assert_eq!(common, theirs_common, "{mine}\n{theirs}");
}
