//! `sonde tool funclatency`: a test program (built `-O0`) calls `timed_work` 10 times,
//! busy-waiting 1000 us and 20 us alternately; the tool, given `binary:timed_work` and the
//! program as `-c`, prints a microsecond histogram with 5 calls in each part and the stats.
//! bcc's `c:` (libc by its short name), `-F` (a histogram per function) and `-r` (a regular
//! expression for the functions) run on the same program.

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

#[test]
fn funclatency_libc_by_bcc_short_name() {
    if skip_unless_root("funclatency_libc_by_bcc_short_name") {
        return;
    }
    let dir = TempDir::new("funclat-c");
    let bin = build_work(&dir);
    // `sleep 100`: five naps of 20 ms, each a clock_nanosleep() of libc.
    let cmd = format!("{} now sleep 100", bin.display());
    let out = run_sonde(&["tool", "funclatency", "-m", "c:clock_nanosleep", "-c", &cmd]);
    let text = out.ok_stdout();
    assert!(
        text.starts_with("Tracing 1 function for \"libc:clock_nanosleep\"... Hit Ctrl-C to end.\n"),
        "{text}"
    );
    assert!(text.contains("\n@msecs:\n"), "{text}");
    let b = buckets(text);
    assert_eq!(b.iter().map(|(_, n)| n).sum::<u64>(), 5, "{text}");
    assert!(
        b.iter().filter(|(_, n)| *n > 0).all(|(low, _)| *low >= 16),
        "{text}"
    );
    assert!(
        text.contains("@msecs_stats: { .count = 5, .average = "),
        "{text}"
    );
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
    let out = run_sonde(&["tool", "funclatency", "-F", "-r", "-u", &func, "-c", &cmd]);
    let text = out.ok_stdout();
    let section = |name: &str| -> Vec<(u64, u64)> {
        let head = format!("@usecs_by_func[{name}]:\n");
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
    assert!(
        text.contains("@usecs_by_func_stats[timed_work]: { .count = 4, "),
        "{text}"
    );
    assert!(
        text.contains("@usecs_by_func_stats[quick_return]: { .count = 3, "),
        "{text}"
    );
    // Matched from the start of the name: `imed_work` matches nothing.
    let none = format!("{}:imed_work", bin.display());
    let out = run_sonde(&["tool", "funclatency", "-r", &none]);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("no function of"), "{}", out.stderr);
}
