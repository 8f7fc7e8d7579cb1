//! What `--dump` prints that is built here rather than in the library crates: the IR.

use crate::exit::write_stdout;
use std::process::ExitCode;

/// Prints the IR of every program and callback.
pub fn print_ir(compiled: &sonde_compiler::compile::Compiled, src: &str) -> ExitCode {
    let mut text = String::new();
    let lines = sonde_compiler::ir::SourceLines::new(src);
    for lowered in &compiled.ir {
        for f in std::iter::once(&lowered.main).chain(&lowered.callbacks) {
            text += &sonde_compiler::ir::print_function(f, Some(&lines));
            text.push('\n');
        }
    }
    write_stdout(text.as_bytes())
}
