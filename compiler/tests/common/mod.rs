//! The whole pure pipeline (parse → check → compile) with the real catalog and the fixture
//! kernel, for the compiler's integration tests.

use sonde_compiler::catalog::SondeCatalog;
use sonde_compiler::compile::{Compiled, Engine, compile_for};
use sonde_compiler::options::CompileOptions;
use sonde_lang::sema::{CheckOptions, check};
use sonde_lang::syntax::parse;
use sonde_lang::testing::FixtureKernel;

/// Compiles `src` for `engine` (for 2 CPUs): the compiled script, or the code of the first
/// error (check or compile).
pub fn compiled(src: &str, engine: Engine) -> Result<Compiled, &'static str> {
    let program = parse(src).unwrap_or_else(|d| panic!("{src}: {d:#?}"));
    let (checked, diags) = check(
        &program,
        &SondeCatalog,
        &FixtureKernel,
        &CheckOptions::default(),
    );
    if let Some(d) = diags.iter().find(|d| d.is_error()) {
        return Err(d.code);
    }
    let copts = CompileOptions {
        ncpus: 2,
        ..Default::default()
    };
    compile_for(&program, &checked, &FixtureKernel, &copts, engine).map_err(|d| d[0].code)
}
