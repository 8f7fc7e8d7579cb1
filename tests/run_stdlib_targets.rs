//! Stdlib functions against small C targets built here. `uaddr()` of data symbols, as bpftrace 0.26's stdlib.md documents it: a pointer
//! to a global variable of the probed binary, typed by the symbol's size (`uint8 *`,
//! `uint16 *`, `uint32 *`, else `uint64 *`, always unsigned), read with `*` or `str()`.
//! The target (`tests/targets/uaddr_target.c`) is built as a PIE, where the address moves
//! with the load address, and with `-no-pie`, where it is the symbol's value.
//!
//! `ustack(build_id)` (bpftrace's `format_build_id_stack`): one line per frame, the build id
//! of the frame's file in hex, a space and the offset in that file (`0x`, at least two
//! digits), on the uprobe test program and its library (`tests/probes_support`).

mod common;
mod probes_support;

use common::{TempDir, compile_target, run_sonde, skip_unless_root, with_exit_maps};
use probes_support::{build_probe_target, file_offset, symbol_value};
use std::path::Path;

/// The target built with `flags` (`-O2 -g` and more) in `dir`.
fn target(dir: &TempDir, flags: &[&str]) -> String {
    let mut all = vec!["-O2", "-g"];
    all.extend_from_slice(flags);
    let bin = compile_target(dir, "uaddr_target", &all);
    bin.to_str().expect("utf-8 path").to_string()
}

/// `sonde -q -e prog -c "bin 3"`'s stdout of a clean run.
fn run(prog: &str, bin: &str) -> String {
    run_sonde(&["-q", "-e", prog, "-c", &format!("{bin} 3")])
        .ok_stdout()
        .to_string()
}

/// Every global of the target, read at each of the 3 calls of `tick(n)`, and `counter` again
/// when each returns (a uretprobe, where the address is found from the function's entry).
fn reads_every_global(bin: &str) {
    let prog = format!(
        r#"uprobe:{bin}:tick /pid == cpid/ {{
             printf("%x %x %s ", *uaddr("g_u8"), *uaddr("g_u16"), str(uaddr("g_name")));
             print((*uaddr("g_i32"), *uaddr("g_i64"), str(*uaddr("g_ptr")), *uaddr("counter")));
           }}
           uretprobe:{bin}:tick /pid == cpid/ {{ printf("ret %d\n", *uaddr("counter")); }}"#
    );
    let line = |counter: u32| {
        format!("ab beef sonde-global (4294967291, 1234567890123, hello pointer, {counter})\n")
    };
    let want = format!("{}ret 1\n{}ret 3\n{}ret 6\n", line(0), line(1), line(3));
    assert_eq!(run(&prog, bin), with_exit_maps(&want, ""));
}

#[test]
fn uaddr_reads_the_globals_of_a_pie() {
    if skip_unless_root("uaddr_reads_the_globals_of_a_pie") {
        return;
    }
    let dir = TempDir::new("uaddr-pie");
    reads_every_global(&target(&dir, &["-fPIE", "-pie"]));
}

#[test]
fn uaddr_reads_the_globals_of_an_executable() {
    if skip_unless_root("uaddr_reads_the_globals_of_an_executable") {
        return;
    }
    let dir = TempDir::new("uaddr-exec");
    let bin = target(&dir, &["-no-pie"]);
    // In an executable (ET_EXEC) the address is the symbol's value itself.
    let nm = std::process::Command::new("nm")
        .arg(&bin)
        .output()
        .expect("nm");
    let symbols = String::from_utf8_lossy(&nm.stdout).into_owned();
    let counter = symbols
        .lines()
        .find(|l| l.ends_with(" counter"))
        .and_then(|l| l.split_whitespace().next())
        .map(|a| u64::from_str_radix(a, 16).expect("hex address"))
        .expect("counter in nm's output");
    let prog = format!(r#"uprobe:{bin}:tick /pid == cpid/ {{ print(uaddr("counter")); exit(); }}"#);
    assert_eq!(
        run(&prog, &bin),
        with_exit_maps(&format!("{counter:#x}\n"), "")
    );
    reads_every_global(&bin);
}

#[test]
fn uaddr_of_a_missing_symbol_is_refused() {
    let dir = TempDir::new("uaddr-missing");
    let bin = target(&dir, &[]);
    assert!(Path::new(&bin).exists());
    let prog = format!(r#"uprobe:{bin}:tick {{ print(*uaddr("no_such_global")); }}"#);
    let out = run_sonde(&["-d", "bpf", "-e", &prog]);
    assert_ne!(out.code, Some(0));
    assert!(
        out.stderr.contains("no symbol `no_such_global`"),
        "{}",
        out.stderr
    );
}

/// The GNU build id of the ELF file at `path`, in hex (from `readelf -n`).
fn build_id(path: &Path) -> String {
    let out = std::process::Command::new("readelf")
        .arg("-n")
        .arg(path)
        .output()
        .expect("readelf runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: "))
        .unwrap_or_else(|| panic!("no build id in {}", path.display()))
        .to_string()
}

/// `lib_call(cb_square, 7)` calls back into the program: at `cb_square`'s entry the stack is
/// cb_square (program), lib_call (library), main (program), each with its own file's id.
#[test]
fn ustack_build_id_names_each_frame_by_its_file() {
    if skip_unless_root("ustack_build_id_names_each_frame_by_its_file") {
        return;
    }
    let t = build_probe_target("ustack-build-id");
    let (bin_id, lib_id) = (build_id(&t.bin), build_id(&t.lib));
    let entry = file_offset(&t.bin, symbol_value(&t.bin, "cb_square"));
    let prog = format!(
        "{} /pid == cpid/ {{ print(ustack(build_id, 3)); }}",
        t.at("uprobe", "cb_square")
    );
    let out = run_sonde(&["-q", "-e", &prog, "-c", &t.cmd("calls")]);
    let text = out.ok_stdout();
    let lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert_eq!(lines[0], format!("{bin_id} {entry:#04x}"), "{text}");
    assert!(lines[1].starts_with(&format!("{lib_id} 0x")), "{text}");
    assert!(lines[2].starts_with(&format!("{bin_id} 0x")), "{text}");
    assert!(text.starts_with('\n'), "{text}");

    // The `stack_mode` config sets the mode of a bare `ustack`; a kernel stack cannot have
    // build ids, so a bare `kstack` falls back to raw with bpftrace's warning.
    let prog = format!(
        "config = {{ stack_mode = build_id }} {} /pid == cpid/ {{ printf(\"%s|%s\", ustack, kstack); }}",
        t.at("uprobe", "cb_square")
    );
    let out = run_sonde(&["-q", "-e", &prog, "-c", &t.cmd("calls")]);
    let text = out.ok_stdout();
    assert!(
        text.starts_with(&format!("\n{bin_id} {entry:#04x}\n{lib_id} 0x")),
        "{text}"
    );
    let stderr = out.stderr.split_whitespace().filter(|w| *w != "│");
    let stderr = stderr.collect::<Vec<_>>().join(" ");
    assert!(
        stderr.contains(
            "'build_id' stack mode can only be used for ustack. Falling back to 'raw' mode."
        ),
        "{}",
        out.stderr
    );
}

#[test]
fn kstack_build_id_is_refused() {
    let out = run_sonde(&[
        "-d",
        "bpf",
        "-e",
        "kprobe:vfs_read { @[kstack(build_id)] = count(); }",
    ]);
    assert_ne!(out.code, Some(0));
    assert!(
        out.stderr
            .contains("'build_id' stack mode can only be used for ustack"),
        "{}",
        out.stderr
    );
    // The userspace engine has no stacks at all.
    let out = run_sonde(&[
        "--engine",
        "jit",
        "-e",
        "BEGIN { print(ustack(build_id)); }",
    ]);
    assert_ne!(out.code, Some(0));
    assert!(
        out.stderr.contains("sonde::jit::kernel_only"),
        "{}",
        out.stderr
    );
}
