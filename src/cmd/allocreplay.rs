//! The hidden commands behind `sonde tool allocreplay`: `__allocreplay-feed` (the tool's
//! producer: the recording read, replayed against each allocator, the results written as
//! lines for the tool's `input` script; `sonde_drivers::allocreplay`) and `__alloc-harness`
//! (one replay, in this process, under the allocator it was started with;
//! `sonde_allocs::harness`). Neither is shown by `--help`.

use crate::exit::{EXIT_SCRIPT, EXIT_USAGE};
use sonde_allocs::harness::{self, Options};
use sonde_drivers::allocreplay::{FeedOptions, feed as run_feed};
use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// The allocators replayed when `--allocator` is not given.
pub const DEFAULT_ALLOCATORS: &str = "glibc,jemalloc,tcmalloc";

/// The message prefix of the tool's errors.
const TOOL: &str = "sonde tool allocreplay";

/// `sonde __allocreplay-feed --recording=FILE [--allocator=LIST] [--threads-free]
/// [--touch] [--chart=FILE]`: the tool's flags, as the tool runner passes them.
pub fn feed(args: &[String]) -> ExitCode {
    let mut recording = None;
    let mut list = DEFAULT_ALLOCATORS.to_string();
    let (mut threads_free, mut touch) = (false, false);
    for a in args {
        let (k, v) = a.split_once('=').unwrap_or((a, ""));
        match k {
            "--recording" => recording = Some(PathBuf::from(v)),
            "--allocator" => list = v.to_string(),
            "--threads-free" => threads_free = true,
            "--touch" => touch = true,
            "--chart" => {}
            _ => {
                eprintln!("{TOOL}: unknown producer argument `{a}`");
                return ExitCode::from(EXIT_USAGE);
            }
        }
    }
    let Some(recording) = recording else {
        eprintln!("{TOOL}: missing argument recording");
        return ExitCode::from(EXIT_USAGE);
    };
    let allocators = match sonde_allocs::allocators::parse_list(&list) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{TOOL}: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let rec = match sonde_drivers::allocs::read(&recording) {
        Ok(r) => r,
        Err(d) => {
            crate::diagnostics::render(&[d], TOOL, "");
            return ExitCode::from(EXIT_SCRIPT);
        }
    };
    let Ok(sonde) = std::env::current_exe() else {
        eprintln!("{TOOL}: cannot find the sonde binary to run the harness");
        return ExitCode::from(EXIT_SCRIPT);
    };
    let opts = FeedOptions {
        allocators,
        threads_free,
        touch,
        sonde,
        count_syscalls: true,
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match run_feed(&rec, &opts, &mut out) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = out.flush();
            eprintln!("{TOOL}: {e}");
            ExitCode::from(EXIT_SCRIPT)
        }
    }
}

/// `sonde __alloc-harness PLAN --marker NAME [--threads-free] [--touch]`: one replay; its
/// results as one JSON object on standard output.
pub fn harness(args: &[OsString]) -> ExitCode {
    let mut plan = None;
    let mut opts = Options::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.to_str() {
            Some("--threads-free") => opts.threads_free = true,
            Some("--touch") => opts.touch = true,
            Some("--marker") => {
                opts.marker = it.next().and_then(|m| m.to_str()).unwrap_or("").to_string()
            }
            _ if plan.is_none() => plan = Some(PathBuf::from(a)),
            _ => {
                eprintln!("sonde __alloc-harness: unexpected argument {a:?}");
                return ExitCode::from(EXIT_USAGE);
            }
        }
    }
    let Some(plan) = plan else {
        eprintln!(
            "sonde __alloc-harness: usage: sonde __alloc-harness PLAN --marker NAME [--threads-free] [--touch]"
        );
        return ExitCode::from(EXIT_USAGE);
    };
    match harness::run(&plan, &opts) {
        Ok(r) => crate::exit::write_stdout(format!("{}\n", r.to_json()).as_bytes()),
        Err(e) => {
            eprintln!("sonde __alloc-harness: {}: {e}", plan.display());
            ExitCode::from(EXIT_SCRIPT)
        }
    }
}
