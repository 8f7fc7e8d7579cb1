//! `sonde tool memusage`: a test program makes a known sequence of malloc, calloc, realloc
//! and free calls (`tests/targets/tools_work.c`, `alloc`: a failing malloc, realloc(NULL),
//! realloc(p, 0), free(NULL) and a block of 64 KiB or more included). The tool's report, for
//! the program run with `-c` and for the program already running with `-p`, equals glibc
//! memusage's (from the libc-devtools package, compared here when it is installed) except
//! for the stack peak: glibc measures it inside its wrappers, sonde at the functions' entry.

mod common;
mod tools_support;

use common::{ATTACH_TIMEOUT, Target, TempDir, Tracer, run_sonde, settle, skip_unless_root};
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
    let dir = TempDir::new("memusage");
    let bin = build_work(&dir);
    let cmd = format!("{} now alloc", bin.display());
    let out = run_sonde(&["tool", "memusage", "-c", &cmd]);
    let (report, peak) = without_stack_peak(out.ok_stdout());
    assert_eq!(report, EXPECTED);
    // Every call comes from do_allocs(): the stack never grows below the first call's entry.
    assert_eq!(peak, "0");

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
    let dir = TempDir::new("memusage-p");
    let bin = build_work(&dir);
    // The program's stdio buffer is allocated (by the read of its go line) before tracing
    // starts and never freed: the report is the same as for -c.
    let mut target = Target::spawn(&bin, &["wait", "alloc"]);
    let pid = target.pid();
    let mut tracer = Tracer::start(&["tool", "memusage", "-p", &pid]);
    let attached = tracer.wait_attached(ATTACH_TIMEOUT);
    settle();
    target.go();
    let code = target.wait(Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(200));
    tracer.interrupt();
    let out = tracer.finish(Duration::from_secs(20));
    assert!(attached && code == Some(0), "{}", out.stderr);
    let (report, _) = without_stack_peak(out.ok_stdout());
    assert_eq!(report, EXPECTED);
}
