//! `sonde tool runqlen`: busy loops, one more than there are CPUs (at least three), keep
//! the run queues occupied while the tool samples for one interval (`1 1`). Sampling: the
//! number of samples must be at least two thirds of the frequency times the CPUs, and at
//! most two and a half times that (the samples start when the sampling probes attach, the
//! interval when its own probe does, later on a loaded machine), and at least a fifth of the
//! samples must find a thread waiting (three loops on two CPUs: about half). libbpf-tools' runqlen is no reference on this kernel: it reads
//! `cfs_rq.nr_running`, which Linux 6.14 renamed `nr_queued`, and fails to load (checked,
//! so that the test compares with it once it runs).

mod common;
mod tools_support;

use common::{run_sonde_timeout, skip_unless_root};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tools_support::libbpf::reference;

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

/// Runs `runqlen FLAGS 1 1` (or libbpf-tools' with `bcc`) next to the busy loops.
fn run(flags: &[&str], bcc: bool) -> common::Output {
    let mut loops = busy_loops();
    let mut args: Vec<&str> = flags.to_vec();
    args.extend(["1", "1"]);
    let out = if bcc {
        let mut cmd = Command::new(reference("runqlen"));
        cmd.args(&args);
        common::run_command(cmd, Duration::from_secs(20))
    } else {
        let mut all = vec!["tool", "runqlen"];
        all.extend(args);
        run_sonde_timeout(&all, Duration::from_secs(20))
    };
    for c in &mut loops {
        let _ = c.kill();
        let _ = c.wait();
    }
    out
}

/// (length, count) of each `len : count |...|` line.
fn rows(text: &str) -> Vec<(u64, u64)> {
    text.lines()
        .filter(|l| l.ends_with('|') && !l.contains("distribution"))
        .filter_map(|l| {
            let (len, rest) = l.split_once(':')?;
            Some((
                len.trim().parse().ok()?,
                rest.split('|').next()?.trim().parse().ok()?,
            ))
        })
        .collect()
}

#[test]
fn runqlen_samples_busy_run_queues() {
    if skip_unless_root("runqlen_samples_busy_run_queues") {
        return;
    }
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get()) as u64;
    let within = |n: u64, want: u64| n * 3 >= want * 2 && n * 2 <= want * 5;
    let out = run(&[], false);
    let text = out.ok_stdout();
    assert!(
        text.starts_with(
            "Sampling run queue length... Hit Ctrl-C to end.\n\n     runqlen       : count     distribution\n"
        ),
        "{text}"
    );
    let r = rows(text);
    let total: u64 = r.iter().map(|(_, c)| c).sum();
    assert!(
        within(total, 99 * cpus),
        "{total} samples, not about 99 x {cpus}:\n{text}"
    );
    let waiting: u64 = r.iter().filter(|(l, _)| *l > 0).map(|(_, c)| c).sum();
    assert!(
        waiting * 5 > total,
        "the loops wait in the run queues:\n{text}"
    );
    assert!(
        r.windows(2).all(|w| w[0].0 < w[1].0),
        "lengths in order:\n{text}"
    );

    // -f: the frequency; -C: one histogram per CPU.
    let out = run(&["-f", "49", "-C"], false);
    let text = out.ok_stdout();
    let total: u64 = rows(text).iter().map(|(_, c)| c).sum();
    assert!(
        within(total, 49 * cpus),
        "{total} samples, not about 49 x {cpus}:\n{text}"
    );
    for c in 0..cpus {
        assert!(
            text.contains(&format!("\ncpu = {c}\n     runqlen ")),
            "{text}"
        );
    }

    // -O: the occupancy, in percent with two decimals; -T: a time line first.
    let out = run(&["-O", "-T"], false);
    let text = out.ok_stdout();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(
        lines[2].len() == 8 && lines[2].as_bytes()[2] == b':',
        "{text}"
    );
    let pct = lines[3]
        .strip_prefix("runqocc: ")
        .and_then(|p| p.strip_suffix('%'));
    let pct: f64 = pct.and_then(|p| p.parse().ok()).expect("runqocc: N.NN%");
    assert!(pct > 20.0 && pct <= 100.0, "{text}");
    let out = run(&["-O", "-C"], false);
    let text = out.ok_stdout();
    assert!(text.contains("\nrunqocc, CPU 0   "), "{text}");

    // The reference, while it fails to load here.
    let bcc = run(&[], true);
    if bcc.code == Some(0) {
        let total: u64 = rows(&bcc.stdout).iter().map(|(_, c)| c).sum();
        assert!(within(total, 99 * cpus), "{}", bcc.stdout);
    } else {
        assert!(bcc.stderr.contains("nr_running"), "{}", bcc.stderr);
    }
}
