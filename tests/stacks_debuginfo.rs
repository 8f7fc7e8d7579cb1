//! `show_debug_info` for real: user stacks of `tests/targets/inlined_stack.c` (built `-O2 -g`
//! with frame pointers, not PIE, so that its addresses are the file's and `addr2line` reads
//! them as printed), probed by a USDT probe inside `leaf_step`, inlined into `middle_step`,
//! inlined into `work`, called by `main`.
//!
//! bpftrace 0.27 (with blazesym) prints such a frame as `work+61@DIR/FILE:LINE` after one
//! line per inlined function, leaf first: `[inlined] leaf_step@DIR/FILE:LINE`; in perf mode
//! `ADDR leaf_step (inlined)` and no line. The innermost function has the line of the address,
//! each outer one the line of the call inlined into it: the expected lines come from the
//! `LINE:` markers of the source, and every frame of the binary is checked against
//! `addr2line -i -f` on its address.

mod common;

use common::{TempDir, compile_target, repo_root, run_sonde, skip_unless_root};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The flags the target is built with (`-no-pie`: printed addresses are the file's).
const FLAGS: &[&str] = &["-O2", "-g", "-fno-omit-frame-pointer", "-no-pie"];

/// The target's source file, as its DWARF names it (gcc is given this absolute path).
fn source() -> PathBuf {
    repo_root().join("tests/targets/inlined_stack.c")
}

/// The line of the source holding `/* LINE:tag */`.
fn marker(tag: &str) -> usize {
    let text = std::fs::read_to_string(source()).unwrap();
    let needle = format!("/* LINE:{tag} */");
    1 + text
        .lines()
        .position(|l| l.contains(&needle))
        .unwrap_or_else(|| panic!("no marker {needle}"))
}

/// `DIR/FILE:LINE` of line `line` of the source.
fn at(line: usize) -> String {
    format!("{}:{line}", source().display())
}

/// Builds the target into a fresh directory.
fn build(tag: &str) -> (TempDir, PathBuf) {
    let dir = TempDir::new(tag);
    let bin = compile_target(&dir, "inlined_stack", FLAGS);
    (dir, bin)
}

/// Runs `prog` (`BIN` replaced by the binary's path) on `BIN 3`; the output's parts
/// separated by `---` lines (the run's trailing blank lines dropped).
fn trace(bin: &Path, prog: &str) -> Vec<String> {
    let bin = bin.to_str().unwrap();
    let prog = prog.replace("BIN", bin);
    let out = run_sonde(&["-e", &prog, "-c", &format!("{bin} 3")]);
    out.ok_stdout()
        .trim_end_matches('\n')
        .split("---\n")
        .map(str::to_string)
        .collect()
}

/// The probe of the second call (`work(1)` fires `hit(4)`), printing `stacks` (ustack
/// forms) separated by `---`.
fn script(config: &str, stacks: &[&str]) -> String {
    let fmt = vec!["%s"; stacks.len()].join("---\\n");
    format!(
        r#"{config} usdt:BIN:sondeinl:hit /arg0 == 4/ {{ printf("{fmt}", {}); exit(); }}"#,
        stacks.join(", ")
    )
}

/// The lines of a stack's text (it starts with a newline).
fn lines(stack: &str) -> Vec<&str> {
    stack.strip_prefix('\n').unwrap_or(stack).lines().collect()
}

/// `(address, symbol, module)` of a perf-mode line `\tADDR SYMBOL (MODULE)`.
fn perf_frame(line: &str) -> (u64, String, String) {
    let line = line
        .strip_prefix('\t')
        .unwrap_or_else(|| panic!("{line:?}"));
    let (addr, rest) = line.split_once(' ').unwrap();
    let (sym, module) = rest.rsplit_once(" (").unwrap();
    (
        u64::from_str_radix(addr, 16).unwrap(),
        sym.to_string(),
        module.trim_end_matches(')').to_string(),
    )
}

/// `addr2line -i -f -e BIN ADDR`: the frames at `addr`, innermost first, as `(function,
/// FILE:LINE)` (without a discriminator).
fn addr2line(bin: &Path, addr: u64) -> Vec<(String, String)> {
    let out = Command::new("addr2line")
        .args(["-i", "-f", "-e"])
        .arg(bin)
        .arg(format!("{addr:#x}"))
        .output()
        .expect("addr2line (binutils) runs");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let l: Vec<&str> = text.lines().collect();
    l.chunks(2)
        .map(|c| {
            let loc = c[1].split(" (discriminator").next().unwrap();
            (c[0].to_string(), loc.to_string())
        })
        .collect()
}

#[test]
fn inlined_frames_print_with_their_source_lines() {
    if skip_unless_root("inlined_frames_print_with_their_source_lines") {
        return;
    }
    let (_d, bin) = build("debuginfo");
    let out = trace(
        &bin,
        &script(
            "",
            &["ustack()", "ustack(perf)", "ustack(2)", "ustack(raw)"],
        ),
    );
    let [default, perf, two, raw] = &out[..] else {
        panic!("four stacks: {out:?}");
    };
    let perf: Vec<(u64, String, String)> = lines(perf).into_iter().map(perf_frame).collect();
    let module = bin.to_str().unwrap();
    // The probe's address, in work (the inlined functions first), then main's return address.
    let (probe, work_sym, _) = &perf[2];
    let (ret, main_sym, _) = &perf[3];
    assert!(
        work_sym.starts_with("work+") && main_sym.starts_with("main+"),
        "{perf:?}"
    );
    assert_eq!(
        perf[..4],
        [
            (*probe, "leaf_step".to_string(), "inlined".to_string()),
            (*probe, "middle_step".to_string(), "inlined".to_string()),
            (*probe, work_sym.clone(), module.to_string()),
            (*ret, main_sym.clone(), module.to_string()),
        ]
    );
    // main's line is that of its return address, which addr2line gives.
    let main_at = &addr2line(&bin, *ret)[0].1;
    let want = [
        format!("        [inlined] leaf_step@{}", at(marker("probe"))),
        format!("        [inlined] middle_step@{}", at(marker("leaf_call"))),
        format!("        {work_sym}@{}", at(marker("middle_call"))),
        format!("        {main_sym}@{main_at}"),
    ];
    let default = lines(default);
    assert_eq!(default[..4], want, "{default:#?}");
    // ustack(2): two addresses, four lines.
    assert_eq!(lines(two), want, "{two}");
    // raw: one line per address.
    let raw = lines(raw);
    assert_eq!(raw.len(), perf.len() - 2, "{raw:?}");
    assert_eq!(raw[..2], [format!("{probe:x}"), format!("{ret:x}")]);
    // Every frame of the binary as addr2line -i has it.
    let mut of_binary = Vec::new();
    for (addr, sym, _) in perf.iter().filter(|f| f.2 == module) {
        let frames = addr2line(&bin, *addr);
        let (last, inlined) = frames.split_last().unwrap();
        for (name, loc) in inlined {
            of_binary.push(format!("        [inlined] {name}@{loc}"));
        }
        assert_eq!(last.0, sym.split('+').next().unwrap());
        of_binary.push(format!("        {sym}@{}", last.1));
    }
    assert_eq!(default[..of_binary.len()], of_binary[..]);
}

#[test]
fn show_debug_info_off_prints_symbols_only() {
    if skip_unless_root("show_debug_info_off_prints_symbols_only") {
        return;
    }
    let (_d, bin) = build("debuginfo-off");
    let out = trace(
        &bin,
        &script(
            "config = { show_debug_info = 0 }",
            &[
                "ustack()",
                "ustack(perf, 1)",
                r#"config.show_debug_info ? "on\n" : "off\n""#,
            ],
        ),
    );
    let [default, perf, flag] = &out[..] else {
        panic!("three parts: {out:?}");
    };
    assert_eq!(flag, "off");
    let (probe, work_sym, _) = perf_frame(lines(perf)[0]);
    assert!(work_sym.starts_with("work+"), "{perf}");
    assert_eq!(lines(perf).len(), 1, "{perf}");
    let default = lines(default);
    assert_eq!(default[0], format!("        {work_sym}"));
    assert!(default[1].starts_with("        main+"), "{default:?}");
    // No frame has a line or an inlined function, libc's (with its debug file) neither.
    assert!(
        default
            .iter()
            .all(|l| !l.contains('@') && !l.contains("[inlined]")),
        "{default:?}"
    );
    assert!(probe > 0);
}

#[test]
fn a_binary_without_dwarf_prints_symbols_only() {
    if skip_unless_root("a_binary_without_dwarf_prints_symbols_only") {
        return;
    }
    let (_d, bin) = build("debuginfo-stripped");
    let st = Command::new("strip").arg("-g").arg(&bin).status().unwrap();
    assert!(st.success());
    let out = trace(&bin, &script("", &["ustack(3)", "ustack(perf, 2)"]));
    let [default, perf] = &out[..] else {
        panic!("two stacks: {out:?}");
    };
    let perf: Vec<_> = lines(perf).into_iter().map(perf_frame).collect();
    assert_eq!(perf.len(), 2, "{perf:?}");
    let default = lines(default);
    assert_eq!(
        default[..2],
        [
            format!("        {}", perf[0].1),
            format!("        {}", perf[1].1)
        ]
    );
    assert!(perf[0].1.starts_with("work+") && perf[1].1.starts_with("main+"));
}

#[test]
fn a_recording_keeps_the_source_lines() {
    if skip_unless_root("a_recording_keeps_the_source_lines") {
        return;
    }
    let (dir, bin) = build("debuginfo-rec");
    let file = dir.path().join("s.rec");
    let (f, b) = (file.to_str().unwrap(), bin.to_str().unwrap());
    let prog = script("", &["ustack(2)"]).replace("BIN", b);
    let cmd = format!("{b} 3");
    let live = run_sonde(&["record", "-o", f, "-q", "-e", &prog, "-c", &cmd]);
    let live = live.ok_stdout();
    assert!(
        live.contains(&format!("[inlined] leaf_step@{}", at(marker("probe")))),
        "{live}"
    );
    assert_eq!(run_sonde(&["replay", f, "-q"]).ok_stdout(), live);
}

#[test]
fn separate_debug_files_are_found_on_the_debuginfo_path() {
    if skip_unless_root("separate_debug_files_are_found_on_the_debuginfo_path") {
        return;
    }
    let (dir, bin) = build("debuginfo-path");
    let debug_dir = dir.path().join("dbg");
    std::fs::create_dir(&debug_dir).unwrap();
    let debug = debug_dir.join("inlined_stack.debug");
    let objcopy = |args: &[&std::ffi::OsStr]| {
        let st = Command::new("objcopy").args(args).status().unwrap();
        assert!(st.success(), "objcopy {args:?}");
    };
    objcopy(&["--only-keep-debug".as_ref(), bin.as_ref(), debug.as_ref()]);
    let link = format!("--add-gnu-debuglink={}", debug.display());
    objcopy(&["--strip-debug".as_ref(), link.as_ref(), bin.as_ref()]);
    // The debug file is in no default place (next to the binary, its .debug/,
    // /usr/lib/debug): found only through --debuginfo.
    let b = bin.to_str().unwrap();
    let prog = script("", &["ustack(1)"]).replace("BIN", b);
    let cmd = format!("{b} 3");
    let run = |extra: &[&str]| {
        let mut args = extra.to_vec();
        args.extend(["-e", &prog, "-c", &cmd]);
        run_sonde(&args).ok_stdout().to_string()
    };
    let found = run(&["--debuginfo", debug_dir.to_str().unwrap()]);
    assert!(
        found.contains(&format!("[inlined] leaf_step@{}\n", at(marker("probe")))),
        "{found}"
    );
    let default = run(&[]);
    assert!(
        lines(default.trim_end_matches('\n'))
            .iter()
            .all(|l| !l.contains('@')),
        "{default}"
    );
}
