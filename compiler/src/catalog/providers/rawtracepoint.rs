//! `rawtracepoint[:module]:name` (alias `rt`): raw kernel tracepoints, cheaper than tracefs
//! tracepoints. The program context is the tracepoint's argument array, read as
//! `arg0`..`arg5` (u64 each). Names come from [`KernelInfo::raw_tracepoints`]; `*`/`?`
//! wildcards expand over them. When that list is empty (no BTF), a plain name is accepted
//! unchecked and the attach reports a missing tracepoint. A module is `vmlinux` or a loaded
//! module with BTF ([`KernelInfo::btf_modules`]), whose tracepoint names are not checked.

use super::common::{
    UNKNOWN_TRACEPOINT, expect_parts, has_wildcard, no_match, part_span, resolved,
    unknown_with_suggestion, wildcard_match,
};
use crate::catalog::ProviderBackend;
use crate::context::ContextLayout;
use crate::program::AttachSpec;
use sonde_lang::ast::AttachPoint;
use sonde_lang::catalog::{ProbeContext, Provider, ResolvedAttach};
use sonde_lang::diag::Diagnostic;
use sonde_lang::kernel::KernelInfo;

const USAGE: &str = "rawtracepoint[:module]:name";

/// The raw tracepoint provider.
pub struct RawTracepoint;

fn context() -> ProbeContext {
    ProbeContext {
        arg_regs: 6,
        ..ProbeContext::bare("rawtracepoint")
    }
}

impl Provider for RawTracepoint {
    fn names(&self) -> &'static [&'static str] {
        &["rawtracepoint", "rt"]
    }
    fn usage(&self) -> &'static str {
        USAGE
    }
    fn doc(&self) -> &'static str {
        "A raw kernel tracepoint; its arguments are arg0..arg5"
    }
    fn resolve(
        &self,
        ap: &AttachPoint,
        kernel: &dyn KernelInfo,
    ) -> Result<Vec<ResolvedAttach>, Diagnostic> {
        expect_parts(ap, 1, 2, USAGE)?;
        let last = ap.parts.len() - 1;
        let pattern = &ap.parts[last];
        let mut known = kernel.raw_tracepoints();
        let prefix = match module(ap, kernel, !known.is_empty())? {
            // A module's own tracepoints are not listed: its names are taken unchecked.
            Some(m) if m != "vmlinux" => {
                known.clear();
                vec![m]
            }
            Some(m) => vec![m],
            None => Vec::new(),
        };
        let with_name = |name: &str| {
            let mut parts = prefix.clone();
            parts.push(name.to_string());
            resolved(ap, "rawtracepoint", parts, context())
        };
        if !has_wildcard(pattern) {
            if known.is_empty() || known.iter().any(|k| k == pattern) {
                return Ok(vec![with_name(pattern)]);
            }
            let mut d = unknown_with_suggestion(
                UNKNOWN_TRACEPOINT,
                part_span(ap, last),
                "raw tracepoint",
                pattern,
                known.iter().map(String::as_str),
            );
            d.message = format!("No matches for rawtracepoint {pattern}.");
            return Err(d);
        }
        let mut names: Vec<&String> = known
            .iter()
            .filter(|k| wildcard_match(pattern, k))
            .collect();
        names.sort();
        names.dedup();
        if names.is_empty() {
            return Err(no_match(ap.span, pattern, "raw tracepoints"));
        }
        Ok(names.into_iter().map(|n| with_name(n)).collect())
    }
}

/// The module part of `rawtracepoint:MODULE:name`: `vmlinux` or a loaded module with BTF,
/// a wildcard naming one of them (`vmlinu*`); `None` without a module part. `checked` is
/// false when the kernel's tracepoints are not known (the module is then not checked).
fn module(
    ap: &AttachPoint,
    kernel: &dyn KernelInfo,
    checked: bool,
) -> Result<Option<String>, Diagnostic> {
    let [module, name] = ap.parts.as_slice() else {
        return Ok(None);
    };
    if !checked {
        return Ok(Some(module.clone()));
    }
    let modules = std::iter::once("vmlinux".to_string()).chain(kernel.btf_modules());
    let mut found: Vec<String> = modules.filter(|m| wildcard_match(module, m)).collect();
    if found.is_empty() {
        let mut d = unknown_with_suggestion(
            UNKNOWN_TRACEPOINT,
            part_span(ap, 0),
            "kernel module",
            module,
            std::iter::once("vmlinux"),
        );
        d.message = format!("No matches for rawtracepoint {module}:{name}.");
        return Err(d);
    }
    // `vmlinu*` names vmlinux, whose tracepoints are listed, before any module.
    found.sort_by_key(|m| m != "vmlinux");
    Ok(found.into_iter().next())
}

impl ProviderBackend for RawTracepoint {
    fn attach_spec(&self, attach: &ResolvedAttach) -> AttachSpec {
        AttachSpec::RawTracepoint {
            name: attach.parts.last().cloned().unwrap_or_default(),
        }
    }
    fn context_layout(&self, _: &ResolvedAttach) -> ContextLayout {
        ContextLayout::RawArgs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::providers::common::NO_MATCH;
    use crate::catalog::providers::fixture::{Fixture, ap};
    use sonde_lang::kernel::NoKernel;

    const K: Fixture = Fixture { kprobes: false };

    /// The module is `vmlinux` (a wildcard naming it) or a loaded module: bpftrace's words
    /// for one that is neither.
    #[test]
    fn the_module_is_checked() {
        let r = RawTracepoint
            .resolve(&ap("rawtracepoint:vmlinu*:sys_exit"), &K)
            .unwrap();
        assert_eq!(r[0].name, "rawtracepoint:vmlinux:sys_exit");
        let e = RawTracepoint
            .resolve(&ap("rawtracepoint:nonsense:sys_exit"), &K)
            .unwrap_err();
        assert_eq!(e.message, "No matches for rawtracepoint nonsense:sys_exit.");
        assert_eq!(e.code, UNKNOWN_TRACEPOINT);
        // Without the kernel's list, nothing is checked.
        let r = RawTracepoint
            .resolve(&ap("rawtracepoint:nonsense:sys_exit"), &NoKernel)
            .unwrap();
        assert_eq!(r[0].name, "rawtracepoint:nonsense:sys_exit");
    }

    #[test]
    fn resolves_names_and_wildcards() {
        let r = RawTracepoint.resolve(&ap("rt:sched_switch"), &K).unwrap();
        assert_eq!(r[0].name, "rawtracepoint:sched_switch");
        assert_eq!(r[0].ctx.arg_regs, 6);
        assert_eq!(r[0].ctx.args, None);
        assert_eq!(
            RawTracepoint.attach_spec(&r[0]),
            AttachSpec::RawTracepoint {
                name: "sched_switch".into()
            }
        );
        let r = RawTracepoint
            .resolve(&ap("rawtracepoint:sys_*"), &K)
            .unwrap();
        let names: Vec<&str> = r.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["rawtracepoint:sys_enter", "rawtracepoint:sys_exit"]);
        let m = RawTracepoint
            .resolve(&ap("rawtracepoint:vmlinux:sys_enter"), &K)
            .unwrap();
        assert_eq!(m[0].name, "rawtracepoint:vmlinux:sys_enter");
        assert_eq!(
            RawTracepoint.attach_spec(&m[0]),
            AttachSpec::RawTracepoint {
                name: "sys_enter".into()
            }
        );
    }

    #[test]
    fn unknown_and_unmatched() {
        let e = RawTracepoint
            .resolve(&ap("rt:sched_swich"), &K)
            .unwrap_err();
        assert_eq!(e.code, UNKNOWN_TRACEPOINT);
        assert_eq!(e.help.as_deref(), Some("did you mean `sched_switch`?"));
        assert_eq!(
            RawTracepoint.resolve(&ap("rt:zz*"), &K).unwrap_err().code,
            NO_MATCH
        );
        // Without a list of raw tracepoints a plain name cannot be checked and is accepted.
        assert_eq!(
            RawTracepoint
                .resolve(&ap("rt:anything"), &NoKernel)
                .unwrap()
                .len(),
            1
        );
    }
}
