//! `sonde tool cpudist` side by side with libbpf-tools' cpudist: busy loops, one more than
//! there are CPUs (at least three), are preempted in turn; both tools, filtered with `-p` on
//! one loop, print its on-CPU time histogram (`-P`: labelled `pid = PID sh`). They see the
//! same context switches but attach and stop at slightly different times, so their counts
//! must agree within a third.

mod common;
mod tools_support;

use common::skip_unless_root;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tools_support::libbpf::side_by_side_on;

fn busy_loops() -> Vec<Child> {
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    (0..(cpus + 1).max(3))
        .map(|_| {
            Command::new("/bin/sh")
                .args(["-c", "while :; do :; done"])
                .stdout(Stdio::null())
                .spawn()
                .expect("busy loop")
        })
        .collect()
}

/// The counts of each `low -> high : count |...|` line of a bcc-style histogram.
fn counts(text: &str) -> Vec<(u64, u64)> {
    text.lines()
        .filter(|l| l.contains(" -> "))
        .filter_map(|l| {
            let (range, rest) = l.split_once(':')?;
            let low = range.split("->").next()?.trim().parse().ok()?;
            Some((low, rest.split('|').next()?.trim().parse().ok()?))
        })
        .collect()
}

/// Runs sonde's and libbpf-tools' cpudist with `flags` and `-p` on a busy loop for 2 s.
fn run(flags: &[&str]) -> (String, String, String) {
    let mut loops = busy_loops();
    let pid = loops[0].id().to_string();
    let mut args = vec!["-p", pid.as_str()];
    args.extend_from_slice(flags);
    let (sonde, bcc) = side_by_side_on("cpudist", &args, &args, || {
        std::thread::sleep(Duration::from_millis(1500));
    });
    for c in &mut loops {
        let _ = c.kill();
        let _ = c.wait();
    }
    (pid, sonde.ok_stdout().to_string(), bcc.stdout)
}

fn assert_close(mine: &str, theirs: &str) {
    let total = |t: &str| counts(t).iter().map(|(_, c)| c).sum::<u64>();
    let (a, b) = (total(mine), total(theirs));
    assert!(
        a >= 20 && b >= 20,
        "a preempted busy loop runs many times in 2 s:\n{mine}\n{theirs}"
    );
    // Both run on the same loops at once, but each from its own attach to its own exit: on a
    // loaded machine (the test suite's other tests) their windows differ by a few hundred ms.
    assert!(
        a.abs_diff(b) * 2 <= a.max(b),
        "sonde {a}, libbpf-tools {b}:\n{mine}\n{theirs}"
    );
}

#[test]
fn cpudist_matches_libbpf_tools() {
    if skip_unless_root("cpudist_matches_libbpf_tools") {
        return;
    }
    let (_, mine, theirs) = run(&[]);
    let head = |t: &str| t.lines().take(3).map(str::to_string).collect::<Vec<_>>();
    assert_eq!(head(&mine), head(&theirs), "{mine}\n{theirs}");
    assert_eq!(
        head(&mine),
        [
            "Tracing on-CPU time... Hit Ctrl-C to end.",
            "",
            "     usecs               : count    distribution"
        ]
    );
    assert_close(&mine, &theirs);
    // Slots are powers of two from 0 -> 1, without a gap.
    let lows: Vec<u64> = counts(&mine).iter().map(|(l, _)| *l).collect();
    let want: Vec<u64> = (0..lows.len())
        .map(|i| if i == 0 { 0 } else { 1 << i })
        .collect();
    assert_eq!(lows, want, "{mine}");

    let (pid, mine, theirs) = run(&["-P", "-m"]);
    let label = format!("pid = {pid} sh");
    assert!(
        mine.contains(&format!("\n\n{label}\n     msecs ")),
        "{mine}"
    );
    assert!(theirs.contains(&format!("\n{label}\n")), "{theirs}");
    assert_close(&mine, &theirs);
}
