//! `tracepoint:category:name` (alias `t`): static kernel tracepoints from tracefs. `*` and `?`
//! wildcards in either part expand over [`KernelInfo::tracepoints`]; each concrete tracepoint
//! gets an `args` record built from its format file (`common_*` fields skipped).
//!
//! Syscall tracepoints whose number is known go through [`syscall_dispatch`] instead of one
//! perf event each when an attach point matches many of them (or `config = { syscall_dispatch
//! = always }`): their resolved parts carry the number as a third part, and their `args`
//! record is read from the registers.

use super::common::{
    UNKNOWN_TRACEPOINT, expect_parts, has_wildcard, no_match, part_span, resolved,
    unknown_with_suggestion, wildcard_match,
};
use super::syscall_dispatch;
use crate::catalog::ProviderBackend;
use crate::context::ContextLayout;
use crate::program::AttachSpec;
use sonde_lang::ast::AttachPoint;
use sonde_lang::catalog::{ProbeContext, Provider, ResolveOptions, ResolvedAttach};
use sonde_lang::ctypes::tracepoint_record;
use sonde_lang::diag::Diagnostic;
use sonde_lang::kernel::KernelInfo;
use std::sync::Arc;

const USAGE: &str = "tracepoint:category:name";

/// The tracepoint provider.
pub struct Tracepoint;

impl Tracepoint {
    /// The resolved attach point of one existing tracepoint, or `None` when it has no format.
    /// `dispatch`: reach a syscall tracepoint through the syscall dispatch when it can be.
    fn one(
        ap: &AttachPoint,
        kernel: &dyn KernelInfo,
        category: &str,
        name: &str,
        dispatch: bool,
    ) -> Option<ResolvedAttach> {
        let fields = kernel.tracepoint_format(category, name)?;
        let mut record = tracepoint_record(category, name, &fields);
        let mut parts = vec![category.to_string(), name.to_string()];
        if dispatch
            && let Some((exit, nr)) = syscall_dispatch::syscall_of(category, name)
            && let Some(regs) = syscall_dispatch::regs_record(&record, exit)
        {
            record = regs;
            parts.push(nr.to_string());
        }
        let ctx = ProbeContext {
            args: Some(Arc::new(record)),
            ..ProbeContext::bare("tracepoint")
        };
        let mut r = resolved(ap, "tracepoint", parts[..2].to_vec(), ctx);
        r.parts = parts;
        Some(r)
    }
}

impl Provider for Tracepoint {
    fn names(&self) -> &'static [&'static str] {
        &["tracepoint", "t"]
    }
    fn usage(&self) -> &'static str {
        USAGE
    }
    fn doc(&self) -> &'static str {
        "A static kernel tracepoint; `args` holds the fields of its format"
    }
    fn resolve_with(
        &self,
        ap: &AttachPoint,
        kernel: &dyn KernelInfo,
        options: &ResolveOptions,
    ) -> Result<Vec<ResolvedAttach>, Diagnostic> {
        expect_parts(ap, 2, 2, USAGE)?;
        let (cat, name) = (&ap.parts[0], &ap.parts[1]);
        if !has_wildcard(cat) && !has_wildcard(name) {
            let dispatch = options.syscall_dispatch.dispatches(1);
            return Self::one(ap, kernel, cat, name, dispatch)
                .map(|r| vec![r])
                .ok_or_else(|| {
                    let all: Vec<String> = kernel
                        .tracepoints()
                        .into_iter()
                        .map(|(c, n)| format!("{c}:{n}"))
                        .collect();
                    let full = format!("{cat}:{name}");
                    let span = part_span(ap, 0).join(part_span(ap, 1));
                    let mut d = unknown_with_suggestion(
                        UNKNOWN_TRACEPOINT,
                        span,
                        "tracepoint",
                        &full,
                        all.iter().map(String::as_str),
                    );
                    d.message = format!("No matches for tracepoint {full}.");
                    d
                });
        }
        let mut matches: Vec<(String, String)> = kernel
            .tracepoints()
            .into_iter()
            .filter(|(c, n)| wildcard_match(cat, c) && wildcard_match(name, n))
            .collect();
        matches.sort();
        matches.dedup();
        let syscalls = matches
            .iter()
            .filter(|(c, n)| syscall_dispatch::syscall_of(c, n).is_some())
            .count();
        let dispatch = options.syscall_dispatch.dispatches(syscalls);
        let out: Vec<ResolvedAttach> = matches
            .iter()
            .filter_map(|(c, n)| Self::one(ap, kernel, c, n, dispatch))
            .collect();
        if out.is_empty() {
            return Err(no_match(ap.span, &format!("{cat}:{name}"), "tracepoints"));
        }
        Ok(out)
    }
}

impl ProviderBackend for Tracepoint {
    fn attach_spec(&self, attach: &ResolvedAttach) -> AttachSpec {
        match syscall_slot(attach) {
            Some(nr) => AttachSpec::SyscallSlot {
                name: attach.parts[1].clone(),
                nr,
                exit: attach.parts[1].starts_with("sys_exit_"),
            },
            None => AttachSpec::Tracepoint {
                category: attach.parts[0].clone(),
                name: attach.parts[1].clone(),
            },
        }
    }
    fn context_layout(&self, attach: &ResolvedAttach) -> ContextLayout {
        match syscall_slot(attach) {
            Some(_) => ContextLayout::SyscallRegs,
            None => ContextLayout::TracepointRecord,
        }
    }
}

/// The syscall number of a tracepoint resolved for the syscall dispatch (its third part).
fn syscall_slot(attach: &ResolvedAttach) -> Option<u32> {
    attach.parts.get(2).and_then(|nr| nr.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::providers::common::{BAD_ATTACH_POINT, NO_MATCH};
    use crate::catalog::providers::fixture::{Fixture, ap};
    use sonde_lang::span::Span;
    use sonde_lang::types::Type;

    const K: Fixture = Fixture { kprobes: false };

    #[test]
    fn exact_tracepoint_gets_args_record() {
        let r = Tracepoint
            .resolve(&ap("t:syscalls:sys_enter_openat"), &K)
            .unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].name, "tracepoint:syscalls:sys_enter_openat");
        assert_eq!(r[0].parts, vec!["syscalls", "sys_enter_openat"]);
        let args = r[0].ctx.args.as_ref().unwrap();
        assert_eq!(args.name, "tracepoint:syscalls:sys_enter_openat");
        assert!(args.field("common_pid").is_none());
        let f = args.field("filename").unwrap();
        assert_eq!(f.offset, 24);
        assert!(f.ty.is_ptr());
        assert_eq!(args.field("dfd").unwrap().ty, Type::I64);
        assert_eq!(r[0].ctx.arg_regs, 0);
        assert_eq!(
            Tracepoint.attach_spec(&r[0]),
            AttachSpec::Tracepoint {
                category: "syscalls".into(),
                name: "sys_enter_openat".into()
            }
        );
    }

    #[test]
    fn syscall_tracepoints_dispatch_when_many_match_or_when_asked() {
        use sonde_lang::catalog::SyscallDispatch;
        let with = |d: SyscallDispatch, point: &str| {
            let options = ResolveOptions {
                syscall_dispatch: d,
                ..ResolveOptions::default()
            };
            Tracepoint.resolve_with(&ap(point), &K, &options).unwrap()
        };
        // Three syscall tracepoints are too few for `auto`.
        let r = with(SyscallDispatch::Auto, "t:syscalls:*");
        assert!(
            r.iter()
                .all(|a| matches!(Tracepoint.attach_spec(a), AttachSpec::Tracepoint { .. }))
        );
        let r = with(SyscallDispatch::Always, "t:syscalls:sys_enter_openat");
        assert_eq!(r[0].name, "tracepoint:syscalls:sys_enter_openat");
        assert_eq!(
            Tracepoint.attach_spec(&r[0]),
            AttachSpec::SyscallSlot {
                name: "sys_enter_openat".into(),
                nr: 257,
                exit: false
            }
        );
        assert_eq!(Tracepoint.context_layout(&r[0]), ContextLayout::SyscallRegs);
        // `filename` is the second argument: `si` in `struct pt_regs`.
        let args = r[0].ctx.args.as_ref().unwrap();
        assert_eq!(args.field("filename").unwrap().offset, 104);
        let r = with(SyscallDispatch::Always, "t:syscalls:sys_exit_read");
        assert_eq!(
            Tracepoint.attach_spec(&r[0]),
            AttachSpec::SyscallSlot {
                name: "sys_exit_read".into(),
                nr: 0,
                exit: true
            }
        );
        // Not a syscall: never dispatched.
        let r = with(SyscallDispatch::Always, "t:sched:sched_switch");
        assert_eq!(
            Tracepoint.context_layout(&r[0]),
            ContextLayout::TracepointRecord
        );
        assert!(SyscallDispatch::Auto.dispatches(17) && !SyscallDispatch::Auto.dispatches(16));
        assert!(!SyscallDispatch::Never.dispatches(1000));
    }

    #[test]
    fn data_loc_field_is_a_located_string() {
        let r = Tracepoint
            .resolve(&ap("tracepoint:sched:sched_process_exec"), &K)
            .unwrap();
        let f = r[0]
            .ctx
            .args
            .as_ref()
            .unwrap()
            .field("filename")
            .unwrap()
            .clone();
        assert!(f.data_loc);
        assert!(matches!(f.ty, Type::Str { .. }));
    }

    #[test]
    fn wildcards_expand_sorted() {
        let r = Tracepoint
            .resolve(&ap("tracepoint:syscalls:sys_*_read"), &K)
            .unwrap();
        let names: Vec<&str> = r.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "tracepoint:syscalls:sys_enter_read",
                "tracepoint:syscalls:sys_exit_read"
            ]
        );
        let all = Tracepoint.resolve(&ap("t:*:*"), &K).unwrap();
        assert_eq!(all.len(), 5);
    }

    #[test]
    fn unknown_tracepoint_suggests() {
        let e = Tracepoint
            .resolve(&ap("tracepoint:syscalls:sys_enter_opnat"), &K)
            .unwrap_err();
        assert_eq!(e.code, UNKNOWN_TRACEPOINT);
        assert_eq!(e.span, Span::new(11, 35));
        assert_eq!(
            e.help.as_deref(),
            Some("did you mean `syscalls:sys_enter_openat`?")
        );
    }

    #[test]
    fn wildcard_without_match_and_bad_shapes() {
        let e = Tracepoint
            .resolve(&ap("t:syscalls:nothing_*"), &K)
            .unwrap_err();
        assert_eq!(e.code, NO_MATCH);
        let e = Tracepoint.resolve(&ap("t:syscalls"), &K).unwrap_err();
        assert_eq!(e.code, BAD_ATTACH_POINT);
        assert_eq!(
            e.help.as_deref(),
            Some("expected `tracepoint:category:name`")
        );
        let e = Tracepoint.resolve(&ap("t:syscalls:"), &K).unwrap_err();
        assert_eq!(e.code, BAD_ATTACH_POINT);
    }
}
