//! `self:signal:SIGUSR1`: runs when the sonde process itself receives the signal, as
//! bpftrace's `self` probes do. Nothing is attached in the kernel: the program is a raw
//! tracepoint program that the runtime runs with `BPF_PROG_TEST_RUN` in its own task each
//! time the signal arrives (so `pid` and `comm` describe sonde). bpftrace 0.26 accepts one
//! signal, `SIGUSR1`.

use super::common::{bad_attach_point, expect_parts, has_wildcard, part_span, wildcard_match};
use crate::catalog::ProviderBackend;
use crate::context::ContextLayout;
use crate::program::AttachSpec;
use sonde_lang::ast::AttachPoint;
use sonde_lang::catalog::{ProbeContext, Provider, ResolvedAttach};
use sonde_lang::diag::Diagnostic;
use sonde_lang::kernel::KernelInfo;

const USAGE: &str = "self:signal:SIGUSR1";

/// The signals a `self:signal` probe accepts, with their numbers (bpftrace 0.26's list).
pub const SIGNALS: &[(&str, i32)] = &[("SIGUSR1", 10)];

/// The `self` provider.
pub struct SelfProbe;

impl Provider for SelfProbe {
    fn names(&self) -> &'static [&'static str] {
        &["self"]
    }
    fn usage(&self) -> &'static str {
        USAGE
    }
    fn doc(&self) -> &'static str {
        "Runs each time the sonde process itself receives the signal (SIGUSR1)"
    }
    fn resolve(
        &self,
        ap: &AttachPoint,
        _: &dyn KernelInfo,
    ) -> Result<Vec<ResolvedAttach>, Diagnostic> {
        expect_parts(ap, 2, 2, USAGE)?;
        if ap.parts[0] != "signal" {
            return Err(bad_attach_point(
                part_span(ap, 0),
                format!("{} is not a supported trigger", ap.parts[0]),
                USAGE,
            ));
        }
        let pattern = &ap.parts[1];
        let matched: Vec<&str> = SIGNALS
            .iter()
            .map(|(name, _)| *name)
            .filter(|name| {
                if has_wildcard(pattern) {
                    wildcard_match(pattern, name)
                } else {
                    name == pattern
                }
            })
            .collect();
        if matched.is_empty() {
            return Err(bad_attach_point(
                part_span(ap, 1),
                format!("{pattern} is not a supported signal"),
                USAGE,
            ));
        }
        Ok(matched
            .into_iter()
            .map(|sig| {
                let parts = vec!["signal".to_string(), sig.to_string()];
                super::common::resolved(ap, "self", parts, ProbeContext::bare("self"))
            })
            .collect())
    }
}

impl ProviderBackend for SelfProbe {
    fn attach_spec(&self, attach: &ResolvedAttach) -> AttachSpec {
        let name = attach.parts.get(1).map_or("", String::as_str);
        let signal = SIGNALS
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(SIGNALS[0].1, |(_, nr)| *nr);
        AttachSpec::Signal { signal }
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
    fn sigusr1_runs_in_sonde() {
        let r = SelfProbe
            .resolve(&ap("self:signal:SIGUSR1"), &NoKernel)
            .unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].name, "self:signal:SIGUSR1");
        assert_eq!(r[0].ctx, ProbeContext::bare("self"));
        let spec = SelfProbe.attach_spec(&r[0]);
        assert_eq!(spec, AttachSpec::Signal { signal: 10 });
        assert_eq!(spec.section(), "raw_tp");
        let w = SelfProbe.resolve(&ap("self:signal:*"), &NoKernel).unwrap();
        assert_eq!(w[0].name, "self:signal:SIGUSR1");
    }

    #[test]
    fn other_triggers_and_signals_are_refused() {
        let e = SelfProbe
            .resolve(&ap("self:signal:SIGUSR2"), &NoKernel)
            .unwrap_err();
        assert_eq!(e.code, BAD_ATTACH_POINT);
        assert_eq!(e.message, "SIGUSR2 is not a supported signal");
        let e = SelfProbe
            .resolve(&ap("self:timer:SIGUSR1"), &NoKernel)
            .unwrap_err();
        assert_eq!(e.message, "timer is not a supported trigger");
        let e = SelfProbe
            .resolve(&ap("self:signal"), &NoKernel)
            .unwrap_err();
        assert_eq!(e.code, BAD_ATTACH_POINT);
    }
}
