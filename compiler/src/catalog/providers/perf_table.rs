//! The event tables shared by `software` and `hardware`: names, aliases, perf configs and the
//! default sampling period bpftrace uses when the count is omitted.

use super::common::{
    UNKNOWN_EVENT, expect_parts, part_span, positive_part, resolved, unknown_with_suggestion,
};
use sonde_lang::ast::AttachPoint;
use sonde_lang::catalog::{ProbeContext, ResolvedAttach};
use sonde_lang::diag::Diagnostic;

/// One perf event: canonical name, alias (or `""`), `PERF_COUNT_*` config, default period.
#[derive(Clone, Copy, Debug)]
pub struct PerfEventEntry {
    /// Canonical name (`page-faults`).
    pub name: &'static str,
    /// Short alias (`faults`), or empty.
    pub alias: &'static str,
    /// The `PERF_COUNT_SW_*` / `PERF_COUNT_HW_*` value.
    pub config: u64,
    /// Period used when the attach point gives no count.
    pub default_period: u64,
}

/// Finds `name` (canonical or alias) in `table`.
pub fn lookup(table: &'static [PerfEventEntry], name: &str) -> Option<&'static PerfEventEntry> {
    table
        .iter()
        .find(|e| e.name == name || (!e.alias.is_empty() && e.alias == name))
}

/// Resolves `provider:event[:count]` against `table`.
pub fn resolve_event(
    ap: &AttachPoint,
    provider: &'static str,
    table: &'static [PerfEventEntry],
    usage: &str,
) -> Result<Vec<ResolvedAttach>, Diagnostic> {
    expect_parts(ap, 1, 2, usage)?;
    let name = &ap.parts[0];
    if lookup(table, name).is_none() {
        let names = table
            .iter()
            .flat_map(|e| [e.name, e.alias])
            .filter(|n| !n.is_empty());
        return Err(unknown_with_suggestion(
            UNKNOWN_EVENT,
            part_span(ap, 0),
            &format!("{provider} event"),
            name,
            names,
        )
        .with_label(format!("not a {provider} event")));
    }
    if ap.parts.len() == 2 {
        positive_part(ap, 1, "the count", usage)?;
    }
    Ok(vec![resolved(
        ap,
        provider,
        ap.parts.clone(),
        ProbeContext::bare(provider),
    )])
}

/// The `(config, period)` of a resolved attach point (validated by [`resolve_event`]).
pub fn config_and_period(table: &'static [PerfEventEntry], attach: &ResolvedAttach) -> (u64, u64) {
    let entry = attach.parts.first().and_then(|n| lookup(table, n));
    let config = entry.map_or(0, |e| e.config);
    let period = attach
        .parts
        .get(1)
        .and_then(|c| super::common::parse_u64(c))
        .or(entry.map(|e| e.default_period))
        .unwrap_or(1);
    (config, period)
}
