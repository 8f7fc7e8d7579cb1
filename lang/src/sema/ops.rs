//! Operators, `?:`, `++`/`--` and casts.
//!
//! - Arithmetic and bitwise operators take integers (bools and enums count as integers) and
//!   give a 64-bit integer, signed only when both operands are signed. `ptr + int`,
//!   `int + ptr` and `ptr - int` give the pointer type; `ptr - ptr` gives `int64`.
//! - Comparisons give `bool`: integers with integers, pointers with pointers or integers,
//!   and with `==`/`!=` only: strings with strings, buffers with buffers (their lengths and
//!   bytes), tuples and arrays with equal types.
//! - `&&`, `||` and `!` take conditions and give `bool`; `-` and `~` give 64-bit integers.
//! - `*p` reads a typed pointer (`*int` reads a `uint64`); `&x` takes the address of a
//!   field, element or dereference.
//! - Casts: integer ↔ integer/bool/enum/pointer, integer or pointer → pointer, integer ↔
//!   integer array of the same size (`(uint8[8])x`), a narrower integer → integer array of
//!   up to 8 bytes, string → integer array of its size (`(int8[])"abc"`), and array ↔
//!   array of the same size.

use super::errors::*;
use super::probe::ProbeChecker;
use super::scope::VarSlot;
use super::unify::{int64, is_int, is_truthy, signed_of, unify};
use crate::ast::{BinOp, Expr, ExprKind, TypeExpr, UnOp};
use crate::catalog::{CallPosition, const_int};
use crate::diag::Diagnostic;
use crate::types::{AddrSpace, Type};

impl ProbeChecker<'_, '_> {
    fn operand_error(&mut self, e: &Expr, what: String, lt: &Type, rt: Option<&Type>) {
        let label = match rt {
            Some(rt) => format!("{lt} and {rt}"),
            None => format!("this is {lt}"),
        };
        self.report(Diagnostic::error(OPERAND_TYPE, e.span, what).with_label(label));
    }

    /// `lhs op rhs`.
    pub fn binary(&mut self, e: &Expr, op: BinOp, lhs: &Expr, rhs: &Expr) -> Option<Type> {
        if matches!(op, BinOp::And | BinOp::Or) {
            let l = self.condition(lhs);
            let r = self.condition(rhs);
            l?;
            r?;
            return Some(Type::Bool);
        }
        let l = self.expr(lhs);
        let r = self.expr(rhs);
        let (l, r) = (l?, r?);
        if let Some(t) = self.folded_string(e, op, lhs, rhs) {
            return Some(t);
        }
        let sym = op.symbol();
        if op.is_comparison() {
            let ok = match (&l, &r) {
                (a, b) if is_int(a) && is_int(b) => true,
                (Type::Ptr { .. }, b) if b.is_ptr() || is_int(b) => true,
                (a, Type::Ptr { .. }) if is_int(a) => true,
                (Type::Str { .. }, Type::Str { .. }) | (Type::Buf { .. }, Type::Buf { .. }) => {
                    matches!(op, BinOp::Eq | BinOp::Ne)
                }
                (Type::Tuple(_) | Type::Array { .. }, _) => {
                    matches!(op, BinOp::Eq | BinOp::Ne) && unify(&l, &r).is_some()
                }
                _ => false,
            };
            if ok {
                return Some(Type::Bool);
            }
            self.operand_error(
                e,
                format!("cannot compare these with `{sym}`"),
                &l,
                Some(&r),
            );
            return None;
        }
        if is_int(&l) && is_int(&r) {
            self.shift_amount(op, rhs);
            self.mixed_sign_division(op, (lhs, &l), (rhs, &r));
            return Some(int64(signed_of(&l) && signed_of(&r)));
        }
        let ptr = match (&l, &r, op) {
            (Type::Ptr { .. }, b, BinOp::Add | BinOp::Sub) if is_int(b) => Some(l.clone()),
            (a, Type::Ptr { .. }, BinOp::Add) if is_int(a) => Some(r.clone()),
            (Type::Ptr { .. }, Type::Ptr { .. }, BinOp::Sub) => Some(Type::I64),
            _ => None,
        };
        if ptr.is_none() {
            self.operand_error(e, format!("invalid operands to `{sym}`"), &l, Some(&r));
        }
        ptr
    }

    /// Warns about `x << n` / `x >> n` (or `<<=`, `>>=`) by a constant `n` outside 0..=63:
    /// every bit is shifted out, so the result is 0 (the sign for `>>` of a signed value). A
    /// run-time amount is taken modulo 64, as the BPF instruction does.
    pub fn shift_amount(&mut self, op: BinOp, rhs: &Expr) {
        if !matches!(op, BinOp::Shl | BinOp::Shr) {
            return;
        }
        let Some(n) = const_int(rhs, &self.g.options.positional) else {
            return;
        };
        if (0..64).contains(&n) {
            return;
        }
        let result = if op == BinOp::Shl {
            "0"
        } else {
            "0 (-1 for a negative signed value)"
        };
        self.report(
            Diagnostic::warning(
                SHIFT_AMOUNT,
                rhs.span,
                format!("shift by {n}, outside 0..=63"),
            )
            .with_label(format!("every bit is shifted out: the result is {result}"))
            .with_help(
                "shift amounts are 0 to 63; a constant outside shifts every bit out, while a run-time amount is taken modulo 64 (as the BPF instruction does)",
            ),
        );
    }

    /// bpftrace's warning for `/` and `%` on integers of different signedness (a literal
    /// that is not negative takes the other operand's sign, as in bpftrace 0.26).
    fn mixed_sign_division(&mut self, op: BinOp, l: (&Expr, &Type), r: (&Expr, &Type)) {
        if !matches!(op, BinOp::Div | BinOp::Mod) {
            return;
        }
        let positional = &self.g.options.positional;
        let sign = |(e, t): (&Expr, &Type)| match const_int(e, positional) {
            Some(v) if v >= 0 => None,
            Some(_) => Some(true),
            None => Some(signed_of(t)),
        };
        if let (Some(a), Some(b)) = (sign(l), sign(r))
            && a != b
        {
            let sym = op.symbol();
            self.report(
                Diagnostic::warning(
                    SIGNED_DIVISION,
                    l.0.span.join(r.0.span),
                    format!("signed operands for '{sym}' can lead to undefined behavior (cast to unsigned to silence warning)"),
                )
                .with_label("one operand is signed, the other unsigned")
                .with_help("bpftrace warns here; sonde computes the result as the operand types convert in C"),
            );
        }
    }

    /// `op expr`.
    pub fn unary(&mut self, e: &Expr, op: UnOp, inner: &Expr) -> Option<Type> {
        match op {
            UnOp::Not => {
                self.condition(inner)?;
                Some(Type::Bool)
            }
            UnOp::Neg | UnOp::BitNot => {
                let t = self.expr(inner)?;
                if is_int(&t) {
                    return Some(int64(op == UnOp::Neg || signed_of(&t)));
                }
                self.operand_error(e, format!("invalid operand to `{}`", op.symbol()), &t, None);
                None
            }
            UnOp::Deref => {
                let t = self.expr(inner)?;
                match &t {
                    Type::Ptr { pointee, .. } if **pointee != Type::Void => match &**pointee {
                        Type::Record(r) => Some(Type::Record(self.complete_record(r))),
                        p => Some(p.clone()),
                    },
                    t if is_int(t) => Some(Type::U64),
                    _ => {
                        self.report(
                            Diagnostic::error(DEREF, e.span, format!("cannot dereference {t}"))
                                .with_label("not a typed pointer")
                                .with_help("cast it to a typed pointer first, e.g. `*(int32 *)p`"),
                        );
                        None
                    }
                }
            }
            UnOp::AddrOf => {
                // Scratch variables and map values have addresses too (bpftrace 0.26):
                // the program's own memory, valid while the probe runs.
                if matches!(inner.kind, ExprKind::Var(_) | ExprKind::Map { .. }) {
                    let t = self.expr(inner)?;
                    if matches!(t, Type::Agg(_)) {
                        self.report(
                            Diagnostic::error(
                                DEREF,
                                e.span,
                                "cannot take the address of an aggregation",
                            )
                            .with_label(format!("this is {t}"))
                            .with_help("its value is kept per CPU; read it into a variable first"),
                        );
                        return None;
                    }
                    return Some(Type::Ptr {
                        pointee: Box::new(t),
                        space: AddrSpace::Kernel,
                    });
                }
                let lvalue = matches!(
                    inner.kind,
                    ExprKind::Field { .. }
                        | ExprKind::Index { .. }
                        | ExprKind::Unary {
                            op: UnOp::Deref,
                            ..
                        }
                );
                let t = self.expr(inner)?;
                if lvalue {
                    return Some(Type::Ptr {
                        pointee: Box::new(t),
                        space: AddrSpace::Unknown,
                    });
                }
                self.report(
                    Diagnostic::error(DEREF, e.span, "cannot take the address of this")
                        .with_label("not a field, element or dereference"),
                );
                None
            }
        }
    }

    /// `x++`, `--@m[k]`, ...: the target must hold an integer.
    pub fn inc_dec(&mut self, target: &Expr) -> Option<Type> {
        let t = match &target.kind {
            ExprKind::Var(name) => match self.scopes.get(name).cloned() {
                Some(VarSlot::Poisoned) => return None,
                Some(VarSlot::Typed(t, _)) => t,
                _ => self.expr(target)?,
            },
            ExprKind::Map { name, keys } => {
                let Ok(key) = self.map_key(keys) else {
                    self.g.maps.poison(name, target.span);
                    return None;
                };
                if let Err(d) = self.g.maps.use_key(name, key, target.span) {
                    self.report(d);
                }
                // `@p++` on a pointer map keeps the pointer type (bpftrace 0.26).
                let t = match self.g.maps.value(name) {
                    Some(t @ Type::Ptr { .. }) => t.clone(),
                    _ => Type::I64,
                };
                if let Err(d) = self.g.maps.assign(name, &t, target.span) {
                    self.report(d);
                    return None;
                }
                t
            }
            _ => {
                self.report(
                    Diagnostic::error(ASSIGN_TARGET, target.span, "cannot increment this")
                        .with_label("not a map or scratch variable"),
                );
                return None;
            }
        };
        self.set(target, t.clone());
        if is_int(&t) || matches!(t, Type::Ptr { .. }) {
            return Some(t);
        }
        self.operand_error(target, "`++`/`--` needs an integer".into(), &t, None);
        None
    }

    /// `cond ? then : else_`: the branches must unify.
    /// `cond ? then : else_`; used as a statement (`pos`), its branches may be calls without
    /// a value (`c ? printf("a") : printf("b");`, bpftrace 0.27), and then it has none.
    pub fn ternary(
        &mut self,
        e: &Expr,
        cond: &Expr,
        then: &Expr,
        else_: &Expr,
        pos: CallPosition,
    ) -> Option<Type> {
        let c = self.condition(cond);
        let branch_pos = match pos {
            CallPosition::Statement => CallPosition::Statement,
            _ => CallPosition::Value,
        };
        let a = self.expr_in(then, branch_pos);
        let b = self.expr_in(else_, branch_pos);
        let (_, a, b) = (c?, a?, b?);
        match (a == Type::Void, b == Type::Void) {
            (true, true) => return Some(Type::Void),
            // One branch without a value: the other needs none either.
            (true, false) | (false, true) => {
                let (void, other) = if a == Type::Void {
                    (then, else_)
                } else {
                    (else_, then)
                };
                let what = match &void.kind {
                    ExprKind::Call { name, .. } => format!("`{}` has no value", name.name),
                    _ => "this branch has no value".to_string(),
                };
                self.report(
                    Diagnostic::error(VOID_VALUE, void.span, what)
                        .with_label("used as a value")
                        .with_secondary(other.span, "the other branch has one"),
                );
                return None;
            }
            (false, false) => {}
        }
        let t = if is_int(&a) && is_int(&b) {
            unify(&super::unify::promote(&a), &super::unify::promote(&b))
        } else {
            unify(&a, &b)
        };
        if t.is_none() {
            self.report(
                Diagnostic::error(
                    TYPE_MISMATCH,
                    e.span,
                    "the branches of `?:` have different types",
                )
                .with_label(format!("{a} and {b}"))
                .with_secondary(then.span, format!("this is {a}"))
                .with_secondary(else_.span, format!("this is {b}")),
            );
        }
        t
    }

    /// `(ty) expr`.
    pub fn cast(&mut self, e: &Expr, ty: &TypeExpr, inner: &Expr) -> Option<Type> {
        let target = self.type_expr(ty);
        let from = self.expr(inner);
        let (mut target, from) = (target?, from?);
        // bpftrace's size of an integer source (a literal's smallest type, a variable's
        // declared width); `None` for a 64-bit variable or map that may hold a narrower one.
        let source_size = if is_int(&from) {
            self.int_source_size(inner, &from)
        } else {
            Some(from.size())
        };
        // `(int8[])x`: as many elements as the value has bytes for.
        if let Type::Array { elem, len: 0 } = &target
            && elem.size() > 0
            && (is_int(&from) || matches!(from, Type::Array { .. } | Type::Str { .. }))
        {
            let size = source_size.unwrap_or(from.size());
            if size % elem.size() == 0 {
                target = Type::Array {
                    elem: elem.clone(),
                    len: size / elem.size(),
                };
            }
        }
        let int_array = |t: &Type| match t {
            Type::Array { elem, .. } => is_int(elem),
            _ => false,
        };
        // Integer literals and integer variables and map values are typed 64-bit here where
        // bpftrace gives them a narrower type: only other values are known to be the same.
        let widened = is_int(&from)
            && matches!(
                &inner.kind,
                ExprKind::Int(_)
                    | ExprKind::Var(_)
                    | ExprKind::Map { .. }
                    | ExprKind::Unary { op: UnOp::Neg, .. }
            );
        // A literal has its smallest signed type, as in bpftrace (`(int8)1` is unnecessary).
        let literal =
            super::widths::literal_bits(inner).map(|bits| Type::Int { bits, signed: true });
        if (target == from && !widened) || literal.as_ref() == Some(&target) {
            self.report(
                Diagnostic::warning(
                    UNNECESSARY_CAST,
                    e.span,
                    format!("Unnecessary cast: expression is already of type {target}"),
                )
                .with_label("the value already has this type")
                .with_help("remove the cast"),
            );
            return Some(target);
        }
        let ok = match (&target, &from) {
            (t, f) if is_int(t) && (is_int(f) || f.is_ptr()) => true,
            // A stack's 8-byte value: its id in the run's stack map (a user stack's with the
            // pid in the upper 32 bits); equal stacks of a process have equal values.
            (t, Type::Stack { .. }) if is_int(t) => t.size() == 8,
            (Type::Ptr { .. }, f) => is_int(f) || f.is_ptr(),
            (Type::Username, f) => is_int(f),
            (t, f) if is_int(t) && int_array(f) => t.size() == f.size(),
            // An integer into an array of its size, or of a larger one of at most 8 bytes
            // (the integer extended first), as bpftrace 0.27.
            (t, f) if int_array(t) && is_int(f) => match source_size {
                Some(n) => t.size() == n || (n < t.size() && t.size() <= 8),
                None => t.size() <= 8,
            },
            // A string's bytes, NUL included (`(int8[])"abc"` is an `int8[4]`).
            (t, f) if int_array(t) && (int_array(f) || matches!(f, Type::Str { .. })) => {
                t.size() == f.size()
            }
            (t, f) => t == f,
        };
        if ok {
            // A pointer cast keeps the address space of the pointer it converts:
            // `(struct task_struct *)curtask` still points into kernel memory in a uprobe.
            if let (
                Type::Ptr {
                    pointee,
                    space: AddrSpace::Unknown,
                },
                Type::Ptr { space, .. },
            ) = (&target, &from)
            {
                return Some(Type::Ptr {
                    pointee: pointee.clone(),
                    space: *space,
                });
            }
            return Some(target);
        }
        let help = if is_truthy(&from) || int_array(&from) || int_array(&target) {
            "integer arrays convert only to and from integers (and strings) of the same size, or from narrower integers to arrays of up to 8 bytes"
        } else {
            "only integers, pointers and integer arrays can be cast"
        };
        self.report(
            Diagnostic::error(
                INVALID_CAST,
                e.span,
                format!("cannot cast {from} to {target}"),
            )
            .with_label("invalid cast")
            .with_help(help),
        );
        None
    }

    /// `"hello" + 2`, `$1 + 2` of a parameter that is not a number, `"ab" + "cd"`: the string
    /// bpftrace 0.27 folds them into (its warning when nothing is left).
    fn folded_string(&mut self, e: &Expr, op: BinOp, lhs: &Expr, rhs: &Expr) -> Option<Type> {
        if op != BinOp::Add {
            return None;
        }
        let text = crate::catalog::const_string(e, &self.g.options.positional)?;
        let from_literal = |x: &Expr| crate::catalog::const_string(x, &self.g.options.positional);
        if text.is_empty()
            && (from_literal(lhs).is_some_and(|s| !s.is_empty())
                || from_literal(rhs).is_some_and(|s| !s.is_empty()))
        {
            self.report(
                Diagnostic::warning(FOLDED_STRING, e.span, "literal string will always be empty")
                    .with_label("past the string's end"),
            );
        }
        let t = Type::Str {
            size: u32::try_from(text.len())
                .unwrap_or(u32::MAX)
                .saturating_add(1),
        };
        self.set(e, t)
    }

    /// The size bpftrace 0.27 gives integer `e` (of sonde type `from`) for a cast to an
    /// integer array: a literal's smallest signed type (`1` is an `int8`), a variable's or
    /// map's declared width when narrower than its 64-bit storage; `None` for a variable or
    /// map whose declared width is 64 bits.
    fn int_source_size(&self, e: &Expr, from: &Type) -> Option<u32> {
        if let Some(bits) = super::widths::literal_bits(e) {
            return Some(u32::from(bits) / 8);
        }
        match &e.kind {
            ExprKind::Var(name) => self.var_widths.narrow(name).map(|b| u32::from(b) / 8),
            ExprKind::Map { name, .. } => self.g.map_widths.narrow(name).map(|b| u32::from(b) / 8),
            _ => Some(from.size()),
        }
    }
}
