//! Histogram buckets as Prometheus reads them: bpftrace's log2 and linear buckets hold
//! integers, so each classic bucket's upper bound `le` is the largest integer it holds
//! (`hist`: 0, 1, 3, 7, 15, ...; `lhist(n, 0, 100, 10)`: -1, 9, 19, ...), up to the last
//! bucket that holds a value, then `+Inf`. Counts are per bucket: prometheus-client's
//! encoders make them cumulative.
//!
//! A `hist` also goes out as a native histogram of schema 0 (a bucket per power of two,
//! `(2^(i-1), 2^i]`): each log2 bucket goes to the native bucket of the largest integer it
//! holds, which is exact for the bpftrace scheme (`bits` = 0) except that `[2^k, 2^(k+1))`
//! holds `2^k` itself, one value the native bucket below would hold.

use sonde_compiler::catalog::aggs::{Bucket, hist_bucket_bounds, lhist_bucket_bounds};
use std::collections::BTreeMap;

/// A histogram ready to encode: classic buckets `(le, count in that bucket)` ending with
/// `+Inf`, the total count, and the native buckets where there are some.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Buckets {
    /// `(upper bound, count)`, increasing bounds, the last one `+Inf`.
    pub classic: Vec<(f64, u64)>,
    /// Every value counted.
    pub count: u64,
    /// Native schema-0 buckets, when the histogram is a log2 one.
    pub native: Option<Native>,
}

/// A native histogram's sparse buckets, schema 0.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Native {
    /// Values equal to zero.
    pub zero_count: u64,
    /// Spans `(offset, length)` of the positive buckets.
    pub positive_spans: Vec<(i32, u32)>,
    /// Count deltas of the positive buckets (the first absolute).
    pub positive_deltas: Vec<i64>,
    /// Spans of the negative buckets (negative values all land in bucket 0: a log2
    /// histogram does not say how negative they were).
    pub negative_spans: Vec<(i32, u32)>,
    /// Count deltas of the negative buckets.
    pub negative_deltas: Vec<i64>,
}

/// The largest integer a bucket holds, as the `le` bound.
fn upper(b: Bucket) -> f64 {
    match b {
        Bucket::Below(x) => (x - 1) as f64,
        Bucket::Range { hi, .. } => (hi - 1) as f64,
        Bucket::Above(_) => f64::INFINITY,
    }
}

/// Classic buckets from per-bucket counts and their bounds, up to the last non-empty one
/// (later ones would repeat the total), then `+Inf` with what is above them.
fn classic(counts: &[u64], bound: impl Fn(usize) -> Bucket) -> (Vec<(f64, u64)>, u64) {
    let last = counts.iter().rposition(|c| *c > 0).unwrap_or(0);
    let mut out = Vec::new();
    let mut rest = 0u64;
    for (i, c) in counts.iter().enumerate() {
        let b = bound(i);
        let le = upper(b);
        // The bucket of negative values goes out only when it holds some.
        if matches!(b, Bucket::Below(_)) && *c == 0 {
            continue;
        }
        if i <= last && le.is_finite() {
            out.push((le, *c));
        } else {
            rest = rest.wrapping_add(*c);
        }
    }
    out.push((f64::INFINITY, rest));
    let total = counts.iter().fold(0u64, |a, c| a.wrapping_add(*c));
    (out, total)
}

/// A `hist(n, bits)` value's buckets (indexed as `aggs::hist_bucket` assigns them).
pub fn log2(counts: &[u64], bits: u8) -> Buckets {
    let (classic, count) = classic(counts, |i| hist_bucket_bounds(i, bits));
    let mut positive: BTreeMap<i32, u64> = BTreeMap::new();
    let mut native = Native::default();
    let mut negative = 0u64;
    for (i, c) in counts.iter().enumerate().filter(|(_, c)| **c > 0) {
        match hist_bucket_bounds(i, bits) {
            Bucket::Range { lo: 0, hi: 1 } => native.zero_count += c,
            Bucket::Range { hi, .. } => {
                *positive.entry(native_index((hi - 1) as u64)).or_default() += c;
            }
            Bucket::Below(_) | Bucket::Above(_) => negative += c,
        }
    }
    (native.positive_spans, native.positive_deltas) = sparse(&positive);
    if negative > 0 {
        (native.negative_spans, native.negative_deltas) = sparse(&BTreeMap::from([(0, negative)]));
    }
    Buckets {
        classic,
        count,
        native: Some(native),
    }
}

/// An `lhist(n, min, max, step)` value's buckets.
pub fn linear(counts: &[u64], min: i64, max: i64, step: i64) -> Buckets {
    let (classic, count) = classic(counts, |i| lhist_bucket_bounds(i, min, max, step));
    Buckets {
        classic,
        count,
        native: None,
    }
}

/// The schema-0 native bucket holding `v` ≥ 1: the least `i` with `v ≤ 2^i`.
fn native_index(v: u64) -> i32 {
    if v <= 1 {
        0
    } else {
        (64 - (v - 1).leading_zeros()) as i32
    }
}

/// Spans and deltas of sparse buckets, as the native histogram encoding wants them.
fn sparse(buckets: &BTreeMap<i32, u64>) -> (Vec<(i32, u32)>, Vec<i64>) {
    let mut spans: Vec<(i32, u32)> = Vec::new();
    let mut deltas = Vec::new();
    let mut next: Option<i32> = None;
    let mut prev = 0i64;
    for (&i, &c) in buckets {
        match next {
            Some(n) if n == i => spans.last_mut().expect("a span is open").1 += 1,
            Some(n) => spans.push((i - n, 1)),
            None => spans.push((i, 1)),
        }
        next = Some(i + 1);
        deltas.push(c as i64 - prev);
        prev = c as i64;
    }
    (spans, deltas)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_compiler::catalog::aggs::{hist_bucket, hist_buckets, lhist_bucket, lhist_buckets};

    fn hist_of(values: &[i64], bits: u8) -> Vec<u64> {
        let mut b = vec![0; hist_buckets(bits)];
        for v in values {
            b[hist_bucket(*v, bits)] += 1;
        }
        b
    }

    #[test]
    fn log2_bounds_are_the_largest_integers() {
        let b = log2(&hist_of(&[0, 1, 2, 3, 4, 7, 100], 0), 0);
        let les: Vec<f64> = b.classic.iter().map(|(le, _)| *le).collect();
        assert_eq!(les[..8], [0.0, 1.0, 3.0, 7.0, 15.0, 31.0, 63.0, 127.0]);
        assert_eq!(les[8], f64::INFINITY);
        let per: Vec<u64> = b.classic.iter().map(|(_, c)| *c).collect();
        assert_eq!(per, [1, 1, 2, 2, 0, 0, 0, 1, 0]);
        assert_eq!(b.count, 7);
    }

    #[test]
    fn log2_negative_values_are_below_zero() {
        let b = log2(&hist_of(&[-5, 3], 0), 0);
        assert_eq!(b.classic[0], (-1.0, 1));
        let n = b.native.unwrap();
        assert_eq!(n.negative_deltas, [1]);
    }

    #[test]
    fn native_buckets_hold_each_bucket_at_its_largest_value() {
        // 0 → zero bucket; [1, 2) → (0.5, 1] = 0; [2, 4) → (2, 4] = 2; [4, 8) → 3; [8, 16) → 4.
        let b = log2(&hist_of(&[0, 1, 2, 3, 5, 8], 0), 0);
        let n = b.native.unwrap();
        assert_eq!(n.zero_count, 1);
        assert_eq!(n.positive_spans, [(0, 1), (1, 3)]);
        assert_eq!(n.positive_deltas, [1, 1, -1, 0]);
    }

    #[test]
    fn sub_buckets_go_where_their_largest_value_goes() {
        // [4, 5) holds 4 ≤ 2^2; [5, 6), [6, 7), [7, 8) are in (4, 8].
        let b = log2(&hist_of(&[4, 5, 6, 7], 2), 2);
        let n = b.native.unwrap();
        assert_eq!(n.positive_spans, [(2, 2)]);
        assert_eq!(n.positive_deltas, [1, 2]);
        assert_eq!(b.classic[b.classic.len() - 2], (7.0, 1));
    }

    #[test]
    fn linear_bounds() {
        let (min, max, step) = (0, 100, 10);
        let mut c = vec![0; lhist_buckets(min, max, step)];
        for v in [-1, 0, 9, 10, 55, 250] {
            c[lhist_bucket(v, min, max, step)] += 1;
        }
        let b = linear(&c, min, max, step);
        assert_eq!(b.classic[0], (-1.0, 1));
        assert_eq!(b.classic[1], (9.0, 2));
        assert_eq!(b.classic[2], (19.0, 1));
        assert_eq!(b.classic.last(), Some(&(f64::INFINITY, 1)));
        assert_eq!(b.count, 6);
        assert!(b.native.is_none());
    }

    #[test]
    fn empty_histograms_have_no_buckets() {
        let b = log2(&hist_of(&[], 0), 0);
        assert_eq!(b.classic, [(f64::INFINITY, 0)]);
        assert_eq!(b.count, 0);
    }
}
