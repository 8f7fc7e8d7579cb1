//! `lhist(n, min, max, step)`: a linear histogram. Per CPU: [`lhist_buckets`] `u64` counters,
//! then the sum of the values counted.
//!
//! Bucket scheme (as bpftrace 0.17): with `k = (max - min) / step`, index 0 holds values below
//! `min`, index `i` in `1..=k` holds `[min + (i-1)*step, min + i*step)`, and index `k + 1`
//! holds everything else, labelled `[max, ...)` (so with a step that does not divide the
//! range, the values between `min + k*step` and `max` land there too, as in bpftrace).

use super::{Bucket, check_call, const_arg, int_arg, sum_buckets};
use crate::catalog::FunctionBackend;
use crate::ir::{AluOp, Cond, Inst, Operand};
use crate::lower::cx::{LowerCall, LowerCx, Val};
use crate::lower::maps::{add_bucket, add_to, agg_update, clamp_bucket};
use crate::value::AggValue;
use sonde_lang::catalog::{CallCheck, Function};
use sonde_lang::diag::Diagnostic;
use sonde_lang::types::{AggKind, Type};

/// `lhist(n, min, max, step)`.
pub struct Lhist;

/// Most in-range buckets an `lhist` may have.
pub const MAX_BUCKETS: i64 = 1000;

impl Function for Lhist {
    fn name(&self) -> &'static str {
        "lhist"
    }
    fn signature(&self) -> &'static str {
        "lhist(n, min, max, step)"
    }
    fn doc(&self) -> &'static str {
        "Linear histogram of the integer n from min to max in buckets of width step."
    }
    fn check(&self, call: &CallCheck<'_>) -> Result<Type, Diagnostic> {
        check_call(call, self.signature(), 4..=4)?;
        int_arg(call, 0)?;
        let min = const_arg(call, 1, "minimum")?;
        let max = const_arg(call, 2, "maximum")?;
        let step = const_arg(call, 3, "step")?;
        let bad = |i: usize, msg: String, label: String| {
            Err(Diagnostic::error("sonde::sema::lhist_range", call.args[i].span, msg)
                .with_label(label)
                .with_help("the call is lhist(value, min, max, step) with min < max, step ≥ 1 and at most 1000 buckets"))
        };
        if step < 1 {
            return bad(
                3,
                "`lhist()` step must be at least 1".into(),
                format!("{step} given"),
            );
        }
        if max <= min {
            return bad(
                2,
                "`lhist()` max must be greater than min".into(),
                format!("{max} ≤ {min}"),
            );
        }
        let buckets = (i128::from(max) - i128::from(min)) / i128::from(step);
        if buckets < 1 {
            return bad(
                3,
                "`lhist()` step is larger than the range".into(),
                format!("range is {}", i128::from(max) - i128::from(min)),
            );
        }
        if buckets > i128::from(MAX_BUCKETS) {
            return bad(
                3,
                format!(
                    "`lhist()` would need {buckets} buckets, at most {MAX_BUCKETS} are allowed"
                ),
                "step too small for this range".into(),
            );
        }
        Ok(Type::Agg(AggKind::Lhist { min, max, step }))
    }
}

impl FunctionBackend for Lhist {
    fn lower(&self, cx: &mut LowerCx<'_>, call: &LowerCall<'_>) -> Result<Val, Diagnostic> {
        let Type::Agg(AggKind::Lhist { min, max, step }) = call.ty else {
            return Err(cx.unsupported(call.span, "this lhist()"));
        };
        let k = in_range(min, max, step) as i64;
        let v = cx.lower_int(&call.args[0])?;
        // Mirrors `lhist_bucket`: 0 below min, k + 1 at or above max.
        let idx = cx.imm(0);
        let done = cx.label();
        cx.branch(Cond::SLt, v, Operand::Imm(min), done);
        cx.emit(Inst::Mov {
            dst: idx,
            src: Operand::Imm(k + 1),
        });
        cx.branch(Cond::SGe, v, Operand::Imm(max), done);
        let off = cx.alu(AluOp::Sub, v, Operand::Imm(min));
        let q = cx.alu(AluOp::UDiv, off, Operand::Imm(step.max(1)));
        cx.emit(Inst::Alu {
            op: AluOp::Add,
            dst: idx,
            lhs: q,
            rhs: Operand::Imm(1),
        });
        cx.place_label(done);
        clamp_bucket(cx, idx, lhist_buckets(min, max, step));
        let sum_at = 8 * lhist_buckets(min, max, step) as i32;
        agg_update(cx, call, &mut |cx, p, _| {
            add_bucket(cx, p, idx);
            add_to(cx, p, sum_at, Operand::Reg(v));
        })
    }
}

/// `(max - min) / step`, the number of in-range buckets (0 for invalid parameters).
fn in_range(min: i64, max: i64, step: i64) -> usize {
    if step < 1 || max <= min {
        return 0;
    }
    ((i128::from(max) - i128::from(min)) / i128::from(step)).clamp(0, i128::from(MAX_BUCKETS))
        as usize
}

/// Number of buckets: the in-range ones plus one below and one above.
pub fn lhist_buckets(min: i64, max: i64, step: i64) -> usize {
    in_range(min, max, step) + 2
}

/// The bucket index of `value` (the reference the code generator mirrors).
pub fn lhist_bucket(value: i64, min: i64, max: i64, step: i64) -> usize {
    let k = in_range(min, max, step);
    if value < min {
        return 0;
    }
    if value >= max || k == 0 {
        return k + 1;
    }
    let i = ((i128::from(value) - i128::from(min)) / i128::from(step)) as usize + 1;
    i.min(k + 1)
}

/// The value range of bucket `index`.
pub fn lhist_bucket_bounds(index: usize, min: i64, max: i64, step: i64) -> Bucket {
    let k = in_range(min, max, step);
    match index {
        0 => Bucket::Below(i128::from(min)),
        i if i <= k => {
            let lo = i128::from(min) + (i as i128 - 1) * i128::from(step);
            Bucket::Range {
                lo,
                hi: lo + i128::from(step),
            }
        }
        _ => Bucket::Above(i128::from(max)),
    }
}

/// Adds the per-CPU bucket counters.
pub(super) fn merge(per_cpu: &[&[u8]], min: i64, max: i64, step: i64) -> AggValue {
    let n = lhist_buckets(min, max, step);
    AggValue::Lhist {
        min,
        max,
        step,
        buckets: sum_buckets(per_cpu, n),
        sum: super::sum_u64(per_cpu, n * 8) as i64,
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{Arg, check};
    use super::*;
    use sonde_lang::catalog::CallPosition;

    fn lh(args: [i64; 3]) -> Result<Type, Diagnostic> {
        let [a, b, c] = args;
        check(
            &Lhist,
            &[Arg::Of(Type::I64), Arg::Lit(a), Arg::Lit(b), Arg::Lit(c)],
            CallPosition::MapAssign,
        )
    }

    #[test]
    fn type_rule() {
        assert_eq!(
            lh([0, 100, 10]),
            Ok(Type::Agg(AggKind::Lhist {
                min: 0,
                max: 100,
                step: 10
            }))
        );
        assert_eq!(
            lh([0, 1000, 1]).unwrap(),
            Type::Agg(AggKind::Lhist {
                min: 0,
                max: 1000,
                step: 1
            })
        );
        for bad in [[0, 10, 0], [10, 10, 1], [0, 1001, 1], [0, 10, 20]] {
            assert_eq!(
                lh(bad).unwrap_err().code,
                "sonde::sema::lhist_range",
                "{bad:?}"
            );
        }
        let e = check(
            &Lhist,
            &[Arg::Lit(1), Arg::Of(Type::I64), Arg::Lit(10), Arg::Lit(1)],
            CallPosition::MapAssign,
        );
        assert_eq!(e.unwrap_err().code, "sonde::sema::agg_const");
        let e = check(
            &Lhist,
            &[Arg::Lit(1), Arg::Lit(0), Arg::Lit(10)],
            CallPosition::MapAssign,
        );
        assert_eq!(e.unwrap_err().code, "sonde::sema::arity");
    }

    #[test]
    fn buckets_match_bpftrace() {
        // bpftrace 0.17, lhist(v, 0, 100, 10): -1 → (..., 0), 5 → [0, 10), 55 → [50, 60),
        // 100 → [100, ...).
        assert_eq!(lhist_buckets(0, 100, 10), 12);
        assert_eq!(lhist_bucket(-1, 0, 100, 10), 0);
        assert_eq!(lhist_bucket(5, 0, 100, 10), 1);
        assert_eq!(lhist_bucket(55, 0, 100, 10), 6);
        assert_eq!(lhist_bucket(100, 0, 100, 10), 11);
        assert_eq!(lhist_bucket(1000, 0, 100, 10), 11);
        assert_eq!(
            lhist_bucket_bounds(6, 0, 100, 10),
            Bucket::Range { lo: 50, hi: 60 }
        );
        assert_eq!(lhist_bucket_bounds(11, 0, 100, 10), Bucket::Above(100));
        assert_eq!(lhist_bucket_bounds(0, 0, 100, 10), Bucket::Below(0));
        // lhist(v, 0, 10, 3): 3 → [3, 6); 9 and 10 → [10, ...).
        assert_eq!(lhist_bucket(3, 0, 10, 3), 2);
        assert_eq!(lhist_bucket(9, 0, 10, 3), 4);
        assert_eq!(lhist_bucket(10, 0, 10, 3), 4);
        assert_eq!(lhist_bucket(i64::MIN, 0, 10, 3), 0);
        assert_eq!(lhist_bucket(i64::MAX, -5, 10, 3), 6);
    }

    #[test]
    fn merges_buckets() {
        let a: Vec<u8> = (0..12u64).flat_map(|i| i.to_le_bytes()).collect();
        let AggValue::Lhist { buckets, .. } = merge(&[&a, &a], 0, 100, 10) else {
            panic!()
        };
        assert_eq!(buckets, (0..12u64).map(|i| 2 * i).collect::<Vec<_>>());
    }
}
