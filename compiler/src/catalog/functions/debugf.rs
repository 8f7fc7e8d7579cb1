//! `debugf(fmt, args...)`: as in bpftrace 0.27, the kernel formats it into its trace buffer
//! with `bpf_trace_printk` (read from `/sys/kernel/tracing/trace_pipe`), and the checker
//! warns that it is not for production use. bpftrace's rules hold: at most 3 arguments,
//! conversions `%d %u %x %p` of integers and `%s` of strings (with the kernel's flags, width
//! and `l`/`ll`); each argument is passed in a register: an integer's value, or the address
//! of a NUL-terminated copy of a string.

use super::args::{ARG_TYPE, Args};
use super::function;
use super::print::FORMAT_STRING;
use crate::catalog::providers::iter::seq_printf::{kernel_format_args, kernel_format_specs};
use crate::ir::{Intrinsic, Operand};
use crate::lower::cx::{LowerCall, LowerCx, Val};
use sonde_lang::catalog::CallCheck;
use sonde_lang::diag::Diagnostic;
use sonde_lang::types::Type;

/// Most arguments `bpf_trace_printk` formats (its three variadic registers).
pub const MAX_ARGS: usize = 3;

/// Code of bpftrace's warning that `debugf` is for debugging only.
pub const DEBUGF_WARNING: &str = "sonde::sema::debugf";

const SIGNATURE: &str = "debugf(fmt, args...)";

const HELP: &str = "debugf() is formatted by the kernel (bpf_trace_printk, as in bpftrace): it takes %d %u %x %p of integers and %s of strings, flags 0 + - and space, a width, l or ll, and at most 3 arguments";

/// The type rule: sonde's printf rule, the kernel's format limits, then bpftrace's
/// conversions (`d u x p` of integers, `s` of strings) and its warning.
fn check(call: &CallCheck<'_>) -> Result<Type, Diagnostic> {
    let a = Args::new(call, SIGNATURE);
    let (ty, specs) = kernel_format_specs(call, &a, MAX_ARGS, "in debugf()", HELP)?;
    for (i, (spec, arg)) in specs.iter().zip(&call.arg_types[1..]).enumerate() {
        let conv = spec.text.chars().last().unwrap_or('%');
        let fits = match conv {
            'd' | 'u' | 'x' | 'p' => arg.is_integer() || arg.is_ptr(),
            's' => matches!(arg, Type::Str { .. }),
            _ => {
                return Err(Diagnostic::error(
                    FORMAT_STRING,
                    a.span(0),
                    format!("Invalid format specifier for `debugf`: {conv}"),
                )
                .with_label(format!("`{}` at byte {}", spec.text, spec.offset))
                .with_help(HELP));
            }
        };
        if !fits {
            return Err(Diagnostic::error(
                ARG_TYPE,
                a.span(i + 1),
                format!("Type does not match format specifier: {conv}"),
            )
            .with_label(format!("this is {arg}"))
            .with_help(HELP));
        }
    }
    call.warnings.borrow_mut().push(
        Diagnostic::warning(
            DEBUGF_WARNING,
            call.span,
            "The debugf() builtin is not recommended for production use. For more information see bpf_trace_printk in bpf-helpers(7).",
        )
        .with_label("written to the kernel's trace buffer (/sys/kernel/tracing/trace_pipe)"),
    );
    Ok(ty)
}

/// Lowers `debugf` to `bpf_trace_printk(fmt, fmt_size, a1, a2, a3)`.
fn lower(cx: &mut LowerCx<'_>, call: &LowerCall<'_>) -> Result<Val, Diagnostic> {
    let (f, fsize, words) = kernel_format_args(cx, call)?;
    let mut args = vec![Operand::Reg(f), Operand::Imm(i64::from(fsize))];
    args.extend(words.into_iter().map(Operand::Reg));
    args.resize(2 + MAX_ARGS, Operand::Imm(0));
    cx.call(Intrinsic::TracePrintk, args);
    Ok(Val::None)
}

function!(
    /// `debugf(fmt, args...)`: formatted by the kernel into its trace buffer.
    Debugf, "debugf", "debugf(fmt, args...)", "Writes to the kernel's trace buffer (/sys/kernel/tracing/trace_pipe) with bpf_trace_printk: %d %u %x %p and %s, at most 3 arguments; for debugging only",
    unsafe = false,
    |call| { check(call) },
    lower |cx, call| { lower(cx, call) }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_formats_three_arguments() {
        assert_eq!(
            crate::catalog::providers::iter::seq_printf::kernel_format_error(
                b"%d %s %lx\n",
                MAX_ARGS,
                "here"
            ),
            None
        );
        let (offset, message) = crate::catalog::providers::iter::seq_printf::kernel_format_error(
            b"%d %d %d %d",
            MAX_ARGS,
            "here",
        )
        .unwrap();
        assert_eq!(offset, 9);
        assert!(message.contains("at most 3"), "{message}");
    }
}
