//! `#include` (issue 30, item 11), as bpftrace (clang) finds headers: `"p.h"` beside the
//! script, in the working directory, or by absolute path; a header that is not found is an
//! error (bpftrace: "'missing.h' file not found"), except a kernel header, whose types come
//! from BTF; the bound on header bytes is an error naming it, never a silent cut; a chain of
//! 40 `#define`s is a constant. Scripts run in the userspace engine (no root needed).

mod common;

use common::{Output, TempDir, run_command, sonde};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const RUN_TIMEOUT: Duration = Duration::from_secs(20);

/// Runs sonde with `args` in directory `cwd`.
fn run_in(cwd: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(sonde());
    cmd.args(args).current_dir(cwd);
    let out = run_command(cmd, RUN_TIMEOUT);
    assert!(!out.timed_out, "{args:?} timed out");
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    out
}

const USE_P: &str = "BEGIN { printf(\"%d\\n\", P); exit(); }";

#[test]
fn quoted_headers_are_found_beside_the_script_in_the_cwd_and_by_path() {
    let dir = TempDir::new("inc-found");
    let scripts = dir.path().join("scripts");
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&scripts).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(scripts.join("p.h"), "#define P 7\n").unwrap();
    let script = scripts.join("s.bt");
    std::fs::write(&script, format!("#include \"p.h\"\n{USE_P}\n")).unwrap();
    let jit = ["--engine", "jit"];

    // Beside the script, run from another directory.
    let out = run_in(&elsewhere, &[jit[0], jit[1], script.to_str().unwrap()]);
    assert_eq!(out.ok_stdout(), "7\n\n\n");
    // In the working directory (-e has no directory of its own).
    let prog = format!("#include \"p.h\"\n{USE_P}");
    let out = run_in(&scripts, &[jit[0], jit[1], "-e", &prog]);
    assert_eq!(out.ok_stdout(), "7\n\n\n");
    // By absolute path, quoted or not.
    let abs = scripts.join("p.h");
    for inc in [
        format!("\"{}\"", abs.display()),
        format!("<{}>", abs.display()),
    ] {
        let prog = format!("#include {inc}\n{USE_P}");
        let out = run_in(&elsewhere, &[jit[0], jit[1], "-e", &prog]);
        assert_eq!(out.ok_stdout(), "7\n\n\n", "{inc}");
    }
}

#[test]
fn a_missing_header_is_an_error_but_a_kernel_header_is_not_needed() {
    let dir = TempDir::new("inc-missing");
    for inc in ["\"missing.h\"", "<missing.h>"] {
        let prog = format!("#include {inc}\nBEGIN {{ exit(); }}");
        let out = run_in(dir.path(), &["--engine", "jit", "-e", &prog]);
        assert_eq!(out.code, Some(1), "{inc}: {out:?}");
        assert!(
            out.stderr.contains("header file `missing.h` not found"),
            "{inc}: {}",
            out.stderr
        );
        assert!(
            out.stderr.contains("sonde::parse::include"),
            "{}",
            out.stderr
        );
    }
    // Kernel headers (installed or not) stay accepted: BTF and sonde's table stand in.
    let prog = "#include <linux/sched.h>\n#include <net/sock.h>\n#include <linux/no-such.h>\n\
                BEGIN { printf(\"%d %d\\n\", TASK_INTERRUPTIBLE, AF_INET); exit(); }";
    let out = run_in(dir.path(), &["--engine", "jit", "-e", prog]);
    assert_eq!(out.ok_stdout(), "1 2\n\n\n");
}

#[test]
fn the_header_budget_is_an_error_not_a_silent_cut() {
    let dir = TempDir::new("inc-budget");
    let mut big = "#define FIRST 1\n".to_string();
    big.push_str(&"/* filler filler filler filler filler filler filler */\n".repeat(170_000));
    big.push_str("#define LAST 2\n");
    assert!(big.len() > 8 << 20);
    std::fs::write(dir.path().join("big.h"), &big).unwrap();
    let prog = "#include \"big.h\"\nBEGIN { printf(\"%d\\n\", LAST); exit(); }";
    let out = run_in(dir.path(), &["--engine", "jit", "-e", prog]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr
            .contains("the headers pass the 8 MiB sonde reads for one #include"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_chain_of_40_defines_is_a_constant() {
    let dir = TempDir::new("inc-chain");
    let mut prog = "#define A0 1\n".to_string();
    for i in 1..=40 {
        prog.push_str(&format!("#define A{i} (A{} + 1)\n", i - 1));
    }
    prog.push_str("BEGIN { printf(\"%d\\n\", A40); exit(); }");
    let out = run_in(dir.path(), &["--engine", "jit", "-e", &prog]);
    assert_eq!(out.ok_stdout(), "41\n\n\n");
}

/// `<sys/syscall.h>` (and `<syscall.h>`, `<asm/unistd.h>`) give x86-64's syscall numbers,
/// as clang reads them for bpftrace's target: `__NR_read` is 0, not i386's 3.
#[test]
fn syscall_headers_give_x86_64_numbers() {
    if !Path::new("/usr/include/x86_64-linux-gnu/asm/unistd_64.h").exists() {
        eprintln!("skipped: the kernel's uapi headers are not installed");
        return;
    }
    let dir = TempDir::new("inc-syscall");
    for header in ["<sys/syscall.h>", "<syscall.h>", "<asm/unistd.h>"] {
        let prog = format!(
            "#include {header}\nBEGIN {{ printf(\"%d %d\\n\", __NR_read, __NR_execve); exit(); }}"
        );
        let out = run_in(dir.path(), &["--engine", "jit", "-e", &prog]);
        assert_eq!(out.ok_stdout(), "0 59\n\n\n", "{header}");
    }
}
