//! `sonde -l`: listing probes (by pattern, or those of a program) and kernel types.

use std::path::Path;
use std::process::ExitCode;

use sonde_compiler::catalog::SondeCatalog;
use sonde_lang::diag::Diagnostic;
use sonde_lang::sema::{CheckOptions, check};
use sonde_system::kernel_info::SystemKernel;

use crate::cli::Cli;
use crate::diagnostics::render;
use crate::exit::{EXIT_SCRIPT, EXIT_USAGE, write_stdout};
use crate::privilege::lacks_privilege;

/// `-l`: the probes matching a pattern (several separated by commas; with `-p`, also those
/// of the process), kernel types (`struct x`, `union x`, `enum x`), or the probes of a
/// program (`-e`, or a script file given in place of the pattern).
pub fn list(cli: &Cli) -> ExitCode {
    if let Some(src) = &cli.program {
        return list_program(cli, "-e", src);
    }
    let pattern = match cli.args.first().map(|p| p.to_str()) {
        None => None,
        Some(Some(p)) => Some(p),
        Some(None) => {
            eprintln!("sonde: the -l pattern is not valid UTF-8 text");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    if let Some(file) = pattern.filter(|p| Path::new(p).is_file()) {
        return match std::fs::read(file) {
            Ok(bytes) => list_program(cli, file, &String::from_utf8_lossy(&bytes)),
            Err(e) => {
                eprintln!(
                    "sonde: failed to open file '{file}': {}",
                    sonde_system::user_files::os_reason(&e)
                );
                ExitCode::from(EXIT_SCRIPT)
            }
        };
    }
    if let Some(p) = pattern.filter(|p| p.contains('.') && !p.contains([':', '*'])) {
        sonde_system::warnings::warn(&format!(
            "It appears that '{p}' is a filename but the file does not exist. Treating '{p}' as a search pattern."
        ));
    }
    let parts: Vec<Option<&str>> = match pattern {
        None => vec![None],
        Some(p) => p.split(',').map(|s| Some(s.trim())).collect(),
    };
    let kernel = SystemKernel::new().with_debuginfo(&cli.debuginfo);
    let types = |p: &Option<&str>| p.is_some_and(sonde_drivers::list::is_type_pattern);
    // Uprobe, USDT and type listings read files; everything else reads tracefs and the kernel.
    if parts
        .iter()
        .any(|p| !types(p) && sonde_drivers::list::reads_kernel(*p))
        && let Some(d) = lacks_privilege()
    {
        render(&[d], "-l", "");
        return ExitCode::from(EXIT_SCRIPT);
    }
    let mut text = String::new();
    for part in &parts {
        let listed = match part {
            Some(p) if types(part) => sonde_drivers::list::list_types(&kernel, p, cli.verbose),
            _ => sonde_drivers::list::list_probes_for(&kernel, *part, cli.verbose, cli.pid),
        };
        match listed {
            Ok(lines) => {
                for line in lines {
                    text += &line;
                    text.push('\n');
                }
            }
            Err(e) => {
                // What was listed before the error is printed first.
                let _ = write_stdout(text.as_bytes());
                eprintln!("sonde: {e}");
                return ExitCode::from(EXIT_SCRIPT);
            }
        }
    }
    write_stdout(text.as_bytes())
}

/// `-l` with a program (`-l -e 'PROGRAM'`, or `-l FILE`): the probes it would attach,
/// wildcards expanded, one per line, in program order, as bpftrace 0.26 lists them: BEGIN and
/// END attach nowhere and are left out, timers and perf events show no period.
fn list_program(cli: &Cli, name: &str, src: &str) -> ExitCode {
    let program = match sonde_lang::syntax::parse(src) {
        Ok(p) => p,
        Err(diags) => {
            render(&diags, name, src);
            return ExitCode::from(EXIT_SCRIPT);
        }
    };
    let kernel = SystemKernel::new()
        .with_include_dirs(cli.include_dirs.clone())
        .with_script_dir(crate::cmd::run::script_dir(cli, name))
        .with_debuginfo(&cli.debuginfo)
        .with_target_pid(cli.pid);
    let options = CheckOptions {
        unsafe_allowed: cli.unsafe_,
        ..CheckOptions::default()
    };
    let (checked, diags) = check(&program, &SondeCatalog, &kernel, &options);
    render(&diags, name, src);
    if diags.iter().any(Diagnostic::is_error) {
        return ExitCode::from(EXIT_SCRIPT);
    }
    // BEGIN and END attach nowhere: bpftrace 0.26 leaves them out.
    let mut text = String::new();
    for instance in checked.probes.iter().flat_map(|p| &p.instances) {
        if matches!(instance.attach.name.as_str(), "BEGIN" | "END") {
            continue;
        }
        text.push_str(&listed_name(&instance.attach.name));
        text.push('\n');
    }
    write_stdout(text.as_bytes())
}

/// A probe of a program as bpftrace lists it: timers and perf events without their period
/// (`interval:s:`, `hardware:cache-misses:`), others by their full name.
fn listed_name(name: &str) -> String {
    let mut parts = name.splitn(3, ':');
    match (parts.next(), parts.next()) {
        (Some(p @ ("interval" | "profile" | "hardware" | "software")), Some(unit)) => {
            format!("{p}:{unit}:")
        }
        _ => name.to_string(),
    }
}
