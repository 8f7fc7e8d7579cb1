//! `getopt(name[, default])`: named program parameters, given after `--` on the command line
//! (`sonde script.sd -- --pid=123 --verbose`) or as a tool's flags (`sonde tool opensnoop -p
//! 123`), as bpftrace 0.23+ does.
//!
//! The default fixes the type: none or a bool literal gives `bool` (a flag), an integer gives
//! `uint64` (`int64` when it is negative), as bpftrace 0.27 types it, a string literal gives a
//! string. The value is a compile-time constant: the lowering
//! reads it from [`CompileOptions::named`](crate::options::CompileOptions::named) and emits an
//! immediate (or a string constant), so a disabled option costs nothing at run time. A value
//! that does not parse as the option's type is a `sonde::codegen::getopt_value` diagnostic on
//! the call; [`unknown_named`] finds parameters that no `getopt` of the script reads.

use super::args::Args;
use super::function;
use crate::lower::cx::Val;
use crate::lower::strings;
use sonde_lang::ast::{Block, Expr, ExprKind, Program, StmtKind, UnOp};
use sonde_lang::diag::Diagnostic;
use sonde_lang::span::Span;
use sonde_lang::types::Type;

/// Smallest size of the string a string-typed `getopt` yields (bytes, with the NUL).
pub const GETOPT_STR_SIZE: u32 = 64;

/// Code of a named parameter whose value does not fit its `getopt` type.
pub const GETOPT_VALUE: &str = "sonde::codegen::getopt_value";

/// The value (or default) of a named parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OptValue {
    /// A flag.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A string.
    Str(String),
}

impl OptValue {
    /// The name of the value's type as the usage text shows it.
    pub fn kind_name(&self) -> &'static str {
        match self {
            OptValue::Bool(_) => "bool",
            OptValue::Int(_) => "int",
            OptValue::Str(_) => "string",
        }
    }

    /// Parses `text` as a value of the same type as `self`. A flag accepts an empty text (the
    /// bare `--name`), `true`/`false`, `1`/`0`, `on`/`off` and `yes`/`no` in any case (as
    /// bpftrace); an integer accepts decimal, `0x` hex and a leading `-`.
    pub fn parse_like(&self, text: &str) -> Result<OptValue, String> {
        match self {
            OptValue::Bool(_) => match text.to_ascii_lowercase().as_str() {
                "" | "true" | "1" | "on" | "yes" => Ok(OptValue::Bool(true)),
                "false" | "0" | "off" | "no" => Ok(OptValue::Bool(false)),
                _ => Err(format!(
                    "`{text}` is not a flag value (true, false, 1, 0, on, off, yes or no, in any case)"
                )),
            },
            OptValue::Int(_) => parse_int(text)
                .map(OptValue::Int)
                .ok_or_else(|| format!("`{text}` is not an integer")),
            OptValue::Str(_) => Ok(OptValue::Str(text.to_string())),
        }
    }
}

/// Parses an integer as bpftrace 0.27 reads numbers (`0x`, octal, `_`, `1e6`, units), the
/// full `uint64` range kept as its bits, with an optional leading `-`.
fn parse_int(text: &str) -> Option<i64> {
    sonde_lang::numbers::parse_positional(text).map(|(v, _)| v)
}

/// The text of a string `getopt("name", "default")` call (`None` for anything else): the
/// value given as `--name=VALUE`, else the default. Known when the program is built, it can
/// stand where a function wants a string literal (`cgroupid(getopt("cgroup", ""))`).
pub fn const_string(e: &Expr, named: &[(String, String)]) -> Option<String> {
    let ExprKind::Call { name, args } = &e.kind else {
        return None;
    };
    let (Some(ExprKind::Str(key)), Some(OptValue::Str(default))) = (
        args.first().map(|a| &a.kind),
        (name.name == "getopt").then(|| default_of(args)).flatten(),
    ) else {
        return None;
    };
    let key = String::from_utf8_lossy(key);
    let given = named.iter().rev().find(|(n, _)| *n == key);
    Some(given.map_or(default, |(_, v)| v.clone()))
}

/// The default of a `getopt` call from its argument expressions: `None` when the arguments
/// are not a name literal plus an optional literal default.
pub fn default_of(args: &[Expr]) -> Option<OptValue> {
    match args.get(1).map(|e| &e.kind) {
        None => Some(OptValue::Bool(false)),
        Some(ExprKind::Bool(b)) => Some(OptValue::Bool(*b)),
        Some(ExprKind::Int(v)) => i64::try_from(*v).ok().map(OptValue::Int),
        Some(ExprKind::Unary {
            op: UnOp::Neg,
            expr,
        }) => match &expr.kind {
            ExprKind::Int(v) => i64::try_from(*v).ok().map(|v| OptValue::Int(-v)),
            _ => None,
        },
        Some(ExprKind::Str(s)) => Some(OptValue::Str(String::from_utf8_lossy(s).into_owned())),
        Some(_) => None,
    }
}

/// One `getopt` call of a script.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GetoptUse {
    /// The parameter's name.
    pub name: String,
    /// Its default (which fixes its type).
    pub default: OptValue,
    /// Its description (the third argument), shown by `-- --help`.
    pub description: Option<String>,
    /// The call.
    pub span: Span,
}

/// Every well-formed `getopt` call of `program`, in source order.
pub fn uses(program: &Program) -> Vec<GetoptUse> {
    let mut out = Vec::new();
    for m in &program.macros {
        walk_block(&m.body, &mut out);
    }
    for p in &program.probes {
        if let Some(pred) = &p.predicate {
            walk_expr(pred, &mut out);
        }
        walk_block(&p.body, &mut out);
    }
    out
}

/// The names in `named` that no `getopt` call of `program` reads.
pub fn unknown_named<'n>(program: &Program, named: &'n [(String, String)]) -> Vec<&'n str> {
    let used = uses(program);
    named
        .iter()
        .filter(|(n, _)| !used.iter().any(|u| &u.name == n))
        .map(|(n, _)| n.as_str())
        .collect()
}

fn walk_block(b: &Block, out: &mut Vec<GetoptUse>) {
    for s in &b.stmts {
        match &s.kind {
            StmtKind::Expr(e) => walk_expr(e, out),
            StmtKind::Assign { target, value, .. } => {
                walk_expr(target, out);
                walk_expr(value, out);
            }
            StmtKind::Let { value, .. } => {
                if let Some(v) = value {
                    walk_expr(v, out);
                }
            }
            StmtKind::If { cond, then, else_ } => {
                walk_expr(cond, out);
                walk_block(then, out);
                if let Some(e) = else_ {
                    walk_block(e, out);
                }
            }
            StmtKind::Unroll { count, body } | StmtKind::While { cond: count, body } => {
                walk_expr(count, out);
                walk_block(body, out);
            }
            StmtKind::ForMap { map, body, .. } => {
                walk_expr(map, out);
                walk_block(body, out);
            }
            StmtKind::ForRange {
                start, end, body, ..
            } => {
                walk_expr(start, out);
                walk_expr(end, out);
                walk_block(body, out);
            }
            StmtKind::Return(Some(v)) => walk_expr(v, out),
            StmtKind::Break | StmtKind::Continue | StmtKind::Return(None) => {}
        }
    }
}

fn walk_expr(e: &Expr, out: &mut Vec<GetoptUse>) {
    if let ExprKind::Call { name, args } = &e.kind
        && name.name == "getopt"
        && let Some(ExprKind::Str(n)) = args.first().map(|a| &a.kind)
        && let Some(default) = default_of(args)
    {
        let description = match args.get(2).map(|a| &a.kind) {
            Some(ExprKind::Str(d)) => Some(String::from_utf8_lossy(d).into_owned()),
            _ => None,
        };
        out.push(GetoptUse {
            name: String::from_utf8_lossy(n).into_owned(),
            default,
            description,
            span: e.span,
        });
    }
    e.children().into_iter().for_each(|c| walk_expr(c, out));
}

function!(
    /// `getopt(name[, default])`: the value of the named parameter `--name[=value]`.
    Getopt, "getopt", "getopt(name[, default[, description]])",
    "Value of the named parameter --name given after `--` (or a tool's flag); the default (none: a false flag, an integer, a string) fixes its type; the description is for the reader",
    unsafe = false,
    |call| {
        let a = Args::new(call, "getopt(name[, default[, description]])");
        a.arity(1, 3)?;
        if a.len() == 3 {
            a.literal(2, "a description string literal")?;
        }
        let name = a.literal_text(0, "the parameter's name as a string literal")?;
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            return Err(a.error(0, "a name of letters, digits, `_` and `-`"));
        }
        match default_of(call.args) {
            Some(OptValue::Bool(_)) => Ok(Type::Bool),
            Some(OptValue::Int(v)) => Ok(if v >= 0 { Type::U64 } else { Type::I64 }),
            Some(OptValue::Str(s)) => {
                // Room for the default and for the value given on the command line, if any.
                let given = a.call.named.iter().rev().find(|(n, _)| *n == name).map_or(0, |(_, v)| v.len());
                Ok(Type::Str { size: (s.len().max(given) as u32 + 1).max(GETOPT_STR_SIZE) })
            }
            None => Err(a.error(1, "a literal default: true, false, an integer or a string")),
        }
    },
    lower |cx, call| {
        let default = default_of(call.args).unwrap_or(OptValue::Bool(false));
        let name = match call.args.first().map(|e| &e.kind) {
            Some(ExprKind::Str(n)) => String::from_utf8_lossy(n).into_owned(),
            _ => String::new(),
        };
        let given = cx.options.named.iter().rev().find(|(n, _)| *n == name).map(|(_, v)| v.as_str());
        let value = match given {
            None => default,
            Some(text) => default.parse_like(text).map_err(|why| {
                // bpftrace's words first, then sonde's.
                let expects = match default {
                    OptValue::Int(_) => "invalid integer",
                    _ => "expects a boolean (e.g. 'true')",
                };
                Diagnostic::error(GETOPT_VALUE, call.span, format!("program command line option --{name} {expects} (value: {text})"))
                    .with_label(format!("--{name} is read here as {}: {why}", default.kind_name()))
                    .with_help(format!("give --{name}=VALUE with a {} value", default.kind_name()))
            })?,
        };
        match value {
            OptValue::Bool(b) => Ok(Val::Int(cx.imm(i64::from(b)))),
            OptValue::Int(v) => Ok(Val::Int(cx.imm(v))),
            OptValue::Str(s) => {
                let size = call.ty.size();
                if s.len() as u32 >= size {
                    return Err(Diagnostic::error(GETOPT_VALUE, call.span, format!("the value of --{name} is too long")).with_label(format!("this string holds at most {} bytes", size - 1)).with_help("give a shorter value, or a longer default string to make room"));
                }
                Ok(strings::literal(cx, s.as_bytes(), size))
            }
        }
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::functions::args::ARG_TYPE;
    use crate::catalog::functions::testutil::{check, int, lit, val};

    #[test]
    fn type_follows_default() {
        assert_eq!(check(&Getopt, vec![lit("verbose")]).unwrap(), Type::Bool);
        assert_eq!(check(&Getopt, vec![lit("pid"), int(0)]).unwrap(), Type::U64);
        assert_eq!(
            check(&Getopt, vec![lit("name"), lit("")]).unwrap(),
            Type::Str {
                size: GETOPT_STR_SIZE
            }
        );
        assert_eq!(
            check(&Getopt, vec![lit("x"), val(Type::U64)])
                .unwrap_err()
                .code,
            ARG_TYPE
        );
        assert_eq!(
            check(&Getopt, vec![val(Type::U64)]).unwrap_err().code,
            ARG_TYPE
        );
        assert_eq!(check(&Getopt, vec![lit("a b")]).unwrap_err().code, ARG_TYPE);
    }

    #[test]
    fn values_parse_by_type() {
        let flag = OptValue::Bool(false);
        assert_eq!(flag.parse_like(""), Ok(OptValue::Bool(true)));
        assert_eq!(flag.parse_like("false"), Ok(OptValue::Bool(false)));
        assert!(flag.parse_like("maybe").is_err());
        let n = OptValue::Int(0);
        assert_eq!(n.parse_like("123"), Ok(OptValue::Int(123)));
        assert_eq!(n.parse_like("-0x10"), Ok(OptValue::Int(-16)));
        // The full uint64 range, as bpftrace 0.27 reads it, and its other notations.
        assert_eq!(n.parse_like("18446744073709551615"), Ok(OptValue::Int(-1)));
        assert_eq!(n.parse_like("010"), Ok(OptValue::Int(8)));
        assert_eq!(n.parse_like("5ms"), Ok(OptValue::Int(5_000_000)));
        assert_eq!(
            n.parse_like("12a"),
            Err("`12a` is not an integer".to_string())
        );
        let s = OptValue::Str(String::new());
        assert_eq!(s.parse_like("bash"), Ok(OptValue::Str("bash".into())));
    }

    #[test]
    fn finds_uses_and_unknown_names() {
        let src = r#"
tracepoint:syscalls:sys_enter_openat /getopt("pid", 0) == 0 || pid == getopt("pid", 0)/ {
  if (getopt("timestamp")) { printf("%s\n", getopt("name", "x")); }
  @[getopt("neg", -5)] = count();
}"#;
        let program = sonde_lang::syntax::parse(src).unwrap();
        let names: Vec<(String, OptValue)> = uses(&program)
            .into_iter()
            .map(|u| (u.name, u.default))
            .collect();
        assert_eq!(
            names,
            vec![
                ("pid".to_string(), OptValue::Int(0)),
                ("pid".to_string(), OptValue::Int(0)),
                ("timestamp".to_string(), OptValue::Bool(false)),
                ("name".to_string(), OptValue::Str("x".into())),
                ("neg".to_string(), OptValue::Int(-5)),
            ]
        );
        let named = vec![
            ("pid".to_string(), "1".to_string()),
            ("bogus".to_string(), String::new()),
        ];
        assert_eq!(unknown_named(&program, &named), vec!["bogus"]);
    }
}
