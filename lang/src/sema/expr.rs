//! Types of expressions: literals, names, maps, field and element access.
//!
//! Rules worth knowing:
//! - Integer literals are `int64`, or `uint64` when larger than `i64::MAX`. A string literal
//!   `"abc"` is `string[4]`.
//! - Positional parameters: `$N` whose argument parses as an integer is an integer literal
//!   (a missing or empty argument is `0`). A non-numeric `$N` is a string literal, which
//!   `+` folds as bpftrace 0.27 does (`$1 + 2` from its third character, see
//!   [`crate::catalog::const_string`]). `$#` is `uint64`.
//! - An identifier is, in this order: a builtin, an enumerator of the script, a `#define`,
//!   an enumerator of the kernel.
//! - `.field` and `->field` both work on records and on pointers to records (auto-deref).
//! - Reading a map gives its value type, except aggregations: `count`/`sum`/`min`/`max`/`avg`
//!   read as `int64`; `hist`/`lhist`/`stats` cannot be read (`sonde::sema::agg_value`).

use super::constants::{self, Constant};
use super::errors::*;
use super::probe::ProbeChecker;
use super::scope::VarSlot;
use super::unify::{is_int, read_value};
use crate::ast::{BaseType, Expr, ExprKind, TypeExpr};
use crate::catalog::{CallPosition, const_int};
use crate::ctypes::{c_decl_type, is_opaque};
use crate::diag::Diagnostic;
use crate::limits::check_value_size;
use crate::span::Span;
use crate::types::{StackMode, Type};

impl ProbeChecker<'_, '_> {
    /// The type of `e` used as a value.
    pub fn expr(&mut self, e: &Expr) -> Option<Type> {
        self.expr_in(e, CallPosition::Value)
    }

    /// Checks a condition (`if`, `while`, predicate, `?:`, `&&`): an int, bool or pointer.
    pub fn condition(&mut self, e: &Expr) -> Option<Type> {
        let t = self.expr(e)?;
        if super::unify::is_truthy(&t) {
            return Some(t);
        }
        self.report(
            Diagnostic::error(
                CONDITION_TYPE,
                e.span,
                "condition is not an integer or pointer",
            )
            .with_label(format!("this is {t}"))
            .with_help("compare it explicitly, e.g. `comm == \"bash\"`"),
        );
        None
    }

    /// The type of `e` where a call in it has position `pos`.
    pub fn expr_in(&mut self, e: &Expr, pos: CallPosition) -> Option<Type> {
        let t = match &e.kind {
            ExprKind::Int(v) => {
                if *v > i64::MAX as u64 {
                    Type::U64
                } else {
                    Type::I64
                }
            }
            ExprKind::Bool(_) => Type::Bool,
            ExprKind::Str(s) => Type::Str {
                size: s.len() as u32 + 1,
            },
            ExprKind::PositionalCount => Type::U64,
            ExprKind::Positional(n) => self.positional(*n)?,
            ExprKind::Ident(name) => self.ident(name, e.span)?,
            ExprKind::Var(name) => {
                self.reads.vars.push((e.id, name.clone()));
                self.var(name, e.span)?
            }
            ExprKind::Map { name, keys } => {
                self.reads.maps.push((e.id, name.clone()));
                self.map_read(name, keys, e.span)?
            }
            ExprKind::Call { name, args } => self.call(e, name, args, pos)?,
            ExprKind::Type(te) => self.type_expr(te)?,
            ExprKind::Binary { op, lhs, rhs } => self.binary(e, *op, lhs, rhs)?,
            ExprKind::Unary { op, expr } => self.unary(e, *op, expr)?,
            ExprKind::IncDec { target, .. } => self.inc_dec(target)?,
            ExprKind::Ternary { cond, then, else_ } => self.ternary(e, cond, then, else_, pos)?,
            ExprKind::Block { body, value } => {
                self.scopes.push();
                for s in &body.stmts {
                    self.stmt(s);
                }
                let t = match value {
                    Some(v) => self.expr_in(v, pos),
                    None => Some(Type::Void),
                };
                self.pop_scope();
                t?
            }
            ExprKind::Cast { ty, expr } => self.cast(e, ty, expr)?,
            ExprKind::Field { base, field, .. } => self.field(base, &field.name, field.span)?,
            ExprKind::TupleIndex { base, index } => self.tuple_index(e, base, *index)?,
            ExprKind::Index { base, index } => self.index(e, base, index)?,
            ExprKind::Record { names, values } => {
                let types: Vec<Option<Type>> = values.iter().map(|i| self.expr(i)).collect();
                let types = types.into_iter().collect::<Option<Vec<_>>>()?;
                for (i, n) in names.iter().enumerate() {
                    if let Some(first) = names[..i].iter().find(|m| m.name == n.name) {
                        self.report(
                            Diagnostic::error(
                                super::errors::DUPLICATE_FIELD,
                                n.span,
                                format!("record field `{}` is named twice", n.name),
                            )
                            .with_label("second use")
                            .with_secondary(first.span, "first use"),
                        );
                        return None;
                    }
                }
                let t = crate::types::record_of(
                    names.iter().map(|n| n.name.clone()).zip(types).collect(),
                );
                self.within_value_limit(e.span, "this record", &t)?;
                t
            }
            ExprKind::Tuple(items) if items.is_empty() => {
                // `()` parses (bpftrace 0.26's grammar has it) but is no value: nothing can
                // be stored, printed or compared in it, and bpftrace refuses it too.
                self.report(
                    Diagnostic::error(VOID_VALUE, e.span, "an empty tuple `()` has no value")
                        .with_label("a tuple needs at least one element")
                        .with_help("write `(x,)` for a tuple of one element"),
                );
                return None;
            }
            ExprKind::Tuple(items) => {
                let types: Vec<Option<Type>> = items.iter().map(|i| self.expr(i)).collect();
                let t = Type::Tuple(types.into_iter().collect::<Option<Vec<_>>>()?);
                self.within_value_limit(e.span, "this tuple", &t)?;
                t
            }
        };
        self.set(e, t)
    }

    /// `$n`: a number when its text is one (or empty, or not given: 0), else a string literal
    /// (bpftrace 0.27).
    pub fn positional(&mut self, n: u32) -> Option<Type> {
        let arg = (n as usize)
            .checked_sub(1)
            .and_then(|i| self.g.options.positional.get(i));
        let Some(arg) = arg else {
            return Some(Type::I64);
        };
        // As bpftrace 0.27 reads it: hex, octal, binary, `1e6`, `5ms` are numbers too.
        match crate::numbers::parse_positional(arg) {
            Some((_, false)) => return Some(Type::I64),
            Some((_, true)) => return Some(Type::U64),
            None => {}
        }
        if arg.is_empty() {
            return Some(Type::I64);
        }
        Some(Type::Str {
            size: arg.len() as u32 + 1,
        })
    }

    /// A bare identifier: builtin, enumerator or `#define`.
    pub fn ident(&mut self, name: &str, span: Span) -> Option<Type> {
        // A sonde extension gives way to the script's own definition of its name.
        let defined = |name: &str| {
            self.g.defs.enums.contains_key(name) || self.g.defs.constants.is_defined(name)
        };
        if let Some(b) = self.g.catalog.builtin(name)
            && !(b.yields_to_definitions() && defined(name))
        {
            return match b.check_in(self.ctx, self.g.kernel, span) {
                Ok(t) => Some(self.configured_stack(t, span)),
                Err(d) => {
                    self.report(d);
                    None
                }
            };
        }
        // bpftrace 0.27's `config` record, unless the script defines the name.
        if name == "config" && !defined(name) {
            return Some(self.g.config.record_type());
        }
        if let Some((tag, _)) = self.g.defs.enums.get(name) {
            return Some(Type::Enum {
                name: tag.clone(),
                bits: 64,
            });
        }
        match self.g.defs.constants.get(name) {
            Some(Constant::Str(s)) => {
                return Some(Type::Str {
                    size: u32::try_from(s.len() + 1).unwrap_or(u32::MAX),
                });
            }
            Some(Constant::Int(_)) => return Some(Type::I64),
            None if self.g.defs.constants.is_defined(name) => {
                self.report(
                    Diagnostic::error(
                        UNKNOWN_IDENT,
                        span,
                        format!("`{name}` is a #define whose value is not a constant"),
                    )
                    .with_label(match self.g.defs.constants.why_not(name) {
                        Some(why) => format!("not an integer expression or a string: {why}"),
                        None => "not an integer expression or a string".to_string(),
                    })
                    .with_help("sonde uses `#define`s whose value is an integer expression or a string literal"),
                );
                return None;
            }
            None => {}
        }
        if let Some((tag, _)) = self.g.kernel.enum_value(name) {
            return Some(Type::Enum {
                name: tag,
                bits: 64,
            });
        }
        let builtins = self.g.catalog.builtins();
        let names: Vec<&str> = builtins.iter().map(|b| b.name()).collect();
        let mut d = Diagnostic::error(UNKNOWN_IDENT, span, format!("unknown identifier `{name}`"))
            .with_label("not a builtin, enum value or #define");
        if let Some(header) = constants::builtin_header(name) {
            d = d.with_help(format!(
                "`{name}` comes from <{header}>: add `#include <{header}>` to the script"
            ));
        } else if let Some(h) = suggest(name, names, str::to_string) {
            d = d.with_help(h);
        }
        self.report(d);
        None
    }

    /// A scratch variable read.
    fn var(&mut self, name: &str, span: Span) -> Option<Type> {
        match self.scopes.get(name) {
            Some(VarSlot::Typed(t, _)) => Some(t.clone()),
            Some(VarSlot::Poisoned) => None,
            Some(VarSlot::Declared(decl)) => {
                // bpftrace 0.27 warns and reads the zero `let` stored; sonde types such a
                // read as an integer, which a later assignment must then be.
                let decl = *decl;
                self.report(
                    Diagnostic::warning(
                        USED_BEFORE_ASSIGNED,
                        span,
                        format!("Variable used before it was assigned: ${name}"),
                    )
                    .with_label("reads 0")
                    .with_secondary(decl, "declared here without a value"),
                );
                self.table.vars.entry(name.to_string()).or_insert(Type::I64);
                Some(Type::I64)
            }
            None => {
                let visible = self.scopes.visible();
                let mut d = Diagnostic::error(
                    UNDEFINED_VARIABLE,
                    span,
                    format!("undefined variable `${name}`"),
                )
                .with_label("not defined before this use (scratch variables are block scoped)");
                if let Some(at) = self.scopes.ended(name) {
                    d = d.with_secondary(at, "defined here, in a block that has ended").with_help(format!(
                        "since bpftrace 0.22 a variable lives in the block that defines it; declare it before that block with `let ${name};`"
                    ));
                } else if let Some(h) = suggest(name, visible.iter().map(String::as_str), |c| {
                    format!("${c}")
                }) {
                    d = d.with_help(h);
                }
                self.report(d);
                None
            }
        }
    }

    /// The key type of a map access: the key's type, a tuple for several keys, `None` without
    /// keys. `Err(())` when a key had an error.
    pub fn map_key(&mut self, keys: &[Expr]) -> Result<Option<Type>, ()> {
        let types: Vec<Option<Type>> = keys.iter().map(|k| self.expr(k)).collect();
        let types = types.into_iter().collect::<Option<Vec<_>>>().ok_or(())?;
        Ok(match types.len() {
            0 => None,
            1 => types.into_iter().next(),
            _ => {
                let t = Type::Tuple(types);
                let span = Span::new(keys[0].span.start, keys[keys.len() - 1].span.end);
                self.within_value_limit(span, "this map key", &t)
                    .ok_or(())?;
                Some(t)
            }
        })
    }

    /// `Some(())` when a value of type `t` fits [`crate::limits::MAX_VALUE_SIZE`]; else reports
    /// `sonde::sema::too_large` at `span` and gives `None`.
    fn within_value_limit(&mut self, span: Span, what: &str, t: &Type) -> Option<()> {
        match check_value_size(span, what, u64::from(t.size())) {
            Ok(()) => Some(()),
            Err(d) => {
                self.report(d);
                None
            }
        }
    }

    /// Span of a map access from the name to the last key.
    fn map_read(&mut self, name: &str, keys: &[Expr], span: Span) -> Option<Type> {
        let key = self.map_key(keys).ok()?;
        if let Err(d) = self.g.maps.use_key(name, key, span) {
            self.report(d);
        }
        self.map_value(name, span)
    }

    /// The readable value of map `name` (reported at `span` when undefined or unreadable).
    pub fn map_value(&mut self, name: &str, span: Span) -> Option<Type> {
        let Some(value) = self.g.maps.value(name).cloned() else {
            if self.g.maps.is_poisoned(name) {
                return None;
            }
            if self.g.diags.muted {
                // First pass: a map read before any assignment of it has been seen (`@n =
                // @n + 1`) reads as an integer, as an absent element reads as 0; the second
                // pass checks the read against the type the assignments gave the map.
                return Some(Type::I64);
            }
            self.report(
                Diagnostic::error(
                    UNDEFINED_MAP,
                    span,
                    format!("map `@{name}` is never assigned"),
                )
                .with_label("read here")
                .with_help(format!("assign it somewhere, e.g. `@{name} = count()`")),
            );
            return None;
        };
        match read_value(&value) {
            Some(t) => Some(t),
            None => {
                self.report(
                    Diagnostic::error(
                        AGG_VALUE,
                        span,
                        format!("map `@{name}` holds a {value} and cannot be used as a value"),
                    )
                    .with_label(format!("a {value} map"))
                    .with_help(format!("print it with `print(@{name})`")),
                );
                None
            }
        }
    }

    /// A type written in the script (`let`, cast, `sizeof`).
    pub fn type_expr(&mut self, te: &TypeExpr) -> Option<Type> {
        if let Some(e) = te.typeof_expr() {
            // A macro's type parameter may add stars or a length (`t*` for `typeof(x)`).
            let t = self.typeof_type(e)?;
            return match crate::ctypes::with_suffix(t, te) {
                Ok(t) => Some(t),
                Err(d) => {
                    self.report(d);
                    None
                }
            };
        }
        if te.base == BaseType::String && te.array.is_none() && te.pointer_depth == 0 {
            return Some(Type::Str {
                size: self.g.config.max_strlen,
            });
        }
        let (defs, kernel) = (&self.g.defs, self.g.kernel);
        if defs.is_poisoned(te) {
            // Its definition was refused, and reported.
            return None;
        }
        match c_decl_type(te, &|k, t| defs.record(kernel, k, t)) {
            Ok(t) => Some(t),
            Err(d) => {
                self.report(d);
                None
            }
        }
    }

    /// `base.field` / `base->field`.
    fn field(&mut self, base: &Expr, field: &str, span: Span) -> Option<Type> {
        let bt = self.expr(base)?;
        let rec = match &bt {
            Type::Record(r) => r.clone(),
            Type::Ptr { pointee, .. } => match &**pointee {
                Type::Record(r) => r.clone(),
                _ => return self.no_fields(&bt, span),
            },
            _ => return self.no_fields(&bt, span),
        };
        let rec = self.complete_record(&rec);
        if is_opaque(&rec) {
            self.report(
                Diagnostic::error(UNKNOWN_RECORD, base.span, format!("unknown {}", rec.name))
                    .with_label("its fields are unknown")
                    .with_help("define it in the script or run on a kernel with BTF"),
            );
            return None;
        }
        if let Some(f) = rec.field(field) {
            // Record the completed record as the base's type, so that lowering (which
            // has no kernel types) finds the field's offset.
            let completed = match &bt {
                Type::Ptr { space, .. } => Type::Ptr {
                    pointee: Box::new(Type::Record(rec.clone())),
                    space: *space,
                },
                _ => Type::Record(rec.clone()),
            };
            // A `__data_loc char[]` string is read as `str()` reads one: `max_strlen` bytes.
            let fty = match &f.ty {
                Type::Str { .. } if f.data_loc => Type::Str {
                    size: self.g.config.max_strlen,
                },
                t => t.clone(),
            };
            self.set(base, completed);
            return Some(fty);
        }
        let prefix = match &base.kind {
            ExprKind::Ident(n) => format!("{n}."),
            _ => String::new(),
        };
        let names: Vec<&str> = rec.fields.iter().map(|f| f.name.as_str()).collect();
        let list = format!("fields of {}: {}", rec.name, names.join(", "));
        let help = match suggest(field, names.iter().copied(), |c| format!("{prefix}{c}")) {
            Some(h) => format!("{h} ({list})"),
            None => list,
        };
        self.report(
            Diagnostic::error(
                UNKNOWN_FIELD,
                span,
                format!("{} has no field `{field}`", rec.name),
            )
            .with_label("unknown field")
            .with_help(help),
        );
        None
    }

    fn no_fields(&mut self, t: &Type, span: Span) -> Option<Type> {
        self.report(
            Diagnostic::error(FIELD_ACCESS, span, format!("{t} has no fields"))
                .with_label("field access on a value that is no struct")
                .with_help("cast it first, e.g. `((struct task_struct *)arg0)->pid`"),
        );
        None
    }

    /// `t.N`.
    fn tuple_index(&mut self, e: &Expr, base: &Expr, index: u32) -> Option<Type> {
        let bt = self.expr(base)?;
        if let Type::Tuple(items) = &bt
            && let Some(t) = items.get(index as usize)
        {
            return Some(t.clone());
        }
        let label = match &bt {
            Type::Tuple(items) => format!("the tuple has {} elements", items.len()),
            other => format!("this is {other}, not a tuple"),
        };
        self.report(
            Diagnostic::error(
                TUPLE_INDEX,
                e.span,
                format!("invalid tuple index `.{index}`"),
            )
            .with_label(label),
        );
        None
    }

    /// `base[index]` on arrays and pointers.
    fn index(&mut self, e: &Expr, base: &Expr, index: &Expr) -> Option<Type> {
        let bt = self.expr(base);
        let it = self.expr(index);
        let (bt, it) = (bt?, it?);
        if !is_int(&it) {
            self.report(
                Diagnostic::error(OPERAND_TYPE, index.span, "index is not an integer")
                    .with_label(format!("this is {it}")),
            );
            return None;
        }
        match &bt {
            // A constant index is checked here (as bpftrace does): the value is read at a
            // constant offset, which must stay within the array or string (a string's
            // characters: bpftrace 0.25+; a run-time index past the end reads 0). A
            // zero-length array (`int y[0]`, a flexible array member) has no bound.
            Type::Array { len, .. } | Type::Str { size: len } => {
                if let Some(i) = const_int(index, &self.g.options.positional)
                    && *len != 0
                    && !(0..i64::from(*len)).contains(&i)
                {
                    self.report(
                        Diagnostic::error(
                            INDEX_BOUNDS,
                            e.span,
                            format!("the index {i} is out of bounds for {bt}"),
                        )
                        .with_label(format!("not in 0..{len}"))
                        .with_help(format!(
                            "the elements of {bt} are 0 to {}",
                            i64::from(*len) - 1
                        )),
                    );
                    return None;
                }
                Some(match &bt {
                    Type::Array { elem, .. } => (**elem).clone(),
                    _ => Type::Int {
                        bits: 8,
                        signed: true,
                    },
                })
            }
            Type::Ptr { pointee, .. } if **pointee != Type::Void => match &**pointee {
                Type::Record(r) => Some(Type::Record(self.complete_record(r))),
                p => Some(p.clone()),
            },
            // `tuple[N]` is `tuple.N`: the index must be a constant (bpftrace 0.25+).
            Type::Tuple(items) => {
                let Some(i) = const_int(index, &self.g.options.positional) else {
                    self.report(
                        Diagnostic::error(
                            INDEX_BASE,
                            index.span,
                            "a tuple index must be a constant",
                        )
                        .with_label("not known when the program is built")
                        .with_help("write the element number, e.g. `$t[1]` or `$t.1`"),
                    );
                    return None;
                };
                match usize::try_from(i).ok().and_then(|i| items.get(i)) {
                    Some(t) => Some(t.clone()),
                    None => {
                        self.report(
                            Diagnostic::error(
                                INDEX_BOUNDS,
                                e.span,
                                format!("the index {i} is out of bounds for {bt}"),
                            )
                            .with_label(format!("this tuple has {} elements", items.len())),
                        );
                        None
                    }
                }
            }
            _ => {
                self.report(
                    Diagnostic::error(INDEX_BASE, e.span, format!("cannot index into {bt}"))
                        .with_label("not an array, string, tuple or typed pointer"),
                );
                None
            }
        }
    }

    /// A bare `kstack`/`ustack` in the `stack_mode` config's mode (bpftrace's rule): a
    /// `build_id` config makes `kstack` raw, with a warning, as build ids are user-only.
    fn configured_stack(&mut self, t: Type, span: Span) -> Type {
        let Type::Stack { kernel, limit, .. } = t else {
            return t;
        };
        let mut mode = self.g.config.stack_mode;
        if kernel && mode == StackMode::BuildId {
            self.report(
                Diagnostic::warning(
                    STACK_MODE,
                    span,
                    "'build_id' stack mode can only be used for ustack. Falling back to 'raw' mode.",
                )
                .with_label("a kernel stack")
                .with_help("set `stack_mode` to bpftrace, perf or raw for kernel stacks"),
            );
            mode = StackMode::Raw;
        }
        Type::Stack {
            kernel,
            mode,
            limit,
        }
    }
}
