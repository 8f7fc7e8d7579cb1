//! `sonde record` and `sonde replay` end to end.
//!
//! - A kernel script tracing `tests/targets/record_target.c` (uprobes filtered on the target's
//!   own pid, a syscall tracepoint, printf with `%d %x %-10s %s`, `usym`, `ustack`, `kstack`,
//!   `hist`, `print(@m)` and `clear` in an interval, `time()`, `exit(3)`) is recorded while
//!   its live output goes to stdout; `sonde replay` must print the same bytes, in text and in
//!   JSON, after the traced process is gone and its binary deleted (names come from the
//!   recording), and exit with the recorded code.
//! - A recording holds no output format: a recording made in text replays as JSON exactly as
//!   a live `-f json` run printed, and the other way round. Two live runs are compared for
//!   that, so only what differs between them (the time of day printed by `time()`) is
//!   masked; everything else, stacks included, is deterministic for the target.
//! - `sonde replay FILE SCRIPT` runs `replay` probes as an unprivileged user on a recording
//!   (both one made by the kernel and one written by hand here from the documented format,
//!   which needs no root).
//! - Bad files (truncated at many offsets, empty, an ELF binary, random bytes, absurd
//!   lengths, header types printing cannot handle, missing) give exit status 1 and one line
//!   naming the byte offset, never a panic, in bounded time.
//! - `sonde record` usage errors.

mod common;

use common::{
    ATTACH_TIMEOUT, Output, Target, TempDir, Tracer, compile_target, is_root, run_command,
    run_sonde, run_sonde_timeout, settle, skip_unless_root, sonde,
};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Hard limit for one replay (bad files included).
const REPLAY_TIMEOUT: Duration = Duration::from_secs(10);

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

/// True for a symbolized frame line: `    name+offset`.
fn is_frame(line: &str) -> bool {
    let Some(f) = line.strip_prefix("    ") else {
        return false;
    };
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
struct Recorded {
    /// What the live run printed.
    live: Output,
    /// The recording.
    file: PathBuf,
}

/// Builds `record_target` in `dir` (without optimization, with frame pointers: stacks walk).
fn build(dir: &TempDir) -> PathBuf {
    compile_target(
        dir,
        "record_target",
        &["-O0", "-g", "-fno-omit-frame-pointer"],
    )
}

/// Records [`script`] on a fresh `record_target` with the options `extra`, letting the target
/// go once the probes are attached; the script exits by itself. The target is killed before
/// this returns, so a replay runs after the traced process is gone.
fn record(dir: &TempDir, bin: &Path, name: &str, extra: &[&str]) -> Recorded {
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

/// Runs `sonde replay FILE extra...`.
fn replay(file: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["replay", file.to_str().unwrap()];
    args.extend_from_slice(extra);
    let out = run_sonde_timeout(&args, REPLAY_TIMEOUT);
    assert!(!out.timed_out, "replay {args:?} timed out");
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    out
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
    assert!(us.contains(r#"\n    leaf+0\n    middle+"#), "{us}");

    // Each replays as it printed.
    assert_replays_as(&text.file, &[], &text.live.stdout);
    assert_replays_as(&json.file, &["-f", "json"], &json.live.stdout);
    // And in the other format as the other live run printed (the time of day apart).
    for (rec, args, other) in [(&text, &["-f", "json"][..], &json), (&json, &[][..], &text)] {
        let out = replay(&rec.file, args);
        assert_eq!(out.code, Some(RECORDED_EXIT));
        assert_eq!(mask_time(&out.stdout), mask_time(&other.live.stdout));
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

/// Runs `sonde` with `args` as user and group 65534 (nobody).
fn run_as_nobody(args: &[&str]) -> Output {
    let mut cmd = Command::new("setpriv");
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(sonde())
        .args(args);
    run_command(cmd, REPLAY_TIMEOUT)
}

/// True when the sonde binary runs as nobody (setpriv present, binary reachable).
fn nobody_can_run_sonde(test: &str) -> bool {
    let ok = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(sonde())
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!(
            "skipping {test}: cannot run {} as nobody",
            sonde().display()
        );
    }
    ok
}

/// Makes `dir` and the files in it readable by everyone.
fn share(dir: &TempDir) {
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    for e in std::fs::read_dir(dir.path()).unwrap() {
        let p = e.unwrap().path();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
}

/// Parses `@name[k1, k2]: v` lines of `map` into `(k1, k2, v)`.
fn pairs<'a>(out: &'a str, map: &str) -> Vec<(&'a str, &'a str, u64)> {
    let prefix = format!("@{map}[");
    out.lines()
        .filter_map(|l| {
            let (key, v) = l.strip_prefix(prefix.as_str())?.split_once("]: ")?;
            let (a, b) = key.split_once(", ")?;
            Some((a, b, v.parse().ok()?))
        })
        .collect()
}

#[test]
fn replay_scripts_run_unprivileged_on_a_kernel_recording() {
    if skip_unless_root("replay_scripts_run_unprivileged_on_a_kernel_recording")
        || !nobody_can_run_sonde("replay_scripts_run_unprivileged_on_a_kernel_recording")
    {
        return;
    }
    let dir = TempDir::new("rec-nobody");
    let bin = build(&dir);
    let rec = record(&dir, &bin, "r", &[]);
    share(&dir);
    let live = &rec.live.stdout;
    let file = rec.file.to_str().unwrap();

    // Every recorded printf line, by the kind of event that printed it and its first field;
    // nsecs (the recorded read times) never goes back.
    let out = run_as_nobody(&[
        "replay",
        file,
        "-e",
        "replay { @k[probe, field(1)] = count(); if (nsecs < @last) { @back = count(); } @last = nsecs; } END { clear(@last); }",
    ]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(!out.stdout.contains("@back"), "{}", out.stdout);
    let kinds = pairs(&out.stdout, "k");
    let count_live = |word: &str| {
        live.lines()
            .filter(|l| l.split_whitespace().next() == Some(word))
            .count() as u64
    };
    let mut words: Vec<(&str, u64)> = kinds.iter().map(|(_, w, n)| (*w, *n)).collect();
    words.sort();
    assert_eq!(
        words,
        [("fp", 1), ("name", 3), ("step", 6)],
        "{}",
        out.stdout
    );
    for (w, n) in &words {
        assert_eq!(*n, count_live(w), "{w} in:\n{live}");
    }
    let kind = |w: &str| {
        kinds
            .iter()
            .find(|(_, word, _)| *word == w)
            .map(|(probe, _, _)| probe.to_string())
            .unwrap()
    };
    assert!(kind("step").starts_with("replay:"));

    // `replay:N` (here from a script file) sees one kind, with its typed arguments: the sum
    // of step's second arguments is the @sum the live run printed.
    let script_file = dir.path().join("sum.sd");
    std::fs::write(
        &script_file,
        format!(
            "{} {{ @s = sum(args.arg1); @n = count(); printf(\"%d|%s|%s\\n\", args.arg0, args.arg3, line); }}\n",
            kind("step")
        ),
    )
    .unwrap();
    share(&dir);
    let out = run_as_nobody(&["replay", file, "-q", script_file.to_str().unwrap()]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let live_sum: u64 = live
        .lines()
        .find_map(|l| l.strip_prefix("@sum: "))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no @sum in {live}"));
    let steps: String = live
        .lines()
        .filter(|l| l.starts_with("step "))
        .map(|l| format!("{}|pad|{l}\n", l.split(' ').nth(1).unwrap()))
        .collect();
    assert_eq!(out.stdout, format!("{steps}\n\n@n: 6\n@s: {live_sum}\n"));
    assert!(!out.stderr.contains("Attached"), "{}", out.stderr);
}

/// Pushes `s` as a `str` of the recording format.
fn put_str(b: &mut Vec<u8>, s: &str) {
    b.extend_from_slice(&(s.len() as u32).to_le_bytes());
    b.extend_from_slice(s.as_bytes());
}

/// Pushes an entry: tag, body length, body.
fn put_entry(b: &mut Vec<u8>, tag: u8, body: &[u8]) {
    b.push(tag);
    b.extend_from_slice(&(body.len() as u64).to_le_bytes());
    b.extend_from_slice(body);
}

/// The printf events of [`handmade`]: `(time, int, string)`.
const HANDMADE: [(u64, i64, &str); 3] = [(1000, 7, "abc"), (2000, -2, "xyz"), (3500, 35, "abc")];

/// A recording written by hand from the format documented in `runtime/src/record/mod.rs`:
/// a script whose one event (when `args` is given) is a printf `"%d %s\n"` with arguments
/// of the encoded types `args`, the `Event` entries of the `(time, payload)` `events`, and
/// exit code 5.
fn recording(args: Option<&[&[u8]]>, events: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let mut h = Vec::new();
    put_str(&mut h, "hand.bt");
    put_str(&mut h, "// written by tests/engine_record.rs\n");
    h.push(1); // print_maps_on_exit
    h.extend_from_slice(&u32::from(args.is_some()).to_le_bytes()); // events
    if let Some(args) = args {
        h.push(0); // Printf
        put_str(&mut h, "%d %s\n");
        h.extend_from_slice(&(args.len() as u32).to_le_bytes());
        for a in args {
            h.extend_from_slice(a);
        }
    }
    h.extend_from_slice(&0u32.to_le_bytes()); // maps
    let mut b = b"SONDEREC".to_vec();
    b.extend_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&0u16.to_le_bytes());
    b.extend_from_slice(&(h.len() as u64).to_le_bytes());
    b.extend_from_slice(&h);
    put_entry(&mut b, 1, &1u64.to_le_bytes()); // Attached
    for (ts, payload) in events {
        let mut record = 0u64.to_le_bytes().to_vec();
        record.extend_from_slice(payload);
        let mut body = ts.to_le_bytes().to_vec();
        body.extend_from_slice(&(record.len() as u32).to_le_bytes());
        body.extend_from_slice(&record);
        put_entry(&mut b, 2, &body); // Event
    }
    put_entry(&mut b, 12, &[0; 16]); // Counters
    put_entry(&mut b, 13, &[5]); // End
    b
}

/// `Type` encodings: `int64` and `string[8]`.
const INT64: &[u8] = &[2, 64, 1];
const STR8: &[u8] = &[3, 8, 0, 0, 0];

/// [`recording`] of a printf of an `int64` and a `string[8]` with the [`HANDMADE`] events, or
/// of no event at all.
fn handmade(printf: bool) -> Vec<u8> {
    if !printf {
        return recording(None, &[]);
    }
    let events: Vec<(u64, Vec<u8>)> = HANDMADE
        .iter()
        .map(|(ts, n, s)| {
            let mut payload = n.to_le_bytes().to_vec();
            let mut text = [0u8; 8];
            text[..s.len()].copy_from_slice(s.as_bytes());
            payload.extend_from_slice(&text);
            (*ts, payload)
        })
        .collect();
    recording(Some(&[INT64, STR8]), &events)
}

/// Where the entries of recording `bytes` start (after its header).
fn header_end(bytes: &[u8]) -> usize {
    20 + u64::from_le_bytes(bytes[12..20].try_into().unwrap()) as usize
}

#[test]
fn a_handmade_recording_replays_without_root() {
    let dir = TempDir::new("rec-hand");
    let file = dir.path().join("hand.rec");
    std::fs::write(&file, handmade(true)).unwrap();
    let f = file.to_str().unwrap();

    let out = replay(&file, &[]);
    assert_eq!(out.code, Some(5), "{out:?}");
    assert_eq!(out.stdout, "7 abc\n-2 xyz\n35 abc\n");
    assert!(out.stderr.contains("Attached 1 probe"), "{}", out.stderr);
    let out = replay(&file, &["-f", "json", "-q"]);
    assert_eq!(out.code, Some(5));
    assert_eq!(
        out.stdout,
        "{\"type\": \"printf\", \"data\": \"7 abc\\n\"}\n\
         {\"type\": \"printf\", \"data\": \"-2 xyz\\n\"}\n\
         {\"type\": \"printf\", \"data\": \"35 abc\\n\"}\n"
    );

    // Scripts: fields of the printed lines, typed arguments, the recorded times, filters.
    let prog = r#"replay { @f[field(2)] = count(); @sum = sum(args.arg0); @t = max(nsecs); }
replay:0 /args.arg0 < 0/ { printf("negative %s at %d: %s\n", args.arg1, nsecs, line); }"#;
    let args = ["replay", f, "-q", "-e", prog];
    let out = if is_root() {
        share(&dir);
        if !nobody_can_run_sonde("a_handmade_recording_replays_without_root (as nobody)") {
            return;
        }
        run_as_nobody(&args)
    } else {
        run_sonde(&args)
    };
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(
        out.stdout,
        "negative xyz at 2000: -2 xyz\n\n\n@f[xyz]: 1\n@f[abc]: 2\n@sum: 40\n@t: 3500\n"
    );
}

/// `delta` in `replay` probes measures the recorded times, so the handmade recording's events
/// (at 1000, 2000 and 3500 ns, the first and the last with key "abc") give exact values: the
/// first firing of the thread (or of a key) is 0 and adds nothing to an aggregation, the
/// thread's gaps are 1000 and 1500, key "abc"'s is 2500.
#[test]
fn delta_in_replay_measures_the_recorded_times() {
    let dir = TempDir::new("rec-delta");
    let file = dir.path().join("hand.rec");
    std::fs::write(&file, handmade(true)).unwrap();
    let prog = r#"replay { @k[args.arg1] = stats(delta(args.arg1)); @t = hist(delta); printf("%s %d %d\n", args.arg1, delta, delta(args.arg1)); }"#;
    let out = run_sonde(&["replay", file.to_str().unwrap(), "-q", "-e", prog]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let bar = "@".repeat(52);
    // No empty line after the stats map: bpftrace 0.26 (0.17 printed one).
    assert_eq!(
        out.stdout,
        format!(
            "abc 0 0\nxyz 1000 0\nabc 1500 2500\n\n\n@k[abc]: {{ .count = 1, .average = 2500, .total = 2500 }}\n\
             @t:\n[512, 1K)              1 |{bar}|\n[1K, 2K)               1 |{bar}|\n\n"
        )
    );
}

#[test]
fn replay_probes_on_a_recording_without_printf_say_so() {
    let dir = TempDir::new("rec-noprintf");
    let file = dir.path().join("silent.rec");
    std::fs::write(&file, handmade(false)).unwrap();
    // The recording itself replays (nothing to print) with its exit code.
    let out = replay(&file, &["-q"]);
    assert_eq!((out.code, out.stdout.as_str()), (Some(5), ""), "{out:?}");
    for prog in ["replay { @n = count(); }", "replay:0 { @n = count(); }"] {
        let out = replay(&file, &["-e", prog]);
        assert_eq!(out.code, Some(1), "{out:?}");
        assert!(out.stdout.is_empty(), "{}", out.stdout);
        for want in ["no recorded printf event matches", "no printf events"] {
            assert!(out.stderr.contains(want), "{want}: {}", out.stderr);
        }
    }
    // replay:N names the kinds there are.
    std::fs::write(&file, handmade(true)).unwrap();
    let out = replay(&file, &["-e", "replay:4 { @n = count(); }"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr.contains("kinds 0 (\"%d %s\\n\")"),
        "{}",
        out.stderr
    );
}

/// Checks that replaying `bytes` (written to a file in `dir`) fails cleanly: exit status 1,
/// nothing on stdout, one line on stderr naming the file and, for format errors, a byte
/// offset at most `max_offset`; no panic; quickly.
fn assert_bad_file(dir: &TempDir, what: &str, bytes: &[u8], max_offset: u64) {
    let file = dir.path().join("bad.rec");
    std::fs::write(&file, bytes).unwrap();
    for extra in [&[][..], &["-e", "replay { @n = count(); }"][..]] {
        let start = Instant::now();
        let out = replay(&file, extra);
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{what}: took {:?}",
            start.elapsed()
        );
        assert_eq!(out.code, Some(1), "{what}: {out:?}");
        assert!(out.stdout.is_empty(), "{what}: {out:?}");
        let err = out.stderr.trim_end();
        assert_eq!(err.lines().count(), 1, "{what}: {err}");
        assert!(err.contains(file.to_str().unwrap()), "{what}: {err}");
        let offset: u64 = err
            .split_once("at byte ")
            .and_then(|(_, rest)| rest.split(':').next()?.parse().ok())
            .unwrap_or_else(|| panic!("{what}: no byte offset in {err}"));
        assert!(
            offset <= max_offset,
            "{what}: offset {offset} > {max_offset}: {err}"
        );
    }
}

/// Truncations of the recording `file` at offsets through the preamble, the header and the
/// entries: each is an error at or before the cut.
fn check_truncations(file: &Path) {
    let bytes = std::fs::read(file).unwrap();
    let header_end = header_end(&bytes);
    let dir = TempDir::new("rec-trunc");
    let mut cuts: Vec<usize> = vec![0, 1, 7, 8, 9, 11, 12, 19, 20, 21, 24];
    cuts.extend((1..8).map(|k| 20 + (header_end - 20) * k / 8));
    cuts.extend([header_end, header_end + 1, header_end + 9]);
    cuts.extend((1..16).map(|k| header_end + (bytes.len() - header_end) * k / 16));
    cuts.extend([bytes.len() - 2, bytes.len() - 1]);
    cuts.sort();
    cuts.dedup();
    for cut in cuts {
        let what = format!("{} cut at {cut} of {}", file.display(), bytes.len());
        assert_bad_file(&dir, &what, &bytes[..cut], cut as u64);
    }
}

#[test]
fn bad_recordings_are_one_line_errors() {
    let dir = TempDir::new("rec-bad");
    let good = handmade(true);
    let file = dir.path().join("good.rec");
    std::fs::write(&file, &good).unwrap();
    check_truncations(&file);

    assert_bad_file(&dir, "empty file", b"", 0);
    let ls = std::fs::read("/bin/ls").unwrap();
    assert_bad_file(&dir, "/bin/ls", &ls, 0);
    // Random bytes, alone and after a valid magic and version (deterministic).
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut random = |n: usize| -> Vec<u8> {
        (0..n)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                (seed >> 24) as u8
            })
            .collect()
    };
    let entries = header_end(&good);
    for n in [1, 7, 64, 4096] {
        assert_bad_file(&dir, &format!("{n} random bytes"), &random(n), 0);
        let mut b = b"SONDEREC\x01\0\0\0".to_vec();
        b.extend(random(n));
        assert_bad_file(
            &dir,
            &format!("magic + {n} random bytes"),
            &b,
            b.len() as u64,
        );
        // A valid header followed by random entries.
        let mut b = good[..entries].to_vec();
        b.extend(random(n));
        assert_bad_file(
            &dir,
            &format!("header + {n} random bytes"),
            &b,
            b.len() as u64,
        );
    }
    // Lengths far beyond the file: the header's, an entry's (the first, Attached).
    let mut b = good.clone();
    b[12..20].copy_from_slice(&u64::MAX.to_le_bytes());
    assert_bad_file(&dir, "huge header length", &b, 20);
    let mut b = good.clone();
    b[entries + 1..entries + 9].copy_from_slice(&(1u64 << 62).to_le_bytes());
    assert_bad_file(&dir, "huge entry length", &b, b.len() as u64);
    // Types printing would choke on are refused when the header is read: an integer of 0
    // bits (sign extension would shift by 64), an array of 2^32 - 1 empty tuples (as many
    // values), 2^16 strings of 2^16 bytes (a size past 32 bits). And a printf record shorter
    // than its arguments, which a replay script would read past.
    let empty_tuples: &[u8] = &[7, 8, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff];
    let huge_array: &[u8] = &[7, 3, 0, 0, 1, 0, 0, 0, 1, 0];
    for (what, ty) in [
        ("integer of 0 bits", &[2u8, 0, 1][..]),
        ("2^32 - 1 empty tuples", empty_tuples),
        ("array of 4 GiB", huge_array),
    ] {
        let b = recording(Some(&[ty, STR8]), &[(1, vec![0; 16])]);
        assert_bad_file(&dir, what, &b, header_end(&b) as u64);
    }
    let b = recording(Some(&[INT64, STR8]), &[(1, vec![0; 15])]);
    assert_bad_file(&dir, "short printf record", &b, b.len() as u64);

    // A missing file: a one-line error naming it.
    let missing = dir.path().join("missing.rec");
    let out = replay(&missing, &[]);
    assert_eq!(out.code, Some(1), "{out:?}");
    let err = out.stderr.trim_end();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(missing.to_str().unwrap()), "{err}");
    // A directory.
    let out = replay(dir.path(), &[]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert_eq!(out.stderr.trim_end().lines().count(), 1, "{}", out.stderr);
}

#[test]
fn record_usage_errors() {
    let dir = TempDir::new("rec-usage");
    let file = dir.path().join("x.rec");
    let f = file.to_str().unwrap();
    // No -o: a usage error, whatever else is there.
    for args in [
        &["record"][..],
        &["record", "-e", "BEGIN { exit(); }"][..],
        &["record", "-q", "-e", "BEGIN { exit(); }"][..],
    ] {
        let out = run_sonde(args);
        assert_eq!(out.code, Some(2), "{args:?}: {out:?}");
        assert!(out.stderr.contains("usage"), "{}", out.stderr);
        assert!(out.stdout.is_empty());
    }
    // -o without a script.
    let out = run_sonde(&["record", "-o", f]);
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(!file.exists());
    // A recording that cannot be created: a clear error before anything runs.
    let bad = "/nonexistent-dir/x.rec";
    let out = run_sonde(&[
        "record",
        "-o",
        bad,
        "-e",
        r#"BEGIN { printf("ran\n"); exit(); }"#,
    ]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    assert!(!out.stderr.contains("Attached"), "{}", out.stderr);
    let err = out.stderr.trim_end();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(bad) && err.contains("No such file or directory"),
        "{err}"
    );
    // Scripts that do not compile, or that run in the userspace engine, leave no file.
    let out = run_sonde(&["record", "-o", f, "-e", "BEGIN { nosuchfn(); }"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    let out = run_sonde(&["record", "-o", f, "-e", "input { @n = count(); }"]);
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(out.stderr.contains("record"), "{}", out.stderr);
    assert!(!file.exists());
    // replay without a file.
    let out = run_sonde(&["replay"]);
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(out.stderr.contains("usage"), "{}", out.stderr);
}

/// A `usym` argument printed by a replay script shows the name recorded with it, as `line`
/// does, although the process is gone: the script's resolver answers from the recording first.
#[test]
fn replay_script_prints_recorded_symbol_names() {
    if skip_unless_root("replay_script_prints_recorded_symbol_names") {
        return;
    }
    let dir = TempDir::new("rec-usym");
    let bin = build(&dir);
    let rec = record(&dir, &bin, "r", &[]);
    let out = replay(
        &rec.file,
        &["-q", "-e", "replay { @k[probe, field(1)] = count(); }"],
    );
    let fp = pairs(&out.stdout, "k")
        .into_iter()
        .find(|(_, w, _)| *w == "fp")
        .map(|(probe, _, _)| probe.to_string())
        .unwrap_or_else(|| panic!("no fp event in {}", out.stdout));
    let prog = format!(r#"{fp} {{ printf("%s\n", args.arg0); }}"#);
    let out = replay(&rec.file, &["-q", "-e", &prog]);
    assert_eq!(out.stdout, "step\n\n\n");
}
