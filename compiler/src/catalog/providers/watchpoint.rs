//! `watchpoint:ADDR:LEN:MODE` (alias `w`): a hardware breakpoint that fires when `LEN` bytes
//! at the absolute address `ADDR` are written (`w`), read or written (`rw`) or executed
//! (`x`), as bpftrace 0.26 defines it. With `-p PID` or `-c CMD` the address is one of that
//! process (a breakpoint on each of its threads, inherited by new ones); without, a kernel
//! address watched on every CPU. bpftrace 0.26 dropped the `watchpoint:FUNC+argN` form and
//! `asyncwatchpoint`: both are refused here too.

use super::common::{bad_attach_point, expect_parts, parse_u64, part_span};
use crate::catalog::ProviderBackend;
use crate::context::ContextLayout;
use crate::program::AttachSpec;
use sonde_lang::ast::AttachPoint;
use sonde_lang::catalog::{ProbeContext, Provider, ResolveOptions, ResolvedAttach};
use sonde_lang::diag::Diagnostic;
use sonde_lang::kernel::KernelInfo;

const USAGE: &str = "watchpoint:ADDRESS:LENGTH:MODE (LENGTH 1, 2, 4 or 8; MODE w, rw or x)";

/// The modes x86-64's debug registers support (Intel SDM vol. 3, 17.2.4), letters sorted:
/// there is no read-only data breakpoint.
pub const MODES: &[&str] = &["rw", "w", "x"];

/// The watchpoint provider.
pub struct Watchpoint;

/// The checked parts of a watchpoint attach point: address, length, sorted mode.
fn parse(ap: &AttachPoint) -> Result<(u64, u8, String), Diagnostic> {
    expect_parts(ap, 3, 3, USAGE)?;
    let addr_text = &ap.parts[0];
    if addr_text.contains('+') {
        return Err(bad_attach_point(
            part_span(ap, 0),
            format!(
                "`{addr_text}`: the `watchpoint:FUNCTION+argN` form is not supported (bpftrace 0.26 removed it)"
            ),
            USAGE,
        ));
    }
    let addr = match parse_u64(addr_text) {
        Some(0) => {
            return Err(bad_attach_point(
                part_span(ap, 0),
                "watchpoint must be attached to a non-zero address",
                USAGE,
            ));
        }
        Some(a) => a,
        None => {
            return Err(bad_attach_point(
                part_span(ap, 0),
                format!("invalid address `{addr_text}`: expected a number such as 0x10000000"),
                USAGE,
            ));
        }
    };
    let len = match parse_u64(&ap.parts[1]) {
        Some(l @ (1 | 2 | 4 | 8)) => l as u8,
        _ => {
            return Err(bad_attach_point(
                part_span(ap, 1),
                "watchpoint length must be one of (1,2,4,8)",
                USAGE,
            ));
        }
    };
    let mut mode: Vec<char> = ap.parts[2].chars().collect();
    mode.sort_unstable();
    let mode_span = part_span(ap, 2);
    if mode.is_empty() || mode.iter().any(|c| !matches!(c, 'r' | 'w' | 'x')) {
        return Err(bad_attach_point(
            mode_span,
            "watchpoint mode must be combination of (r,w,x)",
            USAGE,
        ));
    }
    if mode.windows(2).any(|w| w[0] == w[1]) {
        return Err(bad_attach_point(
            mode_span,
            "watchpoint modes may not be duplicated",
            USAGE,
        ));
    }
    let mode: String = mode.into_iter().collect();
    if !MODES.contains(&mode.as_str()) {
        return Err(Diagnostic::error(
            super::common::BAD_ATTACH_POINT,
            mode_span,
            format!("invalid watchpoint mode: {mode}"),
        )
        .with_label("not a mode of this CPU's debug registers")
        .with_help(format!("supported modes: {}", MODES.join(","))));
    }
    Ok((addr, len, mode))
}

impl Provider for Watchpoint {
    fn names(&self) -> &'static [&'static str] {
        &["watchpoint", "w"]
    }
    fn usage(&self) -> &'static str {
        USAGE
    }
    fn doc(&self) -> &'static str {
        "A hardware breakpoint on an address of the -p/-c process (or the kernel's): fires on write, read/write or execution"
    }
    fn resolve_with(
        &self,
        ap: &AttachPoint,
        _: &dyn KernelInfo,
        options: &ResolveOptions,
    ) -> Result<Vec<ResolvedAttach>, Diagnostic> {
        let (addr, len, mode) = parse(ap)?;
        // bpftrace's name: the traced program (when there is one), then the address in
        // decimal.
        let target = options
            .watch_target
            .as_ref()
            .map_or_else(String::new, |t| format!("{t}:"));
        let mut ctx = ProbeContext::bare("watchpoint");
        ctx.user = options.watch_target.is_some();
        Ok(vec![ResolvedAttach {
            name: format!("watchpoint:{target}{addr}:{len}:{mode}"),
            parts: vec![addr.to_string(), len.to_string(), mode],
            span: ap.span,
            ctx,
        }])
    }
}

impl ProviderBackend for Watchpoint {
    fn attach_spec(&self, attach: &ResolvedAttach) -> AttachSpec {
        let part = |i: usize| attach.parts.get(i).map_or("", String::as_str);
        AttachSpec::Watchpoint {
            addr: part(0).parse().unwrap_or(0),
            len: part(1).parse().unwrap_or(8),
            mode: part(2).to_string(),
        }
    }
    fn context_layout(&self, _: &ResolvedAttach) -> ContextLayout {
        ContextLayout::None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::providers::common::BAD_ATTACH_POINT;
    use crate::catalog::providers::fixture::ap;
    use sonde_lang::kernel::NoKernel;

    #[test]
    fn absolute_address_in_a_process() {
        let options = ResolveOptions {
            watch_target: Some("/proc/42/exe".into()),
            ..ResolveOptions::default()
        };
        let r = Watchpoint
            .resolve_with(&ap("watchpoint:0x10000000:8:wr"), &NoKernel, &options)
            .unwrap();
        assert_eq!(r[0].name, "watchpoint:/proc/42/exe:268435456:8:rw");
        assert!(r[0].ctx.user);
        let spec = Watchpoint.attach_spec(&r[0]);
        assert_eq!(
            spec,
            AttachSpec::Watchpoint {
                addr: 0x1000_0000,
                len: 8,
                mode: "rw".into()
            }
        );
        assert_eq!(spec.section(), "perf_event");
    }

    #[test]
    fn kernel_address_without_a_process() {
        let r = Watchpoint
            .resolve(&ap("w:0xffffffff82a0b000:4:w"), &NoKernel)
            .unwrap();
        assert_eq!(r[0].name, "watchpoint:18446744071606153216:4:w");
        assert!(!r[0].ctx.user);
        let x = Watchpoint.resolve(&ap("w:4096:1:x"), &NoKernel).unwrap();
        assert_eq!(x[0].name, "watchpoint:4096:1:x");
    }

    #[test]
    fn bpftrace_refusals() {
        let msg = |point: &str| {
            let d = Watchpoint.resolve(&ap(point), &NoKernel).unwrap_err();
            assert_eq!(d.code, BAD_ATTACH_POINT);
            d.message
        };
        assert_eq!(
            msg("watchpoint:0:8:w"),
            "watchpoint must be attached to a non-zero address"
        );
        assert_eq!(
            msg("watchpoint:0x1000:3:w"),
            "watchpoint length must be one of (1,2,4,8)"
        );
        assert_eq!(
            msg("watchpoint:0x1000:8:q"),
            "watchpoint mode must be combination of (r,w,x)"
        );
        assert_eq!(
            msg("watchpoint:0x1000:8:ww"),
            "watchpoint modes may not be duplicated"
        );
        assert_eq!(msg("watchpoint:0x1000:8:r"), "invalid watchpoint mode: r");
        assert_eq!(
            msg("watchpoint:0x1000:8:rwx"),
            "invalid watchpoint mode: rwx"
        );
        assert!(msg("watchpoint:increment+arg0:4:w").contains("removed"));
        assert!(msg("watchpoint:0x1000:8").contains("takes 3"));
        let d = Watchpoint
            .resolve(&ap("watchpoint:0x1000:8:r"), &NoKernel)
            .unwrap_err();
        assert_eq!(d.help.as_deref(), Some("supported modes: rw,w,x"));
    }
}
