//! The order in which map entries are printed, as bpftrace 0.17 prints them.
//!
//! - Maps of counts, sums, mins, maxes and plain integers: ascending by value. Ties keep the
//!   order they came in (the kernel's iteration order, which is what bpftrace shows too).
//! - `avg` and `stats` maps: by key, then (stably) ascending by average.
//! - `hist` and `lhist` maps: by key, then (stably) ascending by total count.
//! - `tseries` maps: by the key's bytes, as bpftrace 0.26 orders them (integers by their
//!   little-endian bytes, strings bytewise, tuples element by element).
//! - Anything else (strings, tuples, ...): by key.
//!
//! Keys compare element by element: integers by their unsigned (two's complement) bits, so
//! `-1` sorts after `9` exactly as bpftrace shows it, strings bytewise.

use super::{AggValue, Num, Value};
use std::cmp::Ordering;

fn rank(v: &Value) -> u8 {
    match v {
        Value::None => 0,
        Value::Bool(_)
        | Value::Int(_)
        | Value::UInt(_)
        | Value::Ptr(_)
        | Value::Enum { .. }
        | Value::Symbol { .. }
        | Value::StackId { .. }
        | Value::Username(_)
        | Value::CgroupPath { .. } => 1,
        Value::Str(_) | Value::Buf(_) | Value::Text(_) => 2,
        Value::Tuple(_) | Value::Array(_) | Value::Record { .. } => 3,
        _ => 4,
    }
}

/// bpftrace's key order (see the module docs).
pub fn compare_keys(a: &Value, b: &Value) -> Ordering {
    if let (Some(x), Some(y)) = (Value::int_bits(a), Value::int_bits(b)) {
        return x.cmp(&y);
    }
    match (a, b) {
        (Value::Str(x) | Value::Buf(x), Value::Str(y) | Value::Buf(y)) => x.cmp(y),
        (Value::Text(x), Value::Text(y)) => x.cmp(y),
        (Value::Tuple(x) | Value::Array(x), Value::Tuple(y) | Value::Array(y)) => {
            for (p, q) in x.iter().zip(y) {
                let o = compare_keys(p, q);
                if o != Ordering::Equal {
                    return o;
                }
            }
            x.len().cmp(&y.len())
        }
        _ => rank(a).cmp(&rank(b)),
    }
}

fn num_cmp(a: Num, b: Num) -> Ordering {
    a.wide().cmp(&b.wide())
}

/// bpftrace 0.26's order of `tseries` keys: a `memcmp` of the key bytes. An integer compares
/// by its little-endian bytes (its byte-swapped bits); the rest as [`compare_keys`].
fn compare_key_bytes(a: &Value, b: &Value) -> Ordering {
    if let (Some(x), Some(y)) = (Value::int_bits(a), Value::int_bits(b)) {
        return x.swap_bytes().cmp(&y.swap_bytes());
    }
    match (a, b) {
        (Value::Tuple(x), Value::Tuple(y)) => {
            for (p, q) in x.iter().zip(y) {
                let o = compare_key_bytes(p, q);
                if o != Ordering::Equal {
                    return o;
                }
            }
            x.len().cmp(&y.len())
        }
        _ => compare_keys(a, b),
    }
}

/// How a map is ordered, decided by its values.
enum Order {
    Value,
    KeyThenAverage,
    KeyThenTotal,
    Key,
    KeyBytes,
}

fn order_of(v: &Value) -> Order {
    match v {
        Value::Agg(AggValue::Avg { .. } | AggValue::Stats { .. }) => Order::KeyThenAverage,
        Value::Agg(AggValue::Hist { .. } | AggValue::Lhist { .. }) => Order::KeyThenTotal,
        Value::Agg(AggValue::Tseries { .. }) => Order::KeyBytes,
        Value::Agg(_) | Value::Int(_) | Value::UInt(_) | Value::Bool(_) | Value::Ptr(_) => {
            Order::Value
        }
        _ => Order::Key,
    }
}

fn scalar(v: &Value) -> Num {
    match v {
        Value::Agg(a) => a.scalar().unwrap_or(Num::U(a.hist_total().unwrap_or(0))),
        Value::Int(i) => Num::I(*i),
        Value::UInt(u) | Value::Ptr(u) => Num::U(*u),
        Value::Bool(b) => Num::U(u64::from(*b)),
        _ => Num::U(0),
    }
}

/// Sorts `(key, value)` map entries in the order bpftrace prints them.
pub fn sort_entries(entries: &mut [(Value, Value)]) {
    let Some((_, first)) = entries.first() else {
        return;
    };
    match order_of(first) {
        Order::Value => entries.sort_by(|a, b| num_cmp(scalar(&a.1), scalar(&b.1))),
        Order::Key => entries.sort_by(|a, b| compare_keys(&a.0, &b.0)),
        Order::KeyBytes => entries.sort_by(|a, b| compare_key_bytes(&a.0, &b.0)),
        Order::KeyThenAverage | Order::KeyThenTotal => {
            entries.sort_by(|a, b| compare_keys(&a.0, &b.0));
            entries.sort_by(|a, b| num_cmp(scalar(&a.1), scalar(&b.1)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: &str) -> Value {
        Value::Str(x.as_bytes().to_vec())
    }

    #[test]
    fn counts_sort_by_value_keeping_ties_in_order() {
        // bpftrace 0.17 printed @c[4]: 1, @c[1]: 1, @c[5]: 1, @c[3]: 2, @c[2]: 2 for this
        // kernel iteration order.
        let c = |n| Value::Agg(AggValue::Count(n));
        let mut e = vec![
            (Value::Int(3), c(2)),
            (Value::Int(4), c(1)),
            (Value::Int(2), c(2)),
            (Value::Int(1), c(1)),
            (Value::Int(5), c(1)),
        ];
        sort_entries(&mut e);
        let keys: Vec<_> = e.iter().map(|(k, _)| k.clone()).collect();
        assert_eq!(keys, [4, 1, 5, 3, 2].map(Value::Int).to_vec());
    }

    #[test]
    fn signed_sums_and_ints() {
        let sum = |v| {
            Value::Agg(AggValue::Sum {
                value: v,
                signed: true,
            })
        };
        let mut e = vec![
            (Value::Int(1), sum(4)),
            (Value::Int(9), sum(-5)),
            (Value::Int(7), sum(-3)),
        ];
        sort_entries(&mut e);
        assert_eq!(
            e.iter().map(|x| x.0.clone()).collect::<Vec<_>>(),
            [9, 7, 1].map(Value::Int)
        );
        let mut e = vec![(s("x"), Value::Int(1)), (s("d"), Value::Int(-2))];
        sort_entries(&mut e);
        assert_eq!(e[0].0, s("d"));
    }

    #[test]
    fn strings_and_tuples_sort_by_key() {
        // bpftrace 0.17: @t[2], @t[5], @t[9], @t[-1] and @u[B], @u[a], @u[ab], @u[b].
        let mut e: Vec<_> = [5, 2, 9, -1]
            .iter()
            .map(|k| (Value::Int(*k), s("v")))
            .collect();
        sort_entries(&mut e);
        assert_eq!(
            e.iter().map(|x| x.0.clone()).collect::<Vec<_>>(),
            [2, 5, 9, -1].map(Value::Int)
        );
        let mut e: Vec<_> = ["b", "a", "ab", "B"]
            .iter()
            .map(|k| (s(k), s("v")))
            .collect();
        sort_entries(&mut e);
        assert_eq!(
            e.iter().map(|x| x.0.clone()).collect::<Vec<_>>(),
            ["B", "a", "ab", "b"].map(s)
        );
        let t = |a, b: &str| Value::Tuple(vec![Value::Int(a), s(b)]);
        let mut e = vec![
            (t(2, "b"), s("1")),
            (t(1, "c"), s("1")),
            (t(2, "a"), s("1")),
            (t(1, "a"), s("1")),
        ];
        sort_entries(&mut e);
        assert_eq!(
            e.iter().map(|x| x.0.clone()).collect::<Vec<_>>(),
            vec![t(1, "a"), t(1, "c"), t(2, "a"), t(2, "b")]
        );
    }

    #[test]
    fn averages_sort_by_key_then_average() {
        // bpftrace 0.17: @k[A] (count 3, avg 1) before @k[B] (count 1, avg 2).
        let st = |count, sum| {
            Value::Agg(AggValue::Stats {
                count,
                sum,
                signed: true,
            })
        };
        let mut e = vec![(s("B"), st(1, 2)), (s("c"), st(1, 1)), (s("A"), st(3, 3))];
        sort_entries(&mut e);
        assert_eq!(
            e.iter().map(|x| x.0.clone()).collect::<Vec<_>>(),
            ["A", "c", "B"].map(s)
        );
    }

    #[test]
    fn histograms_sort_by_key_then_total() {
        // bpftrace 0.17: @h[1] (1), @h[9] (2), @h[5] (3); equal totals by key.
        let h = |n| {
            Value::Agg(AggValue::Hist {
                bits: 0,
                buckets: vec![0, 0, n],
                sum: 0,
            })
        };
        let mut e = vec![
            (Value::Int(5), h(3)),
            (Value::Int(9), h(2)),
            (Value::Int(3), h(1)),
            (Value::Int(1), h(1)),
        ];
        sort_entries(&mut e);
        assert_eq!(
            e.iter().map(|x| x.0.clone()).collect::<Vec<_>>(),
            [1, 3, 9, 5].map(Value::Int)
        );
    }

    #[test]
    fn time_series_sort_by_key_bytes() {
        // bpftrace 0.26 keeps tseries keys in a std::map of their bytes: 256 (00 01 ...)
        // before 1 (01 00 ...); strings bytewise.
        let ts = || {
            Value::Agg(AggValue::Tseries {
                interval_ns: 1,
                num_intervals: 1,
                signed: true,
                points: vec![(1, 1)],
            })
        };
        let mut e: Vec<_> = [1, 256, 2].iter().map(|k| (Value::Int(*k), ts())).collect();
        sort_entries(&mut e);
        assert_eq!(
            e.iter().map(|x| x.0.clone()).collect::<Vec<_>>(),
            [256, 1, 2].map(Value::Int)
        );
        let mut e: Vec<_> = ["two", "one"].iter().map(|k| (s(k), ts())).collect();
        sort_entries(&mut e);
        assert_eq!(e[0].0, s("one"));
    }
}
