//! `return` in a macro's body: bpftrace 0.26 refuses it (`'return' statement is not allowed
//! in a macro`), in every macro defined, called or not; so does sonde. Macros made from C
//! `#define`s are not checked (their body is whatever the define says).

use crate::ast::{Block, Expr, ExprKind, Program, StmtKind};
use crate::diag::Diagnostic;
use crate::span::Span;

/// Code of a `return` statement in a macro's body.
pub const MACRO_RETURN: &str = "sonde::parse::macro_return";

/// One diagnostic per `return` in the body of one of `program`'s macros.
pub fn check(program: &Program) -> Vec<Diagnostic> {
    let mut spans = Vec::new();
    for m in program.macros.iter().filter(|m| !m.from_define) {
        block(&m.body, &mut spans);
    }
    spans.sort_by_key(|s: &Span| (s.start, s.end));
    spans.dedup();
    spans
        .into_iter()
        .map(|span| {
            Diagnostic::error(MACRO_RETURN, span, "`return` is not allowed in a macro")
                .with_label("a macro cannot leave the probe that calls it")
                .with_help("let the macro compute a value and `return` it in the probe")
        })
        .collect()
}

/// The `return` statements of `b`, nested blocks and block expressions included.
fn block(b: &Block, out: &mut Vec<Span>) {
    for s in &b.stmts {
        match &s.kind {
            StmtKind::Return(value) => {
                out.push(s.span);
                value.iter().for_each(|v| expr(v, out));
            }
            StmtKind::Expr(e) => expr(e, out),
            StmtKind::Assign { target, value, .. } => {
                expr(target, out);
                expr(value, out);
            }
            StmtKind::Let { value, .. } => value.iter().for_each(|v| expr(v, out)),
            StmtKind::If { cond, then, else_ } => {
                expr(cond, out);
                block(then, out);
                else_.iter().for_each(|e| block(e, out));
            }
            StmtKind::Unroll { count: c, body } | StmtKind::While { cond: c, body } => {
                expr(c, out);
                block(body, out);
            }
            StmtKind::ForMap { map, body, .. } => {
                expr(map, out);
                block(body, out);
            }
            StmtKind::ForRange {
                start, end, body, ..
            } => {
                expr(start, out);
                expr(end, out);
                block(body, out);
            }
            StmtKind::Break | StmtKind::Continue => {}
        }
    }
}

/// The `return` statements inside the block expressions of `e`.
fn expr(e: &Expr, out: &mut Vec<Span>) {
    match &e.kind {
        ExprKind::Block { body, value } => {
            block(body, out);
            value.iter().for_each(|v| expr(v, out));
        }
        _ => e.children().into_iter().for_each(|c| expr(c, out)),
    }
}

#[cfg(test)]
mod tests {
    use crate::span::Span;

    fn spans(src: &str) -> Vec<(Span, &'static str)> {
        match crate::syntax::parse(src) {
            Ok(_) => Vec::new(),
            Err(diags) => diags.into_iter().map(|d| (d.span, d.code)).collect(),
        }
    }

    #[test]
    fn returns_anywhere_in_a_macro_are_refused() {
        let src = "macro f($x) { if ($x) { return 1; } while (1) { $y = { return; 2 }; } $x } \
                   macro g() { 1 } BEGIN { return f(1); }";
        let first = src.find("return 1").unwrap();
        let second = src.find("return;").unwrap();
        assert_eq!(
            spans(src),
            [
                (Span::new(first, first + 8), super::MACRO_RETURN),
                (Span::new(second, second + 6), super::MACRO_RETURN),
            ]
        );
        assert!(spans("macro g() { 1 } BEGIN { return g(); }").is_empty());
    }
}
