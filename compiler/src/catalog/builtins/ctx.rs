//! `ctx`: the probe's typed context. In an iterator probe it is the iterator's
//! `struct bpf_iter__<name>` (`ctx.task`, `ctx.fd`, `ctx.file`, `ctx.vma`, ...), typed from
//! BTF and read with direct loads (see `ContextLayout::Iterator`). In other kernel probes it
//! is the program's context pointer as a `void *` (bpftrace's `(struct x *)ctx`).

use super::unavailable;
use crate::catalog::BuiltinBackend;
use crate::context::ContextLayout;
use crate::lower::cx::{LowerCx, PlaceSpace, Val};
use sonde_lang::catalog::{Builtin, ProbeContext};
use sonde_lang::diag::Diagnostic;
use sonde_lang::span::Span;
use sonde_lang::types::{AddrSpace, Type};

/// Providers of the userspace engine, which have no kernel context.
const USERSPACE: &[&str] = &["input", "replay"];

/// `ctx`.
pub struct Ctx;

impl Builtin for Ctx {
    fn name(&self) -> &'static str {
        "ctx"
    }
    fn doc(&self) -> &'static str {
        "The probe's context: in iter probes the iterator's struct bpf_iter__NAME (ctx.task, ctx.file, ...); in other kernel probes the program's context pointer (void *)"
    }
    fn check(&self, ctx: &ProbeContext, span: Span) -> Result<Type, Diagnostic> {
        match &ctx.ctx {
            Some(t) => Ok(t.clone()),
            None if !USERSPACE.contains(&ctx.provider) => Ok(Type::Ptr {
                pointee: Box::new(Type::Void),
                space: AddrSpace::Kernel,
            }),
            None => Err(unavailable(
                "ctx",
                ctx,
                span,
                "`ctx` is the context of iter probes (`iter:task { printf(\"%s\\n\", ctx.task.comm); }`) and the kernel's context of other kernel probes; input and replay probes have none",
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
            ContextLayout::OwnedRecord => Err(cx.unsupported(span, "`ctx` here")),
            // The program's context pointer itself, as bpftrace gives it (`(struct x *)ctx`).
            _ => Ok(Val::Int(cx.ctx())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_lang::ctypes::opaque_record;
    use sonde_lang::kernel::RecordKind;

    #[test]
    fn typed_in_iterators_a_pointer_elsewhere() {
        let s = Span::new(0, 3);
        let rec = Type::Record(opaque_record(RecordKind::Struct, "bpf_iter__task"));
        let iter = ProbeContext {
            ctx: Some(rec.clone()),
            ..ProbeContext::bare("iter")
        };
        assert_eq!(Ctx.check(&iter, s).unwrap(), rec);
        // Other kernel probes: the context pointer; the userspace engine's probes: none.
        assert_eq!(
            Ctx.check(&ProbeContext::bare("tracepoint"), s).unwrap(),
            Type::Ptr {
                pointee: Box::new(Type::Void),
                space: AddrSpace::Kernel
            }
        );
        let e = Ctx.check(&ProbeContext::bare("input"), s).unwrap_err();
        assert_eq!(e.code, super::super::BUILTIN_UNAVAILABLE);
        assert!(e.help.as_deref().unwrap().contains("input and replay"));
    }
}
