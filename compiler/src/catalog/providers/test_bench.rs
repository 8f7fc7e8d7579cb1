//! `test:NAME` and `bench:NAME`: probes that `sonde --test` runs once each, as tests, and
//! `sonde --bench` runs repeatedly, as micro benchmarks (bpftrace 0.26's `test` and `bench`
//! probes); any other run ignores them. Nothing is attached: each is an XDP program run
//! with `BPF_PROG_TEST_RUN`, as bpftrace does (of the program types whose test runs repeat
//! and time themselves, XDP needs nothing of its input), so a body can use only the helpers
//! XDP programs may call: maps, printf and the other output functions, time, `cpu`.

use super::common::{bad_attach_point, expect_parts};
use crate::catalog::ProviderBackend;
use crate::context::ContextLayout;
use crate::program::AttachSpec;
use sonde_lang::ast::AttachPoint;
use sonde_lang::catalog::{ProbeContext, Provider, ResolvedAttach};
use sonde_lang::diag::Diagnostic;
use sonde_lang::kernel::KernelInfo;

/// Shared resolution: one part, the name (no wildcard: it names the probe).
fn resolve_named(
    ap: &AttachPoint,
    canonical: &'static str,
    usage: &str,
) -> Result<Vec<ResolvedAttach>, Diagnostic> {
    expect_parts(ap, 1, 1, usage)?;
    let name = &ap.parts[0];
    if name.contains(['*', '?']) {
        return Err(bad_attach_point(
            ap.span,
            format!("a {canonical} probe's name cannot contain a wildcard"),
            usage,
        ));
    }
    Ok(vec![super::common::resolved(
        ap,
        canonical,
        vec![name.clone()],
        ProbeContext::bare(canonical),
    )])
}

/// The `test` provider (`bench: false`) or the `bench` provider (`bench: true`).
pub struct SelfTest {
    bench: bool,
}

/// `test:NAME`.
pub static TEST: SelfTest = SelfTest { bench: false };
/// `bench:NAME`.
pub static BENCH: SelfTest = SelfTest { bench: true };

impl Provider for SelfTest {
    fn names(&self) -> &'static [&'static str] {
        if self.bench { &["bench"] } else { &["test"] }
    }
    fn usage(&self) -> &'static str {
        if self.bench {
            "bench:NAME"
        } else {
            "test:NAME"
        }
    }
    fn doc(&self) -> &'static str {
        if self.bench {
            "A micro benchmark, run repeatedly by `sonde --bench`, which prints its average time; one that returns non-zero is skipped"
        } else {
            "A test, run once by `sonde --test`: it fails when it returns non-zero (`return 1;`), calls exit() with a non-zero code or errorf()"
        }
    }
    fn resolve(
        &self,
        ap: &AttachPoint,
        _: &dyn KernelInfo,
    ) -> Result<Vec<ResolvedAttach>, Diagnostic> {
        resolve_named(ap, self.names()[0], self.usage())
    }
}

impl ProviderBackend for SelfTest {
    fn attach_spec(&self, attach: &ResolvedAttach) -> AttachSpec {
        AttachSpec::SelfTest {
            name: attach.parts.first().cloned().unwrap_or_default(),
            bench: self.bench,
        }
    }
    fn context_layout(&self, _: &ResolvedAttach) -> ContextLayout {
        ContextLayout::None
    }
}

/// The diagnostics for test (bench) names used by more than one probe: bpftrace refuses
/// `"x" was used as the name for more than one TEST probe`. `targets` are the script's
/// attach specs with their spans, in order.
pub fn duplicate_names<'a>(
    targets: impl IntoIterator<Item = (&'a AttachSpec, sonde_lang::span::Span)>,
) -> Vec<Diagnostic> {
    let mut seen: Vec<(&str, bool, sonde_lang::span::Span)> = Vec::new();
    let mut out = Vec::new();
    for (spec, span) in targets {
        let AttachSpec::SelfTest { name, bench } = spec else {
            continue;
        };
        match seen.iter().find(|(n, b, _)| n == name && b == bench) {
            Some((_, _, first)) => {
                let kind = if *bench { "BENCH" } else { "TEST" };
                out.push(
                    Diagnostic::error(
                        super::common::BAD_ATTACH_POINT,
                        span,
                        format!("\"{name}\" was used as the name for more than one {kind} probe"),
                    )
                    .with_label("second use")
                    .with_help(format!(
                        "the other instance is at offset {}; give each a name of its own",
                        first.start
                    )),
                );
            }
            None => seen.push((name, *bench, span)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::providers::common::BAD_ATTACH_POINT;
    use crate::catalog::providers::fixture::ap;
    use sonde_lang::kernel::NoKernel;
    use sonde_lang::span::Span;

    #[test]
    fn named_and_run_as_xdp() {
        let r = TEST.resolve(&ap("test:okay"), &NoKernel).unwrap();
        assert_eq!(r[0].name, "test:okay");
        let spec = TEST.attach_spec(&r[0]);
        assert_eq!(
            spec,
            AttachSpec::SelfTest {
                name: "okay".into(),
                bench: false
            }
        );
        assert_eq!(spec.section(), "xdp");
        let b = BENCH.resolve(&ap("bench:count"), &NoKernel).unwrap();
        assert_eq!(
            BENCH.attach_spec(&b[0]),
            AttachSpec::SelfTest {
                name: "count".into(),
                bench: true
            }
        );
    }

    #[test]
    fn a_name_is_required_and_unique() {
        let e = TEST.resolve(&ap("test"), &NoKernel).unwrap_err();
        assert_eq!(e.code, BAD_ATTACH_POINT);
        let e = BENCH.resolve(&ap("bench:a:b"), &NoKernel).unwrap_err();
        assert_eq!(e.code, BAD_ATTACH_POINT);
        let e = TEST.resolve(&ap("test:*"), &NoKernel).unwrap_err();
        assert!(e.message.contains("wildcard"));
        let t = |name: &str, bench| AttachSpec::SelfTest {
            name: name.into(),
            bench,
        };
        let specs = [t("a", false), t("a", true), t("b", false), t("a", false)];
        let d = duplicate_names(
            specs
                .iter()
                .enumerate()
                .map(|(i, s)| (s, Span::new(i * 10, i * 10 + 5))),
        );
        assert_eq!(d.len(), 1);
        assert_eq!(
            d[0].message,
            "\"a\" was used as the name for more than one TEST probe"
        );
        assert_eq!(d[0].span, Span::new(30, 35));
    }
}
