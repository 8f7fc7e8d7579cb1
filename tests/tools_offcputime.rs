//! `sonde tool offcputime`: a test program (built `-O0 -fno-omit-frame-pointer`) sleeps 1 s
//! in 20 ms naps inside `sleep_outer`; the tool, filtered on it with `-p`, prints a folded
//! line with that user path and the kernel's scheduler path, summing to about a second, and
//! `--flamegraph` draws it. bcc's thread filters run on `tests/targets/threads3.c` (three
//! threads, each sleeping 1 ms 200 times): `-t` keeps one thread, `-M` the blocks up to a
//! bound (not the naps), `-u`/`-k` user or kernel threads, `--state` the sleep state (nanosleep sleeps
//! TASK_INTERRUPTIBLE, 1; never TASK_UNINTERRUPTIBLE, 2). Side by side with libbpf-tools'
//! offcputime, `-t` and `-M` count the same off-CPU time of the load.

mod common;
mod tools_support;

use common::{ATTACH_TIMEOUT, Target, TempDir, Tracer, compile_target, settle, skip_unless_root};
use std::time::Duration;
use tools_support::libbpf::{Reference, installed};
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
            // The tracepoint's own frame follows when another tracer (libbpf-tools'
            // offcputime, in the side-by-side test) has a program on it too.
            f[u..].iter().any(|x| x.contains("nanosleep"))
                && matches!(f.last(), Some(&"__schedule" | &"__traceiter_sched_switch"))
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

/// Runs `sonde tool offcputime -f` with each of `flag_sets` (`PID` replaced by the load's pid)
/// at once on threads3; returns their outputs, in order.
fn on_threads3(name: &str, flag_sets: &[&[&str]]) -> Vec<String> {
    let dir = TempDir::new(name);
    let bin = compile_target(&dir, "threads3", &["-O2", "-pthread"]);
    let mut target = Target::spawn(&bin, &[]);
    tools_support::tools_together(&["offcputime", "-f"], flag_sets, &mut target)
}

/// The total of the folded lines of `text` whose first frame (the comm) is `comm`.
fn total_of(text: &str, comm: &str) -> u64 {
    text.lines()
        .filter(|l| l.split(';').next() == Some(comm))
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<u64>().ok())
        .sum()
}

#[test]
fn offcputime_thread_and_max_block_time_filters() {
    if skip_unless_root("offcputime_thread_and_max_block_time_filters") {
        return;
    }
    // The main thread's tid is the pid.
    let outs = on_threads3(
        "offcpu-t",
        &[&["-t", "PID"], &["-p", "PID"], &["-p", "PID", "-M", "500"]],
    );
    let (one, all, short) = (
        total_of(&outs[0], "threads3"),
        total_of(&outs[1], "threads3"),
        total_of(&outs[2], "threads3"),
    );
    let why = format!("-t: {one}, -p: {all}, -p -M 500: {short}\n{outs:#?}");
    // 200 naps of 1 ms (and a little more each) in each thread.
    assert!((180_000..1_000_000).contains(&one), "{why}");
    assert!(all >= one * 5 / 2, "three threads nap as long each: {why}");
    // -M 500: blocks of at most 500 us; every nap is longer.
    assert!(short < 20_000, "{why}");
}

#[test]
fn offcputime_user_kernel_threads_and_state_filters() {
    if skip_unless_root("offcputime_user_kernel_threads_and_state_filters") {
        return;
    }
    let outs = on_threads3(
        "offcpu-u",
        &[
            &["-k"],
            &["-u", "-p", "PID", "--state=1"],
            &["-p", "PID", "--state=2"],
        ],
    );
    let why = format!("{outs:#?}");
    // Kernel threads only: some sleep (kworkers, rcu), never the load.
    assert!(!outs[0].is_empty(), "{why}");
    assert_eq!(total_of(&outs[0], "threads3"), 0, "{why}");
    // The load's user threads in TASK_INTERRUPTIBLE: all three threads' naps.
    assert!(total_of(&outs[1], "threads3") >= 3 * 180_000, "{why}");
    // TASK_UNINTERRUPTIBLE: the naps are not.
    assert!(total_of(&outs[2], "threads3") < 50_000, "{why}");
}

/// The total of libbpf-tools' offcputime entries (`    -    COMM (TID)` then the value) of
/// `comm`.
fn libbpf_total_of(text: &str, comm: &str) -> u64 {
    let lines: Vec<&str> = text.lines().collect();
    lines
        .windows(2)
        .filter(|w| {
            let who = w[0].trim_start();
            who.starts_with("- ") && who[1..].trim_start().starts_with(&format!("{comm} ("))
        })
        .filter_map(|w| w[1].trim().parse::<u64>().ok())
        .sum()
}

#[test]
fn offcputime_filters_side_by_side_with_libbpf_tools() {
    if skip_unless_root("offcputime_filters_side_by_side_with_libbpf_tools")
        || installed("offcputime").is_none()
    {
        return;
    }
    // Not --state: Debian's libbpf-tools offcputime counts nothing with it here (its state
    // test reads 0 where sonde's reads TASK_INTERRUPTIBLE), so it is tested on sonde alone.
    for flags in [&["-t", "PID"][..], &["-p", "PID", "-M", "500"][..]] {
        let dir = TempDir::new("offcpu-bcc");
        let bin = compile_target(&dir, "threads3", &["-O2", "-pthread"]);
        let mut target = Target::spawn(&bin, &[]);
        let pid = target.pid();
        let flags: Vec<&str> = flags
            .iter()
            .map(|f| if *f == "PID" { pid.as_str() } else { f })
            .collect();
        let mut args = vec!["tool", "offcputime", "-f"];
        args.extend_from_slice(&flags);
        // libbpf-tools' offcputime prints nothing until it stops: it is ready once sonde,
        // started after it, has attached.
        let bcc = Reference::start("offcputime", &flags);
        let mut sonde = Tracer::start(&args);
        let attached = sonde.wait_attached(ATTACH_TIMEOUT);
        settle();
        target.go();
        let code = target.wait(Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(200));
        sonde.interrupt();
        let (sonde, bcc) = (sonde.finish(Duration::from_secs(20)), bcc.stop());
        assert!(attached && code == Some(0), "{}", sonde.stderr);
        let mine = total_of(sonde.ok_stdout(), "threads3");
        let theirs = libbpf_total_of(&bcc.stdout, "threads3");
        let why = format!(
            "{flags:?}: sonde {mine} us, libbpf-tools {theirs} us\nsonde:\n{}\nlibbpf-tools:\n{}",
            sonde.stdout, bcc.stdout
        );
        if flags.contains(&"-M") {
            assert!(mine < 20_000 && theirs < 20_000, "{why}");
        } else {
            assert!(mine >= 180_000 && theirs >= 180_000, "{why}");
            assert!(mine.abs_diff(theirs) * 5 <= mine.max(theirs), "{why}");
        }
    }
}
