//! DWARF that is not in the binary, and source-line uprobes, on
//! `tests/targets/dwarf_target.c` (its calls are described in `probes_dwarf.rs`:
//! `func(42, "hello dwarf", &settings, ...)` with `settings.field == 7`, `make_big(13)`):
//!
//! - split DWARF: `-gsplit-dwarf` with its `.dwo` file, and the `.dwo` packed into a `.dwp`
//!   by binutils' `dwp` (which packs DWARF 4 units);
//! - dwz: two binaries whose common DWARF `dwz -m` moved into a supplementary file named by
//!   their `.gnu_debugaltlink`;
//! - `--debuginfo DIR`: a debug file found under a directory given on the command line;
//! - `uprobe:BIN@FILE:LINE[:COL]`, placed by the line table.

mod common;

use common::{TempDir, compile_target, run_sonde, skip_unless_root, with_exit_maps};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `cmd args` in `dir`, which must succeed.
fn run_in(dir: &Path, cmd: &str, args: &[&str]) {
    let out = Command::new(cmd)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd} (.ci/test installs it): {e}"));
    assert!(
        out.status.success(),
        "{cmd} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The `.dwo` files in `dir`.
fn dwo_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "dwo"))
        .collect()
}

/// `sonde -e PROG -c BIN` (probes filtered on the child) with `extra` options, the clean
/// run's stdout.
fn run_on(prog: &str, bin: &Path, extra: &[&str]) -> String {
    let mut args = vec!["-e", prog, "-c", bin.to_str().unwrap()];
    args.extend(extra);
    run_sonde(&args).ok_stdout().to_string()
}

/// The probe reading `func`'s arguments by name, and what it prints.
fn func_probe(bin: &Path) -> (String, String) {
    (
        format!(
            r#"uprobe:{}:func {{ printf("%d %s %d %d\n", args.n, str(args.name), args.s->field, args.s.chain->next->depth); }}"#,
            bin.display()
        ),
        with_exit_maps("42 hello dwarf 7 2\n", ""),
    )
}

/// `-lv` of `make_big` and `func`.
fn listing(bin: &Path, extra: &[&str]) -> String {
    let mut args = vec!["-lv", &*format!("uprobe:{}:m*", bin.display())]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>();
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run_sonde(&args).ok_stdout().to_string()
}

/// What `listing` prints for the target at `bin`.
fn expected_listing(bin: &Path) -> String {
    format!(
        "uprobe:{0}:main\n\
         uprobe:{0}:make_big\n    int seed\n\
         uprobe:{0}:many\n    int a\n    int b\n    int c\n    int d\n    int e\n    int f\n    int g\n\
         uprobe:{0}:mixed\n    double d\n    int after\n    struct small sm\n    struct big bg\n    long int last\n",
        bin.display()
    )
}

#[test]
fn split_dwarf_in_dwo_files_and_dwp_packages() {
    // DWARF 5 skeleton units and a .dwo file next to the binary.
    let dir = TempDir::new("dwarf-dwo");
    let bin = compile_target(&dir, "dwarf_target", &["-O0", "-g", "-gsplit-dwarf"]);
    assert_eq!(dwo_files(dir.path()).len(), 1);
    assert_eq!(listing(&bin, &[]), expected_listing(&bin));
    // A DWARF 4 (GNU extension) build packed into `dwarf_target.dwp`, the .dwo removed.
    let pack = TempDir::new("dwarf-dwp");
    let packed = compile_target(
        &pack,
        "dwarf_target",
        &["-O0", "-g", "-gdwarf-4", "-gsplit-dwarf"],
    );
    run_in(
        pack.path(),
        "dwp",
        &["-e", "dwarf_target", "-o", "dwarf_target.dwp"],
    );
    for f in dwo_files(pack.path()) {
        std::fs::remove_file(f).unwrap();
    }
    assert_eq!(listing(&packed, &[]), expected_listing(&packed));
    if !skip_unless_root("split_dwarf_in_dwo_files_and_dwp_packages") {
        for b in [&bin, &packed] {
            let (prog, want) = func_probe(b);
            assert_eq!(run_on(&prog, b, &[]), want);
        }
    }
    // Without the .dwo, the diagnostic names it.
    for f in dwo_files(dir.path()) {
        std::fs::remove_file(f).unwrap();
    }
    let out = run_sonde(&[
        "--check",
        "-e",
        &format!("uprobe:{}:func {{ print(args.n); }}", bin.display()),
    ]);
    assert_eq!(out.code, Some(1), "{out:?}");
    // Without the diagnostic's frame and line breaks.
    let err: String = out
        .stderr
        .split_whitespace()
        .filter(|w| *w != "│")
        .collect();
    assert!(err.contains("sonde::sema::no_debug_info"), "{err}");
    assert!(err.contains("splitDWARF"), "{err}");
    assert!(err.contains("nodwarf_target.dwo"), "{err}");
}

#[test]
fn dwz_supplementary_files_through_gnu_debugaltlink() {
    let dir = TempDir::new("dwarf-dwz");
    let a = compile_target(&dir, "dwarf_target", &["-O0", "-g"]);
    let b = dir.path().join("second");
    std::fs::copy(&a, &b).unwrap();
    let common = dir.path().join("common.debug");
    let common_name = common.to_str().unwrap();
    run_in(
        dir.path(),
        "dwz",
        &[
            "-m",
            common_name,
            "-M",
            common_name,
            "dwarf_target",
            "second",
        ],
    );
    // The types moved out: the binaries refer to them in the supplementary file.
    let sections = Command::new("readelf")
        .args(["-S", a.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&sections.stdout).contains(".gnu_debugaltlink"));
    assert_eq!(listing(&b, &[]), expected_listing(&b));
    if !skip_unless_root("dwz_supplementary_files_through_gnu_debugaltlink") {
        let (prog, want) = func_probe(&a);
        assert_eq!(run_on(&prog, &a, &[]), want);
    }
    // Without the supplementary file, the diagnostic names it.
    std::fs::remove_file(&common).unwrap();
    let out = run_sonde(&[
        "--check",
        "-e",
        &format!("uprobe:{}:func {{ print(args.n); }}", a.display()),
    ]);
    assert_eq!(out.code, Some(1), "{out:?}");
    let err: String = out
        .stderr
        .split_whitespace()
        .filter(|w| *w != "│")
        .collect();
    assert!(err.contains("common.debug(.gnu_debugaltlink)"), "{err}");
}

#[test]
fn debuginfo_directories_are_searched() {
    let dir = TempDir::new("dwarf-debuginfo");
    let full = compile_target(&dir, "dwarf_target", &["-O0", "-g"]);
    // A debug file without a debuglink, named after the binary, in a directory of its own.
    std::fs::create_dir_all(dir.path().join("external_debug")).unwrap();
    let bin = dir.path().join("prog");
    let debug = dir.path().join("external_debug/prog.debug");
    run_in(
        dir.path(),
        "objcopy",
        &[
            "--only-keep-debug",
            full.to_str().unwrap(),
            debug.to_str().unwrap(),
        ],
    );
    run_in(
        dir.path(),
        "objcopy",
        &[
            "--strip-debug",
            full.to_str().unwrap(),
            bin.to_str().unwrap(),
        ],
    );
    let out = run_sonde(&["-lv", &format!("uprobe:{}:make_big", bin.display())]);
    assert_eq!(
        out.ok_stdout(),
        format!("uprobe:{}:make_big\n", bin.display())
    );
    assert!(out.stderr.contains("No DWARF found"), "{}", out.stderr);
    // Relative to the binary's directory, or absolute; several options, or one with `:`.
    let want = format!("uprobe:{}:make_big\n    int seed\n", bin.display());
    let abs = format!(
        "--debuginfo={}",
        dir.path().join("external_debug").display()
    );
    for opts in [
        vec!["--debuginfo=./external_debug"],
        vec!["--debuginfo=/nonexistent", abs.as_str()],
        vec!["--debuginfo=/nonexistent:external_debug"],
    ] {
        let mut args = vec![
            "-lv".to_string(),
            format!("uprobe:{}:make_big", bin.display()),
        ];
        args.extend(opts.iter().map(|s| s.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_eq!(run_sonde(&args).ok_stdout(), want, "{opts:?}");
    }
    if !skip_unless_root("debuginfo_directories_are_searched") {
        let (prog, expect) = func_probe(&bin);
        assert_eq!(run_on(&prog, &bin, &["--debuginfo=external_debug"]), expect);
    }
}

/// The link-time address of function `name` of `bin` (its symbol's value).
fn symbol_address(bin: &Path, name: &str) -> u64 {
    let out = Command::new("nm").arg(bin).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = text
        .lines()
        .find(|l| l.ends_with(&format!(" T {name}")))
        .unwrap_or_else(|| panic!("no {name} in {text}"));
    u64::from_str_radix(line.split(' ').next().unwrap(), 16).unwrap()
}

#[test]
fn uprobes_on_source_lines() {
    let dir = TempDir::new("dwarf-lines");
    for (tag, flags) in [
        ("plain", &["-O0", "-g"][..]),
        ("split", &["-O0", "-g", "-gsplit-dwarf"][..]),
    ] {
        let sub = dir.path().join(tag);
        std::fs::create_dir_all(&sub).unwrap();
        let bin = sub.join("t");
        let src = common::repo_root().join("tests/targets/dwarf_target.c");
        let mut args: Vec<&str> = flags.to_vec();
        args.extend(["-o", "t", src.to_str().unwrap()]);
        run_in(&sub, "gcc", &args);
        let b = bin.display();
        // Line 54 is `func`'s opening brace: its first statement is the function's entry,
        // named by its address as bpftrace names it; a path suffix of whole components
        // names the file.
        let func = symbol_address(&bin, "func");
        let out = run_sonde(&[
            "-l",
            "-e",
            &format!(
                "uprobe:{b}@dwarf_target.c:54 {{ }} uprobe:{b}@targets/dwarf_target.c:54 {{ }}"
            ),
        ]);
        assert_eq!(
            out.ok_stdout(),
            format!("uprobe:{b}:{func}\nuprobe:{b}:{func}\n"),
            "{tag}"
        );
        // Not a statement, no such file, a part of a file name: the diagnostics.
        for (prog, text) in [
            (
                format!("uprobe:{b}@dwarf_target.c:53 {{ }}"),
                "Unable to map 'dwarf_target.c:53' to address",
            ),
            (
                format!("uprobe:{b}@nosuch.c:54 {{ }}"),
                "No compilation unit matches nosuch.c",
            ),
            (
                format!("uprobe:{b}@target.c:54 {{ }}"),
                "No compilation unit matches target.c",
            ),
            (
                format!("uprobe:{b}@dwarf_target.c:x {{ }}"),
                "Invalid line number",
            ),
            (
                format!("uretprobe:{b}@dwarf_target.c:54 {{ }}"),
                "cannot be attached to a source line",
            ),
        ] {
            let out = run_sonde(&["--check", "-e", &prog]);
            assert_eq!(out.code, Some(1), "{prog}: {out:?}");
            assert!(out.stderr.contains(text), "{prog}: {}", out.stderr);
        }
        if skip_unless_root("uprobes_on_source_lines") {
            continue;
        }
        // Line 55, column 22 is `strlen(name)` after the prologue: arg0 still holds `n`.
        let prog = format!(
            r#"uprobe:{b}@dwarf_target.c:54 {{ printf("%s %d\n", probe, arg0); }}
               uprobe:{b}@dwarf_target.c:55:22 {{ printf("%d %s\n", arg0, str(arg1)); }}"#
        );
        assert_eq!(
            run_on(&prog, &bin, &[]),
            with_exit_maps(&format!("uprobe:{b}:{func} 42\n42 hello dwarf\n"), ""),
            "{tag}"
        );
    }
}
