//! `kprobe[:module]:function[+offset]` (alias `k`) and `kretprobe[:module]:function` (alias
//! `kr`): dynamic probes on kernel functions.
//!
//! These resolve even where the kernel has no kprobe support
//! ([`KernelInfo::kernel_functions`] is `None`): names are then taken as written and the
//! attach step reports the missing support on the probe's span. When the function list is
//! known, names are validated (with a suggestion) and wildcards expand over it.
//!
//! As in bpftrace, `arg0`..`arg5` exist on entry probes only and `retval` on return probes.

use super::common::{
    UNKNOWN_FUNCTION, bad_attach_point, expect_parts, has_wildcard, no_match, part_span, resolved,
    split_offset, unknown_with_suggestion, wildcard_match,
};
use crate::catalog::ProviderBackend;
use crate::context::ContextLayout;
use crate::program::AttachSpec;
use sonde_lang::ast::AttachPoint;
use sonde_lang::catalog::{ProbeContext, Provider, ResolvedAttach};
use sonde_lang::diag::Diagnostic;
use sonde_lang::kernel::KernelInfo;
use sonde_lang::types::Type;

/// Splits a canonical last part `function[+offset]` back (offsets were validated by `resolve`).
fn function_offset(part: &str) -> (String, u64) {
    match part.split_once('+') {
        Some((f, off)) => (f.to_string(), super::common::parse_u64(off).unwrap_or(0)),
        None => (part.to_string(), 0),
    }
}

/// Shared resolution of entry (`ret == false`) and return probes.
fn resolve_kprobe(
    ap: &AttachPoint,
    kernel: &dyn KernelInfo,
    ret: bool,
    usage: &str,
) -> Result<Vec<ResolvedAttach>, Diagnostic> {
    let provider = if ret { "kretprobe" } else { "kprobe" };
    expect_parts(ap, 1, 2, usage)?;
    let last = ap.parts.len() - 1;
    let (func, offset) = split_offset(ap, last, usage)?;
    if func.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(bad_attach_point(
            part_span(ap, last),
            format!("`{func}` is an address; attaching {provider}s to addresses is not supported"),
            usage,
        ));
    }
    if ret && offset != 0 {
        return Err(bad_attach_point(
            part_span(ap, last),
            "a kretprobe cannot have an offset",
            usage,
        ));
    }
    if offset != 0 && has_wildcard(&func) {
        return Err(bad_attach_point(
            part_span(ap, last),
            "an offset cannot be combined with a wildcard",
            usage,
        ));
    }
    let make = |name: &str| {
        let mut parts: Vec<String> = ap.parts[..last].to_vec();
        parts.push(if offset != 0 {
            format!("{name}+{offset}")
        } else {
            name.to_string()
        });
        let ctx = ProbeContext {
            arg_regs: if ret { 0 } else { 6 },
            retval: ret.then_some(Type::U64),
            func: Some(name.to_string()),
            ..ProbeContext::bare(provider)
        };
        resolved(ap, provider, parts, ctx)
    };
    let Some(known) = kernel.kernel_functions() else {
        return Ok(vec![make(&func)]);
    };
    if !has_wildcard(&func) {
        if known.contains(&func) {
            return Ok(vec![make(&func)]);
        }
        return Err(unknown_with_suggestion(
            UNKNOWN_FUNCTION,
            part_span(ap, last),
            "kernel function",
            &func,
            known.iter().map(String::as_str),
        ));
    }
    let mut names: Vec<&String> = known.iter().filter(|k| wildcard_match(&func, k)).collect();
    names.sort();
    names.dedup();
    if names.is_empty() {
        return Err(no_match(ap.span, &func, "kernel functions"));
    }
    Ok(names.into_iter().map(|n| make(n)).collect())
}

/// `kprobe:function[+offset]`.
pub struct Kprobe;

const KPROBE_USAGE: &str = "kprobe[:module]:function[+offset]";

impl Provider for Kprobe {
    fn names(&self) -> &'static [&'static str] {
        &["kprobe", "k"]
    }
    fn usage(&self) -> &'static str {
        KPROBE_USAGE
    }
    fn doc(&self) -> &'static str {
        "Entry of a kernel function (or an offset into it); arguments are arg0..arg5"
    }
    fn resolve(
        &self,
        ap: &AttachPoint,
        kernel: &dyn KernelInfo,
    ) -> Result<Vec<ResolvedAttach>, Diagnostic> {
        resolve_kprobe(ap, kernel, false, KPROBE_USAGE)
    }
}

impl ProviderBackend for Kprobe {
    fn attach_spec(&self, attach: &ResolvedAttach) -> AttachSpec {
        let (function, offset) = function_offset(attach.parts.last().map_or("", String::as_str));
        AttachSpec::Kprobe {
            function,
            offset,
            ret: false,
        }
    }
    fn context_layout(&self, _: &ResolvedAttach) -> ContextLayout {
        ContextLayout::PtRegs
    }
}

/// `kretprobe:function`.
pub struct Kretprobe;

const KRETPROBE_USAGE: &str = "kretprobe[:module]:function";

impl Provider for Kretprobe {
    fn names(&self) -> &'static [&'static str] {
        &["kretprobe", "kr"]
    }
    fn usage(&self) -> &'static str {
        KRETPROBE_USAGE
    }
    fn doc(&self) -> &'static str {
        "Return of a kernel function; its return value is retval"
    }
    fn resolve(
        &self,
        ap: &AttachPoint,
        kernel: &dyn KernelInfo,
    ) -> Result<Vec<ResolvedAttach>, Diagnostic> {
        resolve_kprobe(ap, kernel, true, KRETPROBE_USAGE)
    }
}

impl ProviderBackend for Kretprobe {
    fn attach_spec(&self, attach: &ResolvedAttach) -> AttachSpec {
        let (function, offset) = function_offset(attach.parts.last().map_or("", String::as_str));
        AttachSpec::Kprobe {
            function,
            offset,
            ret: true,
        }
    }
    fn context_layout(&self, _: &ResolvedAttach) -> ContextLayout {
        ContextLayout::PtRegs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::providers::common::{BAD_ATTACH_POINT, NO_MATCH};
    use crate::catalog::providers::fixture::{Fixture, ap};

    const WITH: Fixture = Fixture { kprobes: true };
    const WITHOUT: Fixture = Fixture { kprobes: false };

    #[test]
    fn kprobe_without_kernel_support_still_resolves() {
        let r = Kprobe.resolve(&ap("k:vfs_read+0x10"), &WITHOUT).unwrap();
        assert_eq!(r[0].name, "kprobe:vfs_read+16");
        assert_eq!(r[0].ctx.func.as_deref(), Some("vfs_read"));
        assert_eq!(r[0].ctx.arg_regs, 6);
        assert_eq!(
            Kprobe.attach_spec(&r[0]),
            AttachSpec::Kprobe {
                function: "vfs_read".into(),
                offset: 16,
                ret: false
            }
        );
        assert_eq!(Kprobe.attach_spec(&r[0]).section(), "kprobe");
        let w = Kprobe.resolve(&ap("kprobe:vfs_*"), &WITHOUT).unwrap();
        assert_eq!(w.len(), 1);
    }

    #[test]
    fn kprobe_validates_and_expands_when_functions_are_known() {
        let r = Kprobe.resolve(&ap("kprobe:vfs_*"), &WITH).unwrap();
        let names: Vec<&str> = r.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(
            names,
            ["kprobe:vfs_open", "kprobe:vfs_read", "kprobe:vfs_write"]
        );
        let e = Kprobe.resolve(&ap("kprobe:vfs_raed"), &WITH).unwrap_err();
        assert_eq!(e.code, UNKNOWN_FUNCTION);
        assert_eq!(e.help.as_deref(), Some("did you mean `vfs_read`?"));
        assert_eq!(
            Kprobe.resolve(&ap("kprobe:zz*"), &WITH).unwrap_err().code,
            NO_MATCH
        );
    }

    #[test]
    fn kretprobe_has_retval_and_no_args() {
        let r = Kretprobe.resolve(&ap("kr:vfs_read"), &WITH).unwrap();
        assert_eq!(r[0].name, "kretprobe:vfs_read");
        assert_eq!(r[0].ctx.retval, Some(Type::U64));
        assert_eq!(r[0].ctx.arg_regs, 0);
        assert_eq!(
            Kretprobe.attach_spec(&r[0]),
            AttachSpec::Kprobe {
                function: "vfs_read".into(),
                offset: 0,
                ret: true
            }
        );
        assert_eq!(Kretprobe.attach_spec(&r[0]).section(), "kretprobe");
        let e = Kretprobe.resolve(&ap("kr:vfs_read+4"), &WITH).unwrap_err();
        assert_eq!(e.code, BAD_ATTACH_POINT);
        let e = Kprobe
            .resolve(&ap("k:0xffffffff81000000"), &WITH)
            .unwrap_err();
        assert_eq!(e.code, BAD_ATTACH_POINT);
    }
}
