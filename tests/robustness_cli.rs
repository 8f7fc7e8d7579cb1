//! Robustness of the command line (issue 9): no panic on a closed pipe or on non-UTF-8
//! arguments, an empty program is an error, exit codes stay in 0..=255, write errors on the
//! output are reported, `-c`/`-p` targets that cannot be traced are refused before
//! attaching, the kernel's 64-programs-per-tracepoint limit is named, an unprivileged
//! user is told once that root is needed (while userspace scripts keep working), and
//! Ctrl-C ends a run promptly even with `system()` on a busy probe or during a long load, and
//! a program too complex for the verifier is rejected quickly.
//!
//! bpftrace 0.17, compared on the same machine: `-e ''` is "USAGE: filename or -e 'program'
//! required." (exit 1), a file of comments "unexpected end of file, expected {" (exit 1);
//! `-c` with a missing, non-executable or non-ELF path "Failed to fork child: path '...' does
//! not exist or is not executable" (exit 255; sonde says which, exits 1, and runs `#!`
//! scripts); `-p 999999` "No such process" (exit 1); when the `-p` process exits, END runs and
//! the maps print (exit 0); the 65th program on a tracepoint fails with "Argument list too
//! long"; unprivileged, "bpftrace currently only supports running as the root user." (exit 1);
//! `bpftrace -l | head -1` dies of SIGPIPE (sonde exits 0 quietly); write errors on the
//! output are ignored (sonde reports them, exit 1).

mod common;

use common::{Output, TempDir, is_root, run_command, run_sonde, skip_unless_root, sonde};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Hard limit for one run here.
const RUN_TIMEOUT: Duration = Duration::from_secs(15);

/// Asserts that nothing panicked.
fn no_panic(out: &Output, what: &str) {
    assert!(!out.timed_out, "{what}: timed out\n{out:?}");
    assert!(
        !out.stderr.contains("panicked"),
        "{what}: panic\n{}",
        out.stderr
    );
}

/// Runs sonde with `args` whose stdout is the write end of a pipe whose read end is already
/// closed: every write to stdout fails with EPIPE.
fn run_into_closed_pipe(args: &[&OsStr]) -> Output {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let mut cmd = Command::new(sonde());
    cmd.args(args);
    run_with_stdout(cmd, writer.into())
}

/// Runs `cmd` (stdin closed) with `stdout` as its standard output; collects its stderr.
fn run_with_stdout(mut cmd: Command, stdout: Stdio) -> Output {
    let dir = TempDir::new("robust-stderr");
    let err_path = dir.path().join("stderr");
    let err = std::fs::File::create(&err_path).expect("stderr file");
    cmd.stdin(Stdio::null()).stdout(stdout).stderr(err);
    let mut child = cmd.spawn().expect("spawn sonde");
    let (status, timed_out) = common::wait_with_timeout(&mut child, RUN_TIMEOUT);
    Output {
        code: status.and_then(|s| s.code()),
        stdout: String::new(),
        stderr: String::from_utf8_lossy(&std::fs::read(&err_path).unwrap_or_default()).into_owned(),
        timed_out,
    }
}

/// Runs sonde with `args` and its standard output on `/dev/full` (every write: ENOSPC).
fn run_into_dev_full(args: &[&str]) -> Output {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let mut cmd = Command::new(sonde());
    cmd.args(args);
    run_with_stdout(cmd, full.into())
}

/// The words of a rendered diagnostic, joined by single spaces, without miette's frame
/// characters (so that wrapped lines read as one).
fn words(text: &str) -> String {
    text.split_whitespace()
        .filter(|w| !matches!(*w, "│" | "·"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn os<'a>(args: &[&'a str]) -> Vec<&'a OsStr> {
    args.iter().map(|a| OsStr::new(*a)).collect()
}

// ---------------------------------------------------------------------------------------------
// 1. Panics: closed pipes, non-UTF-8 arguments

#[test]
fn a_closed_stdout_ends_quietly() {
    let mut cases: Vec<Vec<&str>> = vec![
        vec!["-V"],
        vec!["--help"],
        vec!["tools"],
        vec!["tool", "execsnoop", "-h"],
        vec!["--dump", "ast", "-e", "BEGIN { exit(); }"],
        vec![
            "--engine",
            "jit",
            "-e",
            r#"BEGIN { printf("x\n"); @a = 1; exit(); }"#,
        ],
        // Kernel-free: an interval probe printing forever ends on the closed pipe.
        vec![
            "--engine",
            "jit",
            "-e",
            r#"interval:ms:1 { printf("tick\n"); }"#,
        ],
    ];
    if is_root() {
        cases.push(vec!["-l"]);
        cases.push(vec!["-l", "struct task_struct"]);
        cases.push(vec!["-l", "tracepoint:sched:*"]);
        cases.push(vec!["-e", r#"interval:ms:1 { printf("tick\n"); }"#]);
        cases.push(vec![
            "--dump",
            "bpf",
            "-e",
            "tracepoint:sched:sched_switch { @ = count(); }",
        ]);
    }
    for args in cases {
        let out = run_into_closed_pipe(&os(&args));
        no_panic(&out, &format!("{args:?}"));
        assert_eq!(out.code, Some(0), "{args:?}: {}", out.stderr);
        assert!(
            !out.stderr.contains("error") && !out.stderr.contains("×"),
            "{args:?}: a closed pipe is a quiet stop: {}",
            out.stderr
        );
    }
}

#[test]
fn non_utf8_arguments_are_refused_by_name() {
    let cases: [&[&[u8]]; 5] = [
        &[b"-e", b"BEGIN { printf(\"\xff\"); }"],
        &[b"-c", b"ls\xfe", b"-e", b"BEGIN { exit(); }"],
        &[b"--engine", b"jit", b"-e", b"BEGIN { exit(); }", b"p\xffq"],
        &[b"-l", b"sched\xff"],
        &[b"tool", b"\xffx"],
    ];
    for args in cases {
        let args: Vec<&OsStr> = args.iter().map(|a| OsStr::from_bytes(a)).collect();
        let mut cmd = Command::new(sonde());
        cmd.args(&args);
        let out = run_command(cmd, RUN_TIMEOUT);
        no_panic(&out, &format!("{args:?}"));
        assert_eq!(out.code, Some(2), "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.contains("is not valid UTF-8"),
            "{args:?}: {}",
            out.stderr
        );
        assert!(
            out.stderr.contains('\u{fffd}') || out.stderr.contains("pattern"),
            "{args:?}: the argument is shown: {}",
            out.stderr
        );
    }
}

#[test]
fn a_script_path_need_not_be_utf8() {
    let dir = TempDir::new("robust-path");
    let name = OsStr::from_bytes(b"script-\xff.bt");
    let path = dir.path().join(name);
    std::fs::write(&path, "BEGIN { printf(\"ok %s\\n\", str($1)); exit(); }\n").unwrap();
    let mut cmd = Command::new(sonde());
    cmd.args(["--engine", "jit", "-q"]).arg(&path).arg("one");
    let out = run_command(cmd, RUN_TIMEOUT);
    no_panic(&out, "non-UTF-8 path");
    // bpftrace prints two newlines before the (here absent) maps at exit.
    assert_eq!(out.ok_stdout(), "ok one\n\n\n");

    // A missing one is named (lossily) in the error.
    let mut cmd = Command::new(sonde());
    cmd.arg(dir.path().join(OsStr::from_bytes(b"missing-\xfe.bt")));
    let out = run_command(cmd, RUN_TIMEOUT);
    no_panic(&out, "missing non-UTF-8 path");
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("failed to open file '") && out.stderr.contains("missing-\u{fffd}.bt"),
        "{}",
        out.stderr
    );
}

// ---------------------------------------------------------------------------------------------
// 2. Empty programs

#[test]
fn a_program_without_probes_is_an_error() {
    let dir = TempDir::new("robust-empty");
    let empty = dir.path().join("empty.bt");
    std::fs::write(&empty, "").unwrap();
    let comments = dir.path().join("comments.bt");
    std::fs::write(&comments, "// nothing\n/* to see */\n\n").unwrap();
    let config = dir.path().join("config.bt");
    std::fs::write(&config, "config = { max_map_keys = 8 }\n").unwrap();
    let cases: Vec<Vec<String>> = vec![
        vec!["-e".into(), String::new()],
        vec!["-e".into(), "  \n ".into()],
        vec![empty.display().to_string()],
        vec![comments.display().to_string()],
        vec![config.display().to_string()],
        vec!["--check".into(), comments.display().to_string()],
        vec!["--engine".into(), "jit".into(), "-e".into(), "// x".into()],
    ];
    for args in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run_sonde(&args);
        no_panic(&out, &format!("{args:?}"));
        assert_eq!(out.code, Some(1), "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.contains("sonde::parse::no_probes")
                && out.stderr.contains("the program has no probes"),
            "{args:?}: {}",
            out.stderr
        );
        assert!(!out.stderr.contains("Attached"), "{args:?}: {}", out.stderr);
        assert_eq!(out.stdout, "", "{args:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// 3. Exit codes

#[test]
fn constant_exit_codes_outside_0_to_255_are_refused() {
    for (prog, shown) in [
        ("BEGIN { exit(300); }", "300"),
        ("BEGIN { exit(256); }", "256"),
        ("BEGIN { exit(-1); }", "-1"),
        ("BEGIN { exit($1); }", "1000"),
    ] {
        for check in [true, false] {
            let mut args = vec!["--engine", "jit", "-e", prog, "1000"];
            if check {
                args.insert(0, "--check");
            }
            let out = run_sonde(&args);
            no_panic(&out, prog);
            assert_eq!(out.code, Some(1), "{args:?}: {}", out.stderr);
            assert!(
                out.stderr.contains("sonde::sema::exit_code")
                    && out
                        .stderr
                        .contains(&format!("exit code {shown} is out of range")),
                "{args:?}: {}",
                out.stderr
            );
        }
    }
    let out = run_sonde(&["--engine", "jit", "-q", "-e", "BEGIN { exit(255); }"]);
    assert_eq!(out.code, Some(255), "{}", out.stderr);
}

#[test]
fn run_time_exit_codes_outside_0_to_255_exit_255() {
    let mut engines = vec![vec!["--engine", "jit"]];
    if is_root() {
        engines.push(Vec::new());
    }
    for engine in engines {
        for (value, code) in [("300", 255), ("256", 255), ("0 - 1", 255), ("7", 7)] {
            let prog = format!("BEGIN {{ $c = {value}; exit($c); }}");
            let mut args = engine.clone();
            args.extend(["-q", "-e", &prog]);
            let out = run_sonde(&args);
            no_panic(&out, &prog);
            assert_eq!(out.code, Some(code), "{args:?}: {}", out.stderr);
            if code == 255 {
                assert!(
                    out.stderr
                        .contains("exit codes are 0 to 255; exiting with 255"),
                    "{args:?}: {}",
                    out.stderr
                );
            } else {
                assert_eq!(out.stderr, "", "{args:?}");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 4. Write errors on the output

#[test]
fn write_errors_on_the_output_are_reported() {
    let once = r#"BEGIN { printf("hello\n"); @a = 1; exit(); }"#;
    let forever = r#"interval:ms:1 { printf("tick\n"); }"#;
    let mut runs: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--engine", "jit", "-e", once], "standard output"),
        (vec!["--engine", "jit", "-e", forever], "standard output"),
        (
            vec!["--engine", "jit", "-f", "json", "-e", once],
            "standard output",
        ),
        (
            vec!["--engine", "jit", "-o", "/dev/full", "-e", once],
            "/dev/full",
        ),
        (
            vec!["--engine", "jit", "-o", "/dev/full", "-e", forever],
            "/dev/full",
        ),
    ];
    if is_root() {
        runs.push((vec!["-e", once], "standard output"));
        runs.push((vec!["-e", forever], "standard output"));
        runs.push((vec!["-o", "/dev/full", "-e", forever], "/dev/full"));
        runs.push((vec!["-l", "tracepoint:sched:*"], "standard output"));
    }
    runs.push((vec!["tools"], "standard output"));
    runs.push((vec!["--help"], "standard output"));
    for (args, dest) in runs {
        let out = run_into_dev_full(&args);
        no_panic(&out, &format!("{args:?}"));
        assert_eq!(out.code, Some(1), "{args:?}: {}", out.stderr);
        let msg = format!("cannot write to {dest}: No space left on device");
        assert_eq!(
            out.stderr.matches(&msg).count(),
            1,
            "{args:?}: one message: {}",
            out.stderr
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 5. -c commands that cannot run

#[test]
fn c_commands_that_cannot_run_fail_before_attaching() {
    if skip_unless_root("c_commands_that_cannot_run_fail_before_attaching") {
        return;
    }
    let dir = TempDir::new("robust-c");
    let write = |name: &str, text: &str, mode: u32| -> PathBuf {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p
    };
    let text = write("text", "hello\n", 0o755);
    let noexec = write("noexec", "#!/bin/sh\nexit 0\n", 0o644);
    let script = write("script", "#!/bin/sh\nexit 0\n", 0o755);
    let missing = dir.path().join("missing");
    let d = dir.path().display().to_string();
    let prog = "tracepoint:syscalls:sys_enter_getpid { @ = count(); }";
    for (cmd, why) in [
        (
            text.display().to_string(),
            "not an executable (neither an ELF binary nor a script starting with #!)",
        ),
        (
            noexec.display().to_string(),
            "not executable (permission denied)",
        ),
        (missing.display().to_string(), "no such file"),
        (d.clone(), "not a regular file"),
        (
            "no-such-command-here --flag".to_string(),
            "command not found",
        ),
    ] {
        let out = run_sonde(&["-c", &cmd, "-e", prog]);
        no_panic(&out, &cmd);
        assert_eq!(out.code, Some(1), "{cmd}: {}", out.stderr);
        assert!(
            out.stderr.contains("cannot run -c"),
            "{cmd}: {}",
            out.stderr
        );
        assert!(out.stderr.contains(why), "{cmd}: {}", out.stderr);
        assert!(
            !out.stderr.contains("Attached"),
            "{cmd}: attached first: {}",
            out.stderr
        );
    }
    // A #! script runs (bpftrace refuses it).
    let out = run_sonde(&[
        "-q",
        "-c",
        &script.display().to_string(),
        "-e",
        "END { printf(\"end\\n\"); }",
    ]);
    assert_eq!(out.ok_stdout(), "end\n\n\n");
}

// ---------------------------------------------------------------------------------------------
// 6. -p

#[test]
fn p_with_a_missing_pid_is_refused() {
    if skip_unless_root("p_with_a_missing_pid_is_refused") {
        return;
    }
    // A pid that existed and is reaped: nothing has it now (pids are not reused this fast).
    let mut gone = Command::new("true").spawn().unwrap();
    gone.wait().unwrap();
    let pid = gone.id().to_string();
    let out = run_sonde(&[
        "-p",
        &pid,
        "-e",
        "tracepoint:syscalls:sys_enter_getpid { @ = count(); }",
    ]);
    no_panic(&out, "-p");
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(
        out.stderr.contains("sonde::runtime::no_process")
            && out.stderr.contains(&format!("no process with pid {pid}")),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("Attached"), "{}", out.stderr);
    let out = run_sonde(&["-p", "0", "-e", "tracepoint:syscalls:sys_enter_getpid { }"]);
    assert_eq!(out.code, Some(1), "-p 0: {}", out.stderr);
    assert!(out.stderr.contains("no process with pid"), "{}", out.stderr);
    // Past the largest pid the kernel has: bpftrace's usage error.
    let out = run_sonde(&[
        "-p",
        "4294967295",
        "-e",
        "tracepoint:syscalls:sys_enter_getpid { }",
    ]);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("Pid out of range: 4294967295"),
        "{}",
        out.stderr
    );
}

#[test]
fn p_run_ends_when_the_process_exits() {
    if skip_unless_root("p_run_ends_when_the_process_exits") {
        return;
    }
    let mut target = Command::new("sleep").arg("1").spawn().unwrap();
    let pid = target.id().to_string();
    let out = run_sonde(&[
        "-p",
        &pid,
        "-e",
        r#"tracepoint:syscalls:sys_enter_getpid { @ = count(); } END { printf("end\n"); @n = 5; }"#,
    ]);
    let _ = target.wait();
    no_panic(&out, "-p exit");
    assert_eq!(out.ok_stdout(), "end\n\n\n@n: 5\n");
}

// ---------------------------------------------------------------------------------------------
// 7. The kernel's 64 programs per tracepoint

#[test]
fn the_65th_program_on_a_tracepoint_names_the_kernel_limit() {
    if skip_unless_root("the_65th_program_on_a_tracepoint_names_the_kernel_limit") {
        return;
    }
    let prog: String = (0..65)
        .map(|i| format!("tracepoint:syscalls:sys_enter_getppid {{ @a{i} = count(); }}\n"))
        .collect();
    let out = run_sonde(&["--dry-run", "-e", &prog]);
    no_panic(&out, "65 programs");
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    let w = words(&out.stderr);
    assert!(w.contains("sonde::attach::too_many_programs"), "{w}");
    assert!(
        w.contains("the kernel allows at most 64 BPF programs on one tracepoint"),
        "{w}"
    );
    assert!(
        w.contains("this script has 65 probes on tracepoint:syscalls:sys_enter_getppid"),
        "{w}"
    );
    assert!(!w.contains("check that the attach point exists"), "{w}");
}

// ---------------------------------------------------------------------------------------------
// 8. Without privileges

/// A copy of sonde that user 65534 can run, in `dir`.
fn shared_copy(dir: &TempDir) -> PathBuf {
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let copy = dir.path().join("sonde");
    std::fs::copy(sonde(), &copy).expect("copy sonde");
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
    copy
}

/// `bin args` as user and group 65534 when root (through setpriv); as is otherwise.
fn unprivileged(bin: &Path, args: &[&str]) -> Option<Command> {
    if !is_root() {
        let mut cmd = Command::new(bin);
        cmd.args(args);
        return Some(cmd);
    }
    let setpriv = ["/usr/bin/setpriv", "/bin/setpriv"]
        .into_iter()
        .find(|p| Path::new(p).exists())?;
    let mut cmd = Command::new(setpriv);
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(bin)
        .args(args);
    Some(cmd)
}

#[test]
fn without_privileges_sonde_says_root_is_needed_once() {
    let dir = TempDir::new("robust-noroot");
    let bin = if is_root() {
        shared_copy(&dir)
    } else {
        sonde()
    };
    let Some(mut probe) = unprivileged(&bin, &["-V"]) else {
        eprintln!("skipping: no setpriv");
        return;
    };
    if !probe.output().is_ok_and(|o| o.status.success()) {
        eprintln!("skipping: cannot run sonde unprivileged");
        return;
    }
    // A user with the privileges (not root, but capable) would trace: nothing to test then.
    let Some(check) = unprivileged(&bin, &["-l", "tracepoint:sched:sched_switch"]) else {
        return;
    };
    let out = run_command(check, RUN_TIMEOUT);
    if !is_root() && out.code == Some(0) {
        eprintln!("skipping: this user may trace the kernel");
        return;
    }
    let kernel_runs: [&[&str]; 6] = [
        &["-l"],
        &["-l", "tracepoint:sched:*"],
        &[
            "-e",
            "tracepoint:syscalls:sys_enter_getpid { @ = count(); }",
        ],
        &["-e", "BEGIN { exit(); }"],
        &["--dry-run", "-e", "profile:hz:99 { @ = count(); }"],
        &["tool", "execsnoop"],
    ];
    for args in kernel_runs {
        let out = run_command(unprivileged(&bin, args).unwrap(), RUN_TIMEOUT);
        no_panic(&out, &format!("{args:?}"));
        assert_eq!(out.code, Some(1), "{args:?}: {}", out.stderr);
        assert_eq!(
            out.stderr.matches("sonde::runtime::privilege").count(),
            1,
            "{args:?}: {}",
            out.stderr
        );
        let w = words(&out.stderr);
        assert!(w.contains("tracing the kernel needs"), "{args:?}: {w}");
        assert!(w.contains("run sonde as root"), "{args:?}: {w}");
        assert!(
            !w.contains("No matches for tracepoint") && !w.contains("tracefs is not mounted"),
            "{args:?}: {w}"
        );
        assert_eq!(out.stdout, "", "{args:?}");
    }
    // The userspace engine needs nothing.
    let out = run_command(
        unprivileged(
            &bin,
            &[
                "--engine",
                "jit",
                "-q",
                "-e",
                r#"BEGIN { printf("ok\n"); exit(); }"#,
            ],
        )
        .unwrap(),
        RUN_TIMEOUT,
    );
    assert_eq!(out.ok_stdout(), "ok\n\n\n");
    // Nor does a program that fails before the kernel matters.
    let out = run_command(unprivileged(&bin, &["-e", ""]).unwrap(), RUN_TIMEOUT);
    assert!(
        out.stderr.contains("sonde::parse::no_probes"),
        "{}",
        out.stderr
    );
}

// ---------------------------------------------------------------------------------------------
// 9. Ctrl-C with system() on a busy probe

/// A busy probe that runs `system()` queues far more commands than can run: at Ctrl-C no
/// further command starts, the one running is killed, and the run ends at once (END runs,
/// exit 0). bpftrace 0.17 exits in 0.3 to 2.2 s (measured with `getppid_loop` running);
/// sonde used to run the whole backlog first (30 to 116 s).
#[test]
fn ctrl_c_with_system_on_a_busy_probe_ends_at_once() {
    if skip_unless_root("ctrl_c_with_system_on_a_busy_probe_ends_at_once") {
        return;
    }
    let dir = TempDir::new("system-ctrl-c");
    let load = common::build_target(&dir, "getppid_loop");
    let _load = common::Target::spawn(&load, &[]);
    let mut tracer = common::Tracer::start(&[
        "--unsafe",
        "-e",
        r#"tracepoint:syscalls:sys_enter_getppid { system("sleep 0.05"); } END { printf("end\n"); }"#,
    ]);
    assert!(tracer.wait_attached(common::ATTACH_TIMEOUT), "not attached");
    // Let a backlog of commands gather.
    std::thread::sleep(Duration::from_millis(1000));
    let start = std::time::Instant::now();
    tracer.interrupt();
    let out = tracer.finish(Duration::from_secs(10));
    let took = start.elapsed();
    no_panic(&out, "system ctrl-c");
    assert!(!out.timed_out, "still running 10 s after Ctrl-C");
    assert!(
        took < Duration::from_secs(2),
        "took {took:?} to end after Ctrl-C"
    );
    assert_eq!(out.code, Some(0), "stderr:\n{}", out.stderr);
    assert!(out.stdout.contains("end\n"), "stdout:\n{}", out.stdout);
}

// ---------------------------------------------------------------------------------------------
// 10. Loading: a program too complex for the verifier, and Ctrl-C during a long load

/// A probe whose loop the verifier walks past its 1M-instruction budget.
const TOO_COMPLEX: &str = "BEGIN { $a = nsecs; $i = 0; \
     while ($i < 500000) { $a = $a * 3 + $i; $a = $a ^ ($a >> 3); $i = $i + 1; } \
     printf(\"%d\\n\", $a); exit(); }";

/// A program the verifier rejects as too complex is verified once, not once per size of
/// aya's growing log buffer: the usual diagnostic comes in about 1 s here (it took ~31 s,
/// eleven verifications, with aya's retries).
#[test]
fn a_program_too_complex_is_rejected_quickly() {
    if skip_unless_root("a_program_too_complex_is_rejected_quickly") {
        return;
    }
    let start = std::time::Instant::now();
    let out = common::run_sonde_timeout(&["-e", TOO_COMPLEX], Duration::from_secs(60));
    let took = start.elapsed();
    no_panic(&out, "too complex");
    assert!(!out.timed_out, "still running after 60 s");
    assert_eq!(out.code, Some(1), "stderr:\n{}", out.stderr);
    assert!(
        out.stderr.contains("sonde::load::verifier")
            && out.stderr.contains("BPF program is too large"),
        "stderr:\n{}",
        out.stderr
    );
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

/// Ctrl-C while the kernel verifies programs (16 probes of ~0.3 s each here) ends sonde at
/// once with the interrupted status (130), instead of after the whole load.
#[test]
fn ctrl_c_during_a_long_load_ends_at_once() {
    if skip_unless_root("ctrl_c_during_a_long_load_ends_at_once") {
        return;
    }
    let probe = "tracepoint:syscalls:sys_enter_getppid { $a = nsecs; $i = 0; \
         while ($i < 40000) { $a = $a * 3 + $i; $a = $a ^ ($a >> 3); $i = $i + 1; } \
         @[probe] = $a; }\n";
    let script = probe.repeat(16);
    let mut tracer = common::Tracer::start(&["-e", &script]);
    std::thread::sleep(Duration::from_millis(500));
    assert!(tracer.running(), "sonde ended within 0.5 s");
    let start = std::time::Instant::now();
    tracer.interrupt();
    let out = tracer.finish(Duration::from_secs(10));
    let took = start.elapsed();
    no_panic(&out, "ctrl-c during load");
    assert!(!out.timed_out, "still running 10 s after Ctrl-C");
    assert!(
        took < Duration::from_secs(2),
        "took {took:?} to end after Ctrl-C"
    );
    assert_ne!(out.code, Some(0), "stderr:\n{}", out.stderr);
    assert!(!out.stderr.contains("Attached"), "stderr:\n{}", out.stderr);
}
