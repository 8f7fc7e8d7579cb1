//! Compile-time type introspection: `sizeof`, `offsetof` and `container_of`.
//!
//! Both need the checker's cooperation for arguments that are not values: `sizeof(struct x)`
//! passes a type argument (its `arg_types` entry is the named type), and the field path of
//! `offsetof(struct x, a.b)` is read from the expression (identifiers and `.` accesses) and
//! must not be checked as an expression.

use super::args::Args;
use super::function;
use sonde_lang::ast::{Expr, ExprKind};
use sonde_lang::ctypes::is_opaque;
use sonde_lang::diag::{Diagnostic, did_you_mean};
use sonde_lang::types::Type;

/// The field path written in `offsetof`'s second argument (`a`, `a.b.c`), if it is one.
fn field_path(e: &Expr) -> Option<Vec<(String, sonde_lang::span::Span)>> {
    match &e.kind {
        ExprKind::Ident(name) => Some(vec![(name.clone(), e.span)]),
        ExprKind::Field {
            base,
            field,
            arrow: false,
        } => {
            let mut path = field_path(base)?;
            path.push((field.name.clone(), field.span));
            Some(path)
        }
        _ => None,
    }
}

function!(
    /// `sizeof(type)` / `sizeof(expr)`: the size in bytes.
    Sizeof, "sizeof", "sizeof(type | expr)", "Size in bytes of a type or of an expression's type", unsafe = false,
    |call| {
        let a = Args::new(call, "sizeof(type | expr)");
        a.arity(1, 1)?;
        match a.ty(0) {
            Type::Void => Err(a.error(0, "a type or expression with a size")),
            Type::Record(r) if is_opaque(r) => Err(a.error(0, "a complete type")
                .with_help(format!("`{}` is only declared here; its layout is unknown", r.name))),
            _ => Ok(Type::U64),
        }
    },
    lower |cx, call| {
        // `sizeof(typeof($x))` is `sizeof($x)`: the declared width of a variable.
        let arg = &call.args[0];
        let of = match &arg.kind {
            ExprKind::Type(t) if t.pointer_depth == 0 && t.array.is_none() => t.typeof_expr(),
            _ => None,
        };
        let size = cx.declared_type(of.unwrap_or(arg)).size();
        Ok(crate::lower::cx::Val::Int(cx.imm(i64::from(size))))
    }
);

function!(
    /// `offsetof(struct x, field[.sub])`: the byte offset of a field.
    Offsetof, "offsetof", "offsetof(type, field)", "Byte offset of a (nested) field in a struct or union",
    unsafe = false, unchecked = &[1],
    |call| {
        let a = Args::new(call, "offsetof(type, field)");
        a.arity(2, 2)?;
        let Some(path) = a.expr(1).and_then(field_path) else {
            return Err(a.error(1, "a field name (or a path such as `a.b`)"));
        };
        field_type(a.ty(0), path, || a.error(0, "a struct or union type with known fields"))?;
        Ok(Type::U64)
    },
    lower |cx, call| {
        let offset = field_offset(&cx.type_of(&call.args[0]), &call.args[1])
            .ok_or_else(|| cx.unsupported(call.span, "this `offsetof()` path"))?;
        Ok(crate::lower::cx::Val::Int(cx.imm(offset as i64)))
    }
);

/// The type of the field at `path` in record type `ty`; `not_record` is the error when a step
/// is not a record with known fields; an unknown field is `sonde::sema::unknown_field`.
fn field_type(
    ty: &Type,
    path: Vec<(String, sonde_lang::span::Span)>,
    not_record: impl Fn() -> Diagnostic,
) -> Result<Type, Diagnostic> {
    let mut ty = ty.clone();
    for (name, span) in path {
        let record = match &ty {
            Type::Record(r) if !is_opaque(r) => r.clone(),
            _ => return Err(not_record()),
        };
        let Some(field) = record.field(&name) else {
            let d = Diagnostic::error(
                "sonde::sema::unknown_field",
                span,
                format!("`{}` has no field `{name}`", record.name),
            )
            .with_label("no such field");
            let hint = did_you_mean(&name, record.fields.iter().map(|f| f.name.as_str()));
            return Err(match hint {
                Some(h) => d.with_help(format!("did you mean `{h}`?")),
                None => d,
            });
        };
        ty = field.ty.clone();
    }
    Ok(ty)
}

/// The byte offset of the field at path `e` in record type `ty` (checked already).
fn field_offset(ty: &Type, e: &Expr) -> Option<u64> {
    let mut ty = ty.clone();
    let mut offset = 0u64;
    for (name, _) in field_path(e)? {
        let Type::Record(r) = &ty else { return None };
        let f = r.field(&name)?;
        offset += u64::from(f.offset);
        ty = f.ty.clone();
    }
    Some(offset)
}

function!(
    /// `container_of(ptr, type, member)` (bpftrace 0.27, libbpf's macro): the pointer to the
    /// `type` whose field `member` `ptr` points at.
    ContainerOf, "container_of", "container_of(ptr, type, member)",
    "Pointer to the struct of the given type that holds the member ptr points at", unsafe = false, unchecked = &[2],
    |call| {
        let a = Args::new(call, "container_of(ptr, type, member)");
        a.arity(3, 3)?;
        let space = match a.ty(0) {
            Type::Ptr { space, .. } => *space,
            t if t.is_integer() => sonde_lang::types::AddrSpace::Unknown,
            _ => return Err(a.error(0, "a pointer to a member")),
        };
        let Some(path) = a.expr(2).and_then(field_path) else {
            return Err(a.error(2, "a field name (or a path such as `a.b`)"));
        };
        let record = a.ty(1).clone();
        field_type(&record, path, || a.error(1, "a struct or union type with known fields"))?;
        Ok(Type::Ptr { pointee: Box::new(record), space })
    },
    lower |cx, call| {
        let ptr = cx.lower_int(&call.args[0])?;
        let offset = field_offset(&cx.type_of(&call.args[1]), &call.args[2])
            .ok_or_else(|| cx.unsupported(call.span, "this `container_of()` member"))?;
        let r = cx.alu(crate::ir::AluOp::Sub, ptr, crate::ir::Operand::Imm(offset as i64));
        Ok(crate::lower::cx::Val::Int(r))
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::functions::args::ARG_TYPE;
    use crate::catalog::functions::testutil::{check, ident, val};
    use sonde_lang::ctypes::opaque_record;
    use sonde_lang::kernel::RecordKind;
    use sonde_lang::types::{Field, Record};
    use std::sync::Arc;

    fn rec() -> Type {
        let field = |name: &str, offset, ty| Field {
            name: name.into(),
            offset,
            ty,
            bitfield: None,
            data_loc: false,
            nul_room: false,
        };
        Type::Record(Arc::new(Record {
            name: "struct s".into(),
            size: 16,
            fields: vec![field("a", 0, Type::U64), field("pid", 8, Type::I32)],
            is_union: false,
        }))
    }

    #[test]
    fn sizeof_rule() {
        assert_eq!(check(&Sizeof, vec![val(rec())]).unwrap(), Type::U64);
        assert_eq!(check(&Sizeof, vec![val(Type::U32)]).unwrap(), Type::U64);
        let opaque = Type::Record(opaque_record(RecordKind::Struct, "x"));
        assert_eq!(
            check(&Sizeof, vec![val(opaque)]).unwrap_err().code,
            ARG_TYPE
        );
    }

    #[test]
    fn offsetof_rule() {
        assert_eq!(
            check(&Offsetof, vec![val(rec()), ident("pid")]).unwrap(),
            Type::U64
        );
        let e = check(&Offsetof, vec![val(rec()), ident("pis")]).unwrap_err();
        assert_eq!(e.code, "sonde::sema::unknown_field");
        assert_eq!(e.help.as_deref(), Some("did you mean `pid`?"));
        assert_eq!(
            check(&Offsetof, vec![val(Type::U64), ident("a")])
                .unwrap_err()
                .code,
            ARG_TYPE
        );
        assert_eq!(
            check(&Offsetof, vec![val(rec()), val(Type::U64)])
                .unwrap_err()
                .code,
            ARG_TYPE
        );
    }
}
