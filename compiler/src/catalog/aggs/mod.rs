//! Registry of aggregations (`count`, `sum`, `hist`, ...): each module holds the type rule,
//! the map value layout, the per-CPU merge and the decoder.
//!
//! **Per-CPU value layouts** (little-endian; the code generator relies on them):
//!
//! | aggregation | bytes per CPU |
//! |---|---|
//! | `count` | `u64` count |
//! | `sum` | `i64` total (`u64` when the values are unsigned) |
//! | `avg` | `{ sum: i64, count: u64 }` |
//! | `min`, `max` | `{ value: i64, set: u64 }` (`set` = 1 once written) |
//! | `stats` | `{ count: u64, sum: i64 }` |
//! | `hist(n, bits)` | [`hist_buckets`]`(bits)` `u64` counters indexed by [`hist_bucket`] |
//! | `lhist(n, min, max, step)` | [`lhist_buckets`] `u64` counters indexed by [`lhist_bucket`] |
//! | `tseries(n, interval, k[, agg])` | `k` slots `{ value: i64, meta: u64, epoch: u64 }` ([`tseries`]) |

// Diagnostics are returned by value, as everywhere in the catalog.
#![allow(clippy::result_large_err)]

mod avg;
mod count;
mod hist;
pub(crate) mod lhist;
mod minmax;
mod stats;
mod sum;
pub mod tseries;

pub use avg::Avg;
pub use count::Count;
pub use hist::{Hist, hist_bucket, hist_bucket_bounds, hist_buckets};
pub use lhist::{Lhist, lhist_bucket, lhist_bucket_bounds, lhist_buckets};
pub use minmax::{Max, Min};
pub use stats::Stats;
pub use sum::Sum;
pub use tseries::Tseries;

use super::FunctionBackend;
use crate::value::{AggValue, read_le};
use sonde_lang::catalog::{CallCheck, CallPosition};
use sonde_lang::diag::Diagnostic;
use sonde_lang::types::{AggKind, Type};

/// Every aggregation.
pub static ALL: &[&'static dyn FunctionBackend] = &[
    &Count, &Sum, &Avg, &Min, &Max, &Stats, &Hist, &Lhist, &Tseries,
];

/// The bounds of one histogram bucket, for labels and JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bucket {
    /// Values below the bound: `(..., x)`.
    Below(i128),
    /// Values in `[lo, hi)`.
    Range {
        /// Inclusive lower bound.
        lo: i128,
        /// Exclusive upper bound.
        hi: i128,
    },
    /// Values at or above the bound: `[x, ...)`.
    Above(i128),
}

/// Size in bytes of one CPU's slot of an aggregation.
pub fn value_size(kind: &AggKind) -> u32 {
    match kind {
        AggKind::Count | AggKind::Sum { .. } => 8,
        AggKind::Avg { .. } | AggKind::Min { .. } | AggKind::Max { .. } | AggKind::Stats { .. } => {
            16
        }
        // The buckets, then the sum of the values counted.
        AggKind::Hist { bits } => 8 * (hist_buckets(*bits) as u32 + 1),
        AggKind::Lhist { min, max, step } => 8 * (lhist_buckets(*min, *max, *step) as u32 + 1),
        AggKind::Tseries { num_intervals, .. } => {
            tseries::SLOT_SIZE * (*num_intervals).clamp(1, tseries::MAX_INTERVALS)
        }
    }
}

/// Merges the per-CPU slots of an aggregation into one value.
pub fn merge(kind: &AggKind, per_cpu: &[&[u8]]) -> AggValue {
    match kind {
        AggKind::Count => count::merge(per_cpu),
        AggKind::Sum { signed } => sum::merge(per_cpu, *signed),
        AggKind::Avg { signed } => avg::merge(per_cpu, *signed),
        AggKind::Min { signed } => minmax::merge_min(per_cpu, *signed),
        AggKind::Max { signed } => minmax::merge_max(per_cpu, *signed),
        AggKind::Stats { signed } => stats::merge(per_cpu, *signed),
        AggKind::Hist { bits } => hist::merge(per_cpu, *bits),
        AggKind::Lhist { min, max, step } => lhist::merge(per_cpu, *min, *max, *step),
        AggKind::Tseries { .. } => tseries::merge(per_cpu, kind),
    }
}

/// Sums the `u64` at `off` over all CPUs (wrapping).
fn sum_u64(per_cpu: &[&[u8]], off: usize) -> u64 {
    per_cpu
        .iter()
        .fold(0u64, |a, cpu| a.wrapping_add(read_le(cpu, off, 8)))
}

/// Adds up `n` `u64` counters per CPU, element-wise.
fn sum_buckets(per_cpu: &[&[u8]], n: usize) -> Vec<u64> {
    (0..n).map(|i| sum_u64(per_cpu, i * 8)).collect()
}

/// Reports an aggregation used anywhere but as the value of a map assignment.
fn check_position(call: &CallCheck<'_>) -> Result<(), Diagnostic> {
    if call.position == CallPosition::MapAssign {
        return Ok(());
    }
    let name = &call.name.name;
    Err(Diagnostic::error(
        "sonde::sema::agg_position",
        call.span,
        format!("`{name}()` can only be assigned to a map"),
    )
    .with_label("aggregation used outside a map assignment")
    .with_help(format!(
        "write `@name = {name}(...)` or `@name[key] = {name}(...)`"
    )))
}

/// Checks the arity, then the position of an aggregation call.
fn check_call(
    call: &CallCheck<'_>,
    signature: &str,
    arity: std::ops::RangeInclusive<usize>,
) -> Result<(), Diagnostic> {
    if !arity.contains(&call.args.len()) {
        return Err(call.arity_error(signature));
    }
    check_position(call)
}

/// Checks that argument `i` is an integer and returns whether it is signed.
fn int_arg(call: &CallCheck<'_>, i: usize) -> Result<bool, Diagnostic> {
    let ty = call.arg_types.get(i).unwrap_or(&Type::Void);
    if ty.is_integer() {
        return Ok(ty.is_signed() || matches!(ty, Type::Enum { .. }));
    }
    let span = call.args.get(i).map_or(call.span, |a| a.span);
    Err(Diagnostic::error(
        "sonde::sema::agg_arg_type",
        span,
        format!("`{}()` only takes integer arguments", call.name.name),
    )
    .with_label(format!("this is a {ty}"))
    .with_help("aggregate an integer, for example a length, a duration or a count"))
}

/// Argument `i` as a compile-time integer, or a diagnostic.
fn const_arg(call: &CallCheck<'_>, i: usize, what: &str) -> Result<i64, Diagnostic> {
    call.const_int(i).ok_or_else(|| {
        let span = call.args.get(i).map_or(call.span, |a| a.span);
        Diagnostic::error(
            "sonde::sema::agg_const",
            span,
            format!(
                "the {what} of `{}()` must be an integer literal",
                call.name.name
            ),
        )
        .with_label("not a constant")
        .with_help("histogram bounds are fixed when the script is compiled")
    })
}

#[cfg(test)]
pub(crate) mod testutil {
    //! Builds `CallCheck`s for the aggregation tests.

    use sonde_lang::ast::{Expr, ExprId, ExprKind, Ident};
    use sonde_lang::catalog::{CallCheck, CallPosition, Function, ProbeContext};
    use sonde_lang::diag::Diagnostic;
    use sonde_lang::span::Span;
    use sonde_lang::types::Type;

    /// An argument: a literal integer or an expression of some type.
    pub enum Arg {
        /// An integer literal (negative numbers become `-lit`).
        Lit(i64),
        /// A non-constant expression with this type.
        Of(Type),
        /// This expression (a string literal, ...) with this type.
        Expr(ExprKind, Type),
    }

    /// Runs `f`'s type rule on `name(args)` at `position`.
    pub fn check(
        f: &dyn Function,
        args: &[Arg],
        position: CallPosition,
    ) -> Result<Type, Diagnostic> {
        let exprs: Vec<Expr> = args
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let span = Span::new(10 * i + 10, 10 * i + 12);
                let kind = match a {
                    Arg::Lit(v) if *v < 0 => ExprKind::Unary {
                        op: sonde_lang::ast::UnOp::Neg,
                        expr: Box::new(Expr {
                            id: ExprId(100 + i as u32),
                            kind: ExprKind::Int(v.unsigned_abs()),
                            span,
                        }),
                    },
                    Arg::Lit(v) => ExprKind::Int(*v as u64),
                    Arg::Of(_) => ExprKind::Var(format!("x{i}")),
                    Arg::Expr(kind, _) => kind.clone(),
                };
                Expr {
                    id: ExprId(i as u32),
                    kind,
                    span,
                }
            })
            .collect();
        let types: Vec<Type> = args
            .iter()
            .map(|a| match a {
                Arg::Lit(_) => Type::I64,
                Arg::Of(t) | Arg::Expr(_, t) => t.clone(),
            })
            .collect();
        let name = Ident {
            name: f.name().to_string(),
            span: Span::new(0, 5),
        };
        let ctx = ProbeContext::bare("BEGIN");
        let call = CallCheck {
            name: &name,
            args: &exprs,
            arg_types: &types,
            span: Span::new(0, 100),
            position,
            ctx: &ctx,
            positional: &[],
            map_args: &[],
            max_strlen: 64,
            named: &[],
            kernel: &sonde_lang::kernel::NoKernel,
            stack_mode: sonde_lang::types::StackMode::Bpftrace,
            warnings: &Default::default(),
        };
        f.check(&call)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_is_complete_and_documented() {
        let names: Vec<_> = ALL.iter().map(|f| f.name()).collect();
        assert_eq!(
            names,
            [
                "count", "sum", "avg", "min", "max", "stats", "hist", "lhist", "tseries"
            ]
        );
        for f in ALL {
            assert!(!f.doc().is_empty(), "{} has no doc", f.name());
            assert!(f.signature().starts_with(f.name()));
        }
    }

    #[test]
    fn value_sizes() {
        assert_eq!(value_size(&AggKind::Count), 8);
        assert_eq!(value_size(&AggKind::Sum { signed: false }), 8);
        assert_eq!(value_size(&AggKind::Avg { signed: true }), 16);
        assert_eq!(value_size(&AggKind::Min { signed: true }), 16);
        assert_eq!(value_size(&AggKind::Stats { signed: true }), 16);
        // The buckets and the sum.
        assert_eq!(value_size(&AggKind::Hist { bits: 0 }), 8 * 66);
        assert_eq!(
            value_size(&AggKind::Lhist {
                min: 0,
                max: 100,
                step: 10
            }),
            8 * 13
        );
    }

    #[test]
    fn histograms_merge_their_sums() {
        let slot = |sum: i64| -> Vec<u8> {
            let mut v = vec![0u8; 8 * 65];
            v[8..16].copy_from_slice(&1u64.to_le_bytes());
            v.extend(sum.to_le_bytes());
            v
        };
        let (a, b) = (slot(-5), slot(12));
        let AggValue::Hist { buckets, sum, .. } = merge(&AggKind::Hist { bits: 0 }, &[&a, &b])
        else {
            panic!("not a histogram")
        };
        assert_eq!((buckets[1], sum), (2, 7));
    }
}
