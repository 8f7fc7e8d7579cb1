//! `usdt:binary:[provider:]name` (alias `U`): user statically defined tracepoints.
//!
//! The probes are the notes of the binary's `.note.stapsdt` section
//! ([`KernelInfo::usdt_probes`]). The binary may hold wildcards (`./prog*`, `*`), and under
//! `-p PID` it may be empty or left out (`usdt::provider:name`, `usdt:name`): the probes are
//! then those of every object the process maps ([`super::uprobe::binaries`]). Provider and
//! name may hold `*`/`?` wildcards; an empty provider, or the two-part form, matches the
//! name in every provider. Each probe becomes a uprobe at the file offset of its
//! instruction; `arg0..argN` are read as the note's argument specification says (a
//! register, a constant or user memory), so each instance carries its specification in
//! [`ProbeContext::usdt_args`].
//!
//! Probes guarded by a semaphore (`*_ENABLED()` in the program) fire only while the
//! semaphore's counter is non-zero: the attach spec carries the semaphore's file offset as
//! the uprobe's reference counter, which the kernel increments while the probe is attached,
//! in every process that maps the binary (bpftrace's `--usdt-file-activation` is then
//! implied).

use super::common::{
    bad_attach_point, expect_parts, has_wildcard, no_match, parse_u64, part_span,
    unknown_with_suggestion, wildcard_match,
};
use super::uprobe::binaries::{self, usdt_binaries};
use crate::catalog::ProviderBackend;
use crate::catalog::builtins::usdt_arg::arg_count;
use crate::context::ContextLayout;
use crate::program::AttachSpec;
use sonde_lang::ast::AttachPoint;
use sonde_lang::catalog::{ProbeContext, Provider, ResolvedAttach};
use sonde_lang::diag::Diagnostic;
use sonde_lang::kernel::{KernelInfo, UsdtProbe};

const USAGE: &str = "usdt:binary:[provider:]name";

/// Code of a USDT probe name that is not in the binary.
pub const UNKNOWN_USDT: &str = "sonde::probe::unknown_usdt";

/// The USDT provider.
pub struct Usdt;

/// The probe context of one USDT probe.
fn context(probe: &UsdtProbe) -> ProbeContext {
    ProbeContext {
        arg_regs: u8::try_from(arg_count(&probe.args)).unwrap_or(u8::MAX),
        user: true,
        func: Some(format!("{}:{}", probe.provider, probe.name)),
        usdt_args: Some(probe.args.clone()),
        ..ProbeContext::bare("usdt")
    }
}

/// The resolved attach point of `probe` in `path`: named `usdt:PATH:PROVIDER:NAME`, with the
/// probe's file offset (hexadecimal) as a fourth, unnamed part for the attach spec.
fn resolved(ap: &AttachPoint, path: &str, probe: &UsdtProbe) -> ResolvedAttach {
    ResolvedAttach {
        name: format!("usdt:{path}:{}:{}", probe.provider, probe.name),
        parts: vec![
            path.to_string(),
            probe.provider.clone(),
            probe.name.clone(),
            format!("{:#x}", probe.offset),
            format!("{:#x}", probe.semaphore_offset),
        ],
        span: ap.span,
        ctx: ProbeContext {
            binary: Some(path.to_string()),
            ..context(probe)
        },
    }
}

impl Provider for Usdt {
    fn names(&self) -> &'static [&'static str] {
        &["usdt", "U"]
    }
    fn usage(&self) -> &'static str {
        USAGE
    }
    fn doc(&self) -> &'static str {
        "A user statically defined tracepoint (an ELF note); arguments are arg0..argN as the note describes them (registers, memory, constants). The binary may be a glob as for uprobe; with -p PID it may be empty or left out (`usdt::provider:name`, `usdt:name`): the probes of every object the process maps, its shared libraries too. An empty provider matches any. A quoted name may hold escaped quotes (`usdt:BIN:test:\"\\\"probe1\\\"\"`)"
    }
    fn resolve(
        &self,
        ap: &AttachPoint,
        kernel: &dyn KernelInfo,
    ) -> Result<Vec<ResolvedAttach>, Diagnostic> {
        // Under -p the binary may be left out: `usdt:NAME` (bpftrace's short form).
        let short = ap.parts.len() == 1 && kernel.target_process().is_some();
        if !short {
            expect_parts_allowing_empty(ap, 2, 3, USAGE)?;
        }
        let n = ap.parts.len();
        let target = if short { "" } else { ap.parts[0].as_str() };
        let name = ap.parts[n - 1].as_str();
        let provider = match (n, ap.parts.get(1)) {
            (3, Some(p)) if !p.is_empty() => p.as_str(),
            _ => "*",
        };
        if name.is_empty() {
            return Err(bad_attach_point(
                part_span(ap, n - 1),
                "a usdt probe needs a probe name or a wildcard",
                USAGE,
            ));
        }
        let bins = usdt_binaries(ap, target, kernel, USAGE)?;
        let pattern = if n == 3 {
            format!("{provider}:{name}")
        } else {
            name.to_string()
        };
        let mut out = Vec::new();
        for path in &bins.paths {
            let probes = match kernel.usdt_probes(path) {
                Ok(p) => p,
                Err(_) if bins.expanded => continue,
                Err(e) => {
                    return Err(binaries::unreadable(ap, path, "USDT probes", e).with_help(
                        "USDT probes are notes in an ELF executable or shared library",
                    ));
                }
            };
            let mut matched: Vec<&UsdtProbe> = probes
                .iter()
                .filter(|p| wildcard_match(provider, &p.provider) && wildcard_match(name, &p.name))
                .collect();
            if matched.is_empty() && !bins.expanded {
                return Err(unknown_probe(ap, path, &probes, &pattern, n));
            }
            matched.sort_by(|a, b| {
                (&a.provider, &a.name, a.offset).cmp(&(&b.provider, &b.name, b.offset))
            });
            matched.dedup_by(|a, b| a.offset == b.offset);
            out.extend(matched.into_iter().map(|p| resolved(ap, path, p)));
        }
        if out.is_empty() {
            return Err(binaries::none_in_binaries(
                ap,
                &pattern,
                "USDT probes",
                bins.paths.len(),
            ));
        }
        Ok(out)
    }
}

/// Checks that `ap` has between `min` and `max` parts; empty parts are allowed (an empty
/// binary or provider means any, as in bpftrace's `usdt::provider:name`).
fn expect_parts_allowing_empty(
    ap: &AttachPoint,
    min: usize,
    max: usize,
    usage: &str,
) -> Result<(), Diagnostic> {
    let mut full = ap.clone();
    for p in &mut full.parts {
        if p.is_empty() {
            *p = "*".into();
        }
    }
    expect_parts(&full, min, max, usage)
}

/// The diagnostic of `pattern` (`NAME`, or `PROVIDER:NAME` when the attach point has `n` = 3
/// parts) matching no probe of the one binary `path` the attach point names.
fn unknown_probe(
    ap: &AttachPoint,
    path: &str,
    probes: &[UsdtProbe],
    pattern: &str,
    n: usize,
) -> Diagnostic {
    if has_wildcard(pattern) {
        return no_match(ap.span, pattern, &format!("USDT probes in {path}"));
    }
    let candidates: Vec<String> = probes
        .iter()
        .map(|p| match n {
            3 => format!("{}:{}", p.provider, p.name),
            _ => p.name.clone(),
        })
        .collect();
    let span = if n == 3 {
        ap.span
    } else {
        part_span(ap, n - 1)
    };
    unknown_with_suggestion(
        UNKNOWN_USDT,
        span,
        "USDT probe",
        pattern,
        candidates.iter().map(String::as_str),
    )
    .with_label(format!("no such USDT probe in {path}"))
}

impl ProviderBackend for Usdt {
    fn attach_spec(&self, attach: &ResolvedAttach) -> AttachSpec {
        AttachSpec::Uprobe {
            path: attach.parts.first().cloned().unwrap_or_default(),
            symbol: None,
            offset: attach.parts.get(3).and_then(|o| parse_u64(o)).unwrap_or(0),
            ret: false,
            ref_ctr_offset: attach.parts.get(4).and_then(|o| parse_u64(o)).unwrap_or(0),
        }
    }
    fn context_layout(&self, _: &ResolvedAttach) -> ContextLayout {
        ContextLayout::PtRegs
    }
}

#[cfg(test)]
mod tests {
    //! Resolution tests on a fixture binary with three probes.

    use super::*;
    use crate::catalog::providers::common::{BAD_ATTACH_POINT, NO_MATCH, UNKNOWN_BINARY};
    use crate::catalog::providers::fixture::{Fixture, ap};
    use sonde_lang::span::Span;

    /// The fixture kernel plus USDT notes for `/bin/bash`.
    struct Notes {
        semaphore: u64,
    }

    fn probe(provider: &str, name: &str, offset: u64, args: &str) -> UsdtProbe {
        UsdtProbe {
            provider: provider.into(),
            name: name.into(),
            pc: offset + 0x1000,
            base: 0x2036,
            semaphore: 0,
            semaphore_offset: 0,
            offset,
            args: args.into(),
        }
    }

    impl KernelInfo for Notes {
        fn resolve_binary(&self, target: &str) -> Option<String> {
            Fixture { kprobes: false }.resolve_binary(target)
        }
        fn elf_functions(&self, path: &str) -> Result<Vec<String>, String> {
            Fixture { kprobes: false }.elf_functions(path)
        }
        fn usdt_probes(&self, path: &str) -> Result<Vec<UsdtProbe>, String> {
            if path != "/bin/bash" {
                return Err(format!("{path}: no notes"));
            }
            let mut guarded = probe("bash", "guarded", 0x300, "");
            guarded.semaphore = self.semaphore;
            guarded.semaphore_offset = self.semaphore.saturating_sub(0x1000);
            Ok(vec![
                probe("sondetest", "work", 0x184, "-4@-4(%rbp) 8@-16(%rbp)"),
                probe("sondetest", "done", 0x1be, "-4@-36(%rbp)"),
                guarded,
            ])
        }
    }

    const K: Notes = Notes { semaphore: 0 };

    #[test]
    fn a_named_probe_becomes_a_uprobe_at_its_offset() {
        let r = Usdt
            .resolve(&ap("usdt:/bin/bash:sondetest:work"), &K)
            .unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].name, "usdt:/bin/bash:sondetest:work");
        assert_eq!(r[0].ctx.arg_regs, 2);
        assert!(r[0].ctx.user);
        assert_eq!(r[0].ctx.func.as_deref(), Some("sondetest:work"));
        assert_eq!(
            r[0].ctx.usdt_args.as_deref(),
            Some("-4@-4(%rbp) 8@-16(%rbp)")
        );
        assert_eq!(
            Usdt.attach_spec(&r[0]),
            AttachSpec::Uprobe {
                path: "/bin/bash".into(),
                symbol: None,
                offset: 0x184,
                ret: false,

                ref_ctr_offset: 0,
            }
        );
        assert_eq!(Usdt.attach_spec(&r[0]).section(), "uprobe");
        // The two-part form matches the name in any provider; `U` is an alias.
        let r = Usdt.resolve(&ap("U:/bin/bash:done"), &K).unwrap();
        assert_eq!(r[0].name, "usdt:/bin/bash:sondetest:done");
        assert_eq!(r[0].ctx.arg_regs, 1);
    }

    #[test]
    fn wildcards_expand_over_the_notes() {
        let r = Usdt.resolve(&ap("usdt:/bin/bash:sondetest:*"), &K).unwrap();
        let names: Vec<&str> = r.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "usdt:/bin/bash:sondetest:done",
                "usdt:/bin/bash:sondetest:work"
            ]
        );
        assert_ne!(r[0].ctx, r[1].ctx, "different specs, different programs");
        let e = Usdt.resolve(&ap("usdt:/bin/bash:nope*:*"), &K).unwrap_err();
        assert_eq!(e.code, NO_MATCH);
    }

    #[test]
    fn unknown_probes_and_binaries_are_diagnosed() {
        let e = Usdt
            .resolve(&ap("usdt:/bin/bash:sondetest:wrok"), &K)
            .unwrap_err();
        assert_eq!(e.code, UNKNOWN_USDT);
        assert_eq!(e.message, "unknown USDT probe `sondetest:wrok`");
        assert_eq!(e.help.as_deref(), Some("did you mean `sondetest:work`?"));
        let e = Usdt.resolve(&ap("usdt:/bin/bash:dnoe"), &K).unwrap_err();
        assert_eq!(e.code, UNKNOWN_USDT);
        assert_eq!(e.span, Span::new(15, 19));
        assert_eq!(
            Usdt.resolve(&ap("U:/nope:probe"), &K).unwrap_err().code,
            UNKNOWN_BINARY
        );
        let e = Usdt.resolve(&ap("U:libc:probe"), &K).unwrap_err();
        assert_eq!(e.code, UNKNOWN_BINARY);
        assert_eq!(
            e.message,
            format!(
                "cannot read the USDT probes of `{}`",
                crate::catalog::providers::fixture::LIBC
            )
        );
        assert_eq!(
            Usdt.resolve(&ap("usdt:/bin/bash"), &K).unwrap_err().code,
            BAD_ATTACH_POINT
        );
        assert_eq!(
            Usdt.resolve(&ap("usdt:/bin/*:x"), &K).unwrap_err().code,
            NO_MATCH
        );
    }

    #[test]
    fn a_semaphore_becomes_the_uprobe_reference_counter() {
        let k = Notes { semaphore: 0x4010 };
        let r = Usdt
            .resolve(&ap("usdt:/bin/bash:bash:guarded"), &k)
            .unwrap();
        assert_eq!(
            Usdt.attach_spec(&r[0]),
            AttachSpec::Uprobe {
                path: "/bin/bash".into(),
                symbol: None,
                offset: 0x300,
                ret: false,
                ref_ctr_offset: 0x3010,
            }
        );
    }
}
