//! `sum(n)`: the total of the values. Per CPU: one `i64` (`u64` for unsigned values).

use super::{check_call, int_arg, sum_u64};
use crate::catalog::FunctionBackend;
use crate::ir::Operand;
use crate::lower::cx::{LowerCall, LowerCx, Val};
use crate::lower::maps::{add_to, agg_update};
use crate::value::AggValue;
use sonde_lang::catalog::{CallCheck, Function};
use sonde_lang::diag::Diagnostic;
use sonde_lang::types::{AggKind, Type};

/// `sum(n)`.
pub struct Sum;

impl Function for Sum {
    fn name(&self) -> &'static str {
        "sum"
    }
    fn signature(&self) -> &'static str {
        "sum(n)"
    }
    fn doc(&self) -> &'static str {
        "Sums the integer n (wrapping on overflow, like bpftrace)."
    }
    fn check(&self, call: &CallCheck<'_>) -> Result<Type, Diagnostic> {
        check_call(call, self.signature(), 1..=1)?;
        let signed = int_arg(call, 0)?;
        Ok(Type::Agg(AggKind::Sum { signed }))
    }
}

impl FunctionBackend for Sum {
    fn lower(&self, cx: &mut LowerCx<'_>, call: &LowerCall<'_>) -> Result<Val, Diagnostic> {
        let v = cx.lower_int(&call.args[0])?;
        agg_update(cx, call, &mut |cx, p, _| add_to(cx, p, 0, Operand::Reg(v)))
    }
}

/// Adds the per-CPU totals (wrapping).
pub(super) fn merge(per_cpu: &[&[u8]], signed: bool) -> AggValue {
    AggValue::Sum {
        value: sum_u64(per_cpu, 0) as i64,
        signed,
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{Arg, check};
    use super::*;
    use sonde_lang::catalog::CallPosition;

    #[test]
    fn type_rule() {
        let t = check(&Sum, &[Arg::Of(Type::U32)], CallPosition::MapAssign);
        assert_eq!(t, Ok(Type::Agg(AggKind::Sum { signed: false })));
        let t = check(&Sum, &[Arg::Lit(-3)], CallPosition::MapAssign);
        assert_eq!(t, Ok(Type::Agg(AggKind::Sum { signed: true })));
        let e = check(
            &Sum,
            &[Arg::Of(Type::Str { size: 16 })],
            CallPosition::MapAssign,
        );
        let e = e.unwrap_err();
        assert_eq!((e.code, e.span.start), ("sonde::sema::agg_arg_type", 10));
        assert_eq!(
            check(&Sum, &[], CallPosition::MapAssign).unwrap_err().code,
            "sonde::sema::arity"
        );
        let e = check(&Sum, &[Arg::Lit(1)], CallPosition::Statement).unwrap_err();
        assert_eq!(e.code, "sonde::sema::agg_position");
    }

    #[test]
    fn merges_signed_and_unsigned() {
        let a = (-5i64).to_le_bytes();
        let b = 3i64.to_le_bytes();
        assert_eq!(
            merge(&[&a, &b], true),
            AggValue::Sum {
                value: -2,
                signed: true
            }
        );
        assert_eq!(merge(&[&a, &b], true).scalar().unwrap().to_string(), "-2");
        let m = u64::MAX.to_le_bytes();
        let two = 2u64.to_le_bytes();
        // bpftrace 0.17 printed `@u: 1` for sum((uint64)-1) + sum(2).
        assert_eq!(merge(&[&m, &two], false).scalar().unwrap().to_string(), "1");
    }
}
