//! `sonde --test` and `sonde --bench`: the script's `test:NAME` probes run once each as
//! tests, or its `bench:NAME` probes repeatedly as micro benchmarks, and their results print
//! exactly as bpftrace 0.26 prints them. Nothing else is attached; BEGIN runs before and
//! END after, and no map is printed at exit.
//!
//! Each probe is an XDP program run with `BPF_PROG_TEST_RUN` on a 14-byte (Ethernet
//! header) packet, in sonde's own task. A test passes when its program returns 0 (`return
//! EXPR;` returns EXPR, every other way out 0), it called no `exit()` with a non-zero code
//! and no `errorf()` (nor, under `-k`, a failed helper); what it printed, its `errorf`/`warnf`
//! messages and helper errors included (bpftrace captures its error stream too), is shown
//! only when it fails. A benchmark runs 1 time, then 1000, 100,000 ... (bpftrace's growth)
//! until the runs take at least 1 ms in all; its row gives the kernel's mean time of one run
//! and the last number of runs; what it prints is discarded. A benchmark that returns
//! non-zero is skipped (no row: the table's header comes with the first benchmark's row, so a
//! skipped first benchmark leaves it out, as in bpftrace 0.26); one that calls `errorf()` or
//! `exit()` with a non-zero code fails the run.

#![allow(clippy::result_large_err)] // Diagnostic is the project-wide error type.

use std::cell::RefCell;
use std::io::{self, Write};
use std::rc::Rc;

use sonde_compiler::program::{AttachSpec, CompiledScript, EventSpec, ProgramSpec};
use sonde_lang::diag::Diagnostic;

use sonde_kernel::errors::permission_denied;
use sonde_kernel::events::EventReader;
use sonde_kernel::load::Loaded;
use sonde_present::output::MapSource;
use sonde_present::output::Resolver;
use sonde_present::output::json::json_string;
use sonde_session::Output;

/// What `--test` or `--bench` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SelfTestMode {
    /// `--test`: the `test:` probes.
    Test,
    /// `--bench`: the `bench:` probes.
    Bench,
}

/// The packet a test run hands an XDP program: the kernel wants at least an Ethernet
/// header's worth.
const PACKET: [u8; 14] = [0; 14];

/// The output of one probe's runs, kept for printing when a test fails.
#[derive(Clone, Default)]
struct Capture(Rc<RefCell<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// What one test run of a probe gave.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// The program's return value.
    pub retval: u32,
    /// The kernel's mean duration of one run, in ns.
    pub duration: u32,
    /// The code of the `exit()` it called (0 when none).
    pub exit_code: u8,
    /// `errorf()` messages and failed helpers (`-k`) it reported.
    pub errors: usize,
}

/// The loaded script and where its events go, for running its tests.
pub struct Runner<'a, R> {
    /// The compiled script.
    pub script: &'a CompiledScript,
    /// The loaded script.
    pub loaded: &'a Loaded,
    /// Its ring buffer, if it has one.
    pub events: &'a mut Option<EventReader>,
    /// Its maps (for the events that read them).
    pub maps: &'a dyn MapSource,
    /// Names for the captured output.
    pub resolver: R,
}

impl<'a, R: Resolver + Clone + 'static> Runner<'a, R> {
    /// Runs `program` `repeat` times and handles the events it sent, printing them (as text,
    /// whatever the run's format, as bpftrace captures them) to `sink`.
    fn run_one(
        &mut self,
        program: &ProgramSpec,
        repeat: u32,
        sink: Box<dyn Write>,
    ) -> Result<Outcome, Diagnostic> {
        let fd = self.loaded.program_fd(&program.symbol).ok_or_else(|| {
            Diagnostic::error(
                "sonde::attach::program_type",
                program.span,
                format!("program {} is not loaded", program.symbol),
            )
        })?;
        let (retval, duration) = sonde_kernel::syscall::prog_test_run_repeat(fd, &PACKET, repeat)
            .map_err(|e| match e.raw_os_error() {
            Some(libc::EPERM | libc::EACCES) => {
                permission_denied(program.span, "running a test or benchmark")
            }
            _ => Diagnostic::error(
                "sonde::attach::trigger",
                program.span,
                format!("cannot run this probe: BPF_PROG_TEST_RUN failed: {e}"),
            ),
        })?;
        let script = self.script;
        let mut cap = Output::capturing(script, self.resolver.clone(), sink);
        let mut errors = 0;
        if let Some(reader) = self.events.as_mut() {
            let maps = self.maps;
            reader.drain(&mut |r: &[u8]| {
                if !cap.discard && is_error(&script.events, r) {
                    errors += 1;
                }
                cap.handle(r, maps);
            });
        }
        cap.flush();
        Ok(Outcome {
            retval,
            duration,
            exit_code: cap.exit_code(),
            errors,
        })
    }

    /// The probes of `mode`, in script order, with their names.
    fn probes(&self, mode: SelfTestMode) -> Vec<(&'a ProgramSpec, String)> {
        let loaded: &'a Loaded = self.loaded;
        let mut out = Vec::new();
        for p in loaded.programs() {
            for t in &p.attach {
                if let AttachSpec::SelfTest { name, bench } = &t.spec
                    && *bench == (mode == SelfTestMode::Bench)
                {
                    out.push((p, name.clone()));
                }
            }
        }
        out
    }

    /// Runs every test (or benchmark) and prints the results on `out`. Returns how many
    /// ran and whether all passed (benchmarks: none failed).
    pub fn run(
        &mut self,
        mode: SelfTestMode,
        out: &mut Output<'_>,
    ) -> Result<(usize, bool), Diagnostic> {
        let probes = self.probes(mode);
        let names: Vec<String> = probes.iter().map(|(_, n)| n.clone()).collect();
        let mut passed = Vec::new();
        for (index, (program, name)) in probes.iter().enumerate() {
            match mode {
                SelfTestMode::Test => {
                    let captured = Capture::default();
                    let o = self.run_one(program, 1, Box::new(captured.clone()))?;
                    passed.push(o.retval == 0 && o.exit_code == 0 && o.errors == 0);
                    let output = String::from_utf8_lossy(&captured.0.borrow()).into_owned();
                    let text = test_text(&names, index, o.duration, &passed, &output);
                    let json = format!(
                        "{{{}: {{\"duration\": {}, \"passed\": {}, \"output\": {}}}}}",
                        json_string(name.as_bytes()),
                        o.duration,
                        passed[index],
                        json_string(output.as_bytes())
                    );
                    out.self_test(text.as_bytes(), "test_result", &json);
                }
                SelfTestMode::Bench => match self.bench(program)? {
                    Bench::Skipped => {}
                    Bench::Failed => {
                        eprintln!("ERROR: Benchmark '{name}' failed.");
                        passed.push(false);
                    }
                    Bench::Timed { average, iters } => {
                        let text = bench_text(&names, index, average, iters);
                        let json = format!(
                            "{{{}: {{\"average\": {average}, \"iters\": {iters}}}}}",
                            json_string(name.as_bytes())
                        );
                        out.self_test(text.as_bytes(), "benchmark_result", &json);
                    }
                },
            }
            out.flush();
        }
        Ok((probes.len(), passed.iter().all(|&p| p)))
    }

    /// Times one benchmark as bpftrace does: more runs until they take 1 ms in all.
    fn bench(&mut self, program: &ProgramSpec) -> Result<Bench, Diagnostic> {
        let mut iters: u64 = 1;
        let mut exit_code = 0;
        let mut errors = 0;
        loop {
            let repeat = u32::try_from(iters).unwrap_or(u32::MAX);
            let o = self.run_one(program, repeat, Box::new(io::sink()))?;
            exit_code = exit_code.max(o.exit_code);
            errors += o.errors;
            if exit_code == 0 && o.retval != 0 {
                return Ok(Bench::Skipped);
            }
            let total = u64::from(o.duration) * u64::from(repeat);
            let grow = match total {
                0..1_000 => 1000,
                1_000..10_000 => 100,
                10_000..100_000 => 10,
                100_000..1_000_000 => 2,
                _ => 1,
            };
            // A program too fast to measure would grow past what one test run repeats.
            if grow > 1 && repeat < u32::MAX {
                iters *= grow;
                continue;
            }
            if exit_code != 0 || errors != 0 {
                return Ok(Bench::Failed);
            }
            return Ok(Bench::Timed {
                average: o.duration,
                iters: u64::from(repeat),
            });
        }
    }
}

/// How a benchmark ended.
enum Bench {
    /// It returned non-zero: no row.
    Skipped,
    /// It reported an error or exited with a non-zero code.
    Failed,
    /// Its mean time per run over its last `iters` runs.
    Timed {
        /// ns per run.
        average: u32,
        /// Runs.
        iters: u64,
    },
}

/// True when record `r` reports an error (`errorf`, or a failed helper under `-k`).
fn is_error(events: &[EventSpec], r: &[u8]) -> bool {
    let Some(id) = r.get(..8) else {
        return false;
    };
    let id = u64::from_le_bytes(id.try_into().expect("8 bytes")) as usize;
    matches!(
        events.get(id),
        Some(EventSpec::Log { error: true, .. } | EventSpec::HelperError { .. })
    )
}

const GREEN: &str = "\x1b[32m";
const RED: &str = "\x1b[31m";
const RESET: &str = "\x1b[0m";

/// The unit bpftrace 0.26 shows a test's duration in, and what it prints as the amount: the
/// unit's size in ns (`(1 ns)`, `(1000 μs)`), not the duration itself; copied as it is.
fn duration_unit(ns: u32) -> (&'static str, u64) {
    match ns {
        1_000_000_000.. => ("s", 1_000_000_000),
        1_000_000.. => ("ms", 1_000_000),
        1_000.. => ("μs", 1_000),
        _ => ("ns", 1),
    }
}

fn tests_word(n: usize) -> &'static str {
    if n == 1 { "test" } else { "tests" }
}

/// The text bpftrace prints for the result of test `index` of `names` (gtest style; the
/// first result starts with the count, the last one ends with the summary).
pub fn test_text(
    names: &[String],
    index: usize,
    duration: u32,
    passed: &[bool],
    output: &str,
) -> String {
    let mut t = String::new();
    let name = &names[index];
    if index == 0 {
        t += &format!(
            "{GREEN}[==========]{RESET} Running {} tests.\n",
            names.len()
        );
    }
    t += &format!("{GREEN}[ RUN      ]{RESET} {name}\n");
    if passed[index] {
        t += &format!("{GREEN}[       OK ]{RESET} {name}");
    } else {
        for line in output.split('\n').filter(|l| !l.is_empty()) {
            t += line;
            t.push('\n');
        }
        t += &format!("{RED}[  FAILED  ]{RESET} {name}");
    }
    let (unit, shown) = duration_unit(duration);
    t += &format!(" ({shown} {unit})\n");
    if index + 1 == names.len() {
        let ok = passed.iter().filter(|&&p| p).count();
        let failed = passed.len() - ok;
        t += &format!(
            "{GREEN}[==========]{RESET} {} {} ran.\n",
            names.len(),
            tests_word(names.len())
        );
        t += &format!("{GREEN}[  PASSED  ]{RESET} {ok} {}.\n", tests_word(ok));
        if failed > 0 {
            t += &format!(
                "{RED}[  FAILED  ]{RESET} {failed} {}, listed below:\n",
                tests_word(failed)
            );
            for (n, _) in names.iter().zip(passed).filter(|(_, p)| !**p) {
                t += &format!("{RED}[  FAILED  ]{RESET} {n}\n");
            }
        }
    }
    t
}

/// The text bpftrace prints for benchmark `index` of `names`: a row of a table whose header
/// comes with the first benchmark.
pub fn bench_text(names: &[String], index: usize, average: u32, iters: u64) -> String {
    const BENCHMARK: &str = "Benchmark";
    const TIME: &str = "Time(ns)";
    const ITERATIONS: &str = "Iterations";
    const TIME_WIDTH: usize = 15;
    let longest = names
        .iter()
        .map(String::len)
        .chain([40, BENCHMARK.len()])
        .max()
        .unwrap_or(40);
    let w = longest + 1;
    let mut t = String::new();
    if index == 0 {
        t += &format!("{BENCHMARK:<w$}{TIME:<TIME_WIDTH$}{ITERATIONS}\n");
        t += &"-".repeat(w + TIME_WIDTH + ITERATIONS.len());
        t.push('\n');
    }
    t += &format!("{:<w$}{:<TIME_WIDTH$}{iters}\n", names[index], average);
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn gtest_style_results() {
        let n = names(&["okay", "failure"]);
        assert_eq!(
            test_text(&n, 0, 420, &[true], "hidden\n"),
            "\x1b[32m[==========]\x1b[0m Running 2 tests.\n\
             \x1b[32m[ RUN      ]\x1b[0m okay\n\
             \x1b[32m[       OK ]\x1b[0m okay (1 ns)\n"
        );
        assert_eq!(
            test_text(&n, 1, 2_500, &[true, false], "a\n\nb\n"),
            "\x1b[32m[ RUN      ]\x1b[0m failure\n\
             a\n\
             b\n\
             \x1b[31m[  FAILED  ]\x1b[0m failure (1000 μs)\n\
             \x1b[32m[==========]\x1b[0m 2 tests ran.\n\
             \x1b[32m[  PASSED  ]\x1b[0m 1 test.\n\
             \x1b[31m[  FAILED  ]\x1b[0m 1 test, listed below:\n\
             \x1b[31m[  FAILED  ]\x1b[0m failure\n"
        );
        let one = names(&["only"]);
        assert!(
            test_text(&one, 0, 5, &[true], "")
                .ends_with("1 test ran.\n\x1b[32m[  PASSED  ]\x1b[0m 1 test.\n")
        );
    }

    #[test]
    fn benchmark_table() {
        let n = names(&["count", "lhist"]);
        let header = format!(
            "{:<41}{:<15}Iterations\n{}\n",
            "Benchmark",
            "Time(ns)",
            "-".repeat(66)
        );
        assert_eq!(
            bench_text(&n, 0, 40, 100_000),
            format!("{header}{:<41}{:<15}100000\n", "count", 40)
        );
        assert_eq!(
            bench_text(&n, 1, 88, 2000),
            format!("{:<41}{:<15}2000\n", "lhist", 88)
        );
        let long = names(&[&"x".repeat(50)]);
        assert!(bench_text(&long, 0, 1, 1).starts_with(&format!("{:<51}", "Benchmark")));
    }

    #[test]
    fn errors_are_errorf_and_helper_failures() {
        let span = sonde_lang::span::Span::default();
        let events = vec![
            EventSpec::Log {
                error: false,
                format: String::new(),
                args: Vec::new(),
                span,
            },
            EventSpec::Log {
                error: true,
                format: String::new(),
                args: Vec::new(),
                span,
            },
        ];
        let rec = |id: u64| id.to_le_bytes().to_vec();
        assert!(!is_error(&events, &rec(0)));
        assert!(is_error(&events, &rec(1)));
        assert!(!is_error(&events, &rec(7)));
    }
}
