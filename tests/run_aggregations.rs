//! Aggregations, map printing, output formats and process options, run for real against the
//! `tests/targets/trigger.c` target. Each expected output is what bpftrace 0.17 printed for
//! the same script on the same target (minus its "Attaching N probes..." line).
//!
//! bpftrace 0.17 behaviours these goldens encode:
//! - maps print in name order after "\n\n"; keyed entries sort by value ascending;
//! - every `hist`/`lhist` is followed by an empty line (0.17 left one after `avg` and
//!   `stats` maps too: 0.26 does not, and the goldens follow 0.26); buckets are `[lo, hi)`
//!   with the
//!   count right-aligned in a 14-wide column after a 16-wide label column, then a 52-wide
//!   `|@@@...|` bar; `stats` prints its integer average (see below for its form);
//! - `print(@m, top, div)` keeps the `top` largest entries and divides values by `div`;
//! - `-f json` writes one object per line: `{"type": "map", "data": {"@b": {"k": 2}}}`,
//!   tuple keys joined with a comma (`"1,y"`), `hist` buckets as `{"min", "max", "count"}`
//!   (the last lhist bucket has no `max`), `stats` as `{"count", "average", "total"}` and
//!   `avg` as a `stats` message with a plain number.
//! - Where the current release differs, the goldens follow it: a `bool` (a comparison used as
//!   a key) prints `true`/`false`, where 0.17 printed 1/0; a histogram's header is `@h:`
//!   (0.17 left a space after the colon); `stats` prints `{ .count = N, .average = A, .total =
//!   T }` (0.17: `count N, average A, total T`).
//!
//! Every traced script filters on the target's pid (`$1`, `cpid` or `-p`): other tracers
//! and processes may be running on this machine. Ties between equal values are avoided
//! because bpftrace's order between them is not defined.

mod common;

use common::{Target, TempDir, Tracer, build_target, run_sonde, skip_unless_root, trace_target};
use std::time::Duration;

/// Builds the trigger target and starts it waiting for its go line.
fn waiting_target(dir: &TempDir, args: &[&str]) -> (String, Target) {
    let bin = build_target(dir, "trigger");
    let mut full = vec!["wait"];
    full.extend_from_slice(args);
    let target = Target::spawn(&bin, &full);
    (bin.to_str().unwrap().to_string(), target)
}

#[test]
fn scalar_aggregations_on_a_tracepoint() {
    if skip_unless_root("scalar_aggregations_on_a_tracepoint") {
        return;
    }
    let dir = TempDir::new("aggs");
    let (_, mut target) = waiting_target(&dir, &["7"]);
    let prog = "tracepoint:syscalls:sys_enter_getppid /pid == $1/ { @c = count(); @s = sum(5); @a = avg(4); @mn = min(3); @mx = max(9); @st = stats(2); @h = hist(1000); @l = lhist(7, 0, 10, 2); }";
    let pid = target.pid();
    let out = trace_target(&["-e", prog, &pid], &mut target);
    let bar = "@".repeat(52);
    // No empty line after `@a` (avg) and `@st` (stats): bpftrace 0.26 (0.17 printed one).
    let expected = format!(
        "\n\n@a: 4\n@c: 7\n@h:\n[512, 1K)              7 |{bar}|\n\n@l:\n[6, 8)                 7 |{bar}|\n\n@mn: 3\n@mx: 9\n@s: 35\n@st: {{ .count = 7, .average = 2, .total = 14 }}\n"
    );
    assert_eq!(out.ok_stdout(), expected);
    assert!(
        out.stderr.contains("Attached 1 probe"),
        "stderr: {}",
        out.stderr
    );
}

/// The uprobe fires for target_work(0..20): a spread of values for the histograms.
#[test]
fn histograms_stats_and_keyed_maps_on_a_uprobe() {
    if skip_unless_root("histograms_stats_and_keyed_maps_on_a_uprobe") {
        return;
    }
    let dir = TempDir::new("hist");
    let (bin, mut target) = waiting_target(&dir, &["20"]);
    let prog = format!(
        "uprobe:{bin}:target_work /pid == $1/ {{ @h = hist(arg0); @l = lhist(arg0, 0, 10, 2); @st = stats(arg0); @[arg0 < 5] = count(); @t[arg0 % 2, comm] = sum(arg0); @z = avg(arg0); @mn = min(arg0); @mx = max(arg0); }} END {{ printf(\"bye\\n\"); }}"
    );
    let pid = target.pid();
    let out = trace_target(&["-e", &prog, &pid], &mut target);
    // No empty line after `@st` (stats) and `@z` (avg): bpftrace 0.26 (0.17 printed one).
    let expected = "bye


@[true]: 5
@[false]: 15
@h:
[0]                    1 |@@@@@@                                              |
[1]                    1 |@@@@@@                                              |
[2, 4)                 2 |@@@@@@@@@@@@@                                       |
[4, 8)                 4 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |
[8, 16)                8 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|
[16, 32)               4 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |

@l:
[0, 2)                 2 |@@@@@@@@@@                                          |
[2, 4)                 2 |@@@@@@@@@@                                          |
[4, 6)                 2 |@@@@@@@@@@                                          |
[6, 8)                 2 |@@@@@@@@@@                                          |
[8, 10)                2 |@@@@@@@@@@                                          |
[10, ...)             10 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|

@mn: 0
@mx: 19
@st: { .count = 20, .average = 9, .total = 190 }
@t[0, trigger]: 90
@t[1, trigger]: 100
@z: 9
";
    assert_eq!(out.ok_stdout(), expected);
}

#[test]
fn per_key_maps_comm_and_pid_comm() {
    if skip_unless_root("per_key_maps_comm_and_pid_comm") {
        return;
    }
    let dir = TempDir::new("keys");
    let (_, mut target) = waiting_target(&dir, &["3"]);
    let prog = "tracepoint:syscalls:sys_enter_getppid /pid == $1/ { @[comm] = count(); @pc[pid, comm] = count(); @same[pid == $1] = count(); }";
    let pid = target.pid();
    let out = trace_target(&["-e", prog, &pid], &mut target);
    assert_eq!(
        out.ok_stdout(),
        format!("\n\n@[trigger]: 3\n@pc[{pid}, trigger]: 3\n@same[true]: 3\n")
    );
}

#[test]
fn print_with_top_and_divisor() {
    if skip_unless_root("print_with_top_and_divisor") {
        return;
    }
    let prog = r#"BEGIN { @m[1] = 10; @m[2] = 20; @m[3] = 30; @m[4] = 40; print(@m); printf("--\n"); print(@m, 2); printf("--\n"); print(@m, 3, 10); printf("--\n"); print(@m, 0, 10); printf("--\n"); exit(); }"#;
    let out = run_sonde(&["-e", prog]);
    assert_eq!(
        out.ok_stdout(),
        "@m[1]: 10\n@m[2]: 20\n@m[3]: 30\n@m[4]: 40\n--\n@m[3]: 30\n@m[4]: 40\n--\n@m[2]: 2\n@m[3]: 3\n@m[4]: 4\n--\n@m[1]: 1\n@m[2]: 2\n@m[3]: 3\n@m[4]: 4\n--\n\n\n@m[1]: 10\n@m[2]: 20\n@m[3]: 30\n@m[4]: 40\n"
    );
}

#[test]
fn print_scalars_and_aggregations() {
    if skip_unless_root("print_scalars_and_aggregations") {
        return;
    }
    let prog = r#"BEGIN { @c = count(); @s = sum(7); print(@c); print(@s); @h = hist(3); print(@h); print(5); print("str"); print((1, "a")); exit(); }"#;
    let bar = "@".repeat(52);
    let hist = format!("@h:\n[2, 4)                 1 |{bar}|\n\n");
    let expected = format!("@c: 1\n@s: 7\n{hist}5\nstr\n(1, a)\n\n\n@c: 1\n{hist}@s: 7\n");
    assert_eq!(run_sonde(&["-e", prog]).ok_stdout(), expected);
}

/// `delete` acts in the kernel at once; `clear` is carried out by the tracer, so the key
/// added afterwards is added in a later probe firing.
#[test]
fn delete_and_clear() {
    if skip_unless_root("delete_and_clear") {
        return;
    }
    let prog = r#"BEGIN { @m[1] = 10; @m[2] = 20; @m[3] = 30; delete(@m[2]); @k["a"] = 1; @k["c"] = 3; clear(@k); } interval:ms:100 { @t++; if (@t == 2) { @k["b"] = 2; } if (@t == 3) { exit(); } }"#;
    let out = run_sonde(&["-e", prog]);
    assert_eq!(
        out.ok_stdout(),
        "\n\n@k[b]: 2\n@m[1]: 10\n@m[3]: 30\n@t: 3\n"
    );
    assert!(
        out.stderr.contains("Attached 2 probes"),
        "stderr: {}",
        out.stderr
    );
}

/// JSON lines, compared without blank lines and without the attached_probes message. (The
/// values are bpftrace 0.17's; bucket lists are written without spaces between buckets, as
/// bpftrace 0.26 writes them.)
fn json_lines(stdout: &str) -> Vec<&str> {
    stdout
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.contains("\"attached_probes\""))
        .collect()
}

#[test]
fn json_output_of_printf_and_every_map_kind() {
    if skip_unless_root("json_output_of_printf_and_every_map_kind") {
        return;
    }
    let prog = r#"BEGIN { printf("hi %d\n", 3); @a = 1; @b["k"] = 2; @c[1, "y"] = 3; @h = hist(5); @l = lhist(5, 0, 10, 5); @s = stats(10); @v = avg(4); @n = count(); exit(); }"#;
    let out = run_sonde(&["-f", "json", "-e", prog]);
    assert_eq!(
        json_lines(out.ok_stdout()),
        vec![
            r#"{"type": "printf", "data": "hi 3\n"}"#,
            r#"{"type": "map", "data": {"@a": 1}}"#,
            r#"{"type": "map", "data": {"@b": {"k": 2}}}"#,
            r#"{"type": "map", "data": {"@c": {"1,y": 3}}}"#,
            r#"{"type": "hist", "data": {"@h": [{"min": 4, "max": 7, "count": 1}]}}"#,
            r#"{"type": "hist", "data": {"@l": [{"min": 5, "max": 9, "count": 1}]}}"#,
            r#"{"type": "map", "data": {"@n": 1}}"#,
            r#"{"type": "stats", "data": {"@s": {"count": 1, "average": 10, "total": 10}}}"#,
            r#"{"type": "stats", "data": {"@v": 4}}"#,
        ]
    );
}

#[test]
fn json_output_of_traced_histograms() {
    if skip_unless_root("json_output_of_traced_histograms") {
        return;
    }
    let dir = TempDir::new("json");
    let (bin, mut target) = waiting_target(&dir, &["20"]);
    let prog = format!(
        "uprobe:{bin}:target_work /pid == $1/ {{ @h = hist(arg0); @l = lhist(arg0, 0, 10, 5); @st = stats(arg0); @[arg0 % 2, comm] = sum(arg0); }}"
    );
    let pid = target.pid();
    let out = trace_target(&["-f", "json", "-e", &prog, &pid], &mut target);
    assert_eq!(
        json_lines(out.ok_stdout()),
        vec![
            r#"{"type": "map", "data": {"@": {"0,trigger": 90, "1,trigger": 100}}}"#,
            r#"{"type": "hist", "data": {"@h": [{"min": 0, "max": 0, "count": 1},{"min": 1, "max": 1, "count": 1},{"min": 2, "max": 3, "count": 2},{"min": 4, "max": 7, "count": 4},{"min": 8, "max": 15, "count": 8},{"min": 16, "max": 31, "count": 4}]}}"#,
            r#"{"type": "hist", "data": {"@l": [{"min": 0, "max": 4, "count": 5},{"min": 5, "max": 9, "count": 5},{"min": 10, "count": 10}]}}"#,
            r#"{"type": "stats", "data": {"@st": {"count": 20, "average": 9, "total": 190}}}"#,
        ]
    );
}

#[test]
fn interval_fires_and_exits() {
    if skip_unless_root("interval_fires_and_exits") {
        return;
    }
    let out = run_sonde(&[
        "-e",
        r#"interval:ms:100 { @n++; if (@n == 3) { printf("three\n"); exit(); } }"#,
    ]);
    assert_eq!(out.ok_stdout(), "three\n\n\n@n: 3\n");
}

#[test]
fn command_child_is_traced_and_ends_the_run() {
    if skip_unless_root("command_child_is_traced_and_ends_the_run") {
        return;
    }
    let dir = TempDir::new("cmd");
    let bin = build_target(&dir, "trigger");
    let cmd = format!("{} now 4", bin.display());
    let prog = r#"tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @ = count(); } END { printf("child done\n"); }"#;
    let out = run_sonde(&["-c", &cmd, "-e", prog]);
    assert_eq!(out.ok_stdout(), "child done\n\n\n@: 4\n");
}

#[test]
fn pid_option_attaches_uprobes_to_that_process() {
    if skip_unless_root("pid_option_attaches_uprobes_to_that_process") {
        return;
    }
    let dir = TempDir::new("pid");
    let (bin, mut target) = waiting_target(&dir, &["5"]);
    let prog = format!("uprobe:{bin}:target_work {{ @s = sum(arg0); }}");
    let pid = target.pid();
    let out = trace_target(&["-p", &pid, "-e", &prog], &mut target);
    assert_eq!(out.ok_stdout(), "\n\n@s: 10\n");
}

#[test]
fn sigint_runs_end_and_prints_maps() {
    if skip_unless_root("sigint_runs_end_and_prints_maps") {
        return;
    }
    let dir = TempDir::new("sigint");
    let (_, mut target) = waiting_target(&dir, &["6"]);
    let prog = r#"tracepoint:syscalls:sys_enter_getppid /pid == $1/ { @calls = count(); } END { printf("end\n"); }"#;
    let pid = target.pid();
    let mut tracer = Tracer::start(&["-e", prog, &pid]);
    tracer.wait_attached(common::ATTACH_TIMEOUT);
    common::settle();
    target.go();
    assert_eq!(target.wait(Duration::from_secs(10)), Some(0));
    std::thread::sleep(Duration::from_millis(300));
    assert!(tracer.running(), "sonde exited before SIGINT");
    tracer.interrupt();
    let out = tracer.finish(Duration::from_secs(10));
    assert_eq!(out.ok_stdout(), "end\n\n\n@calls: 6\n");
}

#[test]
fn printf_specifiers_widths_and_flags() {
    if skip_unless_root("printf_specifiers_widths_and_flags") {
        return;
    }
    let prog = r#"BEGIN { printf("%-10s|%10s|\n", "ab", "cd"); printf("%5d|%-5d|%05d\n", 42, 42, 42); printf("%x %X %o %c\n", 3054, 3054, 8, 65); printf("%lu %lld %ld %llu\n", 123456789012, -123456789012, -1, 18446744073709551615); printf("%p\n", 0x1234); printf("%s|%5s|%-5s|\n", "x", "y", "z"); printf("%u\n", -1); printf("%8x|%-8x|%08x\n", 255, 255, 255); exit(); }"#;
    let out = run_sonde(&["-e", prog]);
    assert_eq!(
        out.ok_stdout(),
        "ab        |        cd|\n   42|42   |00042\nbee BEE 10 A\n123456789012 -123456789012 -1 18446744073709551615\n0x1234\nx|    y|z    |\n4294967295\n      ff|ff      |000000ff\n\n\n"
    );
}

/// `%%` is a literal percent sign. bpftrace 0.17 printed `100% 5%%` for this script (its
/// `%%` right after a conversion was kept doubled); C and newer bpftrace print `%`.
#[test]
fn printf_percent_escape() {
    if skip_unless_root("printf_percent_escape") {
        return;
    }
    let out = run_sonde(&["-e", r#"BEGIN { printf("100%% %d%%\n", 5); exit(); }"#]);
    assert_eq!(out.ok_stdout(), "100% 5%\n\n\n");
}

#[test]
fn openat_filename_and_comm() {
    if skip_unless_root("openat_filename_and_comm") {
        return;
    }
    let dir = TempDir::new("openat");
    let known = dir.path().join("known.txt");
    std::fs::write(&known, "hi\n").unwrap();
    let known = known.to_str().unwrap().to_string();
    let (_, mut target) = waiting_target(&dir, &["3", &known]);
    let prog = r#"tracepoint:syscalls:sys_enter_openat /pid == $1/ { printf("%s %s\n", comm, str(args->filename)); }"#;
    let pid = target.pid();
    let out = trace_target(&["-e", prog, &pid], &mut target);
    assert_eq!(out.ok_stdout(), format!("trigger {known}\n\n\n"));
}

/// `filename` of sched_process_exec is a `__data_loc char[]` field.
#[test]
fn data_loc_string_of_sched_process_exec() {
    if skip_unless_root("data_loc_string_of_sched_process_exec") {
        return;
    }
    let dir = TempDir::new("exec");
    let bin = build_target(&dir, "trigger");
    let mut target = Target::spawn(&bin, &["exec", "/bin/true"]);
    let prog = r#"tracepoint:sched:sched_process_exec /pid == $1/ { printf("%s %s\n", str(args->filename), comm); }"#;
    let pid = target.pid();
    let out = trace_target(&["-e", prog, &pid], &mut target);
    assert_eq!(out.ok_stdout(), "/bin/true true\n\n\n");
}

/// A string read by `str()` as the last element of a tuple key (it reads one byte beyond its
/// `max_strlen` to mark a cut string) stays inside the key's buffer: the verifier refused
/// `@[pid, str(args.filename)]` (`value_size=72 off=8 size=65`).
#[test]
fn str_as_the_last_element_of_a_key() {
    if skip_unless_root("str_as_the_last_element_of_a_key") {
        return;
    }
    let out = run_sonde(&[
        "-c",
        "cat /etc/hostname",
        "-e",
        "tracepoint:syscalls:sys_enter_openat /pid == cpid/ { @[(uint64)7, str(args.filename)] = count(); }",
    ]);
    assert!(
        out.ok_stdout().contains("@[7, /etc/hostname]: 1\n"),
        "{}",
        out.stdout
    );
}
