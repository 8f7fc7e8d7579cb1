//! Which engine runs a script: the kernel (BPF), or the userspace engine for `input` and
//! `replay` probes and `--engine jit`.

use crate::cli::{self, Cli};
use sonde_compiler::catalog::SondeCatalog;
use sonde_compiler::compile::Engine;

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

/// True when the script runs in the kernel: not on a recording (`replay`), not with
/// `--engine jit`, and without userspace probes.
pub fn kernel_bound(cli: &Cli, program: &sonde_lang::ast::Program, replay: bool) -> bool {
    !replay && cli.engine != Some(cli::EngineArg::Jit) && !has_userspace_probe(program)
}

/// The engine `--engine` asks for; for a run on a recording (`replay`), the userspace one
/// unless it asks.
pub fn requested(cli: &Cli, replay: bool) -> Option<Engine> {
    cli.engine
        .map(|e| match e {
            cli::EngineArg::Bpf => Engine::Bpf,
            cli::EngineArg::Jit => Engine::Jit,
        })
        .or(replay.then_some(Engine::Jit))
}
