//! `sonde flamediff`: a differential flame graph of two folded profiles.

use crate::cli;
use crate::diagnostics::render;
use crate::exit::{EXIT_SCRIPT, clap_exit};
use clap::Parser;
use std::ffi::OsString;
use std::process::ExitCode;

/// `sonde flamediff BEFORE AFTER -o DIFF.svg`: a differential flame graph of two folded
/// profiles.
pub fn flamediff(args: &[OsString]) -> ExitCode {
    let cli = match cli::FlameDiffCli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => return clap_exit(&e),
    };
    let opts = sonde_present::pictures::flame::DiffOptions {
        normalize: cli.normalize,
        negate: cli.negate,
        title: cli.title,
    };
    match sonde_present::pictures::flame::flamediff(&cli.before, &cli.after, &cli.output, &opts) {
        Ok(()) => {
            eprintln!(
                "differential flame graph written to {}",
                cli.output.display()
            );
            ExitCode::SUCCESS
        }
        Err(d) => {
            render(&[d], "flamediff", "");
            ExitCode::from(EXIT_SCRIPT)
        }
    }
}
