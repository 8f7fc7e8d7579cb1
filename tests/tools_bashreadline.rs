//! `sonde tool bashreadline`: the test feeds known command lines to an interactive bash (its
//! stdin a pipe: bash still reads it with readline) and asserts the lines of that shell's
//! pid: each command as typed, cut to 79 bytes, in order, with an HH:MM:SS time; `-s` names
//! the binary or library readline is in, and a path that is no file is a usage error. Side by
//! side with /usr/sbin/bashreadline: the same header and the same rows.

mod common;
mod tools_support;

use common::{ATTACH_TIMEOUT, Tracer, run_sonde, settle, skip_unless_root};
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;
use tools_support::libbpf::{installed, side_by_side_on};

const HEADER: &str = "TIME      PID     COMMAND";

/// The lines the test's shell reads: the last one longer than the tool's 79 bytes.
fn commands() -> Vec<String> {
    vec![
        "echo sd_readline_one".to_string(),
        "true  two   spaces".to_string(),
        format!("echo {}", "x".repeat(100)),
    ]
}

/// Runs `bash --norc -i` on the commands; returns its pid.
fn type_commands() -> String {
    let mut bash = Command::new("bash")
        .args(["--norc", "-i"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start bash");
    let mut stdin = bash.stdin.take().expect("piped");
    for c in commands() {
        writeln!(stdin, "{c}").expect("write to bash");
    }
    drop(stdin);
    assert!(bash.wait().expect("bash").success());
    std::thread::sleep(Duration::from_millis(300));
    bash.id().to_string()
}

/// The (PID, COMMAND) of the lines of `pid`, with the time column checked.
fn rows(text: &str, pid: &str) -> Vec<String> {
    text.lines()
        .skip(1)
        .filter(|l| l.get(10..18).is_some_and(|p| p.trim_end() == pid))
        .map(|l| {
            let t = l.as_bytes();
            assert!(
                t[2] == b':' && t[5] == b':' && &l[8..10] == "  ",
                "HH:MM:SS: {l}"
            );
            l[18..].to_string()
        })
        .collect()
}

/// The commands as the tools print them: at most 79 bytes.
fn expected() -> Vec<String> {
    commands()
        .iter()
        .map(|c| c[..c.len().min(79)].to_string())
        .collect()
}

#[test]
fn bashreadline_prints_the_lines_bash_reads() {
    if skip_unless_root("bashreadline_prints_the_lines_bash_reads") {
        return;
    }
    for flags in [&[][..], &["-s", "/bin/bash"]] {
        let mut args = vec!["tool", "bashreadline"];
        args.extend_from_slice(flags);
        let mut tracer = Tracer::start(&args);
        assert!(tracer.wait_attached(ATTACH_TIMEOUT));
        settle();
        let pid = type_commands();
        tracer.interrupt();
        let out = tracer.finish(Duration::from_secs(10));
        let text = out.ok_stdout();
        assert_eq!(text.lines().next(), Some(HEADER), "{text}");
        assert_eq!(rows(text, &pid), expected(), "{flags:?}\n{text}");
    }
    // -s: a path that is no file is a usage error, before anything is compiled.
    let out = run_sonde(&["tool", "bashreadline", "-s", "/nonexistent/libreadline.so"]);
    assert_eq!(out.code, Some(2));
    assert!(
        out.stderr
            .contains("bad value for --shared: `/nonexistent/libreadline.so` is not a file"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("uretprobe"), "{}", out.stderr);
}

#[test]
fn bashreadline_side_by_side_with_libbpf_tools() {
    if skip_unless_root("bashreadline_side_by_side_with_libbpf_tools") {
        return;
    }
    if installed("bashreadline").is_none() {
        return;
    }
    let mut pid = String::new();
    let (sonde, bcc) = side_by_side_on("bashreadline", &[], &[], || pid = type_commands());
    let (mine, theirs) = (sonde.ok_stdout().to_string(), bcc.stdout);
    let why = format!("sonde:\n{mine}\nbcc:\n{theirs}");
    assert_eq!(mine.lines().next(), theirs.lines().next(), "{why}");
    assert_eq!(rows(&mine, &pid), rows(&theirs, &pid), "{why}");
    assert_eq!(rows(&mine, &pid), expected(), "{why}");
}
