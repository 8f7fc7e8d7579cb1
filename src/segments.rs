//! The imported files' parts of a script's combined text (`import "file";`), kept for the
//! diagnostics about them, which are shown in the file they are about.

use sonde_lang::diag::Diagnostic;
use sonde_lang::span::Span;
use std::sync::Mutex;

/// One file's part of the combined source.
#[derive(Clone, Debug)]
pub struct Segment {
    /// The file's name as shown in diagnostics.
    pub name: String,
    /// Where its text starts in the combined source.
    pub start: usize,
    /// Its text.
    pub text: String,
}

/// The imported files' parts of the combined source (the script's own part is not listed).
static SEGMENTS: Mutex<Vec<Segment>> = Mutex::new(Vec::new());

/// Keeps `segments` as the imported parts of the script being run.
pub fn register(segments: Vec<Segment>) {
    *SEGMENTS.lock().unwrap_or_else(|e| e.into_inner()) = segments;
}

/// The file a diagnostic is about and the diagnostic with offsets into that file's text:
/// `None` when it is about the script itself (or spans no imported text).
pub fn locate(d: &Diagnostic) -> Option<(Segment, Diagnostic)> {
    let segments = SEGMENTS.lock().unwrap_or_else(|e| e.into_inner());
    let seg = segments
        .iter()
        .find(|s| d.span.start >= s.start && d.span.start <= s.start + s.text.len())?;
    let rebase = |sp: Span| Span::new(sp.start - seg.start, sp.end.saturating_sub(seg.start));
    let inside = |sp: &Span| sp.start >= seg.start && sp.end <= seg.start + seg.text.len();
    let mut moved = d.clone();
    moved.span = rebase(d.span);
    moved.secondary = d
        .secondary
        .iter()
        .filter(|(sp, _)| inside(sp))
        .map(|(sp, l)| (rebase(*sp), l.clone()))
        .collect();
    Some((seg.clone(), moved))
}
