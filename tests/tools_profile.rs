//! `sonde tool profile`: a test program (built `-O0 -fno-omit-frame-pointer`) spins in
//! `spin_outer -> spin_hot_function`; the tool, filtered on it with `-p`, prints folded
//! stacks (`-f`) with that path, its default text output shows the frames, and
//! `--flamegraph` writes an SVG that parses as XML and names the function.

mod common;
mod tools_support;

use common::{ATTACH_TIMEOUT, Target, TempDir, Tracer, settle, skip_unless_root};
use std::time::Duration;
use tools_support::{build_work, svg_titles};

/// Runs the tool with `flags` on the spinning program; returns its stdout.
fn profile_spin(dir: &TempDir, flags: &[&str]) -> String {
    let bin = build_work(dir);
    let mut target = Target::spawn(&bin, &["wait", "spin", "1200"]);
    let pid = target.pid();
    let mut args = vec!["tool", "profile", "-p", &pid];
    args.extend_from_slice(flags);
    let mut tracer = Tracer::start(&args);
    let attached = tracer.wait_attached(ATTACH_TIMEOUT);
    settle();
    target.go();
    let code = target.wait(Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(200));
    tracer.interrupt();
    let out = tracer.finish(Duration::from_secs(20));
    assert!(attached && code == Some(0), "{}", out.stderr);
    out.ok_stdout().to_string()
}

/// `(frames, count)` of the folded lines of `text`.
fn folded(text: &str) -> Vec<(Vec<String>, u64)> {
    text.lines()
        .filter_map(|l| {
            let (frames, n) = l.rsplit_once(' ')?;
            Some((
                frames.split(';').map(String::from).collect(),
                n.parse().ok()?,
            ))
        })
        .collect()
}

#[test]
fn profile_folded_and_flame_graph_show_the_hot_function() {
    if skip_unless_root("profile_folded_and_flame_graph_show_the_hot_function") {
        return;
    }
    let dir = TempDir::new("profile");
    let svg_path = dir.path().join("profile.svg");
    let flame = format!("--flamegraph={}", svg_path.display());
    let text = profile_spin(&dir, &["-F", "199", "-f", &flame]);
    let lines = folded(&text);
    assert_eq!(
        lines.len(),
        text.lines().count(),
        "only folded lines (no banner, no map names):\n{text}"
    );
    let hot: u64 = lines
        .iter()
        .filter(|(f, _)| {
            f[0] == "tools_work"
                && f.windows(3)
                    .any(|w| w == ["main", "spin_outer", "spin_hot_function"])
        })
        .map(|(_, n)| n)
        .sum();
    // 1.2 s at 199 Hz is about 240 samples on the CPU that runs it; leave room for a busy
    // machine.
    assert!(
        hot >= 50,
        "tools_work;...;main;spin_outer;spin_hot_function folded lines:\n{text}"
    );
    let total: u64 = lines.iter().map(|(_, n)| n).sum();
    assert!(
        hot * 10 >= total * 8,
        "most samples are in the spin:\n{text}"
    );

    let svg = std::fs::read_to_string(&svg_path).expect("the SVG was written");
    let titles = svg_titles(&svg);
    let title = titles
        .iter()
        .find(|t| t.starts_with("spin_hot_function ("))
        .unwrap_or_else(|| panic!("no spin_hot_function frame in the SVG titles: {titles:?}"));
    assert!(title.contains(" samples, "), "{title}");
    assert!(
        titles.iter().any(|t| t.starts_with("tools_work (")),
        "{titles:?}"
    );
}

#[test]
fn profile_text_output_user_stacks_only() {
    if skip_unless_root("profile_text_output_user_stacks_only") {
        return;
    }
    let dir = TempDir::new("profile-text");
    let text = profile_spin(&dir, &["-U", "-F", "99"]);
    assert!(
        text.starts_with(
            "Sampling at 99 Hertz of one process by user stack... Hit Ctrl-C to end.\n"
        ),
        "{text}"
    );
    assert!(text.contains("\n@ustacks[\n"), "{text}");
    assert!(text.contains("\n    spin_hot_function+"), "{text}");
    assert!(text.contains("]: "), "{text}");
    assert!(!text.contains("@stacks"), "{text}");
}

#[test]
fn cli_folded_format_and_flamegraph_flag_with_a_child() {
    if skip_unless_root("cli_folded_format_and_flamegraph_flag_with_a_child") {
        return;
    }
    let dir = TempDir::new("profile-cli");
    let bin = build_work(&dir);
    let svg_path = dir.path().join("cli.svg");
    let cmd = format!("{} now spin 800", bin.display());
    let out = common::run_sonde(&[
        "-f",
        "folded",
        "--flamegraph",
        svg_path.to_str().unwrap(),
        "-e",
        "profile:hz:99 /pid == cpid/ { @[ustack, comm] = count(); @n = count(); }",
        "-c",
        &cmd,
    ]);
    let text = out.ok_stdout();
    // The stack map folds; @n has no stack and prints as text.
    assert!(
        text.lines()
            .any(|l| l.starts_with("tools_work;") && l.contains(";spin_outer;spin_hot_function ")),
        "{text}"
    );
    assert!(text.lines().any(|l| l.starts_with("@n: ")), "{text}");
    let titles = svg_titles(&std::fs::read_to_string(&svg_path).unwrap());
    assert!(
        titles.iter().any(|t| t.starts_with("spin_hot_function (")),
        "{titles:?}"
    );

    // No map keyed by stacks: nothing to draw is an error, after the normal output.
    let none = dir.path().join("none.svg");
    let out = common::run_sonde(&[
        "--flamegraph",
        none.to_str().unwrap(),
        "-e",
        "BEGIN { @n = count(); exit(); }",
    ]);
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(out.stdout.contains("@n: 1"), "{}", out.stdout);
    assert!(
        out.stderr.contains("sonde::runtime::flamegraph"),
        "{}",
        out.stderr
    );
    assert!(!none.exists());
}

/// Runs `sonde tool profile` with each of `flag_sets` (`PID` replaced by the load's pid) at
/// once on the spinning program, pinned to CPU 1 (`taskset`); returns their outputs.
fn on_pinned_spin(dir: &TempDir, flag_sets: &[&[&str]]) -> Vec<String> {
    let bin = build_work(dir);
    let bin = bin.to_str().expect("a UTF-8 path");
    let taskset = std::path::Path::new("taskset");
    let mut target = Target::spawn(taskset, &["-c", "1", bin, "wait", "spin", "1200"]);
    tools_support::tools_together(&["profile"], flag_sets, &mut target)
}

/// The samples of the folded `text` in main -> spin_outer -> spin_hot_function.
fn hot_samples(text: &str) -> u64 {
    folded(text)
        .iter()
        .filter(|(f, _)| {
            f[0] == "tools_work"
                && f.windows(3)
                    .any(|w| w == ["main", "spin_outer", "spin_hot_function"])
        })
        .map(|(_, n)| n)
        .sum()
}

#[test]
fn profile_bcc_flags_on_a_pinned_spin() {
    if skip_unless_root("profile_bcc_flags_on_a_pinned_spin") {
        return;
    }
    let dir = TempDir::new("profile-bcc");
    let outs = on_pinned_spin(
        &dir,
        &[
            &["-f", "-d", "-a", "-L", "PID", "-C", "1", "-F", "199"],
            &["-f", "-c", "1000000", "-p", "PID"],
            &["-f", "-C", "0", "-p", "PID", "-F", "199"],
            &["-c", "1000000", "-L", "PID", "-C", "1", "-U"],
        ],
    );
    let why = format!("{outs:#?}");
    // -L (the main thread) and -C 1 (its CPU): the spin, folded by bcc's -d and -a: user
    // frames, then `-` and the kernel frames marked `_[k]` where a sample has both.
    assert!(hot_samples(&outs[0]) >= 50, "{why}");
    // A sample with kernel frames only (the thread exiting) has no `-`, as in bcc: then
    // every frame is a kernel one.
    for (frames, _) in folded(&outs[0]) {
        let dash = frames.iter().position(|f| f == "-");
        let kernel_only = dash.is_none() && frames[1..].iter().all(|f| f.ends_with("_[k]"));
        for (i, f) in frames.iter().enumerate().skip(1) {
            match dash {
                Some(d) if i > d => assert!(f.ends_with("_[k]"), "{frames:?}\n{why}"),
                _ if kernel_only => {}
                _ => assert!(f == "-" || !f.ends_with("_[k]"), "{frames:?}\n{why}"),
            }
        }
    }
    // -c 1000000: a sample every millisecond of CPU time, about 1200 in the spin (-F 49
    // would take about 60).
    assert!(hot_samples(&outs[1]) >= 400, "{why}");
    // -C 0: the load runs on CPU 1 only.
    assert_eq!(hot_samples(&outs[2]), 0, "{why}");
    // bcc's banner for a sample period and a CPU.
    assert!(
        outs[3].starts_with(
            "Sampling at every 1000000 events of one thread by user stack on CPU#1... \
             Hit Ctrl-C to end.\n"
        ),
        "{why}"
    );
    assert!(outs[3].contains("\n    spin_hot_function+"), "{why}");
}

#[test]
fn profile_include_idle_shows_the_idle_task() {
    if skip_unless_root("profile_include_idle_shows_the_idle_task") {
        return;
    }
    let dir = TempDir::new("profile-idle");
    // Sampled for the second the spin lasts: CPU 0 idles now and then, unless the rest of the
    // machine keeps it busy all along (then there is no idle time to sample: /proc/stat says).
    let idle_before = idle_ms();
    let outs = on_pinned_spin(
        &dir,
        &[&["-f", "-K", "-I", "-F", "999"], &["-f", "-K", "-F", "999"]],
    );
    let idled = idle_ms() - idle_before;
    let idle = |t: &str| t.lines().filter(|l| l.starts_with("swapper/")).count();
    assert!(
        idled < 50 || idle(&outs[0]) > 0,
        "-I: the idle task's stacks ({idled} ms idle):\n{}",
        outs[0]
    );
    assert_eq!(idle(&outs[1]), 0, "without -I, no idle task:\n{}", outs[1]);
}

/// The time all CPUs have spent idle since boot, in milliseconds (/proc/stat's `cpu` line).
fn idle_ms() -> u64 {
    let stat = std::fs::read_to_string("/proc/stat").expect("/proc/stat");
    let ticks: u64 = stat
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().nth(4))
        .and_then(|n| n.parse().ok())
        .expect("the idle field of /proc/stat");
    // USER_HZ is 100 on Linux.
    ticks * 10
}
