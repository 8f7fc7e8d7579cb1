//! `stats(n)`: count, average and total of the values. Per CPU: `{ count: u64, sum: i64 }`.

use super::{check_call, int_arg, sum_u64};
use crate::catalog::FunctionBackend;
use crate::ir::Operand;
use crate::lower::cx::{LowerCall, LowerCx, Val};
use crate::lower::maps::{add_to, agg_update};
use crate::value::AggValue;
use sonde_lang::catalog::{CallCheck, Function};
use sonde_lang::diag::Diagnostic;
use sonde_lang::types::{AggKind, Type};

/// `stats(n)`.
pub struct Stats;

impl Function for Stats {
    fn name(&self) -> &'static str {
        "stats"
    }
    fn signature(&self) -> &'static str {
        "stats(n)"
    }
    fn doc(&self) -> &'static str {
        "Keeps the count, average and total of the integer n."
    }
    fn check(&self, call: &CallCheck<'_>) -> Result<Type, Diagnostic> {
        check_call(call, self.signature(), 1..=1)?;
        let signed = int_arg(call, 0)?;
        Ok(Type::Agg(AggKind::Stats { signed }))
    }
}

impl FunctionBackend for Stats {
    fn lower(&self, cx: &mut LowerCx<'_>, call: &LowerCall<'_>) -> Result<Val, Diagnostic> {
        let v = cx.lower_int(&call.args[0])?;
        agg_update(cx, call, &mut |cx, p, _| {
            add_to(cx, p, 0, Operand::Imm(1));
            add_to(cx, p, 8, Operand::Reg(v));
        })
    }
}

/// Adds the per-CPU counts and sums.
pub(super) fn merge(per_cpu: &[&[u8]], signed: bool) -> AggValue {
    AggValue::Stats {
        count: sum_u64(per_cpu, 0),
        sum: sum_u64(per_cpu, 8) as i64,
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
        let t = check(&Stats, &[Arg::Of(Type::U64)], CallPosition::MapAssign);
        assert_eq!(t, Ok(Type::Agg(AggKind::Stats { signed: false })));
        let e = check(&Stats, &[Arg::Lit(1), Arg::Lit(2)], CallPosition::MapAssign);
        assert_eq!(e.unwrap_err().code, "sonde::sema::arity");
    }

    #[test]
    fn merges_counts_and_sums() {
        let a = [2u64.to_le_bytes(), 3i64.to_le_bytes()].concat();
        let b = [1u64.to_le_bytes(), 4i64.to_le_bytes()].concat();
        let v = merge(&[&a, &b], true);
        assert_eq!(
            v,
            AggValue::Stats {
                count: 3,
                sum: 7,
                signed: true
            }
        );
        // Printed `@s: { .count = 3, .average = 2, .total = 7 }` (bpftrace 0.17: `count 3, ...`).
        assert_eq!(v.scalar().unwrap().to_string(), "2");
    }
}
