//! `BEGIN` and `END`: probes that run once, before every other probe is attached and after
//! every other probe is detached. The lowercase spellings (`begin`, `end`) of newer bpftrace
//! are aliases; the canonical names stay uppercase, as the shipped tools write them.

use super::common::bad_attach_point;
use crate::catalog::ProviderBackend;
use crate::context::ContextLayout;
use crate::program::AttachSpec;
use sonde_lang::ast::AttachPoint;
use sonde_lang::catalog::{ProbeContext, Provider, ResolvedAttach};
use sonde_lang::diag::Diagnostic;
use sonde_lang::kernel::KernelInfo;

/// Shared resolution: no parts allowed, the probe name is the canonical provider name.
fn resolve_once(
    ap: &AttachPoint,
    canonical: &'static str,
) -> Result<Vec<ResolvedAttach>, Diagnostic> {
    if !ap.parts.is_empty() {
        return Err(bad_attach_point(
            ap.span,
            format!("`{}` takes no `:`-separated parts", ap.provider),
            canonical,
        ));
    }
    Ok(vec![ResolvedAttach {
        name: canonical.to_string(),
        parts: Vec::new(),
        span: ap.span,
        ctx: ProbeContext::bare(canonical),
    }])
}

/// `BEGIN { ... }`: runs once at start-up.
pub struct Begin;

impl Provider for Begin {
    fn names(&self) -> &'static [&'static str] {
        &["BEGIN", "begin"]
    }
    fn usage(&self) -> &'static str {
        "BEGIN"
    }
    fn doc(&self) -> &'static str {
        "Runs once when the program starts, before the other probes are attached (as in bpftrace 0.26: its output comes before any event's)"
    }
    fn resolve(
        &self,
        ap: &AttachPoint,
        _: &dyn KernelInfo,
    ) -> Result<Vec<ResolvedAttach>, Diagnostic> {
        resolve_once(ap, "BEGIN")
    }
}

impl ProviderBackend for Begin {
    fn attach_spec(&self, _: &ResolvedAttach) -> AttachSpec {
        AttachSpec::Begin
    }
    fn context_layout(&self, _: &ResolvedAttach) -> ContextLayout {
        ContextLayout::None
    }
    fn either_engine(&self) -> bool {
        true
    }
}

/// `END { ... }`: runs once at exit.
pub struct End;

impl Provider for End {
    fn names(&self) -> &'static [&'static str] {
        &["END", "end"]
    }
    fn usage(&self) -> &'static str {
        "END"
    }
    fn doc(&self) -> &'static str {
        "Runs once when the program exits, after every other probe is detached"
    }
    fn resolve(
        &self,
        ap: &AttachPoint,
        _: &dyn KernelInfo,
    ) -> Result<Vec<ResolvedAttach>, Diagnostic> {
        resolve_once(ap, "END")
    }
}

impl ProviderBackend for End {
    fn attach_spec(&self, _: &ResolvedAttach) -> AttachSpec {
        AttachSpec::End
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
    use sonde_lang::kernel::NoKernel;

    #[test]
    fn lowercase_begin_resolves_to_canonical_name() {
        let r = Begin.resolve(&ap("begin"), &NoKernel).unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].name, "BEGIN");
        assert_eq!(r[0].ctx, ProbeContext::bare("BEGIN"));
        assert_eq!(Begin.attach_spec(&r[0]), AttachSpec::Begin);
        let e = End.resolve(&ap("END"), &NoKernel).unwrap();
        assert_eq!(e[0].name, "END");
        assert_eq!(End.attach_spec(&e[0]), AttachSpec::End);
        assert_eq!(End.attach_spec(&e[0]).section(), "raw_tp");
    }

    #[test]
    fn parts_are_rejected() {
        let e = End.resolve(&ap("END:x"), &NoKernel).unwrap_err();
        assert_eq!(e.code, BAD_ATTACH_POINT);
        assert_eq!(e.help.as_deref(), Some("expected `END`"));
    }
}
