//! Building expressions and types from pest pairs.
//!
//! Binary operators arrive flat (`a + b * c` is one `binary` pair with operands and operators
//! alternating) and are grouped here by C precedence with an explicit stack, so long chains
//! need no recursion. Ternaries, prefixes and postfixes are likewise folded iteratively.

use super::build::{BAD_ESCAPE, BAD_INTEGER, Builder, INTEGER_OVERFLOW, span_of, var_ident};
use super::literals::{IntError, decode_string, parse_int};
use crate::ast::*;
use crate::diag::Diagnostic;
use crate::span::Span;
use pest::iterators::Pair;
use sonde_grammar::Rule;

/// Binding strength of a binary operator (higher binds tighter); all are left-associative.
fn precedence(op: BinOp) -> u8 {
    use BinOp::*;
    match op {
        Or => 1,
        And => 2,
        BitOr => 3,
        BitXor => 4,
        BitAnd => 5,
        Eq | Ne => 6,
        Lt | Le | Gt | Ge => 7,
        Shl | Shr => 8,
        Add | Sub => 9,
        Mul | Div | Mod => 10,
    }
}

/// The binary operator written as `text`.
fn bin_op(text: &str) -> Option<BinOp> {
    use BinOp::*;
    Some(match text {
        "||" => Or,
        "&&" => And,
        "|" => BitOr,
        "^" => BitXor,
        "&" => BitAnd,
        "==" => Eq,
        "!=" => Ne,
        "<" => Lt,
        "<=" => Le,
        ">" => Gt,
        ">=" => Ge,
        "<<" => Shl,
        ">>" => Shr,
        "+" => Add,
        "-" => Sub,
        "*" => Mul,
        "/" => Div,
        "%" => Mod,
        _ => return None,
    })
}

impl Builder {
    /// A placeholder expression used after an error (the program is rejected anyway).
    fn error_expr(&mut self, span: Span) -> Expr {
        self.mk(ExprKind::Int(0), span)
    }

    /// Gives `e` and its sub-expressions fresh ids (for a copy of an expression).
    fn renumber(&mut self, e: &mut Expr) {
        let fresh = self.mk(ExprKind::Int(0), e.span);
        e.id = fresh.id;
        e.for_each_child_mut(&mut |c| self.renumber(c));
        e.for_each_typeof_mut(&mut |c| self.renumber(c));
    }

    /// An `expr` pair: a binary expression, possibly the head of a ternary chain.
    pub(super) fn expr(&mut self, pair: Pair<'_, Rule>) -> Expr {
        let span = span_of(&pair);
        let mut binaries = Vec::new();
        let mut thens: Vec<Option<Expr>> = Vec::new();
        let parts: Vec<Pair<'_, Rule>> = pair.into_inner().collect();
        let levels = 1 + parts.iter().filter(|p| p.as_rule() == Rule::qmark).count();
        if !self.enter(levels, span) {
            self.leave(levels);
            return self.error_expr(span);
        }
        for p in parts {
            match p.as_rule() {
                Rule::block_expr | Rule::if_expr => binaries.push(self.primary(p)),
                Rule::binary => binaries.push(self.binary(p)),
                Rule::qmark => thens.push(None),
                Rule::expr => {
                    let then = self.expr(p);
                    if let Some(slot) = thens.last_mut() {
                        *slot = Some(then);
                    }
                }
                _ => {}
            }
        }
        self.leave(levels);
        let Some(mut acc) = binaries.pop() else {
            self.internal(span, "empty expression");
            return self.error_expr(span);
        };
        while let (Some(then), Some(cond)) = (thens.pop(), binaries.pop()) {
            let span = cond.span.join(acc.span);
            // `a ?: b`: the condition is also the value.
            let then = match then {
                Some(t) => t,
                None => {
                    let mut copy = cond.clone();
                    self.renumber(&mut copy);
                    copy
                }
            };
            acc = self.mk(
                ExprKind::Ternary {
                    cond: Box::new(cond),
                    then: Box::new(then),
                    else_: Box::new(acc),
                },
                span,
            );
        }
        acc
    }

    /// A flat chain of operands and binary operators, grouped by precedence.
    fn binary(&mut self, pair: Pair<'_, Rule>) -> Expr {
        let span = span_of(&pair);
        let parts: Vec<Pair<'_, Rule>> = pair.into_inner().collect();
        let n_ops = parts.len() / 2;
        let ok = self.enter(n_ops, span);
        let mut operands: Vec<Expr> = Vec::new();
        let mut ops: Vec<BinOp> = Vec::new();
        if ok {
            for p in parts {
                if p.as_rule() == Rule::bin_op {
                    let Some(op) = bin_op(p.as_str()) else {
                        self.internal(span_of(&p), "unknown operator");
                        continue;
                    };
                    while ops
                        .last()
                        .is_some_and(|top| precedence(*top) >= precedence(op))
                    {
                        self.reduce(&mut operands, &mut ops);
                    }
                    ops.push(op);
                } else {
                    operands.push(self.unary(p));
                }
            }
        }
        self.leave(n_ops);
        while !ops.is_empty() {
            self.reduce(&mut operands, &mut ops);
        }
        match operands.pop() {
            Some(e) if operands.is_empty() => e,
            _ => self.error_expr(span),
        }
    }

    /// Pops one operator and its two operands and pushes the combined node.
    fn reduce(&mut self, operands: &mut Vec<Expr>, ops: &mut Vec<BinOp>) {
        let (Some(op), Some(rhs), Some(lhs)) = (ops.pop(), operands.pop(), operands.pop()) else {
            return;
        };
        let span = lhs.span.join(rhs.span);
        let e = self.mk(
            ExprKind::Binary {
                op,
                lhs: Box::new(lhs),
                rhs: Box::new(rhs),
            },
            span,
        );
        operands.push(e);
    }

    /// Prefix operators (including casts) applied to a postfix expression.
    pub(super) fn unary(&mut self, pair: Pair<'_, Rule>) -> Expr {
        let span = span_of(&pair);
        let mut prefixes = Vec::new();
        let mut operand = None;
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::prefix_op => prefixes.push(p),
                _ => operand = Some(p),
            }
        }
        let levels = prefixes.len();
        let ok = self.enter(levels, span);
        let operand = match operand {
            Some(p) if ok => self.postfix(p),
            _ => self.error_expr(span),
        };
        self.leave(levels);
        if !ok {
            return operand;
        }
        let mut acc = operand;
        while let Some(p) = prefixes.pop() {
            let span = Span::new(span_of(&p).start, acc.span.end);
            let text = p.as_str();
            let kind = if let Some(cast) = p.into_inner().next() {
                let Some(ty) = cast.into_inner().next().map(|t| self.type_expr(t)) else {
                    continue;
                };
                ExprKind::Cast {
                    ty,
                    expr: Box::new(acc),
                }
            } else {
                match text {
                    "++" | "--" => ExprKind::IncDec {
                        target: Box::new(acc),
                        increment: text == "++",
                        prefix: true,
                    },
                    "!" => ExprKind::Unary {
                        op: UnOp::Not,
                        expr: Box::new(acc),
                    },
                    "~" => ExprKind::Unary {
                        op: UnOp::BitNot,
                        expr: Box::new(acc),
                    },
                    "-" => ExprKind::Unary {
                        op: UnOp::Neg,
                        expr: Box::new(acc),
                    },
                    "*" => ExprKind::Unary {
                        op: UnOp::Deref,
                        expr: Box::new(acc),
                    },
                    _ => ExprKind::Unary {
                        op: UnOp::AddrOf,
                        expr: Box::new(acc),
                    },
                }
            };
            acc = self.mk(kind, span);
        }
        acc
    }

    /// A primary followed by field accesses, indexing and postfix `++`/`--`.
    fn postfix(&mut self, pair: Pair<'_, Rule>) -> Expr {
        let span = span_of(&pair);
        let mut inner = pair.into_inner();
        let Some(first) = inner.next() else {
            self.internal(span, "empty operand");
            return self.error_expr(span);
        };
        let ops: Vec<Pair<'_, Rule>> = inner.collect();
        let levels = ops.len();
        let ok = self.enter(levels, span);
        let mut acc = if ok {
            self.primary(first)
        } else {
            self.error_expr(span)
        };
        if ok {
            for op in ops {
                let Some(op) = op.into_inner().next() else {
                    continue;
                };
                let span = Span::new(acc.span.start, span_of(&op).end);
                let kind = match op.as_rule() {
                    Rule::incr | Rule::decr => ExprKind::IncDec {
                        target: Box::new(acc),
                        increment: op.as_rule() == Rule::incr,
                        prefix: false,
                    },
                    Rule::index => {
                        let Some(index) = op.into_inner().next() else {
                            continue;
                        };
                        let index = self.expr(index);
                        ExprKind::Index {
                            base: Box::new(acc),
                            index: Box::new(index),
                        }
                    }
                    Rule::arrow_access | Rule::field_access => {
                        let arrow = op.as_rule() == Rule::arrow_access;
                        let Some(name) = op.into_inner().next() else {
                            continue;
                        };
                        if name.as_rule() == Rule::tuple_index {
                            let index = self.tuple_index(&name);
                            ExprKind::TupleIndex {
                                base: Box::new(acc),
                                index,
                            }
                        } else {
                            let field = Ident {
                                name: name.as_str().to_string(),
                                span: span_of(&name),
                            };
                            ExprKind::Field {
                                base: Box::new(acc),
                                field,
                                arrow,
                            }
                        }
                    }
                    _ => continue,
                };
                acc = self.mk(kind, span);
            }
        }
        self.leave(levels);
        acc
    }

    /// The element number of `tuple.N`.
    fn tuple_index(&mut self, pair: &Pair<'_, Rule>) -> u32 {
        pair.as_str().parse().unwrap_or_else(|_| {
            self.errors.push(
                Diagnostic::error(INTEGER_OVERFLOW, span_of(pair), "tuple index is too large")
                    .with_label("not a valid element number")
                    .with_help("tuple elements are numbered from 0"),
            );
            0
        })
    }

    /// A primary expression (also used for config values and `for` maps).
    pub(super) fn primary(&mut self, pair: Pair<'_, Rule>) -> Expr {
        let span = span_of(&pair);
        let kind = match pair.as_rule() {
            Rule::int_lit => ExprKind::Int(self.int_value(&pair).unwrap_or(0)),
            Rule::string => {
                let body = pair.into_inner().next();
                ExprKind::Str(body.map_or(Vec::new(), |b| self.string_value(&b)))
            }
            Rule::bool_lit => ExprKind::Bool(pair.as_str() == "true"),
            Rule::positional_count => ExprKind::PositionalCount,
            Rule::positional => match pair.as_str()[1..].parse::<u32>() {
                Ok(n) => ExprKind::Positional(n),
                Err(_) => {
                    self.errors.push(
                        Diagnostic::error(
                            INTEGER_OVERFLOW,
                            span,
                            "positional parameter number is too large",
                        )
                        .with_label("no such parameter")
                        .with_help("positional parameters are `$1`, `$2`, ..."),
                    );
                    ExprKind::Positional(0)
                }
            },
            Rule::var => ExprKind::Var(var_ident(&pair).name),
            Rule::ident => ExprKind::Ident(pair.as_str().to_string()),
            Rule::map => {
                let mut name = String::new();
                let mut keys = Vec::new();
                for p in pair.into_inner() {
                    match p.as_rule() {
                        Rule::map_name => name = p.as_str().to_string(),
                        Rule::map_keys => {
                            keys = p
                                .into_inner()
                                .filter(|k| k.as_rule() == Rule::expr)
                                .map(|k| self.expr(k))
                                .collect();
                        }
                        _ => {}
                    }
                }
                ExprKind::Map { name, keys }
            }
            Rule::call => {
                let mut inner = pair.into_inner();
                let Some(name) = inner.next() else {
                    return self.error_expr(span);
                };
                let name = Ident {
                    name: name.as_str().to_string(),
                    span: span_of(&name),
                };
                let mut args = Vec::new();
                for a in inner {
                    match a.as_rule() {
                        Rule::expr => args.push(self.expr(a)),
                        Rule::type_arg => {
                            if let Some(t) = a.into_inner().next() {
                                let ty = self.type_expr(t);
                                let span = ty.span;
                                args.push(self.mk(ExprKind::Type(ty), span));
                            }
                        }
                        _ => {}
                    }
                }
                // `sizeof(typeof(x))`, `offsetof(typeof(x), f)`, a macro's `m(typeof(uint8))`
                // (bpftrace 0.27): a type.
                args.iter_mut().for_each(typeof_as_type);
                ExprKind::Call { name, args }
            }
            Rule::block_expr => {
                let (body, value) = self.value_block(pair);
                ExprKind::Block {
                    body,
                    value: value.map(Box::new),
                }
            }
            Rule::if_expr => return self.if_expr(pair),
            Rule::paren => {
                let mut elems = Vec::new();
                let mut names = Vec::new();
                let mut trailing_comma = false;
                for p in pair.into_inner() {
                    match p.as_rule() {
                        Rule::expr => elems.push(self.expr(p)),
                        Rule::record_item => {
                            let mut inner = p.into_inner();
                            if let (Some(n), Some(v)) = (inner.next(), inner.next()) {
                                names.push(Ident {
                                    name: n.as_str().to_string(),
                                    span: span_of(&n),
                                });
                                elems.push(self.expr(v));
                            }
                        }
                        Rule::trailing_comma => trailing_comma = true,
                        _ => {}
                    }
                }
                if !names.is_empty() {
                    if names.len() != elems.len() {
                        self.errors.push(
                            Diagnostic::error(
                                crate::syntax::SYNTAX,
                                span,
                                "a record names every element",
                            )
                            .with_label("some elements have no name")
                            .with_help("write `(a = 1, b = 2)`, or a tuple `(1, 2)`"),
                        );
                    }
                    return self.mk(
                        ExprKind::Record {
                            names,
                            values: elems,
                        },
                        span,
                    );
                }
                if elems.len() == 1 && !trailing_comma {
                    return elems.pop().unwrap_or_else(|| self.error_expr(span));
                }
                ExprKind::Tuple(elems)
            }
            _ => {
                self.internal(span, "unexpected operand");
                return self.error_expr(span);
            }
        };
        self.mk(kind, span)
    }

    /// The statements of a block-like pair (`block`, `block_expr`, `define_body`) and its
    /// value: the last statement when it is an expression not followed by `;`.
    pub(super) fn value_block(&mut self, pair: Pair<'_, Rule>) -> (Block, Option<Expr>) {
        let span = span_of(&pair);
        let mut stmts = Vec::new();
        let mut last_is_value = false;
        if self.enter(1, span) {
            for p in pair.into_inner() {
                match p.as_rule() {
                    Rule::semi => last_is_value = false,
                    Rule::lbrace | Rule::rbrace | Rule::EOI => {}
                    rule => {
                        if let Some(s) = self.stmt(p) {
                            last_is_value = rule == Rule::expr_stmt;
                            stmts.push(s);
                        }
                    }
                }
            }
        }
        self.leave(1);
        let value = if last_is_value {
            match stmts.pop() {
                Some(Stmt {
                    kind: StmtKind::Expr(e),
                    ..
                }) => Some(e),
                other => {
                    stmts.extend(other);
                    None
                }
            }
        } else {
            None
        };
        (Block { stmts, span }, value)
    }

    /// `if c { a } else if d { b } else { c }` used as a value: nested ternaries whose
    /// branches are the blocks' values.
    fn if_expr(&mut self, pair: Pair<'_, Rule>) -> Expr {
        let span = span_of(&pair);
        let mut conds = Vec::new();
        let mut branches = Vec::new();
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::expr => conds.push(self.expr(p)),
                Rule::block => {
                    let bspan = span_of(&p);
                    let (body, value) = self.value_block(p);
                    let e = match value {
                        Some(v) if body.stmts.is_empty() => v,
                        value => self.mk(
                            ExprKind::Block {
                                body,
                                value: value.map(Box::new),
                            },
                            bspan,
                        ),
                    };
                    branches.push(e);
                }
                _ => {}
            }
        }
        let Some(mut acc) = branches.pop() else {
            return self.error_expr(span);
        };
        while let (Some(cond), Some(then)) = (conds.pop(), branches.pop()) {
            let s = Span::new(cond.span.start.min(then.span.start), acc.span.end);
            let s = if conds.is_empty() { span } else { s };
            acc = self.mk(
                ExprKind::Ternary {
                    cond: Box::new(cond),
                    then: Box::new(then),
                    else_: Box::new(acc),
                },
                s,
            );
        }
        acc
    }

    /// `typeof(T)` is `T`; `typeof(expr)` keeps the expression, never evaluated.
    fn typeof_type(&mut self, pair: Pair<'_, Rule>) -> TypeExpr {
        let span = span_of(&pair);
        let inner = pair
            .into_inner()
            .find(|q| matches!(q.as_rule(), Rule::type_expr | Rule::expr));
        let base = match inner {
            Some(q) if q.as_rule() == Rule::type_expr => {
                return TypeExpr {
                    span,
                    ..self.type_expr(q)
                };
            }
            Some(q) => BaseType::Typeof(Box::new(self.expr(q))),
            None => BaseType::Typeof(Box::new(self.error_expr(span))),
        };
        TypeExpr {
            base,
            pointer_depth: 0,
            array: None,
            span,
        }
    }

    /// A type: `uint32`, `struct task_struct *`, `uint8[8]`, `string[16]`.
    pub(super) fn type_expr(&mut self, pair: Pair<'_, Rule>) -> TypeExpr {
        let start = span_of(&pair).start;
        let mut end = start;
        let mut base = BaseType::Named(String::new());
        let mut pointer_depth = 0u8;
        let mut array = None;
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::typeof_type => return self.typeof_type(p),
                Rule::type_base => {
                    let mut inner = p.into_inner();
                    let (Some(first), second) = (inner.next(), inner.next()) else {
                        continue;
                    };
                    match second {
                        Some(name) => {
                            end = span_of(&name).end;
                            let n = name.as_str().to_string();
                            base = match first.as_str() {
                                "union" => BaseType::Union(n),
                                "enum" => BaseType::Enum(n),
                                _ => BaseType::Struct(n),
                            };
                        }
                        None => {
                            end = span_of(&first).end;
                            base = match first.as_str() {
                                "string" => BaseType::String,
                                other => BaseType::Named(other.to_string()),
                            };
                        }
                    }
                }
                // `(t)x`: a bare name cast.
                Rule::ident => {
                    end = span_of(&p).end;
                    base = BaseType::Named(p.as_str().to_string());
                }
                Rule::type_name_ptr => {
                    end = span_of(&p).end;
                    base = BaseType::Named(p.as_str().to_string());
                }
                Rule::type_stars => {
                    for s in p.into_inner() {
                        pointer_depth = pointer_depth.saturating_add(1);
                        end = span_of(&s).end;
                    }
                }
                Rule::type_array => {
                    end = span_of(&p).end;
                    // `[]` is length 0: a cast sizes it from its value.
                    array = Some(0);
                    if let Some(n) = p.into_inner().find(|q| q.as_rule() == Rule::int_lit) {
                        array = self.int_value(&n);
                    }
                }
                _ => {}
            }
        }
        TypeExpr {
            base,
            pointer_depth,
            array,
            span: Span::new(start, end),
        }
    }

    /// The value of an `int_lit` pair, reporting malformed or overflowing literals.
    pub(super) fn int_value(&mut self, pair: &Pair<'_, Rule>) -> Option<u64> {
        let span = span_of(pair);
        let text = pair.as_str();
        match parse_int(text) {
            Ok(v) => Some(v),
            Err(IntError::Overflow) => {
                self.errors.push(
                    Diagnostic::error(
                        INTEGER_OVERFLOW,
                        span,
                        format!("integer literal `{text}` does not fit in 64 bits"),
                    )
                    .with_label("too large")
                    .with_help("the largest integer is 18446744073709551615 (0xffffffffffffffff)"),
                );
                None
            }
            Err(IntError::Invalid(why)) => {
                self.errors.push(
                    Diagnostic::error(BAD_INTEGER, span, format!("invalid integer literal `{text}`"))
                        .with_label(why)
                        .with_help("write decimal (`42`), hex (`0x2a`), octal (`052`), `1_000`, `1e6` or a duration such as `10ms`"),
                );
                None
            }
        }
    }

    /// The decoded bytes of a string body (`str_inner` pair), reporting bad escapes.
    pub(super) fn string_value(&mut self, body: &Pair<'_, Rule>) -> Vec<u8> {
        let base = span_of(body).start;
        let (bytes, errors) = decode_string(body.as_str());
        for e in errors {
            self.errors.push(
                Diagnostic::error(BAD_ESCAPE, Span::new(base + e.offset, base + e.offset + e.len), e.message)
                    .with_label("invalid escape")
                    .with_help("valid escapes are `\\n`, `\\t`, `\\r`, `\\\\`, `\\\"`, `\\xNN` and octal `\\NNN`; write `\\\\` for a backslash"),
            );
        }
        bytes
    }
}

/// Turns `e`, when it is a `typeof(x)` call, into the type it names (`x` itself when `x` is
/// a type written out: `typeof(uint8)`).
fn typeof_as_type(e: &mut Expr) {
    let ExprKind::Call { name, args } = &mut e.kind else {
        return;
    };
    if name.name != "typeof" || args.len() != 1 {
        return;
    }
    let inner = args.remove(0);
    let ty = match inner.kind {
        ExprKind::Type(t) => t,
        _ => crate::ast::TypeExpr {
            base: crate::ast::BaseType::Typeof(Box::new(inner)),
            pointer_depth: 0,
            array: None,
            span: e.span,
        },
    };
    e.kind = ExprKind::Type(ty);
}
