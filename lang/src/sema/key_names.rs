//! The names a map's keys go by: for `@io[comm, args.rwbs]`, `comm` and `args.rwbs`. What
//! exporters name labels after (sonde-export); taken from the first keyed use of each map in
//! source order.

use crate::ast::{Expr, ExprKind, Program};
use std::collections::BTreeMap;

/// The name of a key expression: a builtin or variable's name (`comm`, `$x` → `x`), a
/// field path (`args.rwbs`, `curtask->pid` → `curtask.pid`), the name inside a conversion
/// call (`str(args.filename)` → `args.filename`, `comm()` → `comm`); empty for anything
/// else (an arithmetic expression, a literal).
fn expr_name(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Ident(s) | ExprKind::Var(s) => s.clone(),
        ExprKind::Field { base, field, .. } => {
            let b = expr_name(base);
            if b.is_empty() {
                String::new()
            } else {
                format!("{b}.{}", field.name)
            }
        }
        ExprKind::Call { name, args } => match args.first() {
            None => name.name.clone(),
            Some(a) => expr_name(a),
        },
        ExprKind::Cast { expr, .. } => expr_name(expr),
        _ => String::new(),
    }
}

/// For each map keyed somewhere in `program` (name without `@`), the names of its key
/// expressions at its first keyed use.
pub fn key_names(program: &Program) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    let mut p = program.clone();
    let mut visit = |e: &mut Expr| walk(e, &mut out);
    for probe in &mut p.probes {
        if let Some(pred) = probe.predicate.as_mut() {
            visit(pred);
        }
        for s in &mut probe.body.stmts {
            s.for_each_expr_mut(&mut visit);
        }
    }
    out
}

/// Records the keys of every map access in `e` and below it.
fn walk(e: &mut Expr, out: &mut BTreeMap<String, Vec<String>>) {
    if let ExprKind::Map { name, keys } = &e.kind
        && !keys.is_empty()
        && !out.contains_key(name)
    {
        out.insert(name.clone(), keys.iter().map(expr_name).collect());
    }
    e.for_each_child_mut(&mut |c| walk(c, out));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(src: &str) -> BTreeMap<String, Vec<String>> {
        let p = crate::syntax::parse(src).expect("parses");
        key_names(&p)
    }

    #[test]
    fn keys_named_after_their_expressions() {
        let n = names(
            "tracepoint:block:block_rq_complete { @io[comm, args.rwbs] = count(); \
             @f[str(args.filename), pid + 1] = count(); @[$x] = 1; @s = count(); }",
        );
        assert_eq!(n["io"], ["comm", "args.rwbs"]);
        assert_eq!(n["f"], ["args.filename", ""]);
        assert_eq!(n[""], ["x"]);
        assert!(!n.contains_key("s"));
    }

    #[test]
    fn nested_uses_count() {
        let n = names("BEGIN { if (1) { printf(\"%d\", @c[tid]); } }");
        assert_eq!(n["c"], ["tid"]);
    }
}
