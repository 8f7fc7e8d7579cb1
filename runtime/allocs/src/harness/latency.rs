//! Call latencies in a fixed array of log-linear buckets: exact below 64 ns, then 16
//! buckets per power of two (about 6% wide), so that recording one is an index computation
//! and an increment, with no allocation.

/// Buckets of one histogram: 64 exact ones, then 16 per power of two from 2^6 to 2^63.
pub const BUCKETS: usize = 64 + 58 * 16;

/// The bucket of `ns`.
pub fn bucket(ns: u64) -> usize {
    if ns < 64 {
        return ns as usize;
    }
    let e = 63 - ns.leading_zeros() as usize;
    64 + (e - 6) * 16 + ((ns >> (e - 4)) & 15) as usize
}

/// The lowest value of bucket `b`.
pub fn lower(b: usize) -> u64 {
    if b < 64 {
        return b as u64;
    }
    let e = (b - 64) / 16 + 6;
    let sub = ((b - 64) % 16) as u64;
    (1u64 << e) | (sub << (e - 4))
}

/// A histogram of latencies.
#[derive(Clone)]
pub struct Latency {
    counts: Box<[u64; BUCKETS]>,
}

impl Default for Latency {
    fn default() -> Latency {
        Latency {
            counts: Box::new([0; BUCKETS]),
        }
    }
}

impl Latency {
    /// Counts one call of `ns`.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.counts[bucket(ns)] += 1;
    }

    /// Adds `other`'s counts.
    pub fn merge(&mut self, other: &Latency) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += b;
        }
    }

    /// The number of calls counted.
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The value below which `p` percent of the calls fall (the lower bound of the bucket
    /// that holds that rank); 0 when empty.
    pub fn percentile(&self, p: f64) -> u64 {
        let total = self.count();
        if total == 0 {
            return 0;
        }
        let rank = ((total as f64) * p / 100.0).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (b, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return lower(b);
            }
        }
        lower(BUCKETS - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_monotonic_and_bound_their_values() {
        let mut last = 0;
        for ns in (0..100_000u64).chain([u64::MAX / 2, u64::MAX]) {
            let b = bucket(ns);
            assert!(b < BUCKETS && b >= last, "{ns}");
            assert!(lower(b) <= ns, "{ns}");
            last = b;
        }
        assert_eq!(lower(bucket(1000)), 992);
    }

    #[test]
    fn percentiles_come_from_the_buckets() {
        let mut l = Latency::default();
        for ns in 1..=100 {
            l.record(ns);
        }
        assert_eq!(l.count(), 100);
        assert_eq!(l.percentile(50.0), 50);
        assert!(
            (96..=99).contains(&l.percentile(99.0)),
            "{}",
            l.percentile(99.0)
        );
        assert_eq!(Latency::default().percentile(50.0), 0);
    }
}
