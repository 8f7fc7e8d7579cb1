//! Finds the paths a file names: `crate::` paths (in `use` trees, nested braces included,
//! and inline in code) and paths into other crates of the workspace (`sonde_lang::...`).

use super::tokens::{Kind, Token};

/// A `crate::` path named in a file, expanded out of its use tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CratePath {
    /// The segments after `crate::` (`["a", "b"]` for `crate::a::b`; `self` and `*` leaves
    /// add nothing to their prefix).
    pub segments: Vec<String>,
    /// Byte offset of the `crate` keyword that starts it.
    pub pos: usize,
}

/// Every `crate::` path in the tokens of one file. `use crate::{a::{b, c}, d as e}` gives
/// `a::b`, `a::c` and `d`; `crate::a::f::<T>()` gives `a::f`. `pub(crate)`, `super::` and
/// `self::` paths give nothing; `$crate::` (in macros) counts as `crate::`.
pub fn crate_paths(tokens: &[Token]) -> Vec<CratePath> {
    let mut out = Vec::new();
    for (k, token) in tokens.iter().enumerate() {
        let starts_path = token.is("crate")
            && tokens.get(k + 1).is_some_and(|t| t.is("::"))
            && (k == 0 || !(tokens[k - 1].is("::") || tokens[k - 1].is(".")));
        if starts_path {
            let mut leaves = Vec::new();
            tree(tokens, k + 2, Vec::new(), &mut leaves);
            out.extend(leaves.into_iter().map(|segments| CratePath {
                segments,
                pos: token.pos,
            }));
        }
    }
    out
}

/// Reads the use tree (or plain path) starting at token `k` below `prefix`, pushing each
/// leaf path onto `out`; returns the index of the first token after the tree.
fn tree(
    tokens: &[Token],
    mut k: usize,
    mut prefix: Vec<String>,
    out: &mut Vec<Vec<String>>,
) -> usize {
    loop {
        let Some(token) = tokens.get(k) else {
            out.push(prefix);
            return k;
        };
        if token.is("{") {
            k += 1;
            while k < tokens.len() && !tokens[k].is("}") {
                if tokens[k].is(",") {
                    k += 1;
                    continue;
                }
                let next = tree(tokens, k, prefix.clone(), out);
                k = next.max(k + 1);
            }
            return k + 1;
        }
        if token.kind != Kind::Word || token.is("self") {
            out.push(prefix); // `*`, `self`, or the end of a path (`::<T>`).
            return if token.is("self") || token.is("*") {
                skip_alias(tokens, k + 1)
            } else {
                k
            };
        }
        prefix.push(token.text.to_string());
        if tokens.get(k + 1).is_some_and(|t| t.is("::")) {
            k += 2;
        } else {
            out.push(prefix);
            return skip_alias(tokens, k + 1);
        }
    }
}

/// Skips an `as NAME` at token `k`, if there is one.
fn skip_alias(tokens: &[Token], k: usize) -> usize {
    if tokens.get(k).is_some_and(|t| t.is("as")) {
        k + 2
    } else {
        k
    }
}

/// The uses of other crates among `crates` (their Rust names, like `sonde_lang`) in one
/// file's tokens: a name followed by `::` that is not itself inside a path, or named by
/// `use NAME` / `extern crate NAME`. Gives `(crate name, byte offset)` for each.
pub fn crate_uses<'a>(tokens: &[Token], crates: &[&'a str]) -> Vec<(&'a str, usize)> {
    let mut out = Vec::new();
    for (k, token) in tokens.iter().enumerate() {
        let Some(&name) = crates.iter().find(|c| token.is(c)) else {
            continue;
        };
        let before = k.checked_sub(1).map(|b| &tokens[b]);
        let in_path = before.is_some_and(|t| t.is("."))
            || (before.is_some_and(|t| t.is("::")) && k >= 2 && tokens[k - 2].kind == Kind::Word);
        let named = tokens.get(k + 1).is_some_and(|t| t.is("::"))
            || before.is_some_and(|t| t.is("use") || t.is("crate"));
        if named && !in_path {
            out.push((name, token.pos));
        }
    }
    out
}

/// Path scanning on small sources.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::strip::strip;
    use crate::shape::tokens::tokenize;

    /// The `crate::` paths of `src`, joined with `::`.
    fn paths(src: &str) -> Vec<String> {
        let stripped = strip(src);
        crate_paths(&tokenize(&stripped))
            .into_iter()
            .map(|p| p.segments.join("::"))
            .collect()
    }

    /// Nested use trees expand to one path per leaf (`self`, `*` and `as` included).
    #[test]
    fn nested_use_trees() {
        assert_eq!(
            paths("pub use crate::{a::{b, c::{self, d as dd}}, e, f::*};"),
            ["a::b", "a::c", "a::c::d", "e", "f"]
        );
        assert_eq!(
            paths("use crate::a::b as c;\nuse crate::x::*;"),
            ["a::b", "x"]
        );
        assert_eq!(paths("use crate::{self as me, q};"), ["", "q"]);
    }

    /// Inline `crate::` paths count; `super::`, `self::` and `x::crate::` do not.
    #[test]
    fn inline_paths_only_from_crate() {
        let src = "pub(crate) fn f() { crate::a::b::f::<u8>(); super::x::y(); self::z(); \
                   let v = crate::m::S { x: 1 }; m!($crate::mac::g); other::crate::no; }";
        assert_eq!(paths(src), ["a::b::f", "m::S", "mac::g"]);
    }

    /// Paths in comments, doc comments and literals do not count.
    #[test]
    fn comments_and_strings_do_not_count() {
        let src = "// crate::a\n/// crate::b\nlet s = \"crate::c\"; let q = '\"'; crate::d::e();";
        assert_eq!(paths(src), ["d::e"]);
    }

    /// Uses of other workspace crates are found, but not fields or inner path segments.
    #[test]
    fn other_crates_of_the_workspace() {
        let src = "use sonde_lang::ast;\nfn f() { sonde_runtime::run(); x.sonde_lang; \
                   my::sonde_lang::y; ::sonde_compiler::z; }\nextern crate sonde_grammar;";
        let stripped = strip(src);
        let tokens = tokenize(&stripped);
        let crates = [
            "sonde_lang",
            "sonde_runtime",
            "sonde_compiler",
            "sonde_grammar",
        ];
        let found: Vec<&str> = crate_uses(&tokens, &crates)
            .into_iter()
            .map(|(c, _)| c)
            .collect();
        assert_eq!(
            found,
            [
                "sonde_lang",
                "sonde_runtime",
                "sonde_compiler",
                "sonde_grammar"
            ]
        );
    }
}
