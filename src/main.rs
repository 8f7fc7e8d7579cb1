//! The `sonde` binary: a dispatcher over its commands (`cmd`), with the stages they share
//! (reading a script, checking it, choosing its engine), diagnostics rendering and exit
//! codes. Everything else lives in the library crates.

mod args;
mod check;
mod cli;
mod cmd;
mod diagnostics;
mod dump;
mod engine;
mod exit;
mod imports;
mod metrics_args;
mod mode;
mod params;
mod post;
mod privilege;
mod probe_filter;
mod recording;
mod script;
mod segments;
mod tools;

use exit::write_stdout;
use mode::Mode;
use std::ffi::OsString;
use std::process::ExitCode;

fn main() -> ExitCode {
    // Arguments are bytes: paths (the script, -o) are used as given; text (the program,
    // parameters, patterns) must be UTF-8 and is refused with a message otherwise.
    let argv: Vec<OsString> = std::env::args_os().collect();
    // Re-executed as the IFUNC resolution helper, this ends here; otherwise it makes sonde
    // available as that helper (see sonde_system::uprobe_functions).
    sonde_system::uprobe_functions::serve_helper(&argv);
    match argv.get(1).and_then(|a| a.to_str()) {
        Some("tools") => return write_stdout(tools::listing().as_bytes()),
        Some("tool") => {
            return match args::utf8_args(&argv[2..], "argument") {
                Ok(args) => cmd::tool::tool(&args),
                Err(code) => code,
            };
        }
        Some("__alloc-harness") => return cmd::allocreplay::harness(&argv[2..]),
        Some("__allocreplay-feed") => {
            return match args::utf8_args(&argv[2..], "argument") {
                Ok(args) => cmd::allocreplay::feed(&args),
                Err(code) => code,
            };
        }
        Some("record") => return cmd::record::record(&argv[2..]),
        Some("replay") => return cmd::replay::replay(&argv[2..]),
        Some("flamediff") => return cmd::flamediff::flamediff(&argv[1..]),
        Some("man") => {
            return match args::utf8_args(&argv[2..], "argument") {
                Ok(args) => cmd::docs::man(&args),
                Err(code) => code,
            };
        }
        Some("completions") => {
            return match args::utf8_args(&argv[2..], "argument") {
                Ok(args) => cmd::docs::completions(&args),
                Err(code) => code,
            };
        }
        Some("serve") => {
            return match args::utf8_args(&argv[2..], "argument") {
                Ok(args) => cmd::serve::serve(&args),
                Err(code) => code,
            };
        }
        Some("repl") => {
            return match args::utf8_args(&argv[2..], "argument") {
                Ok(args) => cmd::repl::repl(&args),
                Err(code) => code,
            };
        }
        _ => {}
    }
    cmd::run::main_with(argv, Mode::Live)
}
