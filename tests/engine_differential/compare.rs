//! Running one script in both engines and comparing what they printed: the helpers every
//! differential test uses (a few runs at a time, a report listing every difference).

use crate::common::{Output, run_sonde_timeout};
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Hard limit for one run of one engine.
const RUN_TIMEOUT: Duration = Duration::from_secs(20);

/// What one engine did with one script.
fn run_engine(engine: &str, script: &str, extra: &[&str], args: &[String]) -> Output {
    let mut argv: Vec<&str> = vec!["--engine", engine, "-q"];
    argv.extend_from_slice(extra);
    argv.extend_from_slice(&["-e", script]);
    if !args.is_empty() {
        argv.push("--");
        argv.extend(args.iter().map(String::as_str));
    }
    run_sonde_timeout(&argv, RUN_TIMEOUT)
}

/// A difference between the engines, or a run that did not work in the reference engine.
pub(crate) struct Failure {
    what: String,
    script: String,
    args: Vec<String>,
    bpf: Output,
    jit: Output,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "=== {}", self.what)?;
        writeln!(f, "--- script (args {:?}):\n{}", self.args, self.script)?;
        for (name, o) in [("bpf", &self.bpf), ("jit", &self.jit)] {
            writeln!(
                f,
                "--- {name}: exit {:?}{}\n{}--- {name} stderr:\n{}",
                o.code,
                if o.timed_out { " (timed out)" } else { "" },
                o.stdout,
                o.stderr
            )?;
        }
        Ok(())
    }
}

/// The diagnostics of limits of the kernel engine a generated script may run into (the BPF
/// stack frame, 16-bit jump offsets, the 32 KiB scratch value, the verifier's budget): such
/// scripts are counted, not compared.
const KERNEL_LIMITS: &[&str] = &[
    "sonde::codegen::stack_overflow",
    "sonde::codegen::too_large",
    "sonde::load::map_create",
    "BPF program is too large",
];

/// What a comparison found.
pub(crate) enum Outcome {
    Same,
    /// The kernel engine refused the script for one of its limits.
    Skipped(&'static str),
    Failed(Box<Failure>),
}

/// Runs `script` through both engines (with `extra` flags) and compares them. `code` is the
/// exit status the script asks for.
pub(crate) fn compare(
    what: &str,
    script: &str,
    extra: &[&str],
    args: &[String],
    code: Option<i32>,
) -> Outcome {
    let bpf = run_engine("bpf", script, extra, args);
    if bpf.code == Some(1)
        && let Some(limit) = KERNEL_LIMITS.iter().find(|l| bpf.stderr.contains(*l))
    {
        return Outcome::Skipped(limit);
    }
    let jit = run_engine("jit", script, extra, args);
    let problem = if bpf.timed_out || jit.timed_out {
        Some("timed out")
    } else if bpf.stdout != jit.stdout {
        Some("stdout differs")
    } else if bpf.code != jit.code {
        Some("exit status differs")
    } else if code.is_some() && bpf.code != code {
        Some("the reference engine failed")
    } else if bpf.stderr.contains("panicked") || jit.stderr.contains("panicked") {
        Some("panic")
    } else {
        None
    };
    match problem {
        None => Outcome::Same,
        Some(p) => Outcome::Failed(Box::new(Failure {
            what: format!("{what}: {p}"),
            script: script.to_string(),
            args: args.to_vec(),
            bpf,
            jit,
        })),
    }
}

/// Runs `jobs` on a few threads (each run is one process of one engine) and collects the
/// outcomes in job order.
pub(crate) fn run_all<J: Sync>(
    jobs: &[J],
    run: impl Fn(&J) -> Vec<Outcome> + Sync,
) -> Vec<Outcome> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, Vec<Outcome>)>> = Mutex::new(Vec::new());
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .clamp(1, 4);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(job) = jobs.get(i) else { break };
                    let f = run(job);
                    results.lock().unwrap().push((i, f));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().flat_map(|(_, f)| f).collect()
}

/// Fails listing every failure in a line and the first few in full. `max_skipped` is how many
/// runs may hit a limit of the kernel engine.
pub(crate) fn report(outcomes: Vec<Outcome>, kind: &str, max_skipped: usize) {
    let total = outcomes.len();
    let mut skipped: Vec<&str> = Vec::new();
    let mut failures: Vec<Failure> = Vec::new();
    for o in outcomes {
        match o {
            Outcome::Same => {}
            Outcome::Skipped(l) => skipped.push(l),
            Outcome::Failed(f) => failures.push(*f),
        }
    }
    eprintln!(
        "{total} runs of {kind}: {} differ or failed, {} skipped for kernel-engine limits",
        failures.len(),
        skipped.len(),
    );
    for l in KERNEL_LIMITS {
        let n = skipped.iter().filter(|s| *s == l).count();
        if n > 0 {
            eprintln!("  {n} x {l}");
        }
    }
    assert!(
        skipped.len() <= max_skipped,
        "{} of {total} runs of {kind} hit a limit of the kernel engine (at most {max_skipped} may): \
         the generator makes programs too big",
        skipped.len()
    );
    if failures.is_empty() {
        return;
    }
    let mut msg = format!(
        "{} of {total} runs of {kind} differ between the engines (or failed):\n",
        failures.len()
    );
    for f in &failures {
        let first = |o: &Output| o.stderr.lines().next().unwrap_or("").to_string();
        let _ = writeln!(
            msg,
            "  {} [bpf: {:?} {}] [jit: {:?} {}]",
            f.what,
            f.bpf.code,
            first(&f.bpf),
            f.jit.code,
            first(&f.jit)
        );
    }
    msg.push_str("the first ones in full:\n");
    for f in failures.iter().take(4) {
        let _ = writeln!(msg, "{f}");
    }
    panic!("{msg}");
}

/// Compares hand-written scripts (each run as is and, for some, with `-f json`); `stderr_too`
/// lists substrings of stderr lines that must also match between the engines (warnings the
/// session prints, like lost events).
pub(crate) fn compare_scripts(
    kind: &str,
    scripts: &[(&str, i32)],
    json: bool,
    stderr_too: &[&str],
) {
    let jobs: Vec<(usize, &str, i32)> = scripts
        .iter()
        .enumerate()
        .map(|(i, (s, c))| (i, *s, *c))
        .collect();
    let outcomes = run_all(&jobs, |&(i, script, code)| {
        let mut o = vec![compare(
            &format!("{kind} #{i}"),
            script,
            &[],
            &[],
            Some(code),
        )];
        if json {
            o.push(compare(
                &format!("{kind} #{i} (-f json)"),
                script,
                &["-f", "json"],
                &[],
                Some(code),
            ));
        }
        if let Some(Outcome::Failed(_)) = o.first() {
            return o;
        }
        if !stderr_too.is_empty() {
            let bpf = run_engine("bpf", script, &[], &[]);
            let jit = run_engine("jit", script, &[], &[]);
            let pick = |o: &Output| {
                o.stderr
                    .lines()
                    .filter(|l| stderr_too.iter().any(|s| l.contains(s)))
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            };
            if pick(&bpf) != pick(&jit) {
                o.push(Outcome::Failed(Box::new(Failure {
                    what: format!("{kind} #{i}: warnings on stderr differ"),
                    script: script.to_string(),
                    args: Vec::new(),
                    bpf,
                    jit,
                })));
            }
        }
        o
    });
    report(outcomes, kind, 0);
}
