//! The conditional part of the C preprocessor that bpftrace scripts use, without a C
//! compiler: `#if`, `#ifdef`, `#ifndef`, `#elif`, `#else`, `#endif` with `defined(NAME)` and
//! integer expressions, `#undef` and `#error`.
//!
//! The pass rewrites the source into a text of the same length: directive lines and the lines
//! of branches not taken become blanks (newlines kept), so every span the parser makes still
//! points into the script as written. `#define` and `#include` lines in taken branches stay
//! for the grammar; the pass records the object-like `#define`s so that `#if` can test and
//! use them. Names the caller predefines (`BPFTRACE_HAVE_BTF`: sonde takes kernel types from
//! BTF) start as defined to 1.
//!
//! Not done here: `#undef` only affects later `#if`s (a `#define` is visible to the whole
//! script, as sonde resolves them after parsing); function-like macros are not expanded in
//! `#if` expressions.

use crate::diag::Diagnostic;
use crate::span::Span;
use std::cell::Cell;
use std::collections::HashMap;

/// Code of every preprocessor diagnostic.
pub const PREPROCESSOR: &str = "sonde::parse::preprocessor";

/// Most nested `#if` levels.
const MAX_DEPTH: usize = 64;

/// One open `#if` group.
struct Group {
    /// The group's enclosing text is taken.
    outer: bool,
    /// The current branch is taken.
    taken: bool,
    /// Some branch was taken already (later `#elif`/`#else` are not).
    any: bool,
    /// `#else` was seen.
    in_else: bool,
    /// Span of the opening directive.
    span: Span,
}

/// A directive line: its name, the rest, and where the rest starts.
struct Directive<'a> {
    name: &'a str,
    rest: &'a str,
    rest_at: usize,
}

/// The directive on `line` (starting at byte `at` of the source), if the line is one.
fn directive(line: &str, at: usize) -> Option<Directive<'_>> {
    // A byte order mark may start the first line (the grammar skips it too).
    let trimmed = line.trim_start_matches([' ', '\t', '\u{FEFF}']);
    let after_hash = trimmed.strip_prefix('#')?;
    let body = after_hash.trim_start_matches([' ', '\t']);
    let name_len = body
        .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .unwrap_or(body.len());
    let name = &body[..name_len];
    if name.is_empty() {
        return None;
    }
    let rest = &body[name_len..];
    let rest_at = at + (line.len() - rest.len());
    Some(Directive {
        name,
        rest,
        rest_at,
    })
}

/// Replaces every byte of `text` but newlines with a space.
fn blank(text: &str) -> String {
    text.bytes()
        .map(|b| if b == b'\n' { '\n' } else { ' ' })
        .collect()
}

/// Runs the conditional directives of `src` (see the module docs). `predefined` names start
/// defined to 1.
pub fn conditionals(src: &str, predefined: &[&str]) -> Result<String, Vec<Diagnostic>> {
    let mut defines: HashMap<String, String> = predefined
        .iter()
        .map(|n| (n.to_string(), "1".to_string()))
        .collect();
    let mut groups: Vec<Group> = Vec::new();
    let mut out = String::with_capacity(src.len());
    let mut errors = Vec::new();
    let mut in_comment = false;
    let mut at = 0;
    for line in src.split_inclusive('\n') {
        let active = groups.last().is_none_or(|g| g.outer && g.taken);
        let starts_in_comment = in_comment;
        in_comment = ends_in_comment(line, in_comment);
        let dir = if starts_in_comment || (at == 0 && line.starts_with("#!")) {
            None
        } else {
            directive(line, at)
        };
        let span = Span::new(at, at + line.trim_end().len());
        let Some(d) = dir else {
            out.push_str(&if active {
                line.to_string()
            } else {
                blank(line)
            });
            at += line.len();
            continue;
        };
        let rest = strip_comment(d.rest);
        let lead = rest.len() - rest.trim_start().len();
        let rest_span = Span::new(d.rest_at + lead, d.rest_at + lead + rest.trim().len());
        let mut keep = false;
        match d.name {
            "if" | "ifdef" | "ifndef" => {
                if groups.len() >= MAX_DEPTH {
                    errors.push(
                        Diagnostic::error(PREPROCESSOR, span, "`#if` nested too deeply")
                            .with_label(format!("more than {MAX_DEPTH} open `#if` groups"))
                            .with_help("close groups with `#endif` before opening more"),
                    );
                    return Err(errors);
                }
                let taken = if !active {
                    false
                } else if d.name == "if" {
                    holds(rest, rest_span, &defines, &mut errors)
                } else {
                    let name = rest.trim();
                    if !is_ident(name) {
                        errors.push(
                            Diagnostic::error(
                                PREPROCESSOR,
                                rest_span,
                                format!("`#{}` needs a macro name", d.name),
                            )
                            .with_label("expected one name")
                            .with_help(format!("write `#{} NAME`", d.name)),
                        );
                    }
                    defines.contains_key(name) == (d.name == "ifdef")
                };
                groups.push(Group {
                    outer: active,
                    taken,
                    any: taken,
                    in_else: false,
                    span,
                });
            }
            "elif" | "else" => {
                let Some(g) = groups.last_mut() else {
                    errors.push(unmatched(span, d.name));
                    at += line.len();
                    out.push_str(&blank(line));
                    continue;
                };
                if g.in_else {
                    errors.push(
                        Diagnostic::error(
                            PREPROCESSOR,
                            span,
                            format!("`#{}` after `#else`", d.name),
                        )
                        .with_label("the group already has its `#else`")
                        .with_help("`#else` is the last branch of a group"),
                    );
                }
                let taken = if !g.outer || g.any {
                    false
                } else if d.name == "elif" {
                    holds(rest, rest_span, &defines, &mut errors)
                } else {
                    true
                };
                g.taken = taken;
                g.any |= taken;
                g.in_else |= d.name == "else";
            }
            "endif" => {
                if groups.pop().is_none() {
                    errors.push(unmatched(span, "endif"));
                }
            }
            "define" if active => {
                let body = rest.trim_start_matches([' ', '\t']);
                let name_len = body
                    .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                    .unwrap_or(body.len());
                let (name, value) = body.split_at(name_len);
                if !value.starts_with('(') && !name.is_empty() {
                    defines.insert(name.to_string(), value.trim().to_string());
                }
                keep = true;
            }
            "undef" if active => {
                defines.remove(rest.trim());
            }
            "error" if active => errors.push(
                Diagnostic::error(
                    PREPROCESSOR,
                    span,
                    format!("#error {}", rest.trim()).trim_end().to_string(),
                )
                .with_label("the script stops here")
                .with_help("the script's own `#error` directive refused this configuration"),
            ),
            // `#include` (and any other line) in a taken branch is the grammar's.
            _ => keep = active,
        }
        out.push_str(&if keep { line.to_string() } else { blank(line) });
        at += line.len();
    }
    if let Some(g) = groups.first() {
        errors.push(
            Diagnostic::error(PREPROCESSOR, g.span, "`#if` without `#endif`")
                .with_label("this group is never closed")
                .with_help("add `#endif` where the group ends"),
        );
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// Whether the condition `text` of an `#if`/`#elif` holds; an invalid one is reported and
/// does not.
fn holds(
    text: &str,
    span: Span,
    defines: &HashMap<String, String>,
    errors: &mut Vec<Diagnostic>,
) -> bool {
    match eval(text.trim(), span, defines) {
        Ok(v) => v != 0,
        Err(e) => {
            errors.push(e);
            false
        }
    }
}

fn unmatched(span: Span, name: &str) -> Diagnostic {
    Diagnostic::error(PREPROCESSOR, span, format!("`#{name}` without `#if`"))
        .with_label("no open `#if` group")
        .with_help("remove it, or add the `#if` it closes")
}

/// Whether a `/* ... */` comment is open at the end of `line`, given whether one was open at
/// its start (strings and `//` comments are skipped).
fn ends_in_comment(line: &str, mut open: bool) -> bool {
    let b = line.as_bytes();
    let mut i = 0;
    let mut in_string = false;
    while i < b.len() {
        if open {
            if b[i..].starts_with(b"*/") {
                open = false;
                i += 2;
                continue;
            }
        } else if in_string {
            match b[i] {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
        } else if b[i..].starts_with(b"//") {
            return false;
        } else if b[i..].starts_with(b"/*") {
            open = true;
            i += 2;
            continue;
        } else if b[i] == b'"' {
            in_string = true;
        }
        i += 1;
    }
    open
}

/// `text` without a trailing `//` or `/* */` comment.
fn strip_comment(text: &str) -> &str {
    let cut = [text.find("//"), text.find("/*")]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(text.len());
    &text[..cut]
}

fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Evaluates an `#if` expression.
fn eval(text: &str, span: Span, defines: &HashMap<String, String>) -> Result<i64, Diagnostic> {
    let bad = |msg: String| {
        Diagnostic::error(PREPROCESSOR, span, msg)
            .with_label("in this `#if` expression")
            .with_help("`#if` takes C integer expressions over `#define`s and `defined(NAME)`")
    };
    let steps = Cell::new(0);
    let mut p = Eval {
        toks: tokens(text).map_err(bad)?,
        pos: 0,
        defines,
        depth: 0,
        expanding: Vec::new(),
        steps: &steps,
        undefined_is_zero: true,
    };
    let v = p.ternary().map_err(bad)?;
    match p.toks.get(p.pos) {
        None => Ok(v),
        Some(t) => Err(bad(format!("unexpected `{t}`"))),
    }
}

/// The value of a `#define`'s text as a C integer expression over `defines` (`None` when it
/// is not one).
pub fn value(text: &str, defines: &HashMap<String, String>) -> Option<i64> {
    value_or_why(text, defines).ok()
}

/// The value of a `#define`'s text as a C integer expression over `defines`, or why it is
/// not one.
pub fn value_or_why(text: &str, defines: &HashMap<String, String>) -> Result<i64, String> {
    let steps = Cell::new(0);
    let mut p = Eval {
        toks: tokens(text)?,
        pos: 0,
        defines,
        depth: 0,
        expanding: Vec::new(),
        steps: &steps,
        undefined_is_zero: false,
    };
    if p.toks.is_empty() {
        return Err("it is empty".into());
    }
    let v = p.ternary()?;
    match p.peek() {
        None => Ok(v),
        Some(t) => Err(format!("unexpected `{t}`")),
    }
}

/// Splits an `#if` expression into tokens: numbers, names and operators.
fn tokens(text: &str) -> Result<Vec<String>, String> {
    const OPS: [&str; 24] = [
        "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "(", ")", "!", "~", "-", "+", "*", "/",
        "%", "<", ">", "&", "^", "|", "?", ":",
    ];
    let mut out = Vec::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        let word_len = rest
            .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .unwrap_or(rest.len());
        if word_len > 0 {
            out.push(rest[..word_len].to_string());
            rest = &rest[word_len..];
        } else if let Some(op) = OPS.iter().find(|op| rest.starts_with(**op)) {
            out.push(op.to_string());
            rest = &rest[op.len()..];
        } else {
            let c = rest.chars().next().unwrap_or(' ');
            return Err(format!("unexpected `{c}`"));
        }
        rest = rest.trim_start();
    }
    Ok(out)
}

/// Most nested levels of an `#if` expression (parentheses, macro values: a chain of
/// `#define`s each in parentheses takes two a link).
pub const MAX_EVAL_DEPTH: u32 = 128;
/// Most operands one `#if` expression evaluates, macro values included.
const MAX_EVAL_STEPS: u32 = 100_000;

/// A recursive-descent evaluator over `#if` tokens, with C's precedence.
struct Eval<'a> {
    toks: Vec<String>,
    pos: usize,
    defines: &'a HashMap<String, String>,
    depth: u32,
    /// The macros whose values are being evaluated (a macro never expands into itself).
    expanding: Vec<String>,
    /// Operands evaluated so far, macro values included (bounded: values can double up).
    steps: &'a Cell<u32>,
    /// An undefined name is 0 (`#if`, as in C) rather than an error (a `#define`'s value).
    undefined_is_zero: bool,
}

impl Eval<'_> {
    fn peek(&self) -> Option<&str> {
        self.toks.get(self.pos).map(String::as_str)
    }

    fn eat(&mut self, t: &str) -> bool {
        let hit = self.peek() == Some(t);
        if hit {
            self.pos += 1;
        }
        hit
    }

    fn ternary(&mut self) -> Result<i64, String> {
        self.depth += 1;
        if self.depth > MAX_EVAL_DEPTH {
            return Err(format!(
                "expression nested more than {MAX_EVAL_DEPTH} levels deep (parentheses and \
                 #defines within #defines)"
            ));
        }
        let c = self.binary(0)?;
        let v = if self.eat("?") {
            let a = self.ternary()?;
            if !self.eat(":") {
                return Err("`?` without `:`".into());
            }
            let b = self.ternary()?;
            if c != 0 { a } else { b }
        } else {
            c
        };
        self.depth -= 1;
        Ok(v)
    }

    /// Binary operators from precedence level `level` up (C's table, lowest first).
    fn binary(&mut self, level: usize) -> Result<i64, String> {
        const LEVELS: [&[&str]; 10] = [
            &["||"],
            &["&&"],
            &["|"],
            &["^"],
            &["&"],
            &["==", "!="],
            &["<", ">", "<=", ">="],
            &["<<", ">>"],
            &["+", "-"],
            &["*", "/", "%"],
        ];
        if level == LEVELS.len() {
            return self.unary();
        }
        let mut v = self.binary(level + 1)?;
        while let Some(op) = self.peek().filter(|t| LEVELS[level].contains(t)) {
            let op = op.to_string();
            self.pos += 1;
            let r = self.binary(level + 1)?;
            v = match op.as_str() {
                "||" => i64::from(v != 0 || r != 0),
                "&&" => i64::from(v != 0 && r != 0),
                "|" => v | r,
                "^" => v ^ r,
                "&" => v & r,
                "==" => i64::from(v == r),
                "!=" => i64::from(v != r),
                "<" => i64::from(v < r),
                ">" => i64::from(v > r),
                "<=" => i64::from(v <= r),
                ">=" => i64::from(v >= r),
                "<<" => v.checked_shl(u32::try_from(r).unwrap_or(64)).unwrap_or(0),
                ">>" => v.checked_shr(u32::try_from(r).unwrap_or(64)).unwrap_or(0),
                "+" => v.wrapping_add(r),
                "-" => v.wrapping_sub(r),
                "*" => v.wrapping_mul(r),
                _ if r == 0 => return Err("division by zero".into()),
                "/" => v.wrapping_div(r),
                _ => v.wrapping_rem(r),
            };
        }
        Ok(v)
    }

    fn unary(&mut self) -> Result<i64, String> {
        self.steps.set(self.steps.get() + 1);
        if self.steps.get() > MAX_EVAL_STEPS {
            return Err("expression too large once its macros are expanded".into());
        }
        let Some(t) = self.peek().map(str::to_string) else {
            return Err("the expression ends early".into());
        };
        self.pos += 1;
        match t.as_str() {
            "!" => Ok(i64::from(self.unary()? == 0)),
            "~" => Ok(!self.unary()?),
            "-" => Ok(self.unary()?.wrapping_neg()),
            "+" => self.unary(),
            "(" => {
                let v = self.ternary()?;
                if self.eat(")") {
                    Ok(v)
                } else {
                    Err("`(` without `)`".into())
                }
            }
            "defined" => {
                let paren = self.eat("(");
                let name = self.peek().map(str::to_string).filter(|n| is_ident(n));
                let Some(name) = name else {
                    return Err("`defined` needs a macro name".into());
                };
                self.pos += 1;
                if paren && !self.eat(")") {
                    return Err("`defined(` without `)`".into());
                }
                Ok(i64::from(self.defines.contains_key(&name)))
            }
            _ if t.as_bytes()[0].is_ascii_digit() => number(&t),
            _ => match self.defines.get(&t) {
                // An undefined name is 0 in `#if`, as in C.
                None if self.undefined_is_zero => Ok(0),
                None => Err(format!("`{t}` is not defined")),
                Some(value) => {
                    if self.expanding.contains(&t) {
                        return Err(format!("`{t}` expands into itself"));
                    }
                    let mut expanding = self.expanding.clone();
                    expanding.push(t.clone());
                    let mut inner = Eval {
                        toks: tokens(value)?,
                        pos: 0,
                        defines: self.defines,
                        depth: self.depth,
                        expanding,
                        steps: self.steps,
                        undefined_is_zero: self.undefined_is_zero,
                    };
                    if inner.toks.is_empty() {
                        return Err(format!("`{t}` expands to nothing"));
                    }
                    let v = inner.ternary()?;
                    match inner.peek() {
                        None => Ok(v),
                        Some(x) => Err(format!("unexpected `{x}` in the value of `{t}`")),
                    }
                }
            },
        }
    }
}

/// A C integer literal (decimal, `0x` hex, `0` octal, `0b` binary, `u`/`l` suffixes).
fn number(t: &str) -> Result<i64, String> {
    let digits = t.trim_end_matches(['u', 'U', 'l', 'L']);
    let (radix, body) = if let Some(h) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        (16, h)
    } else if let Some(b) = digits
        .strip_prefix("0b")
        .or_else(|| digits.strip_prefix("0B"))
    {
        (2, b)
    } else if digits.len() > 1 && digits.starts_with('0') {
        (8, &digits[1..])
    } else {
        (10, digits)
    };
    u64::from_str_radix(body, radix)
        .map(|v| v as i64)
        .map_err(|_| format!("`{t}` is not an integer"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(src: &str) -> String {
        let out = conditionals(src, &["BPFTRACE_HAVE_BTF"]).unwrap();
        assert_eq!(out.len(), src.len(), "length kept");
        out
    }

    fn kept(src: &str) -> Vec<String> {
        run(src)
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect()
    }

    fn error(src: &str) -> Diagnostic {
        conditionals(src, &[]).unwrap_err().remove(0)
    }

    #[test]
    fn btf_branch_of_bpftraces_tools() {
        let src = "#ifndef BPFTRACE_HAVE_BTF\n#include <net/sock.h>\n#else\n#include <sys/socket.h>\n#endif\nBEGIN {}\n";
        assert_eq!(kept(src), ["#include <sys/socket.h>", "BEGIN {}"]);
        // Offsets are kept: BEGIN is where it was.
        assert_eq!(run(src).find("BEGIN"), src.find("BEGIN"));
    }

    #[test]
    fn expressions_defines_and_nesting() {
        let src = "#define A 2\n#define B (A * 3)\n#if B == 6 && defined(A) && !defined C\nyes1\n#elif 1\nno1\n#endif\n#if 0\n#if 1\nno2\n#endif\n#else\nyes2\n#endif\n#ifdef A\n#undef A\n#endif\n#ifdef A\nno3\n#endif\n#if 0x10 >> 4 == 1 ? UNDEFINED_IS_ZERO + 1 : 0\nyes3\n#endif\n";
        assert_eq!(
            kept(src),
            ["#define A 2", "#define B (A * 3)", "yes1", "yes2", "yes3"]
        );
    }

    #[test]
    fn directives_in_comments_strings_and_shebang_are_text() {
        let src = "#!/usr/bin/env bpftrace\n/*\n#if 0\n*/\nBEGIN { printf(\"#if 0\\n\"); }\n";
        assert_eq!(run(src), src);
    }

    #[test]
    fn unbalanced_groups_and_bad_expressions_are_diagnosed() {
        let e = error("#if 1\nBEGIN {}\n");
        assert_eq!(e.code, PREPROCESSOR);
        assert_eq!(e.message, "`#if` without `#endif`");
        assert_eq!(e.span, Span::new(0, 5));
        assert_eq!(error("#endif\n").message, "`#endif` without `#if`");
        assert_eq!(
            error("#if 1\n#else\n#elif 1\n#endif\n").message,
            "`#elif` after `#else`"
        );
        let e = error("#if (1\n#endif\n");
        assert_eq!(e.message, "`(` without `)`");
        assert_eq!(e.span, Span::new(4, 6));
        assert_eq!(error("#if 1 / 0\n#endif\n").message, "division by zero");
        assert_eq!(error("#if 1 $\n#endif\n").message, "unexpected `$`");
        assert_eq!(
            error("#define X X\n#if X\n#endif\n").message,
            "`X` expands into itself"
        );
        assert_eq!(error("#error no BTF here\n").message, "#error no BTF here");
        // An `#error` in a branch not taken is nothing.
        assert!(conditionals("#if 0\n#error x\n#endif\n", &[]).is_ok());
    }

    #[test]
    fn define_values() {
        let defines: HashMap<String, String> = [("A".to_string(), "0x10".to_string())]
            .into_iter()
            .collect();
        assert_eq!(value("0x1fUL", &defines), Some(31));
        assert_eq!(value("010", &defines), Some(8));
        assert_eq!(value("-3", &defines), Some(-3));
        assert_eq!(value("(A << 1) | 1", &defines), Some(33));
        assert_eq!(value("abc", &defines), None);
        assert_eq!(value("", &defines), None);
        assert_eq!(value("f(1)", &defines), None);
    }

    #[test]
    fn a_chain_of_40_defines_in_parentheses_is_a_constant() {
        let mut defines = HashMap::new();
        defines.insert("A0".to_string(), "1".to_string());
        for i in 1..=40 {
            defines.insert(format!("A{i}"), format!("(A{} + 1)", i - 1));
        }
        assert_eq!(value("A40", &defines), Some(41));
        // 100 links pass the bound: the reason says so.
        for i in 41..=100 {
            defines.insert(format!("A{i}"), format!("(A{} + 1)", i - 1));
        }
        let why = value_or_why("A100", &defines).unwrap_err();
        assert!(
            why.starts_with("expression nested more than 128 levels"),
            "{why}"
        );
    }

    #[test]
    fn deep_nesting_stops() {
        let src = "#if 1\n".repeat(MAX_DEPTH + 1);
        assert_eq!(error(&src).message, "`#if` nested too deeply");
        let expr = format!("#if {}1{}\n#endif\n", "(".repeat(300), ")".repeat(300));
        assert_eq!(
            error(&expr).message,
            "expression nested more than 128 levels deep (parentheses and #defines within \
             #defines)"
        );
        // Each macro is eight of the next: 8^10 operands are never evaluated.
        let mut doubling: String = (0..10)
            .map(|i| {
                format!(
                    "#define M{i} ({})\n",
                    vec![format!("M{}", i + 1); 8].join(" + ")
                )
            })
            .collect();
        doubling.push_str("#define M10 1\n#if M0\n#endif\n");
        assert_eq!(
            error(&doubling).message,
            "expression too large once its macros are expanded"
        );
    }
}
