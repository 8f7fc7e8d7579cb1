//! The recorder of a `sonde record` run: the recording's header, or why the script cannot be
//! recorded.

use crate::diagnostics::render;
use crate::exit::EXIT_SCRIPT;
use sonde_lang::diag::Diagnostic;
use std::path::Path;
use std::process::ExitCode;

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
