//! Script parameters: positional (`$1`) and named (`--name[=value]`, read by `getopt`).

use crate::exit::EXIT_USAGE;
use std::process::ExitCode;

/// Separates named parameters (`--name[=value]`, given after `--`) from positional ones.
pub fn split_named(args: Vec<String>) -> (Vec<(String, String)>, Vec<String>) {
    let mut named = Vec::new();
    let mut positional = Vec::new();
    for a in args {
        match a.strip_prefix("--").filter(|n| !n.is_empty()) {
            Some(n) => {
                let (k, v) = n.split_once('=').unwrap_or((n, ""));
                named.push((k.to_string(), v.to_string()));
            }
            None => positional.push(a),
        }
    }
    (named, positional)
}

/// Refuses named parameters the script does not read (with `getopt`) in bpftrace's words
/// (`ERROR: unexpected program command line options: --x`, then a `HINT:` naming those it
/// reads), with the usage error's exit code. `-- --help` alone lists the parameters the
/// script reads, with their descriptions, and ends the run with success.
pub fn refuse_unknown(
    program: &sonde_lang::ast::Program,
    named: &[(String, String)],
) -> Result<(), ExitCode> {
    let unknown = sonde_compiler::catalog::functions::getopt::unknown_named(program, named);
    if unknown.is_empty() {
        return Ok(());
    }
    let help = unknown.contains(&"help");
    let errors: Vec<&str> = unknown.into_iter().filter(|n| *n != "help").collect();
    if !errors.is_empty() {
        eprintln!(
            "ERROR: unexpected program command line options: --{}",
            errors.join(", --")
        );
    }
    eprintln!(
        "HINT: {}",
        expected_hint(program, help && errors.is_empty())
    );
    Err(ExitCode::from(if errors.is_empty() {
        0
    } else {
        EXIT_USAGE
    }))
}

/// The parameters the script reads: `--a, --b`, or one per line with their descriptions
/// (`help`).
fn expected_hint(program: &sonde_lang::ast::Program, help: bool) -> String {
    let mut seen: Vec<(String, Option<String>)> = Vec::new();
    for u in sonde_compiler::catalog::functions::getopt::uses(program) {
        match seen.iter_mut().find(|(n, _)| *n == u.name) {
            Some((_, d)) => *d = d.take().or(u.description),
            None => seen.push((u.name, u.description)),
        }
    }
    if seen.is_empty() {
        return "no custom program options defined.".to_string();
    }
    let entries: Vec<String> = seen
        .into_iter()
        .map(|(n, d)| match d.filter(|_| help) {
            Some(d) if !d.is_empty() => format!("--{n}: {d}"),
            _ => format!("--{n}"),
        })
        .collect();
    if help {
        format!("expected program options:\n{}", entries.join("\n"))
    } else {
        format!("expected program options: {}", entries.join(", "))
    }
}
