//! The tool mechanism end to end: `sonde tools` lists every shipped tool, `sonde tool NAME -h`
//! prints its header, unknown flags are usage errors naming the tool's options, and named
//! parameters reach `getopt()` both as tool flags and after `--` on a script.

mod common;

use common::{TempDir, Tracer, run_sonde, skip_unless_root};
use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn tools_lists_every_tool_with_its_summary() {
    let out = run_sonde(&["tools"]);
    let text = out.ok_stdout();
    assert!(
        text.lines()
            .any(|l| l == "execsnoop        trace exec syscalls, as bcc's execsnoop."),
        "{text}"
    );
}

#[test]
fn tool_help_prints_the_header() {
    let out = run_sonde(&["tool", "execsnoop", "-h"]);
    let text = out.ok_stdout();
    assert!(
        text.starts_with("execsnoop - trace exec syscalls"),
        "{text}"
    );
    assert!(
        text.contains("USAGE: sonde tool execsnoop [-T] [-t] [-x] [-u UID] [-q] [-n NAME]"),
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
            .contains("  -x, --fails              include failed exec()s"),
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
fn tool_values_out_of_range_are_usage_errors() {
    for (args, want) in [
        (
            &["-i", "0"][..],
            "sonde tool syscount: bad value for --interval: `0` must be a positive integer\n",
        ),
        (
            &["-i", "-5"][..],
            "sonde tool syscount: bad value for --interval: `-5` must be a positive integer\n",
        ),
        (
            &["-p", "99999999999"][..],
            "sonde tool syscount: bad value for --pid: `99999999999` is not a process id (1 to 4194304)\n",
        ),
        (
            &["--pid=4194304"][..],
            "sonde tool syscount: bad value for --pid: no process has pid 4194304\n",
        ),
    ] {
        let mut argv = vec!["tool", "syscount"];
        argv.extend_from_slice(args);
        let out = run_sonde(&argv);
        assert_eq!(out.code, Some(2), "{args:?}: {out:?}");
        assert!(out.stderr.starts_with(want), "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains("USAGE:"), "{}", out.stderr);
    }
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
            .contains("program command line option --pid invalid integer (value: abc)"),
        "{}",
        out.stderr
    );
    let out = run_sonde(&["-q", s, "--", "--bogus=1"]);
    assert_eq!(out.code, Some(2));
    assert_eq!(
        out.stderr,
        "ERROR: unexpected program command line options: --bogus\nHINT: expected program options: --pid, --verbose, --name, --neg\n"
    );
}

#[test]
fn a_tool_without_its_required_argument_prints_its_usage() {
    for (args, first) in [
        (&["tool", "funclatency"][..], "missing argument pattern"),
        (
            &["tool", "funclatency", "nocolon"][..],
            "pattern must be BINARY:FUNCTION, not `nocolon`",
        ),
        (
            &["tool", "funclatency", "-p", "abc", "libc:malloc"][..],
            "bad value for --pid: `abc` is not an integer",
        ),
        (
            &["tool", "execsnoop", "-f", "xml"][..],
            "unknown output format `xml` (text, json, folded or csv)",
        ),
    ] {
        let out = run_sonde(args);
        assert_eq!(out.code, Some(2), "{args:?}: {}", out.stderr);
        let tool = args[1];
        assert!(
            out.stderr.starts_with(&format!(
                "sonde tool {tool}: {first}\nUSAGE: sonde tool {tool}"
            )),
            "{args:?}: {}",
            out.stderr
        );
        assert!(!out.stderr.contains("sonde::"), "{args:?}: {}", out.stderr);
        assert_eq!(out.stdout, "");
    }
}

#[test]
fn tool_help_and_listing_show_the_global_options() {
    for args in [&["tool", "profile", "-h"][..], &["tools"][..]] {
        let out = run_sonde(args);
        let text = out.ok_stdout();
        assert!(
            text.contains("GLOBAL OPTIONS (every tool):\n  -o FILE, --output=FILE ")
                && text.contains(
                    "  -f FORMAT, --format=FORMAT  Output format: text (default), json, folded or csv\n"
                )
                && text.contains("  -q, --quiet ")
                && text.contains("  --post=FILE "),
            "{text}"
        );
    }
}

#[test]
fn global_options_reach_every_tool() {
    if skip_unless_root("global_options_reach_every_tool") {
        return;
    }
    let dir = TempDir::new("toolglobals");
    let file = dir.path().join("out.json");
    let mut tracer = Tracer::start(&[
        "tool",
        "execsnoop",
        // execsnoop's own -q quotes its arguments: sonde's quiet is --quiet there.
        "--quiet",
        "-f",
        "json",
        "-o",
        file.to_str().unwrap(),
    ]);
    // Quiet: no "Attached" line to wait for, so exec until the tool's line appears.
    let marker = "sonde-globals-marker";
    let start = Instant::now();
    let mut text = String::new();
    while start.elapsed() < Duration::from_secs(15) && !text.contains(marker) {
        let _ = Command::new("/bin/true").arg(marker).status();
        std::thread::sleep(Duration::from_millis(100));
        text = std::fs::read_to_string(&file).unwrap_or_default();
    }
    tracer.interrupt();
    let out = tracer.finish(Duration::from_secs(10));
    // Only the blank lines bpftrace 0.17 also writes to stdout at exit under -o.
    assert_eq!(out.stdout.trim(), "", "output went to stdout");
    assert!(!out.stderr.contains("Attached"), "{}", out.stderr);
    let text = std::fs::read_to_string(&file).unwrap();
    // One JSON record per exec, keyed by execsnoop's columns (its header line names them).
    let row = text
        .lines()
        .find(|l| l.contains(r#""PCOMM": "true""#) && l.contains(marker))
        .unwrap_or_else(|| panic!("no exec of true:\n{text}"));
    assert!(
        row.starts_with(r#"{"type": "row", "data": {"PCOMM": "true", "PID": "#),
        "{row}"
    );
    assert!(
        row.ends_with(r#", "RET": 0, "ARGS": "/bin/true sonde-globals-marker"}}"#),
        "{row}"
    );
}

/// 116 pid-filtered uprobes take seconds to detach after the traced command ended (the
/// issue's `ltrace -c -x libc:str* CMD`): stderr says so, even when it is not a terminal; a
/// quick detach adds nothing.
#[test]
fn a_slow_detach_shows_a_status_line() {
    if skip_unless_root("a_slow_detach_shows_a_status_line") {
        return;
    }
    let mut tracer = Tracer::start(&["tool", "ltrace", "-c", "-x", "libc:str*", "true"]);
    assert!(tracer.wait_attached(std::time::Duration::from_secs(60)));
    let attached = std::time::Instant::now();
    let out = tracer.finish(std::time::Duration::from_secs(120));
    let after = attached.elapsed();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let status = out
        .stderr
        .lines()
        .find(|l| l.starts_with("Detaching "))
        .map(str::to_string);
    if after > std::time::Duration::from_secs(3) {
        let status = status.unwrap_or_else(|| {
            panic!("{after:?} after attaching, no status line:\n{}", out.stderr)
        });
        let n: usize = status
            .strip_prefix("Detaching ")
            .and_then(|s| s.strip_suffix(" probes..."))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{status:?}"));
        assert!(n > 20, "{status}");
        // And -q silences it, as it does "Attached N probes".
        let quiet = Tracer::start(&["tool", "ltrace", "-q", "-c", "-x", "libc:str*", "true"])
            .finish(std::time::Duration::from_secs(120));
        assert!(!quiet.stderr.contains("Detaching"), "{}", quiet.stderr);
    } else {
        assert_eq!(status, None, "a {after:?} detach: {}", out.stderr);
    }
}

#[test]
fn a_misspelt_tool_name_gets_a_suggestion() {
    let out = run_sonde(&["tool", "runqslowr"]);
    assert_eq!(out.code, Some(2));
    assert!(
        out.stderr.starts_with(
            "sonde: no tool named `runqslowr` (did you mean `runqslower`?); the tools are:"
        ),
        "{}",
        out.stderr
    );
    let out = run_sonde(&["tool", "zzzzzzzz"]);
    assert!(!out.stderr.contains("did you mean"), "{}", out.stderr);
}

#[test]
fn capable_fails_at_attach_naming_what_it_needs() {
    if skip_unless_root("capable_fails_at_attach_naming_what_it_needs") {
        return;
    }
    if std::path::Path::new("/sys/bus/event_source/devices/kprobe").exists() {
        eprintln!("skipped: this kernel has kprobes, capable attaches");
        return;
    }
    // The kprobe on cap_capable is refused at attach; the message names the function and what
    // could trace it, without the tool's source lines.
    let out = common::run_sonde_timeout(&["tool", "capable"], Duration::from_secs(30));
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("this kernel does not support kprobes: cannot attach kprobe to"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("`cap_capable`"), "{}", out.stderr);
    assert!(
        out.stderr.contains("no tracepoint sees capability checks"),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("kprobe:cap_capable"),
        "source lines: {}",
        out.stderr
    );
    assert!(!out.stderr.contains("╭─["), "source lines: {}", out.stderr);
}

/// Every tool that starts with no flags starts without a warning of its own script (a
/// shipped tool's user cannot edit it): at most the reason it cannot attach here (kprobes).
#[test]
fn every_tool_starts_without_warnings() {
    if skip_unless_root("every_tool_starts_without_warnings") {
        return;
    }
    let list = run_sonde(&["tools"]);
    let names: Vec<String> = list
        .ok_stdout()
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    assert!(names.len() >= 30, "{names:?}");
    let mut started = 0;
    for name in &names {
        let mut tracer = Tracer::start(&["tool", name]);
        let attached = tracer.wait_attached(Duration::from_secs(20));
        tracer.interrupt();
        let out = tracer.finish(Duration::from_secs(20));
        if out.code == Some(2) {
            // A tool that needs an argument or a flag (memusage's -c or -p, ...).
            continue;
        }
        started += usize::from(attached);
        assert!(
            !out.stderr.contains('⚠') && !out.stderr.contains("warning"),
            "sonde tool {name}:\n{}",
            out.stderr
        );
    }
    assert!(started >= 20, "only {started} tools started");
}

/// libbpf-tools' options every tool takes: -V, --usage, and -v where a tool does not declare
/// it.
#[test]
fn every_tool_takes_version_usage_and_verbose() {
    let out = run_sonde(&["tool", "execsnoop", "-V"]);
    assert_eq!(
        out.ok_stdout(),
        format!("execsnoop (sonde {})\n", env!("CARGO_PKG_VERSION"))
    );
    let out = run_sonde(&["tool", "funclatency", "--usage"]);
    assert_eq!(
        out.ok_stdout(),
        "USAGE: sonde tool funclatency [-u | -m] [-F] [-r] [-T] [-p PID | --cmd=CMD] [-c CG]\n         [-d SECONDS] [-i SECONDS] [--heatmap=FILE] binary:function\n"
    );
    let help = run_sonde(&["tool", "runqlat", "-h"]);
    assert!(
        help.ok_stdout().contains("  -V, --version "),
        "{}",
        help.stdout
    );
    if skip_unless_root("every_tool_takes_version_usage_and_verbose") {
        return;
    }
    // runqlat's header has no -v: sonde's verbose mode (the verifier's raw logs when a program
    // is refused), and the tool runs.
    let out = common::run_sonde_timeout(
        &["tool", "runqlat", "-v", "1", "1"],
        Duration::from_secs(30),
    );
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stdout.starts_with("Tracing run queue latency"),
        "{}",
        out.stdout
    );
}
