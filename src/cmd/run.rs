//! Running a script: the command line parsed, then the stages from its text to its run.

use crate::cli::{self, Cli, DumpStage};
use crate::cmd::kernel::run_kernel;
use crate::cmd::list;
use crate::cmd::userspace::run_userspace;
use crate::diagnostics::render;
use crate::exit::{EXIT_SCRIPT, EXIT_USAGE, clap_exit, write_stdout};
use crate::mode::{Mode, Ready};
use crate::privilege::lacks_privilege;
use crate::script::script_source;
use crate::{args, check, engine, params, post, script};
use clap::{CommandFactory, FromArgMatches};
use sonde_compiler::compile::{Engine, engine_of};
use sonde_system::kernel_info::SystemKernel;
use std::ffi::OsString;
use std::process::ExitCode;

/// Parses the command line `argv` (program name first) and runs the script it names.
pub fn main_with(argv: Vec<OsString>, mode: Mode) -> ExitCode {
    let commands = cli::commands_help();
    let cmd = args::repeatable_program(Cli::command())
        .after_help(commands.clone())
        .after_long_help(format!("{commands}\n{}", cli::registry_help()));
    let matches = match cmd.try_get_matches_from(&argv) {
        Ok(m) => m,
        Err(e) if e.kind() == clap::error::ErrorKind::InvalidUtf8 => {
            let bad = argv.iter().skip(1).find(|a| a.to_str().is_none());
            eprintln!(
                "sonde: argument `{}` is not valid UTF-8 text (only a script's path may be)",
                bad.map_or_else(String::new, |a| a.to_string_lossy().into_owned())
            );
            return ExitCode::from(EXIT_USAGE);
        }
        Err(e) => return clap_exit(&e),
    };
    let mut cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(EXIT_USAGE);
        }
    };
    cli.program = args::last_program(&matches);
    if cli.version {
        return write_stdout(format!("sonde v{}\n", env!("CARGO_PKG_VERSION")).as_bytes());
    }
    sonde_system::warnings::silence(cli.no_warnings);
    if let Some(code) = preamble(&cli, &matches) {
        return code;
    }
    if cli.list {
        return list::list(&cli);
    }
    let (name, src, args) = match script_source(&cli) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let Ok(args) = args::utf8_args(&args, "parameter") else {
        return ExitCode::from(EXIT_USAGE);
    };
    let (named, positional) = params::split_named(args);
    run(&cli, &name, &src, positional, named, None, mode)
}

/// Runs script `src` (named `name`) as `cli` says, post-processed by `--post`/`-P` or by
/// `report` (a tool's report).
pub fn run(
    cli: &Cli,
    name: &str,
    src: &str,
    positional: Vec<String>,
    named: Vec<(String, String)>,
    report: Option<post::PostSource>,
    mode: Mode,
) -> ExitCode {
    let (mut program, src) = match script::parse(cli, name, src) {
        Ok(parsed) => parsed,
        Err(code) => return code,
    };
    let src = src.as_ref();
    // The post-processing script is compiled before anything runs: its errors come first.
    let Ok(post) = post::load(cli, report) else {
        return ExitCode::from(EXIT_SCRIPT);
    };
    // So is where the pictures go: a path that cannot be written fails now, not at the end.
    if let Some(d) = cli.unwritable_picture() {
        render(&[d], name, src);
        return ExitCode::from(EXIT_SCRIPT);
    }
    if let Err(code) = params::refuse_unknown(&program, &named) {
        return code;
    }
    let diags = sonde_compiler::catalog::functions::attach_params::expand_attach_points(
        &mut program,
        &positional,
        &named,
    );
    if !diags.is_empty() {
        render(&diags, name, src);
        return ExitCode::from(EXIT_SCRIPT);
    }
    if cli.dump == Some(DumpStage::Ast) {
        return write_stdout(sonde_lang::syntax::dump(&program).as_bytes());
    }
    // A script that runs in the kernel needs privileges: say so once, before the kernel's
    // facilities fail one by one (tracefs unreadable, tracepoints unknown). Checking and
    // dumping go on without them; their errors then get a note.
    let replay = matches!(mode, Mode::Replay(_));
    let kernel_bound = engine::kernel_bound(cli, &program, replay);
    let runs = !cli.check && cli.dump.is_none();
    if kernel_bound
        && runs
        && let Some(d) = lacks_privilege()
    {
        render(&[d], name, src);
        return ExitCode::from(EXIT_SCRIPT);
    }
    let system = SystemKernel::new()
        .with_include_dirs(cli.include_dirs.clone())
        .with_script_dir(script_dir(cli, name))
        .with_debuginfo(&cli.debuginfo)
        .with_target_pid(cli.pid);
    let recorded;
    let kernel: &dyn sonde_lang::kernel::KernelInfo = match &mode {
        Mode::Replay(rec) => {
            recorded = sonde_drivers::replay::RecordingKernel::new(&system, rec);
            &recorded
        }
        _ => &system,
    };
    let options = check::options(cli, &system, &positional, &named);
    let checked = match check::program(name, src, &program, kernel, &options, kernel_bound) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let engine = match engine_of(&checked, engine::requested(cli, replay)) {
        Ok(e) => e,
        Err(d) => {
            render(&[d], name, src);
            return ExitCode::from(EXIT_SCRIPT);
        }
    };
    if cli.check && engine == Engine::Bpf {
        return ExitCode::SUCCESS;
    }
    if cli.dump == Some(DumpStage::Types) {
        return write_stdout(sonde_drivers::dump::types(&checked).as_bytes());
    }
    let ready = Ready {
        cli,
        name,
        src,
        program: &program,
        checked: &checked,
        kernel,
        positional,
        named,
        post,
        mode,
    };
    if engine == Engine::Jit {
        return run_userspace(ready);
    }
    if matches!(ready.mode, Mode::Replay(_)) {
        eprintln!("sonde: a script run on a recording needs `replay` probes");
        return ExitCode::from(EXIT_USAGE);
    }
    run_kernel(ready)
}

/// Checks what clap cannot: `-kk` (bpftrace's old second level, now refused) and `-k` with
/// `--no-warnings`. Returns bpftrace's message for the first problem.
fn check_flags(cli: &Cli) -> Result<(), String> {
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

/// What the flags decide before any script is read: a usage error ([`check_flags`]), `--info`, and
/// the warning for several `-e`. Returns the exit code when the run ends here.
fn preamble(cli: &Cli, matches: &clap::ArgMatches) -> Option<std::process::ExitCode> {
    if let Err(msg) = check_flags(cli) {
        eprintln!("sonde: {msg}");
        return Some(std::process::ExitCode::from(EXIT_USAGE));
    }
    if cli.info {
        return Some(crate::cmd::info::info());
    }
    let programs = args::program_count(matches);
    if programs > 1 {
        sonde_system::warnings::warn(&format!(
            "-e was given {programs} times: only the last program runs (as in bpftrace)"
        ));
    }
    None
}

/// The directory of the script file (where `#include "p.h"` looks first); none for `-e` and
/// stdin.
pub fn script_dir(cli: &Cli, name: &str) -> Option<std::path::PathBuf> {
    if cli.program.is_some() || cli.args.first().is_none_or(|a| a == "-") {
        return None;
    }
    let dir = std::path::Path::new(name).parent()?;
    Some(if dir.as_os_str().is_empty() {
        ".".into()
    } else {
        dir.to_path_buf()
    })
}
