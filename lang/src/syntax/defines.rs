//! C `#define`s: `#define NAME value` and `#define NAME(a, b) value`.
//!
//! Every `#define` stays a [`CDef`] (for `#if` and the constants table). When its value
//! reads as code (an expression, or statements ending in one), it is also a macro expanded
//! where the script uses it, as the C preprocessor would: an object-like `NAME` wherever the
//! identifier `NAME` is a value, a function-like `NAME(x, y)` wherever it is called, its
//! parameters replaced by the arguments. Unlike `macro` definitions, the body's variables
//! are not renamed (C macros see the caller's variables). Spans stay in the `#define` line,
//! so diagnostics about an expansion point at the macro's text.
//!
//! A function-like value that does not read as code is a syntax error on it; an object-like
//! one (`#define ulong unsigned long`) is only a `CDef`.

use super::build::{Builder, span_of, trimmed_span};
use super::errors;
use crate::ast::*;
use crate::span::Span;
use pest::Parser;
use pest::iterators::Pair;
use sonde_grammar::{Rule, SondeParser};

impl Builder {
    /// `#define NAME value` / `#define NAME(params) value`: the C definition, and the macro
    /// it expands as when its value reads as code.
    pub(super) fn define(&mut self, pair: Pair<'_, Rule>) -> (CDef, Option<MacroDef>) {
        let span = trimmed_span(&pair);
        let mut name = None;
        let mut params = None;
        let mut value = String::new();
        let mut body = None;
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::ident => {
                    name = Some(Ident {
                        name: p.as_str().to_string(),
                        span: span_of(&p),
                    })
                }
                Rule::define_params => {
                    params = Some(
                        p.into_inner()
                            .filter(|q| q.as_rule() == Rule::ident)
                            .map(|q| Ident {
                                name: q.as_str().to_string(),
                                span: span_of(&q),
                            })
                            .collect::<Vec<_>>(),
                    )
                }
                Rule::define_value => {
                    let text = p.as_str();
                    let text = text.find("//").map_or(text, |i| &text[..i]);
                    value = text.replace("\\\r\n", " ").replace("\\\n", " ");
                    value = value.trim().to_string();
                    body = Some((p.as_span().start(), text.to_string()));
                }
                _ => {}
            }
        }
        let name = name.unwrap_or(Ident {
            name: String::new(),
            span,
        });
        let def = CDef {
            kind: CDefKind::Define,
            name: name.name.clone(),
            value: value.clone(),
            fields: vec![],
            enumerators: vec![],
            span,
            packed: false,
        };
        let function_like = params.is_some();
        let mac = match body {
            Some((at, text)) if !value.is_empty() && !name.name.is_empty() => self
                .define_body(at, &text, function_like)
                .map(|body| MacroDef {
                    name,
                    params: params.unwrap_or_default(),
                    body,
                    span,
                    from_define: true,
                }),
            _ => None,
        };
        (def, mac)
    }

    /// Parses a `#define`'s value, written at byte `at` of the script, as statements. A
    /// function-like macro's value that does not parse is reported; an object-like one is
    /// just not code.
    fn define_body(&mut self, at: usize, text: &str, report: bool) -> Option<Block> {
        // Line continuations become blanks of the same length, so offsets stay true.
        let text = text.replace("\\\r\n", "   ").replace("\\\n", "  ");
        // Parsed at its own offset: spans are positions in the script.
        let padded = format!("{}{text}", " ".repeat(at));
        match SondeParser::parse(Rule::define_body, &padded) {
            Ok(mut pairs) => {
                let pair = pairs.next()?;
                let (mut block, value) = self.value_block(pair);
                block.stmts.extend(value.map(|v| Stmt {
                    span: v.span,
                    kind: StmtKind::Expr(v),
                }));
                let lead = text.len() - text.trim_start().len();
                block.span = Span::new(at + lead, at + text.trim_end().len());
                Some(block)
            }
            Err(e) if report => {
                self.errors
                    .push(errors::from_pest(&padded, &e).with_help(
                        "sonde expands a `#define` with parameters as code: its value must be an expression or statements",
                    ));
                None
            }
            Err(_) => None,
        }
    }
}
