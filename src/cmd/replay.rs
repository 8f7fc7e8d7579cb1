//! `sonde replay FILE`: a recording printed again, or a userspace script run on its events.

use crate::cli::Cli;
use crate::cmd::run::main_with;
use crate::exit::{EXIT_SCRIPT, EXIT_USAGE, clap_exit};
use crate::mode::Mode;
use crate::post;
use clap::Parser;
use std::ffi::OsString;
use std::path::Path;
use std::process::ExitCode;

/// `sonde replay FILE [OPTIONS] [SCRIPT]`: prints a recording again, or runs a userspace
/// script's `replay` probes on its events.
pub fn replay(args: &[OsString]) -> ExitCode {
    let Some((file, rest)) = args.split_first() else {
        eprintln!("sonde: usage: sonde replay FILE [-f json] [-o OUT] [SCRIPT | -e 'PROGRAM']");
        return ExitCode::from(EXIT_USAGE);
    };
    let shown = Path::new(file).display();
    let bytes = match std::fs::read(file) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("sonde: cannot read recording {shown}: {e}");
            return ExitCode::from(EXIT_SCRIPT);
        }
    };
    let recording = match sonde_drivers::record::read_recording(&bytes) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("sonde: {shown} is not a sonde recording I can read: {e}");
            return ExitCode::from(EXIT_SCRIPT);
        }
    };
    sonde_system::warnings::set_script(&recording.header.name, &recording.header.source);
    let argv: Vec<OsString> = std::iter::once(OsString::from("sonde"))
        .chain(rest.iter().cloned())
        .collect();
    let cli = match Cli::try_parse_from(&argv) {
        Ok(c) => c,
        Err(e) => return clap_exit(&e),
    };
    if cli.program.is_some() || !cli.args.is_empty() {
        return main_with(argv, Mode::Replay(recording));
    }
    let opts = sonde_session::OutputOptions {
        unsafe_allowed: false,
        ..cli.output_options()
    };
    let Ok(loaded) = post::load(&cli, None) else {
        return ExitCode::from(EXIT_SCRIPT);
    };
    let (post_src, post) = post::split(loaded);
    match sonde_drivers::replay::replay_print(&recording, &opts, cli.quiet, post) {
        Ok(code) => ExitCode::from(code),
        Err(d) => {
            post::render_run(&[d], &shown.to_string(), "", post_src.as_ref());
            ExitCode::from(EXIT_SCRIPT)
        }
    }
}
