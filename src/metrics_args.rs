//! The command line of a run's exported maps (`--metrics`, `--metrics-file`, ...) and what
//! it starts.

use clap::Args;
use sonde_drivers::metrics::MetricsRun;
use sonde_export::metrics::ExportOptions;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `--metrics` and its companions.
#[derive(Debug, Clone, Args)]
pub struct MetricsArgs {
    /// Serve the maps while the script runs, on ADDR (e.g. 127.0.0.1:9435): /metrics for
    /// Prometheus (sonde_<script>_<map>, keys as labels), /maps as JSON, /-/healthy.
    #[arg(long = "metrics", value_name = "ADDR")]
    pub listen: Option<String>,

    /// Write the metrics to PATH every --metrics-interval (for node_exporter's textfile
    /// collector; written to a temporary file and renamed, so never seen half-written).
    #[arg(long = "metrics-file", value_name = "PATH")]
    pub file: Option<PathBuf>,

    /// Push what each map keyed by stacks counted in every --metrics-interval to URL, in the
    /// folded format (Pyroscope's /ingest; e.g. http://pyroscope:4040).
    #[arg(long = "push-folded", value_name = "URL")]
    pub push_folded: Option<String>,

    /// Seconds between two writes of --metrics-file or pushes of --push-folded.
    #[arg(long = "metrics-interval", value_name = "SECONDS", default_value_t = 15,
          value_parser = clap::value_parser!(u64).range(1..=86400))]
    pub interval: u64,

    /// The most series one map exports (how many more a map has is the gauge sonde_series_dropped).
    #[arg(long = "metrics-max-series", value_name = "N", default_value_t = 10000,
          value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub max_series: u64,

    /// The script's name in metric names (default: the script file's name without its
    /// extension; `e` for -e).
    #[arg(long = "metrics-name", value_name = "NAME")]
    pub name: Option<String>,
}

impl MetricsArgs {
    /// True when the maps are exported.
    pub fn wanted(&self) -> bool {
        self.listen.is_some() || self.file.is_some() || self.push_folded.is_some()
    }

    /// Starts what the flags ask for, for the script named `script_name` (as diagnostics
    /// name it: its path, or `-e`).
    pub fn start(
        &self,
        script_name: &str,
        program: &sonde_lang::ast::Program,
    ) -> Result<Option<MetricsRun>, String> {
        if !self.wanted() {
            return Ok(None);
        }
        let name = self
            .name
            .clone()
            .unwrap_or_else(|| default_name(script_name));
        let opts = ExportOptions {
            script: name,
            max_series: self.max_series as usize,
            key_names: sonde_lang::sema::key_names::key_names(program)
                .into_iter()
                .collect(),
        };
        let textfile = match &self.file {
            Some(p) => Some(
                sonde_agent::Textfile::new(p, Duration::from_secs(self.interval))
                    .map_err(|e| format!("--metrics-file: {e}"))?,
            ),
            None => None,
        };
        let every = Duration::from_secs(self.interval);
        let push = match &self.push_folded {
            Some(url) => Some(
                sonde_drivers::push_folded::FoldedPush::start(url, &opts.script, every)
                    .map_err(|e| format!("--push-folded: {e}"))?,
            ),
            None => None,
        };
        MetricsRun::start(opts, self.listen.as_deref(), textfile, push)
            .map(Some)
            .map_err(|e| format!("--metrics: {e}"))
    }
}

/// Starts what `cli`'s metrics flags ask for and says where it serves (unless `-q`); a
/// failure (an address in use, a missing directory) is reported and is the exit code.
pub fn start_for(
    cli: &crate::cli::Cli,
    name: &str,
    program: &sonde_lang::ast::Program,
) -> Result<Option<MetricsRun>, std::process::ExitCode> {
    let run = cli.metrics.start(name, program).map_err(|e| {
        eprintln!("sonde: {e}");
        std::process::ExitCode::from(crate::exit::EXIT_SCRIPT)
    })?;
    if let Some(addr) = run
        .as_ref()
        .and_then(MetricsRun::addr)
        .filter(|_| !cli.quiet)
    {
        eprintln!("Serving metrics on http://{addr}/metrics");
    }
    Ok(run)
}

/// A script's name in metric names: its file's stem, `e` for -e.
fn default_name(script_name: &str) -> String {
    if script_name == "-e" {
        return "e".into();
    }
    Path::new(script_name)
        .file_stem()
        .map_or_else(|| "e".into(), |s| s.to_string_lossy().into_owned())
}
