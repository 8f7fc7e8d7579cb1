//! What a map gained between two reads, for `?seconds=N` profiles.

use sonde_compiler::value::{AggValue, Value};
use sonde_present::output::MapDump;
use std::collections::HashMap;

/// A key's identity for lookups. `Value` has no `Hash`; its derived `Debug` text is
/// unambiguous (variants, fields and bytes all spelled out), so equal texts mean equal keys.
/// A resolved frame is known by its symbol, not its address: the session merges the
/// entries whose stacks print the same (the same code in two processes, at two addresses),
/// keeping one of their addresses, which may differ from one read to the next.
fn identity(key: &Value) -> String {
    format!("{:?}", by_symbol(key))
}

/// `key` with the addresses of its resolved frames zeroed.
fn by_symbol(key: &Value) -> Value {
    match key {
        Value::Stack(s) => {
            let mut s = s.clone();
            for f in &mut s.frames {
                if f.symbol.is_some() {
                    f.addr = 0;
                }
            }
            Value::Stack(s)
        }
        Value::Tuple(items) => Value::Tuple(items.iter().map(by_symbol).collect()),
        k => k.clone(),
    }
}

/// `after - before` for a counter (as unsigned when `signed` is false); `after` itself when
/// the counter went down (a `clear()` or `zero()` between the reads restarted it).
fn gained(before: i64, after: i64, signed: bool) -> i64 {
    let went_down = if signed {
        after < before
    } else {
        (after as u64) < (before as u64)
    };
    if went_down {
        after
    } else {
        after.wrapping_sub(before)
    }
}

/// The difference of one entry's values; `after` unchanged when they are not counters of the
/// same kind.
fn value_delta(before: &Value, after: &Value) -> Value {
    match (before, after) {
        (Value::Agg(AggValue::Count(b)), Value::Agg(AggValue::Count(a))) => {
            Value::Agg(AggValue::Count(gained(*b as i64, *a as i64, false) as u64))
        }
        (
            Value::Agg(AggValue::Sum { value: b, .. }),
            Value::Agg(AggValue::Sum { value: a, signed }),
        ) => Value::Agg(AggValue::Sum {
            value: gained(*b, *a, *signed),
            signed: *signed,
        }),
        (Value::Int(b), Value::Int(a)) => Value::Int(gained(*b, *a, true)),
        (Value::UInt(b), Value::UInt(a)) => Value::UInt(gained(*b as i64, *a as i64, false) as u64),
        _ => after.clone(),
    }
}

/// Per key, what `after` counts beyond `before` (`count()`, `sum()` and integer values):
/// keys new in `after` count fully, keys whose count went down (a `clear()` in between) count
/// their `after` value, keys gone from `after` are left out. Other values are `after`'s.
/// Entries that gained nothing stay, with a zero (a profile leaves them out). The result has
/// `after`'s name, type and entry order.
pub fn delta(before: &MapDump, after: &MapDump) -> MapDump {
    let old: HashMap<String, &Value> = before
        .entries
        .iter()
        .map(|(k, v)| (identity(k), v))
        .collect();
    let entries = after
        .entries
        .iter()
        .map(|(k, v)| {
            let d = match old.get(&identity(k)) {
                Some(b) => value_delta(b, v),
                None => v.clone(),
            };
            (k.clone(), d)
        })
        .collect();
    MapDump {
        name: after.name.clone(),
        value_type: after.value_type.clone(),
        entries,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_lang::types::{AggKind, Type};

    fn dump(entries: Vec<(Value, Value)>) -> MapDump {
        MapDump {
            name: "x".into(),
            value_type: Type::Agg(AggKind::Count),
            entries,
        }
    }

    fn count(n: u64) -> Value {
        Value::Agg(AggValue::Count(n))
    }

    fn s(t: &str) -> Value {
        Value::Str(t.as_bytes().to_vec())
    }

    #[test]
    fn stacks_are_known_by_their_symbols() {
        use sonde_compiler::value::{Frame, Stack};
        use sonde_lang::types::StackMode;
        let stack = |addr| {
            Value::Stack(Stack {
                kernel: false,
                mode: StackMode::Bpftrace,
                frames: vec![Frame {
                    addr,
                    symbol: Some("syscall+25".into()),
                    module: None,
                    ..Frame::default()
                }],
            })
        };
        // The same code in two processes: printed (and merged) as one entry.
        let before = dump(vec![(stack(0x7f00), count(3000))]);
        let after = dump(vec![(stack(0x7e00), count(6000))]);
        assert_eq!(delta(&before, &after).entries[0].1, count(3000));
    }

    #[test]
    fn counts_grow_appear_and_restart() {
        let before = dump(vec![
            (s("a"), count(5)),
            (s("b"), count(9)),
            (s("gone"), count(1)),
        ]);
        let after = dump(vec![
            (s("a"), count(8)),
            (s("b"), count(2)),
            (s("new"), count(4)),
        ]);
        let d = delta(&before, &after);
        assert_eq!(
            d.entries,
            vec![(s("a"), count(3)), (s("b"), count(2)), (s("new"), count(4))]
        );
        assert_eq!(d.name, "x");
    }

    #[test]
    fn sums_and_integers() {
        let sum = |v: i64, signed| Value::Agg(AggValue::Sum { value: v, signed });
        let before = dump(vec![
            (s("a"), sum(10, true)),
            (s("b"), sum(-1, false)),
            (s("c"), Value::Int(-10)),
            (s("d"), Value::UInt(7)),
        ]);
        let after = dump(vec![
            (s("a"), sum(25, true)),
            (s("b"), sum(3, false)),
            (s("c"), Value::Int(-4)),
            (s("d"), Value::UInt(7)),
        ]);
        let d = delta(&before, &after);
        assert_eq!(d.entries[0].1, sum(15, true));
        // u64::MAX before, 3 after: the counter restarted.
        assert_eq!(d.entries[1].1, sum(3, false));
        assert_eq!(d.entries[2].1, Value::Int(6));
        assert_eq!(d.entries[3].1, Value::UInt(0));
    }

    #[test]
    fn other_values_and_mismatches_keep_after() {
        let avg = Value::Agg(AggValue::Avg {
            sum: 4,
            count: 2,
            signed: true,
        });
        let before = dump(vec![(s("a"), avg.clone()), (s("b"), Value::Int(3))]);
        let after = dump(vec![(s("a"), avg.clone()), (s("b"), count(5))]);
        let d = delta(&before, &after);
        assert_eq!(d.entries, vec![(s("a"), avg), (s("b"), count(5))]);
    }

    #[test]
    fn empty_maps() {
        let d = delta(&dump(vec![]), &dump(vec![]));
        assert!(d.entries.is_empty());
        let d = delta(&dump(vec![(s("a"), count(1))]), &dump(vec![]));
        assert!(d.entries.is_empty());
    }
}
