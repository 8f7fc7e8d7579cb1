//! `software:event[:count]` (alias `s`): kernel software perf events (page faults, context
//! switches, ...) sampled every `count` occurrences on every CPU.

use super::perf_table::{PerfEventEntry, config_and_period, resolve_event};
use crate::catalog::ProviderBackend;
use crate::context::ContextLayout;
use crate::program::{AttachSpec, PerfEventKind, PerfSample};
use sonde_lang::ast::AttachPoint;
use sonde_lang::catalog::{Provider, ResolvedAttach};
use sonde_lang::diag::Diagnostic;
use sonde_lang::kernel::KernelInfo;

const USAGE: &str = "software:event[:count]";

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

/// The software events (`PERF_COUNT_SW_*`) with bpftrace's default periods.
pub static EVENTS: &[PerfEventEntry] = &[
    e("cpu-clock", "cpu", 0, 1_000_000),
    e("task-clock", "", 1, 1_000_000),
    e("page-faults", "faults", 2, 100),
    e("context-switches", "cs", 3, 1_000),
    e("cpu-migrations", "", 4, 1),
    e("minor-faults", "", 5, 100),
    e("major-faults", "", 6, 1),
    e("alignment-faults", "", 7, 1),
    e("emulation-faults", "", 8, 1),
    e("dummy", "", 9, 1),
    e("bpf-output", "", 10, 1),
];

/// The software provider.
pub struct Software;

impl Provider for Software {
    fn names(&self) -> &'static [&'static str] {
        &["software", "s"]
    }
    fn usage(&self) -> &'static str {
        USAGE
    }
    fn doc(&self) -> &'static str {
        "A kernel software event (page-faults, context-switches, ...) sampled every count events"
    }
    fn resolve(
        &self,
        ap: &AttachPoint,
        _: &dyn KernelInfo,
    ) -> Result<Vec<ResolvedAttach>, Diagnostic> {
        resolve_event(ap, "software", EVENTS, USAGE)
    }
}

impl ProviderBackend for Software {
    fn attach_spec(&self, attach: &ResolvedAttach) -> AttachSpec {
        let (config, period) = config_and_period(EVENTS, attach);
        AttachSpec::PerfEvent {
            event: PerfEventKind::Software(config),
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
    use crate::catalog::providers::common::{BAD_ATTACH_POINT, UNKNOWN_EVENT};
    use crate::catalog::providers::fixture::ap;
    use sonde_lang::kernel::NoKernel;

    fn spec(raw: &str) -> AttachSpec {
        let r = Software.resolve(&ap(raw), &NoKernel).unwrap();
        Software.attach_spec(&r[0])
    }

    #[test]
    fn events_aliases_and_default_periods() {
        let pf = |config, period| AttachSpec::PerfEvent {
            event: PerfEventKind::Software(config),
            sample: PerfSample::Period(period),
            all_cpus: true,
        };
        assert_eq!(spec("software:faults"), pf(2, 100));
        assert_eq!(spec("s:page-faults:10"), pf(2, 10));
        assert_eq!(spec("software:cs"), pf(3, 1000));
        assert_eq!(spec("software:cpu"), pf(0, 1_000_000));
        assert_eq!(spec("software:bpf-output"), pf(10, 1));
        let r = Software.resolve(&ap("s:cs:5"), &NoKernel).unwrap();
        assert_eq!(r[0].name, "software:cs:5");
    }

    #[test]
    fn unknown_event_and_bad_count() {
        let e = Software
            .resolve(&ap("software:fautls"), &NoKernel)
            .unwrap_err();
        assert_eq!(e.code, UNKNOWN_EVENT);
        assert_eq!(e.help.as_deref(), Some("did you mean `faults`?"));
        assert_eq!(
            Software
                .resolve(&ap("software:faults:0"), &NoKernel)
                .unwrap_err()
                .code,
            BAD_ATTACH_POINT
        );
    }
}
