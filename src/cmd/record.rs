//! `sonde record -o FILE`: a kernel run whose output is recorded, and the recorder it writes
//! with.

use crate::cmd::run::{Mode, main_with};
use crate::diagnostics::render;
use crate::exit::{EXIT_SCRIPT, EXIT_USAGE};
use sonde_lang::diag::Diagnostic;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::ExitCode;

/// `sonde record -o FILE [OPTIONS] SCRIPT`: runs a kernel script and records its output.
pub fn record(args: &[OsString]) -> ExitCode {
    let mut rest = Vec::new();
    let mut file: Option<OsString> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "-o" && file.is_none() {
            file = it.next().cloned();
        } else if let Some(f) = a
            .as_bytes()
            .strip_prefix(b"-o")
            .filter(|f| !f.is_empty() && file.is_none())
        {
            file = Some(OsStr::from_bytes(f).to_os_string());
        } else {
            rest.push(a.clone());
        }
    }
    let Some(file) = file else {
        eprintln!("sonde: usage: sonde record -o FILE [OPTIONS] SCRIPT | -e 'PROGRAM'");
        return ExitCode::from(EXIT_USAGE);
    };
    let argv = std::iter::once(OsString::from("sonde"))
        .chain(rest)
        .collect();
    main_with(argv, Mode::Record(file.into()))
}

/// The recorder of a `sonde record -o PATH` run of `compiled` (script `src`, named `name`),
/// or the exit code once the reason it cannot record is shown.
pub fn recorder(
    path: &Path,
    name: &str,
    src: &str,
    compiled: &sonde_compiler::compile::Compiled,
    checked: &sonde_lang::sema::Checked,
) -> Result<sonde_drivers::record_tap::Recorder, ExitCode> {
    if let Some(p) = sonde_kernel::iter::iterator_program(&compiled.script) {
        let d = Diagnostic::error(
            "sonde::record::iter",
            p.span,
            "an iterator's output cannot be recorded",
        )
        .with_label("iterator probe")
        .with_help("run the script without `record`: an iterator prints its text once and ends");
        render(&[d], name, src);
        return Err(ExitCode::from(EXIT_SCRIPT));
    }
    let header = sonde_drivers::record::Header {
        name: name.to_string(),
        source: src.to_string(),
        events: compiled.script.events.clone(),
        maps: compiled.script.maps.clone(),
        print_maps_on_exit: checked.config.print_maps_on_exit,
        str_trunc_trailer: checked.config.str_trunc_trailer.clone(),
    };
    match sonde_drivers::record_tap::Recorder::create(path, &header) {
        Ok(r) => Ok(r),
        Err(e) => {
            eprintln!("sonde: cannot write recording {}: {e}", path.display());
            Err(ExitCode::from(EXIT_SCRIPT))
        }
    }
}
