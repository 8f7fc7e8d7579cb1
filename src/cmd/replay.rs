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
    let recording = match read(Path::new(file)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("sonde: {e}");
            return ExitCode::from(EXIT_SCRIPT);
        }
    };
    let cut = recording.cut;
    let code = run(recording, rest, &shown.to_string());
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

/// Reads recording `path`: refused unless it is a regular file that starts as a recording
/// does (checked on its first bytes, before it is read whole).
fn read(path: &Path) -> Result<sonde_drivers::record::Recording, String> {
    use sonde_drivers::record::{START_LEN, read_recording, recording_start};
    use std::io::Read;
    let shown = path.display();
    let cannot = |e: std::io::Error| format!("cannot read recording {shown}: {e}");
    let not_one = |e| format!("{shown} is not a sonde recording I can read: {e}");
    let mut file = sonde_system::user_files::open(path, sonde_system::user_files::Pipes::Refuse)
        .map_err(cannot)?;
    let size = file.metadata().map_err(cannot)?.len();
    let mut bytes = Vec::new();
    (&mut file)
        .take(START_LEN as u64)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    recording_start(&bytes).map_err(not_one)?;
    bytes
        .try_reserve_exact(size.saturating_sub(bytes.len() as u64) as usize)
        .map_err(|_| format!("cannot read recording {shown}: {size} bytes do not fit in memory"))?;
    file.read_to_end(&mut bytes).map_err(cannot)?;
    read_recording(&bytes).map_err(not_one)
}

/// Prints `recording` again, or runs the script of `rest` on it.
fn run(recording: sonde_drivers::record::Recording, rest: &[OsString], shown: &str) -> ExitCode {
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
            post::render_run(&[d], shown, "", post_src.as_ref());
            ExitCode::from(EXIT_SCRIPT)
        }
    }
}
