//! `tracepoint:category:name` (alias `t`): static kernel tracepoints from tracefs. `*` and `?`
//! wildcards in either part expand over [`KernelInfo::tracepoints`]; each concrete tracepoint
//! gets an `args` record built from its format file (`common_*` fields skipped).

use super::common::{
    UNKNOWN_TRACEPOINT, expect_parts, has_wildcard, no_match, part_span, resolved,
    unknown_with_suggestion, wildcard_match,
};
use crate::catalog::{ContextLayout, ProviderBackend};
use crate::program::AttachSpec;
use sonde_lang::ast::AttachPoint;
use sonde_lang::catalog::{ProbeContext, Provider, ResolvedAttach};
use sonde_lang::ctypes::tracepoint_record;
use sonde_lang::diag::Diagnostic;
use sonde_lang::kernel::KernelInfo;
use std::sync::Arc;

const USAGE: &str = "tracepoint:category:name";

/// The tracepoint provider.
pub struct Tracepoint;

impl Tracepoint {
    /// The resolved attach point of one existing tracepoint, or `None` when it has no format.
    fn one(
        ap: &AttachPoint,
        kernel: &dyn KernelInfo,
        category: &str,
        name: &str,
    ) -> Option<ResolvedAttach> {
        let fields = kernel.tracepoint_format(category, name)?;
        let ctx = ProbeContext {
            args: Some(Arc::new(tracepoint_record(category, name, &fields))),
            ..ProbeContext::bare("tracepoint")
        };
        Some(resolved(
            ap,
            "tracepoint",
            vec![category.to_string(), name.to_string()],
            ctx,
        ))
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
    fn resolve(
        &self,
        ap: &AttachPoint,
        kernel: &dyn KernelInfo,
    ) -> Result<Vec<ResolvedAttach>, Diagnostic> {
        expect_parts(ap, 2, 2, USAGE)?;
        let (cat, name) = (&ap.parts[0], &ap.parts[1]);
        if !has_wildcard(cat) && !has_wildcard(name) {
            return Self::one(ap, kernel, cat, name)
                .map(|r| vec![r])
                .ok_or_else(|| {
                    let all: Vec<String> = kernel
                        .tracepoints()
                        .into_iter()
                        .map(|(c, n)| format!("{c}:{n}"))
                        .collect();
                    let full = format!("{cat}:{name}");
                    let span = part_span(ap, 0).join(part_span(ap, 1));
                    unknown_with_suggestion(
                        UNKNOWN_TRACEPOINT,
                        span,
                        "tracepoint",
                        &full,
                        all.iter().map(String::as_str),
                    )
                });
        }
        let mut matches: Vec<(String, String)> = kernel
            .tracepoints()
            .into_iter()
            .filter(|(c, n)| wildcard_match(cat, c) && wildcard_match(name, n))
            .collect();
        matches.sort();
        matches.dedup();
        let out: Vec<ResolvedAttach> = matches
            .iter()
            .filter_map(|(c, n)| Self::one(ap, kernel, c, n))
            .collect();
        if out.is_empty() {
            return Err(no_match(ap.span, &format!("{cat}:{name}"), "tracepoints"));
        }
        Ok(out)
    }
}

impl ProviderBackend for Tracepoint {
    fn attach_spec(&self, attach: &ResolvedAttach) -> AttachSpec {
        AttachSpec::Tracepoint {
            category: attach.parts[0].clone(),
            name: attach.parts[1].clone(),
        }
    }
    fn context_layout(&self) -> ContextLayout {
        ContextLayout::TracepointRecord
    }
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
