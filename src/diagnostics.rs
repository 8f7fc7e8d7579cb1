//! Rendering diagnostics with miette: each with the source it points into (the script, or
//! the imported file it is about).

use crate::segments;
use sonde_lang::diag::Diagnostic;
use sonde_lang::span::Span;

/// How diagnostics name a shipped tool's script (`tool:capable`): its source is sonde's,
/// not the user's, so its diagnostics print without an excerpt, their label in the message.
pub const TOOL_PREFIX: &str = "tool:";

/// Prints diagnostics with their source. A diagnostic about the run rather than a place in
/// the script (no span, no label), or about a shipped tool's script, is printed without a
/// source excerpt.
pub fn render(diags: &[Diagnostic], name: &str, src: &str) {
    let silenced = sonde_system::warnings::silenced();
    for d in diags.iter().filter(|d| d.is_error() || !silenced) {
        // About an imported file: shown in that file.
        let located = segments::locate(d);
        let (d, name, src) = match &located {
            Some((seg, moved)) => (moved, seg.name.as_str(), seg.text.as_str()),
            None => (d, name, src),
        };
        let tool = located.is_none() && name.starts_with(TOOL_PREFIX);
        let d = if tool { &without_place(d) } else { d };
        let report = miette::Report::new(d.clone());
        let placeless = d.span == Span::default() && d.label.is_empty() && d.secondary.is_empty();
        let report = if placeless {
            report
        } else {
            report.with_source_code(miette::NamedSource::new(name, src.to_string()))
        };
        eprintln!("{report:?}");
    }
}

/// `d` without its places: its label joined to its message.
fn without_place(d: &Diagnostic) -> Diagnostic {
    let mut d = d.clone();
    if !d.label.is_empty() {
        d.message = format!("{}: {}", d.message, d.label);
    }
    d.label.clear();
    d.secondary.clear();
    d.span = Span::default();
    d
}
