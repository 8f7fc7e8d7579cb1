//! Builtins of the userspace `input` and `replay` probes: `line` (the record's text), `nf`
//! (its number of fields) and `nr` (the number of records read so far), as awk's `$0`, `NF`
//! and `NR`. They read the current record through intrinsics the userspace engine provides.

use super::unavailable;
use crate::catalog::BuiltinBackend;
use crate::ir::{Inst, Intrinsic, Operand};
use crate::lower::cx::{LowerCx, Val};
use sonde_lang::catalog::{Builtin, ProbeContext};
use sonde_lang::diag::Diagnostic;
use sonde_lang::span::Span;
use sonde_lang::types::Type;

/// Size of the `line` string buffer: longer lines are truncated to `LINE_SIZE - 1` bytes.
pub const LINE_SIZE: u32 = 256;

/// True when a probe of this context has a current input record (`input`, `replay`).
pub fn has_record(ctx: &ProbeContext) -> bool {
    matches!(ctx.provider, "input" | "replay")
}

/// The diagnostic for a record builtin or function used outside `input`/`replay` probes.
pub fn no_record(name: &str, ctx: &ProbeContext, span: Span) -> Diagnostic {
    unavailable(
        name,
        ctx,
        span,
        format!("`{name}` reads the current input line: use it in `input` or `replay` probes"),
    )
}

/// `line`: the current input line without its newline (awk's `$0`).
pub struct Line;

impl Builtin for Line {
    fn name(&self) -> &'static str {
        "line"
    }
    fn doc(&self) -> &'static str {
        "The current input line, without its newline (input and replay probes; sonde extension)"
    }
    fn check(&self, ctx: &ProbeContext, span: Span) -> Result<Type, Diagnostic> {
        if has_record(ctx) {
            Ok(Type::Str { size: LINE_SIZE })
        } else {
            Err(no_record("line", ctx, span))
        }
    }
}

impl BuiltinBackend for Line {
    fn lower(&self, cx: &mut LowerCx<'_>, ty: &Type, _: Span) -> Result<Val, Diagnostic> {
        let size = ty.size();
        let buf = cx.alloc(size);
        cx.emit(Inst::Call {
            dst: None,
            func: Intrinsic::InputLine,
            args: vec![Operand::Reg(buf), Operand::Imm(size.into())],
        });
        Ok(Val::Mem { ptr: buf, size })
    }
}

/// Declares a record builtin holding a `uint64` counter read by an intrinsic.
macro_rules! record_counter {
    ($(#[$m:meta])* $ty:ident, $name:literal, $doc:literal, $intrinsic:expr) => {
        $(#[$m])*
        pub struct $ty;

        impl Builtin for $ty {
            fn name(&self) -> &'static str {
                $name
            }
            fn doc(&self) -> &'static str {
                $doc
            }
            fn check(&self, ctx: &ProbeContext, span: Span) -> Result<Type, Diagnostic> {
                if has_record(ctx) {
                    Ok(Type::U64)
                } else {
                    Err(no_record($name, ctx, span))
                }
            }
        }

        impl BuiltinBackend for $ty {
            fn lower(&self, cx: &mut LowerCx<'_>, _: &Type, _: Span) -> Result<Val, Diagnostic> {
                Ok(Val::Int(cx.call($intrinsic, vec![])))
            }
        }
    };
}

record_counter!(
    /// `nf`: the number of fields of the current line (awk's `NF`).
    Nf, "nf", "Number of fields of the current input line, as awk's NF (input and replay probes; sonde extension)",
    Intrinsic::InputFieldCount
);
record_counter!(
    /// `nr`: the number of lines read so far, this one included (awk's `NR`).
    Nr, "nr", "Number of input lines read so far, this one included, as awk's NR (input and replay probes; sonde extension)",
    Intrinsic::InputRecordNumber
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::builtins::BUILTIN_UNAVAILABLE;

    #[test]
    fn record_builtins_only_in_record_probes() {
        for provider in ["input", "replay"] {
            let ctx = ProbeContext::bare(provider);
            assert_eq!(
                Line.check(&ctx, Span::default()).unwrap(),
                Type::Str { size: LINE_SIZE }
            );
            assert_eq!(Nf.check(&ctx, Span::default()).unwrap(), Type::U64);
            assert_eq!(Nr.check(&ctx, Span::default()).unwrap(), Type::U64);
        }
        let e = Nr
            .check(&ProbeContext::bare("tracepoint"), Span::new(3, 5))
            .unwrap_err();
        assert_eq!(e.code, BUILTIN_UNAVAILABLE);
        assert!(e.help.unwrap().contains("`input` or `replay`"));
    }
}
