//! Declared integer widths: sonde stores an integer scratch variable or map value in 64 bits,
//! but bpftrace keeps the type the script gave it (`$x = (uint32)v` is a `uint32`), and what
//! depends on a width (`bswap`, `sizeof`) must see that one. The width of a variable or map
//! is that of the widest integer assigned to it (`=` and `let`; `+=` and `++` keep it); a
//! read of it is recorded with that width when it is narrower than 64 bits.

use crate::ast::{Expr, ExprId, ExprKind, UnOp};
use crate::types::Type;
use std::collections::HashMap;

/// The width bpftrace 0.26 gives an integer literal (`5`, `-5`): its smallest signed type
/// (`1` is an `int8`, `255` an `int16`), 64 bits past `i64::MAX`; `None` for anything else.
pub fn literal_bits(e: &Expr) -> Option<u8> {
    let smallest = |v: i128| match v {
        -0x80..=0x7f => 8,
        -0x8000..=0x7fff => 16,
        -0x8000_0000..=0x7fff_ffff => 32,
        _ => 64,
    };
    match &e.kind {
        ExprKind::Int(v) => Some(smallest(i128::from(*v))),
        ExprKind::Unary {
            op: UnOp::Neg,
            expr,
        } => match &expr.kind {
            ExprKind::Int(v) => Some(smallest(-i128::from(*v))),
            _ => None,
        },
        _ => None,
    }
}

/// The declared type of assigning `value` (of checked type `t`): a literal's own width, the
/// declared width of a variable (in `vars`) or map (in `maps`) read, else `t`.
pub(crate) fn assigned_type(value: &Expr, t: &Type, vars: &Widths, maps: &Widths) -> Type {
    let Type::Int { signed, .. } = t else {
        return t.clone();
    };
    let bits = match &value.kind {
        ExprKind::Var(name) => vars.narrow(name),
        ExprKind::Map { name, .. } => maps.narrow(name),
        _ => literal_bits(value),
    };
    match bits {
        Some(bits) => Type::Int {
            bits,
            signed: *signed || literal_bits(value).is_some(),
        },
        None => t.clone(),
    }
}

/// The widest integer assigned to each name (a variable's or a map's).
#[derive(Clone, Debug, Default)]
pub(crate) struct Widths {
    bits: HashMap<String, u8>,
}

impl Widths {
    /// Records that a value of type `t` is assigned to `name` (anything but an integer
    /// counts as 64 bits: no narrower width is declared).
    pub fn assigned(&mut self, name: &str, t: &Type) {
        let b = match t {
            Type::Int { bits, .. } => *bits,
            _ => 64,
        };
        let e = self.bits.entry(name.to_string()).or_insert(b);
        *e = (*e).max(b);
    }

    /// The declared width of `name` when narrower than 64 bits.
    pub fn narrow(&self, name: &str) -> Option<u8> {
        self.bits.get(name).copied().filter(|b| *b < 64)
    }
}

/// Reads of variables and maps in one probe, resolved to widths once the probe is checked
/// (a variable's later assignments count too).
#[derive(Clone, Debug, Default)]
pub(crate) struct Reads {
    /// Variables read: the expression and the variable's name.
    pub vars: Vec<(ExprId, String)>,
    /// Maps read: the expression and the map's name.
    pub maps: Vec<(ExprId, String)>,
}

impl Reads {
    /// The narrow widths of the reads: variables' from `vars`, maps' from `maps`.
    pub fn resolve(&self, vars: &Widths, maps: &Widths) -> HashMap<ExprId, u8> {
        let var = self
            .vars
            .iter()
            .filter_map(|(id, n)| Some((*id, vars.narrow(n)?)));
        let map = self
            .maps
            .iter()
            .filter_map(|(id, n)| Some((*id, maps.narrow(n)?)));
        var.chain(map).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_widest_assignment_is_the_width() {
        let mut w = Widths::default();
        w.assigned(
            "x",
            &Type::Int {
                bits: 16,
                signed: false,
            },
        );
        assert_eq!(w.narrow("x"), Some(16));
        w.assigned(
            "x",
            &Type::Int {
                bits: 32,
                signed: true,
            },
        );
        w.assigned(
            "x",
            &Type::Int {
                bits: 8,
                signed: true,
            },
        );
        assert_eq!(w.narrow("x"), Some(32));
        w.assigned("x", &Type::U64);
        assert_eq!(w.narrow("x"), None);
        w.assigned("s", &Type::Str { size: 4 });
        assert_eq!(w.narrow("s"), None);
        assert_eq!(w.narrow("never"), None);
    }
}
