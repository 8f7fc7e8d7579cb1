//! The tools' headers, flags and values, and the shipped list.

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
    let req = parse_header("// d - x\n// USAGE: d b:f\n// ARGUMENTS:\n//   fn=B:F  The function\n");
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
    let reference = include_str!("../../docs/reference.md");
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
            "allocrecord",
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
            if SONDE_FLAGS.contains(&name.as_str()) || doc.recording.as_ref() == Some(name) {
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

#[test]
fn a_recording_tool_names_its_file_flag_and_needs_a_target() {
    let t = find("allocrecord").unwrap();
    let doc = t.doc();
    assert_eq!(doc.recording.as_deref(), Some("recording"));
    assert!(doc.uprobes_need_target);
    let parse = |a: &[&str]| parse_args(&doc, &strings(a));
    // -o is the tool's (its recording), not sonde's global -o.
    assert_eq!(
        parse(&["-p", "42", "-o", "app.allocs", "3"]),
        Ok(Invocation::Run {
            named: vec![
                ("pid".into(), "42".into()),
                ("recording".into(), "app.allocs".into()),
                ("duration".into(), "3".into()),
            ],
            globals: Globals::default(),
        })
    );
    let err = parse(&["-o", "app.allocs"]).unwrap_err();
    assert!(
        err.starts_with("missing option: one of -c CMD, -p PID\nUSAGE:"),
        "{err}"
    );
    let err = parse(&["-c", "ls"]).unwrap_err();
    assert!(err.starts_with("missing option -o FILE\n"), "{err}");
    assert_eq!(find("memusage").unwrap().doc().recording, None);
}
