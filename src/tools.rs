//! The shipped tools: `stdlib/*.sd` scripts embedded in the binary, listed by `sonde tools`
//! and run by `sonde tool NAME [flags]`.
//!
//! Each tool's header comment is its documentation and the declaration of its flags. The
//! header is the run of `//` lines at the top of the file; its first line is `NAME - summary`.
//! An `OPTIONS:` section lists flags, one per line, as `-x, --long[=ARG]  description` (a
//! flag without `ARG` is a boolean); an `ARGUMENTS:` section lists positional arguments as
//! `name  description` (`[name]` when it may be left out, `name=A:B` when its value must have
//! that many non-empty `:`-separated parts). A flag whose description starts with
//! `(required)` must be given; a flag given several times reaches the script once per value
//! (an attach point `uprobe:$filter` becomes one per `-x FILTER`), and a boolean flag the
//! script reads as an integer (`getopt("time", 0)`) counts how often it is given (`-tt`: 2). Every flag and argument reaches the script as a named parameter
//! (`getopt("long")`), exactly as `sonde script.sd -- --long=VALUE` would pass it. The flag
//! `--cmd` (`-c CMD`) additionally runs CMD as a traced child, like sonde's own `-c`; the flag
//! `--folded` additionally selects sonde's folded output (`-f folded`: maps keyed by stacks
//! print as `comm;outer;inner count` lines); the flag `--flamegraph=FILE` is sonde's own
//! `--flamegraph FILE` (a flame graph SVG of the stack maps at exit) and is not passed to the
//! script; so is `--heatmap=FILE` (a latency heatmap SVG of the histogram the tool prints
//! every `interval`, which is then 1 unless given). The flag `--chart=FILE` is sonde's
//! `--chart FILE` and is passed to the script too, which prints the chart's events only when
//! it is given.
//!
//! A `PRODUCER: __NAME` line names a hidden command of sonde that the tool's `input` script
//! reads: it runs with the tool's flags, its output on the script's standard input
//! (`allocreplay`: the replays run by `__allocreplay-feed`, their results as lines).
//!
//! An `UPROBES: only with -p or -c` line keeps a tool's uprobes from attaching when neither
//! is given (memleak then traces the kernel's allocations).
//!
//! A `RECORDING: --NAME` line makes a recording tool: its run is recorded to the file flag
//! `--NAME` gives (`sonde record -o FILE`'s format), its printf events go there unprinted,
//! and the flag is sonde's, not passed to the script (allocrecord).
//!
//! An `EVENTS:` line marks an event tool: each line it prints is one event, which `-f csv`
//! and `-f json` print as one row (one record) with the columns its first line names
//! (`sonde_present::output::rows`).
//!
//! A tool's report (the layout of its results that the language cannot print) is a rhai
//! post-processing script shipped next to it, `stdlib/NAME.rhai` ([`Tool::report`]); the
//! flag `--extended` selects [`Tool::extended`] instead, and is not passed to the
//! script either. A user's `--post FILE` replaces both. The flag `--verbose` (`-v`, libbpf-tools'
//! "verbose debug output") is sonde's own `-v` (raw verifier logs) and is not passed either.
//!
//! Every tool also takes sonde's own output options, one list for all ([`GLOBAL_OPTIONS`]):
//! `-o FILE`, `-f FORMAT`, `-q` and `--post FILE`. A tool's own short flag of the same letter wins, except that
//! `-f` followed by a format name is always the format (and `-f folded` sets a tool's own
//! `--folded` flag too). The tool's values are checked before anything is compiled: a missing
//! argument, a malformed one or a value of the wrong type is a usage error, never a diagnostic
//! about the script's internals.
//!
//! Invariant: a tool's flags are exactly the `getopt` names its script reads (checked by the
//! tests of this module), so the usage text never lies.

mod args;
mod imports;
mod producer;
mod prototypes;
mod values;

pub use args::{Globals, Invocation, check_values, count_flags, parse_args};
pub use imports::expand_imports;
pub use producer::Producer;
pub use values::{convert_values, expand_regexp};

/// The flags that are sonde's rather than the script's: not passed to it as parameters.
pub const SONDE_FLAGS: [&str; 5] = ["cmd", "flamegraph", "extended", "heatmap", "verbose"];

/// A rhai report shipped with the tools.
#[derive(Debug)]
pub struct ToolReport {
    /// Its path in the source tree (`stdlib/memusage.rhai`), the name diagnostics show.
    pub path: &'static str,
    /// The rhai source.
    pub text: &'static str,
}

/// One shipped tool.
#[derive(Debug)]
pub struct Tool {
    /// The tool's name (`execsnoop`).
    pub name: &'static str,
    /// The script source, header included.
    pub source: &'static str,
    /// Its report: a rhai post-processing script (for layouts the language cannot print);
    /// `None` for most tools.
    pub report: Option<ToolReport>,
    /// The report `--extended` selects, for tools that declare that flag.
    pub extended: Option<ToolReport>,
}

/// `stdlib/NAME.rhai`, embedded.
macro_rules! rhai {
    ($file:literal) => {
        Some(ToolReport {
            path: concat!("stdlib/", $file, ".rhai"),
            text: include_str!(concat!("../stdlib/", $file, ".rhai")),
        })
    };
}

/// `stdlib/NAME.rhai`, embedded, followed by `fn extended() { BOOL }` (which the report reads
/// to know whether `-e` was given).
macro_rules! rhai_extended {
    ($file:literal, $extended:literal) => {
        Some(ToolReport {
            path: concat!("stdlib/", $file, ".rhai"),
            text: concat!(
                include_str!(concat!("../stdlib/", $file, ".rhai")),
                "\nfn extended() { ",
                $extended,
                " }\n"
            ),
        })
    };
}

macro_rules! tool {
    ($name:literal) => {
        tool!($name, None, None)
    };
    ($name:literal, $report:expr, $extended:expr) => {
        Tool {
            name: $name,
            source: include_str!(concat!("../stdlib/", $name, ".sd")),
            report: $report,
            extended: $extended,
        }
    };
}

/// Every shipped tool, in alphabetical order.
pub static TOOLS: &[Tool] = &[
    tool!("allocrecord", rhai!("allocrecord"), None),
    tool!("allocreplay", rhai!("allocreplay"), None),
    tool!("bashreadline"),
    tool!(
        "biolatency",
        rhai_extended!("histograms", "false"),
        rhai_extended!("histograms", "true")
    ),
    tool!("biosnoop"),
    tool!("biotop", rhai!("biotop"), None),
    tool!("bitesize", rhai!("log2hist"), None),
    tool!("capable"),
    tool!("cpudist", rhai!("log2hist"), None),
    tool!("execsnoop"),
    tool!("exitsnoop"),
    tool!("funclatency", rhai!("log2hist"), None),
    tool!("gethostlatency"),
    tool!("hardirqs", rhai!("log2hist"), None),
    tool!("killsnoop"),
    tool!("ltrace", rhai!("ltrace"), None),
    tool!("memleak", rhai!("memleak"), None),
    tool!("memusage", rhai!("memusage"), None),
    tool!("offcputime"),
    tool!("opensnoop"),
    tool!("profile", rhai!("profile"), None),
    tool!(
        "runqlat",
        rhai_extended!("histograms", "false"),
        rhai_extended!("histograms", "true")
    ),
    tool!("runqlen", rhai!("runqlen"), None),
    tool!("runqslower"),
    tool!("sigsnoop"),
    tool!("softirqs", rhai!("log2hist"), None),
    tool!("statsnoop"),
    tool!("syncsnoop"),
    tool!("syscount", rhai!("syscount"), None),
    tool!("tcpaccept"),
    tool!("tcpconnect"),
    tool!("tcplife"),
    tool!("tcpretrans"),
    tool!("tcpstates"),
    tool!("tcptop", rhai!("tcptop"), None),
];

/// Finds a tool by name.
pub fn find(name: &str) -> Option<&'static Tool> {
    TOOLS.iter().find(|t| t.name == name)
}

/// One flag of a tool, from its header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolFlag {
    /// The short form (`p` for `-p`), if any.
    pub short: Option<char>,
    /// The long form without dashes: the `getopt` name.
    pub long: String,
    /// The value's placeholder (`PID`) for a flag that takes a value; `None` for a boolean.
    pub value: Option<String>,
    /// The description.
    pub help: String,
}

/// What a tool's header declares.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolDoc {
    /// The one-line summary (after `NAME - `).
    pub summary: String,
    /// The whole header without its comment markers.
    pub text: String,
    /// The flags of the `OPTIONS:` section.
    pub flags: Vec<ToolFlag>,
    /// The positional arguments of the `ARGUMENTS:` section, in order.
    pub arguments: Vec<ToolArg>,
    /// True for an event tool, whose header has an `EVENTS:` line: each line it prints is
    /// one event, and `-f csv`/`-f json` print it as one row of its header's columns.
    pub rows: bool,
    /// True when the header has an `UPROBES: only with -p or -c` line: without `-p` or
    /// `-c`, the tool's uprobes attach nowhere (bcc's memleak then traces the kernel).
    pub uprobes_need_target: bool,
    /// The hidden command of a `PRODUCER: __NAME` line: run with the tool's flags, its
    /// output is the standard input of the tool's `input` script ([`Producer`]).
    pub producer: Option<String>,
    /// The flag a `RECORDING: --NAME` line names: its value is the file the tool's run is
    /// recorded to, as `sonde record -o FILE` records one (its events are not printed).
    pub recording: Option<String>,
}

/// One positional argument of a tool, from its header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolArg {
    /// The `getopt` name.
    pub name: String,
    /// False when the header writes it `[name]`.
    pub required: bool,
    /// The shape its value must have (`BINARY:FUNCTION`: that many non-empty `:` parts).
    pub shape: Option<String>,
}

/// Sonde's own options that every tool accepts, as the `-h` text and the listing show them.
pub const GLOBAL_OPTIONS: &str = "\
GLOBAL OPTIONS (every tool):
  -o FILE, --output=FILE      Write the tool's output to FILE instead of stdout
  -f FORMAT, --format=FORMAT  Output format: text (default), json, folded or csv
  -q, --quiet                 Do not print \"Attached N probes\"
  --post=FILE                 Post-process with the rhai script FILE (replaces the tool's
                              report; see docs/reference.md, Post-processing)
  -v, --verbose               Verbose debug output: the verifier's logs
  -V, --version               Print the tool's name and sonde's version
  --usage                     Print the tool's usage lines
  -h, --help                  Print this help
";

impl Tool {
    /// Parses this tool's header.
    pub fn doc(&self) -> ToolDoc {
        parse_header(self.source)
    }
}

/// Parses a tool header (the leading `//` lines of `source`).
pub fn parse_header(source: &str) -> ToolDoc {
    let lines: Vec<&str> = source
        .lines()
        .take_while(|l| l.starts_with("//"))
        .map(|l| {
            let body = &l[2..];
            body.strip_prefix(' ').unwrap_or(body)
        })
        .collect();
    let mut doc = ToolDoc {
        summary: lines
            .first()
            .and_then(|l| l.split_once(" - "))
            .map(|(_, s)| s.trim().to_string())
            .unwrap_or_default(),
        text: lines.join("\n") + "\n",
        ..ToolDoc::default()
    };
    doc.rows = lines.iter().any(|l| l.starts_with("EVENTS:"));
    doc.uprobes_need_target = lines
        .iter()
        .any(|l| l.starts_with("UPROBES: only with -p or -c"));
    doc.producer = lines
        .iter()
        .find_map(|l| l.strip_prefix("PRODUCER:"))
        .map(|p| p.trim().to_string());
    doc.recording = lines.iter().find_map(|l| {
        let flag = l.strip_prefix("RECORDING:")?.trim().strip_prefix("--")?;
        Some(flag.to_string())
    });
    let mut section = "";
    for l in &lines {
        if !l.starts_with(' ') && l.ends_with(':') {
            section = l.trim_end_matches(':');
            continue;
        }
        if !l.starts_with(' ') && !l.is_empty() {
            section = "";
        }
        let item = l.trim();
        if item.is_empty() {
            continue;
        }
        let (spec, help) = match item.split_once("  ") {
            Some((s, h)) => (s.trim(), h.trim().to_string()),
            None => (item, String::new()),
        };
        match section {
            "OPTIONS" if spec.starts_with('-') => {
                if let Some(f) = parse_flag(spec, help) {
                    doc.flags.push(f);
                }
            }
            "ARGUMENTS" => doc.arguments.push(parse_arg(spec)),
            _ => {}
        }
    }
    doc
}

/// Parses `name`, `[name]` or `name=SHAPE`.
fn parse_arg(spec: &str) -> ToolArg {
    let (inner, required) = match spec.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
        Some(inner) => (inner, false),
        None => (spec, true),
    };
    let (name, shape) = match inner.split_once('=') {
        Some((n, s)) => (n, Some(s.to_string())),
        None => (inner, None),
    };
    ToolArg {
        name: name.to_string(),
        required,
        shape,
    }
}

/// Parses `-p PID, --pid=PID` (or `-T, --time`, `--name=NAME`) into a flag.
fn parse_flag(spec: &str, help: String) -> Option<ToolFlag> {
    let mut flag = ToolFlag {
        short: None,
        long: String::new(),
        value: None,
        help,
    };
    for part in spec.split(',') {
        let part = part.trim();
        let (name, value) = match part.split_once(['=', ' ']) {
            Some((n, v)) => (n, Some(v.trim().to_string())),
            None => (part, None),
        };
        if let Some(long) = name.strip_prefix("--") {
            flag.long = long.to_string();
        } else if let Some(short) = name.strip_prefix('-') {
            flag.short = short.chars().next();
        }
        if value.is_some() {
            flag.value = value;
        }
    }
    if flag.long.is_empty() {
        flag.long = flag.short?.to_string();
    }
    Some(flag)
}

/// The usage lines (the `USAGE:` and `OPTIONS:`/`ARGUMENTS:` sections) of a header.
pub fn usage(doc: &ToolDoc) -> String {
    let mut out = String::new();
    let mut keep = false;
    for l in doc.text.lines() {
        if !l.starts_with(' ') && !l.is_empty() {
            keep = l.starts_with("USAGE:") || l == "OPTIONS:" || l == "ARGUMENTS:";
        }
        if keep {
            out += l;
            out.push('\n');
        }
    }
    out
}

/// The text of `sonde tool NAME -h`: the header, then the global options.
pub fn help(doc: &ToolDoc) -> String {
    format!("{}\n{GLOBAL_OPTIONS}", doc.text)
}

/// The text of `sonde tools`: one line per tool with its summary, then the global options.
pub fn listing() -> String {
    let tools: String = TOOLS
        .iter()
        .map(|t| format!("{:<16} {}\n", t.name, t.doc().summary))
        .collect();
    format!("{tools}\n{GLOBAL_OPTIONS}")
}

#[cfg(test)]
mod tests;
