//! `min(n)` and `max(n)`: the smallest / largest value. Per CPU: `{ value: i64, set: u64 }`,
//! `set` = 1 once the CPU wrote a value, so negative values and zero work (bpftrace 0.17
//! lost negative maxima; sonde does not).

use super::{check_call, int_arg};
use crate::catalog::FunctionBackend;
use crate::ir::{Cond, Label, Operand, VReg, Width};
use crate::lower::cx::{LowerCall, LowerCx, Val};
use crate::lower::maps::agg_update;
use crate::value::{AggValue, Num, read_le};
use sonde_lang::catalog::{CallCheck, Function};
use sonde_lang::diag::Diagnostic;
use sonde_lang::types::{AggKind, Type};

/// `min(n)`.
pub struct Min;

/// `max(n)`.
pub struct Max;

impl Function for Min {
    fn name(&self) -> &'static str {
        "min"
    }
    fn signature(&self) -> &'static str {
        "min(n)"
    }
    fn doc(&self) -> &'static str {
        "Keeps the smallest value of the integer n."
    }
    fn check(&self, call: &CallCheck<'_>) -> Result<Type, Diagnostic> {
        check_call(call, self.signature(), 1..=1)?;
        let signed = int_arg(call, 0)?;
        Ok(Type::Agg(AggKind::Min { signed }))
    }
}

impl FunctionBackend for Min {
    fn lower(&self, cx: &mut LowerCx<'_>, call: &LowerCall<'_>) -> Result<Val, Diagnostic> {
        lower_extreme(cx, call, true)
    }
}

impl Function for Max {
    fn name(&self) -> &'static str {
        "max"
    }
    fn signature(&self) -> &'static str {
        "max(n)"
    }
    fn doc(&self) -> &'static str {
        "Keeps the largest value of the integer n."
    }
    fn check(&self, call: &CallCheck<'_>) -> Result<Type, Diagnostic> {
        check_call(call, self.signature(), 1..=1)?;
        let signed = int_arg(call, 0)?;
        Ok(Type::Agg(AggKind::Max { signed }))
    }
}

impl FunctionBackend for Max {
    fn lower(&self, cx: &mut LowerCx<'_>, call: &LowerCall<'_>) -> Result<Val, Diagnostic> {
        lower_extreme(cx, call, false)
    }
}

/// The values of the CPUs that wrote one.
fn set_values<'a>(per_cpu: &'a [&'a [u8]], signed: bool) -> impl Iterator<Item = (i128, i64)> + 'a {
    per_cpu
        .iter()
        .filter(|cpu| read_le(cpu, 8, 8) != 0)
        .map(move |cpu| {
            let bits = read_le(cpu, 0, 8) as i64;
            (Num::new(bits, signed).wide(), bits)
        })
}

/// The minimum over the CPUs that wrote a value.
pub(super) fn merge_min(per_cpu: &[&[u8]], signed: bool) -> AggValue {
    let value = set_values(per_cpu, signed)
        .min_by_key(|(w, _)| *w)
        .map(|(_, b)| b);
    AggValue::Min { value, signed }
}

/// The maximum over the CPUs that wrote a value.
pub(super) fn merge_max(per_cpu: &[&[u8]], signed: bool) -> AggValue {
    let value = set_values(per_cpu, signed)
        .max_by_key(|(w, _)| *w)
        .map(|(_, b)| b);
    AggValue::Max { value, signed }
}

/// `min`/`max`: replaces the value `{value, set}` when unset or beaten by the new value.
fn lower_extreme(cx: &mut LowerCx<'_>, call: &LowerCall<'_>, min: bool) -> Result<Val, Diagnostic> {
    let signed = match &call.ty {
        Type::Agg(AggKind::Min { signed } | AggKind::Max { signed }) => *signed,
        _ => true,
    };
    let v = cx.lower_int(&call.args[0])?;
    agg_update(cx, call, &mut |cx, p, end| {
        set_extreme(cx, p, v, min, signed, end)
    })
}

/// Writes `v` into the slot `{value, set}` at `p` when the slot is unset or `v` beats its
/// value (is smaller for `min`, larger otherwise); else jumps to `keep_old`.
pub(super) fn set_extreme(
    cx: &mut LowerCx<'_>,
    p: VReg,
    v: VReg,
    min: bool,
    signed: bool,
    keep_old: Label,
) {
    let keep = match (min, signed) {
        (true, true) => Cond::SGe,
        (true, false) => Cond::UGe,
        (false, true) => Cond::SLe,
        (false, false) => Cond::ULe,
    };
    let write = cx.label();
    let set = cx.load(p, 8, Width::W64);
    cx.branch(Cond::Eq, set, Operand::Imm(0), write);
    let old = cx.load(p, 0, Width::W64);
    cx.branch(keep, v, Operand::Reg(old), keep_old);
    cx.place_label(write);
    cx.store(p, 0, Operand::Reg(v), Width::W64);
    cx.store(p, 8, Operand::Imm(1), Width::W64);
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{Arg, check};
    use super::*;
    use sonde_lang::catalog::CallPosition;

    fn slot(v: i64, set: u64) -> Vec<u8> {
        [v.to_le_bytes(), set.to_le_bytes()].concat()
    }

    #[test]
    fn type_rules() {
        let t = check(&Min, &[Arg::Lit(5)], CallPosition::MapAssign);
        assert_eq!(t, Ok(Type::Agg(AggKind::Min { signed: true })));
        let t = check(&Max, &[Arg::Of(Type::U8)], CallPosition::MapAssign);
        assert_eq!(t, Ok(Type::Agg(AggKind::Max { signed: false })));
        let e = check(&Max, &[Arg::Lit(5)], CallPosition::Value).unwrap_err();
        assert_eq!(e.code, "sonde::sema::agg_position");
    }

    #[test]
    fn ignores_unset_cpus() {
        let (a, b, unset) = (slot(-5, 1), slot(3, 1), slot(-100, 0));
        assert_eq!(
            merge_min(&[&a, &b, &unset], true),
            AggValue::Min {
                value: Some(-5),
                signed: true
            }
        );
        assert_eq!(
            merge_max(&[&a, &b, &unset], true),
            AggValue::Max {
                value: Some(3),
                signed: true
            }
        );
        let (c, d) = (slot(-7, 1), slot(-5, 1));
        assert_eq!(
            merge_max(&[&c, &d], true),
            AggValue::Max {
                value: Some(-5),
                signed: true
            }
        );
        assert_eq!(
            merge_min(&[&unset], true),
            AggValue::Min {
                value: None,
                signed: true
            }
        );
    }

    #[test]
    fn unsigned_compare() {
        let (big, small) = (slot(-1, 1), slot(7, 1));
        assert_eq!(
            merge_max(&[&big, &small], false),
            AggValue::Max {
                value: Some(-1),
                signed: false
            }
        );
        assert_eq!(
            merge_min(&[&big, &small], false),
            AggValue::Min {
                value: Some(7),
                signed: false
            }
        );
    }
}
