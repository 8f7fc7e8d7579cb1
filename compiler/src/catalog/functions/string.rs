//! String functions: `str`, `buf`, `strncmp`, `strcontains` and `strlen` (`strstr` and
//! `memcmp` are in `bytes`).

use super::args::Args;
use super::function;
use sonde_lang::diag::Diagnostic;
use sonde_lang::types::Type;

/// The constant length argument `i`, if any: positive, else a diagnostic.
fn const_len(a: &Args<'_, '_>, i: usize) -> Result<Option<u32>, Diagnostic> {
    if a.len() <= i {
        return Ok(None);
    }
    a.int(i, "an integer length")?;
    match a.call.const_int(i) {
        None => Ok(None),
        Some(n) if n <= 0 => Err(a.error(i, "a positive length")),
        Some(n) => Ok(Some(u32::try_from(n).unwrap_or(u32::MAX))),
    }
}

/// The text bpftrace 0.27 folds `str()` of a constant into: of an integer literal
/// (`str(42)` is `"42"`, `str(-1)` is `"-1"`), of a positional parameter, a number or not
/// (`str($1)` of `0x10` is `"0x10"`, as written), of a parameter plus an integer (`str($1 + 2)`
/// is its text from the third character, as bpftrace reads the parameter as a pointer to its
/// text) and of a folded string (`str("hello" + 1)`); `None` for any other argument.
fn folded_text(arg: Option<&sonde_lang::ast::Expr>, positional: &[String]) -> Option<String> {
    use sonde_lang::ast::{BinOp, ExprKind, UnOp};
    let param = |n: u32| {
        positional
            .get((n as usize).checked_sub(1)?)
            .cloned()
            .or(Some(String::new()))
    };
    let arg = arg?;
    match &arg.kind {
        ExprKind::Int(v) => Some(v.to_string()),
        ExprKind::Unary {
            op: UnOp::Neg,
            expr,
        } => match expr.kind {
            ExprKind::Int(v) => Some(format!("-{v}")),
            _ => None,
        },
        ExprKind::Positional(n) => param(*n),
        ExprKind::Binary {
            op: BinOp::Add,
            lhs,
            rhs,
        } if matches!(lhs.kind, ExprKind::Positional(_)) => {
            let ExprKind::Positional(n) = lhs.kind else {
                return None;
            };
            let k = usize::try_from(sonde_lang::catalog::const_int(rhs, positional)?).ok()?;
            Some(param(n)?.get(k..).unwrap_or_default().to_string())
        }
        _ => sonde_lang::catalog::const_string(arg, positional)
            .map(|b| String::from_utf8_lossy(&b).into_owned()),
    }
}

function!(
    /// `str(ptr[, len])`: reads a NUL-terminated string (user or kernel memory by address space).
    Str, "str", "str(ptr[, len])", "Reads a NUL-terminated string from memory (at most len bytes, its NUL included; else max_strlen, and a longer string is cut to max_strlen characters and prints followed by the `str_trunc_trailer` config, `..` by default, below a max_strlen of 1024); of an integer literal or a positional parameter, its text (`str(42)` is \"42\", `str(42, 1)` is \"4\", `str($1 + 2)` the parameter from its third character), as bpftrace 0.27 folds it", unsafe = false,
    |call| {
        let a = Args::new(call, "str(ptr[, len])");
        let max = call.max_strlen;
        a.arity(1, 2)?;
        // `str(42)`, `str($1)` of a number: its text, `str(42, n)` its first n characters.
        if let Some(text) = folded_text(call.args.first(), call.positional) {
            let len = u32::try_from(text.len()).unwrap_or(u32::MAX);
            let keep = const_len(&a, 1)?.map_or(len, |n| len.min(n));
            return Ok(Type::Str { size: keep.saturating_add(1) });
        }
        let base = match a.ty(0) {
            Type::Str { size } => *size,
            Type::Ptr { .. } => max,
            t if t.is_integer() => max,
            Type::Array { elem, len } if elem.size() == 1 => len.saturating_add(1),
            _ => return Err(a.error(0, "a pointer, an integer address or a string")),
        };
        // `str(p, n)` keeps n - 1 characters and the NUL (bpftrace 0.26; 0.17 kept n).
        let size = match const_len(&a, 1)? {
            Some(n) => base.min(n),
            None => base,
        };
        Ok(Type::Str { size })
    },
    lower |cx, call| {
        let size = call.ty.size();
        let arg_ty = cx.type_of(&call.args[0]);
        if let Some(text) = folded_text(call.args.first(), cx.positional) {
            let keep = text.len().min(size.saturating_sub(1) as usize);
            return Ok(crate::lower::strings::literal(cx, &text.as_bytes()[..keep], size));
        }
        match &arg_ty {
            Type::Str { .. } => cx.lower_value(&call.args[0]),
            Type::Array { .. } => {
                let v = cx.lower_expr(&call.args[0])?;
                let buf = cx.alloc_zeroed(size);
                cx.read_place_into(v, buf, 0, size.saturating_sub(1).min(arg_ty.size()));
                Ok(crate::lower::cx::Val::Mem { ptr: buf, size })
            }
            _ => {
                let space = match &arg_ty {
                    Type::Ptr { space, .. } => crate::lower::cx::PlaceSpace::of_pointer(*space, cx.attach.ctx.user),
                    _ if cx.attach.ctx.user => crate::lower::cx::PlaceSpace::User,
                    _ => crate::lower::cx::PlaceSpace::Any,
                };
                let p = cx.lower_int(&call.args[0])?;
                // A length known only at run time bounds the read there.
                let len = match call.args.get(1) {
                    Some(l) if sonde_lang::catalog::const_int(l, cx.positional).is_none() => {
                        Some(cx.lower_int(l)?)
                    }
                    _ => None,
                };
                // Straight into an event's field when it is one (one byte more for the cut
                // mark below).
                let into = cx.take_place(call.span, size + 1);
                // A string of `max_strlen` bytes may be cut: read so that it shows.
                if size == cx.max_strlen {
                    return Ok(crate::lower::strings::read_str_marking_cut(cx, p, space, size, len, into));
                }
                Ok(crate::lower::strings::read_str_upto(cx, p, space, size, len, into))
            }
        }
    }
);

function!(
    /// `buf(ptr, len)` / `buf(array)`: reads raw bytes, printed with `%r`.
    Buf, "buf", "buf(ptr, len) | buf(array[, len])", "Reads len raw bytes (printed as escaped hex with %r)",
    unsafe = false,
    |call| {
        let a = Args::new(call, "buf(ptr, len) | buf(array[, len])");
        let max = call.max_strlen;
        a.arity(1, 2)?;
        let natural = match a.ty(0) {
            Type::Array { elem, len } => Some(elem.size().saturating_mul(*len)),
            Type::Str { size } => Some(*size),
            Type::Ptr { .. } => None,
            t if t.is_integer() => None,
            _ => return Err(a.error(0, "a pointer, an integer address or an array")),
        };
        if natural.is_none() && a.len() < 2 {
            return Err(call.arity_error("buf(ptr, len)"));
        }
        let size = match (const_len(&a, 1)?, natural) {
            (Some(n), Some(m)) => n.min(m),
            (Some(n), None) => n.min(max),
            (None, Some(m)) if a.len() < 2 => m,
            (None, Some(m)) => m.min(max),
            (None, None) => max,
        };
        // The value is one length byte followed by the data (see `value.rs`).
        Ok(Type::Buf { size: size.saturating_add(1) })
    },
    lower |cx, call| {
        use crate::ir::{AluOp, Cond, Inst, Operand, Width};
        use crate::lower::cx::{PlaceSpace, Val};
        let size = call.ty.size();
        let cap = size.saturating_sub(1);
        let buf = cx.alloc_zeroed(size);
        let arg_ty = cx.type_of(&call.args[0]);
        let const_len = call
            .args
            .get(1)
            .and_then(|e| sonde_lang::catalog::const_int(e, cx.positional))
            .map(|n| u32::try_from(n.max(0)).unwrap_or(u32::MAX).min(cap));
        if matches!(arg_ty, Type::Array { .. } | Type::Str { .. }) {
            let n = const_len.unwrap_or(cap).min(arg_ty.size());
            let v = cx.lower_expr(&call.args[0])?;
            cx.read_place_into(v, buf, 1, n);
            cx.store(buf, 0, Operand::Imm(n.into()), Width::W8);
            return Ok(Val::Mem { ptr: buf, size });
        }
        let space = match &arg_ty {
            Type::Ptr { space, .. } => PlaceSpace::of_pointer(*space, cx.attach.ctx.user),
            _ if cx.attach.ctx.user => PlaceSpace::User,
            _ => PlaceSpace::Any,
        };
        let func = match space {
            PlaceSpace::User => crate::ir::Intrinsic::ProbeReadUser,
            PlaceSpace::Any => crate::ir::Intrinsic::ProbeRead,
            _ => crate::ir::Intrinsic::ProbeReadKernel,
        };
        let src = cx.lower_int(&call.args[0])?;
        let len = match const_len {
            Some(n) => Operand::Imm(n.into()),
            None => {
                // A run-time length is clamped to the buffer's capacity for the verifier.
                let raw = cx.lower_int(&call.args[1])?;
                let len = cx.alu(AluOp::And, raw, Operand::Imm(0xffff_ffff));
                let fits = cx.label();
                cx.branch(Cond::ULe, len, Operand::Imm(cap.into()), fits);
                cx.emit(Inst::Mov { dst: len, src: Operand::Imm(cap.into()) });
                cx.place_label(fits);
                Operand::Reg(len)
            }
        };
        let dst = cx.alu(AluOp::Add, buf, Operand::Imm(1));
        cx.probe_read(func, vec![Operand::Reg(dst), len, Operand::Reg(src)]);
        cx.store(buf, 0, len, Width::W8);
        Ok(Val::Mem { ptr: buf, size })
    }
);

function!(
    /// `strncmp(a, b, n)`: compares at most `n` bytes of two strings (0 when equal).
    Strncmp, "strncmp", "strncmp(a, b, n)", "Compares the first n bytes of two strings: 0 when equal, 1 otherwise",
    unsafe = false,
    |call| {
        let a = Args::new(call, "strncmp(a, b, n)");
        a.arity(3, 3)?;
        a.string(0)?;
        a.string(1)?;
        if a.const_int(2, "a constant length")? < 0 {
            return Err(a.error(2, "a length of 0 or more"));
        }
        Ok(Type::I64)
    },
    lower |cx, call| {
        let a = cx.lower_value(&call.args[0])?;
        let b = cx.lower_value(&call.args[1])?;
        let n = sonde_lang::catalog::const_int(&call.args[2], cx.positional).unwrap_or(0).max(0) as u32;
        let eq = crate::lower::strings::equal_n(cx, a, b, n);
        // strncmp() is 0 when equal.
        Ok(crate::lower::cx::Val::Int(cx.alu(crate::ir::AluOp::Xor, eq, crate::ir::Operand::Imm(1))))
    }
);

function!(
    /// `strcontains(haystack, needle)`: whether `needle` occurs in `haystack`.
    Strcontains, "strcontains", "strcontains(haystack, needle)", "True when the second string occurs in the first",
    unsafe = false,
    |call| {
        let a = Args::new(call, "strcontains(haystack, needle)");
        a.arity(2, 2)?;
        a.string(0)?;
        a.string(1)?;
        Ok(Type::Bool)
    },
    lower |cx, call| {
        let hay = cx.lower_value(&call.args[0])?;
        let needle = cx.lower_value(&call.args[1])?;
        Ok(crate::lower::cx::Val::Int(crate::lower::strings::contains(cx, hay, needle)))
    }
);

function!(
    /// `strlen(s)`: the length of a string up to its NUL.
    Strlen, "strlen", "strlen(s)", "Length of a string, an array of bytes or the string an `int8 *` points to (read up to max_strlen), up to its terminating NUL", unsafe = false,
    |call| {
        let a = Args::new(call, "strlen(s)");
        a.arity(1, 1)?;
        match a.ty(0) {
            Type::Str { .. } => {}
            Type::Array { elem, .. } if elem.size() == 1 => {}
            Type::Ptr { pointee, .. } if pointee.size() == 1 => {}
            _ => return Err(a.error(0, "a string, an array of bytes or an `int8 *`")),
        }
        Ok(Type::U64)
    },
    lower |cx, call| {
        // A pointer: the string it points to, read as `str()` reads it.
        let value = match cx.type_of(&call.args[0]) {
            Type::Ptr { space, .. } => {
                let space = crate::lower::cx::PlaceSpace::of_pointer(space, cx.attach.ctx.user);
                let p = cx.lower_int(&call.args[0])?;
                let size = cx.max_strlen;
                crate::lower::strings::read_str(cx, p, space, size)
            }
            _ => cx.lower_value(&call.args[0])?,
        };
        let crate::lower::cx::Val::Mem { ptr, size } = value else {
            return Err(cx.unsupported(call.span, "`strlen()` of this value"));
        };
        // The index of the first NUL, else the buffer's size.
        let len = crate::lower::byte_loops::length(cx, ptr, size);
        Ok(crate::lower::cx::Val::Int(len))
    }
);

function!(
    /// `str_concat(s1, s2)` (bpftrace 0.27's stdlib): a new string of `s1` followed by `s2`.
    StrConcat, "str_concat", "str_concat(s1, s2)", "A new string: the first string followed by the second", unsafe = false,
    |call| {
        let a = Args::new(call, "str_concat(s1, s2)");
        a.arity(2, 2)?;
        let first = a.string(0)?;
        let second = a.string(1)?;
        let size = first.saturating_add(second);
        if size > sonde_lang::limits::MAX_VALUE_SIZE {
            return Err(Diagnostic::error(sonde_lang::limits::TOO_LARGE, call.span, "`str_concat()` of strings this large is too large")
                .with_label(format!("{first} + {second} bytes, the limit is {}", sonde_lang::limits::MAX_VALUE_SIZE))
                .with_help("shorten the strings, e.g. `str(p, 256)` (docs/reference.md, Limits)"));
        }
        Ok(Type::Str { size })
    },
    lower |cx, call| {
        use crate::ir::{Intrinsic, Operand};
        use crate::lower::cx::Val;
        let first = cx.lower_value(&call.args[0])?;
        let second = cx.lower_value(&call.args[1])?;
        let (Val::Mem { ptr: p1, size: n1 }, Val::Mem { ptr: p2, size: n2 }) = (first, second) else {
            return Err(cx.unsupported(call.span, "`str_concat()` of these values"));
        };
        // The first string whole, then the second from the first's NUL (a first string
        // without one keeps its bytes): room for both.
        let out = cx.alloc_zeroed(n1 + n2);
        cx.copy(out, 0, p1, 0, n1);
        let len = crate::lower::byte_loops::length(cx, p1, n1);
        let dst = cx.alu(crate::ir::AluOp::Add, out, Operand::Reg(len));
        cx.call(Intrinsic::MemCopy, vec![Operand::Reg(dst), Operand::Imm(n2.into()), Operand::Reg(p2)]);
        Ok(Val::Mem { ptr: out, size: n1 + n2 })
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::functions::args::ARG_TYPE;
    use crate::catalog::functions::testutil::{arg_span, check, int, lit, val};
    use sonde_lang::types::AddrSpace;

    fn ptr() -> Type {
        Type::Ptr {
            pointee: Box::new(Type::I32),
            space: AddrSpace::User,
        }
    }

    #[test]
    fn str_sizes() {
        assert_eq!(
            check(&Str, vec![val(ptr())]).unwrap(),
            Type::Str { size: 64 }
        );
        assert_eq!(
            check(&Str, vec![val(Type::U64), int(10)]).unwrap(),
            Type::Str { size: 10 }
        );
        assert_eq!(
            check(&Str, vec![val(ptr()), int(1000)]).unwrap(),
            Type::Str { size: 64 }
        );
        assert_eq!(
            check(&Str, vec![val(Type::Str { size: 16 })]).unwrap(),
            Type::Str { size: 16 }
        );
        assert_eq!(
            check(&Str, vec![val(ptr()), val(Type::U32)]).unwrap(),
            Type::Str { size: 64 }
        );
        let e = check(&Str, vec![val(ptr()), int(0)]).unwrap_err();
        assert_eq!((e.code, e.span), (ARG_TYPE, arg_span(1)));
        let e = check(&Str, vec![val(Type::Inet)]).unwrap_err();
        assert_eq!(e.label, "this is an inet");
        assert_eq!(
            e.help.as_deref(),
            Some("the signature is `str(ptr[, len])`")
        );
    }

    #[test]
    fn buf_sizes() {
        assert_eq!(
            check(&Buf, vec![val(ptr()), int(8)]).unwrap(),
            Type::Buf { size: 9 }
        );
        let arr = Type::Array {
            elem: Box::new(Type::U8),
            len: 16,
        };
        assert_eq!(
            check(&Buf, vec![val(arr.clone())]).unwrap(),
            Type::Buf { size: 17 }
        );
        assert_eq!(
            check(&Buf, vec![val(arr), int(4)]).unwrap(),
            Type::Buf { size: 5 }
        );
        assert_eq!(
            check(&Buf, vec![val(ptr())]).unwrap_err().code,
            "sonde::sema::arity"
        );
    }

    #[test]
    fn comparisons() {
        let s = || val(Type::Str { size: 16 });
        assert_eq!(
            check(&Strncmp, vec![s(), lit("bash"), int(4)]).unwrap(),
            Type::I64
        );
        let e = check(&Strncmp, vec![s(), s(), val(Type::U64)]).unwrap_err();
        assert_eq!((e.code, e.span), (ARG_TYPE, arg_span(2)));
        assert_eq!(
            check(&Strcontains, vec![s(), lit("sh")]).unwrap(),
            Type::Bool
        );
        let e = check(&Strcontains, vec![s(), int(1)]).unwrap_err();
        assert_eq!(e.message, "argument 2 of `strcontains` must be a string");
        assert_eq!(check(&Strlen, vec![s()]).unwrap(), Type::U64);
    }

    /// Sizes a script gives are bounded by `max_strlen` (64 here); `strcontains()` loops over
    /// large strings, of any size.
    #[test]
    fn sizes_are_bounded() {
        assert_eq!(
            check(&Str, vec![val(ptr()), int(4_294_967_295)]).unwrap(),
            Type::Str { size: 64 }
        );
        assert_eq!(
            check(&Buf, vec![val(ptr()), int(4_294_967_295)]).unwrap(),
            Type::Buf { size: 65 }
        );
        let big = |n| val(Type::Str { size: n });
        assert_eq!(
            check(&Strcontains, vec![big(256), big(512)]).unwrap(),
            Type::Bool
        );
        assert_eq!(
            check(&Strcontains, vec![big(1024), big(1024)]).unwrap(),
            Type::Bool
        );
    }
}
