//! The privilege check before kernel work (a kernel run, `-l`, the repl): said once, before
//! the kernel's facilities fail one by one.

use sonde_lang::diag::Diagnostic;
use sonde_lang::span::Span;

/// The error for a kernel run without the privileges it needs, or `None` when it has them.
pub fn lacks_privilege() -> Option<Diagnostic> {
    sonde_kernel::privilege::missing().map(|why| {
        Diagnostic::error("sonde::runtime::privilege", Span::default(), why)
            .with_help(sonde_kernel::privilege::HELP)
    })
}
