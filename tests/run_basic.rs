//! Scripts run for real: BEGIN/END programs whose exact stdout is compared with what
//! bpftrace 0.17 printed for the same script (minus its "Attaching N probes..." line).
//!
//! bpftrace 0.17 behaviours these goldens encode:
//! - after the END probes ran, two newlines are written to stdout, then the non-empty maps
//!   in name order (`@a`, `@b`, `@c`), each entry as `@name[key]: value`;
//! - END probes run before that "\n\n" and before the maps are printed;
//! - strings inside tuples and map keys are printed without quotes: `@c[1, y]: 3`, `(1, x)`;
//! - `-q` suppresses only the attach message. `-o FILE` receives every byte of the output, the
//!   "\n\n" separator included (current bpftrace; 0.17 wrote the separator on stdout).

mod common;

use common::{TempDir, run_command, run_sonde, skip_unless_root, sonde};

/// Runs `-e prog` plus extra args and returns stdout of a successful run.
fn run_ok(args: &[&str]) -> String {
    run_sonde(args).ok_stdout().to_string()
}

#[test]
fn hello_world_exact() {
    if skip_unless_root("hello_world_exact") {
        return;
    }
    let out = run_sonde(&["-e", r#"BEGIN { printf("hello\n"); exit(); }"#]);
    assert_eq!(out.ok_stdout(), "hello\n\n\n");
    assert!(
        out.stderr.contains("Attached 1 probe"),
        "stderr: {}",
        out.stderr
    );
}

#[test]
fn begin_then_end_then_maps() {
    if skip_unless_root("begin_then_end_then_maps") {
        return;
    }
    let out = run_ok(&[
        "-e",
        r#"END { printf("end %d\n", @n); } BEGIN { printf("begin\n"); @n = 7; exit(); }"#,
    ]);
    assert_eq!(out, "begin\nend 7\n\n\n@n: 7\n");
}

/// bpftrace 0.17 rejects a second BEGIN ("More than one BEGIN probe defined"); newer
/// bpftrace (and sonde) accept several and run them in declaration order.
#[test]
fn several_begin_and_end_run_in_declaration_order() {
    if skip_unless_root("several_begin_and_end_run_in_declaration_order") {
        return;
    }
    let prog = r#"BEGIN { printf("a\n"); } BEGIN { printf("b\n"); } END { printf("e1\n"); } END { printf("e2\n"); } BEGIN { printf("c\n"); exit(); }"#;
    assert_eq!(run_ok(&["-e", prog]), "a\nb\nc\ne1\ne2\n\n\n");
}

#[test]
fn exit_prints_maps_sorted_by_name() {
    if skip_unless_root("exit_prints_maps_sorted_by_name") {
        return;
    }
    let out = run_ok(&[
        "-e",
        r#"BEGIN { @c[1, "y"] = 3; @b["x"] = 2; @a = 1; exit(); }"#,
    ]);
    assert_eq!(out, "\n\n@a: 1\n@b[x]: 2\n@c[1, y]: 3\n");
}

#[test]
fn positional_params_and_count() {
    if skip_unless_root("positional_params_and_count") {
        return;
    }
    let out = run_ok(&[
        "-e",
        r#"BEGIN { printf("%d %s %d\n", $1, str($2), $#); exit(); }"#,
        "42",
        "hello",
    ]);
    assert_eq!(out, "42 hello 2\n\n\n");
    // A missing parameter is 0 where a number is used (it compared as a string's address).
    let out = run_ok(&[
        "-e",
        r#"BEGIN { $x = 0; printf("%d %d\n", $3, $x == $3 ? 1 : 0); exit(); }"#,
        "42",
    ]);
    assert_eq!(out, "0 1\n\n\n");
}

#[test]
fn positional_params_with_script_file() {
    if skip_unless_root("positional_params_with_script_file") {
        return;
    }
    let dir = TempDir::new("pos");
    let file = dir.path().join("pos.sd");
    std::fs::write(
        &file,
        "BEGIN { printf(\"%d+%d=%d\\n\", $1, $2, $1 + $2); exit(); }\n",
    )
    .unwrap();
    let out = run_ok(&[file.to_str().unwrap(), "40", "2"]);
    assert_eq!(out, "40+2=42\n\n\n");
}

#[test]
fn integer_formats_and_signedness() {
    if skip_unless_root("integer_formats_and_signedness") {
        return;
    }
    let out = run_ok(&[
        "-e",
        r#"BEGIN { printf("%d %u %x\n", -5, 5, 255); exit(); }"#,
    ]);
    assert_eq!(out, "-5 5 ff\n\n\n");
}

#[test]
fn integer_arithmetic() {
    if skip_unless_root("integer_arithmetic") {
        return;
    }
    let prog = r#"BEGIN { printf("%d %d %d %d\n", 7 / 2, 7 % 3, 1 << 4, 256 >> 4); printf("%d %d %d\n", 0xff & 0x0f, 0x30 | 0x1, 0x33 ^ 0x11); printf("%d %d\n", 2 + 3 * 4, (2 + 3) * 4); printf("%d %d\n", -5 + 2, 10 - 20); $a = 100; $a += 5; $a -= 2; $a *= 2; printf("%d\n", $a); printf("%d %d %d\n", 5 > 3, 5 < 3, 5 == 5 && 0 || 1); exit(); }"#;
    assert_eq!(
        run_ok(&["-e", prog]),
        "3 1 16 16\n15 49 34\n14 20\n-3 -10\n206\n1 0 1\n\n\n"
    );
}

#[test]
fn casts_truncate_and_sign_extend() {
    if skip_unless_root("casts_truncate_and_sign_extend") {
        return;
    }
    let prog = r#"BEGIN { $x = 1; $y = $x ? 10 : 20; printf("%d\n", $y); $a = (uint8)300; $b = (int8)200; printf("%d %d\n", $a, $b); exit(); }"#;
    assert_eq!(run_ok(&["-e", prog]), "10\n44 -56\n\n\n");
}

#[test]
fn strings_ternary_if_while_unroll_tuples() {
    if skip_unless_root("strings_ternary_if_while_unroll_tuples") {
        return;
    }
    let prog = r#"BEGIN { $s = "abc"; if ($s == "abc") { printf("eq\n"); } else { printf("ne\n"); } printf("%s\n", $s != "abd" ? "yes" : "no"); $i = 0; while ($i < 3) { printf("w%d\n", $i); $i++; } unroll(3) { printf("u\n"); } $t = (1, "two", 3); printf("%d %s %d\n", $t.0, $t.1, $t.2); @tup = (1, "x"); exit(); }"#;
    assert_eq!(
        run_ok(&["-e", prog]),
        "eq\nyes\nw0\nw1\nw2\nu\nu\nu\n1 two 3\n\n\n@tup: (1, x)\n"
    );
}

#[test]
fn while_with_break_and_continue() {
    if skip_unless_root("while_with_break_and_continue") {
        return;
    }
    let prog = r#"BEGIN { $i = 0; @sum = 0; while ($i < 10) { $i++; if ($i % 2 == 0) { continue; } if ($i > 7) { break; } @sum += $i; } printf("%d %d\n", $i, @sum); exit(); }"#;
    assert_eq!(run_ok(&["-e", prog]), "9 16\n\n\n@sum: 16\n");
}

#[test]
fn quiet_suppresses_attached_message() {
    if skip_unless_root("quiet_suppresses_attached_message") {
        return;
    }
    let out = run_sonde(&["-q", "-e", r#"BEGIN { printf("quiet\n"); exit(); }"#]);
    assert_eq!(out.ok_stdout(), "quiet\n\n\n");
    assert!(!out.stderr.contains("Attached"), "stderr: {}", out.stderr);
}

#[test]
fn output_file_receives_printf_and_maps() {
    if skip_unless_root("output_file_receives_printf_and_maps") {
        return;
    }
    let dir = TempDir::new("ofile");
    let file = dir.path().join("out.txt");
    let out = run_sonde(&[
        "-o",
        file.to_str().unwrap(),
        "-e",
        r#"BEGIN { printf("to file\n"); @x = 2; exit(); }"#,
    ]);
    assert_eq!(out.ok_stdout(), "");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "to file\n\n\n@x: 2\n"
    );
}

#[test]
fn unknown_function_is_a_script_error() {
    let out = run_sonde(&["-e", "BEGIN { nosuchfn(1); }"]);
    assert_eq!(out.code, Some(1), "stderr: {}", out.stderr);
    assert!(out.stderr.contains("nosuchfn"), "stderr: {}", out.stderr);
    assert!(!out.stderr.contains("panicked"), "stderr: {}", out.stderr);
    assert!(out.stdout.is_empty(), "stdout: {}", out.stdout);
}

#[test]
fn unknown_tracepoint_is_a_script_error() {
    let out = run_sonde(&["-e", "tracepoint:sched:nope { }"]);
    assert_eq!(out.code, Some(1), "stderr: {}", out.stderr);
    // bpftrace 0.27's words, first line of the diagnostic.
    assert!(
        out.stderr.contains("No matches for tracepoint sched:nope."),
        "stderr: {}",
        out.stderr
    );
    // With `missing_probes = warn`, its warning and the rest of the script checked.
    let out = run_sonde(&[
        "--check",
        "-e",
        "config = { missing_probes = warn } tracepoint:sched:nope, tracepoint:sched:sched_switch { }",
    ]);
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert!(
        out.stderr
            .contains("No matches for tracepoint sched:nope. Skipping."),
        "stderr: {}",
        out.stderr
    );
}

#[test]
fn syntax_error_is_a_script_error() {
    let out = run_sonde(&["-e", "BEGIN { printf(\"x\\n\") "]);
    assert_eq!(out.code, Some(1), "stderr: {}", out.stderr);
    assert!(!out.stderr.is_empty());
    assert!(!out.stderr.contains("panicked"), "stderr: {}", out.stderr);
}

/// Runs one of the shipped examples (no parameters) and returns its stdout.
fn run_example(name: &str) -> String {
    let path = common::repo_root().join("examples").join(name);
    run_ok(&[path.to_str().unwrap()])
}

#[test]
fn example_language_tour_output() {
    if skip_unless_root("example_language_tour_output") {
        return;
    }
    assert_eq!(
        run_example("language_tour.sd"),
        "sum of 1..10 = 55\n5 is odd\n|left      |     right|00042|\n(uint8)300 = 44, (int8)200 = -56\nunrolled: 15\ntuple: 7 seven\n0xff 0xf0 1024\n\n\n@pairs[1, one]: 1\n@pairs[2, two]: 2\n"
    );
}

/// bpftrace 0.17 also printed one empty line for the cleared (empty) `@scratch` map at
/// exit; only whitespace is allowed after the last map entry.
#[test]
fn example_map_ops_output() {
    if skip_unless_root("example_map_ops_output") {
        return;
    }
    let out = run_example("map_ops.sd");
    let expected = "top 3 by count:\n@count[bash]: 3\n@count[sshd]: 4\n@count[cron]: 5\nbytes in KiB:\n@bytes[big]: 4\n\n\n@bytes[big]: 4096\n@count[init]: 1\n@count[bash]: 3\n@count[sshd]: 4\n@count[cron]: 5\n";
    assert!(out.starts_with(expected), "stdout:\n{out}");
    assert!(out[expected.len()..].trim().is_empty(), "stdout:\n{out}");
}

/// bpftrace's preprocessor subset: `BPFTRACE_HAVE_BTF` picks the BTF branch, `#if` evaluates
/// `#define`s, and constants come from the script, its headers and sonde's table.
#[test]
fn preprocessor_branches_defines_and_header_constants() {
    if skip_unless_root("preprocessor_branches_defines_and_header_constants") {
        return;
    }
    let script = r#"
#ifndef BPFTRACE_HAVE_BTF
#include <linux/no-such-header-is-read.h>
#else
#include <linux/sched.h>
#include <sys/socket.h>
#endif
#define BASE 40
#define ANSWER (BASE + 2)
#define GREETING "hi"
#if ANSWER == 42 && defined(BPFTRACE_HAVE_BTF)
BEGIN { printf("%d %d %d %s\n", ANSWER, TASK_RUNNING, AF_INET6, GREETING); exit(); }
#else
BEGIN { printf("wrong branch\n"); exit(); }
#endif
"#;
    assert_eq!(run_ok(&["-e", script]), "42 0 10 hi\n\n\n");
}

/// bpftrace 0.26's order: BEGIN runs before the other probes attach (while a shell opens
/// files all along, no probe fires before BEGIN has set `@b`), "Attached N probes" is
/// printed on its own line before BEGIN's output; `--dry-run` attaches and runs nothing.
#[test]
fn begin_runs_before_the_probes_attach_and_dry_run_runs_nothing() {
    if skip_unless_root("begin_runs_before_the_probes_attach_and_dry_run_runs_nothing") {
        return;
    }
    let mut spinner = std::process::Command::new("sh")
        .args(["-c", "while :; do : < /dev/null; done"])
        .spawn()
        .expect("sh");
    let order = "BEGIN { @b = 1; } \
         tracepoint:syscalls:sys_enter_openat { \
           if (@b == 0) { @early = count(); } else { @after = count(); } } \
         interval:ms:300 { exit(); }";
    let out = run_sonde(&["-e", order]);
    let _ = spinner.kill();
    let _ = spinner.wait();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stdout.contains("@after: "), "{}", out.stdout);
    assert!(!out.stdout.contains("@early"), "{}", out.stdout);

    let script = r#"BEGIN { printf("begin\n"); exit(); }"#;
    let mut both = std::process::Command::new("sh");
    both.args(["-c", r#""$0" -e "$1" 2>&1"#])
        .arg(sonde())
        .arg(script);
    let out = run_command(both, std::time::Duration::from_secs(20));
    assert_eq!(out.stdout, "Attached 1 probe\nbegin\n\n\n");
    let dry = run_sonde(&["--dry-run", "-e", script]);
    assert_eq!(dry.code, Some(0), "{}", dry.stderr);
    assert!(!dry.stdout.contains("begin"), "{}", dry.stdout);
    assert!(dry.stderr.contains("Attached 1 probe"), "{}", dry.stderr);
}

/// Map keys made of variables: a variable written once has its key built once for the probe
/// (issue 16); one written again, in an unrolled loop or in a branch gets the key of its
/// value at each use. The elements must be where the script put them.
#[test]
fn keys_of_variables_follow_their_values() {
    if skip_unless_root("keys_of_variables_follow_their_values") {
        return;
    }
    let out = run_ok(&[
        "-e",
        r#"BEGIN { $k = 1; @a[$k] = 1; $k = 2; @a[$k] = 2; $j = 7; @b[$j] = 1;
                   @c[$j] = @b[$j] + 1; unroll(2) { @d[$k] = 1; $k = 3; }
                   if (pid > 0) { $m = 4; @e[$m] = 1; @e[$m]++; } exit(); }"#,
    ]);
    let mut lines: Vec<&str> = out.lines().filter(|l| !l.is_empty()).collect();
    lines.sort_unstable();
    assert_eq!(
        lines,
        [
            "@a[1]: 1", "@a[2]: 2", "@b[7]: 1", "@c[7]: 2", "@d[2]: 1", "@d[3]: 1", "@e[4]: 2"
        ],
        "{out}"
    );
}

/// Nothing but END runs after `exit()`: a 1 ms interval probe that exits does not fire again
/// while sonde stops (it did two or three times), every time; another probe stops too.
#[test]
fn no_probe_but_end_runs_after_exit() {
    if skip_unless_root("no_probe_but_end_runs_after_exit") {
        return;
    }
    for _ in 0..5 {
        let out = run_ok(&[
            "-e",
            "i:ms:1 { @c++; exit(); } i:us:100 { @other++; } END { @end = 1; }",
        ]);
        assert!(
            out.contains("@c: 1\n") && out.contains("@end: 1\n"),
            "{out}"
        );
    }
    let out = run_ok(&["-e", "i:ms:1 { @c++; if (@c == 3) { exit(); } }"]);
    assert!(out.ends_with("@c: 3\n"), "{out}");
}
