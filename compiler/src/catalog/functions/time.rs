//! Time functions: `strftime` (formatting) and `delta(KEY)` (time since a probe last fired
//! for a key; the clocks are `builtins::delta`'s).

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
        Ok(crate::lower::cx::Val::Mem { ptr: buf, size: 16 })
    }
);

function!(
    /// `delta(key)`: nanoseconds since this probe last fired for `key` (0 the first time).
    DeltaOf, "delta", "delta(key)",
    "Nanoseconds since this probe last fired for key (any map key value); 0 the first time, which an aggregation reading it skips (sonde extension)",
    unsafe = false,
    |call| {
        let a = Args::new(call, "delta(key)");
        a.arity(1, 1)?;
        let usable = !matches!(a.ty(0), Type::Void | Type::Agg(_))
            && call.map_args.first().is_none_or(Option::is_none);
        if !usable {
            return Err(a.error(0, "a value usable as a map key")
                .with_help("the signature is `delta(key)`; for several values, pass a tuple: `delta((a, b))`"));
        }
        Ok(Type::U64)
    },
    lower |cx, call| {
        crate::catalog::builtins::delta::lower_keyed(cx, &call.args[0])
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::functions::args::ARG_TYPE;
    use crate::catalog::functions::testutil::{arg_span, check, check_in, int, lit, map, val};
    use sonde_lang::catalog::ProbeContext;
    use sonde_lang::types::AggKind;

    #[test]
    fn strftime_rule() {
        assert_eq!(
            check(&Strftime, vec![lit("%H:%M"), val(Type::U64)]).unwrap(),
            Type::Timestamp
        );
        let e = check(&Strftime, vec![lit("%H"), lit("x")]).unwrap_err();
        assert_eq!((e.code, e.span), (ARG_TYPE, arg_span(1)));
    }

    #[test]
    fn delta_takes_one_key_in_every_probe_type() {
        let keys = [
            int(3),
            lit("k"),
            val(Type::Str { size: 64 }),
            val(Type::Tuple(vec![Type::U32, Type::Str { size: 16 }])),
            val(Type::Bool),
        ];
        for provider in ["tracepoint", "input", "BEGIN"] {
            let ctx = ProbeContext::bare(provider);
            for k in keys.clone() {
                assert_eq!(check_in(&DeltaOf, &ctx, vec![k]).unwrap(), Type::U64);
            }
        }
        let e = check(&DeltaOf, vec![map("m", 0)]).unwrap_err();
        assert_eq!((e.code, e.span), (ARG_TYPE, arg_span(0)));
        let e = check(&DeltaOf, vec![val(Type::Agg(AggKind::Count))]).unwrap_err();
        assert!(e.help.unwrap().contains("tuple"));
        assert_eq!(
            check(&DeltaOf, vec![int(1), int(2)]).unwrap_err().code,
            "sonde::sema::arity"
        );
    }
}
