//! `fentry[:module]:function` (aliases `f`, `kfunc`) and `fexit[:module]:function` (aliases
//! `fr`, `kretfunc`): kernel function entry and exit through BPF trampolines.
//!
//! The program context is the array of the function's arguments (u64 each), read as
//! `arg0`..`arg5`; typed `args` would need BTF function prototypes, which [`KernelInfo`] does
//! not offer yet. `retval` exists in `fexit`. Like kprobes, these resolve on kernels without
//! the support and the attach step reports it.

use super::common::{
    UNKNOWN_FUNCTION, bad_attach_point, expect_parts, has_wildcard, no_match, part_span, resolved,
    unknown_with_suggestion, wildcard_match,
};
use crate::catalog::ProviderBackend;
use crate::context::ContextLayout;
use crate::program::AttachSpec;
use sonde_lang::ast::AttachPoint;
use sonde_lang::catalog::{ProbeContext, Provider, ResolvedAttach};
use sonde_lang::diag::Diagnostic;
use sonde_lang::kernel::KernelInfo;
use sonde_lang::types::Type;

/// Shared resolution of `fentry` (`ret == false`) and `fexit`.
fn resolve_fentry(
    ap: &AttachPoint,
    kernel: &dyn KernelInfo,
    ret: bool,
    usage: &str,
) -> Result<Vec<ResolvedAttach>, Diagnostic> {
    let provider = if ret { "fexit" } else { "fentry" };
    expect_parts(ap, 1, 2, usage)?;
    let last = ap.parts.len() - 1;
    let func = &ap.parts[last];
    if func.contains('+') || func.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(bad_attach_point(
            part_span(ap, last),
            format!("{provider} attaches to a function name only"),
            usage,
        ));
    }
    let make = |name: &str| {
        let mut parts: Vec<String> = ap.parts[..last].to_vec();
        parts.push(name.to_string());
        let ctx = ProbeContext {
            arg_regs: 6,
            retval: ret.then_some(Type::U64),
            func: Some(name.to_string()),
            ..ProbeContext::bare(provider)
        };
        resolved(ap, provider, parts, ctx)
    };
    let Some(known) = kernel.kernel_functions() else {
        return Ok(vec![make(func)]);
    };
    if !has_wildcard(func) {
        if known.iter().any(|k| k == func) {
            return Ok(vec![make(func)]);
        }
        return Err(unknown_with_suggestion(
            UNKNOWN_FUNCTION,
            part_span(ap, last),
            "kernel function",
            func,
            known.iter().map(String::as_str),
        ));
    }
    let mut names: Vec<&String> = known.iter().filter(|k| wildcard_match(func, k)).collect();
    names.sort();
    names.dedup();
    if names.is_empty() {
        return Err(no_match(ap.span, func, "kernel functions"));
    }
    Ok(names.into_iter().map(|n| make(n)).collect())
}

fn function_of(attach: &ResolvedAttach) -> String {
    attach.parts.last().cloned().unwrap_or_default()
}

/// `fentry:function`.
pub struct Fentry;

const FENTRY_USAGE: &str = "fentry[:module]:function";

impl Provider for Fentry {
    fn names(&self) -> &'static [&'static str] {
        &["fentry", "f", "kfunc"]
    }
    fn usage(&self) -> &'static str {
        FENTRY_USAGE
    }
    fn doc(&self) -> &'static str {
        "Entry of a kernel function through a BPF trampoline; arguments are arg0..arg5"
    }
    fn resolve(
        &self,
        ap: &AttachPoint,
        kernel: &dyn KernelInfo,
    ) -> Result<Vec<ResolvedAttach>, Diagnostic> {
        resolve_fentry(ap, kernel, false, FENTRY_USAGE)
    }
}

impl ProviderBackend for Fentry {
    fn attach_spec(&self, attach: &ResolvedAttach) -> AttachSpec {
        AttachSpec::Fentry {
            function: function_of(attach),
            ret: false,
        }
    }
    fn context_layout(&self, _: &ResolvedAttach) -> ContextLayout {
        ContextLayout::RawArgs
    }
}

/// `fexit:function`.
pub struct Fexit;

const FEXIT_USAGE: &str = "fexit[:module]:function";

impl Provider for Fexit {
    fn names(&self) -> &'static [&'static str] {
        &["fexit", "fr", "kretfunc"]
    }
    fn usage(&self) -> &'static str {
        FEXIT_USAGE
    }
    fn doc(&self) -> &'static str {
        "Exit of a kernel function through a BPF trampoline; arguments are arg0..arg5, the result retval"
    }
    fn resolve(
        &self,
        ap: &AttachPoint,
        kernel: &dyn KernelInfo,
    ) -> Result<Vec<ResolvedAttach>, Diagnostic> {
        resolve_fentry(ap, kernel, true, FEXIT_USAGE)
    }
}

impl ProviderBackend for Fexit {
    fn attach_spec(&self, attach: &ResolvedAttach) -> AttachSpec {
        AttachSpec::Fentry {
            function: function_of(attach),
            ret: true,
        }
    }
    fn context_layout(&self, _: &ResolvedAttach) -> ContextLayout {
        ContextLayout::RawArgs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::providers::common::BAD_ATTACH_POINT;
    use crate::catalog::providers::fixture::{Fixture, ap};

    #[test]
    fn fentry_and_fexit() {
        let k = Fixture { kprobes: true };
        let r = Fentry.resolve(&ap("kfunc:vfs_read"), &k).unwrap();
        assert_eq!(r[0].name, "fentry:vfs_read");
        assert_eq!(r[0].ctx.arg_regs, 6);
        assert_eq!(
            Fentry.attach_spec(&r[0]),
            AttachSpec::Fentry {
                function: "vfs_read".into(),
                ret: false
            }
        );
        let x = Fexit.resolve(&ap("fr:vfs_*"), &k).unwrap();
        assert_eq!(x.len(), 3);
        assert_eq!(x[0].ctx.retval, Some(Type::U64));
        assert_eq!(
            Fexit.attach_spec(&x[0]),
            AttachSpec::Fentry {
                function: "vfs_open".into(),
                ret: true
            }
        );
        assert_eq!(Fexit.attach_spec(&x[0]).section(), "fexit");
        assert_eq!(
            Fentry.resolve(&ap("f:vfs_raed"), &k).unwrap_err().code,
            UNKNOWN_FUNCTION
        );
        assert_eq!(
            Fentry.resolve(&ap("f:vfs_read+1"), &k).unwrap_err().code,
            BAD_ATTACH_POINT
        );
        // Without kernel support the name is taken as written.
        let none = Fixture { kprobes: false };
        assert_eq!(
            Fentry.resolve(&ap("fentry:anything"), &none).unwrap()[0].name,
            "fentry:anything"
        );
    }
}
