//! Calls: builtins written with parentheses, and functions (aggregations included) whose
//! type rules come from the catalog.
//!
//! - A zero-argument call of a builtin name is the builtin (`pid()` is `pid`).
//! - A bare map argument (`print(@m)`, `delete(@m, k)`) is a *whole map*: its key and value
//!   types go to the rule in [`CallCheck::map_args`]; its `arg_types` entry is the map's value
//!   as read (`count`/`sum`/... as `int64`), or the aggregation itself for `hist`/`lhist`/
//!   `stats`. No key check applies to it.
//! - An out-parameter (`find(@m, k, $v)`'s `$v`, see `Function::out_args`) must be a
//!   `$variable`; it is not read, and after the rule it is assigned the rule's `out_type`
//!   exactly as `$v = value` would be (first assignment types it, later ones must agree).
//! - A non-numeric positional parameter passed directly is a string literal.
//! - The result of an aggregation is valid only as `@m[...] = agg(...)`
//!   (`sonde::sema::agg_position`); a `void` result only as a statement
//!   (`sonde::sema::void_value`). Functions marked unsafe need `--unsafe`.

use super::errors::*;
use super::probe::ProbeChecker;
use super::scope::VarSlot;
use super::unify::read_value;
use crate::ast::{Expr, ExprKind, Ident};
use crate::catalog::{CallCheck, CallPosition, MapArg};
use crate::diag::Diagnostic;
use crate::types::Type;

/// The functions that take a type as an argument (`sizeof(uint8)`, `sizeof(typeof($x))`).
const TYPE_ARG_FUNCTIONS: &[&str] = &[
    "sizeof",
    "offsetof",
    "container_of",
    "is_array",
    "is_integer",
    "is_unsigned_integer",
    "is_ptr",
    "is_str",
    "is_literal",
];

impl ProbeChecker<'_, '_> {
    /// The type of call `e` (`name(args)`) at position `pos`.
    pub fn call(
        &mut self,
        e: &Expr,
        name: &Ident,
        args: &[Expr],
        pos: CallPosition,
    ) -> Option<Type> {
        let catalog = self.g.catalog;
        if args.is_empty() && (catalog.builtin(&name.name).is_some() || name.name == "config") {
            return self.ident(&name.name, e.span);
        }
        let Some(func) = catalog.function(&name.name) else {
            self.unknown_function(e, name, args);
            return None;
        };
        let mut ok = true;
        let mut arg_types = Vec::with_capacity(args.len());
        let mut map_args = Vec::with_capacity(args.len());
        for (i, a) in args.iter().enumerate() {
            // Words rather than values (`offsetof`'s field path): the rule reads them.
            if func.unchecked_args().contains(&i) {
                arg_types.push(Type::Void);
                map_args.push(None);
                continue;
            }
            // Out-parameters (`find`'s `$v`): written by the call, not read.
            if func.out_args().contains(&i) {
                ok &= self.out_arg(a, name);
                arg_types.push(Type::Void);
                map_args.push(None);
                continue;
            }
            if let ExprKind::Type(te) = &a.kind
                && !TYPE_ARG_FUNCTIONS.contains(&name.name.as_str())
            {
                self.report(
                    Diagnostic::error(ARG_TYPE, a.span, "a type is not a value")
                        .with_label(format!("argument {} of `{}` is a type", i + 1, name.name))
                        .with_help(match te.typeof_expr() {
                            Some(_) => "pass the expression itself, without `typeof`",
                            None => "types go in casts (`(uint8)v`), `sizeof` and `offsetof`",
                        }),
                );
                ok = false;
                arg_types.push(Type::Void);
                map_args.push(None);
                continue;
            }
            let (t, m) = self.call_arg(a);
            ok &= t.is_some();
            arg_types.push(t.unwrap_or(Type::Void));
            map_args.push(m);
        }
        if func.is_unsafe() && !self.g.options.unsafe_allowed {
            self.report(
                Diagnostic::error(
                    UNSAFE_FUNCTION,
                    name.span,
                    format!(
                        "{}() is unsafe. To use you need the --unsafe flag",
                        name.name
                    ),
                )
                .with_label("unsafe function")
                .with_help("run with --unsafe if you really want this"),
            );
            ok = false;
        }
        if !ok {
            self.poison_out_args(func.out_args(), args);
            return None;
        }
        let warnings = std::cell::RefCell::new(Vec::new());
        let check = CallCheck {
            name,
            args,
            arg_types: &arg_types,
            span: e.span,
            position: pos,
            ctx: self.ctx,
            positional: &self.g.options.positional,
            map_args: &map_args,
            max_strlen: self.g.config.max_strlen,
            named: &self.g.options.named,
            kernel: self.g.kernel,
            stack_mode: self.g.config.stack_mode,
            warnings: &warnings,
        };
        let checked = func.check(&check);
        for w in warnings.take() {
            self.report(w);
        }
        let t = match checked {
            Ok(t) => t,
            Err(d) => {
                self.report(d);
                self.poison_out_args(func.out_args(), args);
                return None;
            }
        };
        let written: Vec<(usize, Option<Type>)> = func
            .out_args()
            .iter()
            .map(|&i| (i, func.out_type(&check, i)))
            .collect();
        for (i, ty) in written {
            if let Some(
                a @ Expr {
                    kind: ExprKind::Var(var),
                    ..
                },
            ) = args.get(i)
            {
                if let Some(t) = &ty {
                    self.var_widths.assigned(var, t);
                }
                self.assign_var(var, ty, a, a.span);
            }
        }
        match (&t, pos) {
            (Type::Agg(_), CallPosition::MapAssign) => Some(t),
            (Type::Agg(_), _) => {
                self.report(
                    Diagnostic::error(
                        AGG_POSITION,
                        e.span,
                        format!("`{}` can only be assigned to a map", name.name),
                    )
                    .with_label("aggregation used here")
                    .with_help(format!("write `@name = {}(...)`", name.name)),
                );
                None
            }
            (Type::Void, CallPosition::Value | CallPosition::MapAssign) => {
                self.report(
                    Diagnostic::error(VOID_VALUE, e.span, format!("`{}` has no value", name.name))
                        .with_label("used as a value")
                        .with_help(format!(
                            "call `{}(...)` as a statement of its own",
                            name.name
                        )),
                );
                None
            }
            _ => Some(t),
        }
    }

    /// The type of one argument, and its map info when it is a whole map.
    fn call_arg(&mut self, a: &Expr) -> (Option<Type>, Option<MapArg>) {
        match &a.kind {
            ExprKind::Map { name, keys } if keys.is_empty() => {
                self.reads.maps.push((a.id, name.clone()));
                let Some(value) = self.g.maps.value(name).cloned() else {
                    return (self.map_value(name, a.span), None);
                };
                let key = self.g.maps.key(name).flatten();
                let t = read_value(&value).unwrap_or_else(|| value.clone());
                self.set(a, t.clone());
                (
                    Some(t),
                    Some(MapArg {
                        name: name.clone(),
                        key,
                        value,
                    }),
                )
            }
            ExprKind::Positional(n) => {
                let t = self.positional(*n);
                if let Some(t) = &t {
                    self.set(a, t.clone());
                }
                (t, None)
            }
            _ => (self.expr(a), None),
        }
    }

    /// Checks that out-parameter `a` of function `name` is a scratch variable; reports it
    /// otherwise.
    fn out_arg(&mut self, a: &Expr, name: &Ident) -> bool {
        if matches!(a.kind, ExprKind::Var(_)) {
            return true;
        }
        self.report(
            Diagnostic::error(
                ARG_TYPE,
                a.span,
                format!("`{}` writes its result into a scratch variable", name.name),
            )
            .with_label("expected a `$variable` here")
            .with_help("pass a scratch variable, declared with `let $v;` if it has no value yet"),
        );
        false
    }

    /// After a call with an error: its out-parameters that had no value yet stay silent
    /// (their uses would only repeat the error).
    fn poison_out_args(&mut self, out: &[usize], args: &[Expr]) {
        for &i in out {
            if let Some(ExprKind::Var(var)) = args.get(i).map(|a| &a.kind)
                && matches!(self.scopes.get(var), None | Some(VarSlot::Declared(_)))
            {
                self.scopes.set(var, VarSlot::Poisoned);
            }
        }
    }

    /// Reports an unknown function (or a builtin called with arguments).
    fn unknown_function(&mut self, e: &Expr, name: &Ident, args: &[Expr]) {
        // Still check the arguments, so their own mistakes are reported.
        for a in args {
            self.call_arg(a);
        }
        if let Some(d) = self.macro_arity(e, name, args) {
            self.report(d);
            return;
        }
        let catalog = self.g.catalog;
        if catalog.builtin(&name.name).is_some() {
            self.report(
                Diagnostic::error(
                    ARITY,
                    e.span,
                    format!(
                        "`{}` is a builtin variable and takes no arguments",
                        name.name
                    ),
                )
                .with_label(format!("{} arguments given", args.len()))
                .with_help(format!("write `{}`", name.name)),
            );
            return;
        }
        if name.name == "typeof" {
            self.report(
                Diagnostic::error(UNKNOWN_FUNCTION, name.span, "`typeof` is not a function")
                    .with_label("`typeof(...)` is a type, not a value")
                    .with_help("use it where a type goes: `let $y: typeof($x)`, `(typeof(@m))v`; `sizeof` takes the expression itself: `sizeof($x)`"),
            );
            return;
        }
        let functions = catalog.functions();
        let builtins = catalog.builtins();
        let names = functions
            .iter()
            .map(|f| f.name())
            .chain(builtins.iter().map(|b| b.name()));
        let mut d = Diagnostic::error(
            UNKNOWN_FUNCTION,
            name.span,
            format!("unknown function `{}`", name.name),
        )
        .with_label("no such function");
        if let Some(h) = suggest(&name.name, names, str::to_string) {
            d = d.with_help(h);
        }
        self.report(d);
    }
}

impl ProbeChecker<'_, '_> {
    /// The error for a call of a macro that no definition of that name takes (as many
    /// arguments), when no function of the name takes it either.
    fn macro_arity(&self, e: &Expr, name: &Ident, args: &[Expr]) -> Option<Diagnostic> {
        let defs: Vec<_> = self
            .g
            .macros
            .iter()
            .filter(|m| m.name.name == name.name)
            .collect();
        if defs.is_empty() {
            return None;
        }
        let counts: Vec<String> = defs.iter().map(|m| m.params.len().to_string()).collect();
        let mut d = Diagnostic::error(
            crate::syntax::macros::MACRO_ARITY,
            e.span,
            format!(
                "macro `{}` takes {} argument(s), {} given",
                name.name,
                counts.join(" or "),
                args.len()
            ),
        )
        .with_label("called here");
        for m in defs {
            d = d.with_secondary(m.name.span, "defined here");
        }
        Some(d)
    }
}
