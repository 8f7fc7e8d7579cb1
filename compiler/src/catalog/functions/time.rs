//! Time formatting: `strftime`.

use super::args::Args;
use super::function;
use sonde_lang::types::Type;

function!(
    /// `strftime(fmt, nsecs)`: a timestamp formatted in user space (`%f` = microseconds).
    Strftime, "strftime", "strftime(fmt, nsecs)",
    "A boot-time timestamp in nanoseconds, formatted as wall-clock time with a strftime format (for %s)",
    unsafe = false,
    |call| {
        let a = Args::new(call, "strftime(fmt, nsecs)");
        a.arity(2, 2)?;
        a.literal(0, "a strftime format string literal")?;
        a.int(1, "an integer timestamp in nanoseconds")?;
        Ok(Type::Timestamp)
    },
    lower |cx, call| {
        let format = crate::lower::events::literal_text(&call.args[0], cx.positional);
        let tag = cx.event_id(crate::program::EventSpec::Time { format });
        let ns = cx.lower_int(&call.args[1])?;
        let buf = cx.alloc(16);
        cx.store(buf, 0, crate::ir::Operand::Imm(tag as i64), crate::ir::Width::W64);
        cx.store(buf, 8, crate::ir::Operand::Reg(ns), crate::ir::Width::W64);
        Ok(crate::lower::Val::Mem { ptr: buf, size: 16 })
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::functions::args::ARG_TYPE;
    use crate::catalog::functions::testutil::{arg_span, check, lit, val};

    #[test]
    fn strftime_rule() {
        assert_eq!(
            check(&Strftime, vec![lit("%H:%M"), val(Type::U64)]).unwrap(),
            Type::Timestamp
        );
        let e = check(&Strftime, vec![lit("%H"), lit("x")]).unwrap_err();
        assert_eq!((e.code, e.span), (ARG_TYPE, arg_span(1)));
    }
}
