//! `profile:hz:N`, `profile:{s,ms,us}:N`, `profile:N` (hertz) (alias `p`): sampling on every
//! CPU with the software `cpu-clock` perf event.

use super::common::resolved;
use super::timer::parse_timer;
use crate::catalog::ProviderBackend;
use crate::context::ContextLayout;
use crate::program::{AttachSpec, PerfEventKind, PerfSample};
use sonde_lang::ast::AttachPoint;
use sonde_lang::catalog::{ProbeContext, Provider, ResolvedAttach};
use sonde_lang::diag::Diagnostic;
use sonde_lang::kernel::KernelInfo;

const USAGE: &str = "profile:hz:N | profile:{s,ms,us}:N | profile:N";

/// `PERF_COUNT_SW_CPU_CLOCK`.
const CPU_CLOCK: u64 = 0;

/// The profile provider.
pub struct Profile;

impl Provider for Profile {
    fn names(&self) -> &'static [&'static str] {
        &["profile", "p"]
    }
    fn usage(&self) -> &'static str {
        USAGE
    }
    fn doc(&self) -> &'static str {
        "Fires on every CPU at a fixed rate (hz) or period, for sampling"
    }
    fn resolve(
        &self,
        ap: &AttachPoint,
        _: &dyn KernelInfo,
    ) -> Result<Vec<ResolvedAttach>, Diagnostic> {
        parse_timer(ap, USAGE)?;
        Ok(vec![resolved(
            ap,
            "profile",
            ap.parts.clone(),
            ProbeContext::bare("profile"),
        )])
    }
}

/// The sampling rule of a resolved timer attach point (validated by `resolve`).
pub(super) fn sample_of(attach: &ResolvedAttach) -> PerfSample {
    let ap = AttachPoint {
        raw: attach.name.clone(),
        provider: attach.ctx.provider.to_string(),
        parts: attach.parts.clone(),
        span: attach.span,
    };
    parse_timer(&ap, "").unwrap_or(PerfSample::Frequency(1))
}

impl ProviderBackend for Profile {
    fn attach_spec(&self, attach: &ResolvedAttach) -> AttachSpec {
        AttachSpec::PerfEvent {
            event: PerfEventKind::Software(CPU_CLOCK),
            sample: sample_of(attach),
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
    use crate::catalog::providers::common::BAD_ATTACH_POINT;
    use crate::catalog::providers::fixture::ap;
    use sonde_lang::kernel::NoKernel;

    #[test]
    fn profile_samples_every_cpu() {
        let r = Profile.resolve(&ap("p:hz:99"), &NoKernel).unwrap();
        assert_eq!(r[0].name, "profile:hz:99");
        assert_eq!(
            Profile.attach_spec(&r[0]),
            AttachSpec::PerfEvent {
                event: PerfEventKind::Software(0),
                sample: PerfSample::Frequency(99),
                all_cpus: true
            }
        );
        let r = Profile.resolve(&ap("profile:ms:10"), &NoKernel).unwrap();
        assert_eq!(
            Profile.attach_spec(&r[0]),
            AttachSpec::PerfEvent {
                event: PerfEventKind::Software(0),
                sample: PerfSample::Period(10_000_000),
                all_cpus: true
            }
        );
        assert_eq!(Profile.attach_spec(&r[0]).section(), "perf_event");
    }

    #[test]
    fn zero_frequency_is_rejected() {
        let e = Profile.resolve(&ap("profile:hz:0"), &NoKernel).unwrap_err();
        assert_eq!(e.code, BAD_ATTACH_POINT);
        assert_eq!(
            e.help.as_deref(),
            Some(format!("expected `{USAGE}`").as_str())
        );
    }
}
