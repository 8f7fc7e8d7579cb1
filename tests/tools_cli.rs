//! The tool mechanism end to end: `sonde tools` lists every shipped tool, `sonde tool NAME -h`
//! prints its header, unknown flags are usage errors naming the tool's options, and named
//! parameters reach `getopt()` both as tool flags and after `--` on a script.

mod common;

use common::{TempDir, run_sonde, skip_unless_root};

#[test]
fn tools_lists_every_tool_with_its_summary() {
    let out = run_sonde(&["tools"]);
    let text = out.ok_stdout();
    assert!(
        text.lines().any(|l| l
            == "execsnoop        trace new processes: every exec() with its arguments and result."),
        "{text}"
    );
}

#[test]
fn tool_help_prints_the_header() {
    let out = run_sonde(&["tool", "execsnoop", "-h"]);
    let text = out.ok_stdout();
    assert!(
        text.starts_with("execsnoop - trace new processes"),
        "{text}"
    );
    assert!(
        text.contains("USAGE: sonde tool execsnoop [-T] [-t] [-x] [-n NAME]"),
        "{text}"
    );
}

#[test]
fn unknown_tool_flag_is_a_usage_error_listing_the_options() {
    let out = run_sonde(&["tool", "execsnoop", "-Z"]);
    assert_eq!(out.code, Some(2));
    assert!(
        out.stderr
            .starts_with("sonde tool execsnoop: unknown option `-Z`\nUSAGE:"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("  -x, --fails          Only show failed exec()s"),
        "{}",
        out.stderr
    );
    let out = run_sonde(&["tool", "nosuchtool"]);
    assert_eq!(out.code, Some(2));
    assert!(
        out.stderr.contains("no tool named `nosuchtool`"),
        "{}",
        out.stderr
    );
}

#[test]
fn named_parameters_reach_getopt_after_double_dash() {
    if skip_unless_root("named_parameters_reach_getopt_after_double_dash") {
        return;
    }
    let dir = TempDir::new("getopt");
    let script = dir.path().join("opts.sd");
    std::fs::write(
        &script,
        r#"BEGIN { printf("%d %d %s %d\n", getopt("pid", 7), getopt("verbose"), getopt("name", "def"), getopt("neg", -3)); exit(); }"#,
    )
    .unwrap();
    let s = script.to_str().unwrap();
    let out = run_sonde(&["-q", s]);
    assert_eq!(out.ok_stdout(), "7 0 def -3\n\n\n");
    let out = run_sonde(&[
        "-q",
        s,
        "--",
        "--pid=123",
        "--verbose",
        "--name=bash",
        "--neg=0x10",
    ]);
    assert_eq!(out.ok_stdout(), "123 1 bash 16\n\n\n");
    let out = run_sonde(&["-q", s, "--", "--pid=abc"]);
    assert_eq!(out.code, Some(1));
    assert!(
        out.stderr.contains("sonde::codegen::getopt_value"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("bad value for --pid: `abc` is not an integer"),
        "{}",
        out.stderr
    );
    let out = run_sonde(&["-q", s, "--", "--bogus=1"]);
    assert_eq!(out.code, Some(2));
    assert_eq!(
        out.stderr,
        "sonde: unexpected named parameter --bogus; this script reads: --pid, --verbose, --name, --neg\n"
    );
}
