//! Command-line interface: bpftrace-compatible flags, parsed with clap.

use clap::builder::{PossibleValuesParser, ValueHint};
use clap::{Arg, ArgAction, Command, CommandFactory, Parser, ValueEnum, value_parser};
use sonde_compiler::catalog::SondeCatalog;
use sonde_lang::catalog::Catalog;
use sonde_present::output::buffer::Buffering;
use std::path::PathBuf;

/// What `--dump` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DumpStage {
    /// The parsed syntax tree.
    Ast,
    /// Types of maps and probe attach points after checking.
    Types,
    /// The backend-neutral IR with source lines.
    Ir,
    /// The eBPF instructions with source lines.
    Bpf,
}

/// Output formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// bpftrace's text output.
    Text,
    /// bpftrace's NDJSON output.
    Json,
    /// Text, except that maps keyed by stacks print as folded lines (`comm;outer;inner 42`),
    /// the input of flame graph tools.
    Folded,
    /// CSV: each map a table under a header (`map,key,value`), each printf a row of its
    /// arguments.
    Csv,
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

/// The engine that runs a script.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum EngineArg {
    /// eBPF in the kernel (needs root).
    Bpf,
    /// Native code JIT-compiled with cranelift, in sonde's own process (no root).
    Jit,
}

/// sonde: a bpftrace-compatible tracing language compiled to eBPF without LLVM.
#[derive(Debug, Parser)]
#[command(name = "sonde", version, about, disable_version_flag = true)]
#[command(
    override_usage = "sonde [OPTIONS] FILENAME [ARGS]...\n       sonde [OPTIONS] -e 'PROGRAM' [ARGS]...\n       sonde -l [-v] [-p PID] [PATTERN[,PATTERN]... | FILE]\n       sonde --info\n       sonde tools | sonde tool NAME [FLAGS]\n       sonde record -o FILE [OPTIONS] SCRIPT | sonde replay FILE [SCRIPT]\n       sonde flamediff BEFORE.folded AFTER.folded -o DIFF.svg\n       sonde repl [-f text|json] [--unsafe]\n       sonde serve --scripts DIR [--listen ADDR]\n       sonde man | sonde completions SHELL"
)]
pub struct Cli {
    /// The program to run (instead of a file). Given more than once, the last one runs (as
    /// in bpftrace), with a warning.
    #[arg(short = 'e', value_name = "PROGRAM")]
    pub program: Option<String>,

    /// List probes matching PATTERN (tracepoints, software/hardware events, uprobe symbols of
    /// a binary with 'uprobe:/path:*', kprobes when the kernel has them). With -v, show
    /// tracepoint and raw tracepoint arguments; 'struct NAME' shows a kernel type. Several
    /// patterns are separated by commas. With -e or a script file, the probes the program
    /// would attach, wildcards expanded. With -p PID, the uprobe and USDT probes of the
    /// binaries that process maps ('uprobe:*:PATTERN', 'usdt:*:*').
    #[arg(short = 'l', long = "list")]
    pub list: bool,

    /// Parse and type-check against this machine's kernel; load nothing. Exit 0 when valid.
    #[arg(long)]
    pub check: bool,

    /// Print a compilation stage and exit.
    #[arg(long = "dump", short = 'd', value_enum, value_name = "STAGE")]
    pub dump: Option<DumpStage>,

    /// Compile, load and attach, then exit without running.
    #[arg(long = "dry-run")]
    pub dry_run: bool,

    /// Run the script's `test:NAME` probes, once each, and report which passed (a test fails
    /// when it returns non-zero, calls exit() with a non-zero code or errorf()); nothing is
    /// attached. Exit 1 when a test failed.
    #[arg(long = "test", conflicts_with = "bench")]
    pub test: bool,

    /// Run the script's `bench:NAME` probes repeatedly (at least 1 ms each) and print a table
    /// of their mean time per run (one that returns non-zero is skipped); nothing is attached.
    #[arg(long = "bench")]
    pub bench: bool,

    /// `--mode test` is `--test`, `--mode bench` is `--bench` (bpftrace 0.27's developer
    /// modes; its `codegen`, `compiler-bench` and `format` are refused).
    #[arg(long = "mode", value_name = "MODE", value_parser = crate::args::parse_mode, conflicts_with_all = ["test", "bench"])]
    pub mode: Option<crate::args::ModeArg>,

    /// Only attach and run the probes whose name (`tracepoint:syscalls:sys_enter_openat`,
    /// `test:NAME`) the regular expression matches; BEGIN and END are not affected, and a run
    /// left with no probe fails (bpftrace 0.27).
    #[arg(long = "probe-filter", value_name = "REGEX", value_parser = crate::args::parse_probe_filter)]
    pub probe_filter: Option<regex::Regex>,

    /// Run CMD as a child, trace it, and exit when it exits (`cpid` is its pid).
    #[arg(short = 'c', long = "cmd", value_name = "CMD", conflicts_with = "pid")]
    pub cmd: Option<String>,

    /// Only trace process PID (filters probes; uprobes attach to that process). The run ends
    /// (END, maps) when that process exits. User-space attach points resolve in it:
    /// `uprobe:FUNC` in its executable, `uprobe:*:FUNC` and `usdt:*:NAME` (or `usdt::P:N`)
    /// over the objects it maps, paths through its mount namespace.
    #[arg(short = 'p', long = "pid", value_name = "PID", value_parser = crate::args::parse_pid)]
    pub pid: Option<u32>,

    /// Output format: text, json (bpftrace's NDJSON messages, `{"type": ..., "data": ...}`),
    /// folded or csv.
    #[arg(
        short = 'f',
        default_value = "text",
        value_name = "FORMAT",
        value_parser = parse_format
    )]
    pub format: OutputFormat,

    /// Output buffering (of standard output and of -o FILE): line (written at each newline),
    /// full (written when the buffer is full, and at exit) or none (each message at once).
    /// Without -B, output is written after each batch of events.
    #[arg(short = 'B', value_name = "MODE", value_parser = crate::args::parse_buffering)]
    pub buffering: Option<Buffering>,

    /// At exit, draw the maps keyed by stacks (e.g. `@[kstack, ustack, comm] = count()`) as
    /// a flame graph SVG in FILE.
    #[arg(long = "flamegraph", value_name = "FILE")]
    pub flamegraph: Option<PathBuf>,

    /// The maps exported while the script runs (`--metrics ADDR`, `--metrics-file PATH`).
    #[command(flatten)]
    pub metrics: crate::metrics_args::MetricsArgs,

    /// Draw a latency heatmap SVG in FILE (sonde's extension): from a hist() or lhist() map
    /// printed and cleared every interval (one column per print), or from printf events of
    /// two integers, a time in nanoseconds and a latency (binned in log2 buckets).
    #[arg(long = "heatmap", value_name = "FILE")]
    pub heatmap: Option<PathBuf>,

    /// At each interval, draw a heatmap of the last 60 intervals of the printed histogram
    /// on the terminal (when standard output is one), with coloured blocks.
    #[arg(long = "term-heatmap")]
    pub heatmap_term: bool,

    /// Draw a line chart SVG in FILE of printf events of integers: a time in nanoseconds,
    /// then the values, each a line named by the word before its conversion (`heap=%d`).
    #[arg(long = "chart", value_name = "FILE")]
    pub chart: Option<PathBuf>,

    /// The title of the pictures (set by the tools).
    #[arg(skip)]
    pub picture_title: Option<String>,

    /// An event tool's lines print as rows in CSV and JSON (set by `sonde tool`).
    #[arg(skip)]
    pub rows: bool,

    /// A recording tool's events go to the recording only, unprinted (set by `sonde tool`).
    #[arg(skip)]
    pub unprinted_events: bool,

    /// Where uprobes attach (set by the tools: a tool's `-p`/`-c` traces that process only).
    #[arg(skip)]
    pub uprobes_in: sonde_drivers::run::UprobeScope,

    /// Write tracing output to FILE instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Quiet: do not print "Attached N probes".
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,

    /// Verbose: more detail (raw verifier logs, probe arguments with -l).
    #[arg(short = 'v', long = "verbose")]
    pub verbose: bool,

    /// Allow unsafe functions such as system() (and file and process access in --post
    /// scripts).
    #[arg(long = "unsafe")]
    pub unsafe_: bool,

    /// Post-process the output with the rhai script FILE: its on_event(e), on_interval(maps)
    /// and on_end(maps) see events and maps as rhai values and print what they like
    /// (percentiles, top-N tables, CSV; docs/reference.md, Post-processing).
    #[arg(long = "post", value_name = "FILE")]
    pub post: Option<PathBuf>,

    /// Post-process with this rhai code, as --post does with a file (for one-liners).
    #[arg(
        short = 'P',
        long = "post-eval",
        value_name = "RHAI",
        conflicts_with = "post"
    )]
    pub post_eval: Option<String>,

    /// Report failed probe reads (`str()`, struct fields, `buf()`, `join()`) at run time, with
    /// the place in the script and the error: a warning on stderr, a `helper_error` message
    /// with -f json. Without -k a failed read gives zeros silently.
    #[arg(short = 'k', long = "warnings", action = ArgAction::Count)]
    pub warnings: u8,

    /// Print what this kernel supports of what sonde uses (BPF program, map and link types,
    /// helpers, BTF), and how sonde was built; then exit.
    #[arg(long = "info")]
    pub info: bool,

    /// Activate USDT semaphores in every process that maps the probed binary. This is what
    /// sonde always does without -p/-c (the kernel raises the semaphore in every mapping of
    /// the file, also in processes started later); accepted for bpftrace compatibility.
    #[arg(long = "usdt-file-activation")]
    pub usdt_file_activation: bool,

    /// Accepted for bpftrace compatibility (BTF is always used when the kernel has it).
    #[arg(short = 'b', long = "btf", hide = true)]
    pub btf: bool,

    /// A plain `input` probe reads standard input, the arguments being parameters only
    /// (`sonde repl` runs its `input` entries so: the session's parameters are no files).
    #[arg(long = "input-stdin", hide = true)]
    pub input_stdin: bool,

    /// The engine: `bpf` (kernel probes; the default) or `jit` (userspace probes: `input`,
    /// `replay`; also BEGIN/END/interval-only scripts, without root). Scripts with `input` or
    /// `replay` probes choose `jit` themselves.
    #[arg(long = "engine", value_enum, value_name = "ENGINE")]
    pub engine: Option<EngineArg>,

    /// Field separator of `input` lines for `field(N)` and `nf` (awk's -F): a single space
    /// (the default) splits on runs of blanks, `\t` is a tab, anything else is literal.
    #[arg(short = 'F', value_name = "SEP")]
    pub field_sep: Option<String>,

    /// Print the version.
    #[arg(short = 'V', long = "version")]
    pub version: bool,

    /// Search DIR for `#include`d headers before the system's directories (repeatable).
    #[arg(short = 'I', value_name = "DIR")]
    pub include_dirs: Vec<PathBuf>,

    /// Search DIR (`DIR[:DIR]`; repeatable) for the separate DWARF debug files of uprobe
    /// binaries and of the files user stacks run in (their source lines), before the binary's
    /// directory, its `.debug` and /usr/lib/debug. A relative
    /// DIR is relative to the binary's directory; `-DIR` skips the check of a debuglink's CRC.
    #[arg(long = "debuginfo", value_name = "DIR[:DIR]")]
    pub debuginfo: Vec<String>,

    /// Add `#include <FILE>` to the script (repeatable).
    #[arg(long = "include", value_name = "FILE")]
    pub include: Vec<String>,

    /// Suppress warning messages (the checker's and the run's; lost-data counts are still
    /// reported).
    #[arg(long = "no-warnings")]
    pub no_warnings: bool,

    /// The script file ('-' for stdin), or the pattern with -l; then positional parameters.
    /// Kept as bytes: a script's path need not be UTF-8 (parameters must be).
    #[arg(value_name = "FILENAME")]
    pub args: Vec<std::ffi::OsString>,
}

impl Cli {
    /// The output options these flags select (`-f`, `-o`, `-B`, `--unsafe`).
    pub fn output_options(&self) -> sonde_session::OutputOptions {
        sonde_session::OutputOptions {
            json: self.format == OutputFormat::Json,
            folded: self.format == OutputFormat::Folded,
            csv: self.format == OutputFormat::Csv,
            rows: self.rows,
            unprinted_events: false,
            output: self.output.clone(),
            unsafe_allowed: self.unsafe_,
            buffering: self.buffering,
            pictures: self.picture_options(),
            // The script's config sets it (`str_trunc_trailer`).
            str_trunc_trailer: None,
        }
    }

    /// Checks before anything runs that the pictures these flags ask for (`--heatmap`,
    /// `--chart`, `--flamegraph`) can be written where they say: the first that cannot.
    pub fn unwritable_picture(&self) -> Option<sonde_lang::diag::Diagnostic> {
        let paths = [
            ("--heatmap", &self.heatmap),
            ("--chart", &self.chart),
            ("--flamegraph", &self.flamegraph),
        ];
        paths.into_iter().find_map(|(flag, path)| {
            sonde_present::pictures::check_destination(flag, path.as_deref()?).err()
        })
    }

    /// The pictures these flags ask for (`--heatmap`, `--term-heatmap`, `--chart`).
    pub fn picture_options(&self) -> sonde_present::pictures::PictureOptions {
        sonde_present::pictures::PictureOptions {
            heatmap: self.heatmap.clone(),
            heatmap_term: self.heatmap_term,
            chart: self.chart.clone(),
            title: self.picture_title.clone(),
        }
    }
}

/// `sonde flamediff BEFORE AFTER -o DIFF.svg`: a differential flame graph of two folded
/// profiles (inferno's), coloured by how each frame's samples changed from BEFORE to AFTER:
/// red where they grew, blue where they shrank.
#[derive(Debug, Parser)]
#[command(name = "sonde flamediff")]
pub struct FlameDiffCli {
    /// The profile before (folded stacks: `frame;frame;frame count` lines, as `-f folded`
    /// writes them).
    #[arg(value_name = "BEFORE")]
    pub before: PathBuf,

    /// The profile after; the graph has its shape.
    #[arg(value_name = "AFTER")]
    pub after: PathBuf,

    /// Where the SVG goes.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: PathBuf,

    /// Scale BEFORE's counts to AFTER's total first (profiles of different lengths).
    #[arg(long = "normalize")]
    pub normalize: bool,

    /// Draw BEFORE's shape instead, coloured by what AFTER lost.
    #[arg(long = "negate")]
    pub negate: bool,

    /// The title (default: Differential Flame Graph).
    #[arg(long = "title", value_name = "TEXT")]
    pub title: Option<String>,
}

/// `sonde` with its commands as subcommands: what the man page and the shell completions
/// are generated from. (The command line itself is dispatched on its first word in
/// `main`, so that a script's positional parameters are never taken for commands.)
pub fn full_command() -> Command {
    let rest = || {
        Arg::new("args")
            .value_name("ARGS")
            .num_args(0..)
            .trailing_var_arg(true)
            .allow_hyphen_values(true)
    };
    let tool_names: Vec<&'static str> = crate::tools::TOOLS.iter().map(|t| t.name).collect();
    Cli::command()
        .disable_help_subcommand(true)
        .subcommand(Command::new("tools").about("List the shipped tools and their summaries"))
        .subcommand(
            Command::new("tool")
                .about("Run a shipped tool with its flags (`sonde tool NAME -h` shows them)")
                .arg(
                    Arg::new("name")
                        .value_name("NAME")
                        .required(true)
                        .value_parser(PossibleValuesParser::new(tool_names)),
                )
                .arg(rest().value_name("FLAGS")),
        )
        .subcommand(
            Command::new("record")
                .about("Run a kernel script and record its output in FILE (replayed by `replay`)")
                .arg(
                    Arg::new("output")
                        .short('o')
                        .value_name("FILE")
                        .required(true)
                        .value_hint(ValueHint::FilePath),
                )
                .arg(rest().value_name("OPTIONS AND SCRIPT")),
        )
        .subcommand(
            Command::new("replay")
                .about("Print a recording again, or run a userspace script's replay probes on it")
                .arg(
                    Arg::new("file")
                        .value_name("FILE")
                        .required(true)
                        .value_hint(ValueHint::FilePath),
                )
                .arg(rest().value_name("OPTIONS AND SCRIPT")),
        )
        .subcommand(
            FlameDiffCli::command()
                .name("flamediff")
                .about("Draw a differential flame graph of two folded profiles"),
        )
        .subcommand(
            Command::new("repl")
                .about("A live tracing session: probes attach as they are entered")
                .arg(
                    Arg::new("format")
                        .short('f')
                        .long("format")
                        .value_name("FORMAT")
                        .value_parser(["text", "json"]),
                )
                .arg(
                    Arg::new("unsafe")
                        .long("unsafe")
                        .action(ArgAction::SetTrue)
                        .help("Allow unsafe functions such as system()"),
                ),
        )
        .subcommand(
            crate::cmd::serve::ServeCli::command()
                .name("serve")
                .about("Run every script of a directory as one metrics agent (/metrics)"),
        )
        .subcommand(
            Command::new("man")
                .about("Print the man page of sonde, or of COMMAND, on standard output (roff)")
                .arg(Arg::new("command").value_name("COMMAND")),
        )
        .subcommand(
            Command::new("completions")
                .about("Print the completion script of a shell on standard output")
                .arg(
                    Arg::new("shell")
                        .value_name("SHELL")
                        .required(true)
                        .value_parser(value_parser!(clap_complete::Shell)),
                ),
        )
}

/// The COMMANDS section of `--help`: each command of [`full_command`] with its summary.
pub fn commands_help() -> String {
    let mut s = String::from("COMMANDS:\n");
    for c in full_command().get_subcommands() {
        let about = c.get_about().map(ToString::to_string).unwrap_or_default();
        s += &format!("  {:<12} {about}\n", c.get_name());
    }
    s
}

/// The builtins, functions and probe types, listed from the registries for `--help`.
pub fn registry_help() -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_by_name() {
        assert_eq!(parse_format("json"), Ok(OutputFormat::Json));
        let err = parse_format("jsonx").unwrap_err();
        assert!(
            err.starts_with("Invalid output format \"jsonx\"; valid formats: 'text', 'json'"),
            "{err}"
        );
    }
}
