//! A lexical pre-scan run before the pest parser.
//!
//! It finds the problems that a PEG parser reports badly or dangerously: unterminated string
//! literals and block comments (pest would point at the end of the file) and absurd nesting
//! (pest recurses once per nesting level, so deep input could overflow the stack).

use crate::diag::Diagnostic;
use crate::span::Span;

/// Deepest nesting of brackets (`(`, `[`, `{`) plus ternary `?` accepted.
pub const MAX_NESTING: usize = 256;

/// Code for input nested more deeply than [`MAX_NESTING`].
pub const TOO_DEEP: &str = "sonde::parse::too_deep";
/// Code for a string literal without its closing quote.
pub const UNTERMINATED_STRING: &str = "sonde::parse::unterminated_string";
/// Code for a `/*` comment without its closing `*/`.
pub const UNTERMINATED_COMMENT: &str = "sonde::parse::unterminated_comment";

/// The diagnostic for nesting deeper than [`MAX_NESTING`] at `span`.
pub fn too_deep(span: Span) -> Diagnostic {
    Diagnostic::error(
        TOO_DEEP,
        span,
        format!("nesting is deeper than {MAX_NESTING} levels"),
    )
    .with_label("nested too deeply here")
    .with_help("split the expression or block using scratch variables (`$tmp = ...;`)")
}

/// The diagnostic for a script the parser gave up on after `steps` steps, at `span`: blocks
/// nested in calls or parentheses (`f({ f({ ...`) make it try each level twice.
pub fn too_complex(span: Span, steps: usize) -> Diagnostic {
    Diagnostic::error(
        TOO_DEEP,
        span,
        format!("the script is too intricate to parse: the parser gave up after {steps} steps"),
    )
    .with_label("it was here")
    .with_help(
        "blocks nested inside calls or parentheses (`f({ g({ ... }) })`) are tried several ways \
         at each level; use scratch variables (`$tmp = { ... };`) or fix the syntax error \
         inside",
    )
}

/// Scans `src` for unterminated strings and comments and excessive nesting. Returns the
/// diagnostics found (empty when the text may be handed to the parser).
pub fn prescan(src: &str) -> Vec<Diagnostic> {
    let bytes = src.as_bytes();
    let mut i = 0;
    if src.starts_with("#!") {
        i = memchr_newline(bytes, 0);
    }
    let mut depth = 0usize;
    let mut ternary = 0usize;
    while i < bytes.len() {
        match bytes[i] {
            b'/' if bytes.get(i + 1) == Some(&b'/') => i = memchr_newline(bytes, i),
            b'/' if bytes.get(i + 1) == Some(&b'*') => match find(bytes, i + 2, b"*/") {
                Some(end) => i = end + 2,
                // `uprobe:/opt/app/*:main`: a wildcard path in an attach point (the grammar
                // takes `/*` there, as bpftrace does), not a comment.
                None if i > 0 && !bytes[i - 1].is_ascii_whitespace() => i += 2,
                None => {
                    return vec![
                        Diagnostic::error(
                            UNTERMINATED_COMMENT,
                            Span::new(i, i + 2),
                            "unterminated block comment",
                        )
                        .with_label("this comment is never closed")
                        .with_help("add `*/` where the comment should end"),
                    ];
                }
            },
            b'"' => {
                let start = i;
                i += 1;
                loop {
                    match bytes.get(i) {
                        None | Some(b'\n') => {
                            return vec![
                                Diagnostic::error(
                                    UNTERMINATED_STRING,
                                    Span::new(start, start + 1),
                                    "unterminated string literal",
                                )
                                .with_label("this string is never closed")
                                .with_help("add the closing `\"` on the same line"),
                            ];
                        }
                        Some(b'\\') => i += 2,
                        Some(b'"') => {
                            i += 1;
                            break;
                        }
                        Some(_) => i += 1,
                    }
                }
            }
            b'(' | b'[' | b'{' | b'?' => {
                if bytes[i] == b'?' {
                    ternary += 1;
                } else {
                    depth += 1;
                }
                if depth + ternary > MAX_NESTING {
                    return vec![too_deep(Span::new(i, i + 1))];
                }
                i += 1;
            }
            b')' | b']' | b'}' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            b':' => {
                ternary = ternary.saturating_sub(1);
                i += 1;
            }
            _ => i += 1,
        }
    }
    Vec::new()
}

/// Index of the next `\n` at or after `from`, or the end of input.
fn memchr_newline(bytes: &[u8], from: usize) -> usize {
    bytes[from..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len(), |p| from + p)
}

/// Index of the next occurrence of `needle` at or after `from`.
fn find(bytes: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    bytes
        .get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| from + p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_ordinary_text() {
        assert!(prescan("BEGIN { printf(\"a \\\" ( /* \"); } // \" \n /* \" */").is_empty());
        assert!(prescan("#!/usr/bin/env \"bpftrace\nBEGIN {}").is_empty());
    }

    #[test]
    fn a_wildcard_path_is_no_comment() {
        assert!(prescan("uprobe:/opt/app/*:main { }").is_empty());
        assert_eq!(prescan("BEGIN { } /* x")[0].code, UNTERMINATED_COMMENT);
    }

    #[test]
    fn unterminated_string_points_at_the_quote() {
        let d = prescan("BEGIN { printf(\"abc); }\n}");
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].code, UNTERMINATED_STRING);
        assert_eq!(d[0].span, Span::new(15, 16));
    }

    #[test]
    fn unterminated_comment() {
        let d = prescan("BEGIN { } /* abc");
        assert_eq!(d[0].code, UNTERMINATED_COMMENT);
        assert_eq!(d[0].span, Span::new(10, 12));
    }

    #[test]
    fn deep_nesting() {
        let ok = format!("{}1{}", "(".repeat(MAX_NESTING), ")".repeat(MAX_NESTING));
        assert!(prescan(&ok).is_empty());
        let bad = format!(
            "{}1{}",
            "(".repeat(MAX_NESTING + 1),
            ")".repeat(MAX_NESTING + 1)
        );
        let d = prescan(&bad);
        assert_eq!(d[0].code, TOO_DEEP);
        assert_eq!(d[0].span, Span::new(MAX_NESTING, MAX_NESTING + 1));
        let ternaries = "1 ? ".repeat(MAX_NESTING + 1);
        assert_eq!(prescan(&ternaries)[0].code, TOO_DEEP);
    }
}
