//! Histogram rendering: bucket labels (`[4, 8)`, `[1K, 2K)`, `(..., 0)`, `[100, ...)`) and
//! the 52-column `@` bar charts of bpftrace's text output.

use sonde_compiler::catalog::aggs::{Bucket, hist_bucket_bounds, lhist_bucket_bounds};
use sonde_compiler::value::AggValue;

/// Width of the bar between the `|` characters.
pub const BAR_WIDTH: u64 = 52;

/// A number with a binary suffix when it is a multiple of 1024 (`1K`, `16M`, `3K`), as in
/// bpftrace's bucket labels; other numbers print in full (`5000`).
pub fn human(n: i128) -> String {
    const SUFFIX: [&str; 7] = ["", "K", "M", "G", "T", "P", "E"];
    let (mut v, mut i) = (n, 0);
    while v != 0 && v % 1024 == 0 && i < SUFFIX.len() - 1 {
        v /= 1024;
        i += 1;
    }
    format!("{v}{}", SUFFIX[i])
}

/// The buckets of a histogram value with their bounds, or `None` for other aggregations.
pub fn buckets(value: &AggValue) -> Option<Vec<(Bucket, u64)>> {
    Some(match value {
        AggValue::Hist { bits, buckets, .. } => buckets
            .iter()
            .enumerate()
            .map(|(i, c)| (hist_bucket_bounds(i, *bits), *c))
            .collect(),
        AggValue::Lhist {
            min,
            max,
            step,
            buckets,
            ..
        } => buckets
            .iter()
            .enumerate()
            .map(|(i, c)| (lhist_bucket_bounds(i, *min, *max, *step), *c))
            .collect(),
        _ => return None,
    })
}

/// The buckets from the first to the last non-empty one (what bpftrace prints).
pub fn trimmed(all: &[(Bucket, u64)]) -> &[(Bucket, u64)] {
    let first = all.iter().position(|(_, c)| *c != 0);
    let last = all.iter().rposition(|(_, c)| *c != 0);
    match (first, last) {
        (Some(f), Some(l)) => &all[f..=l],
        _ => &[],
    }
}

/// The text label of a bucket. Log2 buckets one value wide print as `[n]`; linear ones
/// always print as ranges (bpftrace shows `[15, 16)` for `lhist(.., 1)`).
pub fn label(bucket: Bucket, linear: bool) -> String {
    match bucket {
        Bucket::Below(b) => format!("(..., {})", human(b)),
        Bucket::Above(b) => format!("[{}, ...)", human(b)),
        Bucket::Range { lo, hi } if hi - lo == 1 && !linear => format!("[{}]", human(lo)),
        Bucket::Range { lo, hi } => format!("[{}, {})", human(lo), human(hi)),
    }
}

/// The bar chart of a histogram: one line per bucket between the first and last non-empty
/// ones. Counts are divided by `div`; bars are scaled from the undivided counts (as
/// bpftrace 0.17 does).
pub fn chart(value: &AggValue, div: u64) -> String {
    let Some(all) = buckets(value) else {
        return String::new();
    };
    let linear = matches!(value, AggValue::Lhist { .. });
    let shown = trimmed(&all);
    let max = shown.iter().map(|(_, c)| *c).max().unwrap_or(0);
    let mut out = String::new();
    for (bucket, count) in shown {
        let bar = if max == 0 {
            0
        } else {
            (u128::from(*count) * u128::from(BAR_WIDTH) / u128::from(max)) as usize
        };
        let shown_count = count / div.max(1);
        out.push_str(&format!(
            "{:<16}{:>8} |{}{}|\n",
            label(*bucket, linear),
            shown_count,
            "@".repeat(bar),
            " ".repeat(BAR_WIDTH as usize - bar)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::output::testing::hist;

    #[test]
    fn human_suffixes() {
        assert_eq!(human(0), "0");
        assert_eq!(human(512), "512");
        assert_eq!(human(1024), "1K");
        assert_eq!(human(3072), "3K");
        assert_eq!(human(5000), "5000");
        assert_eq!(human(16 << 20), "16M");
        assert_eq!(human(1 << 63), "8E");
        assert_eq!(human(1536 * 1024), "1536K");
    }

    #[test]
    fn chart_matches_bpftrace() {
        // bpftrace 0.17: hist(0), hist(1), hist(5), hist(1000), hist(-3).
        let expected = "\
(..., 0)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|
[0]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|
[1]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|
[2, 4)                 0 |                                                    |
[4, 8)                 1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|
[8, 16)                0 |                                                    |
[16, 32)               0 |                                                    |
[32, 64)               0 |                                                    |
[64, 128)              0 |                                                    |
[128, 256)             0 |                                                    |
[256, 512)             0 |                                                    |
[512, 1K)              1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|
";
        assert_eq!(chart(&hist(&[0, 1, 5, 1000, -3]), 1), expected);
    }

    #[test]
    fn bars_round_down() {
        // bpftrace 0.17: counts 1, 2, 3, 7 give bars of 7, 14, 22 and 52.
        let h = hist(&[1, 2, 2, 4, 4, 4, 8, 8, 8, 8, 8, 8, 8]);
        let expected = "\
[1]                    1 |@@@@@@@                                             |
[2, 4)                 2 |@@@@@@@@@@@@@@                                      |
[4, 8)                 3 |@@@@@@@@@@@@@@@@@@@@@@                              |
[8, 16)                7 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|
";
        assert_eq!(chart(&h, 1), expected);
    }

    #[test]
    fn lhist_chart_and_long_labels() {
        // bpftrace 0.17: lhist(v, 0, 100, 10) with -1, 5, 55, 100.
        let mut buckets = vec![0u64; 12];
        for i in [0, 1, 6, 11] {
            buckets[i] = 1;
        }
        let l = AggValue::Lhist {
            min: 0,
            max: 100,
            step: 10,
            buckets,
            sum: 0,
        };
        let c = chart(&l, 1);
        let lines: Vec<&str> = c.lines().collect();
        assert_eq!(lines.len(), 12);
        assert_eq!(
            lines[0],
            "(..., 0)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|"
        );
        assert_eq!(
            lines[1],
            "[0, 10)                1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|"
        );
        assert_eq!(
            lines[2],
            "[10, 20)               0 |                                                    |"
        );
        assert_eq!(
            lines[11],
            "[100, ...)             1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|"
        );
        // bpftrace 0.17: lhist(123456789, 0, 1000000000, 100000000).
        let mut buckets = vec![0u64; 12];
        buckets[2] = 1;
        let l = AggValue::Lhist {
            min: 0,
            max: 1_000_000_000,
            step: 100_000_000,
            buckets,
            sum: 0,
        };
        assert_eq!(
            chart(&l, 1),
            "[100000000, 200000000)       1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
        );
        // bpftrace 0.17: lhist(2048, 0, 4096, 1024) and lhist(15, 10, 20, 1).
        let l = AggValue::Lhist {
            min: 0,
            max: 4096,
            step: 1024,
            buckets: vec![0, 0, 0, 1, 0, 0],
            sum: 0,
        };
        assert!(chart(&l, 1).starts_with("[2K, 3K)               1 |"));
        let mut buckets = vec![0u64; 12];
        buckets[6] = 1;
        let l = AggValue::Lhist {
            min: 10,
            max: 20,
            step: 1,
            buckets,
            sum: 0,
        };
        assert!(chart(&l, 1).starts_with("[15, 16)               1 |"));
    }

    #[test]
    fn divided_counts_keep_bars() {
        // bpftrace 0.17: print(@h, 0, 2) with one count shows `0` and a full bar.
        let c = chart(&hist(&[3]), 2);
        assert_eq!(
            c,
            "[2, 4)                 0 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
        );
        assert_eq!(
            chart(
                &AggValue::Hist {
                    bits: 0,
                    buckets: vec![0; 65],
                    sum: 0
                },
                1
            ),
            ""
        );
    }
}
