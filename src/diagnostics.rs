//! Rendering diagnostics with miette: each with the source it points into (the script, or
//! the imported file it is about).

use crate::segments;
use sonde_lang::diag::Diagnostic;
use sonde_lang::span::Span;

/// Prints diagnostics with their source. A diagnostic about the run rather than a place in
/// the script (no span, no label) is printed without a source excerpt.
pub fn render(diags: &[Diagnostic], name: &str, src: &str) {
    let silenced = sonde_system::warnings::silenced();
    for d in diags.iter().filter(|d| d.is_error() || !silenced) {
        // About an imported file: shown in that file.
        let located = segments::locate(d);
        let (d, name, src) = match &located {
            Some((seg, moved)) => (moved, seg.name.as_str(), seg.text.as_str()),
            None => (d, name, src),
        };
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
