//! Counters that never go down. A map's counts restart from zero when the script calls
//! `clear()` or `zero()`; Prometheus reads a counter that drops as a restart of the
//! program, so each series keeps an offset: what its counters held when they were reset.
//! The session hands over a map's values just before it clears it
//! ([`Monotonic::before_reset`]); a drop seen at a scrape without that (a reset between two
//! scrapes that the session could not report) adds the last value seen.

use std::collections::HashMap;

/// One series: a map and its label values.
type SeriesKey = (String, Vec<String>);

/// Offsets and last values of every counter series exported so far.
#[derive(Debug, Default)]
pub struct Monotonic {
    series: HashMap<SeriesKey, Slots>,
    /// The most series kept; beyond it, series the last scrape did not see are forgotten.
    cap: usize,
}

/// A series' counters (a count, or a histogram's buckets and sum).
#[derive(Debug, Default, Clone)]
struct Slots {
    offset: Vec<u64>,
    last: Vec<u64>,
    seen: bool,
}

impl Monotonic {
    /// State for at most `cap` series (more are kept while they are being exported).
    pub fn new(cap: usize) -> Self {
        Monotonic {
            series: HashMap::new(),
            cap,
        }
    }

    /// The exported values of a series whose counters read `raw` now: `raw` plus what the
    /// series counted before its resets (wrapping, as the counters do).
    pub fn apply(&mut self, map: &str, labels: &[String], raw: &[u64]) -> Vec<u64> {
        let s = self
            .series
            .entry((map.to_string(), labels.to_vec()))
            .or_default();
        s.offset.resize(raw.len(), 0);
        s.last.resize(raw.len(), 0);
        s.seen = true;
        for (i, r) in raw.iter().enumerate() {
            if *r < s.last[i] {
                s.offset[i] = s.offset[i].wrapping_add(s.last[i]);
            }
            s.last[i] = *r;
        }
        raw.iter()
            .zip(&s.offset)
            .map(|(r, o)| r.wrapping_add(*o))
            .collect()
    }

    /// The map's series are about to restart from zero (`clear()`, `zero()`): what they hold
    /// now, `raw`, is kept in their offsets.
    pub fn before_reset(&mut self, map: &str, labels: &[String], raw: &[u64]) {
        let s = self
            .series
            .entry((map.to_string(), labels.to_vec()))
            .or_default();
        s.offset.resize(raw.len(), 0);
        s.last.resize(raw.len(), 0);
        for (i, r) in raw.iter().enumerate() {
            s.offset[i] = s.offset[i].wrapping_add(*r);
            s.last[i] = 0;
        }
    }

    /// Ends a scrape: past the cap, series it did not see are forgotten (they start again
    /// from zero if they come back, as a new series would).
    pub fn end_scrape(&mut self) {
        if self.series.len() > self.cap {
            self.series.retain(|_, s| s.seen);
        }
        for s in self.series.values_mut() {
            s.seen = false;
        }
    }

    /// How many series are remembered.
    pub fn len(&self) -> usize {
        self.series.len()
    }

    /// True when no series is remembered.
    pub fn is_empty(&self) -> bool {
        self.series.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(v: &str) -> Vec<String> {
        vec![v.to_string()]
    }

    #[test]
    fn reported_resets_keep_the_count() {
        let mut m = Monotonic::new(10);
        assert_eq!(m.apply("c", &l("a"), &[5]), [5]);
        m.before_reset("c", &l("a"), &[7]);
        assert_eq!(m.apply("c", &l("a"), &[2]), [9]);
        assert_eq!(m.apply("c", &l("a"), &[3]), [10]);
    }

    #[test]
    fn unreported_drops_add_the_last_value() {
        let mut m = Monotonic::new(10);
        m.apply("c", &l("a"), &[5, 1]);
        assert_eq!(m.apply("c", &l("a"), &[2, 4]), [7, 4]);
    }

    #[test]
    fn series_beyond_the_cap_are_forgotten_when_unseen() {
        let mut m = Monotonic::new(1);
        m.apply("c", &l("a"), &[1]);
        m.apply("c", &l("b"), &[1]);
        m.end_scrape();
        assert_eq!(m.len(), 2);
        m.apply("c", &l("b"), &[1]);
        m.end_scrape();
        assert_eq!(m.len(), 1);
    }
}
