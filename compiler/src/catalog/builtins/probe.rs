//! Builtins whose availability or type depends on the probe: `probe`, `func`, `probetype`,
//! `args`, `arg0`..`arg9` and `retval`. They read the [`ProbeContext`] the provider built.

use super::{unavailable, usdt_arg};
use crate::catalog::BuiltinBackend;
use crate::context::ContextLayout;
use crate::ir::Width;
use crate::lower::cx::{LowerCx, PlaceSpace, Val};
use crate::lower::strings;
use sonde_lang::catalog::{Builtin, ProbeContext};
use sonde_lang::diag::Diagnostic;
use sonde_lang::kernel::KernelInfo;
use sonde_lang::span::Span;
use sonde_lang::types::Type;

/// Buffer size of the `probe` builtin. A builtin's type cannot depend on the attach point's
/// name (all instances of a wildcard probe share one program), so the size is fixed; longer
/// names are truncated by the lowering.
pub const PROBE_STR_SIZE: u32 = 128;

/// The string size used for a function name of `len` bytes: 64 for usual names, larger
/// multiples of 64 for long (C++) names, so that most instances of a wildcard probe agree.
pub fn name_str_size(len: usize) -> u32 {
    let needed = u32::try_from(len + 1).unwrap_or(u32::MAX);
    needed.div_ceil(64).max(1).saturating_mul(64)
}

/// `probe`: the full name of the probe that fired (`tracepoint:syscalls:sys_enter_openat`).
pub struct Probe;

impl Builtin for Probe {
    fn name(&self) -> &'static str {
        "probe"
    }
    fn doc(&self) -> &'static str {
        "Full name of the probe that fired (provider:target:name)"
    }
    fn check(&self, _: &ProbeContext, _: Span) -> Result<Type, Diagnostic> {
        Ok(Type::Str {
            size: PROBE_STR_SIZE,
        })
    }
}

impl BuiltinBackend for Probe {
    fn lower(&self, cx: &mut LowerCx<'_>, _: &Type, _: Span) -> Result<Val, Diagnostic> {
        // (An event's or a key's field gets the name's characters as immediates:
        // `strings::constant_string`.)
        let name = cx.attach.name.clone();
        let bytes = &name.as_bytes()[..name.len().min(PROBE_STR_SIZE as usize - 1)];
        Ok(strings::literal(cx, bytes, PROBE_STR_SIZE))
    }
}

/// `probetype`: the probe's type as bpftrace names it (`tracepoint`, `uprobe`, `special` for
/// `BEGIN`/`END`, ...).
pub struct Probetype;

impl Builtin for Probetype {
    fn name(&self) -> &'static str {
        "probetype"
    }
    fn doc(&self) -> &'static str {
        "Type of the probe that fired (tracepoint, uprobe, profile, ...; `special` in BEGIN and END, as bpftrace)"
    }
    fn check(&self, _: &ProbeContext, _: Span) -> Result<Type, Diagnostic> {
        Ok(Type::Str { size: 16 })
    }
}

impl BuiltinBackend for Probetype {
    fn lower(&self, cx: &mut LowerCx<'_>, _: &Type, _: Span) -> Result<Val, Diagnostic> {
        let name = probe_type_name(cx.attach.ctx.provider);
        Ok(strings::literal(
            cx,
            &name.as_bytes()[..name.len().min(15)],
            16,
        ))
    }
}

/// bpftrace's name of a provider's probe type: `begin` and `end` probes are `special`, `bench`
/// ones `benchmark`; the others are named as their provider.
fn probe_type_name(provider: &str) -> &str {
    match provider {
        "BEGIN" | "END" => "special",
        "bench" => "benchmark",
        other => other,
    }
}

/// `func`: the name of the traced function (kprobes, uprobes, fentry and their return probes).
pub struct Func;

impl Builtin for Func {
    fn name(&self) -> &'static str {
        "func"
    }
    fn doc(&self) -> &'static str {
        "Name of the traced function (kprobe, uprobe, fentry and their return probes)"
    }
    fn check(&self, ctx: &ProbeContext, span: Span) -> Result<Type, Diagnostic> {
        match &ctx.func {
            Some(f) => Ok(Type::Str {
                size: name_str_size(f.len()),
            }),
            None => Err(unavailable(
                "func",
                ctx,
                span,
                "`func` is available in kprobe, kretprobe, uprobe, uretprobe (by function name), fentry and fexit probes",
            )),
        }
    }
}

impl BuiltinBackend for Func {
    fn lower(&self, cx: &mut LowerCx<'_>, ty: &Type, _: Span) -> Result<Val, Diagnostic> {
        let name = cx.attach.ctx.func.clone().unwrap_or_default();
        Ok(strings::literal(cx, name.as_bytes(), ty.size()))
    }
}

/// `args`: the record of the probe's typed arguments (tracepoint fields, or a uprobe's
/// parameters from DWARF: [`super::debug_args`]).
pub struct Args;

impl Builtin for Args {
    fn name(&self) -> &'static str {
        "args"
    }
    fn doc(&self) -> &'static str {
        "The probe's typed arguments (the fields of a tracepoint; a uprobe's parameters, from DWARF), as `args.name`"
    }
    fn check_in(
        &self,
        ctx: &ProbeContext,
        kernel: &dyn KernelInfo,
        span: Span,
    ) -> Result<Type, Diagnostic> {
        match (&ctx.args, &ctx.debug_function) {
            (None, Some(f)) => super::debug_args::check(kernel, f, span),
            _ => self.check(ctx, span),
        }
    }
    fn check(&self, ctx: &ProbeContext, span: Span) -> Result<Type, Diagnostic> {
        match &ctx.args {
            Some(r) => Ok(Type::Record(r.clone())),
            None => {
                let help = if ctx.provider == "uretprobe" {
                    "a uretprobe has only `retval`: read the arguments by name in a `uprobe` on the function".to_string()
                } else if ctx.provider == "uprobe" {
                    "`args` of a uprobe needs a function name (no address or offset); arg0..arg5 read the raw arguments".to_string()
                } else if ctx.arg_regs > 0 {
                    format!(
                        "`args` is available in tracepoint probes; `{}` probes read their arguments as arg0..arg{}",
                        ctx.provider,
                        ctx.arg_regs - 1
                    )
                } else {
                    "`args` is available in tracepoint probes".to_string()
                };
                Err(unavailable("args", ctx, span, help))
            }
        }
    }
}

impl BuiltinBackend for Args {
    fn lower(&self, cx: &mut LowerCx<'_>, _: &Type, span: Span) -> Result<Val, Diagnostic> {
        match cx.layout {
            ContextLayout::TracepointRecord | ContextLayout::RawArgs => Ok(Val::Place {
                base: cx.ctx(),
                offset: 0,
                space: PlaceSpace::Ctx,
            }),
            ContextLayout::OwnedRecord => Ok(Val::Place {
                base: cx.ctx(),
                offset: 0,
                space: PlaceSpace::Own,
            }),
            ContextLayout::SyscallRegs => {
                let ctx = cx.ctx();
                Ok(Val::Place {
                    base: cx.load(ctx, 0, Width::W64),
                    offset: 0,
                    space: PlaceSpace::Kernel,
                })
            }
            // A uprobe's parameters from DWARF: fields at their registers' offsets.
            ContextLayout::PtRegs if cx.attach.ctx.debug_function.is_some() => Ok(Val::Place {
                base: cx.ctx(),
                offset: 0,
                space: PlaceSpace::Ctx,
            }),
            ContextLayout::None | ContextLayout::PtRegs | ContextLayout::Iterator => {
                Err(cx.unsupported(span, "`args` here"))
            }
        }
    }
}

/// `argN`: the N-th raw argument of the probed function or raw tracepoint, as a `uint64`.
pub struct Arg<const N: u8>;

/// `arg0`.
pub const ARG0: Arg<0> = Arg;
/// `arg1`.
pub const ARG1: Arg<1> = Arg;
/// `arg2`.
pub const ARG2: Arg<2> = Arg;
/// `arg3`.
pub const ARG3: Arg<3> = Arg;
/// `arg4`.
pub const ARG4: Arg<4> = Arg;
/// `arg5`.
pub const ARG5: Arg<5> = Arg;
/// `arg6` (never available on x86-64; kept for a precise error).
pub const ARG6: Arg<6> = Arg;
/// `arg7` (never available on x86-64; kept for a precise error).
pub const ARG7: Arg<7> = Arg;
/// `arg8` (never available on x86-64; kept for a precise error).
pub const ARG8: Arg<8> = Arg;
/// `arg9` (USDT probes and raw tracepoints; a precise error elsewhere on x86-64).
pub const ARG9: Arg<9> = Arg;
/// `arg10` (USDT probes, which have up to 12 arguments, and raw tracepoints).
pub const ARG10: Arg<10> = Arg;
/// `arg11` (USDT probes and raw tracepoints).
pub const ARG11: Arg<11> = Arg;

const ARG_NAMES: [&str; 12] = [
    "arg0", "arg1", "arg2", "arg3", "arg4", "arg5", "arg6", "arg7", "arg8", "arg9", "arg10",
    "arg11",
];

impl<const N: u8> Builtin for Arg<N> {
    fn name(&self) -> &'static str {
        ARG_NAMES[usize::from(N)]
    }
    fn doc(&self) -> &'static str {
        "A raw argument of the probed function or raw tracepoint (kprobe, uprobe, rawtracepoint, fentry)"
    }
    fn check(&self, ctx: &ProbeContext, span: Span) -> Result<Type, Diagnostic> {
        if N < ctx.arg_regs {
            return Ok(Type::U64);
        }
        let name = self.name();
        let help = if ctx.arg_regs > 0 {
            format!(
                "only {} arguments can be read here: arg0..arg{}",
                ctx.arg_regs,
                ctx.arg_regs - 1
            )
        } else if ctx.retval.is_some() {
            "return probes have no arguments; use `retval` for the return value".to_string()
        } else if ctx.args.is_some() {
            format!(
                "`{name}` is available in kprobe, uprobe, rawtracepoint and fentry probes; use `args.<field>` here"
            )
        } else {
            format!("`{name}` is available in kprobe, uprobe, rawtracepoint and fentry probes")
        };
        Err(unavailable(name, ctx, span, help))
    }
}

impl<const N: u8> BuiltinBackend for Arg<N> {
    fn lower(&self, cx: &mut LowerCx<'_>, _: &Type, span: Span) -> Result<Val, Diagnostic> {
        if let Some(spec) = cx.attach.ctx.usdt_args.as_deref() {
            let parsed = usdt_arg::parse_args(spec).into_iter().nth(usize::from(N));
            return match parsed {
                Some(Ok(arg)) => Ok(usdt_arg::lower_arg(cx, arg)),
                Some(Err(e)) => Err(Diagnostic::error(
                    USDT_ARG_UNSUPPORTED,
                    span,
                    format!("cannot read `{}` of {}: {e}", self.name(), cx.attach.name),
                )
                .with_label("argument in an unsupported location")
                .with_help(format!("the probe's arguments are `{spec}`"))),
                None => Err(cx.unsupported(span, self.name())),
            };
        }
        let offset = match cx.layout {
            ContextLayout::PtRegs => PT_REGS_ARGS.get(usize::from(N)).copied(),
            ContextLayout::RawArgs => Some(8 * i32::from(N)),
            ContextLayout::None
            | ContextLayout::TracepointRecord
            | ContextLayout::OwnedRecord
            | ContextLayout::SyscallRegs
            | ContextLayout::Iterator => None,
        };
        let Some(offset) = offset else {
            return Err(cx.unsupported(span, self.name()));
        };
        let ctx = cx.ctx();
        Ok(Val::Int(cx.load(ctx, offset, Width::W64)))
    }
}

/// Code of a USDT argument whose location sonde cannot read.
pub const USDT_ARG_UNSUPPORTED: &str = "sonde::lower::usdt_arg_unsupported";

/// Offsets in x86-64 `struct pt_regs` of the argument registers di, si, dx, cx, r8, r9.
pub(super) const PT_REGS_ARGS: [i32; 6] = [112, 104, 96, 88, 72, 64];
/// Size of x86-64 `struct pt_regs` (21 registers).
pub(super) const PT_REGS_SIZE: u32 = 168;
/// Offset of `ax` (the return value) in x86-64 `struct pt_regs`.
const PT_REGS_AX: i32 = 80;

/// `retval`: the return value in return probes.
pub struct Retval;

impl Builtin for Retval {
    fn name(&self) -> &'static str {
        "retval"
    }
    fn doc(&self) -> &'static str {
        "Return value of the traced function (kretprobe, uretprobe, fexit)"
    }
    fn check(&self, ctx: &ProbeContext, span: Span) -> Result<Type, Diagnostic> {
        ctx.retval.clone().ok_or_else(|| {
            unavailable(
                "retval",
                ctx,
                span,
                "`retval` is available in kretprobe, uretprobe and fexit probes",
            )
        })
    }
}

impl BuiltinBackend for Retval {
    fn lower(&self, cx: &mut LowerCx<'_>, ty: &Type, span: Span) -> Result<Val, Diagnostic> {
        if cx.layout != ContextLayout::PtRegs {
            return Err(cx.unsupported(span, "`retval` here"));
        }
        let ctx = cx.ctx();
        let raw = cx.load(ctx, PT_REGS_AX, Width::W64);
        Ok(Val::Int(cx.truncate(raw, ty)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::builtins::BUILTIN_UNAVAILABLE;
    use sonde_lang::types::Record;
    use std::sync::Arc;

    fn uprobe() -> ProbeContext {
        ProbeContext {
            arg_regs: 6,
            user: true,
            func: Some("readline".into()),
            ..ProbeContext::bare("uprobe")
        }
    }

    #[test]
    fn arg_registers() {
        let s = Span::new(5, 9);
        assert_eq!(ARG0.check(&uprobe(), s).unwrap(), Type::U64);
        assert_eq!(ARG5.check(&uprobe(), s).unwrap(), Type::U64);
        let e = ARG6.check(&uprobe(), s).unwrap_err();
        assert_eq!(e.code, BUILTIN_UNAVAILABLE);
        assert_eq!(e.span, s);
        assert_eq!(
            e.help.as_deref(),
            Some("only 6 arguments can be read here: arg0..arg5")
        );
        let e = ARG0.check(&ProbeContext::bare("interval"), s).unwrap_err();
        assert_eq!(e.message, "`arg0` is not available in `interval` probes");
        let ret = ProbeContext {
            retval: Some(Type::U64),
            ..ProbeContext::bare("uretprobe")
        };
        assert!(
            ARG1.check(&ret, s)
                .unwrap_err()
                .help
                .unwrap()
                .contains("retval")
        );
        assert_eq!(ARG9.name(), "arg9");
    }

    #[test]
    fn func_args_retval_depend_on_context() {
        let s = Span::default();
        assert_eq!(Func.check(&uprobe(), s).unwrap(), Type::Str { size: 64 });
        assert_eq!(
            Func.check(&ProbeContext::bare("tracepoint"), s)
                .unwrap_err()
                .code,
            BUILTIN_UNAVAILABLE
        );
        assert_eq!(
            Retval.check(&uprobe(), s).unwrap_err().code,
            BUILTIN_UNAVAILABLE
        );
        let ret = ProbeContext {
            retval: Some(Type::U64),
            ..ProbeContext::bare("uretprobe")
        };
        assert_eq!(Retval.check(&ret, s).unwrap(), Type::U64);
        let rec = Arc::new(Record {
            name: "tracepoint:a:b".into(),
            size: 16,
            fields: vec![],
            is_union: false,
        });
        let tp = ProbeContext {
            args: Some(rec.clone()),
            ..ProbeContext::bare("tracepoint")
        };
        assert_eq!(Args.check(&tp, s).unwrap(), Type::Record(rec));
        let e = Args.check(&uprobe(), s).unwrap_err();
        assert!(e.help.unwrap().contains("arg0..arg5"));
        assert_eq!(
            Probe.check(&tp, s).unwrap(),
            Type::Str {
                size: PROBE_STR_SIZE
            }
        );
    }

    #[test]
    fn name_sizes() {
        assert_eq!(name_str_size(0), 64);
        assert_eq!(name_str_size(63), 64);
        assert_eq!(name_str_size(64), 128);
    }
}
