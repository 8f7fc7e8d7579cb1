//! Byte and string searches: `strstr`, `memcmp` and `assert_str`.

use super::args::Args;
use super::function;
use crate::ir::{Operand, VReg, Width};
use crate::lower::cx::{LowerCx, Val};
use sonde_lang::diag::Diagnostic;
use sonde_lang::types::Type;

/// Whether `t` is string-like in bpftrace's sense: a string or an array of bytes.
fn is_string_like(t: &Type) -> bool {
    match t {
        Type::Str { .. } => true,
        Type::Array { elem, .. } => elem.size() == 1 && elem.is_integer(),
        _ => false,
    }
}

function!(
    /// `strstr(haystack, needle)`: the index of `needle` in `haystack`, or -1.
    Strstr, "strstr", "strstr(haystack, needle)",
    "Index of the first occurrence of the second string in the first, or -1",
    unsafe = false,
    |call| {
        let a = Args::new(call, "strstr(haystack, needle)");
        a.arity(2, 2)?;
        a.string(0)?;
        a.string(1)?;
        Ok(Type::I64)
    },
    lower |cx, call| {
        let hay = cx.lower_value(&call.args[0])?;
        let needle = cx.lower_value(&call.args[1])?;
        let (Val::Mem { ptr: h, size: hs }, Val::Mem { ptr: n, size: ns }) = (hay, needle) else {
            return Err(cx.unsupported(call.span, "`strstr()` of these values"));
        };
        Ok(Val::Int(crate::lower::byte_loops::find(cx, h, hs, n, ns)))
    }
);

/// The bytes of memcmp argument `i`: its value in owned memory (an integer is stored).
fn memory_of(cx: &mut LowerCx<'_>, e: &sonde_lang::ast::Expr) -> Result<VReg, Diagnostic> {
    let ty = cx.type_of(e);
    match cx.lower_value(e)? {
        Val::Mem { ptr, .. } => Ok(ptr),
        Val::Int(r) => {
            let ptr = cx.alloc(8);
            cx.store(ptr, 0, Operand::Reg(r), Width::W64);
            Ok(ptr)
        }
        _ => Err(cx.unsupported(
            e.span,
            &format!("`memcmp()` of {}", super::args::describe(&ty)),
        )),
    }
}

function!(
    /// `memcmp(left, right, count)`: compares the first `count` bytes of two values.
    Memcmp, "memcmp", "memcmp(left, right, count)",
    "Compares the first count bytes of two values: 0 when equal, else the difference of the first differing (signed) bytes",
    unsafe = false,
    |call| {
        let a = Args::new(call, "memcmp(left, right, count)");
        a.arity(3, 3)?;
        for i in 0..2 {
            match a.ty(i) {
                Type::Str { .. } | Type::Array { .. } | Type::Tuple(_) | Type::Record(_) => {}
                t if t.is_integer() => {}
                _ => return Err(a.error(i, "a string, array, tuple, struct or integer")),
            }
        }
        a.int(2, "an integer count")?;
        let n = a.const_int(2, "a constant count")?;
        let room = a.ty(0).size().min(a.ty(1).size());
        if n < 0 || n as u64 > u64::from(room) {
            return Err(a.error(2, &format!("a count between 0 and {room} (the size of the smaller value)")));
        }
        Ok(Type::I32)
    },
    lower |cx, call| {
        let l = memory_of(cx, &call.args[0])?;
        let r = memory_of(cx, &call.args[1])?;
        let n = sonde_lang::catalog::const_int(&call.args[2], cx.positional).unwrap_or(0).max(0);
        Ok(Val::Int(crate::lower::byte_loops::compare(cx, l, r, n as u32)))
    }
);

function!(
    /// `assert_str(exp)`: refuses, when the script is checked, a value that is not string-like.
    AssertStr, "assert_str", "assert_str(exp)",
    "Checks when the script is built that a value is string-like (a string or an array of bytes)",
    unsafe = false,
    |call| {
        let a = Args::new(call, "assert_str(exp)");
        a.arity(1, 1)?;
        if !is_string_like(a.ty(0)) {
            return Err(a.error(0, "a string-like value (a string or an array of bytes)"));
        }
        Ok(Type::Void)
    },
    lower |_cx, _call| { Ok(Val::None) }
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::functions::args::ARG_TYPE;
    use crate::catalog::functions::testutil::{check, int, lit, val};

    #[test]
    fn strstr_takes_two_strings() {
        assert_eq!(
            check(&Strstr, vec![lit("abc"), lit("b")]).unwrap(),
            Type::I64
        );
        let e = check(&Strstr, vec![lit("abc"), val(Type::U64)]).unwrap_err();
        assert_eq!(e.code, ARG_TYPE);
        // The search loops over large strings: any size is accepted.
        let big = || val(Type::Str { size: 1024 });
        assert_eq!(check(&Strstr, vec![big(), big()]).unwrap(), Type::I64);
    }

    #[test]
    fn memcmp_count_fits_the_smaller_value() {
        assert_eq!(
            check(&Memcmp, vec![lit("ab"), lit("ac"), int(2)]).unwrap(),
            Type::I32
        );
        let e = check(&Memcmp, vec![lit("ab"), lit("ac"), int(4)]).unwrap_err();
        assert_eq!(e.code, ARG_TYPE);
        let e = check(&Memcmp, vec![lit("ab"), lit("ac"), val(Type::U64)]).unwrap_err();
        assert_eq!(e.code, ARG_TYPE);
    }

    #[test]
    fn assert_str_accepts_string_likes_only() {
        assert_eq!(check(&AssertStr, vec![lit("a")]).unwrap(), Type::Void);
        let bytes = Type::Array {
            elem: Box::new(Type::U8),
            len: 4,
        };
        assert_eq!(check(&AssertStr, vec![val(bytes)]).unwrap(), Type::Void);
        let e = check(&AssertStr, vec![val(Type::U64)]).unwrap_err();
        assert_eq!(e.code, ARG_TYPE);
    }
}
