//! Which engine runs a script: the kernel (BPF), or the userspace engine for `input` and
//! `replay` probes and `--engine jit`.

use sonde_compiler::catalog::SondeCatalog;

/// True when the program has an `input` or `replay` probe (it runs in the userspace engine,
/// which needs no privilege).
pub fn has_userspace_probe(program: &sonde_lang::ast::Program) -> bool {
    userspace_point(program).is_some()
}

/// The program's first attach point of a userspace probe (`input`, `replay`), if any.
pub fn userspace_point(
    program: &sonde_lang::ast::Program,
) -> Option<&sonde_lang::ast::AttachPoint> {
    program
        .probes
        .iter()
        .flat_map(|p| &p.attach_points)
        .find(|ap| is_userspace(ap))
}

/// True for an attach point of a userspace probe type.
pub fn is_userspace(ap: &sonde_lang::ast::AttachPoint) -> bool {
    SondeCatalog
        .provider_backend(&ap.provider)
        .is_some_and(|p| p.userspace())
}
