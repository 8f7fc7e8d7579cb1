//! Limits are reported, never silent: a full map and events lost in the ring buffer.
//! Traced scripts filter on the `-c` child's pid (other tracers may run on this machine).

mod common;

use common::{TempDir, build_target, is_root, run_sonde_timeout, skip_unless_root};
use std::time::Duration;

/// Updates beyond a map's 4096 entries are counted in the kernel and reported at exit, and
/// the map holds exactly its capacity.
#[test]
fn map_full_is_reported_with_the_number_of_failed_updates() {
    if skip_unless_root("map_full_is_reported_with_the_number_of_failed_updates") {
        return;
    }
    let dir = TempDir::new("mapfull");
    let bin = build_target(&dir, "burst");
    let cmd = format!("{} 5000", bin.display());
    // Each event has its own timestamp, so 5000 events want 5000 keys.
    let prog = "tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @[nsecs] = count(); }";
    let out = run_sonde_timeout(&["-q", "-c", &cmd, "-e", prog], Duration::from_secs(30));
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let entries = out.stdout.lines().filter(|l| l.starts_with("@[")).count();
    assert_eq!(entries, 4096);
    // Said as they happen (while the run lasts a second or more) and at exit: in all, 904.
    let warning = " map updates failed because a map was full (max 4096 entries; raise config max_map_keys, or declare the map larger: `let @m = hash(N);`)";
    let failed: u64 = out
        .stderr
        .lines()
        .filter_map(|l| {
            l.strip_prefix("WARNING: ")?
                .strip_suffix(warning)?
                .parse::<u64>()
                .ok()
        })
        .sum();
    assert_eq!(failed, 904, "stderr: {}", out.stderr);
    // The place's first 10 failures are warned about, then a line says the rest are not.
    let warned = out.stderr.matches("WARNING: Map full").count();
    assert_eq!(warned, 10, "stderr: {}", out.stderr);
    let place = format!("stdin:1:{}-", prog.find("@[nsecs]").unwrap() + 1);
    assert_eq!(
        out.stderr
            .matches(&format!("WARNING: more map updates failed at {place}"))
            .count(),
        1,
        "stderr: {}",
        out.stderr
    );
}

/// bpftrace's message for a full map.
const MAP_FULL: &str = "Map full; can't update element. Try increasing max_map_keys config or manually setting the max entries in a map declaration e.g. `let @a = hash(5000)`";

/// The engines a `begin` script runs in here: the kernel's when root, the userspace one
/// always.
fn engines() -> &'static [&'static str] {
    if is_root() { &["bpf", "jit"] } else { &["jit"] }
}

/// bpftrace 0.27's tests/runtime/map: an update a full map refuses warns with its place in
/// the script, bpftrace's text and the source line marked; updating a present key does not
/// warn, nor does an LRU map (it evicts); the element that fitted is kept.
/// `--no-warnings` silences the warning but not the count of failed updates.
#[test]
fn a_full_map_warns_at_the_update_it_refused() {
    for engine in engines() {
        let run = |prog: &str| {
            run_sonde_timeout(
                &["-q", "--engine", engine, "-e", prog],
                Duration::from_secs(20),
            )
        };
        let prog = "let @a = hash(1); begin { @a[1] = 1; @a[2] = 2;  }";
        let out = run(prog);
        assert_eq!(out.ok_stdout().trim(), "@a[1]: 1", "{engine}");
        let at = prog.find("@a[2] = 2").unwrap();
        let want = format!(
            "stdin:1:{}-{}: WARNING: {MAP_FULL}\nAdditional Info - helper: map_update_elem, retcode: -7\n{prog}\n{}{}\n",
            at + 1,
            at + 10,
            " ".repeat(at),
            "~".repeat(9)
        );
        assert!(out.stderr.contains(&want), "{engine}: {}", out.stderr);
        assert_eq!(
            out.stderr.matches("WARNING: Map full").count(),
            1,
            "{}",
            out.stderr
        );
        assert!(
            out.stderr
                .contains("WARNING: 1 map updates failed because a map was full"),
            "{engine}: {}",
            out.stderr
        );

        // `--no-warnings` silences the warning, not the count.
        let quiet = run_sonde_timeout(
            &["-q", "--no-warnings", "--engine", engine, "-e", prog],
            Duration::from_secs(20),
        );
        assert_eq!(quiet.ok_stdout().trim(), "@a[1]: 1", "{engine}");
        assert!(
            !quiet.stderr.contains("WARNING: Map full"),
            "{}",
            quiet.stderr
        );
        assert!(
            quiet.stderr.contains("1 map updates failed"),
            "{}",
            quiet.stderr
        );

        let out = run("let @a = percpuhash(1); begin { @a[1] = count(); @a[2] = count();  }");
        assert_eq!(out.ok_stdout().trim(), "@a[1]: 1", "{engine}");
        assert_eq!(out.stderr.matches(MAP_FULL).count(), 1, "{}", out.stderr);

        for (prog, kept) in [
            (
                "let @a = hash(1); begin { @a[0] = 0; @a[0] = 1;  }",
                "@a[0]: 1",
            ),
            ("let @a = lruhash(1); begin { @a[1] = 1;  }", "@a[1]: 1"),
            (
                "let @a = percpulruhash(1); begin { @a[1] = count(); @a[2] = count();  }",
                "@a[2]: 1",
            ),
        ] {
            let out = run(prog);
            assert_eq!(out.ok_stdout().trim(), kept, "{engine}: {prog}");
            assert!(
                !out.stderr.contains("Map full") && !out.stderr.contains("map was full"),
                "{engine}: {prog}: {}",
                out.stderr
            );
        }
    }
}

/// Each place prints its first 10 map-full warnings, then one line saying the rest are not
/// shown; the count has every failure, in text and in JSON, whose `helper_error` messages
/// name the place as bpftrace's do.
#[test]
fn map_full_warnings_are_bounded_per_place_and_counted() {
    let prog = "let @a = hash(2); begin { @a[0] = 0; @a[1] = 1; $i = 2; while ($i < 30) { @a[$i] = $i; $i++; } @a[$i + 100] = 1; }";
    let in_loop = prog.find("@a[$i] = $i").unwrap() + 1;
    let after = prog.find("@a[$i + 100]").unwrap() + 1;
    for engine in engines() {
        let text = run_sonde_timeout(
            &["-q", "--engine", engine, "-e", prog],
            Duration::from_secs(20),
        );
        assert_eq!(text.ok_stdout().trim(), "@a[0]: 0\n@a[1]: 1", "{engine}");
        let warned_at = |col: usize| {
            let place = format!("stdin:1:{col}-");
            text.stderr
                .lines()
                .filter(|l| l.starts_with(&place) && l.ends_with(MAP_FULL))
                .count()
        };
        assert_eq!(warned_at(in_loop), 10, "{engine}: {}", text.stderr);
        assert_eq!(warned_at(after), 1, "{engine}: {}", text.stderr);
        assert!(
            text.stderr.contains(&format!(
                "WARNING: more map updates failed at stdin:1:{in_loop}-"
            )),
            "{engine}: {}",
            text.stderr
        );
        assert!(
            text.stderr
                .contains("WARNING: 29 map updates failed because a map was full"),
            "{engine}: {}",
            text.stderr
        );

        let json = run_sonde_timeout(
            &["-q", "-f", "json", "--engine", engine, "-e", prog],
            Duration::from_secs(20),
        );
        let out = json.ok_stdout();
        let record = |col: usize| {
            format!(
                r#"{{"type": "helper_error", "msg": "Argument list too long", "helper": "map_update_elem", "retcode": -7, "filename": "stdin", "line": 1, "col": {col}}}"#
            )
        };
        let count = |col: usize| out.lines().filter(|l| *l == record(col)).count();
        assert_eq!((count(in_loop), count(after)), (10, 1), "{engine}: {out}");
        assert!(
            out.contains(r#"{"type": "map_full", "data": {"updates": 29, "max_entries": 2}}"#),
            "{engine}: {out}"
        );
    }
}

/// Every printf event is either printed or counted as lost: printed + lost = fired.
#[test]
fn lost_events_are_counted_exactly() {
    if skip_unless_root("lost_events_are_counted_exactly") {
        return;
    }
    let dir = TempDir::new("lost");
    let bin = build_target(&dir, "burst");
    let n = 200_000;
    let cmd = format!("{} {n}", bin.display());
    let prog = "tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { printf(\"%s %s %s %s\\n\", comm, comm, comm, comm); }";
    let out = run_sonde_timeout(&["-q", "-c", &cmd, "-e", prog], Duration::from_secs(60));
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let printed = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("burst burst burst burst"))
        .count();
    // Lost events are reported as they happen: several lines, each an increase.
    let lost: usize = out
        .stderr
        .lines()
        .filter_map(|l| {
            l.strip_prefix("Lost ")?
                .strip_suffix(" events")?
                .parse::<usize>()
                .ok()
        })
        .sum();
    assert_eq!(
        printed + lost,
        n,
        "printed {printed}, lost {lost}; stderr: {}",
        out.stderr
    );
}

/// `config = { max_map_keys = N }` sizes the maps: 5000 keys fit in 10000.
#[test]
fn max_map_keys_config_raises_the_limit() {
    if skip_unless_root("max_map_keys_config_raises_the_limit") {
        return;
    }
    let dir = TempDir::new("mapkeys");
    let bin = build_target(&dir, "burst");
    let cmd = format!("{} 5000", bin.display());
    let prog = "config = { max_map_keys = 10000 } tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @[nsecs] = count(); }";
    let out = run_sonde_timeout(&["-q", "-c", &cmd, "-e", prog], Duration::from_secs(30));
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(
        out.stdout.lines().filter(|l| l.starts_with("@[")).count(),
        5000
    );
    assert!(
        !out.stderr.contains("map was full"),
        "stderr: {}",
        out.stderr
    );
}

/// Events lost during the run are reported while it runs, not only at exit: with `-f json`
/// as bpftrace 0.26's `{"type": "lost_events", "count": N, "data": {"events": N}}` records,
/// before the output
/// that follows the loss; every event is printed or counted once.
#[test]
fn lost_events_are_reported_as_they_happen() {
    if skip_unless_root("lost_events_are_reported_as_they_happen") {
        return;
    }
    let n = 100_000;
    let prog = format!(
        "BEGIN {{ for ($i : 0..{n}) {{ printf(\"%s\\n\", \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"); }} }} interval:ms:300 {{ printf(\"tick\\n\"); }} interval:ms:700 {{ exit(); }}"
    );
    let out = run_sonde_timeout(&["-q", "-f", "json", "-e", &prog], Duration::from_secs(30));
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    let printed = lines.iter().filter(|l| l.contains("xxxxxxxx")).count();
    let tick = lines
        .iter()
        .position(|l| l.contains("tick"))
        .expect("the interval probe printed");
    let mut lost = 0;
    for (i, l) in lines.iter().enumerate() {
        if let Some(rest) = l.strip_prefix(r#"{"type": "lost_events", "count": "#) {
            assert!(i < tick, "the loss is reported before later output: {l}");
            let (count, data) = rest.split_once(", ").expect("count, data");
            let count = count.parse::<usize>().expect("a count");
            assert_eq!(data, format!(r#""data": {{"events": {count}}}}}"#), "{l}");
            lost += count;
        }
    }
    assert!(lost > 0, "events were lost; stdout: {}", out.stdout.len());
    assert_eq!(printed + lost, n, "printed {printed}, lost {lost}");
    assert!(!out.stderr.contains("Lost "), "stderr: {}", out.stderr);
}

/// The stack map holds 4096 buckets: of 8192 distinct user stacks, those whose bucket holds
/// another stack are not stored. They are counted and reported as they happen, in text and
/// in JSON, and every call is still counted (under an empty stack).
#[test]
fn stacks_the_stack_map_cannot_hold_are_counted() {
    if skip_unless_root("stacks_the_stack_map_cannot_hold_are_counted") {
        return;
    }
    let dir = TempDir::new("many-stacks");
    let bin = common::compile_target(
        &dir,
        "many_stacks",
        &[
            "-O1",
            "-fno-omit-frame-pointer",
            "-fno-optimize-sibling-calls",
        ],
    );
    let bin = bin.to_str().unwrap();
    let script = format!("uprobe:{bin}:sonde_leaf {{ @[ustack] = count(); }}");
    let text = run_sonde_timeout(&["-c", bin, "-e", &script], Duration::from_secs(60));
    let dropped: u64 = text
        .stderr
        .lines()
        .filter_map(|l| l.strip_prefix("WARNING: "))
        .filter_map(|l| l.split_once(" stacks were not stored"))
        .filter_map(|(n, _)| n.parse::<u64>().ok())
        .sum();
    assert!(dropped > 0, "{}", text.stderr);
    // The counts of all stacks, the empty one included, add up to every call.
    let counted: u64 = text
        .ok_stdout()
        .lines()
        .filter_map(|l| l.rsplit_once("]: "))
        .filter_map(|(_, n)| n.trim().parse::<u64>().ok())
        .sum();
    assert_eq!(counted, 8192, "{}", text.stderr);
    let json = run_sonde_timeout(
        &["-f", "json", "-c", bin, "-e", &script],
        Duration::from_secs(60),
    );
    let dropped: u64 = json
        .ok_stdout()
        .lines()
        .filter_map(|l| l.strip_prefix(r#"{"type": "stacks_dropped", "data": {"stacks": "#))
        .filter_map(|r| r.trim_end_matches("}}").parse::<u64>().ok())
        .sum();
    assert!(dropped > 0, "{}", json.stdout);
}

/// `let @m = lruhash(N)` makes room by evicting, `let @m = hash(N)` refuses (counted) past N
/// elements: the declared size replaces `max_map_keys` for that map.
#[test]
fn declared_maps_have_their_kind_and_size() {
    if skip_unless_root("declared_maps_have_their_kind_and_size") {
        return;
    }
    let fill = "BEGIN { $i = 0; while $i < 10 { @a[$i] = $i; $i++; } printf(\"%d\\n\", len(@a)); exit(); }";
    let lru = run_sonde_timeout(
        &["-e", &format!("let @a = lruhash(3); {fill}")],
        Duration::from_secs(20),
    );
    // The kernel evicts approximately the least recently used, maybe more than one at once:
    // at most 3 remain, the newest among them, and no update failed.
    let out = lru.ok_stdout();
    let len: usize = out.lines().next().unwrap_or("").parse().unwrap_or(99);
    assert!((1..=3).contains(&len), "{out}");
    assert!(out.ends_with("@a[9]: 9\n"), "{out}");
    assert!(!lru.stderr.contains("map was full"), "{}", lru.stderr);
    let hash = run_sonde_timeout(
        &["-e", &format!("let @a = hash(3); {fill}")],
        Duration::from_secs(20),
    );
    assert_eq!(hash.ok_stdout(), "3\n\n\n@a[0]: 0\n@a[1]: 1\n@a[2]: 2\n");
    assert!(
        hash.stderr
            .contains("7 map updates failed because a map was full"),
        "{}",
        hash.stderr
    );
    let bad = run_sonde_timeout(
        &["-e", "let @a = hashh(3); BEGIN { @a[1] = 1; }"],
        Duration::from_secs(20),
    );
    assert_eq!(bad.code, Some(1));
    assert!(
        bad.stderr.contains("did you mean `hash`?"),
        "{}",
        bad.stderr
    );
}

/// A probe too long for 16-bit jump offsets loads and runs (issue 16): 1,000 statements of
/// `@mK[i] = count(); if (pid ...) { @sJ = sum(i); }` inside one `if`, whose branch over them
/// (~47,000 instructions) becomes a negated short branch over a `gotol`.
#[test]
fn a_probe_beyond_16_bit_jumps_loads_and_runs() {
    if skip_unless_root("a_probe_beyond_16_bit_jumps_loads_and_runs") {
        return;
    }
    let mut prog = String::from("BEGIN {\n  if (pid < 100000000) {\n");
    for k in 0..1000 {
        // Even statements take their `if`, odd ones do not (the boot clock is past 1 ms).
        // (`nsecs` is read again by each: comparisons of one remembered `pid` against a
        // thousand bounds would make the verifier follow each combination of outcomes.)
        let cond = if k % 2 == 0 { ">" } else { "<" };
        prog += &format!(
            "    @m{}[{k}] = count(); if (nsecs {cond} {}) {{ @s{} = sum({k}); }}\n",
            k % 30,
            1_000_000 + k,
            k % 30
        );
    }
    prog += "  } else {\n    @never = count();\n  }\n  exit();\n}\n";
    let dump = run_sonde_timeout(&["--dump", "bpf", "-e", &prog], Duration::from_secs(60));
    assert_eq!(dump.code, Some(0), "stderr: {}", dump.stderr);
    let gotols = dump.stdout.matches(") gotol pc+").count();
    assert!(gotols >= 1, "expected a long jump, found {gotols}");
    let out = run_sonde_timeout(&["-q", "-e", &prog], Duration::from_secs(120));
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    for j in 0..30 {
        let want: u32 = (0..1000).filter(|k| k % 30 == j && k % 2 == 0).sum();
        let line = match want {
            0 => None,
            w => Some(format!("@s{j}: {w}")),
        };
        match line {
            Some(l) => assert!(
                out.stdout.lines().any(|x| x == l),
                "no `{l}` in\n{}",
                out.stdout
            ),
            None => assert!(!out.stdout.contains(&format!("@s{j}:")), "{}", out.stdout),
        }
    }
    assert_eq!(
        out.stdout.lines().filter(|l| l.starts_with("@m")).count(),
        1000
    );
    assert!(!out.stdout.contains("@never"), "{}", out.stdout);
}

/// A probe the kernel skips because another BPF program was running on its CPU (here: the
/// signal sent from a tracepoint's program fires `signal_generate` inside it) is counted
/// and reported, in text and in JSON: nothing is lost silently.
#[test]
fn probes_the_kernel_skips_are_reported() {
    if skip_unless_root("probes_the_kernel_skips_are_reported") {
        return;
    }
    let prog = "tracepoint:sched:sched_process_exec /pid == cpid/ { signal(\"SIGCHLD\"); } \
                tracepoint:signal:signal_generate /args.sig == 17 && pid == cpid/ { @seen = count(); }";
    let out = run_sonde_timeout(
        &["--unsafe", "-c", "/bin/true", "-e", prog],
        Duration::from_secs(30),
    );
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert!(
        out.stderr.contains("WARNING: 1 probe firing was skipped by the kernel (a BPF program was already running on that CPU): counts may be short"),
        "stderr: {}",
        out.stderr
    );
    let json = run_sonde_timeout(
        &["-f", "json", "--unsafe", "-c", "/bin/true", "-e", prog],
        Duration::from_secs(30),
    );
    assert!(
        json.stdout
            .contains(r#"{"type": "probes_skipped", "data": {"firings": 1}}"#),
        "{}",
        json.stdout
    );
}

/// An `input` probe that only aggregates runs on worker threads; a full map's warnings
/// reach the output from them too (each place's first 10, then the line saying they stop),
/// and every line is either counted in the map or a counted failed update.
#[test]
fn a_full_map_in_parallel_input_warns_and_counts_every_line() {
    let lines: String = (0..300_000).map(|i| format!("{i}\n")).collect();
    let prog = "let @a = percpuhash(3); input { @a[num(field(1)) % 7] = count(); }";
    let out = common::bytes::sonde_with_stdin(&["-q", "-e", prog], lines.as_bytes());
    let stdout = common::bytes::text(out.ok(prog));
    let counted: u64 = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("@a[")?.split_once("]: "))
        .filter_map(|(_, n)| n.parse::<u64>().ok())
        .sum();
    let failed: u64 = out
        .stderr
        .lines()
        .filter_map(|l| {
            l.strip_prefix("WARNING: ")?
                .split_once(" map updates failed")
        })
        .filter_map(|(n, _)| n.parse::<u64>().ok())
        .sum();
    assert!(failed > 0, "{}", out.stderr);
    assert_eq!(counted + failed, 300_000, "{stdout}\n{}", out.stderr);
    let place = format!("stdin:1:{}-", prog.find("@a[num").unwrap() + 1);
    let warned = out
        .stderr
        .lines()
        .filter(|l| l.starts_with(&place) && l.ends_with(MAP_FULL))
        .count();
    assert_eq!(warned, 10, "{}", out.stderr);
    assert!(
        out.stderr
            .contains(&format!("WARNING: more map updates failed at {place}")),
        "{}",
        out.stderr
    );
}
