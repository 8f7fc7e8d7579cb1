//! Map operations: `delete`, `clear`, `zero`, `len` and `has_key`. The map arguments are
//! checked syntactically (a `@name` expression); key types are unified with the map by the
//! checker.

use super::args::Args;
use super::function;
use sonde_lang::ast::ExprKind;
use sonde_lang::types::Type;

function!(
    /// `delete(@m, key)` (and the older `delete(@m[key])`): removes one element.
    Delete, "delete", "delete(@map, key) | delete(@map[key])",
    "Removes one element of a map; true when it existed", unsafe = false,
    |call| {
        let a = Args::new(call, "delete(@map, key) | delete(@map[key])");
        a.arity(1, 2)?;
        if a.len() == 1 {
            match (a.expr(0).map(|e| &e.kind), call.map_args.first()) {
                (Some(ExprKind::Map { name, keys }), Some(Some(m))) if keys.is_empty() && m.key.is_some() => {
                    return Err(call.arity_error("delete(@map, key) | delete(@map[key])").with_help(format!(
                        "`@{name}` has keys: write `delete(@{name}, key)` to remove one element, or `clear(@{name})`"
                    )));
                }
                (Some(ExprKind::Map { .. }), _) => {}
                _ => return Err(a.error(0, "a map element such as `@name[key]`")),
            }
        } else {
            let name = a.whole_map(0)?;
            if let Some(Some(m)) = call.map_args.first()
                && m.key.is_none()
            {
                return Err(a.error(1, "nothing: the map has no keys").with_help(format!("write `delete(@{name})`")));
            }
        }
        Ok(Type::Bool)
    },
    lower |cx, call| {
        let (name, key) = match (&call.args[0].kind, call.args.get(1)) {
            (ExprKind::Map { name, keys }, None) => (name.clone(), cx.lower_key(name, keys)?),
            (ExprKind::Map { name, .. }, Some(k)) => (name.clone(), cx.lower_key(name, std::slice::from_ref(k))?),
            _ => return Err(cx.unsupported(call.span, "this delete()")),
        };
        let map = cx.maps.user(&name).ok_or_else(|| cx.unsupported(call.span, "this map"))?;
        if cx.maps.spec(map).kind == crate::program::MapKind::PerCpuArray {
            // A key-less aggregation's element is a per-CPU array slot: every CPU's copy is
            // reset from user space, like clear().
            crate::lower::events::send_word(cx, crate::program::EventSpec::ClearMap { map: name }, None);
            return Ok(crate::lower::Val::Int(cx.imm(1)));
        }
        Ok(crate::lower::Val::Int(crate::lower::maps::delete(cx, map, key)))
    }
);

function!(
    /// `clear(@m)`: removes every element.
    Clear, "clear", "clear(@map)", "Removes every element of a map", unsafe = false,
    |call| {
        let a = Args::new(call, "clear(@map)");
        a.arity(1, 1)?;
        a.whole_map(0)?;
        Ok(Type::Void)
    },
    lower |cx, call| {
        let ExprKind::Map { name, .. } = &call.args[0].kind else { return Err(cx.unsupported(call.span, "this clear()")) };
        crate::lower::events::send_word(cx, crate::program::EventSpec::ClearMap { map: name.clone() }, None);
        Ok(crate::lower::Val::None)
    }
);

function!(
    /// `zero(@m)`: sets every value to zero, keeping the keys.
    Zero, "zero", "zero(@map)", "Sets every value of a map to zero", unsafe = false,
    |call| {
        let a = Args::new(call, "zero(@map)");
        a.arity(1, 1)?;
        a.whole_map(0)?;
        Ok(Type::Void)
    },
    lower |cx, call| {
        let ExprKind::Map { name, .. } = &call.args[0].kind else { return Err(cx.unsupported(call.span, "this zero()")) };
        crate::lower::events::send_word(cx, crate::program::EventSpec::ZeroMap { map: name.clone() }, None);
        Ok(crate::lower::Val::None)
    }
);

function!(
    /// `len(@m)` / `len(ustack)`: the number of elements of a map or frames of a stack.
    Len, "len", "len(@map) | len(stack)", "Number of elements of a map, or of frames of a stack", unsafe = false,
    |call| {
        let a = Args::new(call, "len(@map) | len(stack)");
        a.arity(1, 1)?;
        if a.whole_map(0).is_err() && !matches!(a.ty(0), Type::Stack { .. }) {
            return Err(a.error(0, "a map such as `@name` or a stack"));
        }
        Ok(Type::U64)
    },
    lower |cx, call| {
        let ExprKind::Map { name, .. } = &call.args[0].kind else {
            return Err(cx.unsupported(call.span, "`len()` of a stack"));
        };
        let map = cx.maps.user(name).ok_or_else(|| cx.unsupported(call.span, "this map"))?;
        Ok(crate::lower::Val::Int(cx.lower_map_len(map)))
    }
);

function!(
    /// `has_key(@m, key)`: whether the map holds `key`.
    HasKey, "has_key", "has_key(@map, key)", "True when the map has an element with this key", unsafe = false,
    |call| {
        let a = Args::new(call, "has_key(@map, key)");
        a.arity(2, 2)?;
        let name = a.whole_map(0)?;
        // As bpftrace: a map without keys has no key to test.
        if let Some(Some(m)) = call.map_args.first()
            && m.key.is_none()
        {
            return Err(a.error(0, "a map with keys").with_help(format!(
                "`@{name}` has no keys: test its value instead (`if (@{name})`)"
            )));
        }
        Ok(Type::Bool)
    },
    lower |cx, call| {
        let ExprKind::Map { name, .. } = &call.args[0].kind else { return Err(cx.unsupported(call.span, "this has_key()")) };
        let key = cx.lower_key(name, &call.args[1..2])?;
        let map = cx.maps.user(name).ok_or_else(|| cx.unsupported(call.span, "this map"))?;
        let p = crate::lower::maps::lookup(cx, map, key);
        Ok(crate::lower::Val::Int(cx.flag(crate::ir::Cond::Ne, p, crate::ir::Operand::Imm(0))))
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::functions::args::ARG_TYPE;
    use crate::catalog::functions::testutil::{arg_span, check, int, map, scalar_map, val};
    use sonde_lang::types::StackMode;

    #[test]
    fn has_key_needs_a_map_with_keys() {
        assert_eq!(
            check(&HasKey, vec![map("m", 0), int(3)]).unwrap(),
            Type::Bool
        );
        let e = check(&HasKey, vec![scalar_map("x"), int(3)]).unwrap_err();
        assert_eq!((e.code, e.span), (ARG_TYPE, arg_span(0)));
        assert!(e.help.unwrap().contains("has no keys"));
    }

    #[test]
    fn delete_forms() {
        assert_eq!(check(&Delete, vec![map("m", 1)]).unwrap(), Type::Bool);
        assert_eq!(
            check(&Delete, vec![map("m", 0), int(3)]).unwrap(),
            Type::Bool
        );
        let e = check(&Delete, vec![map("m", 1), int(3)]).unwrap_err();
        assert_eq!((e.code, e.span), (ARG_TYPE, arg_span(0)));
        assert_eq!(
            check(&Delete, vec![val(Type::U64)]).unwrap_err().code,
            ARG_TYPE
        );
        assert_eq!(check(&Delete, vec![scalar_map("x")]).unwrap(), Type::Bool);
        assert_eq!(
            check(&Delete, vec![scalar_map("x"), int(1)])
                .unwrap_err()
                .span,
            arg_span(1)
        );
        assert_eq!(
            check(&Delete, vec![map("m", 0)]).unwrap_err().code,
            "sonde::sema::arity"
        );
    }

    #[test]
    fn whole_map_functions() {
        assert_eq!(check(&Clear, vec![map("m", 0)]).unwrap(), Type::Void);
        assert_eq!(check(&Zero, vec![map("m", 1)]).unwrap_err().code, ARG_TYPE);
        assert_eq!(
            check(&HasKey, vec![map("m", 0), int(1)]).unwrap(),
            Type::Bool
        );
        assert_eq!(check(&Len, vec![map("m", 0)]).unwrap(), Type::U64);
        let stack = Type::Stack {
            kernel: false,
            mode: StackMode::Bpftrace,
            limit: 127,
        };
        assert_eq!(check(&Len, vec![val(stack)]).unwrap(), Type::U64);
        let e = check(&Len, vec![val(Type::U64)]).unwrap_err();
        assert_eq!(
            e.message,
            "argument 1 of `len` must be a map such as `@name` or a stack"
        );
        assert_eq!(
            check(&Clear, vec![]).unwrap_err().code,
            "sonde::sema::arity"
        );
    }
}
