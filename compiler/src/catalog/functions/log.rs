//! Messages about the script itself: `errorf` and `warnf` (printf-like, on stderr with the
//! place of the call, as bpftrace 0.26 prints them), `assert` (an `errorf` and `exit(1)` when
//! its condition is false), and the compile-time `fail` and `static_assert`.

use super::args::Args;
use super::function;
use super::print::format_call;
use crate::ir::{Cond, Operand};
use crate::lower::cx::{LowerCall, LowerCx, Val};
use crate::lower::events::{exit, literal_text, payload_types, send};
use crate::program::EventSpec;
use sonde_lang::ast::ExprKind;
use sonde_lang::catalog::CallCheck;
use sonde_lang::diag::Diagnostic;
use sonde_lang::types::Type;

/// Code of a `fail(...)` or a false `static_assert(...)` the checker reached.
pub const FAIL: &str = "sonde::sema::fail";

/// Sends the `errorf`/`warnf` event of `call`.
fn lower_log(cx: &mut LowerCx<'_>, call: &LowerCall<'_>, error: bool) -> Result<Val, Diagnostic> {
    let format = literal_text(&call.args[0], cx.positional);
    let rest = &call.args[1..];
    let types = payload_types(cx, rest);
    let spec = EventSpec::Log {
        error,
        format,
        args: types.clone(),
        span: call.span,
    };
    send(cx, spec, rest, &types)
}

/// The text of compile-time argument `i` (a literal or positional parameter).
fn literal_arg(call: &CallCheck<'_>, i: usize) -> Option<String> {
    if let Some(b) = call.const_str(i) {
        return Some(String::from_utf8_lossy(&b).into_owned());
    }
    if let Some(ExprKind::Bool(b)) = call.args.get(i).map(|e| &e.kind) {
        return Some(b.to_string());
    }
    call.const_int(i).map(|v| v.to_string())
}

/// `fmt` with each conversion replaced by the text of the next literal argument.
fn format_literals(fmt: &str, values: &[String]) -> String {
    let mut out = String::new();
    let mut next = values.iter();
    let mut chars = fmt.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            out.push('%');
            continue;
        }
        // Flags, width, precision and length modifiers, then the conversion letter.
        while let Some(&d) = chars.peek() {
            chars.next();
            if d.is_ascii_alphabetic() && !matches!(d, 'h' | 'l' | 'j' | 'z' | 't' | 'L') {
                break;
            }
        }
        out.push_str(next.next().map_or("", String::as_str));
    }
    out
}

/// The value of a compile-time condition: `true`/`false`, a constant integer, comparisons
/// of constant integers, `!`, `&&` and `||` over them.
fn const_bool(e: &sonde_lang::ast::Expr, positional: &[String]) -> Option<bool> {
    use sonde_lang::ast::{BinOp, UnOp};
    match &e.kind {
        ExprKind::Bool(b) => Some(*b),
        ExprKind::Unary {
            op: UnOp::Not,
            expr,
        } => const_bool(expr, positional).map(|b| !b),
        ExprKind::Binary {
            op: BinOp::And,
            lhs,
            rhs,
        } => Some(const_bool(lhs, positional)? && const_bool(rhs, positional)?),
        ExprKind::Binary {
            op: BinOp::Or,
            lhs,
            rhs,
        } => Some(const_bool(lhs, positional)? || const_bool(rhs, positional)?),
        ExprKind::Binary { op, lhs, rhs }
            if matches!(
                op,
                BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
            ) =>
        {
            let (a, b) = (
                sonde_lang::catalog::const_int(lhs, positional)?,
                sonde_lang::catalog::const_int(rhs, positional)?,
            );
            Some(match op {
                BinOp::Eq => a == b,
                BinOp::Ne => a != b,
                BinOp::Lt => a < b,
                BinOp::Le => a <= b,
                BinOp::Gt => a > b,
                _ => a >= b,
            })
        }
        _ => sonde_lang::catalog::const_int(e, positional).map(|v| v != 0),
    }
}

/// The `fail` diagnostic with message `msg`.
fn fail(call: &CallCheck<'_>, msg: String) -> Diagnostic {
    Diagnostic::error(FAIL, call.span, msg)
        .with_label("reached when the program was built")
        .with_help("`fail` and `static_assert` stop the build wherever the checker reaches them")
}

function!(
    /// `errorf(fmt, args...)`: an error message with the place of the call.
    Errorf, "errorf", "errorf(fmt, args...)",
    "Prints a formatted error message on stderr with the place of the call (FILE:LINE:COL-END: ERROR: ...)",
    unsafe = false,
    |call| { format_call(&Args::new(call, "errorf(fmt, args...)")) },
    lower |cx, call| { lower_log(cx, call, true) }
);

function!(
    /// `warnf(fmt, args...)`: a warning with the place of the call.
    Warnf, "warnf", "warnf(fmt, args...)",
    "Prints a formatted warning on stderr with the place of the call (silenced by --no-warnings)",
    unsafe = false,
    |call| { format_call(&Args::new(call, "warnf(fmt, args...)")) },
    lower |cx, call| { lower_log(cx, call, false) }
);

function!(
    /// `fail(fmt, args...)`: stops the build with a message (literal arguments only).
    Fail, "fail", "fail(fmt, args...)",
    "Stops the build with a formatted error message wherever the checker reaches it (literal arguments only)",
    unsafe = false,
    |call| {
        let a = Args::new(call, "fail(fmt, args...)");
        a.arity(1, usize::MAX)?;
        let fmt = a.literal_text(0, "a format string literal")?;
        let mut values = Vec::new();
        for i in 1..a.len() {
            values.push(literal_arg(call, i).ok_or_else(|| a.error(i, "a literal (fail's arguments are evaluated when the program is built)"))?);
        }
        Err(fail(call, format_literals(&fmt, &values)))
    }
);

function!(
    /// `static_assert(cond, msg)`: stops the build when a constant condition is false.
    StaticAssert, "static_assert", "static_assert(cond, msg)",
    "Stops the build with msg when the constant condition is false",
    unsafe = false,
    |call| {
        let a = Args::new(call, "static_assert(cond, msg)");
        a.arity(2, 2)?;
        let msg = a.literal_text(1, "a message string literal")?;
        let holds = const_bool(&call.args[0], call.positional).ok_or_else(|| a.error(0, "a constant condition"))?;
        if holds { Ok(Type::Void) } else { Err(fail(call, msg)) }
    },
    lower |_cx, _call| { Ok(Val::None) }
);

function!(
    /// `assert(cond, msg)`: when `cond` is false, `errorf("assert failed: %s", msg)` and `exit(1)`.
    Assert, "assert", "assert(cond, msg)",
    "When cond is false: prints \"assert failed: msg\" as errorf does and exits with code 1",
    unsafe = false,
    |call| {
        let a = Args::new(call, "assert(cond, msg)");
        a.arity(2, 2)?;
        match a.ty(0) {
            Type::Bool | Type::Int { .. } | Type::Ptr { .. } => {}
            _ => return Err(a.error(0, "a condition (bool, integer or pointer)")),
        }
        a.string(1)?;
        Ok(Type::Void)
    },
    lower |cx, call| {
        let cond = cx.lower_int(&call.args[0])?;
        let ok = cx.label();
        cx.branch(Cond::Ne, cond, Operand::Imm(0), ok);
        let msg = &call.args[1..];
        let types = payload_types(cx, msg);
        let spec = EventSpec::Log { error: true, format: "assert failed: %s".into(), args: types.clone(), span: call.span };
        send(cx, spec, msg, &types)?;
        let one = cx.imm(1);
        exit(cx, Some(one));
        cx.place_label(ok);
        Ok(Val::None)
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::functions::testutil::{check, int, lit, val};

    #[test]
    fn rules() {
        assert_eq!(
            check(&Errorf, vec![lit("x %d"), val(Type::U64)]).unwrap(),
            Type::Void
        );
        assert!(check(&Warnf, vec![lit("x %d")]).is_err());
        let e = check(&Fail, vec![lit("want %d, got %s"), int(2), lit("one")]).unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (FAIL, "want 2, got one"));
        assert!(check(&Fail, vec![lit("%d"), val(Type::U64)]).is_err());
        assert_eq!(
            check(&StaticAssert, vec![int(1), lit("m")]).unwrap(),
            Type::Void
        );
        assert_eq!(
            check(&StaticAssert, vec![int(0), lit("m")])
                .unwrap_err()
                .message,
            "m"
        );
        assert_eq!(
            check(&Assert, vec![val(Type::Bool), lit("m")]).unwrap(),
            Type::Void
        );
    }

    #[test]
    fn literal_formats() {
        assert_eq!(
            format_literals("a %-5lld b %s %%", &["1".into(), "x".into()]),
            "a 1 b x %"
        );
    }
}
