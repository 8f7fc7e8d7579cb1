//! Statements: assignments to maps and scratch variables, `let`, control flow and loops.
//!
//! - A scratch variable's type is fixed by its first assignment (integers promoted to 64
//!   bits); later assignments must be compatible (`sonde::sema::type_mismatch`), a longer
//!   string widens a string variable. Variables are block scoped; `let` of a visible name
//!   is `sonde::sema::redefined_variable`.
//! - `@m[k] = v` unifies the map's key and value types program-wide; `@m op= v` and `@m++`
//!   store integers.
//! - `unroll(N)` needs a constant N in 1..=100; `break`/`continue` need an enclosing
//!   `while` or `for`.
//! - `return EXPR;` needs an integer (`sonde::sema::return_type`).

use super::errors::*;
use super::probe::ProbeChecker;
use super::scope::VarSlot;
use super::unify::{int64, is_int, promote, read_value, signed_of, unify};
use super::widths::assigned_type;
use crate::ast::{BinOp, Block, Expr, ExprKind, Stmt, StmtKind};
use crate::catalog::{CallPosition, const_int};
use crate::diag::Diagnostic;
use crate::limits::{LOOP_TOO_LONG, MAX_LOOP_ITERATIONS};
use crate::span::Span;
use crate::types::{AddrSpace, Type};

/// Largest `unroll` count accepted (bpftrace's limit).
const MAX_UNROLL: i64 = 100;

impl ProbeChecker<'_, '_> {
    /// Checks a block in a new scope.
    pub fn block(&mut self, b: &Block) {
        self.scopes.push();
        let mut warned = false;
        for (i, s) in b.stmts.iter().enumerate() {
            self.stmt(s);
            // bpftrace 0.27's control-flow warning, on the first statement after a way out.
            let misplaced_jump =
                matches!(s.kind, StmtKind::Break | StmtKind::Continue) && self.loop_depth == 0;
            // A way out a macro's body brings in is not the script's dead code (bpftrace
            // checks before expanding macros).
            let from_macro = self.g.macros.iter().any(|m| m.span.contains(s.span));
            if ends_flow(s)
                && !misplaced_jump
                && !from_macro
                && !warned
                && let Some(next) = b.stmts.get(i + 1)
            {
                warned = true;
                self.report(
                    Diagnostic::warning(UNREACHABLE, next.span, "Unreachable statement.")
                        .with_label("never runs")
                        .with_secondary(s.span, "the block is left here"),
                );
            }
        }
        self.pop_scope();
    }

    /// Checks a loop body.
    fn loop_body(&mut self, b: &Block) {
        self.loop_depth += 1;
        self.block(b);
        self.loop_depth -= 1;
    }

    /// Checks one statement.
    pub fn stmt(&mut self, s: &Stmt) {
        match &s.kind {
            StmtKind::Expr(e) => {
                self.expr_in(e, CallPosition::Statement);
            }
            StmtKind::Assign { target, op, value } => {
                if let Some(op) = op {
                    self.shift_amount(*op, value);
                }
                self.assign(target, *op, value)
            }
            StmtKind::Let { var, ty, value } => {
                if let Some(slot) = self.scopes.get(&var.name) {
                    let mut d = Diagnostic::error(
                        REDEFINED_VARIABLE,
                        var.span,
                        format!("`${}` is already defined", var.name),
                    )
                    .with_label("defined again")
                    .with_help("scratch variables cannot be shadowed; use another name");
                    if let VarSlot::Typed(_, at) | VarSlot::Declared(at) = slot {
                        d = d.with_secondary(*at, "first defined here");
                    }
                    self.report(d);
                }
                // `let $y: typeof($x)` with `$x` still untyped: tied, typed by either.
                let tie = ty.as_ref().and_then(|t| self.untyped_typeof_var(t));
                let declared = match tie {
                    Some(_) => None,
                    None => ty.as_ref().map(|t| self.type_expr(t)),
                };
                let vt = value.as_ref().map(|v| self.expr(v));
                let slot = match (declared, vt) {
                    (Some(None), _) | (_, Some(None)) => VarSlot::Poisoned,
                    (Some(Some(d)), Some(Some(v))) => {
                        let d = with_space_of(d, &v);
                        if compatible(&d, &v) && fits_written(&d, &v) {
                            VarSlot::Typed(d, var.span)
                        } else {
                            let span = value.as_ref().map_or(var.span, |v| v.span);
                            self.mismatch(&var.name, span, &v, &d, var.span);
                            VarSlot::Poisoned
                        }
                    }
                    (Some(Some(d)), None) => VarSlot::Typed(d, var.span),
                    (None, Some(Some(v))) => {
                        let declared = value.as_ref().map_or(v.clone(), |e| {
                            assigned_type(e, &v, &self.var_widths, &self.g.map_widths)
                        });
                        self.var_widths.assigned(&var.name, &declared);
                        VarSlot::Typed(promote(&v), var.span)
                    }
                    (None, None) => VarSlot::Declared(var.span),
                };
                if let VarSlot::Typed(t, _) = &slot {
                    self.table
                        .vars
                        .entry(var.name.clone())
                        .or_insert_with(|| t.clone());
                }
                if ty.is_some() && tie.is_none() {
                    self.written_types.insert(var.name.clone());
                } else {
                    self.written_types.remove(&var.name);
                }
                self.scopes.define(&var.name, slot.clone());
                if let Some(other) = tie {
                    self.typeof_ties.push((var.name.clone(), other));
                    if let VarSlot::Typed(t, _) = &slot {
                        self.resolve_typeof_ties(&var.name, t);
                    }
                }
            }
            StmtKind::If { cond, then, else_ } => {
                self.condition(cond);
                self.block(then);
                if let Some(b) = else_ {
                    self.block(b);
                }
            }
            StmtKind::While { cond, body } => {
                self.condition(cond);
                self.loop_body(body);
            }
            StmtKind::Unroll { count, body } => {
                match const_int(count, &self.g.options.positional) {
                    Some(n) if (1..=MAX_UNROLL).contains(&n) => {}
                    other => {
                        let label = match other {
                            Some(n) => format!("{n} is out of range"),
                            None => "not a constant".to_string(),
                        };
                        // bpftrace's words for a count out of range.
                        let message = match other {
                            Some(n) if n > MAX_UNROLL => {
                                format!("unroll maximum value is {MAX_UNROLL}")
                            }
                            Some(_) => "unroll minimum value is 1".to_string(),
                            None => "invalid unroll count".to_string(),
                        };
                        self.report(
                            Diagnostic::error(UNROLL_COUNT, count.span, message)
                                .with_label(label)
                                .with_help(format!(
                                    "use an integer constant from 1 to {MAX_UNROLL}"
                                )),
                        );
                    }
                }
                self.block(body);
            }
            StmtKind::ForMap { var, map, body } => {
                let elem = self.for_map(map);
                self.scopes.push();
                let slot = match elem {
                    Some(t) => {
                        self.table
                            .vars
                            .entry(var.name.clone())
                            .or_insert_with(|| t.clone());
                        VarSlot::Typed(t, var.span)
                    }
                    None => VarSlot::Poisoned,
                };
                self.scopes.define(&var.name, slot);
                self.loop_body(body);
                self.pop_scope();
            }
            StmtKind::ForRange {
                var,
                start,
                end,
                body,
            } => {
                let a = self.int_operand(start);
                let b = self.int_operand(end);
                let positional = &self.g.options.positional;
                if let (Some(lo), Some(hi)) =
                    (const_int(start, positional), const_int(end, positional))
                {
                    let n = i128::from(hi) - i128::from(lo);
                    if n > i128::from(MAX_LOOP_ITERATIONS) {
                        self.report(
                            Diagnostic::error(
                                LOOP_TOO_LONG,
                                start.span.join(end.span),
                                "this range has too many iterations",
                            )
                            .with_label(format!(
                                "{n} iterations, the limit is {MAX_LOOP_ITERATIONS}"
                            ))
                            .with_help(format!(
                                "a `for` range runs at most {MAX_LOOP_ITERATIONS} (1 << 23) iterations, the kernel's bpf_loop limit; split it into several loops or use a smaller range"
                            )),
                        );
                    }
                }
                self.scopes.push();
                let slot = match (a, b) {
                    (Some(a), Some(b)) => {
                        let t = int64(signed_of(&a) && signed_of(&b));
                        self.table
                            .vars
                            .entry(var.name.clone())
                            .or_insert_with(|| t.clone());
                        VarSlot::Typed(t, var.span)
                    }
                    _ => VarSlot::Poisoned,
                };
                self.scopes.define(&var.name, slot);
                self.loop_body(body);
                self.pop_scope();
            }
            StmtKind::Break | StmtKind::Continue => {
                if self.loop_depth == 0 {
                    let word = if s.kind == StmtKind::Break {
                        "break"
                    } else {
                        "continue"
                    };
                    self.report(
                        Diagnostic::error(
                            BREAK_OUTSIDE_LOOP,
                            s.span,
                            format!("`{word}` outside of a loop"),
                        )
                        .with_label("not inside `while` or `for`")
                        .with_help("use `return` to leave the probe"),
                    );
                }
            }
            StmtKind::Return(None) => {}
            StmtKind::Return(Some(value)) => self.return_value(value),
        }
    }

    /// The value of `return EXPR;`: the probe's return value, an integer as in bpftrace 0.26
    /// (not a `bool`, which bpftrace refuses too).
    fn return_value(&mut self, value: &Expr) {
        let Some(t) = self.expr(value) else {
            return;
        };
        if matches!(t, Type::Int { .. } | Type::Enum { .. }) {
            return;
        }
        self.report(
            Diagnostic::error(
                RETURN_TYPE,
                value.span,
                format!("Probe return values can only be integers. Found {t}"),
            )
            .with_label(format!("this is {t}"))
            .with_help(
                "a probe returns an integer: a test fails when it returns non-zero, a benchmark is skipped",
            ),
        );
    }

    /// An integer operand (reported when it is not one).
    fn int_operand(&mut self, e: &Expr) -> Option<Type> {
        let t = self.expr(e)?;
        if is_int(&t) {
            return Some(t);
        }
        self.report(
            Diagnostic::error(OPERAND_TYPE, e.span, "expected an integer")
                .with_label(format!("this is {t}")),
        );
        None
    }

    /// The `(key, value)` element type of `for ($kv : @m)`.
    fn for_map(&mut self, map: &Expr) -> Option<Type> {
        let ExprKind::Map { name, keys } = &map.kind else {
            self.expr(map);
            self.report(
                Diagnostic::error(FOR_MAP, map.span, "`for` iterates over a map")
                    .with_label("not a map")
                    .with_help("write `for ($kv : @map) { ... }`"),
            );
            return None;
        };
        if !keys.is_empty() {
            self.report(
                Diagnostic::error(FOR_MAP, map.span, "`for` iterates over a whole map")
                    .with_label("remove the keys"),
            );
            return None;
        }
        let value = self.map_value_raw(name, map.span)?;
        let key = match self.g.maps.key(name) {
            Some(Some(k)) => k,
            _ => {
                self.report(
                    Diagnostic::error(FOR_MAP, map.span, format!("map `@{name}` has no keys"))
                        .with_label("a map without keys has one value")
                        .with_help(format!("use `@{name}` directly")),
                );
                return None;
            }
        };
        let value = match read_value(&value) {
            Some(v) => v,
            None => value,
        };
        self.set(map, value.clone());
        Some(Type::Tuple(vec![key, value]))
    }

    /// The stored value type of map `name`, reported when the map is never assigned.
    fn map_value_raw(&mut self, name: &str, span: Span) -> Option<Type> {
        match self.g.maps.value(name).cloned() {
            Some(v) => Some(v),
            None => self.map_value(name, span),
        }
    }

    /// `target = value` or `target op= value`.
    fn assign(&mut self, target: &Expr, compound_op: Option<BinOp>, value: &Expr) {
        let compound = compound_op.is_some();
        if self.typeof_depth > 0
            && let ExprKind::Map { name, .. } = &target.kind
        {
            self.report(
                Diagnostic::error(
                    TYPEOF_MAP_ASSIGN,
                    target.span,
                    format!("map `@{name}` is assigned inside `typeof(...)`"),
                )
                .with_label("map assignments are not allowed inside typeof")
                .with_help("`typeof(...)` is never evaluated: assign the map outside it"),
            );
            return;
        }
        match &target.kind {
            ExprKind::Var(name) if compound => {
                let t = self.expr(target);
                let v = self.int_operand(value);
                if let Some(t) = t
                    && v.is_some()
                    && !is_int(&t)
                    && !is_pointer_step(&t, compound_op)
                {
                    self.report(
                        Diagnostic::error(OPERAND_TYPE, target.span, "expected an integer")
                            .with_label(format!("`${name}` is {t}")),
                    );
                }
            }
            ExprKind::Var(name) => {
                let v = self.expr(value);
                if let Some(v) = &v {
                    let declared = assigned_type(value, v, &self.var_widths, &self.g.map_widths);
                    self.var_widths.assigned(name, &declared);
                }
                self.assign_var(name, v, target, value.span);
            }
            ExprKind::Map { name, keys } => {
                let key = self.map_key(keys);
                let v = if compound {
                    // `@p += n` on a pointer map keeps the pointer type (bpftrace 0.26).
                    let current = self.g.maps.value(name).cloned();
                    self.int_operand(value).map(|_| match current {
                        Some(t) if is_pointer_step(&t, compound_op) => t,
                        _ => Type::I64,
                    })
                } else if matches!(value.kind, ExprKind::Call { .. } | ExprKind::Block { .. }) {
                    // A block's value may be the aggregation (`@ = { ...; avg($a) }`).
                    self.expr_in(value, CallPosition::MapAssign)
                } else {
                    self.expr(value)
                };
                if let Ok(key) = key
                    && let Err(d) = self.g.maps.use_key(name, key, target.span)
                {
                    self.report(d);
                }
                let Some(v) = v else {
                    self.g.maps.poison(name, target.span);
                    return;
                };
                {
                    if v == Type::Void {
                        return;
                    }
                    match self.g.maps.assign(name, &v, target.span) {
                        Ok(()) => {
                            if !compound {
                                let declared =
                                    assigned_type(value, &v, &self.var_widths, &self.g.map_widths);
                                self.g.map_widths.assigned(name, &declared);
                            }
                            self.set(target, promote(&v));
                        }
                        Err(d) => self.report(d),
                    }
                }
            }
            _ => {
                self.expr(target);
                self.expr(value);
                self.report(
                    Diagnostic::error(ASSIGN_TARGET, target.span, "cannot assign to this")
                        .with_label("not a map or scratch variable")
                        .with_help("assign to a `$variable` or an `@map[key]`"),
                );
            }
        }
    }

    /// `$name = value` where the value has type `v` (`None` after an error); the caller
    /// records its declared width.
    pub(super) fn assign_var(
        &mut self,
        name: &str,
        v: Option<Type>,
        target: &Expr,
        value_span: Span,
    ) {
        let slot = self.scopes.get(name).cloned();
        let Some(v) = v else {
            if slot.is_none() {
                self.scopes.define(name, VarSlot::Poisoned);
            }
            return;
        };
        let v = promote(&v);
        match slot {
            None | Some(VarSlot::Declared(_)) => {
                let at = match slot {
                    Some(VarSlot::Declared(at)) => at,
                    _ => target.span,
                };
                // Read (as 0) before this first assignment: an integer it must stay.
                if let Some(read) = self.table.vars.get(name).filter(|_| slot.is_some())
                    && !compatible(read, &v)
                {
                    let read = read.clone();
                    self.mismatch(name, value_span, &v, &read, at);
                    self.scopes.set(name, VarSlot::Poisoned);
                    return;
                }
                self.table
                    .vars
                    .entry(name.to_string())
                    .or_insert_with(|| v.clone());
                self.scopes.set(name, VarSlot::Typed(v.clone(), at));
                self.resolve_typeof_ties(name, &v);
                self.set(target, v);
            }
            Some(VarSlot::Poisoned) => {}
            Some(VarSlot::Typed(old, at)) => {
                if !compatible(&old, &v)
                    || (self.written_types.contains(name) && !fits_written(&old, &v))
                {
                    self.mismatch(name, value_span, &v, &old, at);
                    return;
                }
                let new = if is_int(&old) {
                    old.clone()
                } else {
                    unify(&old, &v).unwrap_or(old)
                };
                if let Some(t) = self.table.vars.get_mut(name)
                    && let Some(w) = unify(t, &new).filter(|_| !is_int(t))
                {
                    *t = w;
                }
                self.scopes.set(name, VarSlot::Typed(new.clone(), at));
                self.set(target, new);
            }
        }
    }

    fn mismatch(&mut self, name: &str, span: Span, got: &Type, want: &Type, first: Span) {
        self.report(
            Diagnostic::error(
                TYPE_MISMATCH,
                span,
                format!("type mismatch for `${name}`: expected {want}, found {got}"),
            )
            .with_label(format!("this is {got}"))
            .with_secondary(first, format!("`${name}` is {want} from here"))
            .with_help("a scratch variable keeps the type of its first value; use a new variable"),
        );
    }
}

/// True when `s` never falls through to the next statement: `return`, `break`, `continue`,
/// `exit()`, or an `if` whose branches both end so.
fn ends_flow(s: &Stmt) -> bool {
    let block_ends = |b: &Block| b.stmts.last().is_some_and(ends_flow);
    match &s.kind {
        StmtKind::Return(_) | StmtKind::Break | StmtKind::Continue => true,
        StmtKind::Expr(Expr {
            kind: ExprKind::Call { name, args },
            ..
        }) => name.name == "exit" && args.len() <= 1,
        StmtKind::If {
            then,
            else_: Some(e),
            ..
        } => block_ends(then) && block_ends(e),
        _ => false,
    }
}

/// True when a value of type `v` can be stored in a variable of type `var`.
/// `p += n` / `p -= n` on a pointer: pointer arithmetic, which keeps the pointer's type.
fn is_pointer_step(t: &Type, op: Option<BinOp>) -> bool {
    matches!(t, Type::Ptr { .. }) && matches!(op, Some(BinOp::Add | BinOp::Sub))
}

/// True when the strings of `v` fit those of the written type `d`: bpftrace enforces a type
/// written in `let` (`let $x: string[3] = "hello"` is refused) where it widens an inferred one.
fn fits_written(d: &Type, v: &Type) -> bool {
    match (d, v) {
        (Type::Str { size: a }, Type::Str { size: b }) => b <= a,
        (Type::Tuple(x), Type::Tuple(y)) => x.iter().zip(y).all(|(p, q)| fits_written(p, q)),
        _ => true,
    }
}

/// A written pointer type (`let $p: uint64 * = &$x`) takes the address space of the pointer
/// it is given, as a cast does.
fn with_space_of(d: Type, v: &Type) -> Type {
    match (d, v) {
        (
            Type::Ptr {
                pointee,
                space: AddrSpace::Unknown,
            },
            Type::Ptr { pointee: q, space },
        ) if pointee == *q => Type::Ptr {
            pointee,
            space: *space,
        },
        (d, _) => d,
    }
}

fn compatible(var: &Type, v: &Type) -> bool {
    (is_int(var) && is_int(v)) || unify(var, v).is_some()
}
