//! `sonde replay FILE`: a recording printed again, or a userspace script run on its events.
//!
//! The file must be a regular file that starts as a recording does (checked on its first
//! bytes). Printed again, it is read entry by entry, twice: once to check it whole (a
//! corrupt file prints nothing but its one-line error), once to print it; a script's run
//! reads it whole. A recording cut before its end (the recording run was killed) replays up
//! to its last whole entry, then says where it was cut, with exit status 1.

use crate::cli::Cli;
use crate::cmd::run::main_with;
use crate::exit::{EXIT_SCRIPT, EXIT_USAGE, clap_exit};
use crate::mode::Mode;
use crate::post;
use clap::Parser;
use sonde_drivers::record::{Cut, EntryStream, RecordError};
use std::ffi::OsString;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;
use std::process::ExitCode;

/// `sonde replay FILE [OPTIONS] [SCRIPT]`: prints a recording again, or runs a userspace
/// script's `replay` probes on its events.
pub fn replay(args: &[OsString]) -> ExitCode {
    let Some((file, rest)) = args.split_first() else {
        eprintln!("sonde: usage: sonde replay FILE [-f json] [-o OUT] [SCRIPT | -e 'PROGRAM']");
        return ExitCode::from(EXIT_USAGE);
    };
    let path = Path::new(file);
    let shown = path.display().to_string();
    let (code, cut) = match run(path, rest) {
        Ok(done) => done,
        Err(e) => {
            eprintln!("sonde: {e}");
            return ExitCode::from(EXIT_SCRIPT);
        }
    };
    let Some(cut) = cut else {
        return code;
    };
    eprintln!(
        "sonde: warning: the recording {shown} was cut at byte {} (after {} records): the \
         recording run did not finish (killed?); everything before the cut was replayed",
        cut.offset, cut.entries
    );
    if code == ExitCode::SUCCESS {
        ExitCode::from(EXIT_SCRIPT)
    } else {
        code
    }
}

/// Opens recording `path` for a read from its start: refused unless it is a regular file
/// whose first bytes are a recording's magic and a version this sonde reads. Returns it and
/// its length.
fn open(path: &Path) -> Result<(BufReader<File>, u64), String> {
    sonde_drivers::record::open_recording(path).map_err(|e| match e {
        sonde_drivers::record::OpenError::Io(e) => {
            format!("cannot read recording {}: {e}", path.display())
        }
        sonde_drivers::record::OpenError::NotARecording(e) => not_one(path, &e),
    })
}

fn not_one(path: &Path, e: &RecordError) -> String {
    format!(
        "{} is not a sonde recording I can read: {e}",
        path.display()
    )
}

/// Reads the header of recording `path`, checks every entry, and prints the recording again
/// or runs the script of `rest` on it. Returns the exit code and where the recording was
/// cut, or the one-line error of a file that cannot be replayed.
fn run(path: &Path, rest: &[OsString]) -> Result<(ExitCode, Option<Cut>), String> {
    let (input, len) = open(path)?;
    let mut check = EntryStream::open(input, len).map_err(|e| not_one(path, &e))?;
    let header = check.header().clone();
    sonde_system::warnings::set_script(&header.name, &header.source);
    let argv: Vec<OsString> = std::iter::once(OsString::from("sonde"))
        .chain(rest.iter().cloned())
        .collect();
    let cli = match Cli::try_parse_from(&argv) {
        Ok(c) => c,
        Err(e) => return Ok((clap_exit(&e), None)),
    };
    if cli.program.is_some() || !cli.args.is_empty() {
        // A script's run takes the recorded events whole.
        let mut bytes = Vec::new();
        open(path)?
            .0
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read recording {}: {e}", path.display()))?;
        let recording =
            sonde_drivers::record::read_recording(&bytes).map_err(|e| not_one(path, &e))?;
        let cut = recording.cut;
        return Ok((main_with(argv, Mode::Replay(recording)), cut));
    }
    // Checked whole first: a corrupt file prints nothing but its error.
    for e in check.by_ref() {
        e.map_err(|e| not_one(path, &e))?;
    }
    let cut = check.cut();
    let opts = sonde_session::OutputOptions {
        unsafe_allowed: false,
        ..cli.output_options()
    };
    let Ok(loaded) = post::load(&cli, None) else {
        return Ok((ExitCode::from(EXIT_SCRIPT), None));
    };
    let (post_src, post) = post::split(loaded);
    let (input, len) = open(path)?;
    let mut entries = EntryStream::open(input, len).map_err(|e| not_one(path, &e))?;
    let shown = path.display().to_string();
    let code =
        match sonde_drivers::replay::replay_print(&header, &mut entries, &opts, cli.quiet, post) {
            Ok(code) => ExitCode::from(code),
            Err(d) => {
                post::render_run(&[d], &shown, "", post_src.as_ref());
                ExitCode::from(EXIT_SCRIPT)
            }
        };
    Ok((code, cut))
}
