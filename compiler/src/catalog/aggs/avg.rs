//! `avg(n)`: the mean of the values, truncated towards zero.
//! Per CPU: `{ sum: i64, count: u64 }`.

use super::{check_call, int_arg, sum_u64};
use crate::catalog::FunctionBackend;
use crate::ir::Operand;
use crate::lower::cx::{LowerCall, LowerCx, Val};
use crate::lower::maps::{add_to, agg_update};
use crate::value::AggValue;
use sonde_lang::catalog::{CallCheck, Function};
use sonde_lang::diag::Diagnostic;
use sonde_lang::types::{AggKind, Type};

/// `avg(n)`.
pub struct Avg;

impl Function for Avg {
    fn name(&self) -> &'static str {
        "avg"
    }
    fn signature(&self) -> &'static str {
        "avg(n)"
    }
    fn doc(&self) -> &'static str {
        "Averages the integer n (integer division, truncated towards zero)."
    }
    fn check(&self, call: &CallCheck<'_>) -> Result<Type, Diagnostic> {
        check_call(call, self.signature(), 1..=1)?;
        let signed = int_arg(call, 0)?;
        Ok(Type::Agg(AggKind::Avg { signed }))
    }
}

impl FunctionBackend for Avg {
    fn lower(&self, cx: &mut LowerCx<'_>, call: &LowerCall<'_>) -> Result<Val, Diagnostic> {
        let v = cx.lower_int(&call.args[0])?;
        agg_update(cx, call, &mut |cx, p, _| {
            add_to(cx, p, 0, Operand::Reg(v));
            add_to(cx, p, 8, Operand::Imm(1));
        })
    }
}

/// Adds the per-CPU sums and counts.
pub(super) fn merge(per_cpu: &[&[u8]], signed: bool) -> AggValue {
    AggValue::Avg {
        sum: sum_u64(per_cpu, 0) as i64,
        count: sum_u64(per_cpu, 8),
        signed,
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{Arg, check};
    use super::*;
    use sonde_lang::catalog::CallPosition;

    fn slot(sum: i64, count: u64) -> Vec<u8> {
        [sum.to_le_bytes(), count.to_le_bytes()].concat()
    }

    #[test]
    fn type_rule() {
        let t = check(&Avg, &[Arg::Of(Type::I32)], CallPosition::MapAssign);
        assert_eq!(t, Ok(Type::Agg(AggKind::Avg { signed: true })));
        let e = check(
            &Avg,
            &[Arg::Of(Type::Str { size: 16 })],
            CallPosition::MapAssign,
        );
        assert_eq!(e.unwrap_err().code, "sonde::sema::agg_arg_type");
    }

    #[test]
    fn merges_and_truncates() {
        // bpftrace 0.17: avg(-1), avg(-2) prints `@a: -1`; avg(5), avg(6) prints `@b: 5`.
        let (a, b) = (slot(-1, 1), slot(-2, 1));
        let v = merge(&[&a, &b], true);
        assert_eq!(
            v,
            AggValue::Avg {
                sum: -3,
                count: 2,
                signed: true
            }
        );
        assert_eq!(v.scalar().unwrap().to_string(), "-1");
        let (a, b) = (slot(5, 1), slot(6, 1));
        assert_eq!(merge(&[&a, &b], true).scalar().unwrap().to_string(), "5");
        assert_eq!(merge(&[], true).scalar().unwrap().to_string(), "0");
    }
}
