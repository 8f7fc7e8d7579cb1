//! `sonde tool NAME [flags]`: runs a shipped tool (`tools`) with its flags as named
//! parameters, sonde's own options, and its report: the tool's rhai script
//! (`stdlib/NAME.rhai`), the one `-e`/`--extended` selects, or the user's `--post FILE`.

use crate::cli::{self, Cli};
use crate::cmd::run::run;
use crate::exit::{EXIT_USAGE, write_stdout};
use crate::mode::Mode;
use crate::post::PostSource;
use crate::tools::{self, ToolReport};
use clap::Parser;
use sonde_drivers::run::UprobeScope;
use std::process::ExitCode;

/// A tool's report, followed by `fn params()`: the tool's flags and arguments as an object
/// map of their texts (the last value of a repeated one), which the report may read (ltrace's
/// reads its prototypes).
fn source(r: &ToolReport, named: &[(String, String)]) -> PostSource {
    let mut fields: Vec<String> = Vec::new();
    for (k, v) in named {
        fields.retain(|f| !f.starts_with(&format!("{}:", rhai_string(k))));
        fields.push(format!("{}: {}", rhai_string(k), rhai_string(v)));
    }
    PostSource {
        name: r.path.to_string(),
        text: format!(
            "{}\nfn params() {{ #{{ {} }} }}\n",
            r.text,
            fields.join(", ")
        ),
    }
}

/// `s` as a rhai string literal.
fn rhai_string(s: &str) -> String {
    let mut out = String::from('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() || c == '`' => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// What a tool's command line asks for: a run, or a text to print (its help, version or
/// usage).
enum Parsed {
    /// Run it with these named parameters and global options.
    Run(Vec<(String, String)>, tools::Globals),
    /// Print this and stop.
    Print(String),
}

/// A tool's command line: its flags parsed, checked and expanded for a run, or the text
/// it asks for (help, version, usage). Errors are usage messages.
fn parse(
    t: &tools::Tool,
    doc: &tools::ToolDoc,
    name: &str,
    rest: &[String],
) -> Result<Parsed, String> {
    tools::parse_args(doc, rest).and_then(|inv| match inv {
        tools::Invocation::Run { mut named, globals } => {
            tools::count_flags(t, doc, &mut named);
            tools::convert_values(doc, &mut named)
                .map_err(|e| format!("{e}\n{}", tools::usage(doc)))?;
            tools::expand_regexp(&mut named)?;
            tools::expand_imports(doc, &mut named)?;
            tools::check_values(t, doc, &named)?;
            Ok(Parsed::Run(named, globals))
        }
        tools::Invocation::Help => Ok(Parsed::Print(tools::help(doc).to_string())),
        tools::Invocation::Version => Ok(Parsed::Print(format!(
            "{name} (sonde {})\n",
            env!("CARGO_PKG_VERSION")
        ))),
        tools::Invocation::Usage => {
            let usage = tools::usage(doc);
            let lines = usage.split("\nOPTIONS:").next().unwrap_or_default();
            Ok(Parsed::Print(format!("{}\n", lines.trim_end())))
        }
    })
}

/// A recording tool's run (`RECORDING:` in its header) with its file flag's `path`: recorded
/// there, its events unprinted, and ended when its -p process exits, as sonde's -p does (the
/// recording then holds the process's whole life from the attach). Other runs are live.
fn recording_mode(cli: &mut Cli, path: Option<&String>) -> Mode {
    let Some(path) = path else {
        return Mode::Live;
    };
    cli.unprinted_events = true;
    if let UprobeScope::Process(pid) = cli.uprobes_in {
        cli.pid = Some(pid);
    }
    Mode::Record(path.into())
}

/// `sonde tool NAME [flags]`.
pub fn tool(args: &[String]) -> ExitCode {
    let Some((name, rest)) = args.split_first() else {
        eprintln!("sonde: usage: sonde tool NAME [flags] (`sonde tools` lists the tools)");
        return ExitCode::from(EXIT_USAGE);
    };
    let Some(t) = tools::find(name) else {
        let names = tools::TOOLS.iter().map(|t| t.name);
        let guess = sonde_lang::diag::did_you_mean(name, names)
            .map(|c| format!(" (did you mean `{c}`?)"))
            .unwrap_or_default();
        eprintln!(
            "sonde: no tool named `{name}`{guess}; the tools are:\n{}",
            tools::listing()
        );
        return ExitCode::from(EXIT_USAGE);
    };
    let doc = t.doc();
    let checked = parse(t, &doc, name, rest);
    let (named, globals) = match checked {
        Ok(Parsed::Run(named, globals)) => (named, globals),
        Ok(Parsed::Print(text)) => return write_stdout(text.as_bytes()),
        Err(msg) => {
            eprintln!("sonde tool {name}: {msg}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let mut named = named;
    // A heatmap has a column per interval: a tool that prints its histogram every
    // `interval` seconds does so every second unless told otherwise.
    let heatmap = named.iter().any(|(k, _)| k == "heatmap");
    if heatmap
        && (doc.arguments.iter().any(|a| a.name == "interval")
            || doc.flags.iter().any(|f| f.long == "interval"))
        && !named.iter().any(|(k, _)| k == "interval")
    {
        named.push(("interval".into(), "1".into()));
    }
    let flag = |k: &str| named.iter().rev().find(|(n, _)| n == k).map(|(_, v)| v);
    // Sonde's own options, the same for every tool.
    let mut cli = Cli::parse_from(["sonde"]);
    // `-c CMD`: `--cmd`, or `--command` as bcc's memleak spells it.
    cli.cmd = flag("cmd").or_else(|| flag("command")).cloned();
    cli.flamegraph = flag("flamegraph").map(Into::into);
    cli.heatmap = flag("heatmap").map(Into::into);
    cli.chart = flag("chart").map(Into::into);
    cli.verbose = flag("verbose").is_some();
    cli.picture_title = Some(format!("sonde tool {name}"));
    cli.rows = doc.rows;
    // The tool's process, and only it, runs its uprobes (its predicates filter the rest).
    cli.uprobes_in = match flag("pid").and_then(|p| p.parse().ok()) {
        Some(pid) => UprobeScope::Process(pid),
        None if cli.cmd.is_some() => UprobeScope::Child,
        None if doc.uprobes_need_target => UprobeScope::Nowhere,
        None => UprobeScope::Everywhere,
    };
    if named.iter().any(|(k, v)| k == "folded" && v.is_empty()) {
        cli.format = cli::OutputFormat::Folded;
    }
    cli.output = globals.output.map(Into::into);
    cli.quiet = globals.quiet;
    cli.post = globals.post.map(Into::into);
    match globals.format.as_deref() {
        Some("json") => cli.format = cli::OutputFormat::Json,
        Some("folded") => cli.format = cli::OutputFormat::Folded,
        Some("csv") => cli.format = cli::OutputFormat::Csv,
        Some(_) => cli.format = cli::OutputFormat::Text,
        None => {}
    }
    // The tool's report: the extended one with -e, else its own (`--post` replaces either);
    // its `params()` also hold the output format, for a report that lays out text only.
    let mut params = named.clone();
    params.push((
        "format".into(),
        globals.format.clone().unwrap_or("text".into()),
    ));
    let report = match (flag("extended"), &t.extended) {
        (Some(_), Some(ext)) => Some(source(ext, &params)),
        _ => t.report.as_ref().map(|r| source(r, &params)),
    };
    let mode = recording_mode(&mut cli, doc.recording.as_deref().and_then(flag));
    let recording = doc.recording.as_deref();
    let named: Vec<(String, String)> = named
        .into_iter()
        .filter(|(k, _)| !tools::SONDE_FLAGS.contains(&k.as_str()) && Some(k.as_str()) != recording)
        .collect();
    let script = format!("{}{name}", crate::diagnostics::TOOL_PREFIX);
    match doc.producer.as_deref() {
        Some(producer) => run_fed(producer, &cli, &script, t.source, named, report, mode),
        None => run(&cli, &script, t.source, Vec::new(), named, report, mode),
    }
}

/// Runs a tool whose script reads the output of its producer (`PRODUCER:` in its header):
/// the producer started with the tool's flags, its exit code the tool's when it failed (it
/// said why).
fn run_fed(
    producer: &str,
    cli: &Cli,
    script: &str,
    source: &str,
    named: Vec<(String, String)>,
    report: Option<PostSource>,
    mode: Mode,
) -> ExitCode {
    let producer = match tools::Producer::start(producer, &named) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("sonde {}: {e}", script.replace(':', " "));
            return ExitCode::from(crate::exit::EXIT_SCRIPT);
        }
    };
    let code = run(cli, script, source, Vec::new(), named, report, mode);
    match producer.wait() {
        Ok(status) if !status.success() => {
            ExitCode::from(status.code().map_or(crate::exit::EXIT_SCRIPT, |c| c as u8))
        }
        _ => code,
    }
}

#[cfg(test)]
#[path = "tool_reports_tests.rs"]
mod tests;
