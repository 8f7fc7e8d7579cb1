//! Running a script: the command line parsed, then the stages from its text to its run.

use crate::cli::{self, Cli, DumpStage};
use crate::cmd::list;
use crate::cmd::userspace::run_userspace;
use crate::diagnostics::render;
use crate::dump::print_ir;
use crate::engine::has_userspace_probe;
use crate::exit::{EXIT_SCRIPT, EXIT_USAGE, clap_exit, write_stdout};
use crate::privilege::lacks_privilege;
use crate::script::{no_probes, script_source};
use crate::{args, imports, params, post};
use clap::{CommandFactory, FromArgMatches};
use sonde_compiler::catalog::SondeCatalog;
use sonde_compiler::compile::{CompileOptions, Engine, compile, engine_of};
use sonde_lang::diag::Diagnostic;
use sonde_lang::sema::{CheckOptions, check};
use sonde_lang::span::Span;
use sonde_runtime::kernel_info::SystemKernel;
use std::ffi::OsString;
use std::process::ExitCode;

/// What a run does besides running the script.
pub enum Mode {
    /// Run it.
    Live,
    /// `sonde record -o FILE`: run it and record what it prints.
    Record(std::path::PathBuf),
    /// `sonde replay FILE SCRIPT`: run a userspace script on a recording's events.
    Replay(sonde_runtime::record::Recording),
}

/// Parses the command line `argv` (program name first) and runs the script it names.
pub fn main_with(argv: Vec<OsString>, mode: Mode) -> ExitCode {
    let cmd = args::repeatable_program(Cli::command()).after_long_help(cli::registry_help());
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
    sonde_runtime::warnings::silence(cli.no_warnings);
    if let Some(code) = args::preamble(&cli, &matches) {
        return code;
    }
    if cli.list {
        return list::list(&cli);
    }
    let (name, src, args) = match script_source(&cli) {
        Ok(s) => s,
        Err(msg) => {
            eprintln!("sonde: {msg}");
            return ExitCode::from(EXIT_USAGE);
        }
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
    let mut program = match sonde_lang::syntax::parse(src) {
        Ok(p) => p,
        Err(diags) => {
            render(&diags, name, src);
            return ExitCode::from(EXIT_SCRIPT);
        }
    };
    // `import "file";`: the imported files join the script's text (diagnostics about them
    // are shown in their own files).
    let combined = match imports::combine(name, src, &program) {
        Ok(c) => c,
        Err(diags) => {
            render(&diags, name, src);
            return ExitCode::from(EXIT_SCRIPT);
        }
    };
    let src = match &combined {
        Some(all) => {
            program = match sonde_lang::syntax::parse(all) {
                Ok(p) => p,
                Err(diags) => {
                    render(&diags, name, all);
                    return ExitCode::from(EXIT_SCRIPT);
                }
            };
            all.as_str()
        }
        None => src,
    };
    // `--include FILE`: as an `#include <FILE>` line of the script.
    program
        .c_defs
        .extend(cli.include.iter().map(|f| sonde_lang::ast::CDef {
            kind: sonde_lang::ast::CDefKind::Include,
            name: format!("<{}>", f.trim_matches(['<', '>', '"'])),
            value: String::new(),
            fields: Vec::new(),
            enumerators: Vec::new(),
            span: Span::default(),
            packed: false,
        }));
    if program.probes.is_empty() {
        render(&[no_probes(src)], name, src);
        return ExitCode::from(EXIT_SCRIPT);
    }
    // The post-processing script is compiled before anything runs: its errors come first.
    let Ok(post) = post::load(cli, report) else {
        return ExitCode::from(EXIT_SCRIPT);
    };
    let unknown = sonde_compiler::catalog::functions::getopt::unknown_named(&program, &named);
    if !unknown.is_empty() {
        let known: Vec<String> = sonde_compiler::catalog::functions::getopt::uses(&program)
            .iter()
            .map(|u| format!("--{}", u.name))
            .collect();
        eprintln!(
            "sonde: unexpected named parameter{} --{}; this script reads: {}",
            if unknown.len() > 1 { "s" } else { "" },
            unknown.join(", --"),
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        );
        return ExitCode::from(EXIT_USAGE);
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
    let kernel_bound = !matches!(mode, Mode::Replay(_))
        && cli.engine != Some(cli::EngineArg::Jit)
        && !has_userspace_probe(&program);
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
        .with_debuginfo(&cli.debuginfo)
        .with_target_pid(cli.pid);
    let recorded;
    let kernel: &dyn sonde_lang::kernel::KernelInfo = match &mode {
        Mode::Replay(rec) => {
            recorded = sonde_runtime::replay::RecordingKernel::new(&system, rec);
            &recorded
        }
        _ => &system,
    };
    let options = CheckOptions {
        positional: positional.clone(),
        unsafe_allowed: cli.unsafe_,
        named: named.clone(),
        env_config: std::env::vars()
            .filter(|(k, _)| k.starts_with("BPFTRACE_"))
            .collect(),
        watch_target: watch_target(cli, &system),
    };
    sonde_runtime::warnings::set_script(name, src);
    let (checked, diags) = check(&program, &SondeCatalog, kernel, &options);
    render(&diags, name, src);
    if diags.iter().any(Diagnostic::is_error) {
        if kernel_bound && let Some(why) = sonde_runtime::privilege::missing() {
            eprintln!(
                "sonde: note: {why}; what sonde could not read of the kernel looks unknown above"
            );
        }
        return ExitCode::from(EXIT_SCRIPT);
    }
    let requested = cli
        .engine
        .map(|e| match e {
            cli::EngineArg::Bpf => Engine::Bpf,
            cli::EngineArg::Jit => Engine::Jit,
        })
        .or(matches!(mode, Mode::Replay(_)).then_some(Engine::Jit));
    let engine = match engine_of(&checked, requested) {
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
        return write_stdout(sonde_runtime::dump::types(&checked).as_bytes());
    }
    if engine == Engine::Jit {
        return run_userspace(
            cli, name, src, &program, &checked, kernel, positional, named, post, mode,
        );
    }
    if matches!(mode, Mode::Replay(_)) {
        eprintln!("sonde: a script run on a recording needs `replay` probes");
        return ExitCode::from(EXIT_USAGE);
    }
    let child = match &cli.cmd {
        Some(cmd) if !cli.dry_run && cli.dump.is_none() => {
            match sonde_runtime::child::HeldChild::spawn(cmd) {
                Ok(c) => Some(c),
                Err(e) => {
                    eprintln!("sonde: cannot run -c '{cmd}': {e}");
                    return ExitCode::from(EXIT_SCRIPT);
                }
            }
        }
        _ => None,
    };
    let copts = CompileOptions {
        positional,
        filter_pid: cli.pid,
        cpid: child.as_ref().map(sonde_runtime::child::HeldChild::pid),
        ncpus: sonde_runtime::maps::online_cpus().map_or(1, |c| c.len() as u32),
        start_ns: sonde_runtime::clock::boot_ns(),
        named,
        helper_errors: cli.warnings > 0,
        tai_offset_ns: sonde_runtime::clock::tai_offset_ns(),
        tseries_clock_map: std::env::var("BPFTRACE_DUMMY_TS_MAP").ok(),
    };
    let compiled = match compile(&program, &checked, kernel, &copts) {
        Ok(c) => c,
        Err(diags) => {
            render(&diags, name, src);
            return ExitCode::from(EXIT_SCRIPT);
        }
    };
    match cli.dump {
        Some(DumpStage::Ir) => return print_ir(&compiled, src),
        Some(DumpStage::Bpf) => {
            return write_stdout(sonde_runtime::dump::bpf(&compiled, src).as_bytes());
        }
        _ => {}
    }
    let record = match &mode {
        Mode::Record(path) => {
            if let Some(p) = sonde_runtime::iter::iterator_program(&compiled.script) {
                let d = Diagnostic::error(
                    "sonde::record::iter",
                    p.span,
                    "an iterator's output cannot be recorded",
                )
                .with_label("iterator probe")
                .with_help(
                    "run the script without `record`: an iterator prints its text once and ends",
                );
                render(&[d], name, src);
                return ExitCode::from(EXIT_SCRIPT);
            }
            let header = sonde_runtime::record::Header {
                name: name.to_string(),
                source: src.to_string(),
                events: compiled.script.events.clone(),
                maps: compiled.script.maps.clone(),
                print_maps_on_exit: checked.config.print_maps_on_exit,
                str_trunc_trailer: checked.config.str_trunc_trailer.clone(),
            };
            match sonde_runtime::record_tap::Recorder::create(path, &header) {
                Ok(r) => Some(r),
                Err(e) => {
                    eprintln!("sonde: cannot write recording {}: {e}", path.display());
                    return ExitCode::from(EXIT_SCRIPT);
                }
            }
        }
        _ => None,
    };
    let (post_src, post) = post::split(post);
    let ropts = sonde_runtime::run::RunOptions {
        quiet: cli.quiet,
        verbose: cli.verbose,
        json: cli.format == cli::OutputFormat::Json,
        output: cli.output.clone(),
        buffering: cli.buffering,
        child,
        pid: cli.pid,
        dry_run: cli.dry_run,
        unsafe_allowed: cli.unsafe_,
        folded: cli.format == cli::OutputFormat::Folded,
        csv: cli.format == cli::OutputFormat::Csv,
        flamegraph: cli.flamegraph.clone(),
        pictures: cli.picture_options(),
        post,
        record,
        self_test: if cli.test {
            Some(sonde_runtime::selftest::SelfTestMode::Test)
        } else if cli.bench {
            Some(sonde_runtime::selftest::SelfTestMode::Bench)
        } else {
            None
        },
    };
    match sonde_runtime::run::run(&checked, &compiled.script, ropts) {
        Ok(code) => ExitCode::from(code),
        Err(diags) => {
            post::render_run(&diags, name, src, post_src.as_ref());
            ExitCode::from(EXIT_SCRIPT)
        }
    }
}

/// The program watchpoints watch and are named after: `/proc/PID/exe` for `-p PID`, the
/// path of the command of `-c CMD` (as bpftrace names them).
pub fn watch_target(cli: &Cli, system: &SystemKernel) -> Option<String> {
    if let Some(pid) = cli.pid {
        return Some(format!("/proc/{pid}/exe"));
    }
    let program = cli.cmd.as_deref()?.split_whitespace().next()?;
    Some(
        sonde_lang::kernel::KernelInfo::resolve_binary(system, program)
            .unwrap_or_else(|| program.to_string()),
    )
}
