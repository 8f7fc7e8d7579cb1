//! Output functions, run asynchronously in user space: `printf`, `print`, `time`, `cat`,
//! `system`, `join` and `exit`.

use super::args::{ARG_TYPE, Args, describe};
use super::function;
use sonde_lang::ast::{Expr, ExprKind};
use sonde_lang::diag::Diagnostic;
use sonde_lang::format::{Conv, FmtPiece, check_args, parse_format, spec_count};
use sonde_lang::types::Type;

/// Code of a malformed format string.
pub const FORMAT_STRING: &str = "sonde::sema::format_string";

/// Checks the format-string calls (`printf`, `cat`, `system`): a literal format whose
/// conversions match the types of the remaining arguments.
pub(crate) fn format_call(a: &Args<'_, '_>) -> Result<Type, Diagnostic> {
    a.arity(1, usize::MAX)?;
    let fmt = a.literal_text(0, "a format string literal")?;
    let pieces = parse_format(&fmt).map_err(|e| {
        Diagnostic::error(FORMAT_STRING, a.span(0), format!("invalid format string: {}", e.message))
            .with_label(format!("at byte {} of the format", e.offset))
            .with_help("conversions are `%[flags][width][.precision][length]d|i|u|x|X|o|c|s|p|r|rx|rh`; write `%%` for a percent sign")
    })?;
    let rest = &a.call.arg_types[1..];
    check_args(&pieces, rest).map_err(|(i, message)| {
        if spec_count(&pieces) != rest.len() {
            let span = if i < rest.len() {
                a.span(i + 1)
            } else {
                a.call.span
            };
            Diagnostic::error("sonde::sema::arity", span, message)
                .with_label(format!("{} argument(s) after the format", rest.len()))
                .with_help(format!(
                    "the format has {} conversion(s)",
                    spec_count(&pieces)
                ))
        } else {
            Diagnostic::error(ARG_TYPE, a.span(i + 1), message)
                .with_label(format!("this is {}", describe(&rest[i])))
                .with_help(conversion_help(a, &pieces, i))
        }
    })?;
    Ok(Type::Void)
}

/// The help of a format argument `i` (after the format) whose type does not fit its
/// conversion: for a pointer given to `%s`, how to read the string it points to (as
/// bpftrace's help says); otherwise the signature.
fn conversion_help(a: &Args<'_, '_>, pieces: &[FmtPiece], i: usize) -> String {
    let conv = pieces
        .iter()
        .filter_map(|p| match p {
            FmtPiece::Spec(s) => Some(s.conv),
            FmtPiece::Lit(_) => None,
        })
        .nth(i);
    if conv == Some(Conv::Str) && a.ty(i + 1).is_ptr() {
        let arg = a.expr(i + 1).and_then(spelled);
        let call = format!("str({})", arg.as_deref().unwrap_or("ptr"));
        return format!("a pointer is not a string: read the string it points to with `{call}`");
    }
    format!("the signature is `{}`", a.sig)
}

/// How `e` is written, when it is a name or a chain of fields (`args.filename`,
/// `$task->comm`, `@p`).
fn spelled(e: &Expr) -> Option<String> {
    Some(match &e.kind {
        ExprKind::Ident(n) => n.clone(),
        ExprKind::Var(n) => format!("${n}"),
        ExprKind::Map { name, keys } if keys.is_empty() => format!("@{name}"),
        ExprKind::Field { base, field, arrow } => {
            let sep = if *arrow { "->" } else { "." };
            format!("{}{sep}{}", spelled(base)?, field.name)
        }
        _ => return None,
    })
}

function!(
    /// `printf(fmt, args...)`: formatted output.
    Printf, "printf", "printf(fmt, args...)", "Prints values with a C-like format string (and bpftrace's %r, %rx, %rh for buffers, %gr for GFP flags)", unsafe = false,
    |call| {
        // Iterator probes format in the kernel, into the iterator's output.
        if call.ctx.provider == "iter" {
            return crate::catalog::providers::iter::seq_printf::check(call);
        }
        format_call(&Args::new(call, "printf(fmt, args...)"))
    },
    lower |cx, call| {
        if cx.layout == crate::context::ContextLayout::Iterator {
            return crate::catalog::providers::iter::seq_printf::lower(cx, call);
        }
        let format = crate::lower::events::literal_text(&call.args[0], cx.positional);
        let rest = &call.args[1..];
        let types = crate::lower::events::payload_types(cx, rest);
        crate::lower::events::send(cx, crate::program::EventSpec::Printf { format, args: types.clone() }, rest, &types)
    }
);

function!(
    /// `print(value)` or `print(@map[, top[, div]])`.
    Print, "print", "print(value) | print(@map[, top[, div]])",
    "Prints a value, or a whole map (optionally only its top entries, values divided by div; an empty map prints nothing)", unsafe = false,
    |call| {
        let a = Args::new(call, "print(value) | print(@map[, top[, div]])");
        a.arity(1, 3)?;
        if a.whole_map(0).is_err() {
            if a.len() > 1 {
                return Err(a.error(0, "a map such as `@name` when top or div are given"));
            }
            return Ok(Type::Void);
        }
        if a.len() > 1 && a.const_int(1, "a constant top count")? < 0 {
            return Err(a.error(1, "a top count of 0 or more"));
        }
        if a.len() > 2 && a.const_int(2, "a constant divisor")? <= 0 {
            return Err(a.error(2, "a positive divisor"));
        }
        if a.len() > 1
            && matches!(
                call.arg_types.first(),
                Some(Type::Agg(sonde_lang::types::AggKind::Stats { .. }))
            )
        {
            // As bpftrace 0.26 says: a stats map always prints whole.
            call.warnings.borrow_mut().push(
                Diagnostic::warning(
                    "sonde::sema::print_stats_args",
                    call.span,
                    "print()'s top and div arguments are ignored when used on stats() maps",
                )
                .with_label("a stats() map prints every entry, undivided"),
            );
        }
        Ok(Type::Void)
    },
    lower |cx, call| {
        use sonde_lang::ast::ExprKind;
        if let ExprKind::Map { name, keys } = &call.args[0].kind
            && keys.is_empty()
        {
            {
                let top = call.args.get(1).and_then(|e| sonde_lang::catalog::const_int(e, cx.positional)).unwrap_or(0);
                let div = call.args.get(2).and_then(|e| sonde_lang::catalog::const_int(e, cx.positional)).unwrap_or(1);
                let spec = crate::program::EventSpec::PrintMap { map: name.clone(), top: top as u64, div: div.max(1) as u64 };
                crate::lower::events::send_word(cx, spec, None);
                return Ok(crate::lower::cx::Val::None);
            }
        }
        let ty = cx.type_of(&call.args[0]);
        crate::lower::events::send(cx, crate::program::EventSpec::PrintValue { ty: ty.clone() }, &call.args[..1], &[ty])
    }
);

function!(
    /// `time([fmt])`: prints the wall-clock time.
    Time, "time", "time([fmt])", "Prints the current time with a strftime format (default \"%H:%M:%S\\n\")",
    unsafe = false,
    |call| {
        let a = Args::new(call, "time([fmt])");
        a.arity(0, 1)?;
        if !a.is_empty() {
            a.literal(0, "a strftime format string literal")?;
        }
        Ok(Type::Void)
    },
    lower |cx, call| {
        let format = call
            .args
            .first()
            .map_or_else(|| "%H:%M:%S\n".to_string(), |a| crate::lower::events::literal_text(a, cx.positional));
        crate::lower::events::send_word(cx, crate::program::EventSpec::Time { format }, None);
        Ok(crate::lower::cx::Val::None)
    }
);

function!(
    /// `cat(fmt, args...)`: prints the contents of a file.
    Cat, "cat", "cat(fmt, args...)", "Prints the contents of the file whose path the format gives", unsafe = false,
    |call| { format_call(&Args::new(call, "cat(fmt, args...)")) },
    lower |cx, call| {
        let format = crate::lower::events::literal_text(&call.args[0], cx.positional);
        let rest = &call.args[1..];
        let types = crate::lower::events::payload_types(cx, rest);
        crate::lower::events::send(cx, crate::program::EventSpec::Cat { format, args: types.clone() }, rest, &types)
    }
);

function!(
    /// `system(fmt, args...)`: runs a shell command (needs `--unsafe`).
    System, "system", "system(fmt, args...)", "Runs a shell command built from the format (needs --unsafe)",
    unsafe = true,
    |call| { format_call(&Args::new(call, "system(fmt, args...)")) },
    lower |cx, call| {
        let format = crate::lower::events::literal_text(&call.args[0], cx.positional);
        let rest = &call.args[1..];
        let types = crate::lower::events::payload_types(cx, rest);
        crate::lower::events::send(cx, crate::program::EventSpec::System { format, args: types.clone() }, rest, &types)
    }
);

function!(
    /// `join(array[, sep])`: prints an argv-style array of strings.
    Join, "join", "join(array[, sep])", "Prints a NULL-terminated array of string pointers, separated by sep (default \" \")",
    unsafe = false,
    |call| {
        let a = Args::new(call, "join(array[, sep])");
        a.arity(1, 2)?;
        match a.ty(0) {
            Type::Ptr { .. } | Type::Array { .. } => {}
            t if t.is_integer() => {}
            _ => return Err(a.error(0, "a pointer to an array of string pointers (such as `args.argv`)")),
        }
        if a.len() == 2 {
            a.literal(1, "a separator string literal")?;
        }
        Ok(Type::Void)
    },
    lower |cx, call| {
        let sep = call.args.get(1).map_or_else(|| " ".to_string(), |a| crate::lower::events::literal_text(a, cx.positional));
        crate::lower::strings::join(cx, &call.args[0], sep)
    }
);

/// Code of an exit code outside 0..=255.
pub const EXIT_CODE: &str = "sonde::sema::exit_code";

function!(
    /// `exit([code])`: stops tracing, prints the maps and exits. A process exit code is 0 to
    /// 255: a constant outside is an error here; a run-time value outside makes sonde warn and
    /// exit with 255 (not the low 8 bits, which could turn a failure such as 256 into 0).
    Exit, "exit", "exit([code])", "Stops the program after this probe (printing the maps), with an optional exit code 0-255 (a run-time value outside exits 255)",
    unsafe = false,
    |call| {
        let a = Args::new(call, "exit([code])");
        a.arity(0, 1)?;
        if !a.is_empty() {
            a.int(0, "an integer exit code")?;
            let constant = match a.call.const_int(0) {
                Some(c) => Some(c.to_string()),
                // A literal too large for an int64.
                None => match a.expr(0).map(|e| &e.kind) {
                    Some(sonde_lang::ast::ExprKind::Int(v)) => Some(v.to_string()),
                    _ => None,
                },
            };
            if let Some(c) = constant.filter(|c| c.parse::<u8>().is_err()) {
                return Err(Diagnostic::error(EXIT_CODE, a.span(0), format!("exit code {c} is out of range"))
                    .with_label("not between 0 and 255")
                    .with_help("a process exit code is 0 to 255 (the kernel keeps only its low 8 bits)"));
            }
        }
        Ok(Type::Void)
    },
    lower |cx, call| {
        let code = match call.args.first() {
            Some(a) => Some(cx.lower_int(a)?),
            None => None,
        };
        crate::lower::events::exit(cx, code);
        Ok(crate::lower::cx::Val::None)
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::functions::testutil::{arg_span, check, int, lit, map, val};
    use sonde_lang::catalog::Function;

    #[test]
    fn exit_codes_are_0_to_255() {
        assert_eq!(check(&Exit, vec![]).unwrap(), Type::Void);
        assert_eq!(check(&Exit, vec![int(0)]).unwrap(), Type::Void);
        assert_eq!(check(&Exit, vec![int(255)]).unwrap(), Type::Void);
        assert_eq!(check(&Exit, vec![val(Type::I64)]).unwrap(), Type::Void);
        for (code, shown) in [
            (256, "256"),
            (300, "300"),
            (u64::MAX, "18446744073709551615"),
        ] {
            let e = check(&Exit, vec![int(code)]).unwrap_err();
            assert_eq!((e.code, e.span), (EXIT_CODE, arg_span(0)));
            assert_eq!(e.message, format!("exit code {shown} is out of range"));
        }
        let neg = (
            sonde_lang::ast::ExprKind::Unary {
                op: sonde_lang::ast::UnOp::Neg,
                expr: Box::new(sonde_lang::ast::Expr {
                    id: sonde_lang::ast::ExprId(0),
                    kind: sonde_lang::ast::ExprKind::Int(1),
                    span: sonde_lang::span::Span::new(0, 1),
                }),
            },
            Type::I64,
        );
        let e = check(&Exit, vec![neg]).unwrap_err();
        assert_eq!(e.message, "exit code -1 is out of range");
    }

    #[test]
    fn printf_needs_a_literal_format() {
        assert_eq!(
            check(&Printf, vec![lit("%d\n"), int(1)]).unwrap(),
            Type::Void
        );
        let e = check(&Printf, vec![val(Type::Str { size: 8 })]).unwrap_err();
        assert_eq!(e.code, ARG_TYPE);
        assert_eq!(e.span, arg_span(0));
        assert_eq!(
            e.message,
            "argument 1 of `printf` must be a format string literal"
        );
        assert_eq!(
            check(&Printf, vec![]).unwrap_err().code,
            "sonde::sema::arity"
        );
    }

    #[test]
    fn printf_checks_conversions_against_arguments() {
        assert_eq!(
            check(
                &Printf,
                vec![lit("%s %d\n"), val(Type::Str { size: 16 }), val(Type::U32)]
            )
            .unwrap(),
            Type::Void
        );
        let e = check(&Printf, vec![lit("%d\n"), val(Type::Str { size: 16 })]).unwrap_err();
        assert_eq!((e.code, e.span), (ARG_TYPE, arg_span(1)));
        assert_eq!(
            e.help.as_deref(),
            Some("the signature is `printf(fmt, args...)`")
        );
        let e = check(&Printf, vec![lit("%d %d\n"), int(1)]).unwrap_err();
        assert_eq!(e.code, "sonde::sema::arity");
        let e = check(&Printf, vec![lit("%d\n"), int(1), int(2)]).unwrap_err();
        assert_eq!((e.code, e.span), ("sonde::sema::arity", arg_span(2)));
        let e = check(&Printf, vec![lit("%q\n")]).unwrap_err();
        assert_eq!((e.code, e.span), (FORMAT_STRING, arg_span(0)));
        assert_eq!(
            check(&Cat, vec![lit("/proc/%d/status"), val(Type::U32)]).unwrap(),
            Type::Void
        );
    }

    #[test]
    fn printf_of_a_pointer_with_s_says_to_read_it_with_str() {
        let ptr = || Type::Ptr {
            pointee: Box::new(Type::Int {
                bits: 8,
                signed: true,
            }),
            space: sonde_lang::types::AddrSpace::Kernel,
        };
        let e = check(&Printf, vec![lit("%d %s\n"), int(1), val(ptr())]).unwrap_err();
        assert_eq!((e.code, e.span), (ARG_TYPE, arg_span(2)));
        assert_eq!(
            e.help.as_deref(),
            Some("a pointer is not a string: read the string it points to with `str($v)`")
        );
        // `args.filename`, as written.
        let span = arg_span(1);
        let filename = ExprKind::Field {
            base: Box::new(Expr {
                id: sonde_lang::ast::ExprId(0),
                kind: ExprKind::Ident("args".into()),
                span,
            }),
            field: sonde_lang::ast::Ident {
                name: "filename".into(),
                span,
            },
            arrow: false,
        };
        let e = check(&Printf, vec![lit("%s\n"), (filename, ptr())]).unwrap_err();
        assert_eq!(e.code, ARG_TYPE);
        assert_eq!(
            e.help.as_deref(),
            Some(
                "a pointer is not a string: read the string it points to with `str(args.filename)`"
            )
        );
        // A pointer given to `%d` is fine; an integer given to `%s` gets the signature.
        assert!(check(&Printf, vec![lit("%d\n"), val(ptr())]).is_ok());
        let e = check(&Printf, vec![lit("%s\n"), int(1)]).unwrap_err();
        assert_eq!(
            e.help.as_deref(),
            Some("the signature is `printf(fmt, args...)`")
        );
    }

    #[test]
    fn print_value_or_map() {
        assert_eq!(check(&Print, vec![val(Type::U64)]).unwrap(), Type::Void);
        assert_eq!(
            check(&Print, vec![map("m", 0), int(10), int(1000)]).unwrap(),
            Type::Void
        );
        let e = check(&Print, vec![val(Type::U64), int(10)]).unwrap_err();
        assert_eq!((e.code, e.span), (ARG_TYPE, arg_span(0)));
        let e = check(&Print, vec![map("m", 0), val(Type::U64)]).unwrap_err();
        assert_eq!((e.code, e.span), (ARG_TYPE, arg_span(1)));
        let e = check(&Print, vec![map("m", 0), int(1), int(0)]).unwrap_err();
        assert_eq!(e.span, arg_span(2));
    }

    #[test]
    fn time_join_exit_system() {
        assert_eq!(check(&Time, vec![]).unwrap(), Type::Void);
        assert_eq!(
            check(&Time, vec![val(Type::U64)]).unwrap_err().code,
            ARG_TYPE
        );
        let argv = Type::Ptr {
            pointee: Box::new(Type::Void),
            space: sonde_lang::types::AddrSpace::User,
        };
        assert_eq!(check(&Join, vec![val(argv), lit(",")]).unwrap(), Type::Void);
        assert_eq!(
            check(&Join, vec![val(Type::Str { size: 4 })])
                .unwrap_err()
                .code,
            ARG_TYPE
        );
        assert_eq!(check(&Exit, vec![int(3)]).unwrap(), Type::Void);
        assert_eq!(check(&Exit, vec![lit("x")]).unwrap_err().code, ARG_TYPE);
        assert!(System.is_unsafe() && !Printf.is_unsafe());
    }
}
