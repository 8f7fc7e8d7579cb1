//! Reading a script: its text (`-e`, a file, stdin) and the program parsed from it.

use crate::cli::Cli;
use sonde_lang::diag::Diagnostic;
use sonde_lang::span::Span;
use std::ffi::OsString;
use std::io::Read;
use std::path::Path;

/// Reads the script: `-e PROGRAM`, a file (opened by its name's bytes), or `-` for stdin.
/// Returns its display name, its text and the positional parameters.
pub fn script_source(cli: &Cli) -> Result<(String, String, Vec<OsString>), String> {
    if let Some(p) = &cli.program {
        return Ok(("-e".into(), p.clone(), cli.args.clone()));
    }
    let Some((file, rest)) = cli.args.split_first() else {
        return Err(
            "no program given: use -e 'PROGRAM', a script FILENAME, or - for stdin (see --help)"
                .into(),
        );
    };
    let text = if file == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| format!("cannot read stdin: {e}"))?;
        s
    } else {
        let bytes = std::fs::read(file)
            .map_err(|e| format!("cannot read script {}: {e}", Path::new(file).display()))?;
        String::from_utf8_lossy(&bytes).into_owned()
    };
    let name = if file == "-" {
        "stdin".to_string()
    } else {
        file.to_string_lossy().into_owned()
    };
    Ok((name, text, rest.to_vec()))
}

/// The error for a program without probes (empty, or only comments, definitions or config),
/// which bpftrace refuses too.
pub fn no_probes(src: &str) -> Diagnostic {
    let d = Diagnostic::error("sonde::parse::no_probes", Span::default(), "the program has no probes")
        .with_help("a program is one or more probes, e.g. `BEGIN { printf(\"hello\\n\"); }` or `tracepoint:syscalls:sys_enter_openat { @[comm] = count(); }`");
    if src.trim().is_empty() {
        d
    } else {
        Diagnostic {
            span: Span::new(0, src.trim_end().len()),
            ..d
        }
        .with_label("no probe in here")
    }
}
