//! Values the printers' tests print.

use sonde_compiler::catalog::aggs::{hist_bucket, hist_buckets};
use sonde_compiler::value::AggValue;

/// The log2 histogram (`hist()`) of `values`.
pub fn hist(values: &[i64]) -> AggValue {
    let mut buckets = vec![0u64; hist_buckets(0)];
    for v in values {
        buckets[hist_bucket(*v, 0)] += 1;
    }
    AggValue::Hist {
        bits: 0,
        buckets,
        sum: 0,
    }
}
