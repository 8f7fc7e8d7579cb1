//! Macro expansion, run after parsing: every call of a `macro name(params) { ... }` is
//! replaced by the macro's body with its parameters substituted.
//!
//! - A call used as a statement is replaced by the body's statements.
//! - A call used as a value needs a body that is one expression, which replaces the call.
//! - Parameters: `$x` stands for the argument expression wherever the body reads `$x`; `@m`
//!   for the map the argument names (`@m[k]` becomes `@arg[k]`); a bare `x` for the argument
//!   expression wherever the body names `x`.
//! - Hygiene: the body's own scratch variables are renamed per expansion, so they never
//!   clash with the caller's.
//! - Macros may call macros, up to [`MAX_DEPTH`] levels (a chain of 40 `#define`s expands;
//!   deeper is taken for recursion: an error).
//! - A script's macro calls expand at most [`MAX_EXPANSIONS`] times in total, into at most
//!   [`MAX_EXPANDED_EXPRS`] expressions: a macro calling another ten times, which calls
//!   another ten times, and so on, grows exponentially within the depth limit. Beyond, the
//!   expansion stops with one error on the call in the probe that ran away, naming the
//!   macro expanded most.
//!
//! Expanded expressions get fresh [`ExprId`]s; their spans stay in the macro's body, so
//! diagnostics about them point at the macro's code.

use crate::ast::{
    BaseType, Block, Expr, ExprId, ExprKind, MacroDef, Program, Stmt, StmtKind, TypeExpr,
};
use crate::diag::Diagnostic;
use crate::span::Span;
use std::collections::HashMap;

/// Deepest nesting of macro calls.
pub const MAX_DEPTH: usize = 64;
/// Most macro expansions in a script.
pub const MAX_EXPANSIONS: u32 = 10_000;
/// Most expressions macro expansions may create in a script.
pub const MAX_EXPANDED_EXPRS: u32 = 1_000_000;
/// Code of macro calls expanding beyond [`MAX_EXPANSIONS`] or [`MAX_EXPANDED_EXPRS`].
pub const MACRO_EXPANSION: &str = "sonde::parse::macro_expansion";
/// Code of a call with the wrong number of arguments.
pub const MACRO_ARITY: &str = "sonde::parse::macro_arity";
/// Code of a macro with statements used as a value.
pub const MACRO_VALUE: &str = "sonde::parse::macro_value";
/// Code of macros calling themselves (directly or not).
pub const MACRO_RECURSION: &str = "sonde::parse::macro_recursion";
/// Code of two macros with one name.
pub const MACRO_DUPLICATE: &str = "sonde::parse::duplicate_macro";
/// Code of a map parameter given something other than a map.
pub const MACRO_MAP_ARG: &str = "sonde::parse::macro_map_arg";

/// Expands every macro call of `program` in place.
pub fn expand(program: &mut Program) -> Result<(), Vec<Diagnostic>> {
    if program.macros.is_empty() {
        return Ok(());
    }
    let first_id = max_id(program) + 1;
    let mut ex = Expander {
        macros: HashMap::new(),
        next_id: first_id,
        first_id,
        expansions: 0,
        per_macro: HashMap::new(),
        root: None,
        stopped: false,
        runaway: Vec::new(),
        errors: Vec::new(),
    };
    // Macros of one name are overloaded by their parameters (bpftrace 0.27): a definition
    // that an earlier one would match exactly is a redefinition.
    for m in &program.macros {
        let defs = ex.macros.entry(m.name.name.clone()).or_default();
        let kinds: Vec<ArgKind> = m.params.iter().map(|p| param_kind(&p.name)).collect();
        if let Some(first) = defs.iter().find(|d| distance(d, &kinds) == 0) {
            ex.errors.push(
                Diagnostic::error(
                    MACRO_DUPLICATE,
                    m.name.span,
                    format!("Redefinition of macro: {}", m.name.name),
                )
                .with_label("an earlier definition takes these arguments")
                .with_secondary(first.name.span, "first definition")
                .with_help(
                    "rename one of them, or define the one with `$` or `@` parameters first",
                ),
            );
        } else {
            defs.push(m.clone());
        }
    }
    for probe in &mut program.probes {
        if let Some(pred) = &mut probe.predicate {
            ex.expr(pred, 0);
        }
        ex.block(&mut probe.body, 0);
    }
    if ex.errors.is_empty() {
        Ok(())
    } else {
        Err(ex.errors)
    }
}

/// What a macro argument is, for choosing among overloads.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ArgKind {
    /// A scratch variable (`$x`).
    Var,
    /// A map without keys (`@m`).
    Map,
    /// Any other expression.
    Expr,
}

/// The kind a parameter asks for (`$a` a variable, `@m` a map, `a` anything).
fn param_kind(name: &str) -> ArgKind {
    match name.as_bytes().first() {
        Some(b'$') => ArgKind::Var,
        Some(b'@') => ArgKind::Map,
        _ => ArgKind::Expr,
    }
}

/// The kind of a call's argument.
fn arg_kind(e: &Expr) -> ArgKind {
    match &e.kind {
        ExprKind::Var(_) => ArgKind::Var,
        ExprKind::Map { keys, .. } if keys.is_empty() => ArgKind::Map,
        _ => ArgKind::Expr,
    }
}

/// bpftrace's distance of a definition from a call's arguments: 1024 per missing or extra
/// argument, 1 per `$`/`@` parameter given something else (0 is an exact match).
fn distance(m: &MacroDef, args: &[ArgKind]) -> usize {
    let arity = 1024 * m.params.len().abs_diff(args.len());
    let mismatched = m
        .params
        .iter()
        .zip(args)
        .filter(|(p, a)| {
            let want = param_kind(&p.name);
            want != ArgKind::Expr && want != **a
        })
        .count();
    arity + mismatched
}

/// The definition a call uses: the first that matches its arguments exactly, else the first
/// of the closest with as many parameters (sonde lets a `$` parameter take any expression);
/// `None` when none has as many.
fn choose<'a>(defs: &'a [MacroDef], args: &[Expr]) -> Option<&'a MacroDef> {
    let kinds: Vec<ArgKind> = args.iter().map(arg_kind).collect();
    defs.iter()
        .filter(|m| m.params.len() == args.len())
        .min_by_key(|m| distance(m, &kinds))
}

struct Expander {
    /// The macros of each name, in the order defined.
    macros: HashMap<String, Vec<MacroDef>>,
    next_id: u32,
    /// The first id given to an expanded expression (`next_id - first_id` were created).
    first_id: u32,
    expansions: u32,
    /// Expansions of each macro.
    per_macro: HashMap<String, u32>,
    /// The outermost macro call being expanded (name and span, in a probe).
    root: Option<(String, Span)>,
    /// Set when the expansion budget ran out: nothing expands any more.
    stopped: bool,
    /// Macros reported as recursive: their further calls are not expanded (nor reported).
    runaway: Vec<String>,
    errors: Vec<Diagnostic>,
}

/// What one expansion substitutes.
struct Bindings<'a> {
    vars: HashMap<&'a str, &'a Expr>,
    maps: HashMap<&'a str, String>,
    idents: HashMap<&'a str, &'a Expr>,
    /// The macro's own scratch variables are renamed with this prefix.
    prefix: String,
}

impl Expander {
    fn block(&mut self, b: &mut Block, depth: usize) {
        let stmts = std::mem::take(&mut b.stmts);
        for mut s in stmts {
            if let StmtKind::Expr(call) = &s.kind
                && let Some((name, args)) = self.callee(call)
            {
                let span = call.span;
                if let Some(body) = self.instantiate(&name, &args, span, depth) {
                    let mut body = body;
                    self.block(&mut body, depth + 1);
                    b.stmts.extend(body.stmts);
                }
                continue;
            }
            self.stmt(&mut s, depth);
            b.stmts.push(s);
        }
    }

    fn stmt(&mut self, s: &mut Stmt, depth: usize) {
        match &mut s.kind {
            StmtKind::Expr(e) => self.expr(e, depth),
            StmtKind::Assign { target, value, .. } => {
                self.expr(target, depth);
                self.expr(value, depth);
            }
            StmtKind::Let { ty, value, .. } => {
                // `let $y: typeof(m())` expands the macro `m` in the annotation too.
                if let Some(t) = ty.as_mut().and_then(|t| t.typeof_expr_mut()) {
                    self.expr(t, depth);
                }
                if let Some(v) = value {
                    self.expr(v, depth);
                }
            }
            StmtKind::If { cond, then, else_ } => {
                self.expr(cond, depth);
                self.block(then, depth);
                if let Some(e) = else_ {
                    self.block(e, depth);
                }
            }
            StmtKind::Unroll { count: c, body } | StmtKind::While { cond: c, body } => {
                self.expr(c, depth);
                self.block(body, depth);
            }
            StmtKind::ForMap { map, body, .. } => {
                self.expr(map, depth);
                self.block(body, depth);
            }
            StmtKind::ForRange {
                start, end, body, ..
            } => {
                self.expr(start, depth);
                self.expr(end, depth);
                self.block(body, depth);
            }
            StmtKind::Return(Some(v)) => self.expr(v, depth),
            StmtKind::Break | StmtKind::Continue | StmtKind::Return(None) => {}
        }
    }

    /// The macro `e` calls, with its arguments: a call `name(args)` (or `name!(args)`), or a
    /// bare identifier naming a macro without parameters (`one` for `macro one() { 1 }`).
    fn callee(&self, e: &Expr) -> Option<(String, Vec<Expr>)> {
        match &e.kind {
            // A call no definition takes as many arguments of is left for the checker: a
            // builtin or function of that name may take it (bpftrace keeps its builtins as
            // macros of the standard library, which a user macro of another signature does
            // not hide); the checker names the macro's arities when there is neither.
            ExprKind::Call { name, args }
                if self
                    .macros
                    .get(&name.name)
                    .is_some_and(|defs| choose(defs, args).is_some()) =>
            {
                Some((name.name.clone(), args.clone()))
            }
            ExprKind::Ident(n)
                if self
                    .macros
                    .get(n)
                    .is_some_and(|v| v.iter().any(|m| m.params.is_empty())) =>
            {
                Some((n.clone(), Vec::new()))
            }
            _ => None,
        }
    }

    fn expr(&mut self, e: &mut Expr, depth: usize) {
        if let Some((name, args)) = self.callee(e) {
            let span = e.span;
            let Some(mut body) = self.instantiate(&name, &args, span, depth) else {
                return;
            };
            match body.stmts.pop() {
                Some(Stmt {
                    kind: StmtKind::Expr(mut value),
                    ..
                }) => {
                    self.expr(&mut value, depth + 1);
                    if body.stmts.is_empty() {
                        *e = value;
                    } else {
                        // Statements before the value: a block expression.
                        self.block(&mut body, depth + 1);
                        let id = ExprId(self.next_id);
                        self.next_id += 1;
                        *e = Expr {
                            id,
                            kind: ExprKind::Block {
                                body,
                                value: Some(Box::new(value)),
                            },
                            span,
                        };
                    }
                }
                _ => self.errors.push(
                    Diagnostic::error(MACRO_VALUE, span, format!("macro `{name}` is used as a value, but its body does not end with an expression"))
                        .with_label("used as a value here")
                        .with_help("call it as a statement (`name(...);`), or end its body with the value, e.g. `{ let $t = x * 2; $t + 1 }`"),
                ),
            }
            return;
        }
        if let ExprKind::Block { body, value } = &mut e.kind {
            self.block(body, depth);
            if let Some(v) = value {
                self.expr(v, depth);
            }
            return;
        }
        e.for_each_child_mut(&mut |c| self.expr(c, depth));
        if let Some(t) = e.typeof_operand_mut() {
            self.expr(t, depth);
        }
    }

    /// The body of macro `name` for one call, parameters substituted, or `None` after
    /// reporting why not.
    fn instantiate(
        &mut self,
        name: &str,
        args: &[Expr],
        span: Span,
        depth: usize,
    ) -> Option<Block> {
        if self.stopped || self.runaway.iter().any(|r| r == name) {
            return None;
        }
        if depth == 0 {
            self.root = Some((name.to_string(), span));
        }
        if self.expansions >= MAX_EXPANSIONS
            || self.next_id.saturating_sub(self.first_id) >= MAX_EXPANDED_EXPRS
        {
            self.budget_exhausted(name, span);
            return None;
        }
        if depth >= MAX_DEPTH {
            self.runaway.push(name.to_string());
            self.errors.push(
                Diagnostic::error(
                    MACRO_RECURSION,
                    span,
                    format!("macro `{name}` expands more than {MAX_DEPTH} levels deep"),
                )
                .with_label("expanded here")
                .with_help(format!(
                    "macros cannot call themselves, directly or through other macros; a chain \
                     of macros may be at most {MAX_DEPTH} long"
                )),
            );
            return None;
        }
        let defs = self.macros.get(name)?;
        let m = choose(defs, args).cloned()?;
        self.expansions += 1;
        *self.per_macro.entry(name.to_string()).or_insert(0) += 1;
        let mut bindings = Bindings {
            vars: HashMap::new(),
            maps: HashMap::new(),
            idents: HashMap::new(),
            // C `#define`s see the caller's variables; `macro`s get their own.
            prefix: if m.from_define {
                String::new()
            } else {
                format!("__{name}{}_", self.expansions)
            },
        };
        for (p, a) in m.params.iter().zip(args) {
            if let Some(v) = p.name.strip_prefix('$') {
                bindings.vars.insert(v, a);
            } else if let Some(map) = p.name.strip_prefix('@') {
                match &a.kind {
                    ExprKind::Map { name, keys } if keys.is_empty() => {
                        bindings.maps.insert(map, name.clone());
                    }
                    _ => {
                        self.errors.push(
                            Diagnostic::error(
                                MACRO_MAP_ARG,
                                a.span,
                                format!("parameter `{}` of macro `{name}` takes a map", p.name),
                            )
                            .with_label("not a map")
                            .with_help("pass a map such as `@counts`"),
                        );
                        return None;
                    }
                }
            } else {
                bindings.idents.insert(&p.name, a);
            }
        }
        let mut body = m.body.clone();
        for s in &mut body.stmts {
            self.subst_stmt(s, &bindings);
        }
        Some(body)
    }

    /// Reports, once, that the expansion budget ran out while expanding `name` (called at
    /// `span`), and stops every further expansion.
    fn budget_exhausted(&mut self, name: &str, span: Span) {
        self.stopped = true;
        let (root, root_span) = self.root.clone().unwrap_or((name.to_string(), span));
        let (most, count) = self
            .per_macro
            .iter()
            .max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.cmp(a.0)))
            .map_or((name.to_string(), 0), |(m, c)| (m.clone(), *c));
        let limit = if self.expansions >= MAX_EXPANSIONS {
            format!("more than {MAX_EXPANSIONS} macro expansions")
        } else {
            format!("more than {MAX_EXPANDED_EXPRS} expressions")
        };
        let mut d = Diagnostic::error(
            MACRO_EXPANSION,
            root_span,
            format!("macro `{root}` expands without bound: `{most}` ran away"),
        )
        .with_label(format!("this call expands into {limit}"))
        .with_help(format!(
            "a script's macros expand at most {MAX_EXPANSIONS} times in total (into at most {MAX_EXPANDED_EXPRS} expressions); a macro that calls macros several times, which do the same, grows exponentially"
        ));
        if let Some(m) = self.macros.get(&most).and_then(|v| v.first()) {
            d = d.with_secondary(m.name.span, format!("`{most}` was expanded {count} times"));
        }
        if span != root_span {
            d = d.with_secondary(span, format!("expansion stopped at this call of `{name}`"));
        }
        self.errors.push(d);
    }

    fn fresh(&mut self, e: &mut Expr) {
        e.id = ExprId(self.next_id);
        self.next_id += 1;
        e.for_each_child_mut(&mut |c| self.fresh(c));
        e.for_each_typeof_mut(&mut |c| self.fresh(c));
    }

    fn subst_stmt(&mut self, s: &mut Stmt, b: &Bindings<'_>) {
        match &mut s.kind {
            StmtKind::Let { var, ty, value } => {
                var.name = format!("{}{}", b.prefix, var.name);
                if let Some(t) = ty.as_mut() {
                    self.subst_type(t, b);
                }
                if let Some(t) = ty.as_mut().and_then(|t| t.typeof_expr_mut()) {
                    self.subst(t, b);
                }
                if let Some(v) = value {
                    self.subst(v, b);
                }
            }
            StmtKind::ForMap { var, map, body } => {
                var.name = format!("{}{}", b.prefix, var.name);
                self.subst(map, b);
                body.stmts.iter_mut().for_each(|s| self.subst_stmt(s, b));
            }
            StmtKind::ForRange {
                var,
                start,
                end,
                body,
            } => {
                var.name = format!("{}{}", b.prefix, var.name);
                self.subst(start, b);
                self.subst(end, b);
                body.stmts.iter_mut().for_each(|s| self.subst_stmt(s, b));
            }
            StmtKind::Expr(e) => self.subst(e, b),
            StmtKind::Assign { target, value, .. } => {
                self.subst(target, b);
                self.subst(value, b);
            }
            StmtKind::If { cond, then, else_ } => {
                self.subst(cond, b);
                then.stmts.iter_mut().for_each(|s| self.subst_stmt(s, b));
                if let Some(e) = else_ {
                    e.stmts.iter_mut().for_each(|s| self.subst_stmt(s, b));
                }
            }
            StmtKind::Unroll { count: c, body } | StmtKind::While { cond: c, body } => {
                self.subst(c, b);
                body.stmts.iter_mut().for_each(|s| self.subst_stmt(s, b));
            }
            StmtKind::Return(Some(v)) => self.subst(v, b),
            StmtKind::Break | StmtKind::Continue | StmtKind::Return(None) => {}
        }
    }

    fn subst(&mut self, e: &mut Expr, b: &Bindings<'_>) {
        let replacement = match &e.kind {
            ExprKind::Var(v) => match b.vars.get(v.as_str()) {
                Some(arg) => Some((*arg).clone()),
                None => {
                    e.kind = ExprKind::Var(format!("{}{v}", b.prefix));
                    None
                }
            },
            ExprKind::Ident(i) => b.idents.get(i.as_str()).map(|arg| (*arg).clone()),
            _ => None,
        };
        if let Some(mut arg) = replacement {
            self.fresh(&mut arg);
            *e = arg;
            return;
        }
        if let ExprKind::Map { name, .. } = &mut e.kind
            && let Some(to) = b.maps.get(name.as_str())
        {
            *name = to.clone();
        }
        e.id = ExprId(self.next_id);
        self.next_id += 1;
        if let ExprKind::Block { body, value } = &mut e.kind {
            body.stmts.iter_mut().for_each(|s| self.subst_stmt(s, b));
            if let Some(v) = value {
                self.subst(v, b);
            }
            return;
        }
        if let ExprKind::Cast { ty, .. } | ExprKind::Type(ty) = &mut e.kind {
            self.subst_type(ty, b);
        }
        e.for_each_child_mut(&mut |c| self.subst(c, b));
        if let Some(t) = e.typeof_operand_mut() {
            self.subst(t, b);
        }
        // `t[2]` of a type parameter is an array type (`sizeof(t[2])`).
        if let ExprKind::Index { base, index } = &e.kind
            && let (ExprKind::Type(t), ExprKind::Int(n)) = (&base.kind, &index.kind)
            && t.array.is_none()
            && let Ok(n) = u32::try_from(*n)
        {
            let mut t = t.clone();
            t.array = Some(n.into());
            t.span = e.span;
            e.kind = ExprKind::Type(t);
        }
    }

    /// A type naming a type parameter (`t*` in `(t*)x` or `sizeof(t*)`, for a macro called
    /// with `typeof(uint8)`) becomes the argument's type, with the stars and array written
    /// after the name.
    fn subst_type(&mut self, ty: &mut TypeExpr, b: &Bindings<'_>) {
        let BaseType::Named(name) = &ty.base else {
            return;
        };
        let Some(ExprKind::Type(arg)) = b.idents.get(name.as_str()).map(|a| &a.kind) else {
            return;
        };
        let mut arg = arg.clone();
        if let BaseType::Typeof(operand) = &mut arg.base {
            self.fresh(operand);
        }
        ty.base = arg.base;
        ty.pointer_depth = ty.pointer_depth.saturating_add(arg.pointer_depth);
        ty.array = ty.array.or(arg.array);
    }
}

/// The largest expression id in `program`.
fn max_id(program: &Program) -> u32 {
    fn e(x: &Expr, m: &mut u32) {
        *m = (*m).max(x.id.0);
        x.children().into_iter().for_each(|c| e(c, m));
        x.typeof_operands().into_iter().for_each(|c| e(c, m));
    }
    fn s(st: &Stmt, m: &mut u32) {
        match &st.kind {
            StmtKind::Expr(x) => e(x, m),
            StmtKind::Assign { target, value, .. } => {
                e(target, m);
                e(value, m);
            }
            StmtKind::Let { ty, value, .. } => {
                value.iter().for_each(|x| e(x, m));
                ty.iter()
                    .filter_map(|t| t.typeof_expr())
                    .for_each(|x| e(x, m));
            }
            StmtKind::If { cond, then, else_ } => {
                e(cond, m);
                then.stmts.iter().for_each(|x| s(x, m));
                else_.iter().flat_map(|b| &b.stmts).for_each(|x| s(x, m));
            }
            StmtKind::Unroll { count: c, body } | StmtKind::While { cond: c, body } => {
                e(c, m);
                body.stmts.iter().for_each(|x| s(x, m));
            }
            StmtKind::ForMap { map, body, .. } => {
                e(map, m);
                body.stmts.iter().for_each(|x| s(x, m));
            }
            StmtKind::ForRange {
                start, end, body, ..
            } => {
                e(start, m);
                e(end, m);
                body.stmts.iter().for_each(|x| s(x, m));
            }
            StmtKind::Return(Some(x)) => e(x, m),
            StmtKind::Break | StmtKind::Continue | StmtKind::Return(None) => {}
        }
    }
    let mut m = 0;
    for p in &program.probes {
        p.predicate.iter().for_each(|x| e(x, &mut m));
        p.body.stmts.iter().for_each(|x| s(x, &mut m));
    }
    for mac in &program.macros {
        mac.body.stmts.iter().for_each(|x| s(x, &mut m));
    }
    for c in &program.config {
        e(&c.value, &mut m);
    }
    m
}

#[cfg(test)]
mod tests {
    use crate::ast::{ExprKind, StmtKind};
    use crate::syntax::parse;

    #[test]
    fn statement_and_value_calls_expand_with_hygiene() {
        let p = parse("macro inc(@m, k) { @m[k]++; $tmp = k; } macro twice($x) { $x * 2 } BEGIN { inc(@a, 1); $v = twice(3); }").unwrap();
        let body = &p.probes[0].body.stmts;
        assert_eq!(body.len(), 3, "{body:#?}");
        let StmtKind::Expr(e) = &body[0].kind else {
            panic!("{:?}", body[0])
        };
        let ExprKind::IncDec { target, .. } = &e.kind else {
            panic!("{e:?}")
        };
        assert!(
            matches!(&target.kind, ExprKind::Map { name, keys } if name == "a" && keys.len() == 1)
        );
        let StmtKind::Assign { target, .. } = &body[1].kind else {
            panic!()
        };
        assert!(
            matches!(&target.kind, ExprKind::Var(v) if v.starts_with("__inc") && v.ends_with("_tmp"))
        );
        let StmtKind::Assign { value, .. } = &body[2].kind else {
            panic!()
        };
        assert!(matches!(&value.kind, ExprKind::Binary { .. }));
    }

    #[test]
    fn errors_have_codes() {
        let code = |src: &str| parse(src).unwrap_err()[0].code;
        assert_eq!(
            code("macro f($x) { $x = 1; } BEGIN { $z = f($z); }"),
            super::MACRO_VALUE
        );
        assert_eq!(
            code("macro f($x) { f($x); } BEGIN { f(1); }"),
            super::MACRO_RECURSION
        );
        assert_eq!(
            code("macro f() { 1 } macro f() { 2 } BEGIN { f(); }"),
            super::MACRO_DUPLICATE
        );
        assert_eq!(
            code("macro f(@m) { print(@m); } BEGIN { f(1); }"),
            super::MACRO_MAP_ARG
        );
    }

    /// Macros that call macros several times grow exponentially within the depth limit: the
    /// expansion stops at `MAX_EXPANSIONS`, with one error on the probe's call naming the
    /// macro expanded most; below the limit, everything expands.
    #[test]
    fn runaway_expansion_stops_with_one_error() {
        let chain = |levels: usize| {
            let mut src = String::from("macro m0() { @a = 1; }\n");
            for i in 1..=levels {
                let calls = format!("m{}(); ", i - 1).repeat(10);
                src += &format!("macro m{i}() {{ {calls}}}\n");
            }
            src + &format!("BEGIN {{ m{levels}(); }}")
        };
        // 10^3 expansions: fine.
        let p = parse(&chain(3)).unwrap();
        assert_eq!(p.probes[0].body.stmts.len(), 1000);
        // 10^6: stopped.
        let src = chain(6);
        let e = parse(&src).unwrap_err();
        assert_eq!(e.len(), 1, "{e:#?}");
        assert_eq!(e[0].code, super::MACRO_EXPANSION);
        assert_eq!(&src[e[0].span.start..e[0].span.end], "m6()");
        assert!(e[0].message.contains("`m0` ran away"), "{}", e[0].message);
        // Ten calls of itself: recursion, reported once.
        let e = parse(&format!(
            "macro f() {{ {}}} BEGIN {{ f(); f(); }}",
            "f(); ".repeat(10)
        ))
        .unwrap_err();
        assert_eq!(e.len(), 1, "{e:#?}");
        assert_eq!(e[0].code, super::MACRO_RECURSION);
    }

    #[test]
    fn a_chain_of_40_defines_expands() {
        let mut src = String::from("#define A0 1\n");
        for i in 1..=40 {
            src += &format!("#define A{i} (A{} + 1)\n", i - 1);
        }
        src += "BEGIN { @x = A40; }";
        assert!(parse(&src).is_ok(), "{:?}", parse(&src).err());
    }

    #[test]
    fn expanded_ids_stay_unique() {
        let p = parse("macro sq($x) { $x * $x } BEGIN { @a = sq(sq(2)) + sq(3); }").unwrap();
        let mut ids = Vec::new();
        fn walk(e: &crate::ast::Expr, ids: &mut Vec<u32>) {
            ids.push(e.id.0);
            e.children().into_iter().for_each(|c| walk(c, ids));
        }
        for s in &p.probes[0].body.stmts {
            if let StmtKind::Assign { target, value, .. } = &s.kind {
                walk(target, &mut ids);
                walk(value, &mut ids);
            }
        }
        let n = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), n);
    }
}
