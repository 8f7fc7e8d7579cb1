//! `sonde tool funclatency`: a test program (built `-O0`) calls `timed_work` 10 times,
//! busy-waiting 1000 us and 20 us alternately; the tool, given `binary:timed_work` and the
//! program as `-c`, prints a microsecond histogram with 5 calls in each part and the stats.

mod common;
mod tools_support;

use common::{TempDir, run_sonde, skip_unless_root};
use tools_support::build_work;

/// `(low bound, count)` of each bucket line of a histogram (`[16, 32)  5 |@@@|`).
fn buckets(text: &str) -> Vec<(u64, u64)> {
    let unit = |s: &str| {
        let s = s.trim();
        let (n, m) = match s.strip_suffix('K') {
            Some(n) => (n, 1024),
            None => match s.strip_suffix('M') {
                Some(n) => (n, 1024 * 1024),
                None => (s, 1),
            },
        };
        n.parse::<u64>().ok().map(|v| v * m)
    };
    text.lines()
        .filter_map(|l| {
            let inner = l.strip_prefix('[')?;
            let (range, rest) = inner.split_once([')', ']'])?;
            let low = unit(range.split(',').next()?)?;
            let count = rest.split('|').next()?.trim().parse().ok()?;
            Some((low, count))
        })
        .collect()
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
    let out = run_sonde(&["tool", "funclatency", "-u", &func, "-c", &cmd]);
    let text = out.ok_stdout();
    assert!(
        text.starts_with(&format!(
            "Tracing 1 function for \"{func}\"... Hit Ctrl-C to end.\n"
        )),
        "{text}"
    );
    assert!(text.contains("\n@usecs:\n"), "{text}");
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
    let stats = text
        .lines()
        .find_map(|l| l.strip_prefix("@usecs_stats: { .count = 10, .average = "))
        .unwrap_or_else(|| panic!("no stats line:\n{text}"));
    let total: u64 = stats
        .split_once(", .total = ")
        .and_then(|(_, t)| t.trim_end_matches(" }").parse().ok())
        .unwrap_or_else(|| panic!("{stats}"));
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
    let out = run_sonde(&["tool", "funclatency", &func, "-c", &cmd]);
    let text = out.ok_stdout();
    assert!(text.contains("\n@nsecs:\n"), "{text}");
    assert_eq!(
        buckets(text).iter().map(|(_, n)| n).sum::<u64>(),
        3,
        "{text}"
    );
    assert!(
        text.contains("@nsecs_stats: { .count = 3, .average = "),
        "{text}"
    );

    let out = run_sonde(&[
        "tool",
        "funclatency",
        &format!("{}:no_such_function", bin.display()),
    ]);
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(out.stderr.contains("no_such_function"), "{}", out.stderr);
}
