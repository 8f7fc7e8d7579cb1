//! `count()`: the number of times the map assignment ran. Per CPU: one `u64`.

use super::{check_call, sum_u64};
use crate::catalog::FunctionBackend;
use crate::ir::Operand;
use crate::lower::cx::{LowerCall, LowerCx, Val};
use crate::lower::maps::{add_to, agg_update};
use crate::value::AggValue;
use sonde_lang::catalog::{CallCheck, Function};
use sonde_lang::diag::Diagnostic;
use sonde_lang::types::{AggKind, Type};

/// `count()`.
pub struct Count;

impl Function for Count {
    fn name(&self) -> &'static str {
        "count"
    }
    fn signature(&self) -> &'static str {
        "count()"
    }
    fn doc(&self) -> &'static str {
        "Counts how many times the assignment ran (per-CPU, merged when printed)."
    }
    fn check(&self, call: &CallCheck<'_>) -> Result<Type, Diagnostic> {
        check_call(call, self.signature(), 0..=0)?;
        Ok(Type::Agg(AggKind::Count))
    }
}

impl FunctionBackend for Count {
    fn lower(&self, cx: &mut LowerCx<'_>, call: &LowerCall<'_>) -> Result<Val, Diagnostic> {
        agg_update(cx, call, &mut |cx, p, _| add_to(cx, p, 0, Operand::Imm(1)))
    }
}

/// Adds the per-CPU counts.
pub(super) fn merge(per_cpu: &[&[u8]]) -> AggValue {
    AggValue::Count(sum_u64(per_cpu, 0))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{Arg, check};
    use super::*;
    use sonde_lang::catalog::CallPosition;

    #[test]
    fn type_rule() {
        assert_eq!(
            check(&Count, &[], CallPosition::MapAssign),
            Ok(Type::Agg(AggKind::Count))
        );
        let e = check(&Count, &[Arg::Lit(1)], CallPosition::MapAssign).unwrap_err();
        assert_eq!(e.code, "sonde::sema::arity");
        let e = check(&Count, &[], CallPosition::Value).unwrap_err();
        assert_eq!(e.code, "sonde::sema::agg_position");
    }

    #[test]
    fn merges_cpus() {
        let a = 3u64.to_le_bytes();
        let b = 4u64.to_le_bytes();
        assert_eq!(merge(&[&a, &b]), AggValue::Count(7));
        assert_eq!(merge(&[]), AggValue::Count(0));
    }
}
