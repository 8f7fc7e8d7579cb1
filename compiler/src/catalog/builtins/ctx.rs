//! `ctx`: the probe's typed context. In an iterator probe it is the iterator's
//! `struct bpf_iter__<name>` (`ctx.task`, `ctx.fd`, `ctx.file`, `ctx.vma`, ...), typed from
//! BTF and read with direct loads (see `ContextLayout::Iterator`).

use super::unavailable;
use crate::catalog::BuiltinBackend;
use crate::context::ContextLayout;
use crate::lower::cx::{LowerCx, PlaceSpace, Val};
use sonde_lang::catalog::{Builtin, ProbeContext};
use sonde_lang::diag::Diagnostic;
use sonde_lang::span::Span;
use sonde_lang::types::Type;

/// `ctx`.
pub struct Ctx;

impl Builtin for Ctx {
    fn name(&self) -> &'static str {
        "ctx"
    }
    fn doc(&self) -> &'static str {
        "The probe's context: in iter probes the iterator's struct bpf_iter__NAME (ctx.task, ctx.file, ...)"
    }
    fn check(&self, ctx: &ProbeContext, span: Span) -> Result<Type, Diagnostic> {
        match &ctx.ctx {
            Some(t) => Ok(t.clone()),
            None => Err(unavailable(
                "ctx",
                ctx,
                span,
                "`ctx` is the context of iter probes (`iter:task { printf(\"%s\\n\", ctx.task.comm); }`); tracepoints read their fields as `args.NAME`, other probes their arguments as arg0..argN",
            )),
        }
    }
}

impl BuiltinBackend for Ctx {
    fn lower(&self, cx: &mut LowerCx<'_>, _: &Type, span: Span) -> Result<Val, Diagnostic> {
        match cx.layout {
            ContextLayout::Iterator => Ok(Val::Place {
                base: cx.ctx(),
                offset: 0,
                space: PlaceSpace::Ctx,
            }),
            _ => Err(cx.unsupported(span, "`ctx` here")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_lang::ctypes::opaque_record;
    use sonde_lang::kernel::RecordKind;

    #[test]
    fn typed_in_iterators_only() {
        let s = Span::new(0, 3);
        let rec = Type::Record(opaque_record(RecordKind::Struct, "bpf_iter__task"));
        let iter = ProbeContext {
            ctx: Some(rec.clone()),
            ..ProbeContext::bare("iter")
        };
        assert_eq!(Ctx.check(&iter, s).unwrap(), rec);
        let e = Ctx.check(&ProbeContext::bare("tracepoint"), s).unwrap_err();
        assert_eq!(e.code, super::super::BUILTIN_UNAVAILABLE);
        assert!(e.help.as_deref().unwrap().contains("args.NAME"));
    }
}
