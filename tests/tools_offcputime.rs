//! `sonde tool offcputime`: a test program (built `-O0 -fno-omit-frame-pointer`) sleeps 1 s
//! in 20 ms naps inside `sleep_outer`; the tool, filtered on it with `-p`, prints a folded
//! line with that user path and the kernel's scheduler path, summing to about a second, and
//! `--flamegraph` draws it.

mod common;
mod tools_support;

use common::{ATTACH_TIMEOUT, Target, TempDir, Tracer, settle, skip_unless_root};
use std::time::Duration;
use tools_support::{build_work, svg_titles};

#[test]
fn offcputime_folded_stacks_of_a_sleeping_program() {
    if skip_unless_root("offcputime_folded_stacks_of_a_sleeping_program") {
        return;
    }
    let dir = TempDir::new("offcpu");
    let bin = build_work(&dir);
    let svg_path = dir.path().join("offcpu.svg");
    let flame = format!("--flamegraph={}", svg_path.display());
    let mut target = Target::spawn(&bin, &["wait", "sleep", "1000"]);
    let pid = target.pid();
    let mut tracer = Tracer::start(&["tool", "offcputime", "-p", &pid, "-f", &flame]);
    let attached = tracer.wait_attached(ATTACH_TIMEOUT);
    settle();
    target.go();
    let code = target.wait(Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(200));
    tracer.interrupt();
    let out = tracer.finish(Duration::from_secs(20));
    assert!(attached && code == Some(0), "{}", out.stderr);
    let text = out.ok_stdout();

    // With frame pointers, the libc wrapper (built without them) hides its caller: the user
    // part is main;sleep_outer;clock_nanosleep..., then the kernel's path to the scheduler.
    let mut sleep_us = 0u64;
    for l in text.lines() {
        let (frames, n) = l
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("not folded: {l}"));
        let n: u64 = n.parse().unwrap_or_else(|_| panic!("not folded: {l}"));
        let f: Vec<&str> = frames.split(';').collect();
        assert_eq!(f[0], "tools_work", "{text}");
        let user = f.windows(2).any(|w| w == ["main", "sleep_outer"]);
        let sched = f.iter().position(|x| *x == "sleep_outer").is_some_and(|u| {
            f[u..].iter().any(|x| x.contains("nanosleep")) && f.last() == Some(&"__schedule")
        });
        if user && sched {
            sleep_us += n;
        }
    }
    assert!(
        (800_000..1_500_000).contains(&sleep_us),
        "about 1 s off CPU in sleep_outer -> nanosleep -> __schedule, got {sleep_us} us:\n{text}"
    );

    let svg = std::fs::read_to_string(&svg_path).expect("the SVG was written");
    let titles = svg_titles(&svg);
    assert!(
        titles.iter().any(|t| t.starts_with("sleep_outer (")),
        "{titles:?}"
    );
}

#[test]
fn offcputime_text_output_kernel_stacks_only() {
    if skip_unless_root("offcputime_text_output_kernel_stacks_only") {
        return;
    }
    let dir = TempDir::new("offcpu-k");
    let bin = build_work(&dir);
    let mut target = Target::spawn(&bin, &["wait", "sleep", "300"]);
    let pid = target.pid();
    let mut tracer = Tracer::start(&["tool", "offcputime", "-K", "-p", &pid, "-m", "5000"]);
    let attached = tracer.wait_attached(ATTACH_TIMEOUT);
    settle();
    target.go();
    let code = target.wait(Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(200));
    tracer.interrupt();
    let out = tracer.finish(Duration::from_secs(20));
    assert!(attached && code == Some(0), "{}", out.stderr);
    let text = out.ok_stdout();
    assert!(
        text.starts_with(
            "Tracing off-CPU time (us) of one process by kernel stack... Hit Ctrl-C to end.\n"
        ),
        "{text}"
    );
    assert!(text.contains("\n@kstacks[\n"), "{text}");
    assert!(text.contains("\n    __schedule+"), "{text}");
    assert!(text.contains("do_nanosleep+"), "{text}");
    // -m 5000: only blocks of at least 5 ms; each nap is 20 ms, so every entry's total is a
    // multiple of at least one nap.
    let totals: Vec<u64> = text
        .lines()
        .filter_map(|l| l.strip_prefix(", tools_work]: "))
        .map(|n| n.parse().unwrap())
        .collect();
    assert!(!totals.is_empty(), "{text}");
    assert!(totals.iter().all(|us| *us >= 5000), "{text}");
    assert!(totals.iter().sum::<u64>() >= 200_000, "{text}");
}
