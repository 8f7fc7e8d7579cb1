//! A script run in the userspace engine (`input`/`replay` probes, or `--engine jit`).

use crate::cli::DumpStage;
use crate::diagnostics::render;
use crate::dump::print_ir;
use crate::exit::{EXIT_SCRIPT, EXIT_USAGE};
use crate::mode::{Mode, Ready};
use crate::post;
use sonde_compiler::compile::{Engine, compile_for};
use sonde_compiler::options::CompileOptions;
use std::process::ExitCode;

/// Runs a script in the userspace engine (`input`/`replay` probes, or `--engine jit`).
pub fn run_userspace(ready: Ready<'_>) -> ExitCode {
    let cli = ready.cli;
    let (name, src) = (ready.name, ready.src);
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
    if matches!(ready.mode, Mode::Record(_)) {
        return refuse("record");
    }
    let replay = match &ready.mode {
        Mode::Replay(rec) => sonde_drivers::replay::replay_events(rec),
        _ => Vec::new(),
    };
    // A plain `input` probe reads the file arguments, as awk reads its operands.
    let input_files = if matches!(ready.mode, Mode::Replay(_)) || cli.input_stdin {
        Vec::new()
    } else {
        ready.positional.clone()
    };
    let copts = CompileOptions {
        positional: ready.positional,
        filter_pid: None,
        exclude_pid: None,
        cpid: None,
        ncpus: 1,
        start_ns: replay
            .first()
            .map_or_else(sonde_system::clock::boot_ns, |e| e.ts_ns),
        named: ready.named,
        helper_errors: cli.warnings > 0,
        tai_offset_ns: sonde_system::clock::tai_offset_ns(),
        tseries_clock_map: std::env::var("BPFTRACE_DUMMY_TS_MAP").ok(),
    };
    let mut compiled = match compile_for(
        ready.program,
        ready.checked,
        ready.kernel,
        &copts,
        Engine::Jit,
    ) {
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
    if !crate::probe_filter::keep_matching(cli.probe_filter.as_ref(), &mut compiled.script) {
        return ExitCode::from(EXIT_SCRIPT);
    }
    if cli.dry_run {
        return match sonde_engine::jit_compile(&compiled, cli.verbose) {
            Ok(_) => ExitCode::SUCCESS,
            Err(d) => {
                render(&d, name, src);
                ExitCode::from(EXIT_SCRIPT)
            }
        };
    }
    let served = match crate::metrics_args::start_for(cli, name, ready.program) {
        Ok(m) => m.map(|m| Box::new(m) as Box<dyn sonde_session::scrape::Served>),
        Err(code) => return code,
    };
    let (post_src, post) = post::split(ready.post);
    let opts = sonde_engine::JitOptions {
        output: cli.output_options(),
        quiet: cli.quiet,
        field_sep: cli
            .field_sep
            .as_deref()
            .map(sonde_engine::input::FieldSep::from_flag)
            .unwrap_or_default(),
        replay,
        post,
        verbose: cli.verbose,
        threads: std::thread::available_parallelism().map_or(1, |n| n.get().min(8)),
        input_files,
        served,
    };
    let resolver = sonde_drivers::replay::ScriptResolver {
        recorded: match &ready.mode {
            Mode::Replay(rec) => sonde_drivers::record::ReplayResolver::from_recording(rec),
            _ => sonde_drivers::record::ReplayResolver::new(),
        },
        live: sonde_drivers::resolver::RuntimeResolver::new(&compiled.script),
    };
    match sonde_engine::run_jit(ready.checked, &compiled, resolver, opts) {
        Ok(code) => ExitCode::from(code),
        Err(diags) => {
            post::render_run(&diags, name, src, post_src.as_ref());
            ExitCode::from(EXIT_SCRIPT)
        }
    }
}
