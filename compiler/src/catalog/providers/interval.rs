//! `interval:{s,ms,us,hz}:N`, `interval:N` (hertz) and `interval:1s` (a duration) (alias `i`):
//! a timer that fires on one CPU only, for periodic output.

use super::common::resolved;
use super::profile::sample_of;
use super::timer::parse_timer;
use crate::catalog::ProviderBackend;
use crate::context::ContextLayout;
use crate::program::{AttachSpec, PerfEventKind};
use sonde_lang::ast::AttachPoint;
use sonde_lang::catalog::{ProbeContext, Provider, ResolvedAttach};
use sonde_lang::diag::Diagnostic;
use sonde_lang::kernel::KernelInfo;

const USAGE: &str = "interval:{s,ms,us,hz}:N | interval:N | interval:<duration> (e.g. 1s, 100ms)";

/// The interval provider.
pub struct Interval;

impl Provider for Interval {
    fn names(&self) -> &'static [&'static str] {
        &["interval", "i"]
    }
    fn usage(&self) -> &'static str {
        USAGE
    }
    fn doc(&self) -> &'static str {
        "Fires on one CPU at a fixed period or rate, for periodic work such as printing"
    }
    fn resolve(
        &self,
        ap: &AttachPoint,
        _: &dyn KernelInfo,
    ) -> Result<Vec<ResolvedAttach>, Diagnostic> {
        parse_timer(ap, USAGE)?;
        Ok(vec![resolved(
            ap,
            "interval",
            ap.parts.clone(),
            ProbeContext::bare("interval"),
        )])
    }
}

impl ProviderBackend for Interval {
    fn attach_spec(&self, attach: &ResolvedAttach) -> AttachSpec {
        AttachSpec::PerfEvent {
            event: PerfEventKind::Software(0),
            sample: sample_of(attach),
            all_cpus: false,
        }
    }
    fn context_layout(&self, _: &ResolvedAttach) -> ContextLayout {
        ContextLayout::None
    }
    fn either_engine(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::providers::common::BAD_ATTACH_POINT;
    use crate::catalog::providers::fixture::ap;
    use crate::program::PerfSample;
    use sonde_lang::kernel::NoKernel;

    #[test]
    fn interval_fires_on_one_cpu() {
        let r = Interval.resolve(&ap("i:s:1"), &NoKernel).unwrap();
        assert_eq!(r[0].name, "interval:s:1");
        assert_eq!(
            Interval.attach_spec(&r[0]),
            AttachSpec::PerfEvent {
                event: PerfEventKind::Software(0),
                sample: PerfSample::Period(1_000_000_000),
                all_cpus: false
            }
        );
        let d = Interval.resolve(&ap("interval:100ms"), &NoKernel).unwrap();
        assert_eq!(d[0].name, "interval:100ms");
        assert!(matches!(
            Interval.attach_spec(&d[0]),
            AttachSpec::PerfEvent {
                sample: PerfSample::Period(100_000_000),
                ..
            }
        ));
        let h = Interval.resolve(&ap("interval:hz:2"), &NoKernel).unwrap();
        assert!(matches!(
            Interval.attach_spec(&h[0]),
            AttachSpec::PerfEvent {
                sample: PerfSample::Frequency(2),
                ..
            }
        ));
    }

    #[test]
    fn bad_shapes() {
        assert_eq!(
            Interval
                .resolve(&ap("interval"), &NoKernel)
                .unwrap_err()
                .code,
            BAD_ATTACH_POINT
        );
        assert_eq!(
            Interval
                .resolve(&ap("interval:s:1:2"), &NoKernel)
                .unwrap_err()
                .code,
            BAD_ATTACH_POINT
        );
        assert_eq!(
            Interval
                .resolve(&ap("interval:s:-1"), &NoKernel)
                .unwrap_err()
                .code,
            BAD_ATTACH_POINT
        );
    }
}
