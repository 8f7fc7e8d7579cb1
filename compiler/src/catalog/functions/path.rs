//! `path(p[, size])`: the name of a kernel `struct path` (`ctx.file.f_path` in
//! `iter:task_file`), with the `bpf_d_path` helper. The kernel allows the helper in iterator
//! programs and in fentry/fexit programs of a few functions; this kernel has no fentry, so
//! elsewhere the call is refused with [`unavailable::PATH`]'s reason.
//!
//! The argument must be the BTF-typed object itself (a field of an iterator's object, or a
//! pointer to one): the verifier checks that it points at a `struct path`. As in bpftrace, the
//! result is a string of `max_strlen` bytes, of which at most `size` are filled; a name longer
//! than that is cut at its front.

use super::args::Args;
use super::function;
use super::unavailable;
use crate::ir::{Intrinsic, Operand};
use crate::lower::cx::Val;
use sonde_lang::ast::{Expr, ExprKind};
use sonde_lang::types::Type;

const SIGNATURE: &str = "path(struct path *p[, size])";

/// True for an expression the verifier sees as a BTF object: a field of `ctx` (`ctx.file`),
/// or with `by_value`, a field held by value in one (`ctx.file.f_path`). A pointer read from
/// kernel memory further down is a plain number to it.
fn is_btf_object(e: &Expr, by_value: bool) -> bool {
    let ctx_field = |e: &Expr| matches!(&e.kind, ExprKind::Field { base, .. } if matches!(&base.kind, ExprKind::Ident(n) if n == "ctx"));
    match &e.kind {
        ExprKind::Field { base, .. } if by_value => ctx_field(base),
        _ => !by_value && ctx_field(e),
    }
}

/// True for `struct path` and pointers to it.
fn is_path(t: &Type) -> bool {
    let record = match t {
        Type::Ptr { pointee, .. } => pointee.as_ref(),
        other => other,
    };
    matches!(record, Type::Record(r) if r.name == "struct path")
}

function!(
    /// `path(p[, size])`: the file name of a `struct path`.
    Path, "path", "path(struct path *p[, size])",
    "Full path of a struct path, e.g. path(ctx.file.f_path) in iter:task_file (bpf_d_path; here in iter probes only: bpftrace also allows fentry/fexit, which this kernel lacks)",
    unsafe = false,
    |call| {
        if call.ctx.provider != "iter" {
            return unavailable::PATH.check(call).map_err(|d| d.with_help(
                "path() works in iter probes (`path(ctx.file.f_path)` in `iter:task_file`); elsewhere read the file name from a tracepoint, e.g. `str(args.filename)` in `tracepoint:syscalls:sys_enter_openat`",
            ));
        }
        let a = Args::new(call, SIGNATURE);
        a.arity(1, 2)?;
        if !is_path(a.ty(0)) {
            return Err(a.error(0, "a kernel `struct path` such as `ctx.file.f_path`, or a pointer to one"));
        }
        let by_value = matches!(a.ty(0), Type::Record(_));
        if !a.expr(0).is_some_and(|e| is_btf_object(e, by_value)) {
            return Err(a
                .error(0, "the `struct path` of an object the iterator hands over, such as `ctx.file.f_path`")
                .with_help("the kernel's bpf_d_path takes only objects it knows the type of: the iterator's own (`ctx.file`), not ones reached through pointers read from memory"));
        }
        if a.len() > 1 && a.const_int(1, "a constant size")? <= 0 {
            return Err(a.error(1, "a positive size"));
        }
        Ok(Type::Str { size: call.max_strlen })
    },
    lower |cx, call| {
        let size = cx.max_strlen;
        let limit = call
            .args
            .get(1)
            .and_then(|e| sonde_lang::catalog::const_int(e, cx.positional))
            .map_or(size, |n| u32::try_from(n).unwrap_or(size).min(size));
        let path = match cx.lower_expr(&call.args[0])? {
            Val::Place { base, offset, .. } => cx.offset_ptr(base, offset),
            Val::Int(r) => r,
            _ => return Err(cx.unsupported(call.span, "`path()` of this value")),
        };
        let buf = cx.alloc_zeroed(size);
        cx.call(
            Intrinsic::DPath,
            vec![Operand::Reg(path), Operand::Reg(buf), Operand::Imm(limit.into())],
        );
        Ok(Val::Mem { ptr: buf, size })
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::functions::testutil::{check, check_in, int, val};
    use sonde_lang::ast::{ExprId, Ident};
    use sonde_lang::catalog::ProbeContext;
    use sonde_lang::ctypes::opaque_record;
    use sonde_lang::kernel::RecordKind;
    use sonde_lang::span::Span;
    use sonde_lang::types::AddrSpace;

    /// `base.name` as an expression kind.
    fn field(base: ExprKind, name: &str) -> ExprKind {
        ExprKind::Field {
            base: Box::new(Expr {
                id: ExprId(0),
                kind: base,
                span: Span::new(0, 1),
            }),
            field: Ident {
                name: name.into(),
                span: Span::new(0, 1),
            },
            arrow: false,
        }
    }

    #[test]
    fn iter_probes_only_on_the_iterators_objects() {
        let e = check(&Path, vec![int(0)]).unwrap_err();
        assert_eq!(e.code, unavailable::UNAVAILABLE);
        let iter = ProbeContext::bare("iter");
        let e = check_in(&Path, &iter, vec![int(0)]).unwrap_err();
        assert_eq!(e.code, super::super::args::ARG_TYPE);
        let rec = Type::Record(opaque_record(RecordKind::Struct, "path"));
        let ptr = Type::Ptr {
            pointee: Box::new(rec.clone()),
            space: AddrSpace::Kernel,
        };
        let ctx = || ExprKind::Ident("ctx".into());
        // `ctx.file.f_path`, `ctx.path`: objects the verifier knows.
        let f_path = (field(field(ctx(), "file"), "f_path"), rec.clone());
        let t = check_in(&Path, &iter, vec![f_path.clone()]).unwrap();
        assert!(matches!(t, Type::Str { .. }), "{t:?}");
        assert!(check_in(&Path, &iter, vec![(field(ctx(), "path"), ptr.clone())]).is_ok());
        // Reached through a pointer read from memory, or a variable: refused.
        let deep = field(field(field(ctx(), "vma"), "vm_file"), "f_path");
        let e = check_in(&Path, &iter, vec![(deep, rec)]).unwrap_err();
        assert!(e.message.contains("hands over"), "{}", e.message);
        assert!(check_in(&Path, &iter, vec![val(ptr)]).is_err());
        let e = check_in(&Path, &iter, vec![f_path, int(0)]).unwrap_err();
        assert_eq!(e.code, super::super::args::ARG_TYPE);
    }
}
