//! Exit codes, and the ways a command ends: its text written to standard output, or clap's
//! help, version and usage messages.

use std::io::Write;
use std::process::ExitCode;

/// Exit code for a script error (parse, type, load or attach error).
pub const EXIT_SCRIPT: u8 = 1;
/// Exit code for a usage error.
pub const EXIT_USAGE: u8 = 2;

/// Writes `bytes` to standard output. A closed pipe (`sonde -l | head -1`) ends quietly with
/// success, as the reader asked for no more; any other write error is reported (exit 1).
pub fn write_stdout(bytes: &[u8]) -> ExitCode {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sonde: cannot write to standard output: {e}");
            ExitCode::from(EXIT_SCRIPT)
        }
    }
}

/// Prints what clap has to say (help and version on stdout, usage errors on stderr) and
/// returns the exit code: 2 for a usage error; for help, 0, or 1 when it could not be
/// written (a closed pipe excepted).
pub fn clap_exit(e: &clap::Error) -> ExitCode {
    if e.use_stderr() {
        let _ = e.print();
        return ExitCode::from(EXIT_USAGE);
    }
    let text = e.render();
    let text = if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        text.ansi().to_string()
    } else {
        text.to_string()
    };
    write_stdout(text.as_bytes())
}
