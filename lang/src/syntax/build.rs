//! Building the AST from pest pairs: the program layout, C definitions, config, macros, probes
//! and statements. Expressions and types are in [`super::expr`].
//!
//! Pest spans of rules that end in an optional or repeated element include the blanks after
//! them, so spans are computed here from the tokens actually consumed.

use super::scan::{MAX_NESTING, too_deep};
use crate::ast::*;
use crate::diag::Diagnostic;
use crate::span::Span;
use pest::iterators::Pair;
use sonde_grammar::Rule;

/// Code for an internal inconsistency between the grammar and the builder.
pub const INTERNAL: &str = "sonde::parse::internal";
/// Code for an integer literal that is malformed.
pub const BAD_INTEGER: &str = "sonde::parse::bad_integer";
/// Code for an integer literal that does not fit in 64 bits.
pub const INTEGER_OVERFLOW: &str = "sonde::parse::integer_overflow";
/// Code for a bad escape sequence in a string literal.
pub const BAD_ESCAPE: &str = "sonde::parse::bad_escape";

/// Turns pest pairs into AST nodes, assigning sequential [`ExprId`]s and collecting literal
/// errors so that all of them are reported together.
pub(super) struct Builder {
    /// The next expression id to hand out.
    next_id: u32,
    /// Conservative bound of the depth of the tree being built.
    pub(super) depth: usize,
    /// Whether the depth error was already reported.
    too_deep_reported: bool,
    /// Errors found so far.
    pub(super) errors: Vec<Diagnostic>,
}

/// The span of a pair as pest reports it.
pub(super) fn span_of(pair: &Pair<'_, Rule>) -> Span {
    Span::new(pair.as_span().start(), pair.as_span().end())
}

/// The span of a pair without the blanks pest may have included at its end (for atomic
/// rules that end in optional blanks).
pub(super) fn trimmed_span(pair: &Pair<'_, Rule>) -> Span {
    let s = span_of(pair);
    let trimmed = pair.as_str().trim_end().len();
    Span::new(s.start, s.start + trimmed)
}

impl Builder {
    /// A builder with no errors and ids starting at 0.
    pub(super) fn new() -> Self {
        Builder {
            next_id: 0,
            depth: 0,
            too_deep_reported: false,
            errors: Vec::new(),
        }
    }

    /// A fresh expression node.
    pub(super) fn mk(&mut self, kind: ExprKind, span: Span) -> Expr {
        let id = ExprId(self.next_id);
        self.next_id += 1;
        Expr { id, kind, span }
    }

    /// Records an internal error (grammar and builder disagree); never expected.
    pub(super) fn internal(&mut self, span: Span, what: &str) {
        self.errors.push(
            Diagnostic::error(INTERNAL, span, format!("internal parser error: {what}"))
                .with_label("while reading this")
                .with_help("this is a bug in sonde; please report it with the script"),
        );
    }

    /// Enters `levels` levels of nesting; returns false (after reporting once) when the tree
    /// would get deeper than the limit. The caller must call [`Builder::leave`] either way.
    pub(super) fn enter(&mut self, levels: usize, span: Span) -> bool {
        self.depth += levels;
        if self.depth > MAX_NESTING {
            if !self.too_deep_reported {
                self.too_deep_reported = true;
                self.errors.push(too_deep(span));
            }
            return false;
        }
        true
    }

    /// Leaves `levels` levels of nesting entered with [`Builder::enter`].
    pub(super) fn leave(&mut self, levels: usize) {
        self.depth -= levels;
    }

    /// Builds the whole program from the `program` pair.
    pub(super) fn program(&mut self, pair: Pair<'_, Rule>) -> Program {
        let mut program = Program::default();
        for item in pair.into_inner() {
            let span = span_of(&item);
            match item.as_rule() {
                Rule::include => program.c_defs.push(self.include(item)),
                Rule::define => {
                    let (def, mac) = self.define(item);
                    program.c_defs.push(def);
                    if let Some(m) = mac {
                        // A later `#define` of the same name replaces the earlier one, as in C.
                        program
                            .macros
                            .retain(|old| !(old.from_define && old.name.name == m.name.name));
                        program.macros.push(m);
                    }
                }
                Rule::c_def => match item.into_inner().next() {
                    Some(def) if def.as_rule() == Rule::c_enum => {
                        program.c_defs.push(self.c_enum(def))
                    }
                    Some(def) => program.c_defs.push(self.c_struct(def)),
                    None => self.internal(span, "empty C definition"),
                },
                Rule::config_block => self.config(item, &mut program.config),
                Rule::import => {
                    let path = item
                        .clone()
                        .into_inner()
                        .find(|p| p.as_rule() == Rule::string);
                    if let Some(p) = path {
                        let text = p.clone().into_inner().next();
                        let bytes = text.map_or(Vec::new(), |b| self.string_value(&b));
                        program
                            .imports
                            .push((String::from_utf8_lossy(&bytes).into_owned(), span_of(&p)));
                    }
                }
                Rule::map_decl => {
                    if let Some(d) = self.map_decl(item) {
                        program.map_decls.push(d);
                    }
                }
                Rule::macro_def => {
                    if let Some(m) = self.macro_def(item) {
                        program.macros.push(m);
                    }
                }
                Rule::probe => {
                    if let Some(p) = self.probe(item) {
                        program.probes.push(p);
                    }
                }
                _ => {}
            }
        }
        program
    }

    /// `#include <path>` / `#include "path"`.
    fn include(&mut self, pair: Pair<'_, Rule>) -> CDef {
        let span = trimmed_span(&pair);
        let path = pair
            .into_inner()
            .find(|p| p.as_rule() == Rule::include_path);
        let written = path.map_or(String::new(), |p| p.as_str().to_string());
        let name = written
            .get(1..written.len().saturating_sub(1))
            .unwrap_or("")
            .to_string();
        CDef {
            kind: CDefKind::Include,
            name,
            value: written,
            fields: vec![],
            enumerators: vec![],
            span,
            packed: false,
        }
    }

    /// `let @name = kind(max_entries);`.
    fn map_decl(&mut self, pair: Pair<'_, Rule>) -> Option<MapDecl> {
        let span = trimmed_span(&pair);
        let mut name = None;
        let mut kind = None;
        let mut size = None;
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::map_decl_name => name = Some(p.as_str().trim_start_matches('@').to_string()),
                Rule::ident => {
                    kind = Some(Ident {
                        name: p.as_str().to_string(),
                        span: span_of(&p),
                    })
                }
                Rule::int_lit => size = Some((self.int_value(&p)?, span_of(&p))),
                _ => {}
            }
        }
        let (max_entries, size_span) = size?;
        Some(MapDecl {
            name: name?,
            kind: kind?,
            max_entries,
            size_span,
            span,
        })
    }

    /// `config = { key = value; ... }`.
    fn config(&mut self, pair: Pair<'_, Rule>, out: &mut Vec<ConfigItem>) {
        for item in pair
            .into_inner()
            .filter(|p| p.as_rule() == Rule::config_item)
        {
            let mut inner = item.into_inner();
            let (Some(name), Some(value)) = (inner.next(), inner.next()) else {
                continue;
            };
            let name = Ident {
                name: name.as_str().to_string(),
                span: span_of(&name),
            };
            let value = self.primary(value);
            out.push(ConfigItem { name, value });
        }
    }

    /// `macro name(params) { ... }`.
    fn macro_def(&mut self, pair: Pair<'_, Rule>) -> Option<MacroDef> {
        let start = span_of(&pair).start;
        let mut name = None;
        let mut params = Vec::new();
        let mut body = None;
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::ident => {
                    name = Some(Ident {
                        name: p.as_str().to_string(),
                        span: span_of(&p),
                    })
                }
                Rule::macro_param => params.push(Ident {
                    name: p.as_str().to_string(),
                    span: span_of(&p),
                }),
                Rule::block => body = Some(self.block(p)),
                _ => {}
            }
        }
        let body = body?;
        let span = Span::new(start, body.span.end);
        Some(MacroDef {
            name: name?,
            params,
            body,
            span,
            from_define: false,
        })
    }

    /// A probe: attach points, predicate, block.
    fn probe(&mut self, pair: Pair<'_, Rule>) -> Option<Probe> {
        let start = span_of(&pair).start;
        let mut attach_points = Vec::new();
        let mut predicate = None;
        let mut body = None;
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::attach_list => attach_points.extend(p.into_inner().map(|a| attach_point(&a))),
                Rule::predicate => predicate = p.into_inner().next().map(|e| self.expr(e)),
                Rule::block => body = Some(self.block(p)),
                _ => {}
            }
        }
        let body = body?;
        Some(Probe {
            attach_points,
            predicate,
            span: Span::new(start, body.span.end),
            body,
        })
    }

    /// A `{ ... }` block.
    pub(super) fn block(&mut self, pair: Pair<'_, Rule>) -> Block {
        let span = span_of(&pair);
        let mut stmts = Vec::new();
        if self.enter(1, span) {
            for p in pair.into_inner() {
                if let Some(s) = self.stmt(p) {
                    stmts.push(s);
                }
            }
        }
        self.leave(1);
        Block { stmts, span }
    }

    /// One statement, or `None` for punctuation (`;`, braces).
    pub(super) fn stmt(&mut self, pair: Pair<'_, Rule>) -> Option<Stmt> {
        let pspan = span_of(&pair);
        let rule = pair.as_rule();
        let (kind, span) = match rule {
            Rule::expr_stmt => {
                let e = self.expr(pair.into_inner().next()?);
                let span = e.span;
                (StmtKind::Expr(e), span)
            }
            Rule::assign_stmt => {
                let mut inner = pair.into_inner();
                let target = self.unary(inner.next()?);
                let op = assign_op(inner.next()?.as_str());
                let value = self.expr(inner.next()?);
                let span = target.span.join(value.span);
                // `_ = expr` (bpftrace 0.27's discard expression): the value is computed
                // and dropped.
                if op.is_none() && matches!(&target.kind, ExprKind::Ident(n) if n == "_") {
                    return Some(Stmt {
                        kind: StmtKind::Expr(value),
                        span,
                    });
                }
                (StmtKind::Assign { target, op, value }, span)
            }
            Rule::let_stmt => self.let_stmt(pair)?,
            Rule::break_stmt => (StmtKind::Break, trimmed_span(&pair)),
            Rule::continue_stmt => (StmtKind::Continue, trimmed_span(&pair)),
            Rule::return_stmt => {
                let span = trimmed_span(&pair);
                let value = pair.into_inner().find(|p| p.as_rule() == Rule::expr);
                (StmtKind::Return(value.map(|v| self.expr(v))), span)
            }
            Rule::if_stmt => self.if_stmt(pair)?,
            Rule::block_stmt => {
                let e = self.primary(pair.into_inner().next()?);
                let span = e.span;
                (StmtKind::Expr(e), span)
            }
            Rule::unroll_stmt | Rule::while_stmt => {
                let mut cond = None;
                let mut body = None;
                for p in pair.into_inner() {
                    match p.as_rule() {
                        Rule::expr => cond = Some(self.expr(p)),
                        Rule::block => body = Some(self.block(p)),
                        _ => {}
                    }
                }
                let (cond, body) = (cond?, body?);
                let span = Span::new(pspan.start, body.span.end);
                if rule == Rule::unroll_stmt {
                    (StmtKind::Unroll { count: cond, body }, span)
                } else {
                    (StmtKind::While { cond, body }, span)
                }
            }
            Rule::for_stmt => self.for_stmt(pair)?,
            _ => return None,
        };
        Some(Stmt { kind, span })
    }

    /// `let $x [: type] [= value]`.
    fn let_stmt(&mut self, pair: Pair<'_, Rule>) -> Option<(StmtKind, Span)> {
        let start = span_of(&pair).start;
        let mut end = start;
        let mut var = None;
        let mut ty = None;
        let mut value = None;
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::var => {
                    end = span_of(&p).end;
                    var = Some(var_ident(&p));
                }
                Rule::type_expr => {
                    let t = self.type_expr(p);
                    end = t.span.end;
                    ty = Some(t);
                }
                Rule::expr => {
                    let e = self.expr(p);
                    end = e.span.end;
                    value = Some(e);
                }
                _ => {}
            }
        }
        Some((
            StmtKind::Let {
                var: var?,
                ty,
                value,
            },
            Span::new(start, end),
        ))
    }

    /// `if (c) { } else if (d) { } else { }`, nesting the `else if` chain.
    fn if_stmt(&mut self, pair: Pair<'_, Rule>) -> Option<(StmtKind, Span)> {
        let start = span_of(&pair).start;
        // (start of the `if`/`else if`, condition, block) for each branch.
        let mut branches: Vec<(usize, Expr, Block)> = Vec::new();
        let mut else_block = None;
        let mut cond = None;
        let chain = pair
            .clone()
            .into_inner()
            .filter(|p| p.as_rule() == Rule::else_if)
            .count();
        let ok = self.enter(chain, span_of(&pair));
        if ok {
            for p in pair.into_inner() {
                match p.as_rule() {
                    Rule::expr => cond = Some(self.expr(p)),
                    Rule::block => {
                        let b = self.block(p);
                        if let Some(c) = cond.take() {
                            branches.push((start, c, b));
                        }
                    }
                    Rule::else_if => {
                        let s = span_of(&p).start;
                        let mut c = None;
                        for q in p.into_inner() {
                            match q.as_rule() {
                                Rule::kw_if => {}
                                Rule::expr => c = Some(self.expr(q)),
                                Rule::block => {
                                    let b = self.block(q);
                                    if let Some(c) = c.take() {
                                        branches.push((s, c, b));
                                    }
                                }
                                _ => {}
                            }
                        }
                    }
                    Rule::else_block => {
                        else_block = p
                            .into_inner()
                            .find(|q| q.as_rule() == Rule::block)
                            .map(|b| self.block(b));
                    }
                    _ => {}
                }
            }
        }
        self.leave(chain);
        let mut tail: Option<Block> = else_block;
        let mut result = None;
        while let Some((s, cond, then)) = branches.pop() {
            let end = tail.as_ref().map_or(then.span.end, |b| b.span.end);
            let span = Span::new(s, end);
            let kind = StmtKind::If {
                cond,
                then,
                else_: tail.take(),
            };
            if branches.is_empty() {
                result = Some((kind, span));
            } else {
                tail = Some(Block {
                    stmts: vec![Stmt { kind, span }],
                    span,
                });
            }
        }
        result
    }

    /// `for ($kv : @map) { }` and `for ($i : a..b) { }`.
    fn for_stmt(&mut self, pair: Pair<'_, Rule>) -> Option<(StmtKind, Span)> {
        let start = span_of(&pair).start;
        let mut var = None;
        let mut map = None;
        let mut range = None;
        let mut body = None;
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::var => var = Some(var_ident(&p)),
                Rule::map => map = Some(self.primary(p)),
                Rule::for_range => {
                    let mut inner = p.into_inner();
                    let a = self.expr(inner.next()?);
                    let b = self.expr(inner.next()?);
                    range = Some((a, b));
                }
                Rule::block => body = Some(self.block(p)),
                _ => {}
            }
        }
        let (var, body) = (var?, body?);
        let span = Span::new(start, body.span.end);
        let kind = match (map, range) {
            (Some(map), _) => StmtKind::ForMap { var, map, body },
            (None, Some((start, end))) => StmtKind::ForRange {
                var,
                start,
                end,
                body,
            },
            (None, None) => return None,
        };
        Some((kind, span))
    }
}

/// The identifier of a `$name` pair, without the `$`.
pub(super) fn var_ident(pair: &Pair<'_, Rule>) -> Ident {
    Ident {
        name: pair.as_str().trim_start_matches('$').to_string(),
        span: span_of(pair),
    }
}

/// The binary operator of a compound assignment (`None` for plain `=`).
fn assign_op(text: &str) -> Option<BinOp> {
    Some(match text {
        "+=" => BinOp::Add,
        "-=" => BinOp::Sub,
        "*=" => BinOp::Mul,
        "/=" => BinOp::Div,
        "%=" => BinOp::Mod,
        "&=" => BinOp::BitAnd,
        "|=" => BinOp::BitOr,
        "^=" => BinOp::BitXor,
        "<<=" => BinOp::Shl,
        ">>=" => BinOp::Shr,
        _ => return None,
    })
}

/// Splits an attach point on `:` (outside quoted segments) and strips quotes (and the `\`
/// escapes inside them) from the parts.
fn attach_point(pair: &Pair<'_, Rule>) -> AttachPoint {
    let mut raw = pair.as_str().to_string();
    let mut span = span_of(pair);
    // `name=probe` (bpftrace 0.25+): the name is reserved for future use; the probe is the rest.
    if let Some((name, rest)) = raw.split_once('=')
        && !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && !rest.is_empty()
    {
        span = Span::new(span.start + name.len() + 1, span.end);
        raw = rest.to_string();
    }
    let mut pieces = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            // In quotes, `\` escapes the next character (bpftrace: `test:"\"probe1\""`).
            '\\' if quoted => cur.extend(chars.next()),
            ':' if !quoted => pieces.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    pieces.push(cur);
    let provider = pieces.remove(0);
    AttachPoint {
        raw,
        provider,
        parts: pieces,
        span,
    }
}
