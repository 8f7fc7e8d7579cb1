//! Registry of builtin variables (`pid`, `comm`, `args`, `retval`, ...), one unit struct per
//! builtin in themed files: `process`, `time`, `probe` (context-dependent values) and `stack`.

// `Diagnostic` is the contracts' error type; boxing it would only move the allocation.
#![allow(clippy::result_large_err)]

use super::BuiltinBackend;
use sonde_lang::catalog::ProbeContext;
use sonde_lang::diag::Diagnostic;
use sonde_lang::span::Span;

pub mod ctx;
pub mod debug_args;
pub mod delta;
pub mod input;
pub mod probe;
pub mod process;
pub mod stack;
pub mod task;
pub mod time;
pub mod usdt_arg;

/// Code of a builtin used in a probe type that does not provide it.
pub const BUILTIN_UNAVAILABLE: &str = "sonde::sema::builtin_unavailable";

/// The diagnostic for builtin `name` used where the probe context lacks it.
pub fn unavailable(
    name: &str,
    ctx: &ProbeContext,
    span: Span,
    help: impl Into<String>,
) -> Diagnostic {
    Diagnostic::error(
        BUILTIN_UNAVAILABLE,
        span,
        format!("`{name}` is not available in `{}` probes", ctx.provider),
    )
    .with_label(format!("`{name}` has no value here"))
    .with_help(help)
}

/// Every entry of this registry.
pub static ALL: &[&'static dyn BuiltinBackend] = &[
    &process::Pid,
    &process::Tid,
    &process::Uid,
    &process::Gid,
    &process::Comm,
    &process::Cpu,
    &process::Ncpus,
    &process::DefaultStrLength,
    &process::Curtask,
    &process::Cgroup,
    &process::Rand,
    &process::Username,
    &process::Cpid,
    &task::Ppid,
    &task::Pcomm,
    &task::LeaderTid,
    &task::LeaderComm,
    &task::Numaid,
    &task::Usermode,
    &task::HasCpid,
    &time::Nsecs,
    &time::Elapsed,
    &time::Jiffies,
    &delta::Delta,
    &probe::Probe,
    &probe::Func,
    &probe::Probetype,
    &probe::Args,
    &ctx::Ctx,
    &probe::ARG0,
    &probe::ARG1,
    &probe::ARG2,
    &probe::ARG3,
    &probe::ARG4,
    &probe::ARG5,
    &probe::ARG6,
    &probe::ARG7,
    &probe::ARG8,
    &probe::ARG9,
    &probe::ARG10,
    &probe::ARG11,
    &probe::Retval,
    &stack::Kstack,
    &stack::Ustack,
    &input::Line,
    &input::Nf,
    &input::Nr,
];
