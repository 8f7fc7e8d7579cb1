//! `typeof(...)` where a type goes (bpftrace 0.26): `let $y: typeof($x)`, `(typeof(@m))v`.
//!
//! - `typeof(T)` of a type is `T` (the parser unwraps it).
//! - `typeof(expr)` is the type of `expr`, checked as any expression but never evaluated:
//!   the lowering never sees it. A map assigned inside it is `sonde::sema::typeof_map_assign`.
//! - `typeof(@m)` of a map with keys is its key type (a tuple for several keys), of a map
//!   without keys its value type; `typeof(@m[k])` is the value type.
//! - `let $y: typeof($x)` where `$x` is declared by `let $x;` and has no type yet ties the
//!   two: whichever is assigned first gives its type to the other.
//! - `sizeof(typeof(x))` is a call of a function `typeof`, refused (as bpftrace does).

use super::probe::ProbeChecker;
use super::scope::VarSlot;
use crate::ast::{Expr, ExprKind, TypeExpr};
use crate::types::Type;

impl ProbeChecker<'_, '_> {
    /// The type `typeof(e)` names.
    pub fn typeof_type(&mut self, e: &Expr) -> Option<Type> {
        if let ExprKind::Map { name, keys } = &e.kind
            && keys.is_empty()
        {
            // The key as the whole program uses it (the previous pass saw every use).
            let prior = self.g.maps.prior.get(name).and_then(|s| s.key.clone());
            match prior.or_else(|| self.g.maps.key(name)) {
                Some(Some(key)) => return self.set(e, key),
                Some(None) => {}
                // Not known yet in the first (muted) pass: reading it would fix it as a
                // map without keys.
                None if self.g.diags.muted => return None,
                None => {}
            }
        }
        self.typeof_depth += 1;
        let t = self.expr(e);
        self.typeof_depth -= 1;
        t
    }

    /// The variable `$x` when `te` is `typeof($x)` and `$x` is declared without a type yet.
    pub fn untyped_typeof_var(&self, te: &TypeExpr) -> Option<String> {
        match &te.typeof_expr()?.kind {
            ExprKind::Var(n) if matches!(self.scopes.get(n), Some(VarSlot::Declared(_))) => {
                Some(n.clone())
            }
            _ => None,
        }
    }

    /// `name` just got type `t`: gives it to the untyped variables tied to it, and so on.
    pub fn resolve_typeof_ties(&mut self, name: &str, t: &Type) {
        let mut pending = vec![name.to_string()];
        while let Some(n) = pending.pop() {
            let (tied, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.typeof_ties)
                .into_iter()
                .partition(|(a, b)| *a == n || *b == n);
            self.typeof_ties = rest;
            for (a, b) in tied {
                let other = if a == n { b } else { a };
                if let Some(VarSlot::Declared(at)) = self.scopes.get(&other).cloned() {
                    self.table
                        .vars
                        .entry(other.clone())
                        .or_insert_with(|| t.clone());
                    self.scopes.set(&other, VarSlot::Typed(t.clone(), at));
                    pending.push(other);
                }
            }
        }
    }
}
