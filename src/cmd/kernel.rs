//! A script run in the kernel: compiled to BPF, loaded, attached, and its events printed
//! (or recorded) until it ends.

use crate::cli::{self, DumpStage};
use crate::diagnostics::render;
use crate::dump::print_ir;
use crate::exit::{EXIT_SCRIPT, write_stdout};
use crate::mode::{Mode, Ready};
use crate::post;
use crate::recording;
use sonde_compiler::compile::compile;
use sonde_compiler::options::CompileOptions;
use std::process::ExitCode;

/// Runs checked script `src` (named `name`) in the kernel as `cli` says (or dumps its IR or
/// BPF), post-processed by `post`.
pub fn run_kernel(ready: Ready<'_>) -> ExitCode {
    let (cli, name, src, checked) = (ready.cli, ready.name, ready.src, ready.checked);
    let child = match &cli.cmd {
        Some(cmd) if !cli.dry_run && cli.dump.is_none() => {
            match sonde_drivers::child::HeldChild::spawn(cmd) {
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
        positional: ready.positional,
        filter_pid: cli.pid,
        exclude_pid: Some(std::process::id()),
        cpid: child.as_ref().map(sonde_drivers::child::HeldChild::pid),
        ncpus: sonde_system::cpus::online_cpus().map_or(1, |c| c.len() as u32),
        start_ns: sonde_system::clock::boot_ns(),
        named: ready.named,
        helper_errors: cli.warnings > 0,
        tai_offset_ns: sonde_system::clock::tai_offset_ns(),
        tseries_clock_map: std::env::var("BPFTRACE_DUMMY_TS_MAP").ok(),
    };
    let mut compiled = match compile(ready.program, checked, ready.kernel, &copts) {
        Ok(c) => c,
        Err(diags) => {
            render(&diags, name, src);
            return ExitCode::from(EXIT_SCRIPT);
        }
    };
    if !crate::probe_filter::keep_matching(cli.probe_filter.as_ref(), &mut compiled.script) {
        return ExitCode::from(EXIT_SCRIPT);
    }
    match cli.dump {
        Some(DumpStage::Ir) => return print_ir(&compiled, src),
        Some(DumpStage::Bpf) => {
            return write_stdout(sonde_drivers::dump::bpf(&compiled, src).as_bytes());
        }
        _ => {}
    }
    let record = match &ready.mode {
        Mode::Record(path) => match recording::recorder(path, name, src, &compiled, checked) {
            Ok(r) => Some(r),
            Err(code) => return code,
        },
        _ => None,
    };
    let metrics = match cli.metrics.start(name, ready.program) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("sonde: {e}");
            return ExitCode::from(EXIT_SCRIPT);
        }
    };
    if let Some(addr) = metrics
        .as_ref()
        .and_then(|m| m.addr())
        .filter(|_| !cli.quiet)
    {
        eprintln!("Serving metrics on http://{addr}/metrics");
    }
    let (post_src, post) = post::split(ready.post);
    let ropts = sonde_drivers::run::RunOptions {
        quiet: cli.quiet,
        verbose: cli.verbose,
        json: cli.format == cli::OutputFormat::Json,
        output: cli.output.clone(),
        buffering: cli.buffering,
        child,
        pid: cli.pid,
        uprobes_in: cli.uprobes_in,
        dry_run: cli.dry_run,
        unsafe_allowed: cli.unsafe_,
        folded: cli.format == cli::OutputFormat::Folded,
        csv: cli.format == cli::OutputFormat::Csv,
        rows: cli.rows,
        unprinted_events: cli.unprinted_events,
        flamegraph: cli.flamegraph.clone(),
        pictures: cli.picture_options(),
        post,
        record,
        self_test: if cli.test || cli.mode == Some(crate::args::ModeArg::Test) {
            Some(sonde_drivers::selftest::SelfTestMode::Test)
        } else if cli.bench || cli.mode == Some(crate::args::ModeArg::Bench) {
            Some(sonde_drivers::selftest::SelfTestMode::Bench)
        } else {
            None
        },
        metrics,
        debuginfo: cli.debuginfo.clone(),
    };
    match sonde_drivers::run::run(checked, &compiled.script, ropts) {
        Ok(code) => ExitCode::from(code),
        Err(diags) => {
            post::render_run(&diags, name, src, post_src.as_ref());
            ExitCode::from(EXIT_SCRIPT)
        }
    }
}
