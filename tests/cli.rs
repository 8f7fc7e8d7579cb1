//! The command line: help, version, usage errors, missing files, probe listing and garbage
//! input. No eBPF program is loaded here (listing needs root to read tracefs).

mod common;

use common::{TempDir, build_target, run_sonde, skip_unless_root};

#[test]
fn help_shows_usage_and_builtins() {
    let out = run_sonde(&["--help"]);
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert!(
        out.stdout.to_lowercase().contains("usage"),
        "stdout: {}",
        out.stdout
    );
    for word in ["nsecs", "comm", "pid", "printf", "tracepoint"] {
        assert!(
            out.stdout.contains(word),
            "--help does not mention {word}:\n{}",
            out.stdout
        );
    }
}

#[test]
fn version_starts_with_sonde_v() {
    let out = run_sonde(&["-V"]);
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert!(out.stdout.starts_with("sonde v"), "stdout: {}", out.stdout);
    assert!(
        out.stdout
            .chars()
            .nth(7)
            .is_some_and(|c| c.is_ascii_digit()),
        "stdout: {}",
        out.stdout
    );
}

#[test]
fn unknown_flag_is_a_usage_error() {
    let out = run_sonde(&["--no-such-flag", "-e", "BEGIN { exit(); }"]);
    assert_eq!(out.code, Some(2), "stderr: {}", out.stderr);
    assert!(
        out.stderr.contains("no-such-flag"),
        "stderr: {}",
        out.stderr
    );
}

#[test]
fn no_program_is_a_usage_error() {
    let out = run_sonde(&[]);
    assert_ne!(out.code, Some(0));
    assert!(out.code.is_some(), "killed: {out:?}");
    assert!(!out.stderr.is_empty());
}

#[test]
fn missing_script_file_fails_with_a_message() {
    let dir = TempDir::new("missing");
    let file = dir.path().join("does-not-exist.sd");
    let out = run_sonde(&[file.to_str().unwrap()]);
    assert!(matches!(out.code, Some(c) if c != 0), "{out:?}");
    assert!(
        out.stderr.contains("does-not-exist.sd"),
        "stderr: {}",
        out.stderr
    );
    assert!(!out.stderr.contains("panicked"), "stderr: {}", out.stderr);
}

#[test]
fn binary_garbage_script_is_rejected_without_panic() {
    let dir = TempDir::new("garbage");
    let file = dir.path().join("garbage.sd");
    let bytes: Vec<u8> = (0..2048u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    std::fs::write(&file, bytes).unwrap();
    let out = run_sonde(&["--check", file.to_str().unwrap()]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(!out.stderr.is_empty());
    assert!(!out.stderr.contains("panicked"), "stderr: {}", out.stderr);
    let out = run_sonde(&[file.to_str().unwrap()]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(!out.stderr.contains("panicked"), "stderr: {}", out.stderr);
}

#[test]
fn check_accepts_a_valid_program_and_rejects_an_invalid_one() {
    let ok = run_sonde(&[
        "--check",
        "-e",
        r#"BEGIN { printf("%d\n", 1 + 2); exit(); }"#,
    ]);
    assert_eq!(ok.code, Some(0), "stderr: {}", ok.stderr);
    assert!(
        ok.stdout.is_empty(),
        "--check must not run the program: {}",
        ok.stdout
    );
    let bad = run_sonde(&["--check", "-e", "BEGIN { @x = ; }"]);
    assert_eq!(bad.code, Some(1), "stderr: {}", bad.stderr);
    assert!(!bad.stderr.is_empty());
}

#[test]
fn list_tracepoints_by_pattern() {
    if skip_unless_root("list_tracepoints_by_pattern") {
        return;
    }
    let out = run_sonde(&["-l", "tracepoint:sched:*"]);
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(
        lines.contains(&"tracepoint:sched:sched_switch"),
        "stdout: {}",
        out.stdout
    );
    assert!(
        lines.contains(&"tracepoint:sched:sched_wakeup"),
        "stdout: {}",
        out.stdout
    );
    assert!(
        lines.iter().all(|l| l.starts_with("tracepoint:sched:")),
        "stdout: {}",
        out.stdout
    );
}

#[test]
fn list_uprobes_of_a_binary() {
    if skip_unless_root("list_uprobes_of_a_binary") {
        return;
    }
    let dir = TempDir::new("list");
    let bin = build_target(&dir, "trigger");
    let pattern = format!("uprobe:{}:*", bin.display());
    let out = run_sonde(&["-l", &pattern]);
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    for func in ["target_work", "target_other", "main"] {
        let want = format!("uprobe:{}:{func}", bin.display());
        assert!(
            lines.contains(&want.as_str()),
            "missing {want} in:\n{}",
            out.stdout
        );
    }
    let narrow = format!("uprobe:{}:target_*", bin.display());
    let out = run_sonde(&["-l", &narrow]);
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let mut got: Vec<&str> = out.stdout.lines().collect();
    got.sort();
    assert_eq!(
        got,
        vec![
            format!("uprobe:{}:target_other", bin.display()),
            format!("uprobe:{}:target_work", bin.display())
        ]
    );
}

/// `--no-warnings` silences the checker's warnings (not its errors); `--cmd`, `--pid` and
/// `--output` are the long spellings of `-c`, `-p` and `-o`, as in bpftrace.
#[test]
fn no_warnings_and_long_option_spellings() {
    if skip_unless_root("no_warnings_and_long_option_spellings") {
        return;
    }
    let script = "BEGIN { $s = -7; $u = (uint64)10; $q = $s / $u; printf(\"x\\n\"); exit(); }";
    let warned = run_sonde(&["-e", script]);
    assert!(
        warned.stderr.contains("signed operands"),
        "{}",
        warned.stderr
    );
    let quiet = run_sonde(&["--no-warnings", "-e", script]);
    assert_eq!(quiet.code, Some(0), "{}", quiet.stderr);
    assert!(
        !quiet.stderr.contains("signed operands"),
        "{}",
        quiet.stderr
    );
    let error = run_sonde(&["--no-warnings", "-e", "BEGIN { $x = nosuch; }"]);
    assert_eq!(error.code, Some(1));
    assert!(
        error.stderr.contains("unknown identifier"),
        "{}",
        error.stderr
    );
    let dir = TempDir::new("long-options");
    let file = dir.path().join("out.txt");
    let out = run_sonde(&[
        "--cmd",
        "true",
        "--output",
        file.to_str().unwrap(),
        "-e",
        "BEGIN { printf(\"to the file\\n\"); }",
    ]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(written.starts_with("to the file\n"), "{written:?}");
    let pid = run_sonde(&["--pid", "notanumber", "-e", "BEGIN { exit(); }"]);
    assert_eq!(pid.code, Some(2), "{}", pid.stderr);
}

/// `-I DIR` adds a header directory and `--include FILE` an `#include` line: the constants
/// of both reach the script.
#[test]
fn include_dirs_and_include_files() {
    if skip_unless_root("include_dirs_and_include_files") {
        return;
    }
    let dir = TempDir::new("include-dirs");
    std::fs::create_dir_all(dir.path().join("my")).unwrap();
    std::fs::write(
        dir.path().join("my/consts.h"),
        "#include \"more.h\"\n#define MY_ANSWER (MY_BASE + 2)\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("my/more.h"), "#define MY_BASE 40\n").unwrap();
    let script = r#"BEGIN { printf("%d\n", MY_ANSWER); exit(); }"#;
    let out = run_sonde(&[
        "-I",
        dir.path().to_str().unwrap(),
        "--include",
        "my/consts.h",
        "-e",
        script,
    ]);
    assert_eq!(out.ok_stdout(), "42\n\n\n");
    let without = run_sonde(&["--include", "my/consts.h", "-e", script]);
    assert_eq!(without.code, Some(1));
    assert!(
        without.stderr.contains("unknown identifier `MY_ANSWER`"),
        "{}",
        without.stderr
    );
}

/// `-l` with a program lists the probes it would attach, wildcards expanded, in order;
/// BEGIN attaches nowhere and is left out, as bpftrace 0.26 does.
#[test]
fn list_with_a_program_expands_its_probes() {
    if skip_unless_root("list_with_a_program_expands_its_probes") {
        return;
    }
    let out = run_sonde(&[
        "-l",
        "-e",
        "tracepoint:syscalls:sys_enter_openat* { } tracepoint:sched:sched_switch { } BEGIN { }",
    ]);
    assert_eq!(
        out.ok_stdout(),
        "tracepoint:syscalls:sys_enter_openat\ntracepoint:syscalls:sys_enter_openat2\n\
         tracepoint:sched:sched_switch\n"
    );
    let bad = run_sonde(&["-l", "-e", "tracepoint:nope:nope { }"]);
    assert_eq!(bad.code, Some(1), "{}", bad.stderr);
}

#[test]
fn help_lists_every_command() {
    for flag in ["-h", "--help"] {
        let out = run_sonde(&[flag]);
        assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
        let commands = out
            .stdout
            .split_once("COMMANDS:\n")
            .unwrap_or_else(|| panic!("no COMMANDS in {flag}:\n{}", out.stdout))
            .1;
        for cmd in [
            "tools",
            "tool",
            "record",
            "replay",
            "flamediff",
            "repl",
            "man",
            "completions",
        ] {
            assert!(
                commands
                    .lines()
                    .any(|l| l.trim_start().starts_with(&format!("{cmd} "))),
                "{flag} does not list {cmd}:\n{}",
                out.stdout
            );
        }
        assert!(
            out.stdout.contains("sonde repl [-f text|json]"),
            "{}",
            out.stdout
        );
    }
}

/// Writes `bytes` in `dir` as `name`.
fn write_file(dir: &TempDir, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn man_pages_render_with_every_command_and_option() {
    let dir = TempDir::new("man");
    let out = run_sonde(&["man"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let page = write_file(&dir, "sonde.1", out.stdout.as_bytes());
    for cmd in [
        "tools",
        "tool",
        "record",
        "replay",
        "flamediff",
        "repl",
        "man",
        "completions",
    ] {
        assert!(
            out.stdout.contains(&format!("sonde\\-{cmd}(1)")),
            "no {cmd}"
        );
        let sub = run_sonde(&["man", cmd]);
        assert_eq!(sub.code, Some(0), "{}", sub.stderr);
        assert!(
            sub.stdout.contains(&format!(".TH sonde-{cmd} 1")),
            "{}",
            sub.stdout
        );
    }
    for option in [
        "\\-\\-check",
        "\\-\\-dump",
        "\\-\\-engine",
        "\\-\\-post\\-eval",
        "\\-e",
    ] {
        assert!(out.stdout.contains(option), "no {option}");
    }
    let out = run_sonde(&["man", "nosuch"]);
    assert_eq!(out.code, Some(2));
    assert!(
        out.stderr.contains("one of tools, tool, record"),
        "{}",
        out.stderr
    );
    // man-db renders it without a warning, when it is installed.
    if std::process::Command::new("man")
        .arg("--version")
        .output()
        .is_ok()
    {
        let rendered = std::process::Command::new("man")
            .args(["--warnings", "-P", "cat", "-l"])
            .arg(&page)
            .env("MANWIDTH", "100")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&rendered.stdout);
        let warnings = String::from_utf8_lossy(&rendered.stderr);
        assert!(rendered.status.success(), "{warnings}");
        assert!(warnings.trim().is_empty(), "{warnings}");
        for words in [
            "NAME",
            "SYNOPSIS",
            "--check",
            "sonde-repl(1)",
            "SUBCOMMANDS",
        ] {
            assert!(text.contains(words), "no {words} in:\n{text}");
        }
    }
}

#[test]
fn bash_completion_completes_commands_and_options() {
    let out = run_sonde(&["completions", "bash"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let dir = TempDir::new("completion");
    let script = write_file(&dir, "sonde.bash", out.stdout.as_bytes());
    let syntax = std::process::Command::new("bash")
        .arg("-n")
        .arg(&script)
        .output()
        .unwrap();
    assert!(
        syntax.status.success(),
        "{}",
        String::from_utf8_lossy(&syntax.stderr)
    );
    // What Tab offers after `sonde to` and after `sonde --du`, through the generated function.
    let complete = |words: &str| {
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(
                r#"source "$1"; read -ra COMP_WORDS <<< "$2"; COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ));
                COMP_LINE="$2"; COMP_POINT=${#COMP_LINE};
                _sonde sonde "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}";
                printf '%s\n' "${COMPREPLY[@]}""#,
            )
            .arg("bash")
            .arg(&script)
            .arg(words)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut words: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.trim().to_string())
            .collect();
        words.sort();
        words
    };
    assert_eq!(complete("sonde to"), ["tool", "tools"]);
    assert_eq!(complete("sonde --du"), ["--dump"]);
    assert!(complete("sonde tool sys").contains(&"syscount".to_string()));
    for shell in ["zsh", "fish"] {
        let out = run_sonde(&["completions", shell]);
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        assert!(out.stdout.contains("repl"), "{shell}");
    }
    let out = run_sonde(&["completions", "tcsh"]);
    assert_eq!(out.code, Some(2));
    assert!(
        out.stderr
            .contains("usage: sonde completions bash|zsh|fish"),
        "{}",
        out.stderr
    );
}
