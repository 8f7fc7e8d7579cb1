//! `sonde serve`: every script of a directory run as one metrics agent (see
//! `sonde_agent::serve`).

use crate::exit::{EXIT_SCRIPT, EXIT_USAGE};
use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;

/// `sonde serve --listen ADDR --scripts DIR`.
#[derive(Debug, Parser)]
#[command(name = "sonde serve", disable_version_flag = true)]
pub struct ServeCli {
    /// Where the agent serves /metrics (every script's maps), /maps, /scripts and /-/healthy.
    #[arg(long = "listen", value_name = "ADDR", default_value = "127.0.0.1:9435")]
    pub listen: String,

    /// The directory of scripts: every *.sd file there runs, each in a sonde process of its
    /// own; a file added, changed or removed is started, restarted or stopped (SIGHUP
    /// restarts them all).
    #[arg(long = "scripts", value_name = "DIR")]
    pub scripts: PathBuf,

    /// The most series one map of a script exports.
    #[arg(long = "metrics-max-series", value_name = "N", default_value_t = 10000,
          value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub max_series: u64,
}

/// Runs `sonde serve ARGS`.
pub fn serve(args: &[String]) -> ExitCode {
    let cli = match ServeCli::try_parse_from(
        std::iter::once("sonde serve".to_string()).chain(args.iter().cloned()),
    ) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { EXIT_USAGE } else { 0 });
        }
    };
    if let Some(d) = crate::privilege::lacks_privilege() {
        crate::diagnostics::render(&[d], "serve", "");
        return ExitCode::from(EXIT_SCRIPT);
    }
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("sonde serve: cannot find sonde's own executable: {e}");
            return ExitCode::from(EXIT_SCRIPT);
        }
    };
    sonde_system::signals::install_signal_handlers();
    let opts = sonde_agent::serve::ServeOptions {
        listen: cli.listen,
        dir: cli.scripts,
        exe,
        script_args: vec!["--metrics-max-series".into(), cli.max_series.to_string()],
    };
    match sonde_agent::serve::serve(&opts, &sonde_system::signals::stop_requested) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sonde serve: {e}");
            ExitCode::from(EXIT_SCRIPT)
        }
    }
}
