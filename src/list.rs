//! `sonde -l`: listing probes (by pattern, or those of a program) and kernel types.

use std::process::ExitCode;

use sonde_compiler::catalog::SondeCatalog;
use sonde_lang::diag::Diagnostic;
use sonde_lang::sema::{CheckOptions, check};
use sonde_runtime::kernel_info::SystemKernel;

use crate::cli::Cli;
use crate::{EXIT_SCRIPT, EXIT_USAGE, lacks_privilege, render, write_stdout};

/// `-l`: the probes matching a pattern (or of a program, with `-e`), or a kernel type.
pub fn list(cli: &Cli) -> ExitCode {
    if cli.program.is_some() {
        return list_program(cli);
    }
    let pattern = match cli.args.first().map(|p| p.to_str()) {
        None => None,
        Some(Some(p)) => Some(p),
        Some(None) => {
            eprintln!("sonde: the -l pattern is not valid UTF-8 text");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let kernel = SystemKernel::new();
    if let Some(ty) = pattern.filter(|p| p.starts_with("struct ") || p.starts_with("union ")) {
        return match sonde_runtime::list::describe_type(&kernel, ty) {
            Ok(text) => write_stdout(format!("{text}\n").as_bytes()),
            Err(e) => {
                eprintln!("sonde: {e}");
                ExitCode::from(EXIT_SCRIPT)
            }
        };
    }
    // Uprobe and USDT listings read binaries; everything else reads tracefs and the kernel.
    if sonde_runtime::list::reads_kernel(pattern)
        && let Some(d) = lacks_privilege()
    {
        render(&[d], "-l", "");
        return ExitCode::from(EXIT_SCRIPT);
    }
    match sonde_runtime::list::list_probes(&kernel, pattern, cli.verbose) {
        Ok(lines) => {
            let mut text = lines.join("\n");
            if !text.is_empty() {
                text.push('\n');
            }
            write_stdout(text.as_bytes())
        }
        Err(e) => {
            eprintln!("sonde: {e}");
            ExitCode::from(EXIT_SCRIPT)
        }
    }
}

/// `-l` with a program (`-l -e 'PROGRAM'`): the probes it would attach, wildcards expanded,
/// one per line, in program order.
fn list_program(cli: &Cli) -> ExitCode {
    let src = cli.program.as_deref().unwrap_or_default();
    let program = match sonde_lang::syntax::parse(src) {
        Ok(p) => p,
        Err(diags) => {
            render(&diags, "-e", src);
            return ExitCode::from(EXIT_SCRIPT);
        }
    };
    let kernel = SystemKernel::new().with_include_dirs(cli.include_dirs.clone());
    let options = CheckOptions {
        unsafe_allowed: cli.unsafe_,
        ..CheckOptions::default()
    };
    let (checked, diags) = check(&program, &SondeCatalog, &kernel, &options);
    render(&diags, "-e", src);
    if diags.iter().any(Diagnostic::is_error) {
        return ExitCode::from(EXIT_SCRIPT);
    }
    let mut text = String::new();
    for instance in checked.probes.iter().flat_map(|p| &p.instances) {
        text.push_str(&instance.attach.name);
        text.push('\n');
    }
    write_stdout(text.as_bytes())
}
