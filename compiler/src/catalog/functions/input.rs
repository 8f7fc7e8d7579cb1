//! Functions of the userspace `input` and `replay` probes: `field(N)` (awk's `$N`) and
//! `num(STR[, SCALE])` (awk's string-to-number conversion, in integers).

use super::args::Args;
use super::function;
use crate::catalog::builtins::input::{has_record, no_record};
use sonde_lang::types::Type;

function!(
    /// `field(n)`: the n-th field of the current input line (1-based, split on runs of blanks
    /// or on `-F SEP`); an absent field is the empty string.
    Field, "field", "field(n)", "The n-th field (1-based) of the current input line; empty when absent (input and replay probes; sonde extension)",
    unsafe = false,
    |call| {
        let a = Args::new(call, "field(n)");
        if !has_record(call.ctx) {
            return Err(no_record("field", call.ctx, call.span));
        }
        a.arity(1, 1)?;
        a.int(0, "an integer field number")?;
        Ok(Type::Str { size: call.max_strlen })
    },
    lower |cx, call| {
        use crate::ir::{Inst, Intrinsic, Operand};
        let size = call.ty.size();
        let n = cx.lower_int(&call.args[0])?;
        let buf = cx.alloc(size);
        cx.emit(Inst::Call {
            dst: None,
            func: Intrinsic::InputField,
            args: vec![Operand::Reg(buf), Operand::Imm(size.into()), Operand::Reg(n)],
        });
        Ok(crate::lower::cx::Val::Mem { ptr: buf, size })
    }
);

function!(
    /// `num(str[, scale])`: the leading decimal number of a string (0 when there is none),
    /// times `scale` (default 1); the fraction beyond the scale is dropped.
    Num, "num", "num(str[, scale])", "The leading number of a string times scale (default 1; num(\"12.5\", 1000) is 12500), 0 if none (input and replay probes; sonde extension)",
    unsafe = false,
    |call| {
        let a = Args::new(call, "num(str[, scale])");
        if !has_record(call.ctx) {
            return Err(no_record("num", call.ctx, call.span));
        }
        a.arity(1, 2)?;
        a.string(0)?;
        if a.len() == 2 {
            a.int(1, "an integer scale")?;
        }
        Ok(Type::I64)
    },
    lower |cx, call| {
        use crate::ir::{Intrinsic, Operand};
        use crate::lower::cx::Val;
        use sonde_lang::ast::ExprKind;
        let scale = match call.args.get(1) {
            Some(e) => Operand::Reg(cx.lower_int(e)?),
            None => Operand::Imm(1),
        };
        // `num(field(N))` reads the field in place: no string copy, and no truncation of
        // fields longer than `max_strlen`.
        if let ExprKind::Call { name, args } = &call.args[0].kind
            && name.name == "field"
            && args.len() == 1
        {
            let n = cx.lower_int(&args[0])?;
            return Ok(Val::Int(cx.call(Intrinsic::InputFieldNum, vec![Operand::Reg(n), scale])));
        }
        let ty = cx.type_of(&call.args[0]);
        let v = cx.lower_value(&call.args[0])?;
        let (ptr, size) = match cx.materialize(v, &ty) {
            Val::Mem { ptr, size } => (ptr, size),
            _ => (cx.imm(0), 0),
        };
        let r = cx.call(
            Intrinsic::ParseNum,
            vec![Operand::Reg(ptr), Operand::Imm(size.into()), scale],
        );
        Ok(Val::Int(r))
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::functions::testutil::{check_in, int, lit, val};
    use sonde_lang::catalog::ProbeContext;

    #[test]
    fn field_and_num_type_rules() {
        let input = ProbeContext::bare("input");
        assert_eq!(
            check_in(&Field, &input, vec![int(2)]).unwrap(),
            Type::Str { size: 64 }
        );
        assert_eq!(check_in(&Num, &input, vec![lit("12")]).unwrap(), Type::I64);
        assert_eq!(
            check_in(&Num, &input, vec![val(Type::Str { size: 64 }), int(1000)]).unwrap(),
            Type::I64
        );
        assert!(check_in(&Num, &input, vec![int(3)]).is_err());
        assert!(check_in(&Field, &input, vec![lit("x")]).is_err());
        let kernel = ProbeContext::bare("tracepoint");
        assert!(check_in(&Field, &kernel, vec![int(1)]).is_err());
        assert!(check_in(&Num, &kernel, vec![lit("1")]).is_err());
    }
}
