//! Diagnostics every kernel mechanism may give: a refusal for want of privileges, and an
//! error with its causes as one line.

use sonde_lang::diag::Diagnostic;
use sonde_lang::span::Span;

/// The diagnostic for a kernel refusal due to missing privileges.
pub fn permission_denied(span: Span, what: &str) -> Diagnostic {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let help = if root {
        "the kernel refused even for root: check kernel.unprivileged_bpf_disabled, lockdown \
         mode and any LSM (SELinux, AppArmor) policy"
    } else {
        "run sonde as root (or with CAP_BPF, CAP_PERFMON and CAP_SYS_RESOURCE)"
    };
    Diagnostic::error(
        "sonde::load::permission",
        span,
        format!("permission denied while {what}"),
    )
    .with_label("the kernel refused this")
    .with_help(help)
}

/// `e` and its sources, joined with `: `.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
