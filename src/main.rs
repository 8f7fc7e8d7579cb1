//! The `sonde` binary: command line, diagnostics rendering and exit codes. Everything else
//! lives in the library crates.

mod args;
mod cli;
mod diagnostics;
mod engine;
mod exit;
mod imports;
mod info;
mod list;
mod post;
mod privilege;
mod repl;
mod tool_cmd;
mod tools;

use clap::{CommandFactory, FromArgMatches, Parser};
use cli::{Cli, DumpStage};
use diagnostics::render;
use engine::has_userspace_probe;
use exit::{EXIT_SCRIPT, EXIT_USAGE, clap_exit, write_stdout};
use privilege::lacks_privilege;
use sonde_compiler::catalog::SondeCatalog;
use sonde_compiler::compile::{CompileOptions, Engine, compile, compile_for, engine_of};
use sonde_lang::catalog::Catalog;
use sonde_lang::diag::Diagnostic;
use sonde_lang::sema::{CheckOptions, check};
use sonde_lang::span::Span;
use sonde_runtime::kernel_info::SystemKernel;
use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    // Arguments are bytes: paths (the script, -o) are used as given; text (the program,
    // parameters, patterns) must be UTF-8 and is refused with a message otherwise.
    let argv: Vec<OsString> = std::env::args_os().collect();
    // Re-executed as the IFUNC resolution helper, this ends here; otherwise it makes sonde
    // available as that helper (see sonde_runtime::uprobe_functions).
    sonde_runtime::uprobe_functions::serve_helper(&argv);
    match argv.get(1).and_then(|a| a.to_str()) {
        Some("tools") => return write_stdout(tools::listing().as_bytes()),
        Some("tool") => {
            return match utf8_args(&argv[2..], "argument") {
                Ok(args) => tool_cmd::tool(&args),
                Err(code) => code,
            };
        }
        Some("record") => return record(&argv[2..]),
        Some("replay") => return replay(&argv[2..]),
        Some("flamediff") => return flamediff(&argv[1..]),
        Some("repl") => {
            return match utf8_args(&argv[2..], "argument") {
                Ok(args) => repl::repl(&args),
                Err(code) => code,
            };
        }
        _ => {}
    }
    main_with(argv, Mode::Live)
}

/// `args` as text, or (after saying which one is not UTF-8) a usage error.
fn utf8_args(args: &[OsString], what: &str) -> Result<Vec<String>, ExitCode> {
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

/// What a run does besides running the script.
enum Mode {
    /// Run it.
    Live,
    /// `sonde record -o FILE`: run it and record what it prints.
    Record(std::path::PathBuf),
    /// `sonde replay FILE SCRIPT`: run a userspace script on a recording's events.
    Replay(sonde_runtime::record::Recording),
}

/// Parses the command line `argv` (program name first) and runs the script it names.
fn main_with(argv: Vec<OsString>, mode: Mode) -> ExitCode {
    let cmd = args::repeatable_program(Cli::command()).after_long_help(registry_help());
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
    let Ok(args) = utf8_args(&args, "parameter") else {
        return ExitCode::from(EXIT_USAGE);
    };
    let (named, positional) = split_named(args);
    run(&cli, &name, &src, positional, named, None, mode)
}

/// `sonde record -o FILE [OPTIONS] SCRIPT`: runs a kernel script and records its output.
fn record(args: &[OsString]) -> ExitCode {
    let mut rest = Vec::new();
    let mut file: Option<OsString> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "-o" && file.is_none() {
            file = it.next().cloned();
        } else if let Some(f) = a
            .as_bytes()
            .strip_prefix(b"-o")
            .filter(|f| !f.is_empty() && file.is_none())
        {
            file = Some(OsStr::from_bytes(f).to_os_string());
        } else {
            rest.push(a.clone());
        }
    }
    let Some(file) = file else {
        eprintln!("sonde: usage: sonde record -o FILE [OPTIONS] SCRIPT | -e 'PROGRAM'");
        return ExitCode::from(EXIT_USAGE);
    };
    let argv = std::iter::once(OsString::from("sonde"))
        .chain(rest)
        .collect();
    main_with(argv, Mode::Record(file.into()))
}

/// `sonde replay FILE [OPTIONS] [SCRIPT]`: prints a recording again, or runs a userspace
/// script's `replay` probes on its events.
fn replay(args: &[OsString]) -> ExitCode {
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
    let recording = match sonde_runtime::record::read_recording(&bytes) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("sonde: {shown} is not a sonde recording I can read: {e}");
            return ExitCode::from(EXIT_SCRIPT);
        }
    };
    sonde_runtime::warnings::set_script(&recording.header.name, &recording.header.source);
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
    let opts = sonde_runtime::session::OutputOptions {
        unsafe_allowed: false,
        ..cli.output_options()
    };
    let Ok(loaded) = post::load(&cli, None) else {
        return ExitCode::from(EXIT_SCRIPT);
    };
    let (post_src, post) = post::split(loaded);
    match sonde_runtime::replay::replay_print(&recording, &opts, cli.quiet, post) {
        Ok(code) => ExitCode::from(code),
        Err(d) => {
            post::render_run(&[d], &shown.to_string(), "", post_src.as_ref());
            ExitCode::from(EXIT_SCRIPT)
        }
    }
}

/// `sonde flamediff BEFORE AFTER -o DIFF.svg`: a differential flame graph of two folded
/// profiles.
fn flamediff(args: &[OsString]) -> ExitCode {
    let cli = match cli::FlameDiffCli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => return clap_exit(&e),
    };
    let opts = sonde_runtime::pictures::flame::DiffOptions {
        normalize: cli.normalize,
        negate: cli.negate,
        title: cli.title,
    };
    match sonde_runtime::pictures::flame::flamediff(&cli.before, &cli.after, &cli.output, &opts) {
        Ok(()) => ExitCode::SUCCESS,
        Err(d) => {
            render(&[d], "flamediff", "");
            ExitCode::from(EXIT_SCRIPT)
        }
    }
}

/// Separates named parameters (`--name[=value]`, given after `--`) from positional ones.
fn split_named(args: Vec<String>) -> (Vec<(String, String)>, Vec<String>) {
    let mut named = Vec::new();
    let mut positional = Vec::new();
    for a in args {
        match a.strip_prefix("--").filter(|n| !n.is_empty()) {
            Some(n) => {
                let (k, v) = n.split_once('=').unwrap_or((n, ""));
                named.push((k.to_string(), v.to_string()));
            }
            None => positional.push(a),
        }
    }
    (named, positional)
}

/// The builtins, functions and probe types, listed from the registries for `--help`.
fn registry_help() -> String {
    let cat = SondeCatalog;
    let mut s = String::from("PROBE TYPES:\n");
    for p in cat.providers() {
        s += &format!("  {:<44} {}\n", p.usage(), p.doc());
    }
    s += "\nBUILTINS:\n";
    for b in cat.builtins() {
        s += &format!("  {:<16} {}\n", b.name(), b.doc());
    }
    s += "\nFUNCTIONS:\n";
    for f in cat.functions() {
        s += &format!("  {:<44} {}\n", f.signature(), f.doc());
    }
    s
}

/// Reads the script: `-e PROGRAM`, a file (opened by its name's bytes), or `-` for stdin.
/// Returns its display name, its text and the positional parameters.
fn script_source(cli: &Cli) -> Result<(String, String, Vec<OsString>), String> {
    if let Some(p) = &cli.program {
        return Ok(("-e".into(), p.clone(), cli.args.clone()));
    }
    let Some((file, rest)) = cli.args.split_first() else {
        return Err(
            "no program given: use -e 'PROGRAM', a script FILENAME, or - for stdin (see --help)"
                .into(),
        );
    };
    let text = if file == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| format!("cannot read stdin: {e}"))?;
        s
    } else {
        let bytes = std::fs::read(file)
            .map_err(|e| format!("cannot read script {}: {e}", Path::new(file).display()))?;
        String::from_utf8_lossy(&bytes).into_owned()
    };
    let name = if file == "-" {
        "stdin".to_string()
    } else {
        file.to_string_lossy().into_owned()
    };
    Ok((name, text, rest.to_vec()))
}

/// The error for a program without probes (empty, or only comments, definitions or config),
/// which bpftrace refuses too.
fn no_probes(src: &str) -> Diagnostic {
    let d = Diagnostic::error("sonde::parse::no_probes", Span::default(), "the program has no probes")
        .with_help("a program is one or more probes, e.g. `BEGIN { printf(\"hello\\n\"); }` or `tracepoint:syscalls:sys_enter_openat { @[comm] = count(); }`");
    if src.trim().is_empty() {
        d
    } else {
        Diagnostic {
            span: Span::new(0, src.trim_end().len()),
            ..d
        }
        .with_label("no probe in here")
    }
}

/// Runs script `src` (named `name`) as `cli` says, post-processed by `--post`/`-P` or by
/// `report` (a tool's report).
fn run(
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
fn watch_target(cli: &Cli, system: &SystemKernel) -> Option<String> {
    if let Some(pid) = cli.pid {
        return Some(format!("/proc/{pid}/exe"));
    }
    let program = cli.cmd.as_deref()?.split_whitespace().next()?;
    Some(
        sonde_lang::kernel::KernelInfo::resolve_binary(system, program)
            .unwrap_or_else(|| program.to_string()),
    )
}

/// Prints the IR of every program and callback.
fn print_ir(compiled: &sonde_compiler::compile::Compiled, src: &str) -> ExitCode {
    let mut text = String::new();
    let lines = sonde_compiler::ir::SourceLines::new(src);
    for lowered in &compiled.ir {
        for f in std::iter::once(&lowered.main).chain(&lowered.callbacks) {
            text += &sonde_compiler::ir::print_function(f, Some(&lines));
            text.push('\n');
        }
    }
    write_stdout(text.as_bytes())
}

/// Runs a script in the userspace engine (`input`/`replay` probes, or `--engine jit`).
#[allow(clippy::too_many_arguments)]
fn run_userspace(
    cli: &Cli,
    name: &str,
    src: &str,
    program: &sonde_lang::ast::Program,
    checked: &sonde_lang::sema::Checked,
    kernel: &dyn sonde_lang::kernel::KernelInfo,
    positional: Vec<String>,
    named: Vec<(String, String)>,
    post: Option<post::Loaded>,
    mode: Mode,
) -> ExitCode {
    let refuse = |what: &str| {
        eprintln!(
            "sonde: {what} applies to kernel probes; this script runs in the userspace engine (input, replay, or --engine jit)"
        );
        ExitCode::from(EXIT_USAGE)
    };
    if cli.cmd.is_some() {
        return refuse("-c");
    }
    if cli.pid.is_some() {
        return refuse("-p");
    }
    if cli.flamegraph.is_some() {
        return refuse("--flamegraph");
    }
    if matches!(mode, Mode::Record(_)) {
        return refuse("record");
    }
    let replay = match &mode {
        Mode::Replay(rec) => sonde_runtime::replay::replay_events(rec),
        _ => Vec::new(),
    };
    let copts = CompileOptions {
        positional,
        filter_pid: None,
        cpid: None,
        ncpus: 1,
        start_ns: replay
            .first()
            .map_or_else(sonde_runtime::clock::boot_ns, |e| e.ts_ns),
        named,
        helper_errors: cli.warnings > 0,
        tai_offset_ns: sonde_runtime::clock::tai_offset_ns(),
        tseries_clock_map: std::env::var("BPFTRACE_DUMMY_TS_MAP").ok(),
    };
    let compiled = match compile_for(program, checked, kernel, &copts, Engine::Jit) {
        Ok(c) => c,
        Err(diags) => {
            render(&diags, name, src);
            return ExitCode::from(EXIT_SCRIPT);
        }
    };
    if cli.check {
        return ExitCode::SUCCESS;
    }
    match cli.dump {
        Some(DumpStage::Ir) => return print_ir(&compiled, src),
        Some(DumpStage::Bpf) => {
            eprintln!(
                "sonde: this script runs in the userspace engine: it has no BPF (try --dump ir)"
            );
            return ExitCode::from(EXIT_USAGE);
        }
        _ => {}
    }
    if cli.dry_run {
        return match sonde_runtime::engine::jit_compile(&compiled, cli.verbose) {
            Ok(_) => ExitCode::SUCCESS,
            Err(d) => {
                render(&d, name, src);
                ExitCode::from(EXIT_SCRIPT)
            }
        };
    }
    let (post_src, post) = post::split(post);
    let opts = sonde_runtime::engine::JitOptions {
        output: cli.output_options(),
        quiet: cli.quiet,
        field_sep: cli
            .field_sep
            .as_deref()
            .map(sonde_runtime::engine::input::FieldSep::from_flag)
            .unwrap_or_default(),
        replay,
        post,
        verbose: cli.verbose,
        threads: std::thread::available_parallelism().map_or(1, |n| n.get().min(8)),
    };
    let resolver = sonde_runtime::replay::ScriptResolver {
        recorded: match &mode {
            Mode::Replay(rec) => sonde_runtime::record::ReplayResolver::from_recording(rec),
            _ => sonde_runtime::record::ReplayResolver::new(),
        },
        live: sonde_runtime::resolver::RuntimeResolver::new(&compiled.script),
    };
    match sonde_runtime::engine::run_jit(checked, &compiled, resolver, opts) {
        Ok(code) => ExitCode::from(code),
        Err(diags) => {
            post::render_run(&diags, name, src, post_src.as_ref());
            ExitCode::from(EXIT_SCRIPT)
        }
    }
}
