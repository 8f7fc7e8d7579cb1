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
//! An `UPROBES: only with -p or -c` line keeps a tool's uprobes from attaching when neither
//! is given (memleak then traces the kernel's allocations).
//!
//! An `EVENTS:` line marks an event tool: each line it prints is one event, which `-f csv`
//! and `-f json` print as one row (one record) with the columns its first line names
//! (`sonde_present::output::rows`).
//!
//! A tool's report (the layout of its results that the language cannot print) is a rhai
//! post-processing script shipped next to it, `stdlib/NAME.rhai` ([`Tool::report`]); the
//! flag `--extended` (`-e`) selects [`Tool::extended`] instead, and is not passed to the
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
mod prototypes;
mod values;

pub use args::{Globals, Invocation, check_values, count_flags, parse_args};
pub use imports::expand_imports;
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
    /// The report `-e`/`--extended` selects, for tools that declare that flag.
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
mod tests {
    use super::args::Globals;
    use super::*;

    const HEADER: &str = "\
// demo - shows a demo
//
// USAGE: sonde tool demo [-T] [-p PID] [interval]
//
// OPTIONS:
//   -T, --time        Print a time column
//   -p PID, --pid=PID  Only this process
//   --name=NAME       Only this name
//
// ARGUMENTS:
//   [interval]        Seconds between prints
BEGIN { }
";

    fn strings(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn header_declares_flags_and_arguments() {
        let doc = parse_header(HEADER);
        assert_eq!(doc.summary, "shows a demo");
        assert_eq!(
            doc.flags,
            vec![
                ToolFlag {
                    short: Some('T'),
                    long: "time".into(),
                    value: None,
                    help: "Print a time column".into()
                },
                ToolFlag {
                    short: Some('p'),
                    long: "pid".into(),
                    value: Some("PID".into()),
                    help: "Only this process".into()
                },
                ToolFlag {
                    short: None,
                    long: "name".into(),
                    value: Some("NAME".into()),
                    help: "Only this name".into()
                },
            ]
        );
        assert_eq!(
            doc.arguments,
            vec![ToolArg {
                name: "interval".into(),
                required: false,
                shape: None
            }]
        );
        assert!(doc.text.starts_with("demo - shows a demo\n\nUSAGE:"));
    }

    #[test]
    fn flags_become_named_parameters() {
        let doc = parse_header(HEADER);
        let run = |a: &[&str]| parse_args(&doc, &strings(a));
        assert_eq!(
            run(&["-Tp", "42", "--name=bash", "5"]),
            Ok(Invocation::Run {
                named: vec![
                    ("time".into(), String::new()),
                    ("pid".into(), "42".into()),
                    ("name".into(), "bash".into()),
                    ("interval".into(), "5".into()),
                ],
                globals: Globals::default(),
            })
        );
        assert_eq!(
            run(&["-p7", "--time", "--pid", "8"]),
            Ok(Invocation::Run {
                named: vec![
                    ("pid".into(), "7".into()),
                    ("time".into(), String::new()),
                    ("pid".into(), "8".into())
                ],
                globals: Globals::default(),
            })
        );
        assert_eq!(run(&["-h"]), Ok(Invocation::Help));
        // A negative number is an argument, unless a flag is named by that digit.
        assert_eq!(
            run(&["-5"]),
            Ok(Invocation::Run {
                named: vec![("interval".into(), "-5".into())],
                globals: Globals::default(),
            })
        );
        let digits = parse_header("// d - x\n// OPTIONS:\n//   -4, --ipv4  Only IPv4\n");
        assert_eq!(
            parse_args(&digits, &strings(&["-4"])),
            Ok(Invocation::Run {
                named: vec![("ipv4".into(), String::new())],
                globals: Globals::default(),
            })
        );
        let err = run(&["-z"]).unwrap_err();
        assert!(
            err.starts_with("unknown option `-z`\nUSAGE: sonde tool demo"),
            "{err}"
        );
        assert!(
            err.contains("-p PID, --pid=PID  Only this process"),
            "{err}"
        );
        assert_eq!(run(&["-p"]).unwrap_err(), "-p PID: missing value");
        assert_eq!(run(&["--time=1"]).unwrap_err(), "--time takes no value");
        assert!(
            run(&["1", "2"])
                .unwrap_err()
                .starts_with("unexpected argument `2`")
        );
    }

    #[test]
    fn global_options_required_arguments_and_shapes() {
        let doc = parse_header(HEADER);
        let run = |a: &[&str]| parse_args(&doc, &strings(a));
        assert_eq!(
            run(&[
                "-q", "-o", "out.txt", "-f", "json", "-T", "--post", "r.rhai"
            ]),
            Ok(Invocation::Run {
                named: vec![("time".into(), String::new())],
                globals: Globals {
                    output: Some("out.txt".into()),
                    format: Some("json".into()),
                    quiet: true,
                    post: Some("r.rhai".into()),
                }
            })
        );
        assert_eq!(
            run(&["-qTofile", "--format=folded"]),
            Ok(Invocation::Run {
                named: vec![("time".into(), String::new())],
                globals: Globals {
                    output: Some("file".into()),
                    format: Some("folded".into()),
                    quiet: true,
                    post: None,
                }
            })
        );
        assert!(
            run(&["-f", "xml"])
                .unwrap_err()
                .starts_with("unknown output format `xml`")
        );
        // A tool's own `-f` flag stays its own unless a format name follows; `-f folded`
        // also sets its `--folded`.
        let folded = parse_header(
            "// d - x\n// OPTIONS:\n//   -f, --folded  Folded\n// ARGUMENTS:\n//   [n]  N\n",
        );
        let run = |a: &[&str]| parse_args(&folded, &strings(a));
        assert_eq!(
            run(&["-f", "5"]),
            Ok(Invocation::Run {
                named: vec![("folded".into(), String::new()), ("n".into(), "5".into())],
                globals: Globals::default()
            })
        );
        assert_eq!(
            run(&["-f", "folded"]),
            Ok(Invocation::Run {
                named: vec![("folded".into(), String::new())],
                globals: Globals {
                    format: Some("folded".into()),
                    ..Globals::default()
                }
            })
        );
        let req =
            parse_header("// d - x\n// USAGE: d b:f\n// ARGUMENTS:\n//   fn=B:F  The function\n");
        let run = |a: &[&str]| parse_args(&req, &strings(a));
        assert_eq!(
            run(&[]).unwrap_err(),
            "missing argument fn\nUSAGE: d b:f\nARGUMENTS:\n  fn=B:F  The function\n"
        );
        assert!(
            run(&["foo"])
                .unwrap_err()
                .starts_with("fn must be B:F, not `foo`\n")
        );
        assert!(run(&["foo:"]).is_err());
        assert!(run(&["libc:malloc"]).is_ok());
    }

    #[test]
    fn counted_and_required_flags() {
        let t = find("ltrace").unwrap();
        let doc = t.doc();
        let parse = |a: &[&str]| match parse_args(&doc, &strings(a)) {
            Ok(Invocation::Run { mut named, .. }) => {
                count_flags(t, &doc, &mut named);
                Ok(named)
            }
            Ok(other) => Err(format!("{other:?}")),
            Err(e) => Err(e),
        };
        // libbpf-tools' -V, --usage and -v, which ltrace does not declare.
        assert_eq!(parse(&["-V"]), Err("Version".to_string()));
        assert_eq!(parse(&["--usage"]), Err("Usage".to_string()));
        assert_eq!(
            parse(&["-v", "-x", "a@b"]).map(|n| n[0].clone()),
            Ok(("verbose".into(), String::new()))
        );
        // -tt is --time=2, -ttt 3; -x given twice stays twice (one attach point each).
        assert_eq!(
            parse(&["-tt", "-x", "a@b", "-x", "c@d", "cmd"]),
            Ok(vec![
                ("filter".into(), "a@b".into()),
                ("filter".into(), "c@d".into()),
                ("command".into(), "cmd".into()),
                ("time".into(), "2".into()),
            ])
        );
        assert_eq!(
            parse(&["-t", "-x", "a@b", "-Tt", "-t"]).map(|n| n.last().cloned()),
            Ok(Some(("time".into(), "3".into())))
        );
        // Without -x (nor -e): ltrace's default, the program's imports.
        assert_eq!(
            parse(&["-c", "cmd"]),
            Ok(vec![
                ("count".into(), String::new()),
                ("command".into(), "cmd".into())
            ])
        );
        // A flag marked `(required)` must be given.
        let req = parse_header(
            "// r - x\n// USAGE: r\n// OPTIONS:\n//   -x F, --filter=F  (required) Which\n",
        );
        let err = parse_args(&req, &[]).unwrap_err();
        assert!(err.starts_with("missing option -x F\n"), "{err}");
    }

    #[test]
    fn tool_values_are_checked_against_their_getopt_types() {
        let t = find("funclatency").unwrap();
        let doc = t.doc();
        let err = check_values(t, &doc, &[("pid".into(), "abc".into())]).unwrap_err();
        assert!(
            err.starts_with("bad value for --pid: `abc` is not an integer\nUSAGE:"),
            "{err}"
        );
        let me = std::process::id().to_string();
        assert!(check_values(t, &doc, &[("pid".into(), me)]).is_ok());
    }

    #[test]
    fn tool_values_out_of_range_are_refused() {
        let t = find("syscount").unwrap();
        let doc = t.doc();
        let bad = |k: &str, v: &str| {
            check_values(t, &doc, &[(k.into(), v.into())])
                .unwrap_err()
                .lines()
                .next()
                .unwrap()
                .to_string()
        };
        assert_eq!(
            bad("interval", "0"),
            "bad value for --interval: `0` is not a positive integer"
        );
        assert_eq!(
            bad("interval", "-5"),
            "bad value for --interval: `-5` is not a positive integer"
        );
        assert_eq!(
            bad("pid", "99999999999"),
            "bad value for --pid: Pid out of range: 99999999999"
        );
        assert_eq!(bad("pid", "0"), "bad value for --pid: no process has pid 0");
        // 4194304 is PID_MAX: it fits, and no process can have it.
        assert_eq!(
            bad("pid", "4194304"),
            "bad value for --pid: no process has pid 4194304"
        );
        assert!(check_values(t, &doc, &[("interval".into(), "2".into())]).is_ok());
        let tcplife = find("tcplife").unwrap();
        assert!(
            check_values(
                tcplife,
                &tcplife.doc(),
                &[("localport".into(), "70000".into())]
            )
            .is_err()
        );
    }

    #[test]
    fn the_reference_lists_every_tool() {
        let reference = include_str!("../docs/reference.md");
        let table = reference
            .split_once("## Shipped tools")
            .expect("a Shipped tools section")
            .1
            .split("\n## ")
            .next()
            .unwrap_or_default();
        let listed: Vec<&str> = table
            .lines()
            .filter_map(|l| l.strip_prefix("| `")?.split('`').next())
            .collect();
        let tools: Vec<&str> = TOOLS.iter().map(|t| t.name).collect();
        assert_eq!(listed, tools);
    }

    #[test]
    fn no_tool_flag_hides_a_global_option() {
        // A tool's short letters win (execsnoop's -q quotes, as bcc's): the global options
        // keep their long forms.
        for t in TOOLS {
            for f in t.doc().flags {
                assert!(
                    !["output", "format", "quiet", "post"].contains(&f.long.as_str()),
                    "{}: --{} hides a global option",
                    t.name,
                    f.long
                );
                // -f followed by a format name is the format; runqlen's -f takes a number.
                if f.short == Some('f') {
                    assert!(
                        ["folded", "frequency"].contains(&f.long.as_str()),
                        "{}: -f must be --folded or --frequency",
                        t.name
                    );
                }
            }
        }
    }

    #[test]
    fn the_classic_tools_are_all_shipped() {
        let names: Vec<&str> = TOOLS.iter().map(|t| t.name).collect();
        assert_eq!(
            names,
            [
                "bashreadline",
                "biolatency",
                "biosnoop",
                "biotop",
                "bitesize",
                "capable",
                "cpudist",
                "execsnoop",
                "exitsnoop",
                "funclatency",
                "gethostlatency",
                "hardirqs",
                "killsnoop",
                "ltrace",
                "memleak",
                "memusage",
                "offcputime",
                "opensnoop",
                "profile",
                "runqlat",
                "runqlen",
                "runqslower",
                "sigsnoop",
                "softirqs",
                "statsnoop",
                "syncsnoop",
                "syscount",
                "tcpaccept",
                "tcpconnect",
                "tcplife",
                "tcpretrans",
                "tcpstates",
                "tcptop"
            ]
        );
        assert!(find("memusage").is_some_and(|t| t.report.is_some()));
        assert!(find("tcplife").is_some_and(|t| t.report.is_none()));
        assert!(find("runqlat").is_some_and(|t| t.extended.is_some()));
    }

    #[test]
    fn every_tool_documents_exactly_its_getopt_names() {
        for t in TOOLS {
            let doc = t.doc();
            assert!(!doc.summary.is_empty(), "{}: no summary line", t.name);
            assert!(
                doc.text.contains("USAGE:") && doc.text.contains("EXAMPLE"),
                "{}: header lacks USAGE or EXAMPLE",
                t.name
            );
            let program = sonde_lang::syntax::parse(t.source)
                .unwrap_or_else(|_| panic!("{} does not parse", t.name));
            let uses = sonde_compiler::catalog::functions::getopt::uses(&program);
            let mut declared: Vec<(String, bool)> = doc
                .flags
                .iter()
                .map(|f| (f.long.clone(), f.value.is_some()))
                .collect();
            declared.extend(doc.arguments.iter().map(|a| (a.name.clone(), true)));
            for (name, takes_value) in &declared {
                if SONDE_FLAGS.contains(&name.as_str()) {
                    continue;
                }
                let u = uses
                    .iter()
                    .find(|u| &u.name == name)
                    .unwrap_or_else(|| panic!("{}: --{name} is never read", t.name));
                let is_flag = matches!(
                    u.default,
                    sonde_compiler::catalog::functions::getopt::OptValue::Bool(_)
                );
                // A boolean flag read as an integer counts its occurrences (`-tt`).
                let counted = !*takes_value
                    && matches!(
                        u.default,
                        sonde_compiler::catalog::functions::getopt::OptValue::Int(_)
                    );
                assert!(
                    *takes_value != is_flag || counted,
                    "{}: --{name} value-ness differs from its getopt default",
                    t.name
                );
            }
            for u in &uses {
                assert!(
                    declared.iter().any(|(n, _)| n == &u.name),
                    "{}: getopt(\"{}\") is not in the header",
                    t.name,
                    u.name
                );
            }
        }
    }
}
