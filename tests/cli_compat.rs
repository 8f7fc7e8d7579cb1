//! bpftrace's command line and `-f json` messages (issue 10): the options with bpftrace's
//! spellings and meanings (`-B`, `-k`, `--info`, `--usdt-file-activation`, `-l` with a file,
//! a pid or types, several `-e`, parameters around `--`), bpftrace's messages for invalid
//! values, and the JSON message types of bpftrace 0.26 (`cat`, `join`, `syscall`,
//! `helper_error`, `attached_probes` with its count).
//!
//! Messages and JSON lines are bpftrace 0.26.1's (its `src/main.cpp`, `src/output/json.cpp`
//! and `tests/runtime/json-output`, `tests/runtime/basic`); sonde's usage errors exit 2.

mod common;

use common::{
    Target, TempDir, build_target, compile_target, is_root, run_sonde, run_sonde_timeout,
    skip_unless_root, trace_target, with_exit_maps,
};
use std::time::Duration;

/// Asserts a usage error (exit 2, no panic) whose stderr contains `message`.
fn usage_error(args: &[&str], message: &str) {
    let out = run_sonde(args);
    assert_eq!(out.code, Some(2), "{args:?}: {out:?}");
    assert!(
        out.stderr.contains(message),
        "{args:?}: expected {message:?} in:\n{}",
        out.stderr
    );
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
}

#[test]
fn invalid_pids_get_bpftraces_messages() {
    let prog = "BEGIN { exit(); }";
    usage_error(
        &["-p", "a1111", "-e", prog],
        "Failed to parse pid: invalid integer: a1111",
    );
    usage_error(
        &["-p", "111a1", "-e", prog],
        "Failed to parse pid: invalid trailing bytes: 111a1",
    );
    usage_error(
        &["--pid", "not_a_pid", "-e", prog],
        "Failed to parse pid: invalid integer: not_a_pid",
    );
    usage_error(&["-p", "5000000", "-e", prog], "Pid out of range: 5000000");
}

#[test]
fn invalid_buffering_format_and_flag_combinations() {
    let prog = "BEGIN { exit(); }";
    usage_error(
        &["-B", "block", "-e", prog],
        "-B must be either 'line', 'full', or 'none'.",
    );
    usage_error(
        &["-f", "jsonx", "-e", prog],
        "Invalid output format \"jsonx\"; valid formats: 'text', 'json'",
    );
    usage_error(&["-kk", "-e", prog], "-kk has been deprecated");
    usage_error(
        &["-k", "--no-warnings", "-e", prog],
        "-k, --warnings conflicts with --no-warnings",
    );
    usage_error(
        &["-c", "true", "-p", "1", "-e", prog],
        "cannot be used with",
    );
    // Named parameters only come after `--` (bpftrace's getopt refuses them before).
    usage_error(&["-e", prog, "--aa=20"], "-- --aa");
}

#[test]
fn help_lists_bpftraces_options() {
    let out = run_sonde(&["--help"]);
    let help = out.ok_stdout();
    for flag in [
        "-B <MODE>",
        "-k, --warnings",
        "--info",
        "--usdt-file-activation",
        "-q, --quiet",
        "-v, --verbose",
        "-c, --cmd <CMD>",
        "-p, --pid <PID>",
        "-o, --output <FILE>",
        "--no-warnings",
        "--unsafe",
        "-l, --list",
    ] {
        assert!(help.contains(flag), "--help lacks {flag}:\n{help}");
    }
}

/// Several `-e`: the last program runs, as in bpftrace, with a warning.
#[test]
fn the_last_of_several_programs_runs() {
    let out = run_sonde(&[
        "--engine",
        "jit",
        "-e",
        r#"BEGIN { printf("first\n"); exit(); }"#,
        "-e",
        r#"BEGIN { printf("second\n"); exit(); }"#,
    ]);
    assert_eq!(out.ok_stdout(), with_exit_maps("second\n", ""));
    assert!(
        out.stderr
            .contains("-e was given 2 times: only the last program runs"),
        "{}",
        out.stderr
    );
}

/// Positional parameters before and after `--`, named ones after it (bpftrace's man page
/// example prints `(p1, p2, 20, true)`).
#[test]
fn positional_and_named_parameters_around_double_dash() {
    let prog = r#"BEGIN { print((str($1), str($2), getopt("aa", 1), getopt("bb"))); exit(); }"#;
    let out = run_sonde(&[
        "--engine", "jit", "-e", prog, "p1", "--", "--aa=20", "--bb", "p2",
    ]);
    assert_eq!(out.ok_stdout(), with_exit_maps("(p1, p2, 20, true)\n", ""));
    let out = run_sonde(&[
        "--engine",
        "jit",
        "--quiet",
        "--verbose",
        "-e",
        prog,
        "a",
        "b",
    ]);
    assert_eq!(out.ok_stdout(), with_exit_maps("(a, b, 1, false)\n", ""));
}

/// Positional parameters are numbers as bpftrace 0.27 reads them (`util::to_uint`): hex,
/// octal, binary, `_` separators, exponents, time units; other text is no number.
#[test]
fn hex_octal_and_unit_positionals_are_numbers() {
    let prog =
        r#"BEGIN { printf("%d %d %d %d %d %d\n", $1 + 1, $2 + 1, $3 + 1, $4, $5, $6); exit(); }"#;
    let out = run_sonde(&[
        "--engine", "jit", "-e", prog, "0x10", "010", "0b11", "1_000", "1e3", "5ms",
    ]);
    assert_eq!(
        out.ok_stdout(),
        with_exit_maps("17 9 4 1000 1000 5000000\n", "")
    );
    let out = run_sonde(&["--engine", "jit", "-e", prog, "0x1g"]);
    assert_ne!(out.code, Some(0), "{out:?}");
    // Not a number: a string (bpftrace 0.27), which `%d` does not print.
    assert!(
        out.stderr
            .contains("`%d` expects a value of type integer (string given)"),
        "{}",
        out.stderr
    );
}

/// A positional parameter may be a whole attach point, or a part of one (bpftrace 0.27's
/// tests/runtime/other: `positional attachpoint full`, `positional attachpoint probe`).
#[test]
fn positional_parameters_as_attach_points() {
    let prog = r#"$1 { printf("hello world\n"); exit(); }"#;
    let out = run_sonde(&["--engine", "jit", "-e", prog, "i:ms:1"]);
    assert_eq!(out.ok_stdout(), with_exit_maps("hello world\n", ""));
    let prog = r#"BEG$1 { printf("hello world\n"); exit(); }"#;
    let out = run_sonde(&["--engine", "jit", "-e", prog, "IN"]);
    assert_eq!(out.ok_stdout(), with_exit_maps("hello world\n", ""));
    let out = run_sonde(&["--engine", "jit", "-e", "$1 { exit(); }"]);
    assert_ne!(out.code, Some(0), "{out:?}");
    assert!(
        out.stderr.contains("positional parameter $1 is not given"),
        "{}",
        out.stderr
    );
}

/// The JSON messages of bpftrace 0.26 for what a script prints: `cat`, `syscall`
/// (`system()`), `time`, `printf`, values and maps, with nothing between the messages and
/// the maps printed at exit.
#[test]
fn json_messages_of_cat_system_time_and_maps() {
    let dir = TempDir::new("json-cat");
    let file = dir.path().join("cat.txt");
    std::fs::write(&file, "a\tb\n").unwrap();
    let prog = format!(
        r#"BEGIN {{ cat("{}"); system("echo a b c"); time("%Y\n"); printf("test %d", 5); print((1, "two")); @h = hist(2); @h = hist(1025); @s = stats(2); @s = stats(10); @m["key1"] = 2; exit(); }}"#,
        file.display()
    );
    // The kernel engine needs root.
    for engine in ["jit", "bpf"]
        .into_iter()
        .filter(|e| *e == "jit" || is_root())
    {
        if engine == "bpf" && skip_unless_root("json_messages_of_cat_system_time_and_maps") {
            return;
        }
        let out = run_sonde(&["--engine", engine, "--unsafe", "-f", "json", "-e", &prog]);
        let lines: Vec<&str> = out.ok_stdout().lines().collect();
        let year = lines.get(3).copied().unwrap_or_default();
        assert!(
            year.starts_with(r#"{"type": "time", "data": "2"#) && year.ends_with(r#"\n"}"#),
            "{engine}: {lines:#?}"
        );
        let mut without_time = lines.clone();
        without_time.remove(3);
        assert_eq!(
            without_time,
            [
                r#"{"type": "attached_probes", "count": 1, "data": {"probes": 1}}"#,
                r#"{"type": "cat", "data": "a\tb\n"}"#,
                r#"{"type": "syscall", "data": "a b c\n"}"#,
                r#"{"type": "printf", "data": "test 5"}"#,
                r#"{"type": "value", "data": [1,"two"]}"#,
                r#"{"type": "hist", "data": {"@h": [{"min": 2, "max": 3, "count": 1},{"min": 4, "max": 7, "count": 0},{"min": 8, "max": 15, "count": 0},{"min": 16, "max": 31, "count": 0},{"min": 32, "max": 63, "count": 0},{"min": 64, "max": 127, "count": 0},{"min": 128, "max": 255, "count": 0},{"min": 256, "max": 511, "count": 0},{"min": 512, "max": 1023, "count": 0},{"min": 1024, "max": 2047, "count": 1}]}}"#,
                r#"{"type": "map", "data": {"@m": {"key1": 2}}}"#,
                r#"{"type": "stats", "data": {"@s": {"count": 2, "average": 6, "total": 12}}}"#,
            ],
            "{engine}"
        );
    }
}

/// `join()` is bpftrace's `join` message, without the newline the text output ends it with.
#[test]
fn json_message_of_join() {
    if skip_unless_root("json_message_of_join") {
        return;
    }
    let out = run_sonde(&[
        "-q",
        "-f",
        "json",
        "-c",
        "/bin/echo A",
        "-e",
        r#"tracepoint:syscalls:sys_enter_execve /pid == cpid/ { join(args.argv, ","); exit(); }"#,
    ]);
    let stdout = out.ok_stdout();
    assert!(
        stdout
            .lines()
            .any(|l| l == r#"{"type": "join", "data": "/bin/echo,A"}"#),
        "{stdout}"
    );
}

/// `-k`: a failed probe read and a read of an absent map element are reported with their
/// place in the script, as bpftrace's runtime warnings (text) or `helper_error` messages
/// (JSON); without `-k` they read as zeros silently.
#[test]
fn k_reports_failed_probe_reads_and_absent_elements() {
    if skip_unless_root("k_reports_failed_probe_reads_and_absent_elements") {
        return;
    }
    let prog = r#"BEGIN { @[1] = 1; printf("%d %d\n", *(int64 *)8, @[2]); exit(); }"#;
    let quiet = run_sonde(&["-q", "-e", prog]);
    assert_eq!(quiet.ok_stdout(), with_exit_maps("0 0\n", "@[1]: 1\n"));
    assert!(!quiet.stderr.contains("WARNING"), "{}", quiet.stderr);
    let text = run_sonde(&["-q", "-k", "-e", prog]);
    assert_eq!(text.ok_stdout(), with_exit_maps("0 0\n", "@[1]: 1\n"));
    let deref = prog.find("*(int64").unwrap() + 1;
    let absent = prog.find("@[2]").unwrap() + 1;
    let want_read = format!(
        "stdin:1:{deref}-{}: WARNING: Bad address\nAdditional Info - helper: probe_read, retcode: -14\n{prog}\n{}{}\n",
        deref + 11,
        " ".repeat(deref - 1),
        "~".repeat(11)
    );
    let want_absent = format!(
        "stdin:1:{absent}-{}: WARNING: Can't lookup map element because it does not exist.\nAdditional Info - helper: map_lookup_elem, retcode: 0\n{prog}\n{}~~~~\n",
        absent + 4,
        " ".repeat(absent - 1)
    );
    assert_eq!(text.stderr, format!("{want_read}{want_absent}"));
    let json = run_sonde(&["-q", "-k", "-f", "json", "-e", prog]);
    assert_eq!(
        json.ok_stdout().lines().take(2).collect::<Vec<_>>(),
        [
            format!(
                r#"{{"type": "helper_error", "msg": "Bad address", "helper": "probe_read", "retcode": -14, "filename": "stdin", "line": 1, "col": {deref}}}"#
            ),
            format!(
                r#"{{"type": "helper_error", "msg": "Success", "helper": "map_lookup_elem", "retcode": 0, "filename": "stdin", "line": 1, "col": {absent}}}"#
            ),
        ]
    );
}

/// `-B`: how the output file is written while the script runs: at each line (`line`, and
/// `none`), or only when the buffer is full or the run ends (`full`).
#[test]
fn buffering_modes_of_an_output_file() {
    if skip_unless_root("buffering_modes_of_an_output_file") {
        return;
    }
    let dir = TempDir::new("buffering");
    let prog = r#"interval:ms:50 { printf("x\n"); } interval:ms:2000 { exit(); }"#;
    for (mode, early) in [("line", true), ("none", true), ("full", false)] {
        let file = dir.path().join(format!("{mode}.out"));
        let path = file.to_str().unwrap();
        let mut tracer = common::Tracer::start(&["-B", mode, "-o", path, "-e", prog]);
        assert!(tracer.wait_attached(common::ATTACH_TIMEOUT), "{mode}");
        std::thread::sleep(Duration::from_millis(1000));
        let during = std::fs::read_to_string(&file).unwrap_or_default();
        let out = tracer.finish(Duration::from_secs(10));
        assert_eq!(out.code, Some(0), "{mode}: {out:?}");
        assert_eq!(
            !during.is_empty(),
            early,
            "{mode}: {during:?} while running"
        );
        let after = std::fs::read_to_string(&file).unwrap();
        assert!(
            after.starts_with("x\nx\n") && after.ends_with("x\n\n\n"),
            "{mode}: {after:?}"
        );
    }
}

/// `--info`: the system, the build, and what the kernel supports, found by loading programs.
#[test]
fn info_reports_the_kernels_features() {
    if skip_unless_root("info_reports_the_kernels_features") {
        return;
    }
    let out = run_sonde(&["--info"]);
    let info = out.ok_stdout();
    for want in [
        "System\n  OS: Linux ",
        "\nBuild\n  version: v",
        "\nKernel helpers\n",
        "loop: yes",
        "\nKernel features\n  Instruction limit: ",
        "\nMap types\n",
        "ringbuf: yes",
        "\nProbe types\n",
        "tracepoint: yes",
        "uprobe_multi: ",
        "kprobe_session: ",
    ] {
        assert!(info.contains(want), "--info lacks {want:?}:\n{info}");
    }
    let kprobe = std::path::Path::new("/sys/bus/event_source/devices/kprobe").exists();
    assert!(
        info.contains(if kprobe { "kprobe: yes" } else { "kprobe: no" }),
        "{info}"
    );
}

/// `--usdt-file-activation`: the semaphore of a USDT probe is raised in a process that was
/// already running when sonde attached (what sonde does for every process mapping the binary).
#[test]
fn usdt_semaphore_activated_in_a_running_process() {
    if skip_unless_root("usdt_semaphore_activated_in_a_running_process") {
        return;
    }
    let dir = TempDir::new("usdt-file");
    let bin = compile_target(&dir, "usdt_semaphore", &["-O0"]);
    let mut target = Target::spawn(&bin, &["4", "wait"]);
    let prog = format!(
        "usdt:{}:sondetest:guarded {{ printf(\"%d\\n\", arg0); }}",
        bin.display()
    );
    let out = trace_target(&["--usdt-file-activation", "-e", &prog], &mut target);
    assert_eq!(out.ok_stdout(), with_exit_maps("0\n1\n2\n3\n", ""));
}

/// `-l FILE` lists the probes of the script in FILE (BEGIN and END attach nowhere, timers
/// show no period); a pattern that looks like a missing file is searched with a warning.
#[test]
fn listing_a_script_file() {
    let dir = TempDir::new("list-file");
    let file = dir.path().join("probes.bt");
    std::fs::write(
        &file,
        "BEGIN { } interval:ms:100 { } software:cpu-clock:1000 { } END { }",
    )
    .unwrap();
    let out = run_sonde(&["-l", file.to_str().unwrap()]);
    assert_eq!(out.ok_stdout(), "interval:ms:\nsoftware:cpu-clock:\n");
    if skip_unless_root("listing_a_script_file") {
        return;
    }
    let out = run_sonde(&["-l", "non_existent_file.bt"]);
    assert_eq!(out.ok_stdout(), "");
    assert!(
        out.stderr.contains(
            "It appears that 'non_existent_file.bt' is a filename but the file does not exist. Treating 'non_existent_file.bt' as a search pattern."
        ),
        "{}",
        out.stderr
    );
}

/// Kernel types: names by pattern, definitions with `-v` after where they come from
/// (`vmlinux: `, bpftrace 0.27); several patterns with commas;
/// raw tracepoints with their `vmlinux` module, as bpftrace 0.26 lists them.
#[test]
fn listing_types_and_comma_separated_patterns() {
    let out = run_sonde(&["-l", "struct task_struct"]);
    assert_eq!(out.ok_stdout(), "struct task_struct\n");
    let out = run_sonde(&["-lv", "struct fd,enum cpu_usage_stat"]);
    let text = out.ok_stdout();
    assert!(text.starts_with("vmlinux: struct fd {\n\t"), "{text}");
    assert!(
        text.contains("};\nvmlinux: enum cpu_usage_stat {\n\tCPUTIME_USER = 0,\n"),
        "{text}"
    );
    if skip_unless_root("listing_types_and_comma_separated_patterns") {
        return;
    }
    let out = run_sonde(&["-l", "rawtracepoint:sched_switch, t:sched:sched_switch"]);
    assert_eq!(
        out.ok_stdout(),
        "rawtracepoint:vmlinux:sched_switch\ntracepoint:sched:sched_switch\n"
    );
    // Timers list their units (bpftrace 0.26); aliases come from the provider registry.
    let out = run_sonde(&["-l", "interval:*,p:m*"]);
    assert_eq!(
        out.ok_stdout(),
        "interval:hz:\ninterval:ms:\ninterval:s:\ninterval:us:\nprofile:ms:\n"
    );
}

/// `-l -p PID`: the uprobes of the binaries a running process maps; `-lv` of uprobes lists
/// their parameters from DWARF, as bpftrace does.
#[test]
fn listing_the_probes_of_a_process() {
    let dir = TempDir::new("list-pid");
    let bin = build_target(&dir, "trigger");
    let target = Target::spawn(&bin, &["wait", "1"]);
    let pid = target.pid();
    // Give the target the time to exec.
    std::thread::sleep(Duration::from_millis(200));
    let out = run_sonde(&["-l", "-p", &pid, "uprobe:*:target_*"]);
    // Named through the process's root, as bpftrace 0.26 names them.
    let bin = format!(
        "/proc/{pid}/root{}",
        std::fs::canonicalize(&bin).unwrap().display()
    );
    assert_eq!(
        out.ok_stdout(),
        format!("uprobe:{bin}:target_other\nuprobe:{bin}:target_work\n")
    );
    // The target is built with -g: its parameters come from DWARF (tests/probes_dwarf.rs
    // has the warning of a binary without).
    let out = run_sonde(&["-lv", "-p", &pid, "uprobe:target_work"]);
    assert_eq!(
        out.ok_stdout(),
        format!("uprobe:{bin}:target_work\n    int x\n")
    );
    drop(target);
    let gone = run_sonde_timeout(&["-l", "-p", &pid, "uprobe:*:*"], Duration::from_secs(10));
    assert_eq!(gone.code, Some(1), "{gone:?}");
    assert!(
        gone.stderr.contains("no process with pid"),
        "{}",
        gone.stderr
    );
}

/// docs/reference.md (Command line) names every long option `sonde --help` shows.
#[test]
fn reference_names_every_long_option() {
    let help = run_sonde(&["--help"]);
    let reference = std::fs::read_to_string(common::repo_root().join("docs/reference.md")).unwrap();
    let section = reference
        .split("\n## Command line\n")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("docs/reference.md has a Command line section");
    for word in help.ok_stdout().split_whitespace() {
        let Some(long) = word.strip_prefix("--") else {
            continue;
        };
        let name: String = long
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        if name.is_empty() || name == "help" {
            continue;
        }
        assert!(
            section.contains(&format!("`--{name}")) || section.contains(&format!(", `--{name}")),
            "docs/reference.md (Command line) does not name --{name}"
        );
    }
}

/// `--probe-filter REGEX` (bpftrace 0.27): only the probes whose name matches are attached
/// and run, BEGIN and END always; no probe left is an error; a bad expression is bpftrace's
/// message. `--mode test` and `--mode bench` are `--test` and `--bench`.
#[test]
fn probe_filter_and_mode() {
    usage_error(
        &["--probe-filter", "(", "-e", "BEGIN {}"],
        "Invalid --probe-filter regex '('",
    );
    usage_error(
        &["--mode", "foo", "-e", "BEGIN {}"],
        "--mode can only be 'codegen', 'compiler-bench', 'bench', 'test' or 'format'.",
    );
    usage_error(
        &["--mode", "codegen", "-e", "BEGIN {}"],
        "sonde has no 'codegen' mode",
    );
    usage_error(
        &["--mode", "test", "--test", "-e", "BEGIN {}"],
        "cannot be used with",
    );
    // The userspace engine filters too: the interval probe that would run forever is gone.
    let prog = "input:/etc/hostname { @n = count(); } interval:s:30 { @t = count(); } END { printf(\"end\\n\"); }";
    let out = run_sonde_timeout(
        &["-q", "--probe-filter", "^input", "-e", prog],
        Duration::from_secs(20),
    );
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout, "end\n\n\n@n: 1\n");
    if skip_unless_root("probe_filter_and_mode") {
        return;
    }
    let two = "BEGIN { printf(\"begin\\n\"); } tracepoint:syscalls:sys_enter_execve /pid == cpid/ { @e = count(); } tracepoint:syscalls:sys_exit_execve /pid == cpid/ { @x = count(); } END { printf(\"end\\n\"); }";
    let t = Duration::from_secs(20);
    let out = run_sonde_timeout(
        &[
            "-q",
            "--probe-filter",
            "sys_exit",
            "-c",
            "/bin/true",
            "-e",
            two,
        ],
        t,
    );
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout, "begin\nend\n\n\n@x: 1\n");
    let none = run_sonde_timeout(
        &[
            "-q",
            "--probe-filter",
            "^nothing$",
            "-e",
            "tracepoint:syscalls:sys_enter_getpid { @ = count(); }",
        ],
        t,
    );
    assert_eq!(none.code, Some(1), "{}", none.stderr);
    assert!(
        none.stderr.contains("Attachment failed for all probes."),
        "{}",
        none.stderr
    );
    let tests = "test:a { return 0; } test:b { return 1; }";
    let out = run_sonde_timeout(&["--mode", "test", "--probe-filter", ":a$", "-e", tests], t);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stdout.contains("1 test ran."), "{}", out.stdout);
    let out = run_sonde_timeout(&["--mode", "test", "-e", tests], t);
    assert_eq!(out.code, Some(1), "{}", out.stdout);
}

/// A positional parameter that is not a number is a string literal anywhere (bpftrace 0.27's
/// literal folding): a variable, a map key, a comparison; `+ N` skips N characters of it (of
/// any parameter inside `str()`), and string literals fold alike (`"hello" + 2`, `"ab" + "cd"`).
#[test]
fn string_parameters_fold_as_literals() {
    let prog = r#"BEGIN {
  $x = $1; @[$1] = count();
  if ($1 == "hello") { printf("equal\n"); }
  printf("%s [%s] [%s] [%s] [%s] [%s]\n", $x, str($1 + 2), $1 + 1, str($2 + 1), "hello" + 2, "ab" + "cd");
  printf("[%s] [%s] [%s]\n", str($1, 3), str($2, 3), "abc" + 5);
  exit();
}"#;
    // The kernel engine needs root.
    for engine in ["jit", "bpf"]
        .into_iter()
        .filter(|e| *e == "jit" || is_root())
    {
        if engine == "bpf" && !common::is_root() {
            continue;
        }
        let out = run_sonde(&["--engine", engine, "-q", "-e", prog, "hello", "12345"]);
        assert_eq!(
            out.ok_stdout(),
            "equal\nhello [llo] [ello] [2345] [llo] [abcd]\n[hel] [123] []\n\n\n@[hello]: 1\n",
            "{engine}"
        );
        assert!(
            out.stderr.contains("literal string will always be empty"),
            "{}",
            out.stderr
        );
    }
}

/// Where a function wants a string literal, `str($1)` of a parameter is one (bpftrace's
/// runtime test `positional as string literal`).
#[test]
fn str_of_a_parameter_is_a_literal_argument() {
    if !common::is_root() {
        return;
    }
    let prog = r#"BEGIN { printf("%d\n", kaddr(str($1)) == kaddr("vfs_read")); exit(); }"#;
    let out = run_sonde(&["-q", "-e", prog, "vfs_read"]);
    assert_eq!(out.ok_stdout(), "1\n\n\n");
}

/// Named parameters as bpftrace 0.27's runtime tests give them: flag values in any case,
/// `-- --help` listing what the script reads with the descriptions, and an unexpected one
/// refused in bpftrace's words.
#[test]
fn named_parameters_in_bpftraces_words() {
    let prog = r#"BEGIN { print((getopt("aa", 20), getopt("bb", -1), getopt("cc", true), getopt("dd"), getopt("ff", true), getopt("ee", "hello"))); exit(); }"#;
    // The kernel engine needs root.
    for engine in ["jit", "bpf"]
        .into_iter()
        .filter(|e| *e == "jit" || is_root())
    {
        let out = run_sonde(&[
            "--engine",
            engine,
            "-e",
            prog,
            "--",
            "--dd",
            "--aa=0xffffffffffffffff",
            "--bb=-10",
            "--cc=False",
            "--ff=oFf",
        ]);
        assert_eq!(
            out.ok_stdout(),
            with_exit_maps(
                "(18446744073709551615, -10, false, true, false, hello)\n",
                ""
            )
        );
    }
    let prog = r#"BEGIN { print((getopt("aa", 10, "Description of aa"), getopt("bb", 1), getopt("cc"))); exit(); }"#;
    let out = run_sonde(&["--engine", "jit", "-e", prog, "--", "--help"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        "HINT: expected program options:\n--aa: Description of aa\n--bb\n--cc\n"
    );
    let prog = r#"BEGIN { print(getopt("aa", 10)); exit(); }"#;
    let out = run_sonde(&["--engine", "jit", "-e", prog, "--", "--bb"]);
    assert_eq!(out.code, Some(2));
    assert_eq!(
        out.stderr,
        "ERROR: unexpected program command line options: --bb\nHINT: expected program options: --aa\n"
    );
    let out = run_sonde(&["--engine", "jit", "-e", "BEGIN { exit(); }", "--", "--x"]);
    assert_eq!(
        out.stderr,
        "ERROR: unexpected program command line options: --x\nHINT: no custom program options defined.\n"
    );
}
