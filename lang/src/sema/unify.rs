//! How types combine: integer promotion, the result of two branches or two assignments, and
//! the readable value of a map.
//!
//! Rules (documented in one place):
//! - Integer arithmetic is done in 64 bits; the result is signed only when both operands are
//!   signed (C's rule for two 64-bit operands of mixed signedness). Bools count as unsigned,
//!   enums as signed.
//! - Integers stored in maps, tuples-as-keys and scratch variables are promoted to 64 bits.
//! - Two strings unify to the larger size; two tuples element-wise; two records the script
//!   makes with the same field names, in any order, field by field in the first's order;
//!   two integers to a 64-bit
//!   integer (signed only when both are); a bool or enum with an integer to the integer.
//! - Aggregations unify only with the same aggregation (same `hist` bits, same `lhist` range).

use crate::types::{AggKind, Type};

/// True when a value of `t` is an integer for arithmetic (ints, bools, enums).
pub(crate) fn is_int(t: &Type) -> bool {
    t.is_integer()
}

/// Signedness of an integer-like type for arithmetic.
pub(crate) fn signed_of(t: &Type) -> bool {
    match t {
        Type::Int { signed, .. } => *signed,
        Type::Enum { .. } => true,
        _ => false,
    }
}

/// True for values usable as a condition (ints, bools, enums, pointers).
pub(crate) fn is_truthy(t: &Type) -> bool {
    t.is_integer() || t.is_ptr()
}

/// The 64-bit integer type with the given signedness.
pub(crate) fn int64(signed: bool) -> Type {
    Type::Int { bits: 64, signed }
}

/// Promotes integers (also inside tuples) to 64 bits, as stored in maps and variables.
pub(crate) fn promote(t: &Type) -> Type {
    match t {
        Type::Int { signed, .. } => int64(*signed),
        Type::Tuple(items) => Type::Tuple(items.iter().map(promote).collect()),
        other => other.clone(),
    }
}

/// The type both `a` and `b` convert to, or `None` when they are incompatible.
pub(crate) fn unify(a: &Type, b: &Type) -> Option<Type> {
    use Type::*;
    Some(match (a, b) {
        (Int { bits: x, signed: s }, Int { bits: y, signed: t }) => Int {
            bits: (*x).max(*y),
            signed: *s && *t,
        },
        (Int { .. }, Bool | Enum { .. }) => a.clone(),
        (Bool | Enum { .. }, Int { .. }) => b.clone(),
        (Str { size: x }, Str { size: y }) => Str { size: (*x).max(*y) },
        (Buf { size: x }, Buf { size: y }) => Buf { size: (*x).max(*y) },
        (Tuple(x), Tuple(y)) if x.len() == y.len() => Tuple(
            x.iter()
                .zip(y)
                .map(|(p, q)| unify(p, q))
                .collect::<Option<Vec<_>>>()?,
        ),
        (
            Stack {
                kernel: k1,
                mode: m1,
                limit: l1,
            },
            Stack {
                kernel: k2,
                mode: m2,
                limit: l2,
            },
        ) if k1 == k2 && m1 == m2 => Stack {
            kernel: *k1,
            mode: *m1,
            limit: (*l1).max(*l2),
        },
        (Record(x), Record(y)) if x != y && is_made_record(x) && is_made_record(y) => {
            unify_records(x, y)?
        }
        (Agg(x), Agg(y)) => Agg(unify_agg(x, y)?),
        (Ptr { pointee: p, space }, Ptr { pointee: q, .. }) if same_record(p, q) => {
            // One side may be an opaque reference to the same record: keep the complete one.
            let keep = if matches!(&**p, Record(r) if crate::ctypes::is_opaque(r)) {
                q
            } else {
                p
            };
            Ptr {
                pointee: keep.clone(),
                space: *space,
            }
        }
        (Ptr { pointee: p, .. }, Ptr { pointee: q, .. }) if **p == Void || **q == Void => {
            if **p == Void { b.clone() } else { a.clone() }
        }
        _ if a == b => a.clone(),
        _ => return None,
    })
}

/// True for a record the script makes (`(name = value, ...)`), not a C struct.
fn is_made_record(r: &crate::types::Record) -> bool {
    r.name == crate::types::RECORD_NAME
}

/// Two records of the same field names, in any order (bpftrace 0.27): the fields in `x`'s
/// order, each of the type both convert to.
fn unify_records(x: &crate::types::Record, y: &crate::types::Record) -> Option<Type> {
    if x.fields.len() != y.fields.len() {
        return None;
    }
    let fields = x
        .fields
        .iter()
        .map(|f| Some((f.name.clone(), unify(&f.ty, &y.field(&f.name)?.ty)?)))
        .collect::<Option<Vec<_>>>()?;
    Some(crate::types::record_of(fields))
}

/// True when both types are records of the same name (one possibly opaque).
fn same_record(a: &Type, b: &Type) -> bool {
    matches!((a, b), (Type::Record(x), Type::Record(y)) if x.name == y.name)
}

/// Unifies two aggregations of the same function.
fn unify_agg(a: &AggKind, b: &AggKind) -> Option<AggKind> {
    use AggKind::*;
    Some(match (a, b) {
        (Count, Count) => Count,
        (Sum { signed: x }, Sum { signed: y }) => Sum { signed: *x || *y },
        (Avg { signed: x }, Avg { signed: y }) => Avg { signed: *x || *y },
        (Min { signed: x }, Min { signed: y }) => Min { signed: *x || *y },
        (Max { signed: x }, Max { signed: y }) => Max { signed: *x || *y },
        (Stats { signed: x }, Stats { signed: y }) => Stats { signed: *x || *y },
        (
            Tseries {
                interval_ns: i,
                num_intervals: n,
                agg: f,
                signed: x,
            },
            Tseries {
                interval_ns: j,
                num_intervals: m,
                agg: g,
                signed: y,
            },
        ) if (i, n, f) == (j, m, g) => Tseries {
            interval_ns: *i,
            num_intervals: *n,
            agg: *f,
            signed: *x || *y,
        },
        _ if a == b => a.clone(),
        _ => return None,
    })
}

/// The type of reading a map whose values are `value` inside an expression: aggregations
/// `count`, `sum`, `min`, `max` and `avg` read as `int64` (summed over CPUs); `hist`, `lhist`,
/// `stats` and `tseries` cannot be read (`None`). Everything else reads as stored.
pub(crate) fn read_value(value: &Type) -> Option<Type> {
    match value {
        Type::Agg(k) => match k {
            AggKind::Count
            | AggKind::Sum { .. }
            | AggKind::Min { .. }
            | AggKind::Max { .. }
            | AggKind::Avg { .. } => Some(Type::I64),
            AggKind::Stats { .. }
            | AggKind::Hist { .. }
            | AggKind::Lhist { .. }
            | AggKind::Tseries { .. } => None,
        },
        other => Some(other.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unify_rules() {
        assert_eq!(unify(&Type::I32, &Type::U64), Some(Type::U64));
        assert_eq!(unify(&Type::I64, &Type::I32), Some(Type::I64));
        assert_eq!(
            unify(&Type::Str { size: 16 }, &Type::Str { size: 64 }),
            Some(Type::Str { size: 64 })
        );
        assert_eq!(unify(&Type::Str { size: 16 }, &Type::I64), None);
        assert_eq!(
            unify(
                &Type::Agg(AggKind::Hist { bits: 0 }),
                &Type::Agg(AggKind::Hist { bits: 2 })
            ),
            None
        );
        assert_eq!(unify(&Type::Agg(AggKind::Count), &Type::I64), None);
        assert_eq!(
            unify(
                &Type::Tuple(vec![Type::I64, Type::Str { size: 4 }]),
                &Type::Tuple(vec![Type::U64, Type::Str { size: 8 }])
            ),
            Some(Type::Tuple(vec![Type::U64, Type::Str { size: 8 }]))
        );
        assert_eq!(
            promote(&Type::Tuple(vec![Type::U32, Type::Bool])),
            Type::Tuple(vec![Type::U64, Type::Bool])
        );
        assert_eq!(read_value(&Type::Agg(AggKind::Count)), Some(Type::I64));
        assert_eq!(read_value(&Type::Agg(AggKind::Hist { bits: 0 })), None);
    }
}
