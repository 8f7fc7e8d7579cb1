//! Rhai errors as sonde diagnostics: the span of the line and column rhai reports in the
//! post-processing script, a stable code, and a help text. The binary renders them with the
//! rhai script's own source (every code starts with [`CODE_PREFIX`]).

use rhai::{EvalAltResult, ParseError, Position};
use sonde_lang::diag::Diagnostic;
use sonde_lang::span::Span;

/// The prefix of every post-processing diagnostic's code.
pub const CODE_PREFIX: &str = "sonde::post::";

/// The byte span of rhai's `pos` (1-based line and column, in characters) in `src`: the
/// identifier or number that starts there, else one character. `None` for no position.
pub fn span_of(src: &str, pos: Position) -> Option<Span> {
    let (line, col) = (pos.line()?, pos.position().unwrap_or(1));
    let start_of_line = if line <= 1 {
        0
    } else {
        src.match_indices('\n').nth(line - 2).map(|(i, _)| i + 1)?
    };
    let rest = &src[start_of_line..];
    let line_text = rest.split('\n').next().unwrap_or("");
    let start = line_text
        .char_indices()
        .nth(col.saturating_sub(1))
        .map_or(line_text.len(), |(i, _)| i);
    let word = line_text[start..]
        .char_indices()
        .take_while(|(_, c)| c.is_alphanumeric() || *c == '_')
        .last()
        .map(|(i, c)| i + c.len_utf8());
    let len = word.unwrap_or_else(|| line_text[start..].chars().next().map_or(0, char::len_utf8));
    let begin = start_of_line + start;
    Some(Span::new(begin, begin + len))
}

/// A syntax error of the script.
pub fn parse_error(src: &str, e: &ParseError) -> Diagnostic {
    let pos = e.position();
    let d = Diagnostic::error(
        "sonde::post::syntax",
        span_of(src, pos).unwrap_or_default(),
        format!("syntax error in the post-processing script: {}", e.err_type()),
    )
    .with_help("the post-processing script is rhai (https://rhai.rs/book); docs/reference.md, Post-processing, lists its callbacks and functions");
    if pos.is_none() {
        d
    } else {
        d.with_label("here")
    }
}

/// An error raised while the script ran in `callback` (`on_event`, ...; `None` for its
/// top-level statements). Calls of script functions on the way are secondary labels.
pub fn runtime_error(src: &str, callback: Option<&str>, err: EvalAltResult) -> Diagnostic {
    let mut calls = Vec::new();
    let mut e = err;
    while let EvalAltResult::ErrorInFunctionCall(name, _, inner, pos) = e {
        calls.push((name, pos));
        e = *inner;
    }
    let pos = e.position();
    let (code, what, help) = explain(&e);
    let shown = what.unwrap_or_else(|| {
        let mut shown = e;
        shown.clear_position();
        shown.to_string()
    });
    let place = match callback {
        Some(cb) => format!("in {cb}"),
        None => "in its top-level statements".to_string(),
    };
    // Without a position (the operation limit is found between operations), the callback.
    let (span, label) = match span_of(src, pos) {
        Some(s) => (Some(s), "here"),
        None => (
            callback.and_then(|cb| span_of(src, super::find_fn(src, cb)?)),
            "in this callback",
        ),
    };
    let mut d = Diagnostic::error(
        code,
        span.unwrap_or_default(),
        format!("the post-processing script failed {place}: {shown}"),
    )
    .with_help(help);
    if span.is_some() {
        d = d.with_label(label);
    }
    for (name, at) in calls {
        if let Some(span) = span_of(src, at) {
            d = d.with_secondary(span, format!("in this call of {name}"));
        }
    }
    d
}

/// The code of error `e`, what it says when rhai's words would not name the limit, and the
/// help.
fn explain(e: &EvalAltResult) -> (&'static str, Option<String>, String) {
    use super::limits::Stopped;
    let sizes = format!(
        "the post-processing script is limited to strings of {} bytes, arrays of {} items, object maps of {} fields, {} nested calls and {} bytes of output per call",
        super::MAX_STRING,
        super::MAX_ARRAY,
        super::MAX_MAP,
        super::MAX_CALL_LEVELS,
        super::MAX_OUTPUT
    );
    let time = format!(
        "a callback of the post-processing script may run at most {} operations and {} s: look for a loop that does not end",
        super::MAX_OPERATIONS,
        super::MAX_CALL_TIME.as_secs()
    );
    match e {
        EvalAltResult::ErrorTooManyOperations(_) => (
            "sonde::post::too_long",
            Some(format!(
                "it ran more than {} operations",
                super::MAX_OPERATIONS
            )),
            time,
        ),
        EvalAltResult::ErrorTerminated(token, _) => match Stopped::from_token(token) {
            Some(Stopped::Time) => (
                "sonde::post::too_long",
                Some(format!(
                    "it ran longer than {} s",
                    super::MAX_CALL_TIME.as_secs()
                )),
                time,
            ),
            Some(Stopped::Signal) => (
                "sonde::post::interrupted",
                Some("stopped by Ctrl-C or SIGTERM".to_string()),
                format!(
                    "a callback still running {} s after Ctrl-C or SIGTERM is stopped; the maps print as they would without the script",
                    super::SIGNAL_GRACE.as_secs()
                ),
            ),
            Some(Stopped::Output) => (
                "sonde::post::too_large",
                Some(format!(
                    "it printed more than {} bytes in one call",
                    super::MAX_OUTPUT
                )),
                sizes,
            ),
            None => ("sonde::post::runtime", None, RUNTIME_HELP.to_string()),
        },
        EvalAltResult::ErrorDataTooLarge(what, _) => {
            let limit = if what.starts_with("Length of string") {
                format!("a string longer than {} bytes", super::MAX_STRING)
            } else if what.starts_with("Size of array") {
                format!("an array of more than {} items", super::MAX_ARRAY)
            } else if what.starts_with("Size of object map") {
                format!("an object map of more than {} fields", super::MAX_MAP)
            } else {
                format!("{what} past its limit")
            };
            (
                "sonde::post::too_large",
                Some(format!("it built {limit}")),
                sizes,
            )
        }
        EvalAltResult::ErrorStackOverflow(_) => (
            "sonde::post::too_large",
            Some(format!(
                "its calls nested deeper than {} levels",
                super::MAX_CALL_LEVELS
            )),
            sizes,
        ),
        _ => ("sonde::post::runtime", None, RUNTIME_HELP.to_string()),
    }
}

const RUNTIME_HELP: &str = "docs/reference.md, Post-processing, lists the callbacks, the values they receive and the functions";

/// A callback defined with the wrong number of parameters.
pub fn bad_callback(src: &str, name: &str, params: usize, pos: Option<Position>) -> Diagnostic {
    Diagnostic::error(
        "sonde::post::callback",
        pos.and_then(|p| span_of(src, p)).unwrap_or_default(),
        format!("{name} takes one parameter, not {params}"),
    )
    .with_help("the callbacks are on_event(e), on_interval(maps) and on_end(maps)")
}

/// A script that defines no callback.
pub fn no_callback(defined: &[&str]) -> Diagnostic {
    let close = defined
        .iter()
        .find_map(|d| sonde_lang::diag::did_you_mean(d, super::CALLBACKS));
    let help = match close {
        Some(c) => format!("did you mean {c}? The callbacks are on_event(e), on_interval(maps) and on_end(maps)"),
        None => "define on_event(e), on_interval(maps) or on_end(maps) (docs/reference.md, Post-processing)".to_string(),
    };
    Diagnostic::error(
        "sonde::post::no_callback",
        Span::default(),
        "the post-processing script defines none of on_event, on_interval and on_end",
    )
    .with_help(help)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_become_spans() {
        let src = "let a = 1;\nfn on_end(maps) {\n    boom(maps);\n}\n";
        // Line 3, column 5: `boom`.
        let s = span_of(src, Position::new(3, 5)).unwrap();
        assert_eq!(&src[s.start..s.end], "boom");
        let s = span_of(src, Position::new(1, 7)).unwrap();
        assert_eq!(&src[s.start..s.end], "=");
        assert_eq!(span_of(src, Position::NONE), None);
        assert_eq!(span_of(src, Position::new(40, 1)), None);
        // A column past the end of its line is the line's end.
        let s = span_of("x\n", Position::new(1, 9)).unwrap();
        assert_eq!((s.start, s.end), (1, 1));
    }
}
