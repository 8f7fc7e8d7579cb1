//! `hist(n[, bits])`: a log2 histogram with `2^bits` sub-buckets per power of two.
//! Per CPU: [`hist_buckets`]`(bits)` `u64` counters, then the sum of the values counted.
//!
//! Bucket scheme (bits = 0 is bpftrace 0.17's `hist(n)`): index 0 holds negative values,
//! index 1 holds 0; values `1 .. 2^bits` get one bucket each; from then on every power of two
//! `[2^l, 2^(l+1))` is split into `2^bits` equal buckets. bpftrace 0.17 capped the log2 at
//! 32 bits (every value ≥ 4G landed in `[2G, 4G)`); sonde uses all 63 bits.

use super::{Bucket, check_call, const_arg, int_arg, sum_buckets};
use crate::catalog::FunctionBackend;
use crate::ir::{AluOp, Cond, Inst, Operand, VReg};
use crate::lower::cx::{LowerCall, LowerCx, Val};
use crate::lower::maps::{add_bucket, add_to, agg_update, clamp_bucket};
use crate::value::AggValue;
use sonde_lang::catalog::{CallCheck, Function};
use sonde_lang::diag::Diagnostic;
use sonde_lang::types::{AggKind, Type};

/// `hist(n[, bits])`.
pub struct Hist;

/// Largest accepted `bits` argument.
pub const MAX_BITS: u8 = 5;

impl Function for Hist {
    fn name(&self) -> &'static str {
        "hist"
    }
    fn signature(&self) -> &'static str {
        "hist(n[, bits])"
    }
    fn doc(&self) -> &'static str {
        "Log2 histogram of the integer n; bits (0..=5) splits each power of two into 2^bits buckets."
    }
    fn check(&self, call: &CallCheck<'_>) -> Result<Type, Diagnostic> {
        check_call(call, self.signature(), 1..=2)?;
        int_arg(call, 0)?;
        let bits = if call.args.len() == 2 {
            const_arg(call, 1, "bits argument")?
        } else {
            0
        };
        if !(0..=i64::from(MAX_BITS)).contains(&bits) {
            return Err(Diagnostic::error(
                "sonde::sema::hist_bits",
                call.args[1].span,
                format!("`hist()` bits must be between 0 and {MAX_BITS}"),
            )
            .with_label(format!("{bits} given"))
            .with_help("each power of two gets 2^bits buckets; 0 gives plain log2 buckets"));
        }
        Ok(Type::Agg(AggKind::Hist { bits: bits as u8 }))
    }
}

impl FunctionBackend for Hist {
    fn lower(&self, cx: &mut LowerCx<'_>, call: &LowerCall<'_>) -> Result<Val, Diagnostic> {
        let bits = match &call.ty {
            Type::Agg(AggKind::Hist { bits }) => (*bits).min(MAX_BITS),
            _ => 0,
        };
        let v = cx.lower_int(&call.args[0])?;
        let idx = lower_bucket(cx, v, bits);
        clamp_bucket(cx, idx, hist_buckets(bits));
        let sum_at = 8 * hist_buckets(bits) as i32;
        agg_update(cx, call, &mut |cx, p, _| {
            add_bucket(cx, p, idx);
            add_to(cx, p, sum_at, Operand::Reg(v));
        })
    }
}

/// Emits the computation of [`hist_bucket`] in IR (the two must agree).
fn lower_bucket(cx: &mut LowerCx<'_>, v: VReg, bits: u8) -> VReg {
    let k = i64::from(bits);
    let idx = cx.imm(0);
    let done = cx.label();
    cx.branch(Cond::SLt, v, Operand::Imm(0), done);
    let large = cx.label();
    cx.branch(Cond::UGe, v, Operand::Imm(1 << k), large);
    cx.emit(Inst::Alu {
        op: AluOp::Add,
        dst: idx,
        lhs: v,
        rhs: Operand::Imm(1),
    });
    cx.emit(Inst::Jump(done));
    cx.place_label(large);
    // l = floor(log2(v)) by binary search.
    let t = cx.vreg();
    cx.emit(Inst::Mov {
        dst: t,
        src: Operand::Reg(v),
    });
    let l = cx.imm(0);
    for sh in [32i64, 16, 8, 4, 2, 1] {
        let skip = cx.label();
        cx.branch(Cond::ULt, t, Operand::Imm(1 << sh), skip);
        cx.emit(Inst::Alu {
            op: AluOp::LShr,
            dst: t,
            lhs: t,
            rhs: Operand::Imm(sh),
        });
        cx.emit(Inst::Alu {
            op: AluOp::Add,
            dst: l,
            lhs: l,
            rhs: Operand::Imm(sh),
        });
        cx.place_label(skip);
    }
    // idx = 1 + ((l - k + 1) << k) + ((v >> (l - k)) & (2^k - 1)): l + 2 when k = 0.
    if k == 0 {
        cx.emit(Inst::Alu {
            op: AluOp::Add,
            dst: idx,
            lhs: l,
            rhs: Operand::Imm(2),
        });
        cx.place_label(done);
        return idx;
    }
    let group = cx.alu(AluOp::Sub, l, Operand::Imm(k - 1));
    let group = cx.alu(AluOp::Shl, group, Operand::Imm(k));
    let shift = cx.alu(AluOp::Sub, l, Operand::Imm(k));
    let sub = cx.alu(AluOp::LShr, v, Operand::Reg(shift));
    let sub = cx.alu(AluOp::And, sub, Operand::Imm((1 << k) - 1));
    let sum = cx.alu(AluOp::Add, group, Operand::Reg(sub));
    cx.emit(Inst::Alu {
        op: AluOp::Add,
        dst: idx,
        lhs: sum,
        rhs: Operand::Imm(1),
    });
    cx.place_label(done);
    idx
}

/// Number of buckets of a histogram with `bits` sub-bucket bits: `(64 - bits) * 2^bits + 1`
/// (65 for `bits = 0`).
pub fn hist_buckets(bits: u8) -> usize {
    let k = usize::from(bits.min(MAX_BITS));
    ((64 - k) << k) + 1
}

/// The bucket index of `value` (the reference the code generator mirrors).
pub fn hist_bucket(value: i64, bits: u8) -> usize {
    let k = u32::from(bits.min(MAX_BITS));
    if value < 0 {
        return 0;
    }
    let v = value as u64;
    if v < (1u64 << k) {
        return v as usize + 1;
    }
    let l = 63 - v.leading_zeros();
    let group = (l - k + 1) as usize;
    let sub = ((v >> (l - k)) & ((1u64 << k) - 1)) as usize;
    1 + (group << k) + sub
}

/// The value range of bucket `index`.
pub fn hist_bucket_bounds(index: usize, bits: u8) -> Bucket {
    let k = usize::from(bits.min(MAX_BITS));
    match index {
        0 => Bucket::Below(0),
        i if i <= 1 << k => Bucket::Range {
            lo: i as i128 - 1,
            hi: i as i128,
        },
        i => {
            let j = i - 1 - (1 << k);
            let (group, sub) = (j >> k, j & ((1 << k) - 1));
            let lo = (((1usize << k) + sub) as i128) << group;
            Bucket::Range {
                lo,
                hi: lo + (1i128 << group),
            }
        }
    }
}

/// Adds the per-CPU bucket counters.
pub(super) fn merge(per_cpu: &[&[u8]], bits: u8) -> AggValue {
    let n = hist_buckets(bits);
    AggValue::Hist {
        bits,
        buckets: sum_buckets(per_cpu, n),
        sum: super::sum_u64(per_cpu, n * 8) as i64,
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{Arg, check};
    use super::*;
    use sonde_lang::catalog::CallPosition;

    #[test]
    fn type_rule() {
        let t = check(&Hist, &[Arg::Of(Type::U64)], CallPosition::MapAssign);
        assert_eq!(t, Ok(Type::Agg(AggKind::Hist { bits: 0 })));
        let t = check(
            &Hist,
            &[Arg::Of(Type::U64), Arg::Lit(3)],
            CallPosition::MapAssign,
        );
        assert_eq!(t, Ok(Type::Agg(AggKind::Hist { bits: 3 })));
        let e = check(&Hist, &[Arg::Lit(1), Arg::Lit(6)], CallPosition::MapAssign).unwrap_err();
        assert_eq!((e.code, e.span.start), ("sonde::sema::hist_bits", 20));
        let e = check(
            &Hist,
            &[Arg::Lit(1), Arg::Of(Type::I64)],
            CallPosition::MapAssign,
        );
        assert_eq!(e.unwrap_err().code, "sonde::sema::agg_const");
        assert_eq!(
            check(&Hist, &[], CallPosition::MapAssign).unwrap_err().code,
            "sonde::sema::arity"
        );
    }

    #[test]
    fn bits0_matches_bpftrace() {
        // bpftrace 0.17: -3 → (..., 0), 0 → [0], 1 → [1], 5 → [4, 8), 1000 → [512, 1K).
        assert_eq!(hist_bucket(-3, 0), 0);
        assert_eq!(hist_bucket(0, 0), 1);
        assert_eq!(hist_bucket(1, 0), 2);
        assert_eq!(hist_bucket(2, 0), 3);
        assert_eq!(hist_bucket(3, 0), 3);
        assert_eq!(hist_bucket(5, 0), 4);
        assert_eq!(hist_bucket(1000, 0), 11);
        assert_eq!(
            hist_bucket_bounds(11, 0),
            Bucket::Range { lo: 512, hi: 1024 }
        );
        assert_eq!(hist_bucket(i64::MAX, 0), 64);
        assert_eq!(hist_buckets(0), 65);
        assert_eq!(
            hist_bucket_bounds(64, 0),
            Bucket::Range {
                lo: 1 << 62,
                hi: 1 << 63
            }
        );
        assert_eq!(hist_bucket_bounds(0, 0), Bucket::Below(0));
        assert_eq!(hist_bucket_bounds(1, 0), Bucket::Range { lo: 0, hi: 1 });
        assert_eq!(hist_bucket_bounds(2, 0), Bucket::Range { lo: 1, hi: 2 });
    }

    #[test]
    fn sub_buckets() {
        assert_eq!(hist_bucket(3, 2), 4);
        assert_eq!(hist_bucket(4, 2), 5);
        assert_eq!(hist_bucket(8, 2), 9);
        assert_eq!(hist_bucket(9, 2), 9);
        assert_eq!(hist_bucket(10, 2), 10);
        assert_eq!(hist_bucket_bounds(10, 2), Bucket::Range { lo: 10, hi: 12 });
        assert_eq!(hist_buckets(5), 59 * 32 + 1);
        assert_eq!(hist_bucket(i64::MAX, 5), hist_buckets(5) - 1);
    }

    #[test]
    fn every_value_lands_in_its_bounds() {
        for bits in 0..=MAX_BITS {
            let mut samples: Vec<i64> = (-2..300).collect();
            samples
                .extend((10..63).flat_map(|s| [(1i64 << s) - 1, 1i64 << s, (1i64 << s) + 12345]));
            samples.push(i64::MAX);
            for v in samples {
                let i = hist_bucket(v, bits);
                assert!(i < hist_buckets(bits), "{v} bits {bits}");
                match hist_bucket_bounds(i, bits) {
                    Bucket::Below(b) => assert!(i128::from(v) < b),
                    Bucket::Range { lo, hi } => assert!(
                        lo <= i128::from(v) && i128::from(v) < hi,
                        "{v} {bits} {lo} {hi}"
                    ),
                    Bucket::Above(b) => assert!(i128::from(v) >= b),
                }
            }
        }
    }

    #[test]
    fn merges_buckets() {
        let mut a = vec![0u8; 65 * 8];
        let mut b = vec![0u8; 65 * 8];
        a[16..24].copy_from_slice(&2u64.to_le_bytes());
        b[16..24].copy_from_slice(&3u64.to_le_bytes());
        let AggValue::Hist { buckets, .. } = merge(&[&a, &b], 0) else {
            panic!()
        };
        assert_eq!((buckets.len(), buckets[2], buckets[3]), (65, 5, 0));
    }
}
