//! Uprobe arguments by name from DWARF (`args.NAME`, `print(args)`, `-lv`), as bpftrace 0.26
//! reads them, on `tests/targets/dwarf_target.c` built here with `-g`, on a stripped copy
//! whose DWARF is in a separate file found through `.gnu_debuglink`, and on a copy built
//! without `-g` (the diagnostics and `-lv`'s warning).
//!
//! The target calls, at once (`-c` holds it until the probes are attached):
//! `func(42, "hello dwarf", &settings, 99, GREEN, 'x')` with `settings.field == 7`,
//! `.label == "lbl"`, `.chain->next->depth == 2`, `.pair == {-3, 4}`;
//! `mixed(2.5, 11, (struct small){5, 6}, big, 77)`; `make_big(13)` (a returned 24-byte
//! struct: `seed` arrives in the second register); `many(1, .., 7)` and `noargs()`.

mod common;

use common::{TempDir, compile_target, run_sonde, skip_unless_root, with_exit_maps};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The target built with `-O0 -g` in `dir`.
fn with_dwarf(dir: &TempDir) -> PathBuf {
    compile_target(dir, "dwarf_target", &["-O0", "-g"])
}

/// The target built without `-g` (nor a build id) in a directory of its own.
fn without_dwarf(tag: &str) -> (TempDir, PathBuf) {
    let dir = TempDir::new(tag);
    let bin = compile_target(&dir, "dwarf_target", &["-O0", "-Wl,--build-id=none"]);
    (dir, bin)
}

/// A stripped copy of `bin` (`dir/stripped`) whose DWARF is in `dir/.debug/dwarf_target.debug`,
/// named by its `.gnu_debuglink`.
fn stripped_with_debuglink(dir: &TempDir, bin: &Path) -> PathBuf {
    let debug_dir = dir.path().join(".debug");
    std::fs::create_dir_all(&debug_dir).unwrap();
    let debug = debug_dir.join("dwarf_target.debug");
    let stripped = dir.path().join("stripped");
    let run = |args: &[&std::ffi::OsStr]| {
        let out = Command::new("objcopy").args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run(&[
        "--only-keep-debug".as_ref(),
        bin.as_os_str(),
        debug.as_os_str(),
    ]);
    // objcopy records the link's file name and CRC from the file at that path.
    let link = format!("--add-gnu-debuglink={}", debug.display());
    run(&[
        "--strip-debug".as_ref(),
        link.as_ref(),
        bin.as_os_str(),
        stripped.as_os_str(),
    ]);
    stripped
}

/// `sonde -e PROG -c BIN` (probes filtered on the child), the clean run's stdout.
fn run_on(prog: &str, bin: &Path) -> String {
    let bin = bin.to_str().unwrap();
    run_sonde(&["-e", prog, "-c", bin]).ok_stdout().to_string()
}

#[test]
fn arguments_by_name_and_the_whole_record() {
    if skip_unless_root("arguments_by_name_and_the_whole_record") {
        return;
    }
    let dir = TempDir::new("dwarf-args");
    let bin = with_dwarf(&dir);
    let b = bin.display();
    let prog = format!(
        r#"uprobe:{b}:func {{ printf("%d %s %d\n", args.n, str(args.name), args.s->field); }}"#
    );
    assert_eq!(
        run_on(&prog, &bin),
        with_exit_maps("42 hello dwarf 7\n", "")
    );
    // Pointers to structs are followed (`->` and `.` alike), char arrays are strings, enums
    // and typedefs are integers; `print(args)` prints every register parameter.
    let prog = format!(
        r#"uprobe:{b}:func {{ printf("%s %d %d %d %d %c\n", args.s->label, args.s.chain->next->depth,
                                     args.c, args.col, args.s->pair[0], args.ch); }}
           uprobe:{b}:mixed {{ print(args); }}
           uprobe:{b}:make_big {{ print(args); }}
           uprobe:{b}:many {{ printf("%d %d\n", args.a, args.f); }}"#
    );
    assert_eq!(
        run_on(&prog, &bin),
        with_exit_maps(
            "lbl 2 99 2 -3 x\n\
             { .after = 11, .sm = { .a = 5, .b = 6 }, .last = 77 }\n\
             { .seed = 13 }\n\
             1 6\n",
            ""
        )
    );
}

#[test]
fn a_separate_debug_file_through_gnu_debuglink() {
    if skip_unless_root("a_separate_debug_file_through_gnu_debuglink") {
        return;
    }
    let dir = TempDir::new("dwarf-link");
    let bin = stripped_with_debuglink(&dir, &with_dwarf(&dir));
    let prog = format!(
        r#"uprobe:{}:func {{ printf("%d %s %d\n", args.n, str(args.name), args.s->field); }}"#,
        bin.display()
    );
    assert_eq!(
        run_on(&prog, &bin),
        with_exit_maps("42 hello dwarf 7\n", "")
    );
}

#[test]
fn listing_shows_the_parameters() {
    let dir = TempDir::new("dwarf-list");
    let bin = with_dwarf(&dir);
    let stripped = stripped_with_debuglink(&dir, &bin);
    for b in [&bin, &stripped] {
        let out = run_sonde(&["-lv", &format!("uprobe:{}:m*", b.display())]);
        assert_eq!(
            out.ok_stdout(),
            format!(
                "uprobe:{0}:main\n\
                 uprobe:{0}:make_big\n    int seed\n\
                 uprobe:{0}:many\n    int a\n    int b\n    int c\n    int d\n    int e\n    int f\n    int g\n\
                 uprobe:{0}:mixed\n    double d\n    int after\n    struct small sm\n    struct big bg\n    long int last\n",
                b.display()
            )
        );
        let out = run_sonde(&["-lv", &format!("uprobe:{}:func", b.display())]);
        assert_eq!(
            out.ok_stdout(),
            format!(
                "uprobe:{}:func\n    int n\n    const char* name\n    struct settings* s\n    \
                 counter_t c\n    enum color col\n    unsigned char ch\n",
                b.display()
            )
        );
    }
    // Without DWARF, bpftrace's warning.
    let (_plain_dir, plain) = without_dwarf("dwarf-plain");
    let out = run_sonde(&["-lv", &format!("uprobe:{}:func", plain.display())]);
    assert_eq!(
        out.ok_stdout(),
        format!("uprobe:{}:func\n", plain.display())
    );
    assert!(
        out.stderr.contains(&format!(
            "No DWARF found for \"{}\", cannot show parameter info",
            plain.display()
        )),
        "{}",
        out.stderr
    );
}

/// The stderr of `sonde --check -e prog`, which must fail, with the diagnostic's line
/// wrapping and frame undone (words joined by single spaces).
fn check_fails(prog: &str) -> String {
    let out = run_sonde(&["--check", "-e", prog]);
    assert_eq!(out.code, Some(1), "{out:?}");
    out.stderr
        .split_whitespace()
        .filter(|w| *w != "│")
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn diagnostics_say_what_is_missing() {
    let dir = TempDir::new("dwarf-diag");
    let bin = with_dwarf(&dir);
    let b = bin.display();
    // An unknown parameter: the parameters are listed, the nearest suggested.
    let err = check_fails(&format!("uprobe:{b}:func {{ print(args.nme); }}"));
    assert!(err.contains("sonde::sema::unknown_field"), "{err}");
    assert!(err.contains("did you mean `args.name`?"), "{err}");
    assert!(err.contains("n, name, s, c, col, ch"), "{err}");
    // A parameter in an SSE register is not a field either.
    let err = check_fails(&format!("uprobe:{b}:mixed {{ print(args.d); }}"));
    assert!(err.contains("has no field `d`"), "{err}");
    // uretprobes have retval only.
    let err = check_fails(&format!("uretprobe:{b}:func {{ print(args.n); }}"));
    assert!(err.contains("a uretprobe has only `retval`"), "{err}");
    // No DWARF at all: how to get it.
    let (_plain_dir, plain) = without_dwarf("dwarf-plain");
    let err = check_fails(&format!(
        "uprobe:{}:func {{ print(args.n); }}",
        plain.display()
    ));
    assert!(err.contains("sonde::sema::no_debug_info"), "{err}");
    assert!(err.contains("needs the debug info (DWARF)"), "{err}");
    assert!(err.contains("compile the program with -g"), "{err}");
    assert!(err.contains("-dbgsym"), "{err}");
    // A binary whose debug file is gone: the places searched are named.
    let stripped = stripped_with_debuglink(&dir, &bin);
    std::fs::remove_file(dir.path().join(".debug/dwarf_target.debug")).unwrap();
    let err = check_fails(&format!(
        "uprobe:{}:func {{ print(args.n); }}",
        stripped.display()
    ));
    assert!(err.contains("sonde::sema::no_debug_info"), "{err}");
    assert!(err.contains("dwarf_target.debug"), "{err}");
    // A wildcard also matches functions without DWARF (the C runtime's): their args are
    // empty, and the script checks.
    let out = run_sonde(&["--check", "-e", &format!("uprobe:{b}:* {{ print(args); }}")]);
    assert_eq!(out.code, Some(0), "{out:?}");
}
