//! `sonde tool memleak`: a test program (`tests/targets/leaks.c`) leaks blocks of known
//! sizes and counts from known functions (malloc, calloc, posix_memalign and realloc) among
//! blocks it frees; the tool must report exactly those, each with its function in its stack,
//! in bcc memleak's layout, and each flag must do what bcc's does. bcc's memleak (Python,
//! BCC's runtime compilation) does not run here and libbpf-tools 0.26 on Debian ships no
//! memleak: the layout is checked against bcc's source (tools/memleak.py) instead.

mod common;

use common::{
    ATTACH_TIMEOUT, Output, Target, TempDir, Tracer, compile_target, run_sonde_timeout, settle,
    skip_unless_root,
};
use std::path::PathBuf;
use std::time::Duration;

/// The tests of this file run one at a time: a uprobe program that fires while another
/// tracing program runs on the same CPU is skipped by the kernel (its recursion guard), so
/// tracers running side by side on malloc make each other's counts short.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// The leaks of `leaks.c`: (function, bytes, allocations), in the order bcc prints them
/// (ascending size).
const LEAKS: [(&str, u64, u64); 4] = [
    ("leak_realloc", 3000, 1),
    ("leak_aligned", 8192, 2),
    ("leak_malloc", 8638, 7),
    ("leak_calloc", 15000, 3),
];

fn build_leaks(dir: &TempDir) -> PathBuf {
    compile_target(dir, "leaks", &["-O0", "-g", "-fno-omit-frame-pointer"])
}

/// One stack of a report: `BYTES bytes in N allocations from stack` and its frames.
#[derive(Debug)]
struct Entry {
    bytes: u64,
    allocations: u64,
    frames: Vec<String>,
}

/// One report: its `addr = HEX size = N` lines (-a) and its stacks, in order.
#[derive(Debug, Default)]
struct Report {
    addrs: Vec<(String, u64)>,
    entries: Vec<Entry>,
}

impl Report {
    /// The entry whose innermost frame is in `function`.
    fn of(&self, function: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| {
            e.frames
                .first()
                .is_some_and(|f| frame_function(f) == Some(function))
        })
    }

    /// (function, bytes, allocations) of the entries from `leaks.c`'s leak functions.
    fn leaks(&self) -> Vec<(String, u64, u64)> {
        self.entries
            .iter()
            .filter_map(|e| {
                let f = frame_function(e.frames.first()?)?;
                f.starts_with("leak_")
                    .then(|| (f.to_string(), e.bytes, e.allocations))
            })
            .collect()
    }
}

/// The function of a frame `0x%016x\tfunc+0xOFF [object]` or `func+0xOFF [object]`.
fn frame_function(frame: &str) -> Option<&str> {
    let sym = frame.rsplit('\t').next()?;
    sym.split('+').next()
}

/// The reports of the tool's output, each after its `[HH:MM:SS] Top N stacks ...` line,
/// checking every line's layout on the way.
fn reports(stdout: &str, top: u32) -> Vec<Report> {
    let mut out: Vec<Report> = Vec::new();
    let header = format!("] Top {top} stacks with outstanding allocations:");
    for line in stdout.lines() {
        if line.starts_with('[') && line.ends_with(&header) {
            let time = &line[1..9];
            assert!(
                time.len() == 8 && time.chars().filter(|c| *c == ':').count() == 2,
                "{line}"
            );
            out.push(Report::default());
            continue;
        }
        let Some(r) = out.last_mut() else { continue };
        if let Some(rest) = line.strip_prefix("\taddr = ") {
            let (addr, size) = rest.split_once(" size = ").expect(line);
            assert!(u64::from_str_radix(addr, 16).is_ok(), "{line}");
            r.addrs.push((addr.to_string(), size.parse().expect(line)));
        } else if let Some(frame) = line.strip_prefix("\t\t") {
            let e = r.entries.last_mut().expect("a frame after its entry");
            e.frames.push(frame.to_string());
        } else if let Some(rest) = line.strip_prefix('\t') {
            let words: Vec<&str> = rest.split(' ').collect();
            assert_eq!(
                words[1..].join(" ").replace(words[3], "N"),
                "bytes in N allocations from stack",
                "{line}"
            );
            r.entries.push(Entry {
                bytes: words[0].parse().expect(line),
                allocations: words[3].parse().expect(line),
                frames: Vec::new(),
            });
        } else {
            panic!("unexpected line in a report: {line:?}\n{stdout}");
        }
    }
    out
}

/// Runs `sonde tool memleak ARGS -c "leaks now SECONDS"` and returns its output, checked to
/// have ended well.
fn memleak_command(dir: &TempDir, args: &[&str], seconds: u32) -> Output {
    let bin = build_leaks(dir);
    let cmd = format!("{} now {seconds}", bin.display());
    let mut all = vec!["tool", "memleak", "-c", &cmd];
    all.extend_from_slice(args);
    let out = run_sonde_timeout(&all, Duration::from_secs(60));
    assert!(!out.timed_out, "timed out: {}", out.stderr);
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    out
}

/// A frame with its address, as bcc's default report prints it.
fn assert_addressed(frame: &str) {
    let (addr, sym) = frame.split_once('\t').expect(frame);
    assert!(
        addr.len() == 18 && addr.starts_with("0x") && u64::from_str_radix(&addr[2..], 16).is_ok(),
        "{frame}"
    );
    assert!(sym.contains("+0x") && sym.ends_with(']'), "{frame}");
}

#[test]
fn memleak_finds_the_planted_leaks_with_their_stacks() {
    if skip_unless_root("memleak_finds_the_planted_leaks_with_their_stacks") {
        return;
    }
    let _serial = one_at_a_time();
    let dir = TempDir::new("memleak");
    let out = memleak_command(&dir, &["1"], 2);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(
        lines[0].starts_with("Executing '")
            && lines[0].ends_with(" now 2' and tracing the resulting process."),
        "{}",
        out.stdout
    );
    assert!(
        lines[1].starts_with("Attaching to pid ") && lines[1].ends_with(", Ctrl+C to quit."),
        "{}",
        out.stdout
    );
    let all = reports(&out.stdout, 10);
    // Interval reports every second while the program sleeps, then the last one at its exit.
    assert!(all.len() >= 2, "{}", out.stdout);
    let last = all.last().unwrap();
    let expected: Vec<(String, u64, u64)> = LEAKS
        .iter()
        .map(|(f, b, n)| (f.to_string(), *b, *n))
        .collect();
    assert_eq!(last.leaks(), expected, "{}", out.stdout);
    // Largest last; each stack from its leak function through main.
    let sizes: Vec<u64> = last.entries.iter().map(|e| e.bytes).collect();
    assert!(sizes.windows(2).all(|w| w[0] <= w[1]), "{sizes:?}");
    for (f, _, _) in LEAKS {
        let e = last.of(f).unwrap();
        assert!(e.frames[0].ends_with(" [leaks]"), "{:?}", e.frames);
        assert_eq!(frame_function(&e.frames[1]), Some("main"), "{:?}", e.frames);
        e.frames.iter().for_each(|fr| assert_addressed(fr));
    }
    assert!(last.addrs.is_empty());
    // An interval report taken while the program slept shows them too (older than 500 ms).
    assert!(
        all[..all.len() - 1].iter().any(|r| r.leaks() == expected),
        "{}",
        out.stdout
    );
}

#[test]
fn memleak_of_a_running_process_and_its_report_count() {
    if skip_unless_root("memleak_of_a_running_process_and_its_report_count") {
        return;
    }
    let _serial = one_at_a_time();
    let dir = TempDir::new("memleak-p");
    let bin = build_leaks(&dir);
    // The program leaks, then sleeps 30 s: `1 2` prints two reports a second apart and
    // exits on its own, the program still running.
    let mut target = Target::spawn(&bin, &["wait", "30"]);
    let pid = target.pid();
    let mut tracer = Tracer::start(&["tool", "memleak", "-p", &pid, "1", "2"]);
    assert!(tracer.wait_attached(ATTACH_TIMEOUT), "sonde did not attach");
    settle();
    target.go();
    let out = tracer.finish(Duration::from_secs(20));
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(
        out.stdout.lines().next(),
        Some(format!("Attaching to pid {pid}, Ctrl+C to quit.").as_str())
    );
    let all = reports(&out.stdout, 10);
    assert_eq!(all.len(), 2, "{}", out.stdout);
    // The second report, a second after the first, is of blocks at least 500 ms old.
    let expected: Vec<(String, u64, u64)> = LEAKS
        .iter()
        .map(|(f, b, n)| (f.to_string(), *b, *n))
        .collect();
    assert_eq!(all[1].leaks(), expected, "{}", out.stdout);
    assert!(all[1].entries.iter().all(|e| e.frames.iter().all(|f| {
        assert_addressed(f);
        true
    })));
}

#[test]
fn memleak_show_allocs_lists_each_outstanding_block() {
    if skip_unless_root("memleak_show_allocs_lists_each_outstanding_block") {
        return;
    }
    let _serial = one_at_a_time();
    let dir = TempDir::new("memleak-a");
    let out = memleak_command(&dir, &["-a", "5"], 0);
    let all = reports(&out.stdout, 10);
    let last = all.last().expect("a report");
    // One line per block, in ascending size order, and as many as the stacks count.
    let sizes: Vec<u64> = last.addrs.iter().map(|(_, s)| *s).collect();
    assert!(sizes.windows(2).all(|w| w[0] <= w[1]), "{sizes:?}");
    let total: u64 = last.entries.iter().map(|e| e.allocations).sum();
    assert_eq!(last.addrs.len() as u64, total, "{}", out.stdout);
    for (size, n) in [(1234, 7), (5000, 3), (4096, 2), (3000, 1)] {
        assert_eq!(
            sizes.iter().filter(|s| **s == size).count(),
            n,
            "{}",
            out.stdout
        );
    }
    let mut addrs: Vec<&str> = last.addrs.iter().map(|(a, _)| a.as_str()).collect();
    addrs.sort_unstable();
    addrs.dedup();
    assert_eq!(addrs.len() as u64, total, "distinct addresses");
}

#[test]
fn memleak_size_filters_top_and_sort() {
    if skip_unless_root("memleak_size_filters_top_and_sort") {
        return;
    }
    let _serial = one_at_a_time();
    let dir = TempDir::new("memleak-z");
    let leaks_of = |args: &[&str], top: u32| {
        let out = memleak_command(&dir, args, 0);
        let all = reports(&out.stdout, top);
        all.last()
            .unwrap_or_else(|| panic!("no report: {}", out.stdout))
            .leaks()
    };
    let only = |names: &[&str]| -> Vec<(String, u64, u64)> {
        LEAKS
            .iter()
            .filter(|l| names.contains(&l.0))
            .map(|(f, b, n)| (f.to_string(), *b, *n))
            .collect()
    };
    // -z 4000 -Z 6000: the 4096- and 5000-byte blocks only.
    assert_eq!(
        leaks_of(&["-z", "4000", "-Z", "6000", "5"], 10),
        only(&["leak_aligned", "leak_calloc"])
    );
    // -Z 2000: the 1234-byte blocks (realloc's 3000 bytes are over).
    assert_eq!(leaks_of(&["-Z", "2000", "5"], 10), only(&["leak_malloc"]));
    // -T 1: the largest stack only (the program's leaks are the largest of its stacks).
    assert_eq!(leaks_of(&["-T", "1", "5"], 1), only(&["leak_calloc"]));
    // --sort count: the stack with the most allocations is the top one.
    assert_eq!(
        leaks_of(&["--sort", "count", "-T", "1", "5"], 1),
        only(&["leak_malloc"])
    );
}

#[test]
fn memleak_combined_only_keeps_totals_per_stack() {
    if skip_unless_root("memleak_combined_only_keeps_totals_per_stack") {
        return;
    }
    let _serial = one_at_a_time();
    let dir = TempDir::new("memleak-combined");
    let out = memleak_command(&dir, &["--combined-only", "5"], 0);
    let all = reports(&out.stdout, 10);
    let last = all.last().expect("a report");
    let expected: Vec<(String, u64, u64)> = LEAKS
        .iter()
        .map(|(f, b, n)| (f.to_string(), *b, *n))
        .collect();
    assert_eq!(last.leaks(), expected, "{}", out.stdout);
    // bcc's combined frames carry no address: `func+0xOFF [object]`.
    let e = last.of("leak_malloc").unwrap();
    assert!(
        e.frames[0].starts_with("leak_malloc+0x") && e.frames[0].ends_with(" [leaks]"),
        "{:?}",
        e.frames
    );
    assert_eq!(frame_function(&e.frames[1]), Some("main"));
}

#[test]
fn memleak_older_hides_young_blocks_until_the_end() {
    if skip_unless_root("memleak_older_hides_young_blocks_until_the_end") {
        return;
    }
    let _serial = one_at_a_time();
    let dir = TempDir::new("memleak-o");
    // -o 60000: no block is a minute old in the interval reports; the last report, at the
    // program's exit, shows every block still outstanding.
    let out = memleak_command(&dir, &["-o", "60000", "1"], 2);
    let all = reports(&out.stdout, 10);
    assert!(all.len() >= 2, "{}", out.stdout);
    for r in &all[..all.len() - 1] {
        assert!(r.entries.is_empty(), "{}", out.stdout);
    }
    assert_eq!(all.last().unwrap().leaks().len(), 4, "{}", out.stdout);
}

#[test]
fn memleak_trace_prints_each_call_and_sample_rate_skips_calls() {
    if skip_unless_root("memleak_trace_prints_each_call_and_sample_rate_skips_calls") {
        return;
    }
    let _serial = one_at_a_time();
    let dir = TempDir::new("memleak-t");
    let out = memleak_command(&dir, &["-t"], 0);
    let count = |what: &str| out.stdout.lines().filter(|l| l.ends_with(what)).count();
    assert_eq!(count(": alloc entered, size = 1234"), 7, "{}", out.stdout);
    assert_eq!(count(": alloc entered, size = 5000"), 3, "{}", out.stdout);
    // 100 malloc(100) twice, and valloc(100) twice.
    assert_eq!(count(": alloc entered, size = 100"), 202, "{}", out.stdout);
    let exits = out
        .stdout
        .lines()
        .filter(|l| l.contains(": alloc exited, size = 1234, result = "))
        .count();
    assert_eq!(exits, 7);
    let frees = out
        .stdout
        .lines()
        .filter(|l| l.contains(": free entered, address = ") && l.ends_with(", size = 100"))
        .count();
    assert_eq!(frees, 202, "{}", out.stdout);
    // The lines are trace_pipe's: `COMM-TID [CPU] TIME: message`, and no report.
    let line = out
        .stdout
        .lines()
        .find(|l| l.contains("size = 1234"))
        .unwrap();
    assert!(line.starts_with("leaks-"), "{line}");
    assert!(
        !out.stdout.contains("stacks with outstanding"),
        "{}",
        out.stdout
    );

    // -s N keeps the calls at whose time in nanoseconds is a multiple of N: with N a
    // billion and seven, none of the program's.
    let out = memleak_command(&dir, &["-s", "1000000007", "5"], 0);
    let all = reports(&out.stdout, 10);
    assert!(all.last().unwrap().leaks().is_empty(), "{}", out.stdout);
}

#[test]
fn memleak_obj_names_the_allocators_object() {
    if skip_unless_root("memleak_obj_names_the_allocators_object") {
        return;
    }
    let _serial = one_at_a_time();
    let dir = TempDir::new("memleak-obj");
    let libc = std::fs::canonicalize("/lib/x86_64-linux-gnu/libc.so.6")
        .expect("libc.so.6")
        .display()
        .to_string();
    let out = memleak_command(&dir, &["-O", &libc, "5"], 0);
    let all = reports(&out.stdout, 10);
    assert_eq!(all.last().unwrap().leaks().len(), 4, "{}", out.stdout);
    // An object without the allocators attaches nothing: an error, not a silent run.
    let out = run_sonde_timeout(
        &["tool", "memleak", "-O", "/bin/true", "-c", "/bin/true"],
        Duration::from_secs(30),
    );
    assert_ne!(out.code, Some(0), "{}", out.stdout);
}

#[test]
fn memleak_refuses_bad_flags() {
    if skip_unless_root("memleak_refuses_bad_flags") {
        return;
    }
    let _serial = one_at_a_time();
    let run = |args: &[&str]| {
        let mut all = vec!["tool", "memleak"];
        all.extend_from_slice(args);
        let out = run_sonde_timeout(&all, Duration::from_secs(30));
        assert!(!out.timed_out);
        (out.code, out.stdout, out.stderr)
    };
    let (code, stdout, _) = run(&["-c", "/bin/true", "-z", "10", "-Z", "5"]);
    assert_eq!(code, Some(1));
    assert!(
        stdout.contains("min_size (-z) can't be greater than max_size (-Z)"),
        "{stdout}"
    );
    let (code, stdout, _) = run(&["-c", "/bin/true", "--sort", "age"]);
    assert_eq!(code, Some(1));
    assert!(
        stdout.contains("Given sort_key: age\nSupporting sort key list: ['size', 'count']"),
        "{stdout}"
    );
    for bad in [["-s", "0"], ["-T", "0"], ["-o", "x"]] {
        let (code, _, stderr) = run(&["-c", "/bin/true", bad[0], bad[1]]);
        assert_eq!(code, Some(2), "{bad:?}: {stderr}");
        assert!(stderr.contains("bad value for"), "{stderr}");
    }
}

#[test]
fn memleak_without_a_process_traces_the_kernels_allocations() {
    if skip_unless_root("memleak_without_a_process_traces_the_kernels_allocations") {
        return;
    }
    let _serial = one_at_a_time();
    // Without -p or -c, bcc's memleak traces kernel allocations (its uprobes attach
    // nowhere). This test opens 200 pipes while it runs and keeps them: their buffer arrays
    // (16 x 40 bytes, in 1024-byte kmalloc blocks) stay outstanding, from alloc_pipe_info.
    for combined in [false, true] {
        let mut args = vec!["tool", "memleak", "-z", "1024", "-Z", "1024", "-T", "50"];
        if combined {
            args.push("--combined-only");
        }
        args.extend(["2", "1"]);
        let mut tracer = Tracer::start(&args);
        assert!(tracer.wait_attached(ATTACH_TIMEOUT), "sonde did not attach");
        settle();
        let pipes: Vec<_> = (0..200).map(|_| std::io::pipe().expect("a pipe")).collect();
        let out = tracer.finish(Duration::from_secs(30));
        drop(pipes);
        assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
        // BEGIN, END, the interval and the 8 kmem and percpu tracepoints: no uprobe.
        assert!(out.stderr.contains("Attached 11 probes"), "{}", out.stderr);
        assert_eq!(
            out.stdout.lines().next(),
            Some("Attaching to kernel allocators, Ctrl+C to quit.")
        );
        let all = reports(&out.stdout, 50);
        assert_eq!(all.len(), 1, "{}", out.stdout);
        let pipe_stack = all[0].entries.iter().find(|e| {
            e.frames
                .iter()
                .any(|f| frame_function(f) == Some("alloc_pipe_info"))
        });
        let e = pipe_stack.unwrap_or_else(|| panic!("no alloc_pipe_info stack:\n{}", out.stdout));
        assert!(
            e.allocations >= 200 && e.bytes == e.allocations * 1024,
            "{e:?}"
        );
        for f in &e.frames {
            assert!(f.ends_with(" [kernel]"), "{f}");
            if !combined {
                assert_addressed(f);
            }
        }
    }
}
