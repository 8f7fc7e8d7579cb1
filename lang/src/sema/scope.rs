//! Block scopes of scratch variables (bpftrace 0.22+: a `$x` defined inside a block is not
//! visible after it; an inner block sees the variables of the blocks around it).

use crate::span::Span;
use crate::types::Type;
use std::collections::HashMap;

/// What is known about one scratch variable.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum VarSlot {
    /// Defined with this type at this place.
    Typed(Type, Span),
    /// Declared by `let $x;` without a type or value: the first assignment fixes the type.
    Declared(Span),
    /// Its definition had an error: uses stay silent so the error does not cascade.
    Poisoned,
}

/// A stack of block scopes.
#[derive(Debug, Default)]
pub(crate) struct Scopes {
    stack: Vec<HashMap<String, VarSlot>>,
    /// Variables whose block has ended, with where they were defined (for diagnostics).
    ended: HashMap<String, Span>,
}

impl Scopes {
    /// Enters a block.
    pub fn push(&mut self) {
        self.stack.push(HashMap::new());
    }

    /// Leaves a block, forgetting its variables.
    /// Returns the variables of the ended scope that were declared (`let $x;`) and never
    /// assigned, with where they were declared.
    pub fn pop(&mut self) -> Vec<(String, Span)> {
        let mut unassigned = Vec::new();
        for (name, slot) in self.stack.pop().unwrap_or_default() {
            if let VarSlot::Declared(at) = &slot {
                unassigned.push((name.clone(), *at));
            }
            if let VarSlot::Typed(_, at) | VarSlot::Declared(at) = slot {
                self.ended.insert(name, at);
            }
        }
        unassigned.sort_by_key(|(_, at)| at.start);
        unassigned
    }

    /// Where `name` was defined in a block that has ended, if it was.
    pub fn ended(&self, name: &str) -> Option<Span> {
        self.ended.get(name).copied()
    }

    /// The variable visible under `name`, innermost first.
    pub fn get(&self, name: &str) -> Option<&VarSlot> {
        self.stack.iter().rev().find_map(|s| s.get(name))
    }

    /// Replaces the slot of the visible variable `name`, or defines it in the innermost scope.
    pub fn set(&mut self, name: &str, slot: VarSlot) {
        for s in self.stack.iter_mut().rev() {
            if let Some(v) = s.get_mut(name) {
                *v = slot;
                return;
            }
        }
        self.define(name, slot);
    }

    /// Defines `name` in the innermost scope.
    pub fn define(&mut self, name: &str, slot: VarSlot) {
        if self.stack.is_empty() {
            self.push();
        }
        if let Some(s) = self.stack.last_mut() {
            s.insert(name.to_string(), slot);
        }
    }

    /// Names of all visible variables (for suggestions).
    pub fn visible(&self) -> Vec<String> {
        let mut names: Vec<String> = self.stack.iter().flat_map(|s| s.keys().cloned()).collect();
        names.sort();
        names.dedup();
        names
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inner_scope_ends() {
        let mut s = Scopes::default();
        s.push();
        s.define("a", VarSlot::Typed(Type::I64, Span::new(0, 1)));
        s.push();
        s.define("b", VarSlot::Poisoned);
        s.set("a", VarSlot::Typed(Type::U64, Span::new(0, 1)));
        assert_eq!(s.visible(), ["a", "b"]);
        s.pop();
        assert_eq!(s.get("b"), None);
        assert_eq!(
            s.get("a"),
            Some(&VarSlot::Typed(Type::U64, Span::new(0, 1)))
        );
    }
}
