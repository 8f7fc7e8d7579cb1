//! Diagnostics: every user-facing error or warning, with a stable code, a primary span and a
//! help text, rendered by miette in the binary.

use crate::span::Span;
use std::fmt;

/// How serious a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// The script cannot run.
    Error,
    /// The script runs, but probably not as intended.
    Warning,
}

/// One diagnostic about a script.
///
/// `code` is stable and documented (e.g. `sonde::sema::unknown_field`); tests assert on the
/// code and span, not on the rendered text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Stable code, `sonde::<phase>::<what>`.
    pub code: &'static str,
    /// Error or warning.
    pub severity: Severity,
    /// One-line message, starting lower case, no trailing period.
    pub message: String,
    /// The primary location.
    pub span: Span,
    /// Text shown at the primary location.
    pub label: String,
    /// Further locations with their texts.
    pub secondary: Vec<(Span, String)>,
    /// How to fix it.
    pub help: Option<String>,
}

impl Diagnostic {
    /// A new error with the given code, message and primary span (label defaults to empty).
    pub fn error(code: &'static str, span: Span, message: impl Into<String>) -> Self {
        Diagnostic {
            code,
            severity: Severity::Error,
            message: message.into(),
            span,
            label: String::new(),
            secondary: Vec::new(),
            help: None,
        }
    }

    /// A new warning with the given code, message and primary span.
    pub fn warning(code: &'static str, span: Span, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(code, span, message)
        }
    }

    /// Sets the label shown at the primary span.
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }

    /// Sets the help text.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Adds a secondary labelled span.
    pub fn with_secondary(mut self, span: Span, label: impl Into<String>) -> Self {
        self.secondary.push((span, label.into()));
        self
    }

    /// True for errors.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Diagnostic {}

impl miette::Diagnostic for Diagnostic {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(self.code))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
        })
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        let primary = miette::LabeledSpan::new_primary_with_span(
            (!self.label.is_empty()).then(|| self.label.clone()),
            self.span,
        );
        let rest = self
            .secondary
            .iter()
            .map(|(s, l)| miette::LabeledSpan::new_with_span(Some(l.clone()), *s));
        Some(Box::new(std::iter::once(primary).chain(rest)))
    }
}

/// Suggests the closest of `candidates` to `name` (edit distance ≤ 1/3 of the length, at
/// least 1), for "did you mean ...?" help texts.
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .map(|c| (edit_distance(name, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Levenshtein distance between two strings (by chars).
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions() {
        assert_eq!(
            did_you_mean("filname", ["filename", "flags"]),
            Some("filename")
        );
        assert_eq!(did_you_mean("zzz", ["filename", "flags"]), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
