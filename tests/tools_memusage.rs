//! `sonde tool memusage`: a test program makes a known sequence of malloc, calloc, realloc
//! and free calls (`tests/targets/tools_work.c`, `alloc`: a failing malloc, realloc(NULL),
//! realloc(p, 0), free(NULL) and a block of 64 KiB or more included). The tool's report, for
//! the program run with `-c` and for the program already running with `-p`, equals glibc
//! memusage's (from the libc-devtools package, compared here when it is installed) except
//! for the stack peak, compared on its own (`deep`): sonde measures from the top of the
//! process's stack, glibc from its constructor's frame a few hundred bytes lower.
//! With -p, the tool's uprobes are placed in that process only (`peek`), and the counts are
//! exact even when tracing starts in the middle of a stream of calls (`churn`).

mod common;
mod tools_support;

use common::{
    ATTACH_TIMEOUT, Target, TempDir, Tracer, run_sonde, settle, skip_unless_root, trace_target,
};
use std::process::Command;
use std::time::Duration;
use tools_support::build_work;

/// glibc 2.36 memusage's report of `tools_work now alloc`, colours removed, with the stack
/// peak left out of the summary line.
const EXPECTED: &str = "
Memory usage summary: heap total: 9223372036854851291, heap peak: 70000, stack peak: _
         total calls   total memory   failed calls
 malloc|          9   9223372036854847067              1
realloc|          4           4024              0  (nomove:2, dec:1, free:1)
 calloc|          1            200              0
   free|         11          71514
Histogram for block sizes:
   16-31              4  30% ==================================================
   32-47              1   7% ============
   48-63              1   7% ============
   64-79              1   7% ============
   96-111             1   7% ============
  192-207             1   7% ============
  992-1007            1   7% ============
 4000-4015            1   7% ============
   large              2  15% =========================
";

/// The tests of this file run one at a time: a uprobe program that fires while another
/// tracing program runs on the same CPU is skipped by the kernel (its recursion guard), so
/// tracers running side by side on malloc make each other's counts short.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// The report with the stack peak replaced by `_`; also returns the stack peak.
fn without_stack_peak(report: &str) -> (String, String) {
    let (head, rest) = report
        .split_once("stack peak: ")
        .unwrap_or_else(|| panic!("no summary line:\n{report}"));
    let (peak, tail) = rest.split_once('\n').unwrap();
    (format!("{head}stack peak: _\n{tail}"), peak.to_string())
}

/// Removes terminal colour sequences (`ESC [ ... m`).
fn strip_colours(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for d in chars.by_ref() {
                if d == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[test]
fn memusage_report_of_a_command_equals_glibc_memusage() {
    if skip_unless_root("memusage_report_of_a_command_equals_glibc_memusage") {
        return;
    }
    let _serial = one_at_a_time();
    let dir = TempDir::new("memusage");
    let bin = build_work(&dir);
    let cmd = format!("{} now alloc", bin.display());
    let out = run_sonde(&["tool", "memusage", "-c", &cmd]);
    let (report, _) = without_stack_peak(out.ok_stdout());
    assert_eq!(report, EXPECTED);

    // glibc's own memusage, when libc-devtools is installed, on the same program.
    match Command::new("memusage")
        .arg(&bin)
        .args(["now", "alloc"])
        .output()
    {
        Ok(glibc) if glibc.status.success() => {
            let text = strip_colours(&String::from_utf8_lossy(&glibc.stderr));
            let (glibc_report, _) = without_stack_peak(&text);
            assert_eq!(report, glibc_report);
        }
        _ => eprintln!("memusage (libc-devtools) is not installed: compared with EXPECTED only"),
    }
}

#[test]
fn memusage_report_of_a_running_process() {
    if skip_unless_root("memusage_report_of_a_running_process") {
        return;
    }
    let _serial = one_at_a_time();
    let dir = TempDir::new("memusage-p");
    let bin = build_work(&dir);
    // The program's stdio buffer is allocated (by the read of its go line) before tracing
    // starts and never freed: the report is the same as for -c.
    let mut target = Target::spawn(&bin, &["wait", "alloc"]);
    let pid = target.pid();
    let out = trace_target(&["tool", "memusage", "-p", &pid], &mut target);
    let (report, _) = without_stack_peak(out.ok_stdout());
    assert_eq!(report, EXPECTED);
}

/// The stack peak of a report.
fn stack_peak(report: &str) -> u64 {
    let (_, peak) = without_stack_peak(report);
    peak.trim()
        .parse()
        .unwrap_or_else(|_| panic!("stack peak: {peak}"))
}

/// The count of the histogram line of `bucket` (`768-783`), 0 when absent.
fn bucket_count(report: &str, bucket: &str) -> u64 {
    report
        .lines()
        .find_map(|l| {
            let mut words = l.split_whitespace();
            (words.next() == Some(bucket)).then(|| words.next().unwrap().parse().unwrap())
        })
        .unwrap_or(0)
}

#[test]
fn memusage_stack_peak_is_the_deepest_call_below_the_stack_top() {
    if skip_unless_root("memusage_stack_peak_is_the_deepest_call_below_the_stack_top") {
        return;
    }
    let _serial = one_at_a_time();
    let dir = TempDir::new("memusage-deep");
    let bin = build_work(&dir);
    let cmd = format!("{} now deep 40", bin.display());
    let out = run_sonde(&["tool", "memusage", "-c", &cmd]);
    let peak = stack_peak(out.ok_stdout());
    // 40 frames of 1000 bytes (and their own few bytes each) below main: the peak is that,
    // plus main's and the C start-up's frames (well under 4 KiB).
    assert!((40_000..40_000 + 4096).contains(&peak), "stack peak {peak}");

    // glibc measures from its constructor's stack pointer, a little below the stack's top.
    match Command::new("memusage")
        .arg(&bin)
        .args(["now", "deep", "40"])
        .output()
    {
        Ok(glibc) if glibc.status.success() => {
            let text = strip_colours(&String::from_utf8_lossy(&glibc.stderr));
            let glibc_peak = stack_peak(&text);
            assert!(
                peak >= glibc_peak && peak - glibc_peak < 1024,
                "sonde {peak}, glibc {glibc_peak}"
            );
        }
        _ => eprintln!("memusage (libc-devtools) is not installed: compared with the frames only"),
    }
}

#[test]
fn memusage_counts_exactly_when_tracing_starts_in_a_stream_of_calls() {
    if skip_unless_root("memusage_counts_exactly_when_tracing_starts_in_a_stream_of_calls") {
        return;
    }
    let _serial = one_at_a_time();
    let dir = TempDir::new("memusage-churn");
    let bin = build_work(&dir);
    // Attaching while a thread is inside malloc must not leave it counted as "inside" for
    // ever (which made later calls uncounted): several runs, each exact.
    for run in 0..3 {
        let mut target = Target::spawn(&bin, &["now", "churn", "5000"]);
        let pid = target.pid();
        let out = trace_target(&["tool", "memusage", "-p", &pid], &mut target);
        let report = out.ok_stdout();
        assert_eq!(
            bucket_count(report, "768-783"),
            5000,
            "run {run}:\n{report}"
        );
        let calls = |f: &str| -> u64 {
            let line = report
                .lines()
                .find(|l| l.trim_start().starts_with(f))
                .unwrap();
            line.split('|')
                .nth(1)
                .unwrap()
                .split_whitespace()
                .next()
                .unwrap()
                .parse()
                .unwrap()
        };
        // The probes attach one after the other: the blocks allocated while malloc's was
        // attached and free's not yet are freed uncounted (a few dozen of the churn's).
        let (mallocs, frees) = (calls("malloc|"), calls("free|"));
        assert!(frees >= 5000 && frees <= mallocs, "run {run}:\n{report}");
        assert!(mallocs - frees < 1000, "run {run}:\n{report}");
    }
}

#[test]
fn memusage_p_places_its_uprobes_in_that_process_only() {
    if skip_unless_root("memusage_p_places_its_uprobes_in_that_process_only") {
        return;
    }
    let _serial = one_at_a_time();
    let dir = TempDir::new("memusage-scope");
    let bin = build_work(&dir);
    let peek = || {
        let out = Command::new(&bin).args(["now", "peek"]).output().unwrap();
        out.status.code()
    };
    // Another tracer on the machine may have placed its own: then this cannot be told.
    if peek() != Some(0) {
        eprintln!("another tracer has a uprobe on malloc, calloc, realloc or free: not checked");
        return;
    }
    // The method: a script's uprobe on malloc puts a breakpoint in every process, which an
    // unrelated process sees in its own copy of malloc.
    let mut global = Tracer::start(&["-e", "uprobe:libc:malloc { @n = count(); }"]);
    assert!(global.wait_attached(ATTACH_TIMEOUT));
    assert_eq!(peek(), Some(1), "a script's uprobe is placed everywhere");
    global.interrupt();
    global.finish(Duration::from_secs(10));

    // A tool's -p: the unrelated process runs libc untouched.
    let mut target = Target::spawn(&bin, &["wait", "alloc"]);
    let pid = target.pid();
    let mut tracer = Tracer::start(&["tool", "memusage", "-p", &pid]);
    let attached = tracer.wait_attached(ATTACH_TIMEOUT);
    settle();
    assert_eq!(
        peek(),
        Some(0),
        "memusage -p {pid} placed a breakpoint elsewhere"
    );
    target.go();
    let code = target.wait(Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(200));
    tracer.interrupt();
    let out = tracer.finish(Duration::from_secs(20));
    assert!(attached && code == Some(0), "{}", out.stderr);
    let (report, _) = without_stack_peak(out.ok_stdout());
    assert_eq!(report, EXPECTED);
}
