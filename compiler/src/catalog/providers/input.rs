//! `input` and `input:PATH`: awk's job. The probe fires once per line of standard input (or of
//! the file `PATH`), in the userspace engine; `line`, `field(N)`, `nf` and `nr` read the line.
//! Several `input:PATH` probes read several files, one after the other in declaration order;
//! probes on the same source all see each line.

use super::common::{bad_attach_point, expect_parts};
use crate::catalog::ProviderBackend;
use crate::context::ContextLayout;
use crate::program::AttachSpec;
use sonde_lang::ast::AttachPoint;
use sonde_lang::catalog::{ProbeContext, Provider, ResolvedAttach};
use sonde_lang::diag::Diagnostic;
use sonde_lang::kernel::KernelInfo;

const USAGE: &str = "input | input:PATH";

/// The input provider.
pub struct Input;

impl Provider for Input {
    fn names(&self) -> &'static [&'static str] {
        &["input"]
    }
    fn usage(&self) -> &'static str {
        USAGE
    }
    fn doc(&self) -> &'static str {
        "Fires once per line of standard input or of the file PATH (userspace engine, no root; sonde extension)"
    }
    fn resolve(
        &self,
        ap: &AttachPoint,
        _: &dyn KernelInfo,
    ) -> Result<Vec<ResolvedAttach>, Diagnostic> {
        expect_parts(ap, 0, 1, USAGE)?;
        // A path may itself contain `:`; the parser split it, so join the parts back.
        let path = ap.raw.strip_prefix("input:").map(str::to_string);
        if path.as_deref() == Some("") {
            return Err(bad_attach_point(ap.span, "empty input path", USAGE));
        }
        Ok(vec![ResolvedAttach {
            name: match &path {
                Some(p) => format!("input:{p}"),
                None => "input".into(),
            },
            parts: path.into_iter().collect(),
            span: ap.span,
            ctx: ProbeContext::bare("input"),
        }])
    }
}

impl ProviderBackend for Input {
    fn attach_spec(&self, attach: &ResolvedAttach) -> AttachSpec {
        AttachSpec::Input {
            path: attach.parts.first().cloned(),
        }
    }
    fn context_layout(&self, _: &ResolvedAttach) -> ContextLayout {
        ContextLayout::None
    }
    fn userspace(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::providers::fixture::ap;
    use sonde_lang::kernel::NoKernel;

    #[test]
    fn stdin_and_paths() {
        let r = Input.resolve(&ap("input"), &NoKernel).unwrap();
        assert_eq!(r[0].name, "input");
        assert_eq!(Input.attach_spec(&r[0]), AttachSpec::Input { path: None });
        let r = Input
            .resolve(&ap("input:/var/log/x.log"), &NoKernel)
            .unwrap();
        assert_eq!(r[0].name, "input:/var/log/x.log");
        assert_eq!(
            Input.attach_spec(&r[0]),
            AttachSpec::Input {
                path: Some("/var/log/x.log".into())
            }
        );
        assert!(Input.userspace());
    }
}
