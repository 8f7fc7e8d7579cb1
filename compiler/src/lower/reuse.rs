//! Values computed once in a probe and reused while valid: scalar map elements read with a
//! key that cannot change during the run, and per-event builtins (`tid`, `pid`, ...). An
//! entry stays valid until its map is written ([`LowerCx::forget_map`]) or a label is placed
//! that a jump from before it does not reach ([`LowerCx::place_label`]).

use super::cx::LowerCx;
use crate::ir::{MapRef, VReg};
use sonde_lang::ast::{Expr, ExprKind};

/// What a remembered register holds ([`LowerCx::remember`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reuse {
    /// The value of a scalar map element, by map and the text of a key that cannot change
    /// during the run; forgotten when the map is written.
    Read(MapRef, String),
    /// A builtin whose value cannot change during the run (`tid`, `pid`, `cpu`, ...).
    Builtin(&'static str),
}

impl LowerCx<'_> {
    /// Forgets the remembered reads of `map` (it is being written).
    pub fn forget_map(&mut self, map: MapRef) {
        self.reuse
            .retain(|r| !matches!(&r.0, Reuse::Read(m, _) if *m == map));
    }

    /// The register of a value computed before and still valid here, if any.
    pub fn reused(&self, what: &Reuse) -> Option<VReg> {
        self.reuse.iter().find(|r| &r.0 == what).map(|r| r.1)
    }

    /// Records that `reg` holds `what` from here on (see [`Reuse`]).
    pub fn remember(&mut self, what: Reuse, reg: VReg) {
        let at = self.f.insts.len();
        self.reuse.push((what, reg, at));
    }
}

/// Builtins whose value, a register, cannot change during one run of a probe.
pub(super) const STABLE_BUILTINS: &[&str] = &["pid", "tid", "uid", "gid", "cpu", "cgroup"];

/// The text of map keys whose values cannot change during one run of a probe (literals and
/// builtins of the event: `pid`, `tid`, `comm`, ...), or `None`.
pub(super) fn stable_key(keys: &[Expr]) -> Option<String> {
    // `comm` and `probe` are fine as key text, not as remembered registers (they are buffers).
    let stable = |n: &str| STABLE_BUILTINS.contains(&n) || matches!(n, "comm" | "probe");
    let mut text = String::new();
    for k in keys {
        match &k.kind {
            ExprKind::Int(n) => text.push_str(&n.to_string()),
            ExprKind::Bool(b) => text.push_str(&b.to_string()),
            ExprKind::Str(s) => text.push_str(&format!("{s:?}")),
            ExprKind::Positional(n) => text.push_str(&format!("${n}")),
            ExprKind::Ident(name) if stable(name) => text.push_str(name),
            ExprKind::Call { name, args } if args.is_empty() && stable(&name.name) => {
                text.push_str(&name.name)
            }
            _ => return None,
        }
        text.push(',');
    }
    Some(text)
}
