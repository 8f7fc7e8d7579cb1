//! Checks of command-line values with bpftrace's messages: the value parsers clap calls for
//! `-p`, `-f` and `-B`, and the checks of flag combinations clap cannot express (`-k`); and
//! arguments that must be UTF-8 text.

use crate::cli::{Cli, OutputFormat};
use crate::exit::EXIT_USAGE;
use clap::ValueEnum;
use sonde_present::output::buffer::Buffering;
use std::ffi::OsString;
use std::process::ExitCode;

/// The largest pid accepted: the kernel's `PID_MAX_LIMIT` on 64-bit systems (bpftrace's check).
pub const PID_MAX: u64 = 0x40_0000;

/// `-p PID`: a decimal process id, with bpftrace's messages for what is not one
/// ("Failed to parse pid: invalid integer: a1111", "... invalid trailing bytes: 111a1",
/// "Pid out of range: 5000000").
pub fn parse_pid(text: &str) -> Result<u32, String> {
    let digits = text.len() - text.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 {
        return Err(format!("Failed to parse pid: invalid integer: {text}"));
    }
    if digits < text.len() {
        return Err(format!(
            "Failed to parse pid: invalid trailing bytes: {text}"
        ));
    }
    let pid: u64 = text.parse().map_err(|_| {
        format!(
            "Failed to parse pid: overflow error, maximum value is {}: {text}",
            u64::MAX
        )
    })?;
    if pid > PID_MAX {
        return Err(format!("Pid out of range: {pid}"));
    }
    // PID_MAX fits in u32.
    Ok(pid as u32)
}

/// `-f FORMAT`: one of the output formats, or bpftrace's message naming the valid ones.
pub fn parse_format(text: &str) -> Result<OutputFormat, String> {
    OutputFormat::from_str(text, false).map_err(|_| {
        let valid: Vec<String> = OutputFormat::value_variants()
            .iter()
            .filter_map(ValueEnum::to_possible_value)
            .map(|v| format!("'{}'", v.get_name()))
            .collect();
        format!(
            "Invalid output format \"{text}\"; valid formats: {}",
            valid.join(", ")
        )
    })
}

/// `-B MODE`: `line`, `full` or `none`, or bpftrace's message.
pub fn parse_buffering(text: &str) -> Result<Buffering, String> {
    Buffering::from_name(text).ok_or_else(|| "-B must be either 'line', 'full', or 'none'.".into())
}

/// Checks what clap cannot: `-kk` (bpftrace's old second level, now refused) and `-k` with
/// `--no-warnings`. Returns bpftrace's message for the first problem.
pub fn check(cli: &Cli) -> Result<(), String> {
    if cli.warnings > 1 {
        return Err(
            "-kk has been deprecated. Use a single -k for runtime warnings for errors in probe reads."
                .into(),
        );
    }
    if cli.warnings == 1 && cli.no_warnings {
        return Err("-k, --warnings conflicts with --no-warnings".into());
    }
    Ok(())
}

/// `cmd` with `-e` accepted several times (bpftrace runs the last one; the derived
/// [`Cli`] would refuse a second `-e`).
pub fn repeatable_program(cmd: clap::Command) -> clap::Command {
    cmd.mut_arg("program", |a| a.action(clap::ArgAction::Append))
}

/// How many times `-e` was given, in matches of [`repeatable_program`]'s command.
pub fn program_count(matches: &clap::ArgMatches) -> usize {
    matches
        .get_many::<String>("program")
        .map_or(0, Iterator::count)
}

/// The last `-e` program, in matches of [`repeatable_program`]'s command.
pub fn last_program(matches: &clap::ArgMatches) -> Option<String> {
    matches
        .get_many::<String>("program")
        .and_then(Iterator::last)
        .cloned()
}

/// What the flags decide before any script is read: a usage error ([`check`]), `--info`, and
/// the warning for several `-e`. Returns the exit code when the run ends here.
pub fn preamble(cli: &Cli, matches: &clap::ArgMatches) -> Option<std::process::ExitCode> {
    if let Err(msg) = check(cli) {
        eprintln!("sonde: {msg}");
        return Some(std::process::ExitCode::from(crate::exit::EXIT_USAGE));
    }
    if cli.info {
        return Some(crate::cmd::info::info());
    }
    let programs = program_count(matches);
    if programs > 1 {
        sonde_system::warnings::warn(&format!(
            "-e was given {programs} times: only the last program runs (as in bpftrace)"
        ));
    }
    None
}

/// `args` as text, or (after saying which one is not UTF-8) a usage error.
pub fn utf8_args(args: &[OsString], what: &str) -> Result<Vec<String>, ExitCode> {
    args.iter()
        .map(|a| {
            a.to_str().map(str::to_string).ok_or_else(|| {
                eprintln!(
                    "sonde: {what} `{}` is not valid UTF-8 text",
                    a.to_string_lossy()
                );
                ExitCode::from(EXIT_USAGE)
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pids_with_bpftraces_messages() {
        assert_eq!(parse_pid("1234"), Ok(1234));
        assert_eq!(
            parse_pid("a1111").unwrap_err(),
            "Failed to parse pid: invalid integer: a1111"
        );
        assert_eq!(
            parse_pid("not_a_pid").unwrap_err(),
            "Failed to parse pid: invalid integer: not_a_pid"
        );
        assert_eq!(
            parse_pid("111a1").unwrap_err(),
            "Failed to parse pid: invalid trailing bytes: 111a1"
        );
        assert_eq!(
            parse_pid("").unwrap_err(),
            "Failed to parse pid: invalid integer: "
        );
        assert_eq!(
            parse_pid("5000000").unwrap_err(),
            "Pid out of range: 5000000"
        );
        assert_eq!(parse_pid("4194304"), Ok(4_194_304));
        assert!(
            parse_pid("99999999999999999999999")
                .unwrap_err()
                .starts_with("Failed to parse pid: overflow error")
        );
    }

    #[test]
    fn formats_and_buffering() {
        assert_eq!(parse_format("json"), Ok(OutputFormat::Json));
        let err = parse_format("jsonx").unwrap_err();
        assert!(
            err.starts_with("Invalid output format \"jsonx\"; valid formats: 'text', 'json'"),
            "{err}"
        );
        assert_eq!(parse_buffering("full"), Ok(Buffering::Full));
        assert_eq!(
            parse_buffering("block").unwrap_err(),
            "-B must be either 'line', 'full', or 'none'."
        );
    }
}
