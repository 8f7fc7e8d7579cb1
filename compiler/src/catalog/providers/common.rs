//! Helpers shared by the providers: attach point shape checks, number parsing, wildcard
//! matching and the diagnostics every provider raises the same way.

use sonde_lang::ast::AttachPoint;
use sonde_lang::catalog::{ProbeContext, ResolvedAttach};
use sonde_lang::diag::{Diagnostic, did_you_mean};
use sonde_lang::span::Span;

/// Code of a malformed attach point (wrong number of parts, bad number, zero rate, ...).
pub const BAD_ATTACH_POINT: &str = "sonde::probe::bad_attach_point";
/// Code of a tracepoint (or raw tracepoint) that does not exist.
pub const UNKNOWN_TRACEPOINT: &str = "sonde::probe::unknown_tracepoint";
/// Code of a wildcard that matches nothing.
pub const NO_MATCH: &str = "sonde::probe::no_match";
/// Code of a uprobe binary that cannot be found or read.
pub const UNKNOWN_BINARY: &str = "sonde::probe::unknown_binary";
/// Code of a function that is not in the binary or kernel.
pub const UNKNOWN_FUNCTION: &str = "sonde::probe::unknown_function";
/// Code of a uprobe offset that is not an instruction boundary of its function.
pub const BAD_OFFSET: &str = "sonde::probe::bad_offset";
/// Code of a perf event name (`software:x`, `hardware:x`) that does not exist.
pub const UNKNOWN_EVENT: &str = "sonde::probe::unknown_event";

/// The span of part `index` of `ap` (the text after the `index`-th `:`), or the whole attach
/// point when the raw text does not split back into the parts (quoted parts).
pub fn part_span(ap: &AttachPoint, index: usize) -> Span {
    let mut rebuilt = ap.provider.clone();
    for p in &ap.parts {
        rebuilt.push(':');
        rebuilt.push_str(p);
    }
    if rebuilt != ap.raw || index >= ap.parts.len() {
        return ap.span;
    }
    let start =
        ap.provider.len() + 1 + ap.parts[..index].iter().map(|p| p.len() + 1).sum::<usize>();
    Span::new(
        ap.span.start + start,
        ap.span.start + start + ap.parts[index].len(),
    )
}

/// A `bad_attach_point` diagnostic at `span` that shows the expected `usage`.
pub fn bad_attach_point(span: Span, message: impl Into<String>, usage: &str) -> Diagnostic {
    Diagnostic::error(BAD_ATTACH_POINT, span, message)
        .with_label("invalid attach point")
        .with_help(format!("expected `{usage}`"))
}

/// Checks that `ap` has between `min` and `max` parts after the provider.
pub fn expect_parts(
    ap: &AttachPoint,
    min: usize,
    max: usize,
    usage: &str,
) -> Result<(), Diagnostic> {
    let n = ap.parts.len();
    if n < min || n > max {
        let expected = if min == max {
            format!("{min}")
        } else {
            format!("{min} to {max}")
        };
        return Err(bad_attach_point(
            ap.span,
            format!(
                "`{}` takes {expected} `:`-separated part(s) after the probe type, {n} given",
                ap.provider
            ),
            usage,
        ));
    }
    if let Some(i) = ap.parts.iter().position(String::is_empty) {
        return Err(bad_attach_point(
            part_span(ap, i),
            "empty part in attach point",
            usage,
        ));
    }
    Ok(())
}

/// Parses an unsigned integer written in decimal, `0x` hex or with `_` separators.
pub fn parse_u64(text: &str) -> Option<u64> {
    let t = text.replace('_', "");
    if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16).ok()
    } else if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        t.parse().ok()
    } else {
        None
    }
}

/// Parses part `index` of `ap` as a positive integer (zero is rejected with `what` in the text).
pub fn positive_part(
    ap: &AttachPoint,
    index: usize,
    what: &str,
    usage: &str,
) -> Result<u64, Diagnostic> {
    let text = &ap.parts[index];
    match parse_u64(text) {
        Some(0) => Err(bad_attach_point(
            part_span(ap, index),
            format!("{what} must be positive, got 0"),
            usage,
        )),
        Some(v) => Ok(v),
        None => Err(bad_attach_point(
            part_span(ap, index),
            format!("{what} must be a positive integer, got `{text}`"),
            usage,
        )),
    }
}

// The wildcard rules are the language's, shared with probe listing.
pub use sonde_lang::glob::{has_wildcard, wildcard_match};

/// Resolves the binary of a user-space attach point (part 0 of `ap`: a path or a library
/// name such as `libc`), as uprobes and usdt probes name it.
pub fn resolve_target_binary(
    ap: &AttachPoint,
    kernel: &dyn sonde_lang::kernel::KernelInfo,
    usage: &str,
) -> Result<String, Diagnostic> {
    let target = &ap.parts[0];
    if has_wildcard(target) {
        return Err(bad_attach_point(
            part_span(ap, 0),
            "wildcards in the binary path are not supported",
            usage,
        ));
    }
    kernel.resolve_binary(target).ok_or_else(|| {
        Diagnostic::error(
            UNKNOWN_BINARY,
            part_span(ap, 0),
            format!("cannot find binary `{target}`"),
        )
        .with_label("no such binary or library")
        .with_help(
            "give a path to an ELF file (`/bin/bash`, `./prog`) or a library name such as `libc`",
        )
    })
}

/// A `no_match` diagnostic for a wildcard `pattern` that matched nothing of `what`.
pub fn no_match(span: Span, pattern: &str, what: &str) -> Diagnostic {
    Diagnostic::error(NO_MATCH, span, format!("`{pattern}` matches no {what}"))
        .with_label("no match")
        .with_help(format!("list the available {what} with `sonde -l`"))
}

/// An "unknown X" diagnostic with a did-you-mean help drawn from `candidates`.
pub fn unknown_with_suggestion<'a>(
    code: &'static str,
    span: Span,
    what: &str,
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Diagnostic {
    let d = Diagnostic::error(code, span, format!("unknown {what} `{name}`"))
        .with_label(format!("no such {what}"));
    match did_you_mean(name, candidates) {
        Some(s) => d.with_help(format!("did you mean `{s}`?")),
        None => d.with_help(format!("list the available {what}s with `sonde -l`")),
    }
}

/// A resolved attach point named `provider:parts...`.
pub fn resolved(
    ap: &AttachPoint,
    provider: &str,
    parts: Vec<String>,
    ctx: ProbeContext,
) -> ResolvedAttach {
    let mut name = provider.to_string();
    for p in &parts {
        name.push(':');
        name.push_str(p);
    }
    ResolvedAttach {
        name,
        parts,
        span: ap.span,
        ctx,
    }
}

/// Splits `fn+off` into the function and its offset (0 when absent).
pub fn split_offset(
    ap: &AttachPoint,
    index: usize,
    usage: &str,
) -> Result<(String, u64), Diagnostic> {
    let text = &ap.parts[index];
    match text.split_once('+') {
        None => Ok((text.clone(), 0)),
        Some((func, off)) => {
            let offset = parse_u64(off).ok_or_else(|| {
                bad_attach_point(
                    part_span(ap, index),
                    format!("offset `{off}` is not a number"),
                    usage,
                )
            })?;
            if func.is_empty() {
                return Err(bad_attach_point(
                    part_span(ap, index),
                    "missing function name before `+`",
                    usage,
                ));
            }
            Ok((func.to_string(), offset))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ap(raw: &str) -> AttachPoint {
        let mut it = raw.split(':');
        let provider = it.next().unwrap().to_string();
        AttachPoint {
            raw: raw.into(),
            provider,
            parts: it.map(String::from).collect(),
            span: Span::new(10, 10 + raw.len()),
        }
    }

    #[test]
    fn part_spans_point_into_the_attach_point() {
        let a = ap("uprobe:/bin/bash:readline");
        assert_eq!(part_span(&a, 0), Span::new(17, 26));
        assert_eq!(part_span(&a, 1), Span::new(27, 35));
        assert_eq!(part_span(&a, 5), a.span);
    }

    #[test]
    fn wildcards() {
        assert!(wildcard_match("sys_enter_*", "sys_enter_openat"));
        assert!(wildcard_match("*open*", "sys_enter_openat"));
        assert!(wildcard_match("sys_?xit_read", "sys_exit_read"));
        assert!(!wildcard_match("sys_enter_*", "sys_exit_read"));
        assert!(wildcard_match("*", ""));
        assert!(!wildcard_match("a?", "a"));
        assert!(has_wildcard("a*") && has_wildcard("a?") && !has_wildcard("abc"));
    }

    #[test]
    fn numbers() {
        assert_eq!(parse_u64("99"), Some(99));
        assert_eq!(parse_u64("0x10"), Some(16));
        assert_eq!(parse_u64("1_000"), Some(1000));
        assert_eq!(parse_u64("-1"), None);
        assert_eq!(parse_u64(""), None);
    }

    #[test]
    fn offsets() {
        let a = ap("kprobe:vfs_read+0x10");
        assert_eq!(split_offset(&a, 0, "u").unwrap(), ("vfs_read".into(), 16));
        let bad = ap("kprobe:vfs_read+x");
        let e = split_offset(&bad, 0, "u").unwrap_err();
        assert_eq!(e.code, BAD_ATTACH_POINT);
        assert_eq!(e.span, Span::new(17, 27));
    }
}
