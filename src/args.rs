//! Checks of command-line values with bpftrace's messages: the value parsers clap calls for
//! `-p` and `-B` (`-f`'s is beside the formats, in `cli`); the handling of several `-e`; and
//! arguments that must be UTF-8 text.

use crate::exit::EXIT_USAGE;
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

/// `-B MODE`: `line`, `full` or `none`, or bpftrace's message.
pub fn parse_buffering(text: &str) -> Result<Buffering, String> {
    Buffering::from_name(text).ok_or_else(|| "-B must be either 'line', 'full', or 'none'.".into())
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
    fn buffering_modes() {
        assert_eq!(parse_buffering("full"), Ok(Buffering::Full));
        assert_eq!(
            parse_buffering("block").unwrap_err(),
            "-B must be either 'line', 'full', or 'none'."
        );
    }
}

/// `--probe-filter REGEX`: the regular expression, or bpftrace 0.27's message for a bad one.
pub fn parse_probe_filter(text: &str) -> Result<regex::Regex, String> {
    regex::Regex::new(text).map_err(|e| format!("Invalid --probe-filter regex '{text}': {e}"))
}

/// What `--mode MODE` runs: bpftrace 0.27's developer modes sonde has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModeArg {
    /// `--mode test`: as `--test`.
    Test,
    /// `--mode bench`: as `--bench`.
    Bench,
}

/// `--mode MODE`: `test` and `bench`; bpftrace's other modes (`codegen`, `compiler-bench`,
/// `format`) are refused as sonde does not have them, and any other word with bpftrace's
/// message.
pub fn parse_mode(text: &str) -> Result<ModeArg, String> {
    match text {
        "test" => Ok(ModeArg::Test),
        "bench" => Ok(ModeArg::Bench),
        "codegen" | "compiler-bench" | "format" => Err(format!(
            "sonde has no '{text}' mode (its modes are 'test' and 'bench'; `--dump ir` and `--dump bpf` print the generated code)"
        )),
        _ => Err(
            "--mode can only be 'codegen', 'compiler-bench', 'bench', 'test' or 'format'."
                .to_string(),
        ),
    }
}
