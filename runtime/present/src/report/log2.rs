//! bcc's power-of-two histogram layout (libbpf-tools' `print_log2_hist`), for the report
//! library's `print_log2_hist(h, unit)`: the tools' reports (`stdlib/log2hist.rhai`,
//! `stdlib/histograms.rhai`) print their histograms with it.
//!
//! Slot 0 holds 0 and 1 (sonde's `[0]` and `[1]` buckets), slot N the values from 2^N to
//! 2^(N+1) - 1 (sonde's `[2^N, 2^(N+1))`); negative values are left out, as bcc's slots have
//! none. Slots print from 0 to the last non-empty one under a `UNIT : count distribution`
//! header, each with a bar of up to 40 stars (20 past slot 32, where the columns widen).

/// A histogram's bucket as the report sees it: its low bound (`None` below the lowest) and
/// its count.
pub struct Bucket {
    /// The lowest value the bucket holds.
    pub lo: Option<i64>,
    /// How many values fell in it.
    pub count: u64,
}

/// The bcc slot of a bucket whose low bound is `lo`.
fn slot(lo: Option<i64>) -> usize {
    match lo {
        Some(lo) if lo > 1 => (63 - (lo as u64).leading_zeros()) as usize,
        _ => 0,
    }
}

/// The counts of bcc's slots, from slot 0 to the last non-empty one (none for a histogram
/// without counts).
fn counts(buckets: &[Bucket]) -> Vec<u64> {
    let mut slots: Vec<u64> = Vec::new();
    for b in buckets.iter().filter(|b| b.lo.is_some_and(|lo| lo >= 0)) {
        let s = slot(b.lo);
        if slots.len() <= s {
            slots.resize(s + 1, 0);
        }
        slots[s] = slots[s].saturating_add(b.count);
    }
    let used = slots.iter().rposition(|&v| v > 0).map_or(0, |i| i + 1);
    slots.truncate(used);
    slots
}

/// The `(low, high)` values slot `i` holds.
fn bounds(i: usize) -> (u128, u128) {
    let high = (1u128 << (i + 1)) - 1;
    let low = if i == 0 { 0 } else { 1u128 << i };
    (low, high)
}

/// `(low, high, count)` of each slot, from 0 to the last non-empty one (bcc's `-j` data).
pub fn slots(buckets: &[Bucket]) -> Vec<(u128, u128, u64)> {
    counts(buckets)
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let (low, high) = bounds(i);
            (low, high, c)
        })
        .collect()
}

/// The lines of `buckets` laid out as libbpf-tools' `print_log2_hist(vals, n, unit)`, or no
/// text for a histogram without counts.
pub fn layout(buckets: &[Bucket], unit: &str) -> String {
    let slots = counts(buckets);
    let Some(idx_max) = slots.len().checked_sub(1) else {
        return String::new();
    };
    let val_max = slots.iter().copied().max().unwrap_or(1);
    let wide = idx_max > 32;
    let (stars_max, width) = if wide { (20, 20) } else { (40, 10) };
    let mut out = format!(
        "{:pad$}{unit:<uw$} : count    distribution\n",
        "",
        pad = if wide { 15 } else { 5 },
        uw = if wide { 29 } else { 19 },
    );
    for (i, &v) in slots.iter().enumerate().take(idx_max + 1) {
        let (low, high) = bounds(i);
        let stars = (u128::from(v) * stars_max as u128 / u128::from(val_max)) as usize;
        out.push_str(&format!(
            "{low:>width$} -> {high:<width$} : {v:<8} |{}{}|\n",
            "*".repeat(stars),
            " ".repeat(stars_max - stars),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_from_zero_to_the_last_count() {
        let h = [
            Bucket { lo: None, count: 3 },
            Bucket {
                lo: Some(0),
                count: 1,
            },
            Bucket {
                lo: Some(1),
                count: 1,
            },
            Bucket {
                lo: Some(16),
                count: 4,
            },
        ];
        let text = layout(&h, "usecs");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "     usecs               : count    distribution");
        assert_eq!(
            lines[1],
            "         0 -> 1          : 2        |********************                    |"
        );
        assert_eq!(
            lines[5],
            "        16 -> 31         : 4        |****************************************|"
        );
        assert_eq!(lines.len(), 6);
        assert_eq!(
            layout(
                &[Bucket {
                    lo: Some(4),
                    count: 0
                }],
                "x"
            ),
            ""
        );
    }

    #[test]
    fn wide_columns_past_slot_32() {
        let text = layout(
            &[Bucket {
                lo: Some(1 << 40),
                count: 1,
            }],
            "nsec",
        );
        let first = text.lines().next().unwrap();
        assert_eq!(
            first,
            format!("{:15}{:29} : count    distribution", "", "nsec")
        );
        assert!(
            text.lines().last().unwrap().starts_with(&format!(
                "{:>20} -> {:<20} : 1",
                1u64 << 40,
                (1u64 << 41) - 1
            )),
            "{text}"
        );
    }
}
