//! `usdt:binary:[provider:]name` (alias `U`): user statically defined tracepoints.
//!
//! The attach point is parsed and validated, but finding the probe's address needs the
//! binary's `.note.stapsdt` section, which [`KernelInfo`] does not read yet; resolving
//! therefore ends with `sonde::probe::usdt_unsupported`, saying so plainly.

use super::common::{UNKNOWN_BINARY, USDT_UNSUPPORTED, expect_parts, part_span};
use crate::catalog::{ContextLayout, ProviderBackend};
use crate::program::AttachSpec;
use sonde_lang::ast::AttachPoint;
use sonde_lang::catalog::{Provider, ResolvedAttach};
use sonde_lang::diag::Diagnostic;
use sonde_lang::kernel::KernelInfo;

const USAGE: &str = "usdt:binary:[provider:]name";

/// The USDT provider.
pub struct Usdt;

impl Provider for Usdt {
    fn names(&self) -> &'static [&'static str] {
        &["usdt", "U"]
    }
    fn usage(&self) -> &'static str {
        USAGE
    }
    fn doc(&self) -> &'static str {
        "A user statically defined tracepoint (not supported yet)"
    }
    fn resolve(
        &self,
        ap: &AttachPoint,
        kernel: &dyn KernelInfo,
    ) -> Result<Vec<ResolvedAttach>, Diagnostic> {
        expect_parts(ap, 2, 3, USAGE)?;
        let target = &ap.parts[0];
        if kernel.resolve_binary(target).is_none() {
            return Err(Diagnostic::error(
                UNKNOWN_BINARY,
                part_span(ap, 0),
                format!("cannot find binary `{target}`"),
            )
            .with_label("no such binary or library")
            .with_help("give a path to an ELF file or a library name such as `libc`"));
        }
        Err(Diagnostic::error(
            USDT_UNSUPPORTED,
            ap.span,
            "USDT probes are not supported yet",
        )
        .with_label("sonde cannot locate USDT probes in binaries yet")
        .with_help("attach a uprobe to the function that contains the USDT probe instead"))
    }
}

impl ProviderBackend for Usdt {
    fn attach_spec(&self, attach: &ResolvedAttach) -> AttachSpec {
        // Never reached: `resolve` yields no attach points. The closest mechanism is a uprobe.
        AttachSpec::Uprobe {
            path: attach.parts.first().cloned().unwrap_or_default(),
            symbol: None,
            offset: 0,
            ret: false,
        }
    }
    fn section(&self, _: &ResolvedAttach) -> &'static str {
        "uprobe"
    }
    fn context_layout(&self) -> ContextLayout {
        ContextLayout::PtRegs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::providers::common::BAD_ATTACH_POINT;
    use crate::catalog::providers::fixture::{Fixture, ap};

    #[test]
    fn usdt_is_reported_as_unsupported() {
        let k = Fixture { kprobes: false };
        let e = Usdt
            .resolve(&ap("usdt:/bin/bash:prov:probe"), &k)
            .unwrap_err();
        assert_eq!(e.code, USDT_UNSUPPORTED);
        assert_eq!(
            Usdt.resolve(&ap("U:/nope:probe"), &k).unwrap_err().code,
            UNKNOWN_BINARY
        );
        assert_eq!(
            Usdt.resolve(&ap("usdt:/bin/bash"), &k).unwrap_err().code,
            BAD_ATTACH_POINT
        );
    }
}
