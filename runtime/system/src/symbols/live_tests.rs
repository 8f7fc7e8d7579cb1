//! Tests against real processes: a PIE executable and its own shared library, built with gcc
//! at test time, symbolized while running and again after exiting.

use super::*;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

const LIB_C: &str = r#"
#include <stdio.h>
__attribute__((noinline)) int sonde_lib_marker(int x) { return x * 3 + 1; }
__attribute__((noinline)) static int sonde_lib_static(int x) { return x - 5; }
void *sonde_lib_static_addr(void) { return (void *)sonde_lib_static; }
"#;

const MAIN_C: &str = r#"
#include <stdio.h>
#include <unistd.h>
int sonde_lib_marker(int);
void *sonde_lib_static_addr(void);
__attribute__((noinline)) int sonde_exe_marker(int x) { return sonde_lib_marker(x) + 2; }
__attribute__((noinline)) static int sonde_exe_static(int x) { return x + 9; }
int main(void) {
    printf("%p %p %p %p\n", (void *)sonde_exe_marker, (void *)sonde_exe_static,
           (void *)sonde_lib_marker, sonde_lib_static_addr());
    fflush(stdout);
    char c;
    /* Wait until the test closes our stdin. */
    while (read(0, &c, 1) > 0) {}
    return sonde_exe_marker(1) == 6 ? 0 : 1;
}
"#;

/// Builds the library and the PIE in a fresh directory; returns (dir, exe, lib).
fn build() -> (PathBuf, PathBuf, PathBuf) {
    // One directory per call: tests run in parallel and each builds its own copy (a shared
    // one had a test exec a binary another was rewriting: "text file busy").
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("sonde-symbols-test-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("lib.c"), LIB_C).unwrap();
    std::fs::write(dir.join("main.c"), MAIN_C).unwrap();
    let lib = dir.join("libsondet.so");
    let exe = dir.join("sondet");
    let gcc = |args: &[&str]| {
        let out = Command::new("gcc")
            .args(["-O0", "-g0", "-fno-omit-frame-pointer"])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "gcc failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    gcc(&[
        "-shared",
        "-fPIC",
        "-o",
        lib.to_str().unwrap(),
        dir.join("lib.c").to_str().unwrap(),
    ]);
    let rpath = format!("-Wl,-rpath,{}", dir.display());
    gcc(&[
        "-fPIE",
        "-pie",
        "-o",
        exe.to_str().unwrap(),
        dir.join("main.c").to_str().unwrap(),
        "-L",
        dir.to_str().unwrap(),
        "-lsondet",
        &rpath,
    ]);
    (dir, exe, lib)
}

fn hex(s: &str) -> u64 {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap()
}

fn sym(name: &str, offset: u64, module: &Path) -> Option<UserSymbol> {
    Some(UserSymbol {
        name: name.into(),
        offset,
        module: module.to_string_lossy().into_owned(),
    })
}

#[test]
fn pie_and_shared_library_resolve_while_running_and_after_exit() {
    let (dir, exe, lib) = build();
    let mut child = Command::new(&exe)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addrs: Vec<u64> = line.split_whitespace().map(hex).collect();
    let [exe_fn, exe_static, lib_fn, lib_static] = addrs[..] else {
        panic!("bad line {line:?}")
    };

    let syms = Symbolizer::new();
    syms.observe(pid);
    assert_eq!(syms.usym(pid, exe_fn), sym("sonde_exe_marker", 0, &exe));
    assert_eq!(syms.usym(pid, exe_fn + 4), sym("sonde_exe_marker", 4, &exe));
    assert_eq!(
        syms.usym(pid, exe_static + 1),
        sym("sonde_exe_static", 1, &exe)
    );
    assert_eq!(syms.usym(pid, lib_fn), sym("sonde_lib_marker", 0, &lib));
    assert_eq!(
        syms.usym(pid, lib_static + 2),
        sym("sonde_lib_static", 2, &lib)
    );

    // Let it exit, then resolve from the cached maps with a fresh file cache.
    drop(child.stdin.take());
    assert!(child.wait().unwrap().success());
    assert!(!Path::new(&format!("/proc/{pid}/maps")).exists());
    let after = Symbolizer::new();
    assert_eq!(
        after.usym(pid, lib_fn),
        None,
        "an unobserved dead process cannot resolve"
    );
    assert_eq!(syms.usym(pid, lib_fn + 7), sym("sonde_lib_marker", 7, &lib));
    assert_eq!(syms.usym(pid, exe_fn + 1), sym("sonde_exe_marker", 1, &exe));

    // A stack on the real symbolizer: innermost first, each frame `func+offset` in its file
    // (the printers' layouts of such frames are `sonde-present`'s tests).
    let frames = resolve_frames(&[lib_fn + 7, exe_fn + 1, 0x10], false, pid, 127, &syms);
    let described: Vec<(Option<&str>, Option<String>)> = frames
        .iter()
        .map(|f| (f.symbol.as_deref(), f.module.clone()))
        .collect();
    assert_eq!(
        described,
        vec![
            (Some("sonde_lib_marker+7"), Some(lib.display().to_string())),
            (Some("sonde_exe_marker+1"), Some(exe.display().to_string())),
            (None, None),
        ]
    );

    // `uaddr()`: the symbol value, which the runtime address minus the load base matches.
    let value = resolve_uaddr(lib.to_str().unwrap(), "sonde_lib_marker").unwrap();
    let maps = syms.processes().get(pid).unwrap();
    let base = maps
        .mappings()
        .iter()
        .find(|m| Path::new(&m.path) == lib)
        .unwrap()
        .start;
    assert_eq!(lib_fn - base, value);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn stripped_library_falls_back_to_dynsym() {
    let (dir, _exe, lib) = build();
    let stripped = dir.join("libstripped.so");
    std::fs::copy(&lib, &stripped).unwrap();
    assert!(
        Command::new("strip")
            .arg("--strip-all")
            .arg(&stripped)
            .status()
            .unwrap()
            .success()
    );
    let full = ElfSymbolTable::load(&lib).unwrap();
    let thin = ElfSymbolTable::load(&stripped).unwrap();
    assert!(thin.len() < full.len());
    let value = resolve_uaddr(lib.to_str().unwrap(), "sonde_lib_marker").unwrap();
    assert_eq!(
        thin.lookup_address(value + 2),
        Some(("sonde_lib_marker", 2))
    );
    let local = resolve_uaddr(lib.to_str().unwrap(), "sonde_lib_static").unwrap();
    assert_eq!(full.lookup_address(local), Some(("sonde_lib_static", 0)));
    assert_ne!(
        thin.lookup_address(local).map(|s| s.0),
        Some("sonde_lib_static")
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn libc_aliases_resolve_to_the_public_name() {
    // glibc defines `getppid` (weak, global) and the local aliases `__getppid` and
    // `__GI_getppid` at one address; bpftrace prints `getppid`.
    let syms = Symbolizer::new();
    let me = std::process::id();
    syms.observe(me);
    let addr = libc::getppid as *const () as u64;
    let got = syms.usym(me, addr + 2).expect("libc resolves");
    assert_eq!((got.name.as_str(), got.offset), ("getppid", 2));
    assert!(got.module.contains("libc.so"), "{}", got.module);
}
