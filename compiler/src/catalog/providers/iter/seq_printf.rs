//! `printf` in iterator probes: as in bpftrace, the kernel formats it into the iterator's
//! output with `bpf_seq_printf(seq, fmt, fmt_size, args, args_size)`, so that a pinned
//! iterator read with `cat` prints the same text. Each argument is one `u64` of the argument
//! array: an integer's value, or the address of a NUL-terminated copy of a string.
//!
//! The kernel's formatter (`bpf_bprintf_prepare`) accepts less than sonde's: conversions
//! `%d %i %u %x %X` (with `l`/`ll`), `%s`, `%c` and a plain `%p` (hashed, as the kernel
//! prints pointers), flags `0 + - space` and a width, at most
//! [`MAX_ARGS`] arguments, and only printable ASCII and whitespace. [`check`] refuses the
//! rest at check time, where the kernel would fail the call at run time.

use crate::catalog::functions::args::Args;
use crate::catalog::functions::print::{FORMAT_STRING, format_call};
use crate::ir::{Intrinsic, Operand, VReg, Width};
use crate::lower::cx::{LowerCall, LowerCx, Val};
use crate::lower::strings;
use sonde_lang::ast::ExprKind;
use sonde_lang::catalog::CallCheck;
use sonde_lang::diag::Diagnostic;
use sonde_lang::format::{Conv, FmtPiece, FmtSpec, parse_format};
use sonde_lang::types::Type;

/// Most arguments the kernel formats in one call (`MAX_BPRINTF_VARARGS`).
pub const MAX_ARGS: usize = 12;

const SIGNATURE: &str = "printf(fmt, args...)";

const HELP: &str = "in iter probes the kernel formats printf (bpf_seq_printf, as in bpftrace): it takes %d %i %u %x %X (with l or ll), %s, %c and %p, flags 0 + - and space, a width, and at most 12 arguments";

/// Where and why the kernel's formatter would refuse `fmt`, with at most `max_args`
/// conversions, for a call `place` says (`in iter probes`): `(byte offset, message)`.
pub fn kernel_format_error(fmt: &[u8], max_args: usize, place: &str) -> Option<(usize, String)> {
    let printable =
        |c: u8| c.is_ascii_graphic() || matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c);
    let mut i = 0;
    let mut conversions = 0;
    while i < fmt.len() {
        let c = fmt[i];
        if !printable(c) {
            return Some((
                i,
                format!(
                    "the kernel refuses byte {c:#04x} in a format: only printable ASCII and whitespace"
                ),
            ));
        }
        if c != b'%' {
            i += 1;
            continue;
        }
        if fmt.get(i + 1) == Some(&b'%') {
            i += 2;
            continue;
        }
        let start = i;
        i += 1;
        while matches!(fmt.get(i), Some(b'0' | b'+' | b'-' | b' ')) {
            i += 1;
        }
        while fmt.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        let ok = match fmt.get(i) {
            Some(b'p') => !fmt.get(i + 1).is_some_and(u8::is_ascii_alphanumeric),
            Some(b's' | b'c') => true,
            _ => {
                for _ in 0..2 {
                    if fmt.get(i) == Some(&b'l') {
                        i += 1;
                    }
                }
                matches!(fmt.get(i), Some(b'd' | b'i' | b'u' | b'x' | b'X'))
            }
        };
        let end = (i + 1).min(fmt.len());
        if !ok {
            let spec = String::from_utf8_lossy(&fmt[start..end]);
            return Some((
                start,
                format!("`{spec}` is not a conversion the kernel formats {place}"),
            ));
        }
        i = end;
        conversions += 1;
        if conversions > max_args {
            return Some((
                start,
                format!("the kernel formats at most {max_args} arguments {place}"),
            ));
        }
    }
    None
}

/// The checks of a format the kernel formats (printf in an iterator probe, `debugf`): sonde's
/// printf rule, then the kernel's limits (`max_args` arguments, named `place` in messages).
/// Returns the call's type and the format's conversions, for the caller's own rules.
pub fn kernel_format_specs(
    call: &CallCheck<'_>,
    a: &Args<'_, '_>,
    max_args: usize,
    place: &str,
    help: &str,
) -> Result<(Type, Vec<FmtSpec>), Diagnostic> {
    let ty = format_call(a)?;
    let fmt = call.const_str(0).unwrap_or_default();
    if let Some((offset, message)) = kernel_format_error(&fmt, max_args, place) {
        return Err(Diagnostic::error(FORMAT_STRING, a.span(0), message)
            .with_label(format!("at byte {offset} of the format"))
            .with_help(help));
    }
    let text = String::from_utf8_lossy(&fmt);
    let specs = parse_format(&text)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|p| match p {
            FmtPiece::Spec(s) => Some(s),
            FmtPiece::Lit(_) => None,
        })
        .collect();
    Ok((ty, specs))
}

/// The type rule of `printf` in an iterator probe: sonde's, then the kernel's limits, and
/// `%s` of strings only (the kernel cannot print sonde's other textual values).
pub fn check(call: &CallCheck<'_>) -> Result<Type, Diagnostic> {
    let a = Args::new(call, SIGNATURE);
    let (ty, specs) = kernel_format_specs(call, &a, MAX_ARGS, "in iter probes", HELP)?;
    let convs = specs.iter().map(|s| s.conv);
    for (i, (conv, arg)) in convs.zip(&call.arg_types[1..]).enumerate() {
        if conv == Conv::Str && !matches!(arg, Type::Str { .. }) {
            return Err(Diagnostic::error(
                crate::catalog::functions::args::ARG_TYPE,
                a.span(i + 1),
                format!("`%s` in an iter probe prints a string only ({arg} given)"),
            )
            .with_label("not a string")
            .with_help(HELP));
        }
    }
    Ok(ty)
}

/// The lowered parts of a call the kernel formats (printf in an iterator probe, `debugf`):
/// its format as a string literal of the program (address and size), and its arguments as
/// words: integers as they are, strings as the address of a NUL-terminated copy.
pub fn kernel_format_args(
    cx: &mut LowerCx<'_>,
    call: &LowerCall<'_>,
) -> Result<(VReg, u32, Vec<VReg>), Diagnostic> {
    let fmt: Vec<u8> = match &call.args[0].kind {
        ExprKind::Str(b) => b.clone(),
        _ => crate::lower::events::literal_text(&call.args[0], cx.positional).into_bytes(),
    };
    let mut words = Vec::with_capacity(call.args.len() - 1);
    for a in &call.args[1..] {
        let ty = cx.type_of(a);
        let v = cx.lower_expr(a)?;
        words.push(match ty {
            Type::Str { size } => {
                // A NUL-terminated copy: the kernel reads up to the NUL.
                let buf = cx.alloc(size + 1);
                cx.read_place_into(v, buf, 0, size);
                cx.store(buf, size as i32, Operand::Imm(0), Width::W8);
                buf
            }
            _ => cx.int(v, &ty),
        });
    }
    let Val::Mem { ptr, size } = strings::literal(cx, &fmt, 0) else {
        return Err(cx.unsupported(call.span, "this format string"));
    };
    Ok((ptr, size, words))
}

/// Lowers `printf(fmt, args...)` in an iterator probe to `bpf_seq_printf` on the iterator's
/// `ctx->meta->seq`.
pub fn lower(cx: &mut LowerCx<'_>, call: &LowerCall<'_>) -> Result<Val, Diagnostic> {
    let (f, fsize, words) = kernel_format_args(cx, call)?;
    let data = (!words.is_empty()).then(|| cx.alloc(8 * words.len() as u32));
    if let Some(d) = data {
        for (i, w) in words.iter().enumerate() {
            cx.store(d, 8 * i as i32, Operand::Reg(*w), Width::W64);
        }
    }
    let ctx = cx.ctx();
    let meta = cx.load(ctx, 0, Width::W64);
    let seq = cx.load(meta, 0, Width::W64);
    let (data, len) = match data {
        Some(d) => (Operand::Reg(d), 8 * words.len() as i64),
        None => (Operand::Imm(0), 0),
    };
    cx.call(
        Intrinsic::SeqPrintf,
        vec![
            Operand::Reg(seq),
            Operand::Reg(f),
            Operand::Imm(i64::from(fsize)),
            data,
            Operand::Imm(len),
        ],
    );
    Ok(Val::None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_formats() {
        for ok in [
            "%s:%d\n",
            "%-16s %5d %lx-%llx %u %X %i %c %p\n",
            "100%% %08d\t% d %+d",
            "",
        ] {
            assert_eq!(
                kernel_format_error(ok.as_bytes(), MAX_ARGS, "here"),
                None,
                "{ok}"
            );
        }
        let err = |f: &str| kernel_format_error(f.as_bytes(), MAX_ARGS, "here").unwrap();
        assert_eq!(err("x %o").0, 2);
        assert!(err("%.3s").1.contains("`%.`"), "{}", err("%.3s").1);
        assert!(err("%hd").1.contains("`%h`"));
        assert!(err("%zu").1.contains("`%z`"));
        assert!(err("%#x").1.contains("`%#`"));
        assert!(err("%pS").1.contains("`%p`"));
        assert!(err("%lc").1.contains("`%lc`"));
        assert!(err("é").1.contains("0xc3"));
        assert!(err(&"%d".repeat(13)).1.contains("at most 12"));
    }
}
