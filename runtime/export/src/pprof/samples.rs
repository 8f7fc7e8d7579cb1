//! One map entry as one pprof sample: the key's stacks become its locations (kernel frames
//! first, then user frames, each innermost first: pprof's leaf-first order), the key's other
//! parts its labels, the value its value.

use super::proto::{Label, Sample};
use super::tables::Tables;
use sonde_compiler::value::{AggValue, Num, Stack, Value};
use sonde_present::output::NoResolver;
use sonde_present::output::text::value_text;

/// What a key part is, for a profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyShape {
    /// At least one resolved stack.
    Stacks,
    /// A stack still as its id: the caller did not resolve it.
    Unresolved,
    /// No stack at all.
    NoStack,
}

/// The key's parts (a tuple's items, or the key alone).
fn parts(key: &Value) -> &[Value] {
    match key {
        Value::Tuple(items) => items,
        other => std::slice::from_ref(other),
    }
}

/// Whether a key holds stacks, resolved or not.
pub fn shape(key: &Value) -> KeyShape {
    let parts = parts(key);
    if parts.iter().any(|p| matches!(p, Value::StackId { .. })) {
        KeyShape::Unresolved
    } else if parts.iter().any(|p| matches!(p, Value::Stack(_))) {
        KeyShape::Stacks
    } else {
        KeyShape::NoStack
    }
}

/// A map value as a sample value: `count()`, `sum()` and integers (unsigned ones above
/// `i64::MAX` saturate); `None` for anything else.
pub fn sample_value(v: &Value) -> Option<i64> {
    let n = match v {
        Value::Agg(AggValue::Count(c)) => Num::U(*c),
        Value::Agg(AggValue::Sum { value, signed }) => Num::new(*value, *signed),
        Value::Int(i) => Num::I(*i),
        Value::UInt(u) => Num::U(*u),
        _ => return None,
    };
    Some(match n {
        Num::I(i) => i,
        Num::U(u) => i64::try_from(u).unwrap_or(i64::MAX),
    })
}

/// The label a key part makes: integers as numbers, everything else as text.
fn label(tables: &mut Tables, name: &str, part: &Value) -> Label {
    let key = tables.string(name);
    let num = match part {
        Value::Int(i) => Some(*i),
        Value::UInt(u) => Some(i64::try_from(*u).unwrap_or(i64::MAX)),
        Value::Bool(b) => Some(i64::from(*b)),
        Value::Enum { value, .. } => Some(*value),
        _ => None,
    };
    if let Some(num) = num {
        return Label {
            key,
            num,
            ..Label::default()
        };
    }
    let text = match part {
        Value::Str(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        other => String::from_utf8_lossy(&value_text(other, &NoResolver, true)).into_owned(),
    };
    Label {
        key,
        str: tables.string(&text),
        ..Label::default()
    }
}

/// The sample of one entry with `values`: its locations from the key's stacks, its labels
/// from the key's other parts, named by `key_names` (`key0`, `key1`, ... past its end).
pub fn sample(tables: &mut Tables, key: &Value, key_names: &[String], values: Vec<i64>) -> Sample {
    let parts = parts(key);
    let stacks: Vec<&Stack> = parts
        .iter()
        .filter_map(|p| match p {
            Value::Stack(s) => Some(s),
            _ => None,
        })
        .collect();
    let mut location_id = Vec::new();
    for kernel in [true, false] {
        for s in stacks.iter().filter(|s| s.kernel == kernel) {
            // One location per address: the functions inlined there (show_debug_info) are
            // left out.
            for f in s.frames.iter().filter(|f| !f.inlined) {
                location_id.push(tables.location(f, kernel));
            }
        }
    }
    let mut labels = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        if matches!(part, Value::Stack(_) | Value::None) {
            continue;
        }
        let name = key_names
            .get(i)
            .filter(|n| !n.is_empty())
            .cloned()
            .unwrap_or_else(|| format!("key{i}"));
        labels.push(label(tables, &name, part));
    }
    Sample {
        location_id,
        value: values,
        label: labels,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        let stack = Value::Stack(Stack {
            kernel: true,
            mode: sonde_lang::types::StackMode::Bpftrace,
            frames: vec![],
        });
        assert_eq!(shape(&stack), KeyShape::Stacks);
        assert_eq!(
            shape(&Value::Tuple(vec![Value::Int(1), stack])),
            KeyShape::Stacks
        );
        assert_eq!(shape(&Value::Int(1)), KeyShape::NoStack);
        assert_eq!(shape(&Value::None), KeyShape::NoStack);
        let id = Value::StackId {
            kernel: false,
            mode: sonde_lang::types::StackMode::Bpftrace,
            limit: 127,
            raw: 3,
        };
        assert_eq!(shape(&id), KeyShape::Unresolved);
    }

    #[test]
    fn values() {
        assert_eq!(sample_value(&Value::Agg(AggValue::Count(7))), Some(7));
        assert_eq!(
            sample_value(&Value::Agg(AggValue::Count(u64::MAX))),
            Some(i64::MAX)
        );
        let neg = AggValue::Sum {
            value: -5,
            signed: true,
        };
        assert_eq!(sample_value(&Value::Agg(neg)), Some(-5));
        let big = AggValue::Sum {
            value: -5,
            signed: false,
        };
        assert_eq!(sample_value(&Value::Agg(big)), Some(i64::MAX));
        assert_eq!(sample_value(&Value::UInt(3)), Some(3));
        assert_eq!(sample_value(&Value::Int(-3)), Some(-3));
        assert_eq!(sample_value(&Value::Str(b"x".to_vec())), None);
        let avg = AggValue::Avg {
            sum: 1,
            count: 1,
            signed: true,
        };
        assert_eq!(sample_value(&Value::Agg(avg)), None);
    }
}
