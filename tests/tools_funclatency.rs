//! `sonde tool funclatency`: a test program (built `-O0`) calls `timed_work` 10 times,
//! busy-waiting 1000 us and 20 us alternately; the tool, given `binary:timed_work` and the
//! program as `--cmd`, prints libbpf-tools' microsecond histogram with 5 calls in each part
//! and bcc's average line. bcc's `c:` (libc by its short name), `-F` (a histogram per
//! function) and `-r` (a regular expression for the functions) run on the same program, and
//! libbpf-tools' `-c CG` keeps the calls of a cgroup and of those below it.

mod common;
mod tools_support;

use common::{TempDir, Tracer, run_sonde, skip_unless_root};
use std::time::Duration;
use tools_support::build_work;

/// `(low bound, count)` of each slot line of a log2 histogram, as libbpf-tools print them
/// (`        16 -> 31         : 5        |*****|`).
fn buckets(text: &str) -> Vec<(u64, u64)> {
    text.lines()
        .filter_map(|l| {
            let (range, rest) = l.split_once(" : ")?;
            let low = range.split("->").next()?.trim().parse().ok()?;
            let count = rest.split('|').next()?.trim().parse().ok()?;
            Some((low, count))
        })
        .collect()
}

/// The `(total, count)` of bcc's `avg = A UNIT, total: T UNIT, count: N` line.
fn avg_line(text: &str, unit: &str) -> (u64, u64) {
    let line = text
        .lines()
        .find(|l| l.starts_with("avg = "))
        .unwrap_or_else(|| panic!("no avg line:\n{text}"));
    let field = |name: &str| -> u64 {
        let at = line.find(name).unwrap_or_else(|| panic!("{line}")) + name.len();
        line[at..]
            .split([' ', ','])
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{line}"))
    };
    assert!(line.contains(&format!(" {unit}, total: ")), "{line}");
    (field("total: "), field("count: "))
}

#[test]
fn funclatency_histogram_of_a_user_function() {
    if skip_unless_root("funclatency_histogram_of_a_user_function") {
        return;
    }
    let dir = TempDir::new("funclat");
    let bin = build_work(&dir);
    let func = format!("{}:timed_work", bin.display());
    let cmd = format!("{} now timed 10", bin.display());
    let out = run_sonde(&["tool", "funclatency", "-u", &func, "--cmd", &cmd]);
    let text = out.ok_stdout();
    // libbpf-tools' funclatency's lines around the histogram.
    assert!(
        text.starts_with(&format!("Tracing {func}.  Hit Ctrl-C to exit\n\n")),
        "{text}"
    );
    assert!(
        text.ends_with(&format!("\nExiting trace of {func}\n")),
        "{text}"
    );
    assert!(
        text.contains("\n     usec                : count    distribution\n"),
        "{text}"
    );
    let b = buckets(text);
    // 1000 us calls fall in [512, 1K) (1K is 1024) or, when preempted, above; the 20 us
    // ones in [16, 32) or a little above, never as high as 512.
    let long: u64 = b
        .iter()
        .filter(|(low, _)| *low >= 512)
        .map(|(_, n)| n)
        .sum();
    let short: u64 = b.iter().filter(|(low, _)| *low < 512).map(|(_, n)| n).sum();
    assert_eq!((long, short), (5, 5), "{text}");
    // No call is shorter than the 20 us it sleeps (a loaded machine only adds time).
    assert!(
        b.iter().filter(|(_, n)| *n > 0).all(|(low, _)| *low >= 16),
        "{text}"
    );
    let (total, count) = avg_line(text, "usec");
    assert_eq!(count, 10, "{text}");
    // At least 5 x 1000 + 5 x 20 us; more when a call was preempted on a busy machine.
    assert!((5100..1_000_000).contains(&total), "{text}");
}

#[test]
fn funclatency_default_nanoseconds_and_a_bad_function() {
    if skip_unless_root("funclatency_default_nanoseconds_and_a_bad_function") {
        return;
    }
    let dir = TempDir::new("funclat-ns");
    let bin = build_work(&dir);
    let func = format!("{}:quick_return", bin.display());
    let cmd = format!("{} now timed 0", bin.display());
    let out = run_sonde(&["tool", "funclatency", &func, "--cmd", &cmd]);
    let text = out.ok_stdout();
    assert!(text.contains("\n     nsec "), "{text}");
    assert_eq!(
        buckets(text).iter().map(|(_, n)| n).sum::<u64>(),
        3,
        "{text}"
    );
    assert_eq!(avg_line(text, "nsec").1, 3, "{text}");

    let out = run_sonde(&[
        "tool",
        "funclatency",
        &format!("{}:no_such_function", bin.display()),
    ]);
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(out.stderr.contains("no_such_function"), "{}", out.stderr);
}

#[test]
fn funclatency_libc_by_bcc_short_name() {
    if skip_unless_root("funclatency_libc_by_bcc_short_name") {
        return;
    }
    let dir = TempDir::new("funclat-c");
    let bin = build_work(&dir);
    // `sleep 100`: five naps of 20 ms, each a clock_nanosleep() of libc.
    let cmd = format!("{} now sleep 100", bin.display());
    let out = run_sonde(&[
        "tool",
        "funclatency",
        "-m",
        "c:clock_nanosleep",
        "--cmd",
        &cmd,
    ]);
    let text = out.ok_stdout();
    assert!(
        text.starts_with("Tracing libc:clock_nanosleep.  Hit Ctrl-C to exit\n"),
        "{text}"
    );
    assert!(text.contains("\n     msec "), "{text}");
    let b = buckets(text);
    assert_eq!(b.iter().map(|(_, n)| n).sum::<u64>(), 5, "{text}");
    assert!(
        b.iter().filter(|(_, n)| *n > 0).all(|(low, _)| *low >= 16),
        "{text}"
    );
    assert_eq!(avg_line(text, "msec").1, 5, "{text}");
}

#[test]
fn funclatency_regexp_with_a_histogram_per_function() {
    if skip_unless_root("funclatency_regexp_with_a_histogram_per_function") {
        return;
    }
    let dir = TempDir::new("funclat-r");
    let bin = build_work(&dir);
    // `timed 4`: timed_work 4 times (1000 and 20 us alternately), then quick_return 3 times.
    let cmd = format!("{} now timed 4", bin.display());
    let func = format!("{}:(timed_work|quick_return)$", bin.display());
    let out = run_sonde(&[
        "tool",
        "funclatency",
        "-F",
        "-r",
        "-u",
        &func,
        "--cmd",
        &cmd,
    ]);
    let text = out.ok_stdout();
    // bcc's funclatency -F: a histogram under `Function = NAME` for each.
    let section = |name: &str| -> Vec<(u64, u64)> {
        let head = format!("\nFunction = {name}\n");
        let at = text
            .find(&head)
            .unwrap_or_else(|| panic!("no {head}{text}"));
        let rest = &text[at + head.len()..];
        buckets(&rest[..rest.find("\n\n").unwrap_or(rest.len())])
    };
    let (timed, quick) = (section("timed_work"), section("quick_return"));
    assert_eq!(timed.iter().map(|(_, n)| n).sum::<u64>(), 4, "{text}");
    assert_eq!(
        timed
            .iter()
            .filter(|(low, _)| *low >= 512)
            .map(|(_, n)| n)
            .sum::<u64>(),
        2,
        "{text}"
    );
    assert_eq!(quick.iter().map(|(_, n)| n).sum::<u64>(), 3, "{text}");
    // Matched from the start of the name: `imed_work` matches nothing.
    let none = format!("{}:imed_work", bin.display());
    let out = run_sonde(&["tool", "funclatency", "-r", &none]);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("no function of"), "{}", out.stderr);
}

#[test]
fn funclatency_cgroup_keeps_the_calls_below_it() {
    if skip_unless_root("funclatency_cgroup_keeps_the_calls_below_it") {
        return;
    }
    let root = common::cgroup2_root().display();
    let dir = TempDir::new("funclat-cg");
    let bin = build_work(&dir);
    let func = format!("{}:timed_work", bin.display());
    // The program runs in `parent/child`; `-c parent` sees its 4 calls, `-c other` none.
    let parent = std::path::PathBuf::from(format!("{root}/sonde-funclat-{}", std::process::id()));
    let other = std::path::PathBuf::from(format!("{root}/sonde-funclat-o-{}", std::process::id()));
    let child = parent.join("child");
    for d in [&parent, &child, &other] {
        std::fs::create_dir(d).expect("create a cgroup");
    }
    let count_in = |cg: &std::path::Path| -> (u64, String) {
        let mut tracer = Tracer::start(&[
            "tool",
            "funclatency",
            "-u",
            "-c",
            cg.to_str().unwrap(),
            &func,
        ]);
        assert!(
            tracer.wait_attached(Duration::from_secs(30)),
            "not attached"
        );
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "echo $$ > {}/cgroup.procs && exec {} now timed 4",
                child.display(),
                bin.display()
            ))
            .status()
            .expect("run the program");
        assert!(status.success());
        tracer.interrupt();
        let out = tracer.finish(Duration::from_secs(20));
        let text = out.ok_stdout().to_string();
        (buckets(&text).iter().map(|(_, n)| n).sum(), text)
    };
    let (under, text_under) = count_in(&parent);
    let (elsewhere, text_elsewhere) = count_in(&other);
    for d in [&child, &parent, &other] {
        let _ = std::fs::remove_dir(d);
    }
    assert_eq!(under, 4, "{text_under}");
    assert_eq!(elsewhere, 0, "{text_elsewhere}");
    assert!(
        text_elsewhere.ends_with(&format!("Exiting trace of {func}\n")),
        "{text_elsewhere}"
    );
}
