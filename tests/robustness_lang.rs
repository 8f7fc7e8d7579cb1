//! Robustness of the language (issue 9): short scripts that declared huge sizes or macros
//! that ran away are refused with a diagnostic, quickly and within bounded memory; casts of
//! integer arrays back to integers give the integer; shifts by amounts outside 0..=63 give
//! the same results in both engines; `join()` keeps arguments as long as bpftrace does.
//!
//! Runs of the kernel engine need root; `--check`, `--dump ir` and the userspace engine
//! (`--engine jit`) do not.
//!
//! What bpftrace 0.17 does, for comparison:
//! - `join(args->argv)` cuts each argument at 1023 bytes (its `join_argsize` of 1024) and
//!   prints at most 16 of them, whatever the string size;
//! - a shift by a constant amount outside 0..=63 is LLVM poison: printf showed 0, a map got
//!   whatever the register held; sonde gives 0 (the sign for `>>` of a signed value) and
//!   warns;
//! - a shift by a run-time amount is the BPF instruction's, modulo 64: `1 << 64` is 1,
//!   `1 << -1` is `1 << 63`, `1 << 65` is 2.

mod common;

use common::{Output, run_command, run_sonde, skip_unless_root, sonde};
use std::process::Command;
use std::time::{Duration, Instant};

/// Runs sonde under `sh -c 'ulimit -v 2 GiB; exec sonde ARGS'`: a script that made sonde
/// allocate gigabytes aborts instead of answering.
fn run_sonde_bounded(args: &[&str]) -> Output {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg("ulimit -v 2097152 && exec \"$0\" \"$@\"")
        .arg(sonde())
        .args(args);
    run_command(cmd, Duration::from_secs(30))
}

/// Asserts that sonde refused the script with a diagnostic of `code` (exit 1, no panic,
/// no abort), and returns its stderr.
fn refused(out: &Output, code: &str) -> String {
    assert!(!out.timed_out, "timed out: {}", out.stderr);
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    assert_eq!(out.code, Some(1), "stderr: {}", out.stderr);
    assert!(out.stderr.contains(code), "expected {code}: {}", out.stderr);
    out.stderr.clone()
}

/// Every size a script declares has a limit: each of these is one `too_large` diagnostic
/// on the size (they used to allocate gigabytes, panic on an overflow, or wrap to 0).
#[test]
fn huge_declared_sizes_are_diagnostics() {
    let cases: &[(&str, &str)] = &[
        (
            "BEGIN { let $g: string[2147483648]; }",
            "2147483648 bytes, the limit is 32768",
        ),
        (
            r#"config = { max_strlen = 4294967295 } BEGIN { printf("%s\n", "a"); }"#,
            "4294967295 bytes, the limit is 32768",
        ),
        (
            r#"struct s { char name[2147483647]; } BEGIN { $p = (struct s *)0; printf("%s\n", $p->name); }"#,
            "`char[2147483647]` is too large",
        ),
        (
            r#"union u { char c[4294967295]; } BEGIN { printf("%d\n", sizeof(union u)); }"#,
            "`char[4294967295]` is too large",
        ),
        (
            "BEGIN { $a = (uint64[536870912])0; }",
            "4294967296 bytes, the limit is 32768",
        ),
        (
            "config = { max_map_keys = 4294967295 } BEGIN { @a[1] = 1; }",
            "4294967295 keys, the limit is 1048576",
        ),
    ];
    for (script, label) in cases {
        for mode in [&["--check"][..], &["--dump", "ir"], &["--engine", "jit"]] {
            let mut args = mode.to_vec();
            args.extend(["-e", script]);
            let err = refused(&run_sonde_bounded(&args), "sonde::sema::too_large");
            assert!(err.contains(label), "{script}: {err}");
            // One diagnostic: nothing that uses the refused type is reported again.
            assert_eq!(err.matches("sonde::").count(), 1, "{script}: {err}");
        }
    }
}

/// What a probe builds must fit its scratch space, and `unroll` cannot multiply code without
/// bound: both are diagnostics of the compiler, in both engines.
#[test]
fn probes_too_large_to_load_are_diagnostics() {
    let cases = [
        r#"BEGIN { let $s: string[20000]; printf("%s\n", $s); }"#,
        "BEGIN { $i = 0; unroll(100) { unroll(100) { unroll(100) { unroll(100) { $i++; } } } } }",
    ];
    for script in cases {
        for mode in [&["--dump", "ir"][..], &["--engine", "jit"]] {
            let mut args = mode.to_vec();
            args.extend(["-e", script]);
            let t = Instant::now();
            refused(&run_sonde_bounded(&args), "sonde::codegen::too_large");
            assert!(t.elapsed() < Duration::from_secs(20), "{script}");
        }
    }
}

/// A macro that expands into ten calls of itself, or a chain of macros each calling the next
/// ten times, is one diagnostic under `--check`, in bounded time and memory.
#[test]
fn runaway_macros_are_diagnostics_under_check() {
    let ten = "f($x); ".repeat(10);
    let selfish = format!("macro f($x) {{ {ten}}} BEGIN {{ f(1); }}");
    let err = refused(
        &run_sonde_bounded(&["--check", "-e", &selfish]),
        "sonde::parse::macro_recursion",
    );
    assert!(err.contains("macro `f`"), "{err}");
    let mut fanout = String::from("macro m0() { @a = 1; } ");
    for i in 1..=6 {
        fanout += &format!(
            "macro m{i}() {{ {}}} ",
            format!("m{}(); ", i - 1).repeat(10)
        );
    }
    fanout += "BEGIN { m6(); }";
    let err = refused(
        &run_sonde_bounded(&["--check", "-e", &fanout]),
        "sonde::parse::macro_expansion",
    );
    assert!(err.contains("macro `m6` expands without bound"), "{err}");
    assert!(err.contains("`m0` ran away"), "{err}");
    assert_eq!(err.matches("sonde::").count(), 1, "{err}");
}

/// Runs a BEGIN script in the userspace engine and, as root, in the kernel; both must print
/// `want` (the script's printf lines, before the maps).
fn both_engines(script: &str, want: &str) {
    let jit = run_sonde(&["--engine", "jit", "-e", script]);
    assert_eq!(jit.ok_stdout(), want, "jit: {script}");
    if skip_unless_root("both_engines (bpf half)") {
        return;
    }
    let bpf = run_sonde(&["-e", script]);
    assert_eq!(bpf.ok_stdout(), want, "bpf: {script}");
}

/// `(uint64)$a` of an integer array reads the array's bytes; it printed the array's address.
#[test]
fn integer_arrays_cast_back_to_their_integer() {
    let script = r#"BEGIN {
  $a = (int8[8])12345;
  $b = (uint8[4])(uint32)0x01020304;
  $c = (int16[2])(int32)(-2);
  @m = (uint64)$a;
  printf("%ld %d %d %d %ld\n", (uint64)$a, $a[0], (uint32)$b, (int32)$c, (int64)(uint8[8])(-5));
  exit();
}"#;
    let want = "12345 57 16909060 -2 -5\n\n\n@m: 12345\n";
    // Twice: an address would change from run to run.
    both_engines(script, want);
    both_engines(script, want);
}

/// Shifts by constants outside 0..=63 shift every bit out (with a warning); by run-time
/// amounts they are taken modulo 64, the same in both engines.
#[test]
fn shifts_out_of_range_agree_in_both_engines() {
    let constants = r#"BEGIN {
  $m = -16; $x = 5;
  $y = 5; $y <<= 64;
  printf("%ld %ld %ld %ld %ld %ld %ld\n", 1 << 64, 1 << 65, 1 << -1, $m >> 64, $x >> 70, (uint64)$m >> 64, $y);
  exit();
}"#;
    both_engines(constants, "0 0 0 -1 0 0 0\n\n\n");
    let out = run_sonde(&["--check", "-e", constants]);
    assert_eq!(
        out.stderr.matches("sonde::sema::shift_amount").count(),
        7,
        "{}",
        out.stderr
    );

    // The amounts come from a map, so that nothing is constant.
    let runtime = r#"BEGIN {
  @s[0] = 64; @s[1] = -1; @s[2] = 65; @s[3] = 63; @s[4] = 128; @s[5] = 1;
  $m = -16; $i = 0;
  while ($i < 6) {
    printf("%ld %ld %ld\n", 1 << @s[$i], $m >> @s[$i], (uint64)$m >> @s[$i]);
    $i++;
  }
  clear(@s);
  exit();
}"#;
    both_engines(
        runtime,
        "1 -16 -16\n\
         -9223372036854775808 -1 1\n\
         2 -8 9223372036854775800\n\
         -9223372036854775808 -1 1\n\
         1 -16 -16\n\
         2 -8 9223372036854775800\n\n\n",
    );
}

/// `join()` keeps each argument up to 1023 bytes, as bpftrace 0.17 (it cut them at 127).
#[test]
fn join_keeps_long_arguments() {
    if skip_unless_root("join_keeps_long_arguments") {
        return;
    }
    let a = "a".repeat(1500);
    let b = "b".repeat(217);
    let cmd = format!("/bin/true {a} {b}");
    let out = run_sonde(&[
        "-q",
        "-c",
        &cmd,
        "-e",
        "tracepoint:syscalls:sys_enter_execve /pid == cpid/ { join(args.argv); }",
    ]);
    let want = format!("/bin/true {} {b}\n", &a[..1023]);
    assert_eq!(out.ok_stdout().trim_end_matches('\n'), want.trim_end());
}

/// A constant index out of an array's bounds is refused, as bpftrace does: the userspace
/// engine read it at a constant offset from the array and crashed (SIGSEGV).
#[test]
fn constant_index_out_of_bounds_is_refused() {
    let script = r#"BEGIN { $a = (int8[8])1; printf("%d\n", $a[100000000]); exit(); }"#;
    for mode in [&["--check"][..], &["--engine", "jit"]] {
        let mut args = mode.to_vec();
        args.extend(["-e", script]);
        let err = refused(&run_sonde_bounded(&args), "sonde::sema::index_bounds");
        assert!(
            err.contains("the index 100000000 is out of bounds for int8[8]"),
            "{err}"
        );
    }
}

/// A script file with the bytes `bytes`, checked (`--check` loads nothing).
fn check_file(tag: &str, bytes: &[u8]) -> Output {
    let dir = common::TempDir::new(tag);
    let file = dir.path().join("script.bt");
    std::fs::write(&file, bytes).unwrap();
    run_sonde(&["--check", file.to_str().unwrap()])
}

#[test]
fn invalid_utf8_is_named_and_pointed_at() {
    let out = check_file("utf8", b"BEGIN {\n  $a\xff = 1;\n}\n");
    let err = refused(&out, "sonde::parse::encoding");
    assert!(
        err.contains("the script is not UTF-8 text: byte 0xFF on line 2"),
        "{err}"
    );
    // The label is under the byte, on its line.
    assert!(err.contains("script.bt:2:5]"), "{err}");
    assert!(err.contains("byte 0xFF: not UTF-8"), "{err}");
    // From stdin too.
    let dir = common::TempDir::new("utf8-stdin");
    let file = dir.path().join("in.bt");
    std::fs::write(&file, b"BEGIN { \xc3( }").unwrap();
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg("exec \"$0\" --check - < \"$1\"")
        .arg(sonde())
        .arg(&file);
    let out = run_command(cmd, Duration::from_secs(20));
    let err = refused(&out, "sonde::parse::encoding");
    assert!(err.contains("byte 0xC3 on line 1"), "{err}");
}

#[test]
fn a_leading_byte_order_mark_is_skipped() {
    let out = check_file("bom", b"\xef\xbb\xbfBEGIN { printf(\"x\\n\"); exit(); }\n");
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    // Elsewhere it is a character the error names.
    let out = check_file("bom-mid", b"BEGIN { \xef\xbb\xbf exit(); }\n");
    let err = refused(&out, "sonde::parse::syntax");
    assert!(
        err.contains("a byte order mark (zero-width no-break space) (U+FEFF)"),
        "{err}"
    );
}

#[test]
fn a_non_breaking_space_is_named() {
    let out = check_file("nbsp", "BEGIN {\u{a0}$a = 1; exit(); }\n".as_bytes());
    let err = refused(&out, "sonde::parse::syntax");
    // Blanks collapsed: miette wraps lines at the terminal's width.
    let err = err.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(err.contains("found a non-breaking space (U+00A0)"), "{err}");
    assert!(err.contains("replace U+00A0 with a plain space"), "{err}");
    assert!(err.contains("script.bt:1:8]"), "{err}");
}

/// Blocks nested without end, or with an error inside, made the parser try each level two
/// ways: time doubled with each level (20 levels: minutes). Found by tests/fuzz.
#[test]
fn nested_blocks_with_an_error_fail_in_bounded_time() {
    let cases = [
        (
            format!("BEGIN {} x y {}", "{".repeat(64), "}".repeat(64)),
            "sonde::parse::syntax",
        ),
        (
            format!("s{}ystem({{", "{".repeat(64)),
            "sonde::parse::syntax",
        ),
        (
            format!("BEGIN {{ {} x y", "if 1 { ".repeat(40)),
            "sonde::parse::syntax",
        ),
        // Blocks in calls still backtrack: the parser's step budget stops them.
        (
            format!("BEGIN {{ {} x y", "f({ ".repeat(40)),
            "sonde::parse::too_deep",
        ),
    ];
    for (script, code) in cases {
        let start = Instant::now();
        let out = run_sonde_bounded(&["--check", "-e", &script]);
        refused(&out, code);
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{script}: {:?}",
            start.elapsed()
        );
    }
}
