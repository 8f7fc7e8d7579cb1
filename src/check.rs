//! Checking a script: the check's options from the command line, and the check itself with
//! its diagnostics shown.

use crate::cli::Cli;
use crate::diagnostics::render;
use crate::exit::EXIT_SCRIPT;
use sonde_compiler::catalog::SondeCatalog;
use sonde_lang::diag::Diagnostic;
use sonde_lang::sema::{CheckOptions, check};
use sonde_system::kernel_info::SystemKernel;
use std::process::ExitCode;

/// The check's options: the parameters, `--unsafe`, the `BPFTRACE_*` settings of the
/// environment and the program watchpoints watch.
pub fn options(
    cli: &Cli,
    system: &SystemKernel,
    positional: &[String],
    named: &[(String, String)],
) -> CheckOptions {
    CheckOptions {
        positional: positional.to_vec(),
        unsafe_allowed: cli.unsafe_,
        named: named.to_vec(),
        env_config: std::env::vars()
            .filter(|(k, _)| k.starts_with("BPFTRACE_"))
            .collect(),
        watch_target: watch_target(cli, system),
        wide_map_strings: false,
    }
}

/// Checks `program` (of script `src`, named `name`) against `kernel` and shows the
/// diagnostics. On an error, the exit code; for a script bound for the kernel
/// (`kernel_bound`) run without privileges, with a note that this may be why.
pub fn program(
    name: &str,
    src: &str,
    program: &sonde_lang::ast::Program,
    kernel: &dyn sonde_lang::kernel::KernelInfo,
    options: &CheckOptions,
    kernel_bound: bool,
) -> Result<sonde_lang::sema::Checked, ExitCode> {
    sonde_system::warnings::set_script(name, src);
    let (checked, diags) = check(program, &SondeCatalog, kernel, options);
    render(&diags, name, src);
    if diags.iter().any(Diagnostic::is_error) {
        if kernel_bound && let Some(why) = sonde_kernel::privilege::missing() {
            eprintln!(
                "sonde: note: {why}; what sonde could not read of the kernel looks unknown above"
            );
        }
        return Err(ExitCode::from(EXIT_SCRIPT));
    }
    Ok(checked)
}

/// The program watchpoints watch and are named after: `/proc/PID/exe` for `-p PID`, the
/// path of the command of `-c CMD` (as bpftrace names them).
fn watch_target(cli: &Cli, system: &SystemKernel) -> Option<String> {
    if let Some(pid) = cli.pid {
        return Some(format!("/proc/{pid}/exe"));
    }
    let program = cli.cmd.as_deref()?.split_whitespace().next()?;
    Some(
        sonde_lang::kernel::KernelInfo::resolve_binary(system, program)
            .unwrap_or_else(|| program.to_string()),
    )
}
