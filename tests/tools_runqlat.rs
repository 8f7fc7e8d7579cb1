//! `sonde tool runqlat`: three busy loops compete for this machine's CPUs (one more than
//! there are CPUs, at least three) so they wait in the run queue; the tool, filtered with
//! `-p` on one of them, prints a histogram with counts, in microseconds and with `-m -P`.

mod common;

use common::{ATTACH_TIMEOUT, Tracer, skip_unless_root};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Sum of the bucket counts of every histogram in `text`.
fn total(text: &str) -> u64 {
    text.lines()
        .filter(|l| l.starts_with('['))
        .filter_map(|l| l.split(')').nth(1).or_else(|| l.split(']').nth(1)))
        .filter_map(|rest| rest.split('|').next()?.trim().parse::<u64>().ok())
        .sum()
}

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

fn run(flags: &[&str]) -> String {
    let mut loops = busy_loops();
    let pid = loops[0].id().to_string();
    let mut args = vec!["tool", "runqlat", "-p", &pid];
    args.extend_from_slice(flags);
    let mut tracer = Tracer::start(&args);
    let attached = tracer.wait_attached(ATTACH_TIMEOUT);
    std::thread::sleep(Duration::from_millis(1500));
    tracer.interrupt();
    let out = tracer.finish(Duration::from_secs(10));
    for c in &mut loops {
        let _ = c.kill();
        let _ = c.wait();
    }
    assert!(attached, "{}", out.stderr);
    format!("{pid}\n{}", out.ok_stdout())
}

#[test]
fn runqlat_histogram_of_a_busy_loop() {
    if skip_unless_root("runqlat_histogram_of_a_busy_loop") {
        return;
    }
    let text = run(&[]);
    assert!(
        text.contains("Tracing CPU scheduler run-queue latency... Hit Ctrl-C to end.\n"),
        "{text}"
    );
    assert!(text.contains("\n@usecs:\n"), "{text}");
    assert!(
        total(&text) >= 3,
        "a busy loop sharing CPUs waits several times in 1.5 s:\n{text}"
    );

    let text = run(&["-m", "-P"]);
    let pid = text.lines().next().unwrap().to_string();
    assert!(text.contains(&format!("\n@pid_msecs[{pid}]:\n")), "{text}");
    assert!(!text.contains("@usecs"), "{text}");
    assert!(total(&text) >= 3, "{text}");
}
