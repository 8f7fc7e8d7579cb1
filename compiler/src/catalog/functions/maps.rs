//! Map operations: `delete`, `clear`, `zero`, `len`, `has_key` and `find`. The map arguments
//! are checked syntactically (a `@name` expression); key types are unified with the map by the
//! checker. `find`'s third argument is an out-parameter (`Function::out_args`): the checker
//! assigns it the map's value type, and the lowering writes it only when the key is found.

use super::args::Args;
use super::function;
use crate::ir::{Cond, Operand};
use crate::lower::cx::{LowerCall, LowerCx, Val};
use sonde_lang::ast::ExprKind;
use sonde_lang::catalog::CallCheck;
use sonde_lang::diag::Diagnostic;
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
            return Ok(crate::lower::cx::Val::Int(cx.imm(1)));
        }
        Ok(crate::lower::cx::Val::Int(crate::lower::maps::delete(cx, map, key)))
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
        Ok(crate::lower::cx::Val::None)
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
        Ok(crate::lower::cx::Val::None)
    }
);

/// True for `kstack`/`ustack` themselves (the builtins, or the functions with a mode or a
/// frame limit), not a stack kept in a variable or map.
fn is_stack_taken(e: &sonde_lang::ast::Expr) -> bool {
    match &e.kind {
        ExprKind::Ident(n) => n == "kstack" || n == "ustack",
        ExprKind::Call { name, .. } => name.name == "kstack" || name.name == "ustack",
        _ => false,
    }
}

function!(
    /// `len(@m)` / `len(ustack)`: the number of elements of a map or frames of a stack.
    Len, "len", "len(@map) | len(stack)", "Number of elements of a map, or of frames of a stack", unsafe = false,
    |call| {
        let a = Args::new(call, "len(@map) | len(stack)");
        a.arity(1, 1)?;
        if a.whole_map(0).is_err() && !matches!(a.ty(0), Type::Stack { .. }) {
            return Err(a.error(0, "a map such as `@name` or a stack"));
        }
        if let Some(Some(m)) = call.map_args.first()
            && m.key.is_none()
        {
            return Err(Diagnostic::error(
                super::args::ARG_TYPE,
                a.span(0),
                "call to len() expects a map with explicit keys (non-scalar map)",
            )
            .with_label("a map without keys")
            .with_help("a map without keys holds one value: len() counts the elements of a map with keys"));
        }
        // The frames are counted where the stack is taken: `len(kstack)`, `len(ustack(perf, 5))`.
        if matches!(a.ty(0), Type::Stack { .. }) && !is_stack_taken(&call.args[0]) {
            return Err(a.error(0, "`kstack` or `ustack` itself").with_help(
                "sonde keeps a stored stack as the id of its frames in the stack map, which programs cannot read back: take `len(kstack)` where the stack is taken",
            ));
        }
        Ok(Type::U64)
    },
    lower |cx, call| {
        let ExprKind::Map { name, .. } = &call.args[0].kind else {
            let ty = cx.type_of(&call.args[0]);
            return Ok(crate::lower::cx::Val::Int(crate::catalog::builtins::stack::lower_stack_len(cx, &ty)));
        };
        let map = cx.maps.user(name).ok_or_else(|| cx.unsupported(call.span, "this map"))?;
        Ok(crate::lower::cx::Val::Int(cx.lower_map_len(map)))
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
            let mut d = a.error(0, "a map with keys").with_help(format!(
                "`@{name}` has no keys: test its value instead (`if (@{name})`)"
            ));
            d.message = "call to has_key() expects a map with explicit keys (non-scalar map)".into();
            return Err(d);
        }
        // A key of another type can never be there: bpftrace's error.
        if let Some(Some(m)) = call.map_args.first()
            && let Some(key) = &m.key
            && !key_fits(key, a.ty(1))
        {
            return Err(Diagnostic::error(
                super::args::ARG_TYPE,
                a.span(1),
                format!(
                    "Argument mismatch for @{name}: trying to access with arguments: '{}' when map expects arguments: '{key}'",
                    a.ty(1)
                ),
            )
            .with_label("not a key of this map"));
        }
        Ok(Type::Bool)
    },
    lower |cx, call| {
        let ExprKind::Map { name, .. } = &call.args[0].kind else { return Err(cx.unsupported(call.span, "this has_key()")) };
        let key = cx.lower_key(name, &call.args[1..2])?;
        let map = cx.maps.user(name).ok_or_else(|| cx.unsupported(call.span, "this map"))?;
        let p = crate::lower::maps::lookup(cx, map, key);
        Ok(crate::lower::cx::Val::Int(cx.flag(crate::ir::Cond::Ne, p, crate::ir::Operand::Imm(0))))
    }
);

/// `find(@m, key, $v)`: whether the map holds `key`, and if so its value written into `$v`
/// (bpftrace 0.26's `boolean find(map m, mapkey k, mapvalue result)`: one lookup instead of
/// `has_key` and a read; `$v` is left as it was when the key is absent).
pub struct Find;

/// `find`'s signature, as diagnostics quote it.
const FIND_SIG: &str = "find(@map, key, $var)";

impl sonde_lang::catalog::Function for Find {
    fn name(&self) -> &'static str {
        "find"
    }
    fn signature(&self) -> &'static str {
        FIND_SIG
    }
    fn doc(&self) -> &'static str {
        "True when the map has this key, whose value it then writes into the scratch variable `$var` (left unchanged otherwise)"
    }
    fn check(&self, call: &CallCheck<'_>) -> Result<Type, Diagnostic> {
        let a = Args::new(call, FIND_SIG);
        a.arity(3, 3)?;
        let name = a.whole_map(0)?;
        let Some(Some(m)) = call.map_args.first() else {
            return Err(a.error(0, "a map such as `@name`"));
        };
        let Some(key) = &m.key else {
            return Err(a.error(0, "a map with keys").with_help(format!(
                "`@{name}` has no keys: read its value instead (`$v = @{name}`)"
            )));
        };
        if !key_fits(key, a.ty(1)) {
            return Err(a.error(1, &format!("a key of `@{name}` ({key})")));
        }
        if matches!(a.ty(0), Type::Agg(_)) {
            return Err(a
                .error(0, "a map whose values can be read")
                .with_help(format!(
                    "the values of `@{name}` are aggregations that print but have no value to store"
                )));
        }
        Ok(Type::Bool)
    }
    fn out_args(&self) -> &'static [usize] {
        &[2]
    }
    fn out_type(&self, call: &CallCheck<'_>, index: usize) -> Option<Type> {
        // The map's value as read (`count()` and friends as int64).
        (index == 2)
            .then(|| call.arg_types.first().cloned())
            .flatten()
    }
}

impl crate::catalog::FunctionBackend for Find {
    fn lower(&self, cx: &mut LowerCx<'_>, call: &LowerCall<'_>) -> Result<Val, Diagnostic> {
        let (ExprKind::Map { name, .. }, Some(var)) = (&call.args[0].kind, call.args.get(2)) else {
            return Err(cx.unsupported(call.span, "this find()"));
        };
        let key = cx.lower_key(name, &call.args[1..2])?;
        let map = cx
            .maps
            .user(name)
            .ok_or_else(|| cx.unsupported(call.span, "this map"))?;
        let p = crate::lower::maps::lookup(cx, map, key);
        let found = cx.flag(Cond::Ne, p, Operand::Imm(0));
        let done = cx.label();
        cx.branch(Cond::Eq, p, Operand::Imm(0), done);
        // The value read from the one lookup (an aggregation's: its total over the CPUs).
        let from = cx.type_of(&call.args[0]);
        let stored = match &cx.maps.spec(map).role {
            crate::program::MapRole::User { value, .. } => value.clone(),
            _ => return Err(cx.unsupported(call.span, "this map")),
        };
        let value = match &stored {
            Type::Agg(kind) => Val::Int(crate::lower::maps::combine_cpus(cx, map, key, kind)?),
            ty if crate::lower::cx::is_scalar(ty) => {
                let v = cx.load(p, 0, crate::ir::Width::from_bytes(ty.size().clamp(1, 8)));
                Val::Int(cx.normalize(v, ty))
            }
            ty => Val::Mem {
                ptr: p,
                size: ty.size(),
            },
        };
        let from = if matches!(stored, Type::Agg(_)) {
            from
        } else {
            stored
        };
        cx.assign_to(var, value, &from)?;
        cx.place_label(done);
        Ok(Val::Int(found))
    }
}

/// True when a key of type `given` can look up a map whose keys are `key`: integers for
/// integers, strings for strings (cut or padded to the key's size), tuples element-wise.
fn key_fits(key: &Type, given: &Type) -> bool {
    match (key, given) {
        (k, g) if k.is_integer() && g.is_integer() => true,
        (Type::Str { .. }, Type::Str { .. }) | (Type::Buf { .. }, Type::Buf { .. }) => true,
        (Type::Tuple(k), Type::Tuple(g)) => {
            k.len() == g.len() && k.iter().zip(g).all(|(k, g)| key_fits(k, g))
        }
        (k, g) => k == g,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::functions::args::ARG_TYPE;
    use crate::catalog::functions::testutil::{arg_span, check, int, lit, map, scalar_map, val};
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
    fn find_rule() {
        let out = val(Type::Void);
        assert_eq!(
            check(&Find, vec![map("m", 0), int(3), out.clone()]).unwrap(),
            Type::Bool
        );
        let e = check(&Find, vec![scalar_map("x"), int(3), out.clone()]).unwrap_err();
        assert_eq!((e.code, e.span), (ARG_TYPE, arg_span(0)));
        let e = check(&Find, vec![map("m", 0), lit("k"), out.clone()]).unwrap_err();
        assert_eq!((e.code, e.span), (ARG_TYPE, arg_span(1)));
        let e = check(&Find, vec![val(Type::U64), int(3), out.clone()]).unwrap_err();
        assert_eq!((e.code, e.span), (ARG_TYPE, arg_span(0)));
        assert_eq!(
            check(&Find, vec![map("m", 0), int(3)]).unwrap_err().code,
            "sonde::sema::arity"
        );
        use sonde_lang::catalog::Function;
        assert_eq!(Find.out_args(), &[2]);
    }

    #[test]
    fn find_keys() {
        let s = |n| Type::Str { size: n };
        assert!(key_fits(
            &Type::U64,
            &Type::Int {
                bits: 8,
                signed: true
            }
        ));
        assert!(key_fits(&s(3), &s(30)));
        let key = Type::Tuple(vec![
            Type::I64,
            Type::Tuple(vec![
                s(6),
                Type::Int {
                    bits: 8,
                    signed: true,
                },
            ]),
        ]);
        assert!(key_fits(
            &key,
            &Type::Tuple(vec![
                Type::U64,
                Type::Tuple(vec![
                    s(4),
                    Type::Int {
                        bits: 16,
                        signed: false
                    }
                ])
            ])
        ));
        assert!(!key_fits(&key, &Type::Tuple(vec![Type::U64, Type::U64])));
        assert!(!key_fits(
            &Type::Tuple(vec![Type::I64, Type::I64]),
            &Type::I64
        ));
        assert!(!key_fits(&s(3), &Type::I64));
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
        let ustack = (ExprKind::Ident("ustack".into()), stack.clone());
        assert_eq!(check(&Len, vec![ustack]).unwrap(), Type::U64);
        // A stack kept in a variable: its frames cannot be counted.
        let e = check(&Len, vec![val(stack)]).unwrap_err();
        assert_eq!(
            e.message,
            "argument 1 of `len` must be `kstack` or `ustack` itself"
        );
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
