//! A stable, indented, S-expression-like dump of the AST, used by `sonde --dump ast` and by
//! the parser's golden tests.
//!
//! Every node is `(head child...)`. Statements and expressions end their head with their
//! byte span `[start..end]`. A node whose children all fit on one short line is printed on one
//! line; otherwise each child gets its own line, indented by two spaces. Strings are printed
//! in double quotes with `\n`, `\t`, `\r`, `\\`, `\"` and `\xNN` escapes, so the output is
//! plain ASCII whatever the input bytes.

use crate::ast::*;
use crate::span::Span;

/// Renders `program` as an indented S-expression (ends with a newline).
pub fn dump(program: &Program) -> String {
    let mut out = String::new();
    render(&program_node(program), 0, &mut out);
    out.push('\n');
    out
}

/// A node of the dump tree.
enum Node {
    /// An atom printed as is.
    Atom(String),
    /// `(head children...)`.
    List(String, Vec<Node>),
}

/// Widest single-line rendering of a list.
const LINE_LIMIT: usize = 90;

/// Renders `node` at `indent` into `out`.
fn render(node: &Node, indent: usize, out: &mut String) {
    match node {
        Node::Atom(a) => out.push_str(a),
        Node::List(head, children) => {
            let flat = flat(node);
            if let Some(flat) = flat.filter(|f| indent + f.len() <= LINE_LIMIT) {
                out.push_str(&flat);
                return;
            }
            out.push('(');
            out.push_str(head);
            for c in children {
                out.push('\n');
                out.push_str(&" ".repeat(indent + 2));
                render(c, indent + 2, out);
            }
            out.push(')');
        }
    }
}

/// The one-line rendering of a node, if it has no nested multi-child lists.
fn flat(node: &Node) -> Option<String> {
    match node {
        Node::Atom(a) => Some(a.clone()),
        Node::List(head, children) => {
            let mut s = format!("({head}");
            for c in children {
                s.push(' ');
                s.push_str(&flat(c)?);
                if s.len() > LINE_LIMIT {
                    return None;
                }
            }
            s.push(')');
            Some(s)
        }
    }
}

/// An atom.
fn atom(s: impl Into<String>) -> Node {
    Node::Atom(s.into())
}

/// `[start..end]`.
fn sp(span: Span) -> String {
    format!("[{}..{}]", span.start, span.end)
}

/// A quoted, escaped string.
fn quote(bytes: &[u8]) -> String {
    let mut s = String::from("\"");
    for &b in bytes {
        match b {
            b'"' => s.push_str("\\\""),
            b'\\' => s.push_str("\\\\"),
            b'\n' => s.push_str("\\n"),
            b'\t' => s.push_str("\\t"),
            b'\r' => s.push_str("\\r"),
            0x20..=0x7e => s.push(b as char),
            _ => s.push_str(&format!("\\x{b:02x}")),
        }
    }
    s.push('"');
    s
}

/// The whole program.
fn program_node(p: &Program) -> Node {
    let mut children = Vec::new();
    children.extend(p.c_defs.iter().map(c_def_node));
    if !p.config.is_empty() {
        let items = p
            .config
            .iter()
            .map(|c| Node::List(format!("{} =", c.name.name), vec![expr_node(&c.value)]));
        children.push(Node::List("config".into(), items.collect()));
    }
    children.extend(p.map_decls.iter().map(|d| {
        Node::Atom(format!(
            "(let @{} {} {} {})",
            d.name,
            d.kind.name,
            d.max_entries,
            sp(d.span)
        ))
    }));
    children.extend(p.macros.iter().map(|m| {
        let params: Vec<&str> = m.params.iter().map(|p| p.name.as_str()).collect();
        Node::List(
            format!(
                "macro {} ({}) {}",
                m.name.name,
                params.join(" "),
                sp(m.span)
            ),
            vec![block_node(&m.body)],
        )
    }));
    children.extend(p.probes.iter().map(probe_node));
    Node::List("program".into(), children)
}

/// A C definition or preprocessor line.
fn c_def_node(d: &CDef) -> Node {
    let span = sp(d.span);
    match d.kind {
        CDefKind::Include => atom(format!("(include {} {span})", quote(d.name.as_bytes()))),
        CDefKind::Define => atom(format!(
            "(define {} {} {span})",
            d.name,
            quote(d.value.as_bytes())
        )),
        CDefKind::Struct | CDefKind::Union => {
            let kw = if d.kind == CDefKind::Struct {
                "struct"
            } else {
                "union"
            };
            let fields = d
                .fields
                .iter()
                .map(|f| atom(format!("(field {} {})", f.name.name, type_text(&f.ty))));
            Node::List(format!("{kw} {} {span}", d.name), fields.collect())
        }
        CDefKind::Enum => {
            let items = d
                .enumerators
                .iter()
                .map(|(n, v)| atom(format!("({n} {v})")));
            Node::List(format!("enum {} {span}", d.name), items.collect())
        }
    }
}

/// A type: `(type typeof EXPR [span])` for `typeof(expr)`, else [`type_text`].
fn type_node(t: &TypeExpr) -> Node {
    match t.typeof_expr() {
        Some(e) => Node::List(format!("type typeof {}", sp(t.span)), vec![expr_node(e)]),
        None => atom(type_text(t)),
    }
}

/// A type as `(type BASE *... [N])`.
fn type_text(t: &TypeExpr) -> String {
    let base = match &t.base {
        BaseType::Named(n) if n.contains(' ') => quote(n.as_bytes()),
        BaseType::Named(n) => n.clone(),
        BaseType::String => "string".into(),
        BaseType::Struct(n) => format!("struct {n}"),
        BaseType::Union(n) => format!("union {n}"),
        BaseType::Enum(n) => format!("enum {n}"),
        BaseType::Typeof(_) => "typeof".into(),
    };
    let stars = "*".repeat(usize::from(t.pointer_depth));
    let array = t.array.map_or(String::new(), |n| format!(" array {n}"));
    let stars = if stars.is_empty() {
        stars
    } else {
        format!(" {stars}")
    };
    format!("(type {base}{stars}{array} {})", sp(t.span))
}

/// A probe.
fn probe_node(p: &Probe) -> Node {
    let mut children: Vec<Node> = p
        .attach_points
        .iter()
        .map(|a| {
            let parts: Vec<String> = a.parts.iter().map(|s| quote(s.as_bytes())).collect();
            atom(format!(
                "(attach {} {} ({}) {})",
                quote(a.raw.as_bytes()),
                a.provider,
                parts.join(" "),
                sp(a.span)
            ))
        })
        .collect();
    if let Some(pred) = &p.predicate {
        children.push(Node::List("predicate".into(), vec![expr_node(pred)]));
    }
    children.push(block_node(&p.body));
    Node::List(format!("probe {}", sp(p.span)), children)
}

/// A block.
fn block_node(b: &Block) -> Node {
    Node::List(
        format!("block {}", sp(b.span)),
        b.stmts.iter().map(stmt_node).collect(),
    )
}

/// A statement.
fn stmt_node(s: &Stmt) -> Node {
    let span = sp(s.span);
    match &s.kind {
        StmtKind::Expr(e) => Node::List(format!("expr {span}"), vec![expr_node(e)]),
        StmtKind::Assign { target, op, value } => {
            let op = op.map_or("=".to_string(), |o| format!("{}=", o.symbol()));
            Node::List(
                format!("assign {op} {span}"),
                vec![expr_node(target), expr_node(value)],
            )
        }
        StmtKind::Let { var, ty, value } => {
            let mut c = Vec::new();
            if let Some(t) = ty {
                c.push(type_node(t));
            }
            if let Some(v) = value {
                c.push(expr_node(v));
            }
            Node::List(format!("let ${} {span}", var.name), c)
        }
        StmtKind::If { cond, then, else_ } => {
            let mut c = vec![expr_node(cond), block_node(then)];
            if let Some(e) = else_ {
                c.push(Node::List("else".into(), vec![block_node(e)]));
            }
            Node::List(format!("if {span}"), c)
        }
        StmtKind::Unroll { count, body } => Node::List(
            format!("unroll {span}"),
            vec![expr_node(count), block_node(body)],
        ),
        StmtKind::While { cond, body } => Node::List(
            format!("while {span}"),
            vec![expr_node(cond), block_node(body)],
        ),
        StmtKind::ForMap { var, map, body } => Node::List(
            format!("for ${} {span}", var.name),
            vec![expr_node(map), block_node(body)],
        ),
        StmtKind::ForRange {
            var,
            start,
            end,
            body,
        } => Node::List(
            format!("for ${} {span}", var.name),
            vec![
                Node::List("range".into(), vec![expr_node(start), expr_node(end)]),
                block_node(body),
            ],
        ),
        StmtKind::Break => atom(format!("(break {span})")),
        StmtKind::Continue => atom(format!("(continue {span})")),
        StmtKind::Return(None) => atom(format!("(return {span})")),
        StmtKind::Return(Some(v)) => Node::List(format!("return {span}"), vec![expr_node(v)]),
    }
}

/// An expression.
fn expr_node(e: &Expr) -> Node {
    let span = sp(e.span);
    let leaf = |s: String| atom(format!("({s} {span})"));
    match &e.kind {
        ExprKind::Int(v) => leaf(format!("int {v}")),
        ExprKind::Bool(b) => leaf(format!("bool {b}")),
        ExprKind::Str(s) => leaf(format!("str {}", quote(s))),
        ExprKind::Ident(n) => leaf(format!("ident {n}")),
        ExprKind::Positional(n) => leaf(format!("positional ${n}")),
        ExprKind::PositionalCount => leaf("positional-count".into()),
        ExprKind::Var(n) => leaf(format!("var ${n}")),
        ExprKind::Map { name, keys } => Node::List(
            format!("map @{name} {span}"),
            keys.iter().map(expr_node).collect(),
        ),
        ExprKind::Call { name, args } => Node::List(
            format!("call {} {span}", name.name),
            args.iter().map(expr_node).collect(),
        ),
        ExprKind::Type(t) => type_node(t),
        ExprKind::Binary { op, lhs, rhs } => Node::List(
            format!("binary {} {span}", op.symbol()),
            vec![expr_node(lhs), expr_node(rhs)],
        ),
        ExprKind::Unary { op, expr } => Node::List(
            format!("unary {} {span}", op.symbol()),
            vec![expr_node(expr)],
        ),
        ExprKind::IncDec {
            target,
            increment,
            prefix,
        } => {
            let op = if *increment { "++" } else { "--" };
            let fix = if *prefix { "pre" } else { "post" };
            Node::List(format!("{fix}{op} {span}"), vec![expr_node(target)])
        }
        ExprKind::Block { body, value } => {
            let mut children = vec![block_node(body)];
            children.extend(value.iter().map(|v| expr_node(v)));
            Node::List(format!("block-expr {span}"), children)
        }
        ExprKind::Ternary { cond, then, else_ } => Node::List(
            format!("ternary {span}"),
            vec![expr_node(cond), expr_node(then), expr_node(else_)],
        ),
        ExprKind::Field { base, field, arrow } => {
            let op = if *arrow { "->" } else { "." };
            Node::List(
                format!("field {op}{} {span}", field.name),
                vec![expr_node(base)],
            )
        }
        ExprKind::TupleIndex { base, index } => {
            Node::List(format!("tuple-index {index} {span}"), vec![expr_node(base)])
        }
        ExprKind::Index { base, index } => Node::List(
            format!("index {span}"),
            vec![expr_node(base), expr_node(index)],
        ),
        ExprKind::Cast { ty, expr } => {
            Node::List(format!("cast {span}"), vec![type_node(ty), expr_node(expr)])
        }
        ExprKind::Record { names, values } => Node::List(
            format!("record {span}"),
            names
                .iter()
                .zip(values)
                .map(|(n, v)| Node::List(format!("{} =", n.name), vec![expr_node(v)]))
                .collect(),
        ),
        ExprKind::Tuple(items) => Node::List(
            format!("tuple {span}"),
            items.iter().map(expr_node).collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::parse;

    #[test]
    fn dumps_a_small_probe() {
        let p = parse("BEGIN { @x = 1 + 2; }").unwrap();
        let expected = "\
(program
  (probe [0..21]
    (attach \"BEGIN\" BEGIN () [0..5])
    (block [6..21]
      (assign = [8..18]
        (map @x [8..10])
        (binary + [13..18] (int 1 [13..14]) (int 2 [17..18]))))))
";
        assert_eq!(dump(&p), expected);
    }

    #[test]
    fn quotes_every_byte_readably() {
        assert_eq!(
            quote(b"a\"\\\n\t\r\x00\xff"),
            "\"a\\\"\\\\\\n\\t\\r\\x00\\xff\""
        );
    }
}
