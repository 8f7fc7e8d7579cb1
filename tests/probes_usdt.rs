//! USDT probes for real on `tests/targets/usdt_target.c` (needs `<sys/sdt.h>` from
//! systemtap-sdt-dev), built twice: `-O0`, where the notes place arguments in memory
//! (`-4@-4(%rbp)`), and `-O2`, where they are registers (`-4@%eax`) and constants (`-4@$7`).
//!
//! For i in 0..N the program fires `sondetest:work(i, "hello")` and
//! `sondetest:mixed(-i - 1, total, 7)` where total grows by 100 * (i + 1), then
//! `sondetest:done(N)` once. Expected outputs are bpftrace 0.17's for the same scripts.

mod common;

use common::{TempDir, compile_target, skip_unless_root, with_exit_maps};
use std::path::PathBuf;
use std::process::Command;

/// Builds the target with optimisation `opt` (`-O0`, `-O2`) into a fresh directory.
fn build(tag: &str, opt: &str) -> (TempDir, PathBuf) {
    let dir = TempDir::new(tag);
    let bin = compile_target(&dir, "usdt_target", &[opt, "-fPIE", "-pie"]);
    (dir, bin)
}

fn run_c(prog: &str, cmd: &str) -> String {
    common::run_sonde(&["-e", prog, "-c", cmd])
        .ok_stdout()
        .to_string()
}

const WORK_AND_MIXED: &str = "0 hello\n-1 100 7\n1 hello\n-2 300 7\n2 hello\n-3 600 7\n";

fn args_script(bin: &str) -> String {
    format!(
        r#"usdt:{bin}:sondetest:work {{ printf("%d %s\n", arg0, str(arg1)); }}
usdt:{bin}:sondetest:mixed {{ printf("%d %d %d\n", arg0, arg1, arg2); }}"#
    )
}

#[test]
fn usdt_args_from_memory_at_o0() {
    if skip_unless_root("usdt_args_from_memory_at_o0") {
        return;
    }
    let (_d, bin) = build("usdt-o0", "-O0");
    let bin = bin.to_str().unwrap();
    assert_eq!(
        run_c(&args_script(bin), &format!("{bin} now")),
        with_exit_maps(WORK_AND_MIXED, "")
    );
}

#[test]
fn usdt_args_from_registers_at_o2() {
    if skip_unless_root("usdt_args_from_registers_at_o2") {
        return;
    }
    let (_d, bin) = build("usdt-o2", "-O2");
    let bin = bin.to_str().unwrap();
    assert_eq!(
        run_c(&args_script(bin), &format!("{bin} now")),
        with_exit_maps(WORK_AND_MIXED, "")
    );
}

#[test]
fn usdt_wildcard_counts_every_probe() {
    if skip_unless_root("usdt_wildcard_counts_every_probe") {
        return;
    }
    let (_d, bin) = build("usdt-wild", "-O0");
    let bin = bin.to_str().unwrap();
    let prog = format!(r#"usdt:{bin}:sondetest:* {{ @[probe] = count(); }}"#);
    let out = run_c(&prog, &format!("{bin} now 5"));
    // work and mixed tie at 5: their order is unspecified (bpftrace prints work first).
    let (head, maps) = out.split_at(2);
    assert_eq!(head, "\n\n", "{out}");
    let mut lines: Vec<&str> = maps.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            format!("@[usdt:{bin}:sondetest:done]: 1"),
            format!("@[usdt:{bin}:sondetest:mixed]: 5"),
            format!("@[usdt:{bin}:sondetest:work]: 5"),
        ]
    );
    assert!(
        maps.starts_with(&format!("@[usdt:{bin}:sondetest:done]: 1\n")),
        "{out}"
    );
    // `func` is `provider:name` (bpftrace refuses `func` in usdt probes).
    let prog = format!(r#"usdt:{bin}:sondetest:done {{ printf("%s\n", func); }}"#);
    assert_eq!(
        run_c(&prog, &format!("{bin} now 1")),
        with_exit_maps("sondetest:done\n", "")
    );
    // The two-part form and the `U` alias; `done` gets N.
    let prog = format!(r#"U:{bin}:done {{ printf("done %d\n", arg0); }}"#);
    assert_eq!(
        run_c(&prog, &format!("{bin} now 7")),
        with_exit_maps("done 7\n", "")
    );
}

#[test]
fn usdt_listing() {
    let (_d, bin) = build("usdt-list", "-O0");
    let bin = bin.to_str().unwrap();
    let out = common::run_sonde(&["-l", &format!("usdt:{bin}:*")]);
    assert_eq!(
        out.ok_stdout(),
        format!(
            "usdt:{bin}:sondetest:done\nusdt:{bin}:sondetest:mixed\nusdt:{bin}:sondetest:work\n"
        )
    );
    let out = common::run_sonde(&["-l", &format!("usdt:{bin}:sondetest:w*")]);
    assert_eq!(out.ok_stdout(), format!("usdt:{bin}:sondetest:work\n"));
}

#[test]
fn usdt_unknown_probe_is_diagnosed() {
    let (_d, bin) = build("usdt-unknown", "-O0");
    let bin = bin.to_str().unwrap();
    let prog = format!(r#"usdt:{bin}:sondetest:wrok {{ print(1); }}"#);
    let out = common::run_sonde(&["-e", &prog]);
    assert_eq!(out.code, Some(1), "stderr:\n{}", out.stderr);
    assert!(
        out.stderr.contains("sonde::probe::unknown_usdt"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("unknown USDT probe `sondetest:wrok`"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("did you mean `sondetest:work`?"),
        "{}",
        out.stderr
    );
}

/// A probe guarded by a semaphore: the kernel raises the semaphore while sonde's uprobe is
/// attached (its reference counter), so the program's guarded code runs and the probe fires.
#[test]
fn usdt_semaphore_guarded_probe_is_enabled_while_traced() {
    if skip_unless_root("usdt_semaphore_guarded_probe_is_enabled_while_traced") {
        return;
    }
    let dir = TempDir::new("usdt-sem");
    let bin = compile_target(&dir, "usdt_semaphore", &["-O0"]);
    let bin = bin.to_str().unwrap();
    // Untraced, the guarded code never runs.
    let alone = Command::new(bin).arg("4").output().expect("target runs");
    assert_eq!(String::from_utf8_lossy(&alone.stderr), "hits 0\n");
    let prog = format!("usdt:{bin}:sondetest:guarded {{ printf(\"%d\\n\", arg0); }}");
    let out = common::run_sonde(&["-q", "-e", &prog, "-c", &format!("{bin} 4")]);
    assert_eq!(out.ok_stdout(), with_exit_maps("0\n1\n2\n3\n", ""));
    assert!(out.stderr.contains("hits 4"), "stderr: {}", out.stderr);
}

/// USDT probes have up to twelve arguments: `arg10` and `arg11` read the last two, as in
/// bpftrace (`tests/targets/usdt_many_args.c`).
#[test]
fn usdt_arg10_and_arg11() {
    if skip_unless_root("usdt_arg10_and_arg11") {
        return;
    }
    let dir = TempDir::new("usdt-many");
    let bin = compile_target(&dir, "usdt_many_args", &["-O0"]);
    let bin = bin.to_str().unwrap();
    let prog =
        format!(r#"usdt:{bin}:sondetest:twelve {{ printf("%d %d %d\n", arg0, arg10, arg11); }}"#);
    assert_eq!(
        run_c(&prog, bin),
        with_exit_maps("0 10 11\n100 110 111\n", "")
    );
}
