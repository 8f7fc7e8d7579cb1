//! Values computed once in a probe and reused while valid: scalar map elements read with a
//! key that cannot change during the run, and per-event builtins (`tid`, `pid`, ...). An
//! entry stays valid until its map is written ([`LowerCx::forget_map`]) or a label is placed
//! that a jump from before it does not reach ([`LowerCx::place_label`]).

use super::cx::{LowerCx, Val, is_scalar};
use crate::ir::{MapRef, VReg};
use sonde_lang::ast::{Expr, ExprKind, Probe, Stmt, StmtKind, UnOp};
use sonde_lang::diag::Diagnostic;
use sonde_lang::types::Type;
use std::collections::{HashMap, HashSet};

/// What a remembered register holds ([`LowerCx::remember`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reuse {
    /// The value of a scalar map element, by map and the text of a key that cannot change
    /// during the run; forgotten when the map is written.
    Read(MapRef, String),
    /// A builtin whose value cannot change during the run (`tid`, `pid`, `cpu`, ...).
    Builtin(&'static str),
    /// An integer field of the probe's arguments (`args.dev`), by its text.
    Argument(String),
    /// A map key built from such builtins (and literals), by its type and text: its stack
    /// slot, pinned for the rest of the probe.
    Key(String),
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

    /// The key of type `key_ty` built from `keys`: a key of per-event builtins (`@s[tid]`,
    /// `@[pid, comm]`) is built once and its memory kept, where each map access of the
    /// probe built its own (`/@s[tid]/ { @t[tid] = ...; delete(@s[tid]); }`).
    pub(super) fn lower_key_once(
        &mut self,
        key_ty: Option<&Type>,
        keys: &[Expr],
    ) -> Result<VReg, Diagnostic> {
        // A stable key with one element that is not a literal (a key of literals only is
        // cheaper to store again than to keep).
        let literal = |k: &Expr| {
            matches!(
                k.kind,
                ExprKind::Int(_) | ExprKind::Bool(_) | ExprKind::Str(_) | ExprKind::Positional(_)
            )
        };
        let text = stable_key(keys, &self.stable_vars)
            .filter(|_| !keys.iter().all(literal))
            .filter(|_| key_ty.is_some_and(|t| t.size() <= MAX_KEPT_KEY))
            .map(|t| Reuse::Key(format!("{key_ty:?}|{t}")));
        if let Some(k) = text.as_ref().and_then(|t| self.reused(t)) {
            return Ok(k);
        }
        let mark = self.stack_taken.len();
        let key = super::maps::lower_key(self, key_ty, keys)?;
        if let Some(t) = text
            && self.pin_slot_of(mark, key)
        {
            self.remember(t, key);
        }
        Ok(key)
    }

    /// `bpf_get_current_pid_tgid()`, called once while its result stays valid: `pid`, `tid`
    /// and the functions built on them share it.
    pub fn pid_tgid(&mut self) -> VReg {
        if let Some(r) = self.reused(&Reuse::Builtin("pid_tgid")) {
            return r;
        }
        let r = self.call(crate::ir::Intrinsic::GetPidTgid, vec![]);
        self.remember(Reuse::Builtin("pid_tgid"), r);
        r
    }

    /// [`LowerCx::pid_tgid`] as seen from sonde's own pid namespace when it is not the
    /// initial one (`bpf_get_ns_current_pid_tgid`; 0 for a task outside it), as bpftrace's
    /// `pid` and `tid` are.
    pub fn pid_tgid_here(&mut self) -> VReg {
        let Some((dev, ino)) = self.kernel.pid_namespace() else {
            return self.pid_tgid();
        };
        if let Some(r) = self.reused(&Reuse::Builtin("pid_tgid_ns")) {
            return r;
        }
        let buf = self.alloc_zeroed(8);
        let args = vec![
            crate::ir::Operand::Imm(dev as i64),
            crate::ir::Operand::Imm(ino as i64),
            crate::ir::Operand::Reg(buf),
            crate::ir::Operand::Imm(8),
        ];
        self.call(crate::ir::Intrinsic::GetNsPidTgid, args);
        let r = self.load(buf, 0, crate::ir::Width::W64);
        // `struct bpf_pidns_info` is { pid, tgid }: swapped to `tgid << 32 | pid`.
        let hi = self.alu(crate::ir::AluOp::Shl, r, crate::ir::Operand::Imm(32));
        let lo = self.alu(crate::ir::AluOp::LShr, r, crate::ir::Operand::Imm(32));
        let r = self.alu(crate::ir::AluOp::Or, hi, crate::ir::Operand::Reg(lo));
        self.remember(Reuse::Builtin("pid_tgid_ns"), r);
        r
    }

    /// An integer field of the probe's arguments (`args.newstate`) read before and still
    /// valid here.
    pub(super) fn reused_argument(&self, e: &Expr, ty: &Type) -> Option<Val> {
        if !is_scalar(ty) {
            return None;
        }
        let r = self.reused(&Reuse::Argument(probe_argument(e)?))?;
        Some(Val::Int(r))
    }

    /// Reads an integer field of the probe's arguments now and remembers it: the context
    /// cannot change during the run, so a second use reads the register (and skips a sign
    /// extension).
    pub(super) fn remember_argument(&mut self, e: &Expr, ty: &Type, v: Val) -> Val {
        let Some(text) = probe_argument(e).filter(|_| is_scalar(ty)) else {
            return v;
        };
        let v = self.materialize(v, ty);
        if let Val::Int(r) = v {
            self.remember(Reuse::Argument(text), r);
        }
        v
    }

    /// Records that `reg` holds `what` from here on (see [`Reuse`]).
    pub fn remember(&mut self, what: Reuse, reg: VReg) {
        let at = self.f.insts.len();
        self.reuse.push((what, reg, at));
    }
}

/// The largest key kept for reuse ([`LowerCx::lower_key_once`]): `comm` and two integers.
const MAX_KEPT_KEY: u32 = 32;

/// Builtins whose value, a register, cannot change during one run of a probe.
pub(super) const STABLE_BUILTINS: &[&str] = &["pid", "tid", "uid", "gid", "cpu", "cgroup"];

/// A field of the probe's arguments (`args.dev`, `args->sector`): the context or registers
/// of the event, which do not change during one run of a probe. Its text, or `None`.
fn probe_argument(e: &Expr) -> Option<String> {
    match &e.kind {
        ExprKind::Field { base, field, .. } if matches!(&base.kind, ExprKind::Ident(n) if n == "args") => {
            Some(format!("args.{}", field.name))
        }
        _ => None,
    }
}

/// The text of map keys whose values cannot change during one run of a probe (literals,
/// builtins of the event: `pid`, `tid`, `comm`, ..., and its arguments' fields), or `None`.
pub(super) fn stable_key(keys: &[Expr], vars: &HashSet<String>) -> Option<String> {
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
            ExprKind::Field { .. } => text.push_str(&probe_argument(k)?),
            ExprKind::Var(name) if vars.contains(name) => text.push_str(&format!("${name}")),
            _ => return None,
        }
        text.push(',');
    }
    Some(text)
}

/// The scratch variables of `probe` written at exactly one place that runs once (not in a
/// loop, not `++`/`--`, not behind `&`): the checker has them defined before any use, so
/// from that place on their value cannot change during the run, and a key made of them
/// is as stable as one of `tid` ([`stable_key`]).
pub(super) fn single_assigned_vars(probe: &Probe) -> HashSet<String> {
    let mut writes: HashMap<String, u32> = HashMap::new();
    probe
        .predicate
        .iter()
        .for_each(|p| expr_writes(p, false, &mut writes));
    stmt_writes(&probe.body.stmts, false, &mut writes);
    writes
        .into_iter()
        .filter(|&(_, n)| n == 1)
        .map(|(v, _)| v)
        .collect()
}

/// Counts the writes of variables in `stmts` (2, "several", for each one in a loop).
fn stmt_writes(stmts: &[Stmt], in_loop: bool, w: &mut HashMap<String, u32>) {
    let once = if in_loop { 2 } else { 1 };
    for s in stmts {
        match &s.kind {
            StmtKind::Assign { target, .. } => {
                if let ExprKind::Var(n) = &target.kind {
                    *w.entry(n.clone()).or_default() += once;
                }
            }
            StmtKind::Let { var, .. } => *w.entry(var.name.clone()).or_default() += once,
            StmtKind::ForMap { var, body, .. } | StmtKind::ForRange { var, body, .. } => {
                *w.entry(var.name.clone()).or_default() += 2;
                stmt_writes(&body.stmts, true, w);
            }
            StmtKind::Unroll { body, .. } | StmtKind::While { body, .. } => {
                stmt_writes(&body.stmts, true, w)
            }
            StmtKind::If { then, else_, .. } => {
                stmt_writes(&then.stmts, in_loop, w);
                if let Some(e) = else_ {
                    stmt_writes(&e.stmts, in_loop, w);
                }
            }
            _ => {}
        }
        // Expressions of this statement and of the statements nested in it (counted once
        // more when visited again: only "one" matters).
        for e in s.exprs() {
            expr_writes(e, in_loop, w);
        }
    }
}

/// Counts the writes of variables inside an expression: `++`/`--` and `&$x` (as several),
/// and the statements of block expressions.
fn expr_writes(e: &Expr, in_loop: bool, w: &mut HashMap<String, u32>) {
    match &e.kind {
        ExprKind::IncDec { target, .. } => {
            if let ExprKind::Var(n) = &target.kind {
                *w.entry(n.clone()).or_default() += 2;
            }
        }
        ExprKind::Unary {
            op: UnOp::AddrOf,
            expr,
        } => {
            if let ExprKind::Var(n) = &expr.kind {
                *w.entry(n.clone()).or_default() += 2;
            }
        }
        ExprKind::Block { body, .. } => stmt_writes(&body.stmts, in_loop, w),
        _ => {}
    }
    for c in e.children() {
        expr_writes(c, in_loop, w);
    }
}
