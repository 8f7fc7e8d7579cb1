//! `hardware:event[:count]` (alias `h`): CPU performance counters (cycles, cache misses, ...)
//! sampled every `count` events on every CPU. Needs a CPU PMU, which virtual machines often
//! lack; the attach step reports that.

use super::perf_table::{PerfEventEntry, config_and_period, resolve_event};
use crate::catalog::ProviderBackend;
use crate::context::ContextLayout;
use crate::program::{AttachSpec, PerfEventKind, PerfSample};
use sonde_lang::ast::AttachPoint;
use sonde_lang::catalog::{Provider, ResolvedAttach};
use sonde_lang::diag::Diagnostic;
use sonde_lang::kernel::KernelInfo;

const USAGE: &str = "hardware:event[:count]";

const fn e(
    name: &'static str,
    alias: &'static str,
    config: u64,
    default_period: u64,
) -> PerfEventEntry {
    PerfEventEntry {
        name,
        alias,
        config,
        default_period,
    }
}

/// The hardware events (`PERF_COUNT_HW_*`) with bpftrace's default periods.
pub static EVENTS: &[PerfEventEntry] = &[
    e("cpu-cycles", "cycles", 0, 1_000_000),
    e("instructions", "", 1, 1_000_000),
    e("cache-references", "", 2, 1_000_000),
    e("cache-misses", "", 3, 1_000_000),
    e("branch-instructions", "branches", 4, 100_000),
    e("branch-misses", "", 5, 100_000),
    e("bus-cycles", "", 6, 100_000),
    e("frontend-stalls", "", 7, 1_000_000),
    e("backend-stalls", "", 8, 1_000_000),
    e("ref-cycles", "", 9, 1_000_000),
];

/// The hardware provider.
pub struct Hardware;

impl Provider for Hardware {
    fn names(&self) -> &'static [&'static str] {
        &["hardware", "h"]
    }
    fn usage(&self) -> &'static str {
        USAGE
    }
    fn doc(&self) -> &'static str {
        "A CPU hardware counter (cycles, instructions, cache-misses, ...) sampled every count events"
    }
    fn resolve(
        &self,
        ap: &AttachPoint,
        _: &dyn KernelInfo,
    ) -> Result<Vec<ResolvedAttach>, Diagnostic> {
        resolve_event(ap, "hardware", EVENTS, USAGE)
    }
}

impl ProviderBackend for Hardware {
    fn attach_spec(&self, attach: &ResolvedAttach) -> AttachSpec {
        let (config, period) = config_and_period(EVENTS, attach);
        AttachSpec::PerfEvent {
            event: PerfEventKind::Hardware(config),
            sample: PerfSample::Period(period),
            all_cpus: true,
        }
    }
    fn context_layout(&self, _: &ResolvedAttach) -> ContextLayout {
        ContextLayout::None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::providers::common::UNKNOWN_EVENT;
    use crate::catalog::providers::fixture::ap;
    use sonde_lang::kernel::NoKernel;

    #[test]
    fn hardware_events() {
        let r = Hardware.resolve(&ap("h:cycles"), &NoKernel).unwrap();
        assert_eq!(
            Hardware.attach_spec(&r[0]),
            AttachSpec::PerfEvent {
                event: PerfEventKind::Hardware(0),
                sample: PerfSample::Period(1_000_000),
                all_cpus: true
            }
        );
        let r = Hardware
            .resolve(&ap("hardware:branches:50"), &NoKernel)
            .unwrap();
        assert_eq!(
            Hardware.attach_spec(&r[0]),
            AttachSpec::PerfEvent {
                event: PerfEventKind::Hardware(4),
                sample: PerfSample::Period(50),
                all_cpus: true
            }
        );
        assert_eq!(
            Hardware
                .resolve(&ap("hardware:cycels"), &NoKernel)
                .unwrap_err()
                .code,
            UNKNOWN_EVENT
        );
    }
}
