//! Test support shared by the tests of `sonde-lang` and of the crates above it: a fixture
//! [`KernelInfo`] ([`FixtureKernel`]), a small fake [`Catalog`] ([`FakeCatalog`]) with a
//! realistic subset of providers, builtins and functions, and the annotation harness
//! ([`check_annotated`]) for type-checker tests written as
//!
//! ```text
//! kprobe:f { @x = count(); @x = 1; }
//!                          ^^ error: sonde::sema::map_type_mismatch
//! ```
//!
//! where each `^^^` line marks the primary span (columns) of a diagnostic on the line above.
//! Not part of the public API.

// `Diagnostic` is the contract's error type everywhere; boxing it would change the contract.
#![allow(clippy::result_large_err)]

mod catalog;
mod fixture;

pub use catalog::FakeCatalog;
pub use fixture::FixtureKernel;

use crate::catalog::Catalog;
use crate::diag::{Diagnostic, Severity};
use crate::kernel::KernelInfo;
use crate::sema::{self, CheckOptions, Checked};
use crate::span::Span;

/// An expected diagnostic: severity, code and primary span.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Expected {
    /// Primary span.
    pub span: Span,
    /// `error` or `warning`.
    pub severity: String,
    /// The code.
    pub code: String,
}

/// Splits annotated source into the script and its expected diagnostics.
///
/// A line whose first non-blank character is `^` annotates the previous script line: the
/// carets give the columns, then `error: <code>` or `warning: <code>`.
pub fn split_annotations(annotated: &str) -> (String, Vec<Expected>) {
    let mut src = String::new();
    let mut expected = Vec::new();
    let mut prev_line_start = 0;
    for line in annotated.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if trimmed.starts_with('^') {
            let col = line.len() - trimmed.len();
            let carets = trimmed.chars().take_while(|&c| c == '^').count();
            let rest = trimmed[carets..].trim();
            let (severity, code) = rest.split_once(':').unwrap_or(("error", rest));
            expected.push(Expected {
                span: Span::new(prev_line_start + col, prev_line_start + col + carets),
                severity: severity.trim().to_string(),
                code: code.trim().to_string(),
            });
        } else {
            prev_line_start = src.len();
            src.push_str(line);
        }
    }
    (src, expected)
}

/// Parses and checks `src` against `catalog` and `kernel`.
///
/// # Panics
/// When `src` does not parse (a test bug).
pub fn check_src(
    src: &str,
    catalog: &dyn Catalog,
    kernel: &dyn KernelInfo,
    options: &CheckOptions,
) -> (Checked, Vec<Diagnostic>) {
    let program = match crate::syntax::parse(src) {
        Ok(p) => p,
        Err(d) => panic!("test script does not parse: {d:#?}\n{src}"),
    };
    sema::check(&program, catalog, kernel, options)
}

/// Checks annotated source and asserts that exactly the annotated diagnostics are reported.
/// Returns the check result for further assertions.
///
/// # Panics
/// When the diagnostics differ from the annotations.
pub fn check_annotated(
    annotated: &str,
    catalog: &dyn Catalog,
    kernel: &dyn KernelInfo,
    options: &CheckOptions,
) -> (Checked, Vec<Diagnostic>) {
    let (src, mut expected) = split_annotations(annotated);
    let (checked, diags) = check_src(&src, catalog, kernel, options);
    let mut actual: Vec<Expected> = diags
        .iter()
        .map(|d| Expected {
            span: d.span,
            severity: match d.severity {
                Severity::Error => "error".into(),
                Severity::Warning => "warning".into(),
            },
            code: d.code.to_string(),
        })
        .collect();
    expected.sort();
    actual.sort();
    if expected != actual {
        panic!(
            "diagnostics differ\nexpected:\n{}\nactual:\n{}\nfull: {diags:#?}",
            annotate(&src, &expected),
            annotate(&src, &actual)
        );
    }
    (checked, diags)
}

/// Renders `src` with `^^^ severity: code` lines under the lines the diagnostics point at
/// (the inverse of [`split_annotations`]).
pub fn annotate(src: &str, diags: &[Expected]) -> String {
    let mut out = String::new();
    let mut start = 0;
    for line in src.split_inclusive('\n') {
        out.push_str(line);
        if !line.ends_with('\n') {
            out.push('\n');
        }
        let end = start + line.len();
        for d in diags
            .iter()
            .filter(|d| d.span.start >= start && d.span.start < end)
        {
            let col = d.span.start - start;
            let width = d.span.len().max(1).min(end - d.span.start);
            out.push_str(&format!(
                "{}{} {}: {}\n",
                " ".repeat(col),
                "^".repeat(width),
                d.severity,
                d.code
            ));
        }
        start = end;
    }
    out
}

/// A readable dump of the scratch variables of the first instance of every probe and of
/// all maps, e.g. `probe 0: $x: int64` and `@m[uint64]: count`. Sorted, one per line.
pub fn dump_types(checked: &Checked) -> String {
    let mut lines = Vec::new();
    for p in &checked.probes {
        if let Some(inst) = p.instances.first() {
            let mut vars: Vec<_> = inst.types.vars.iter().collect();
            vars.sort_by(|a, b| a.0.cmp(b.0));
            for (name, t) in vars {
                lines.push(format!("probe {}: ${name}: {t}", p.index));
            }
        }
    }
    for m in checked.maps.values() {
        match &m.key {
            Some(k) => lines.push(format!("@{}[{k}]: {}", m.name, m.value)),
            None => lines.push(format!("@{}: {}", m.name, m.value)),
        }
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotations_round_trip() {
        let text = "BEGIN { $x = y; }\n             ^ error: sonde::sema::unknown_ident\n";
        let (src, exp) = split_annotations(text);
        assert_eq!(src, "BEGIN { $x = y; }\n");
        assert_eq!(exp[0].span, Span::new(13, 14));
        assert_eq!(exp[0].code, "sonde::sema::unknown_ident");
        assert_eq!(annotate(&src, &exp), text);
    }
}

/// A tiny deterministic xorshift generator for the bounded fuzz tests (seeded, so a failure
/// reproduces; no extra crates).
#[derive(Clone, Debug)]
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}
