//! Reading a script: its text (`-e`, a file, stdin) and the program parsed from it, with
//! its imports and `--include` files.

use crate::cli::Cli;
use crate::diagnostics::render;
use crate::exit::{EXIT_SCRIPT, EXIT_USAGE};
use crate::imports;
use sonde_lang::diag::Diagnostic;
use sonde_lang::span::Span;
use sonde_system::user_files::{self, Pipes};
use std::borrow::Cow;
use std::ffi::OsString;
use std::io::Read;
use std::path::Path;
use std::process::ExitCode;

/// Reads the script: `-e PROGRAM`, a file (opened by its name's bytes), or `-` for stdin.
/// Returns its display name, its text and the positional parameters; or, once the error is
/// shown (a script that is not UTF-8 gets a diagnostic naming its bad bytes), the exit code.
pub fn script_source(cli: &Cli) -> Result<(String, String, Vec<OsString>), ExitCode> {
    if let Some(p) = &cli.program {
        return Ok(("-e".into(), p.clone(), cli.args.clone()));
    }
    let usage = |msg: String| {
        eprintln!("sonde: {msg}");
        ExitCode::from(EXIT_USAGE)
    };
    let Some((file, rest)) = cli.args.split_first() else {
        return Err(usage(
            "no program given: use -e 'PROGRAM', a script FILENAME, or - for stdin (see --help)"
                .into(),
        ));
    };
    let bytes = if file == "-" {
        let mut b = Vec::new();
        std::io::stdin()
            .read_to_end(&mut b)
            .map_err(|e| usage(format!("cannot read stdin: {e}")))?;
        b
    } else {
        user_files::read(Path::new(file), user_files::MAX_SCRIPT, Pipes::Read).map_err(|e| {
            usage(format!(
                "failed to open file '{}': {}",
                Path::new(file).display(),
                user_files::os_reason(&e)
            ))
        })?
    };
    let name = if file == "-" {
        "stdin".to_string()
    } else {
        file.to_string_lossy().into_owned()
    };
    match sonde_lang::syntax::encoding::decode(bytes) {
        Ok(text) => Ok((name, text, rest.to_vec())),
        Err((text, d)) => {
            render(&[d], &name, &text);
            Err(ExitCode::from(EXIT_SCRIPT))
        }
    }
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

/// Parses script `src` (named `name`) into its program: the files it imports joined to its
/// text, `--include` files added, refused without probes. Returns the program and the text
/// it was parsed from (the script's, or with its imports the combined one), or the exit
/// code once the errors are shown.
pub fn parse<'a>(
    cli: &Cli,
    name: &str,
    src: &'a str,
) -> Result<(sonde_lang::ast::Program, Cow<'a, str>), ExitCode> {
    let mut program = match sonde_lang::syntax::parse(src) {
        Ok(p) => p,
        Err(diags) => {
            render(&diags, name, src);
            return Err(ExitCode::from(EXIT_SCRIPT));
        }
    };
    // `import "file";`: the imported files join the script's text (diagnostics about them
    // are shown in their own files).
    let combined = match imports::combine(name, src, &program) {
        Ok(c) => c,
        Err(diags) => {
            render(&diags, name, src);
            return Err(ExitCode::from(EXIT_SCRIPT));
        }
    };
    let src = match combined {
        Some(all) => {
            program = match sonde_lang::syntax::parse(&all) {
                Ok(p) => p,
                Err(diags) => {
                    render(&diags, name, &all);
                    return Err(ExitCode::from(EXIT_SCRIPT));
                }
            };
            Cow::Owned(all)
        }
        None => Cow::Borrowed(src),
    };
    // `--include FILE`: as an `#include "FILE"` line of the script (clang's `-include`: the
    // working directory first).
    program
        .c_defs
        .extend(cli.include.iter().map(|f| sonde_lang::ast::CDef {
            kind: sonde_lang::ast::CDefKind::Include,
            name: f.trim_matches(['<', '>', '"']).to_string(),
            value: format!("\"{}\"", f.trim_matches(['<', '>', '"'])),
            fields: Vec::new(),
            enumerators: Vec::new(),
            span: Span::default(),
            packed: false,
        }));
    if program.probes.is_empty() {
        render(&[no_probes(&src)], name, &src);
        return Err(ExitCode::from(EXIT_SCRIPT));
    }
    Ok((program, src))
}
