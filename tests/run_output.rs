//! Output details of bpftrace 0.26.1 that differ from 0.17, in both engines (the kernel's
//! when root, the userspace one always), and in `sonde replay`:
//!
//! - no empty line after `avg` and `stats` maps, at exit or in `print(@m)` (0.17 left one):
//!   only a histogram (or time series) is followed by one, after each key's chart
//!   (`TextOutput::map` and `emit_map` in 0.26.1's `src/output/text.cpp`);
//! - the two newlines that end a text run are written even with `print_maps_on_exit = false`
//!   (`TextOutput::end()` runs before, and whatever, the maps print);
//! - empty maps print nothing at exit, in text and JSON, except an `avg`/`stats` map in JSON,
//!   whose value is an empty object (`Value::Stats` of an empty map, which `JsonOutput::map`
//!   does not skip);
//! - a string cut to its size ends with `str_trunc_trailer` (config block, or the
//!   `BPFTRACE_STR_TRUNC_TRAILER` environment variable, which wins; default `..`, empty
//!   allowed); a recording keeps it, so `sonde replay` prints the same, and a recording made
//!   before the trailer was recorded (format 1.0) replays with `..`.

mod common;

use common::{TempDir, run_command, run_sonde, skip_unless_root, sonde};
use std::process::Command;

/// The stdout of a successful `sonde -q --engine ENGINE extra... -e prog`.
fn run(engine: &str, extra: &[&str], prog: &str) -> String {
    let mut args = vec!["-q", "--engine", engine];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["-e", prog]);
    run_sonde(&args).ok_stdout().to_string()
}

/// Checks `prog` prints `want` in the userspace engine and, when root, in the kernel's.
fn both_engines(extra: &[&str], prog: &str, want: &str) {
    assert_eq!(run("jit", extra, prog), want, "jit: {prog}");
    if skip_unless_root("both_engines (bpf half)") {
        return;
    }
    assert_eq!(run("bpf", extra, prog), want, "bpf: {prog}");
}

#[test]
fn only_histograms_are_followed_by_an_empty_line() {
    let bar = "@".repeat(52);
    let stats = "@s: { .count = 1, .average = 3, .total = 3 }\n";
    let hist = format!("@h:\n[2, 4)                 1 |{bar}|\n\n");
    let prog = r#"BEGIN { @a = avg(5); @s = stats(3); @k[1] = avg(7); @c[1] = count(); @h = hist(2);
        print(@a); print(@s); print(@k); print(@h); print(@c); exit(); }"#;
    let printed = format!("@a: 5\n{stats}@k[1]: 7\n{hist}@c[1]: 1\n");
    let at_exit = format!("@a: 5\n@c[1]: 1\n{hist}@k[1]: 7\n{stats}");
    both_engines(&[], prog, &format!("{printed}\n\n{at_exit}"));
}

#[test]
fn the_closing_newlines_are_written_without_the_maps() {
    let prog = r#"config = { print_maps_on_exit = false } BEGIN { @a = 1; @s = stats(2); printf("x\n"); exit(); }"#;
    both_engines(&[], prog, "x\n\n\n");
    both_engines(
        &["-f", "json"],
        prog,
        "{\"type\": \"printf\", \"data\": \"x\\n\"}\n",
    );
}

#[test]
fn empty_maps_print_nothing_but_an_empty_stats_object_in_json() {
    let prog = r#"BEGIN { @a = avg(1); @s = stats(1); @k[1] = avg(2); @c = count(); @m[1] = 2;
        @h = hist(2); @l[1] = lhist(3, 0, 10, 1); @t = tseries(1, 1s, 5);
        clear(@a); clear(@s); clear(@k); clear(@c); clear(@m); clear(@h); clear(@l); clear(@t);
        exit(); }"#;
    both_engines(&[], prog, "\n\n");
    both_engines(
        &["-f", "json"],
        prog,
        "{\"type\": \"stats\", \"data\": {\"@a\": {}}}\n\
         {\"type\": \"stats\", \"data\": {\"@k\": {}}}\n\
         {\"type\": \"stats\", \"data\": {\"@s\": {}}}\n",
    );
}

/// bpftrace 0.26.1's `str_truncated_custom` runtime test, and the config key: a cut
/// `str()` in printf, `print` and map keys, in text and JSON.
#[test]
fn cut_strings_end_with_the_configured_trailer() {
    if skip_unless_root("cut_strings_end_with_the_configured_trailer") {
        return;
    }
    let prog = |config: &str| {
        format!(
            r#"config = {{ max_strlen = 8{config} }} tracepoint:syscalls:sys_enter_openat /pid == cpid && strncmp(str(args.filename), "/etc/hos", 8) == 0/ {{ printf("%s|\n", str(args.filename)); print(str(args.filename)); @[str(args.filename)] = count(); }}"#
        )
    };
    let run = |prog: &str, env: Option<&str>, json: bool| {
        let mut cmd = Command::new(sonde());
        cmd.args(["-q", "-e", prog, "-c", "/usr/bin/head -c 0 /etc/hostname"]);
        if json {
            cmd.args(["-f", "json"]);
        }
        cmd.env_remove("BPFTRACE_STR_TRUNC_TRAILER");
        if let Some(v) = env {
            cmd.env("BPFTRACE_STR_TRUNC_TRAILER", v);
        }
        let out = run_command(cmd, common::TIMEOUT);
        out.ok_stdout().to_string()
    };
    let custom = prog(r#"; str_trunc_trailer = "~""#);
    for (prog, env, trailer) in [
        (prog(""), None, ".."),
        (custom.clone(), None, "~"),
        (prog(r#"; str_trunc_trailer = """#), None, ""),
        (custom.clone(), Some("_xxx"), "_xxx"),
        (custom.clone(), Some(""), ""),
    ] {
        let out = run(&prog, env, false);
        let want = format!("/etc/hos{trailer}|\n/etc/hos{trailer}\n\n\n@[/etc/hos{trailer}]: 1\n");
        assert_eq!(out, want, "{env:?}");
    }
    let json = run(&custom, None, true);
    assert!(
        json.contains("{\"type\": \"printf\", \"data\": \"/etc/hos~|\\n\"}\n")
            && json.contains("{\"type\": \"value\", \"data\": \"/etc/hos~\"}\n")
            && json.ends_with("{\"type\": \"map\", \"data\": {\"@\": {\"/etc/hos~\": 1}}}\n"),
        "{json}"
    );
}

/// A recording keeps the trailer: the replay prints what the live run printed.
#[test]
fn a_recording_replays_with_its_trailer() {
    if skip_unless_root("a_recording_replays_with_its_trailer") {
        return;
    }
    let dir = TempDir::new("trailer-rec");
    let file = dir.path().join("t.rec");
    let prog = r#"config = { max_strlen = 8; str_trunc_trailer = " [cut]" } tracepoint:syscalls:sys_enter_openat /pid == cpid && strncmp(str(args.filename), "/etc/hos", 8) == 0/ { printf("%s|\n", str(args.filename)); @[str(args.filename)] = count(); }"#;
    let f = file.to_str().unwrap();
    let live = run_sonde(&[
        "record",
        "-o",
        f,
        "-q",
        "-e",
        prog,
        "-c",
        "/usr/bin/head -c 0 /etc/hostname",
    ]);
    let want = "/etc/hos [cut]|\n\n\n@[/etc/hos [cut]]: 1\n";
    assert_eq!(live.ok_stdout(), want);
    assert_eq!(run_sonde(&["replay", f, "-q"]).ok_stdout(), want);
}

/// `Type` encodings of the recording format: `int64` and `string[8]`.
const INT64: &[u8] = &[2, 64, 1];
const STR8: &[u8] = &[3, 8, 0, 0, 0];

fn put_bytes(b: &mut Vec<u8>, s: &[u8]) {
    b.extend_from_slice(&(s.len() as u32).to_le_bytes());
    b.extend_from_slice(s);
}

fn put_entry(b: &mut Vec<u8>, tag: u8, body: &[u8]) {
    b.push(tag);
    b.extend_from_slice(&(body.len() as u64).to_le_bytes());
    b.extend_from_slice(body);
}

/// A recording written by hand (format of `runtime/drivers/src/record/mod.rs`): one printf event
/// `"%d %s\n"` of an `int64` and a `string[8]` filled without a NUL (a cut string), in
/// format 1.0 (no trailer) or 1.1 with `trailer`.
fn recording(trailer: Option<&[u8]>) -> Vec<u8> {
    let mut h = Vec::new();
    put_bytes(&mut h, b"hand.bt");
    put_bytes(&mut h, b"// tests/run_output.rs\n");
    h.push(1); // print_maps_on_exit
    h.extend_from_slice(&1u32.to_le_bytes()); // one event
    h.push(0); // Printf
    put_bytes(&mut h, b"%d %s\n");
    h.extend_from_slice(&2u32.to_le_bytes());
    h.extend_from_slice(INT64);
    h.extend_from_slice(STR8);
    h.extend_from_slice(&0u32.to_le_bytes()); // maps
    if let Some(t) = trailer {
        put_bytes(&mut h, t);
    }
    let mut b = b"SONDEREC".to_vec();
    b.extend_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&u16::from(trailer.is_some()).to_le_bytes());
    b.extend_from_slice(&(h.len() as u64).to_le_bytes());
    b.extend_from_slice(&h);
    put_entry(&mut b, 1, &1u64.to_le_bytes()); // Attached
    let mut record = 0u64.to_le_bytes().to_vec();
    record.extend_from_slice(&7i64.to_le_bytes());
    record.extend_from_slice(b"abcdefgh");
    let mut body = 1000u64.to_le_bytes().to_vec();
    put_bytes(&mut body, &record);
    put_entry(&mut b, 2, &body); // Event
    put_entry(&mut b, 13, &[0]); // End
    b
}

/// Needs no root: the recorded trailer prints on replay (`..` for a 1.0 recording, which
/// printed it), and a replay script's own printing uses the script's trailer.
#[test]
fn replay_prints_the_recorded_trailer() {
    let dir = TempDir::new("trailer-hand");
    let old = dir.path().join("old.rec");
    let new = dir.path().join("new.rec");
    std::fs::write(&old, recording(None)).unwrap();
    std::fs::write(&new, recording(Some(b" [cut]"))).unwrap();
    let (old, new) = (old.to_str().unwrap(), new.to_str().unwrap());
    assert_eq!(
        run_sonde(&["replay", old, "-q"]).ok_stdout(),
        "7 abcdefgh..\n"
    );
    assert_eq!(
        run_sonde(&["replay", new, "-q"]).ok_stdout(),
        "7 abcdefgh [cut]\n"
    );
    let script =
        r#"config = { str_trunc_trailer = "~" } replay { printf("%s|%s\n", args.arg1, line); }"#;
    let out = run_sonde(&["replay", new, "-q", "-e", script]);
    assert_eq!(out.ok_stdout(), "abcdefgh~|7 abcdefgh [cut]\n\n\n");
    let mut cmd = Command::new(sonde());
    cmd.args(["replay", old, "-q", "-e", script]);
    cmd.env("BPFTRACE_STR_TRUNC_TRAILER", "");
    let out = run_command(cmd, common::TIMEOUT);
    assert_eq!(out.ok_stdout(), "abcdefgh|7 abcdefgh..\n\n\n");
}

/// `print(@x)` of a key-less integer, `count()` or `sum()` map nothing has set prints its
/// zero, as bpftrace 0.27 does (`@x: 0`); a map with keys or a histogram prints nothing.
#[test]
fn print_of_an_unset_scalar_prints_its_zero() {
    let prog = r#"BEGIN { if (0) { @x = 1; @c = count(); @s = sum(5); @k[1] = 2; @h = hist(3); }
        print(@x); print(@c); print(@s); print(@k); print(@h); exit(); }"#;
    both_engines(&[], prog, "@x: 0\n@c: 0\n@s: 0\n\n\n");
}
