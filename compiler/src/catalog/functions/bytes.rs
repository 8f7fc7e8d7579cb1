//! Byte and string searches: `strstr`, `memcmp` and `assert_str`.

use super::args::Args;
use super::function;
use super::string::MAX_CONTAINS_PAIRS;
use crate::ir::{AluOp, Cond, Inst, Operand, VReg, Width};
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

/// The index of the first occurrence of NUL-terminated `needle` in NUL-terminated `hay`
/// (both in owned memory of `hs` and `ns` bytes), or -1. Fully unrolled: |hay| × |needle|
/// compares.
fn find(cx: &mut LowerCx<'_>, h: VReg, hs: u32, n: VReg, ns: u32) -> VReg {
    let out = cx.imm(-1);
    let done = cx.label();
    for i in 0..hs as i32 {
        let next = cx.label();
        let found = cx.label();
        for j in 0..ns as i32 {
            let c2 = cx.load(n, j, Width::W8);
            cx.branch(Cond::Eq, c2, Operand::Imm(0), found);
            if i + j >= hs as i32 {
                cx.emit(Inst::Jump(next));
                break;
            }
            let c1 = cx.load(h, i + j, Width::W8);
            cx.branch(Cond::Ne, c1, Operand::Reg(c2), next);
        }
        cx.place_label(found);
        cx.emit(Inst::Mov {
            dst: out,
            src: Operand::Imm(i64::from(i)),
        });
        cx.emit(Inst::Jump(done));
        cx.place_label(next);
        let c = cx.load(h, i, Width::W8);
        cx.branch(Cond::Eq, c, Operand::Imm(0), done);
    }
    cx.place_label(done);
    out
}

function!(
    /// `strstr(haystack, needle)`: the index of `needle` in `haystack`, or -1.
    Strstr, "strstr", "strstr(haystack, needle)",
    "Index of the first occurrence of the second string in the first, or -1",
    unsafe = false,
    |call| {
        let a = Args::new(call, "strstr(haystack, needle)");
        a.arity(2, 2)?;
        let hay = a.string(0)?;
        let needle = a.string(1)?;
        let pairs = u64::from(hay) * u64::from(needle);
        if pairs > MAX_CONTAINS_PAIRS {
            return Err(Diagnostic::error(sonde_lang::limits::TOO_LARGE, call.span, "`strstr()` on strings this large is too large")
                .with_label(format!("strings of {hay} and {needle} bytes: {pairs} byte compares, the limit is {MAX_CONTAINS_PAIRS}"))
                .with_help("the search is unrolled into one compare per byte pair; shorten the strings, e.g. `str(p, 256)` (docs/reference.md, Limits)"));
        }
        Ok(Type::I64)
    },
    lower |cx, call| {
        let hay = cx.lower_value(&call.args[0])?;
        let needle = cx.lower_value(&call.args[1])?;
        let (Val::Mem { ptr: h, size: hs }, Val::Mem { ptr: n, size: ns }) = (hay, needle) else {
            return Err(cx.unsupported(call.span, "`strstr()` of these values"));
        };
        Ok(Val::Int(find(cx, h, hs, n, ns)))
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
        let out = cx.imm(0);
        let done = cx.label();
        for i in 0..n as i32 {
            let x = cx.load(l, i, Width::W8);
            let y = cx.load(r, i, Width::W8);
            let same = cx.label();
            cx.branch(Cond::Eq, x, Operand::Reg(y), same);
            // C's `char` is signed on x86-64: compare as signed bytes.
            let sx = cx.sign_extend(x, 8);
            let sy = cx.sign_extend(y, 8);
            let d = cx.alu(AluOp::Sub, sx, Operand::Reg(sy));
            cx.emit(Inst::Mov { dst: out, src: Operand::Reg(d) });
            cx.emit(Inst::Jump(done));
            cx.place_label(same);
        }
        cx.place_label(done);
        Ok(Val::Int(out))
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
        let big = val(Type::Str { size: 1024 });
        let e = check(&Strstr, vec![big, val(Type::Str { size: 1024 })]).unwrap_err();
        assert_eq!(e.code, sonde_lang::limits::TOO_LARGE);
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
