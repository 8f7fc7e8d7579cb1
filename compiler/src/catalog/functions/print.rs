//! Output functions, run asynchronously in user space: `printf`, `print`, `time`, `cat`,
//! `system`, `join` and `exit`.

use super::args::Args;
use super::function;
use sonde_lang::types::Type;

/// Checks the format-string calls (`printf`, `cat`, `system`): a literal format, then any values.
// TODO(format): check each conversion against its argument with `sonde_lang::format` once that
// module lands; until then only the literal format and the argument count (at least one) are
// checked here.
fn format_call(a: &Args<'_, '_>) -> Result<Type, sonde_lang::diag::Diagnostic> {
    a.arity(1, usize::MAX)?;
    a.literal(0, "a format string literal")?;
    Ok(Type::Void)
}

function!(
    /// `printf(fmt, args...)`: formatted output.
    Printf, "printf", "printf(fmt, args...)", "Prints values with a C-like format string", unsafe = false,
    |call| { format_call(&Args::new(call, "printf(fmt, args...)")) }
);

function!(
    /// `print(value)` or `print(@map[, top[, div]])`.
    Print, "print", "print(value) | print(@map[, top[, div]])",
    "Prints a value, or a whole map (optionally only its top entries, values divided by div)", unsafe = false,
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
        Ok(Type::Void)
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
    }
);

function!(
    /// `cat(fmt, args...)`: prints the contents of a file.
    Cat, "cat", "cat(fmt, args...)", "Prints the contents of the file whose path the format gives", unsafe = false,
    |call| { format_call(&Args::new(call, "cat(fmt, args...)")) }
);

function!(
    /// `system(fmt, args...)`: runs a shell command (needs `--unsafe`).
    System, "system", "system(fmt, args...)", "Runs a shell command built from the format (needs --unsafe)",
    unsafe = true,
    |call| { format_call(&Args::new(call, "system(fmt, args...)")) }
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
    }
);

function!(
    /// `exit([code])`: stops tracing, prints the maps and exits.
    Exit, "exit", "exit([code])", "Stops the program after this probe (printing the maps), with an optional exit code",
    unsafe = false,
    |call| {
        let a = Args::new(call, "exit([code])");
        a.arity(0, 1)?;
        if !a.is_empty() {
            a.int(0, "an integer exit code")?;
        }
        Ok(Type::Void)
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::functions::args::ARG_TYPE;
    use crate::catalog::functions::testutil::{arg_span, check, int, lit, map, val};
    use sonde_lang::catalog::Function;

    #[test]
    fn printf_needs_a_literal_format() {
        assert_eq!(check(&Printf, vec![lit("%d\n"), int(1)]).unwrap(), Type::Void);
        let e = check(&Printf, vec![val(Type::Str { size: 8 })]).unwrap_err();
        assert_eq!(e.code, ARG_TYPE);
        assert_eq!(e.span, arg_span(0));
        assert_eq!(e.message, "argument 1 of `printf` must be a format string literal");
        assert_eq!(check(&Printf, vec![]).unwrap_err().code, "sonde::sema::arity");
    }

    #[test]
    fn print_value_or_map() {
        assert_eq!(check(&Print, vec![val(Type::U64)]).unwrap(), Type::Void);
        assert_eq!(check(&Print, vec![map("m", 0), int(10), int(1000)]).unwrap(), Type::Void);
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
        assert_eq!(check(&Time, vec![val(Type::U64)]).unwrap_err().code, ARG_TYPE);
        let argv = Type::Ptr { pointee: Box::new(Type::Void), space: sonde_lang::types::AddrSpace::User };
        assert_eq!(check(&Join, vec![val(argv), lit(",")]).unwrap(), Type::Void);
        assert_eq!(check(&Join, vec![val(Type::Str { size: 4 })]).unwrap_err().code, ARG_TYPE);
        assert_eq!(check(&Exit, vec![int(3)]).unwrap(), Type::Void);
        assert_eq!(check(&Exit, vec![lit("x")]).unwrap_err().code, ARG_TYPE);
        assert!(System.is_unsafe() && !Printf.is_unsafe());
    }
}
