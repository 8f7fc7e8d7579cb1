//! The length of every function in a file, measured from its `fn` line to the line of its
//! closing brace on the stripped text, leaving out test-only code.

use super::strip::strip;
use super::tokens::{Lines, Token, body_or_semicolon, matching, tokenize};

/// A function with a body.
#[derive(Debug, PartialEq, Eq)]
pub struct FnSpan {
    /// Its name.
    pub name: String,
    /// The 1-based line of its `fn` keyword.
    pub line: usize,
    /// Lines from the `fn` line to the closing brace, both included.
    pub lines: usize,
}

/// Every function with a body in `text` (methods and nested functions included) outside
/// `#[cfg(test)]` items, in order. Declarations without a body (`fn f();`) and function
/// pointer types (`fn(u8)`) are not functions here.
pub fn functions(text: &str) -> Vec<FnSpan> {
    let stripped = strip(text);
    let tokens = tokenize(&stripped);
    let lines = Lines::new(&stripped);
    let exempt = test_only(&tokens);
    let mut out = Vec::new();
    for (k, token) in tokens.iter().enumerate() {
        let Some(name) = tokens.get(k + 1) else { break };
        if !token.is("fn") || name.kind != super::tokens::Kind::Word {
            continue;
        }
        if exempt.iter().any(|&(from, to)| from <= k && k <= to) {
            continue;
        }
        let Some(body) = body_or_semicolon(&tokens, k + 2) else {
            continue;
        };
        if !tokens[body].is("{") {
            continue;
        }
        let Some(close) = matching(&tokens, body) else {
            continue;
        };
        let line = lines.line(token.pos);
        out.push(FnSpan {
            name: name.text.to_string(),
            line,
            lines: lines.line(tokens[close].pos) - line + 1,
        });
    }
    out
}

/// Token ranges (inclusive) of the items marked `#[cfg(test)]`: from the attribute to the
/// item's closing brace or semicolon.
fn test_only(tokens: &[Token]) -> Vec<(usize, usize)> {
    let mut ranges = Vec::new();
    for k in 0..tokens.len() {
        let is_cfg_test = tokens[k].is("#")
            && ["[", "cfg", "(", "test", ")", "]"]
                .iter()
                .enumerate()
                .all(|(i, t)| tokens.get(k + 1 + i).is_some_and(|tok| tok.is(t)));
        if !is_cfg_test {
            continue;
        }
        let Some(end) = body_or_semicolon(tokens, k + 7) else {
            continue;
        };
        let end = if tokens[end].is("{") {
            matching(tokens, end).unwrap_or(tokens.len() - 1)
        } else {
            end
        };
        ranges.push((k, end));
    }
    ranges
}

/// Whether a file holds only tests by its name (`tests.rs`, `*_tests.rs`).
pub fn is_test_file(name: &str) -> bool {
    name == "tests.rs" || name.ends_with("_tests.rs")
}

/// Function lengths on small sources.
#[cfg(test)]
mod tests {
    use super::*;

    /// Lengths run from the `fn` line to the closing brace, ignoring braces in literals.
    #[test]
    fn lengths_from_fn_line_to_closing_brace() {
        let src = "pub fn one() {}\n\nimpl X {\n    pub(crate) fn three(\n        a: [u8; 2],\n    ) -> u8 {\n        let s = \"}\"; let c = '}';\n        // }\n        0\n    }\n}\n";
        assert_eq!(
            functions(src),
            [
                FnSpan {
                    name: "one".into(),
                    line: 1,
                    lines: 1
                },
                FnSpan {
                    name: "three".into(),
                    line: 4,
                    lines: 7
                },
            ]
        );
    }

    /// Body-less declarations, `fn` types and `#[cfg(test)]` items are not measured.
    #[test]
    fn declarations_pointers_and_test_code_are_left_out() {
        let src = "trait T { fn decl(&self); fn with_default(&self) {\n}\n}\n\
                   type F = fn(u8) -> u8;\nextern \"C\" { fn ext(); }\n\
                   #[cfg(test)]\nmod tests {\n    fn helper() {\n    }\n}\n\
                   #[cfg(test)]\n#[allow(dead_code)]\nfn only_in_tests() {\n}\nfn last() {\n    inner();\n    fn inner() {}\n}\n";
        let names: Vec<(String, usize)> = functions(src)
            .into_iter()
            .map(|f| (f.name, f.lines))
            .collect();
        assert_eq!(
            names,
            [
                ("with_default".into(), 2),
                ("last".into(), 4),
                ("inner".into(), 1)
            ]
        );
    }

    /// Test files are recognised by their names.
    #[test]
    fn test_files_by_name() {
        assert!(is_test_file("tests.rs") && is_test_file("emit_tests.rs"));
        assert!(!is_test_file("attests.rs") && !is_test_file("tests_common.rs"));
    }
}
