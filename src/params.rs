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

/// Refuses named parameters the script does not read (with `getopt`), saying which it reads:
/// the usage error's exit code once said.
pub fn refuse_unknown(
    program: &sonde_lang::ast::Program,
    named: &[(String, String)],
) -> Result<(), ExitCode> {
    let unknown = sonde_compiler::catalog::functions::getopt::unknown_named(program, named);
    if !unknown.is_empty() {
        let known: Vec<String> = sonde_compiler::catalog::functions::getopt::uses(program)
            .iter()
            .map(|u| format!("--{}", u.name))
            .collect();
        eprintln!(
            "sonde: unexpected named parameter{} --{}; this script reads: {}",
            if unknown.len() > 1 { "s" } else { "" },
            unknown.join(", --"),
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        );
        return Err(ExitCode::from(EXIT_USAGE));
    }
    Ok(())
}
