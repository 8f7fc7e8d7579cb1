//! Turning pest syntax errors into [`Diagnostic`]s that speak in words.
//!
//! Every grammar rule has a human description in [`rule_words`] (an exhaustive `match`, so a
//! new rule cannot be forgotten and no rule name ever reaches a user). The label goes on the
//! offending token, found by a small lexer at the error position.

use crate::diag::Diagnostic;
use crate::span::Span;
use sonde_grammar::Rule;

/// Code of a syntax error.
pub const SYNTAX: &str = "sonde::parse::syntax";

/// Words for anything that may start a top-level item.
const TOP_LEVEL: &str = "a probe such as `BEGIN { ... }`, a definition or the end of the script";
/// Words for the start of a statement.
const STATEMENT: &str = "a statement";
/// Words for a plain name.
const NAME: &str = "a name";
/// Words for a type.
const TYPE: &str = "a type such as `uint64` or `struct task_struct *`";

/// What an expected rule means to a user. Rules that only continue something already written
/// (operators after an operand) are [`Words::Continuation`]; they are mentioned only when
/// nothing else was expected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Words {
    /// Anything that starts an expression.
    Expression,
    /// Something that may follow a complete operand (an operator, `.field`, `[i]`).
    Continuation,
    /// A specific thing, in words.
    Thing(&'static str),
}

/// The human description of a grammar rule.
pub fn rule_words(rule: Rule) -> Words {
    use Words::*;
    match rule {
        Rule::program | Rule::EOI => Thing(TOP_LEVEL),
        Rule::shebang => Thing("a `#!` line"),
        Rule::include => Thing(TOP_LEVEL),
        Rule::include_path => Thing("a header such as `<linux/sched.h>`"),
        Rule::define => Thing(TOP_LEVEL),
        Rule::define_value | Rule::define_body => Thing("a `#define` value"),
        Rule::define_params => Thing("macro parameters such as `(a, b)`"),
        Rule::c_def => Thing(TOP_LEVEL),
        Rule::c_struct | Rule::c_enum => Thing("a C definition such as `struct name { ... };`"),
        Rule::c_aggregate => Thing("`struct` or `union`"),
        Rule::c_field => Thing("a field declaration such as `int x;`"),
        Rule::c_inline => Thing("a struct or union such as `struct { int x; }`"),
        Rule::c_attribute | Rule::c_attr_item => {
            Thing("an attribute such as `__attribute__((packed))`")
        }
        Rule::c_type | Rule::c_word_seq | Rule::c_word | Rule::c_pad_type | Rule::c_base_word => {
            Thing("a C type")
        }
        Rule::c_declarator | Rule::c_declarators => Thing("a field name such as `x` or `x:3`"),
        Rule::c_stars | Rule::star | Rule::type_stars => Thing("`*`"),
        Rule::c_array | Rule::type_array => Thing("an array size such as `[16]`"),
        Rule::enumerator => Thing("an enumerator name"),
        Rule::enum_value | Rule::neg => Thing("an integer"),
        Rule::config_block => Thing(TOP_LEVEL),
        Rule::config_item => Thing("a config setting such as `max_strlen = 64`"),
        Rule::macro_def => Thing(TOP_LEVEL),
        Rule::map_decl => Thing(TOP_LEVEL),
        Rule::map_decl_name => Thing("a map such as `@name`"),
        Rule::macro_param => Thing("a macro parameter such as `$x`"),
        Rule::probe | Rule::attach_list => Thing(TOP_LEVEL),
        Rule::attach_point => Thing("a probe such as `tracepoint:syscalls:sys_enter_open`"),
        Rule::predicate => Thing("a predicate `/.../`"),
        Rule::block => Thing("a block `{ ... }`"),
        Rule::if_stmt
        | Rule::else_if
        | Rule::else_block
        | Rule::unroll_stmt
        | Rule::while_stmt
        | Rule::for_stmt
        | Rule::for_head
        | Rule::let_stmt
        | Rule::break_stmt
        | Rule::continue_stmt
        | Rule::return_stmt
        | Rule::assign_stmt
        | Rule::block_stmt
        | Rule::expr_stmt => Thing("a statement"),
        Rule::for_range => Thing("a map or a range such as `0..10`"),
        Rule::assign_op => Continuation,
        Rule::expr
        | Rule::binary
        | Rule::unary
        | Rule::prefix_op
        | Rule::cast_prefix
        | Rule::postfix
        | Rule::paren
        | Rule::record_item
        | Rule::paren_item
        | Rule::trailing_comma
        | Rule::block_expr
        | Rule::if_expr
        | Rule::call
        | Rule::type_arg
        | Rule::int_lit
        | Rule::string
        | Rule::bool_lit
        | Rule::positional
        | Rule::positional_count => Expression,
        Rule::ident => Thing(NAME),
        Rule::bin_op
        | Rule::postfix_op
        | Rule::field_access
        | Rule::arrow_access
        | Rule::index
        | Rule::incr
        | Rule::decr
        | Rule::map_keys => Continuation,
        Rule::tuple_index => Thing("a field name or tuple index"),
        Rule::map | Rule::map_name => Thing("a map such as `@name`"),
        Rule::var => Thing("a variable such as `$x`"),
        Rule::str_inner => Thing("string contents"),
        Rule::type_expr
        | Rule::typeof_type
        | Rule::kw_typeof
        | Rule::type_base
        | Rule::type_name_ptr
        | Rule::cast_name
        | Rule::cast_start
        | Rule::scalar_type
        | Rule::c_type_name
        | Rule::c_type_word => Thing(TYPE),
        Rule::kw_if
        | Rule::kw_while
        | Rule::kw_for
        | Rule::kw_unroll
        | Rule::kw_return
        | Rule::kw_break
        | Rule::kw_continue
        | Rule::kw_let => Thing(STATEMENT),
        Rule::kw_else => Thing("`else`"),
        Rule::kw_struct => Thing("`struct`"),
        Rule::kw_union => Thing("`union`"),
        Rule::kw_enum => Thing("`enum`"),
        Rule::kw_config | Rule::kw_macro | Rule::kw_import | Rule::import => Thing(TOP_LEVEL),
        Rule::lbrace => Thing("`{`"),
        Rule::rbrace => Thing("`}`"),
        Rule::lparen => Thing("`(`"),
        Rule::rparen => Thing("`)`"),
        Rule::rbracket => Thing("`]`"),
        Rule::semi => Thing("`;`"),
        Rule::qmark => Continuation,
        Rule::colon => Thing("`:`"),
        // Silent rules never appear in errors; they still get words.
        Rule::WHITESPACE | Rule::hspace | Rule::line_rest => Thing("a blank"),
        Rule::COMMENT => Thing("a comment"),
        Rule::top_item => Thing("a probe or a definition"),
        Rule::c_bitfield => Thing("a bit-field width"),
        Rule::config_value => Thing("a config value"),
        Rule::ap_char => Thing("a probe name"),
        Rule::reserved_word | Rule::keyword => Thing("a keyword"),
        Rule::stmt_list | Rule::compound_stmt | Rule::simple_stmt => Thing("a statement"),
        Rule::stmt_end => Thing("`;` or `}`"),
        Rule::primary | Rule::call_arg => Expression,
        Rule::str_escape => Thing("an escape sequence"),
        Rule::ident_start | Rule::ident_char => Thing("a name"),
    }
}

/// The token at byte `pos` of `src` (after blanks and comments), as a span and a description.
pub fn token_at(src: &str, pos: usize) -> (Span, String) {
    let pos = skip_blanks(src, pos.min(src.len()));
    let rest = &src[pos..];
    let Some(c) = rest.chars().next() else {
        return (Span::new(src.len(), src.len()), "end of input".into());
    };
    let len = if c.is_ascii_alphanumeric() || c == '_' || c == '@' || c == '$' {
        let n = rest
            .char_indices()
            .skip(1)
            .find(|(_, ch)| !(ch.is_ascii_alphanumeric() || *ch == '_'))
            .map_or(rest.len(), |(i, _)| i);
        if n == 1 && (c == '$' || c == '@') && rest[1..].starts_with(['$', '#']) {
            2
        } else {
            n
        }
    } else if c == '"' {
        rest[1..]
            .find(['"', '\n'])
            .map_or(rest.len(), |i| i + 2)
            .min(rest.len())
    } else {
        const TWO: [&str; 16] = [
            "->", "==", "!=", "<=", ">=", "&&", "||", "<<", ">>", "++", "--", "+=", "-=", "*=",
            "/=", "..",
        ];
        if TWO.iter().any(|t| rest.starts_with(t)) {
            2
        } else {
            c.len_utf8()
        }
    };
    let text = &rest[..len];
    let what = if c.is_ascii_digit() {
        format!("number `{text}`")
    } else if c.is_ascii_alphabetic() || c == '_' {
        format!("`{text}`")
    } else if c == '"' {
        "a string".to_string()
    } else if c.is_control() {
        format!("character {:?}", c)
    } else if !c.is_ascii() {
        describe_char(c)
    } else {
        format!("`{text}`")
    };
    (Span::new(pos, pos + len), what)
}

/// A non-ASCII character in words, with its code point: the invisible and look-alike ones
/// (a non-breaking space, a byte order mark, typographic quotes) are named, since the
/// character itself shows as nothing or as an ASCII one.
pub fn describe_char(c: char) -> String {
    let code = format!("U+{:04X}", u32::from(c));
    let name = match c {
        '\u{A0}' => Some("a non-breaking space"),
        '\u{FEFF}' => Some("a byte order mark (zero-width no-break space)"),
        '\u{200B}' => Some("a zero-width space"),
        '\u{200C}' | '\u{200D}' | '\u{2060}' => Some("an invisible joiner"),
        '\u{FFFD}' => Some("a replacement character (an invalid UTF-8 byte read as text)"),
        '\u{2018}' | '\u{2019}' => Some("a typographic single quote"),
        '\u{201C}' | '\u{201D}' => Some("a typographic double quote"),
        '\u{2013}' | '\u{2014}' | '\u{2212}' => Some("a dash"),
        c if c.is_whitespace() => Some("a Unicode space"),
        _ => None,
    };
    match name {
        Some(n)
            if c.is_whitespace()
                || matches!(c, '\u{FEFF}' | '\u{200B}'..='\u{200D}' | '\u{2060}') =>
        {
            format!("{n} ({code})")
        }
        Some(n) => format!("{n} `{c}` ({code})"),
        None => format!("`{c}` ({code})"),
    }
}

/// The help for a non-ASCII character `c` where code was expected.
fn non_ascii_help(c: char) -> String {
    let instead = match c {
        c if c.is_whitespace() || c == '\u{FEFF}' => "a plain space (or nothing)",
        '\u{200B}'..='\u{200D}' | '\u{2060}' => "nothing",
        '\u{2018}' | '\u{2019}' => "`'`",
        '\u{201C}' | '\u{201D}' => "`\"`",
        '\u{2013}' | '\u{2014}' | '\u{2212}' => "`-`",
        _ => "ASCII text",
    };
    format!(
        "outside strings and comments a script is ASCII: replace U+{:04X} with {instead}",
        u32::from(c)
    )
}

/// Skips blanks and comments starting at `pos`.
fn skip_blanks(src: &str, mut pos: usize) -> usize {
    loop {
        let rest = &src[pos..];
        let trimmed = rest.trim_start_matches([' ', '\t', '\r', '\n', '\u{0C}']);
        pos += rest.len() - trimmed.len();
        if trimmed.starts_with("//") {
            pos += trimmed.find('\n').unwrap_or(trimmed.len());
        } else if trimmed.starts_with("/*") {
            pos += trimmed.find("*/").map_or(trimmed.len(), |i| i + 2);
        } else {
            return pos;
        }
    }
}

/// Joins descriptions as "a, b or c".
fn join_or(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {}", init.join(", "), last),
    }
}

/// The diagnostic of a pest parse error of `src`.
pub fn from_pest(src: &str, e: &pest::error::Error<Rule>) -> Diagnostic {
    use pest::error::{ErrorVariant, InputLocation};
    let pos = match e.location {
        InputLocation::Pos(p) => p,
        InputLocation::Span((s, _)) => s,
    };
    let expected = match &e.variant {
        ErrorVariant::ParsingError { positives, .. } => positives.clone(),
        ErrorVariant::CustomError { .. } => Vec::new(),
    };
    syntax_error(src, pos, &expected)
}

/// Builds the diagnostic for a pest error at byte `pos` with the `expected` rules.
pub fn syntax_error(src: &str, pos: usize, expected: &[Rule]) -> Diagnostic {
    let (span, found) = token_at(src, pos);
    let has = |r: Rule| expected.contains(&r);
    let mut expression = false;
    let mut continuation = false;
    let mut things: Vec<String> = Vec::new();
    for &r in expected {
        match rule_words(r) {
            Words::Expression => expression = true,
            Words::Continuation => continuation = true,
            Words::Thing(t) => {
                if !things.iter().any(|x| x == t) {
                    things.push(t.to_string());
                }
            }
        }
    }
    if things.iter().any(|t| t == TOP_LEVEL) {
        things.retain(|t| t == TOP_LEVEL);
    }
    if things.iter().any(|t| t == STATEMENT) {
        expression = false;
    }
    if expression || has(Rule::tuple_index) {
        things.retain(|t| t != NAME && t != TYPE);
    }
    let (message, help) = if has(Rule::semi) && !expression && (continuation || things.len() == 1) {
        (
            format!("expected `;` or `}}` after statement, found {found}"),
            "end the statement with `;` (or close the block with `}`)".to_string(),
        )
    } else if expression {
        let mut all = vec!["an expression".to_string()];
        all.extend(things);
        (
            format!("expected {}, found {found}", join_or(&all)),
            "write a value here: a number, string, variable (`$x`), map (`@m`), builtin or call"
                .to_string(),
        )
    } else if things.is_empty() {
        (
            format!("unexpected {found}"),
            "an operator or the end of the statement was expected here".to_string(),
        )
    } else {
        let help = if has(Rule::rparen) {
            "add the missing `)`"
        } else if has(Rule::rbrace) {
            "add the missing `}`"
        } else if has(Rule::rbracket) {
            "add the missing `]`"
        } else if has(Rule::lparen) {
            "add `(`: conditions of `if`, `while` and `unroll` are written in parentheses"
        } else if has(Rule::var) {
            "scratch variables start with `$`, as in `$x`"
        } else if has(Rule::predicate) {
            "a probe needs a body: add `{ ... }`"
        } else if has(Rule::lbrace) {
            "add a block `{ ... }` here"
        } else if has(Rule::colon) {
            "a conditional expression is written `cond ? a : b`"
        } else if things.iter().all(|t| t == NAME) {
            "a name (letters, digits and `_`, not starting with a digit) is needed here"
        } else if things.iter().any(|t| t == TOP_LEVEL) {
            "a script is a list of probes such as `BEGIN { ... }` or `tracepoint:cat:name { ... }`"
        } else {
            "check the syntax near this point"
        };
        (
            format!("expected {}, found {found}", join_or(&things)),
            help.to_string(),
        )
    };
    // A character that is not ASCII is named and gets its own help: most are invisible or
    // look like an ASCII one (a non-breaking space, a typographic quote).
    let (label, help) = match src.get(span.start..).and_then(|r| r.chars().next()) {
        Some(c) if !c.is_ascii() => (found, non_ascii_help(c)),
        _ => (format!("unexpected {found}"), help),
    };
    Diagnostic::error(SYNTAX, span, message)
        .with_label(label)
        .with_help(help)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens() {
        assert_eq!(token_at("a  foo(", 1), (Span::new(3, 6), "`foo`".into()));
        assert_eq!(token_at("x -> y", 1), (Span::new(2, 4), "`->`".into()));
        assert_eq!(
            token_at("x /* c */ 12", 1),
            (Span::new(10, 12), "number `12`".into())
        );
        assert_eq!(token_at("abc", 3), (Span::new(3, 3), "end of input".into()));
        assert_eq!(
            token_at("  \"ab\" x", 0),
            (Span::new(2, 6), "a string".into())
        );
        assert_eq!(token_at("é", 0), (Span::new(0, 2), "`é` (U+00E9)".into()));
        assert_eq!(
            token_at("a\u{a0}", 1),
            (Span::new(1, 3), "a non-breaking space (U+00A0)".into())
        );
        assert_eq!(
            token_at("\u{201c}x", 0).1,
            "a typographic double quote `\u{201c}` (U+201C)"
        );
    }

    #[test]
    fn messages() {
        let d = syntax_error(
            "BEGIN { a b }",
            10,
            &[Rule::bin_op, Rule::semi, Rule::rbrace],
        );
        assert_eq!(d.message, "expected `;` or `}` after statement, found `b`");
        assert_eq!(d.span, Span::new(10, 11));
        let d = syntax_error(
            "BEGIN { @a = ; }",
            13,
            &[Rule::prefix_op, Rule::ident, Rule::map],
        );
        assert_eq!(
            d.message,
            "expected an expression or a map such as `@name`, found `;`"
        );
        assert_eq!(join_or(&["a".into(), "b".into(), "c".into()]), "a, b or c");
    }
}
