//! A kernel script tracing `tests/targets/record_target.c` (uprobes filtered on the target's
//! own pid, a syscall tracepoint, printf with `%d %x %-10s %s`, `usym`, `ustack`, `kstack`,
//! `hist`, `print(@m)` and `clear` in an interval, `time()`, `exit(3)`) is recorded while its
//! live output goes to stdout; `sonde replay` must print the same bytes, in text and in JSON,
//! after the traced process is gone and its binary deleted (names come from the recording),
//! and exit with the recorded code.
//!
//! A recording holds no output format: a recording made in text replays as JSON exactly as a
//! live `-f json` run printed, and the other way round. Two live runs are compared for that,
//! so only what differs between them (the time of day printed by `time()`) is masked;
//! everything else, stacks included, is deterministic for the target.

use crate::bad_files::check_truncations;
use crate::common::{
    ATTACH_TIMEOUT, Output, Target, TempDir, Tracer, compile_target, settle, skip_unless_root,
};
use crate::replay;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The exit code the recorded script ends with.
const RECORDED_EXIT: i32 = 3;

/// The kernel script recorded here; `$1` is the target's pid.
fn script(bin: &Path) -> String {
    let b = bin.display();
    format!(
        r#"uprobe:{b}:step /pid == $1/ {{ printf("step %d %d %x |%-10s|%s|\n", arg0, arg1, arg1 + 250, "pad", "end"); @sum = sum(arg1); @h = hist(arg1); @by[arg0 % 3] = count(); }}
uprobe:{b}:name /pid == $1/ {{ printf("name %s %d\n", str(arg0), pid == $1); @names[str(arg0)] = count(); }}
uprobe:{b}:leaf /pid == $1/ {{ @us[ustack] = count(); }}
tracepoint:syscalls:sys_enter_getppid /pid == $1/ {{ @ks[kstack(4)] = count(); @sys = count(); }}
uprobe:{b}:pick /pid == $1/ {{ @fp[usym(arg0)] = count(); printf("fp %s\n", usym(arg0)); }}
uprobe:{b}:done /pid == $1/ {{ @done = 1; time("at %H:%M:%S\n"); }}
interval:ms:100 /@done/ {{ print(@sum); clear(@sum); print(@h); print(@by); exit(3); }}
"#
    )
}

/// The hist of `step`'s second arguments (0, 10, 20, 30, 40, then 2 through `pick`).
const HIST: &str = "\
[0]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |
[1]                    0 |                                                    |
[2, 4)                 1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |
[4, 8)                 0 |                                                    |
[8, 16)                1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |
[16, 32)               2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|
[32, 64)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |
";

/// The printf lines of the script, in order.
const PRINTF_LINES: &str = "\
step 0 0 fa |pad       |end|
step 1 10 104 |pad       |end|
step 2 20 10e |pad       |end|
step 3 30 118 |pad       |end|
step 4 40 122 |pad       |end|
name alpha 1
name beta 1
name alpha 1
fp step
step 1 2 fc |pad       |end|
";

/// The live text output, after [`mask_time`] and [`normalize_stacks`].
fn expected_text() -> String {
    format!(
        "{PRINTF_LINES}at TIME\n@sum: 102\n@h:\n{HIST}\n@by[2]: 1\n@by[0]: 2\n@by[1]: 3\n\n\n\
         @by[2]: 1\n@by[0]: 2\n@by[1]: 3\n@done: 1\n@fp[step]: 1\n@h:\n{HIST}\n\
         @ks[\n    <kernel frames>\n]: 3\n@names[beta]: 1\n@names[alpha]: 2\n@sys: 3\n\
         @us[\n    leaf\n    middle\n    outer\n    main\n]: 1\n"
    )
}

/// Replaces every `at HH:MM:SS` (what `time()` printed) by `at TIME`.
fn mask_time(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        let clock = b.get(i + 3..i + 11).is_some_and(|t| {
            t.iter().enumerate().all(|(k, c)| {
                if k % 3 == 2 {
                    *c == b':'
                } else {
                    c.is_ascii_digit()
                }
            })
        });
        if b[i..].starts_with(b"at ") && clock {
            out.push_str("at TIME");
            i += 11;
        } else {
            let c = s[i..].chars().next().expect("in bounds");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// Replaces the address of every unsymbolized stack frame (`    0x7f12...`, in text and in
/// JSON's stack strings) by `    0x?`. Two live runs differ there: the frames of libc's
/// start-up code below `main` print as raw addresses, which ASLR moves, when libc's symbols
/// (libc6-dbg) are not installed, and what a machine happens to have must not decide a test.
fn mask_unknown_frames(s: &str) -> String {
    const FRAME: &str = "    0x";
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find(FRAME) {
        out.push_str(&rest[..i + FRAME.len()]);
        rest = &rest[i + FRAME.len()..];
        let hex = rest.len()
            - rest
                .trim_start_matches(|c: char| c.is_ascii_hexdigit())
                .len();
        if hex > 0 {
            out.push('?');
            rest = &rest[hex..];
        }
    }
    out.push_str(rest);
    out
}

/// True for a symbolized frame line: `    name+offset`.
fn is_frame(line: &str) -> bool {
    let Some(f) = line.strip_prefix("    ") else {
        return false;
    };
    // `name+off@FILE:LINE` when the binary has DWARF (bpftrace 0.27's show_debug_info).
    let f = f.split_once('@').map_or(f, |(frame, _)| frame);
    f.rsplit_once('+').is_some_and(|(name, off)| {
        !name.is_empty()
            && !name.starts_with("0x")
            && !off.is_empty()
            && off.bytes().all(|c| c.is_ascii_digit())
    })
}

/// In text output, replaces the frames of the `@ks[...]` block by `<kernel frames>` and those
/// of `@us[...]` by their function names up to `main` (what follows is libc's start code),
/// after checking that those frames are symbolized.
fn normalize_stacks(s: &str) -> String {
    let mut out = Vec::new();
    let mut block: Option<(&str, Vec<&str>)> = None;
    for line in s.split_inclusive('\n') {
        let bare = line.trim_end_matches('\n');
        if let Some((name, frames)) = block.as_mut() {
            if bare.starts_with("]: ") {
                assert!(!frames.is_empty(), "empty stack in:\n{s}");
                if *name == "@ks[" {
                    for f in frames.iter() {
                        assert!(is_frame(f), "unsymbolized frame {f:?} in:\n{s}");
                    }
                    out.push("    <kernel frames>\n".to_string());
                } else {
                    let names: Vec<&str> = frames
                        .iter()
                        .map(|f| f.trim().rsplit_once('+').map_or(*f, |(n, _)| n))
                        .collect();
                    let main = names
                        .iter()
                        .position(|n| *n == "main")
                        .unwrap_or_else(|| panic!("no main in the user stack:\n{s}"));
                    for f in &frames[..=main] {
                        assert!(is_frame(f), "unsymbolized frame {f:?} in:\n{s}");
                    }
                    out.extend(names[..=main].iter().map(|n| format!("    {n}\n")));
                }
                out.push(line.to_string());
                block = None;
            } else {
                frames.push(bare);
            }
        } else {
            if bare == "@ks[" || bare == "@us[" {
                block = Some((bare, Vec::new()));
            }
            out.push(line.to_string());
        }
    }
    assert!(block.is_none(), "unterminated stack in:\n{s}");
    out.concat()
}

/// A live run recorded in a file.
pub(crate) struct Recorded {
    /// What the live run printed.
    pub(crate) live: Output,
    /// The recording.
    pub(crate) file: PathBuf,
}

/// Builds `record_target` in `dir` (without optimization, with frame pointers: stacks walk).
pub(crate) fn build(dir: &TempDir) -> PathBuf {
    compile_target(
        dir,
        "record_target",
        &["-O0", "-g", "-fno-omit-frame-pointer"],
    )
}

/// Records [`script`] on a fresh `record_target` with the options `extra`, letting the target
/// go once the probes are attached; the script exits by itself. The target is killed before
/// this returns, so a replay runs after the traced process is gone.
pub(crate) fn record(dir: &TempDir, bin: &Path, name: &str, extra: &[&str]) -> Recorded {
    let script_file = dir.path().join(format!("{name}.bt"));
    std::fs::write(&script_file, script(bin)).unwrap();
    let file = dir.path().join(format!("{name}.rec"));
    // It sleeps 5 s after its calls: alive while the tracer prints its stacks at exit.
    let mut target = Target::spawn(bin, &["wait", "5000"]);
    let pid = target.pid();
    let mut args = vec!["record", "-o", file.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.extend([script_file.to_str().unwrap(), pid.as_str()]);
    let mut tracer = Tracer::start(&args);
    let attached = tracer.wait_attached(ATTACH_TIMEOUT);
    settle();
    target.go();
    let live = tracer.finish(Duration::from_secs(15));
    drop(target);
    assert!(attached, "not attached: {live:?}");
    assert!(!live.timed_out, "the recording run did not exit: {live:?}");
    assert!(!live.stderr.contains("panicked"), "{}", live.stderr);
    assert_eq!(live.code, Some(RECORDED_EXIT), "{live:?}");
    Recorded { live, file }
}

/// Runs `sonde replay FILE extra...` and checks that it printed `live`'s stdout again, byte
/// for byte, and exited with the recorded code.
fn assert_replays_as(file: &Path, extra: &[&str], live: &str) {
    let out = replay(file, extra);
    assert_eq!(out.code, Some(RECORDED_EXIT), "{out:?}");
    assert!(
        out.stdout == live,
        "replay {extra:?} differs:\nlive:\n{live}\nreplay:\n{}",
        out.stdout
    );
}

#[test]
fn unknown_frames_are_masked_in_text_and_json() {
    let text = "@us[\n    leaf+0\n    main+20\n    0x7f3a2b1c0d1e\n    _start+33\n]: 1\n";
    assert_eq!(
        mask_unknown_frames(text),
        "@us[\n    leaf+0\n    main+20\n    0x?\n    _start+33\n]: 1\n"
    );
    let json = r#"{"@us": {"\n    main+20\n    0x7f00aa\n": 1}}"#;
    assert_eq!(
        mask_unknown_frames(json),
        r#"{"@us": {"\n    main+20\n    0x?\n": 1}}"#
    );
}

#[test]
fn replay_prints_the_live_run_again() {
    if skip_unless_root("replay_prints_the_live_run_again") {
        return;
    }
    let dir = TempDir::new("rec-text");
    let bin = build(&dir);
    let text = record(&dir, &bin, "text", &[]);
    let json = record(&dir, &bin, "json", &["-f", "json"]);
    // The names in the recording are all a replay needs.
    std::fs::remove_file(&bin).unwrap();

    // What the live runs printed.
    assert_eq!(
        normalize_stacks(&mask_time(&text.live.stdout)),
        expected_text()
    );
    assert!(
        text.live.stderr.contains("Attached 7 probes"),
        "{}",
        text.live.stderr
    );
    let lines: Vec<&str> = json.live.stdout.lines().collect();
    for want in [
        r#"{"type": "attached_probes", "count": 7, "data": {"probes": 7}}"#,
        r#"{"type": "printf", "data": "step 0 0 fa |pad       |end|\n"}"#,
        r#"{"type": "printf", "data": "fp step\n"}"#,
        r#"{"type": "time", "data": "at TIME\n"}"#,
        r#"{"type": "map", "data": {"@sum": 102}}"#,
        r#"{"type": "map", "data": {"@by": {"2": 1, "0": 2, "1": 3}}}"#,
        r#"{"type": "map", "data": {"@fp": {"step": 1}}}"#,
        r#"{"type": "map", "data": {"@names": {"beta": 1, "alpha": 2}}}"#,
    ] {
        assert!(
            lines.iter().any(|l| mask_time(l) == want),
            "no {want} in:\n{}",
            json.live.stdout
        );
    }
    let us = lines
        .iter()
        .find(|l| l.contains("\"@us\""))
        .unwrap_or_else(|| panic!("no @us in {}", json.live.stdout));
    // Frames carry their source line (bpftrace 0.27's show_debug_info): the target has DWARF.
    assert!(
        us.contains(r#"\n    leaf+0@"#)
            && us.contains(r#"record_target.c:"#)
            && us.contains(r#"\n    middle+"#),
        "{us}"
    );

    // Each replays as it printed.
    assert_replays_as(&text.file, &[], &text.live.stdout);
    assert_replays_as(&json.file, &["-f", "json"], &json.live.stdout);
    // And in the other format as the other live run printed (the time of day apart).
    for (rec, args, other) in [(&text, &["-f", "json"][..], &json), (&json, &[][..], &text)] {
        let out = replay(&rec.file, args);
        assert_eq!(out.code, Some(RECORDED_EXIT));
        assert_eq!(
            mask_unknown_frames(&mask_time(&out.stdout)),
            mask_unknown_frames(&mask_time(&other.live.stdout))
        );
    }
    // -q drops the attach message, which replay prints on stderr as the live run did.
    let out = replay(&text.file, &[]);
    assert!(out.stderr.contains("Attached 7 probes"), "{}", out.stderr);
    let out = replay(&text.file, &["-q"]);
    assert!(!out.stderr.contains("Attached"), "{}", out.stderr);
    assert_eq!(out.stdout, text.live.stdout);
    // -o OUT: every byte of the output goes to OUT, the blank lines before the exit maps
    // included (as a live run with -o).
    let out_file = dir.path().join("out.txt");
    let out = replay(&text.file, &["-o", out_file.to_str().unwrap()]);
    assert_eq!(out.code, Some(RECORDED_EXIT));
    assert_eq!(out.stdout, "");
    let written = std::fs::read_to_string(&out_file).unwrap();
    assert_eq!(written, text.live.stdout);
    assert!(written.starts_with(PRINTF_LINES) && written.contains("@us["));

    // A real recording cut anywhere is an error naming where.
    check_truncations(&text.file);
}
