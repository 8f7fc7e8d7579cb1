//! `sonde tool allocreplay`'s producer: an allocation recording replayed against each
//! allocator in turn, each replay a harness process (sonde re-executed as `__alloc-harness`,
//! with the allocator preloaded) watched by a system call counter, and the results written
//! as lines the tool's `input` script reads:
//!
//! ```text
//! alloc NAME INDEX                  the allocators, in the order given
//! info KEY N                        the recording and its plan (calls, threads, ...)
//! expect FN N                       calls the replay is to make per function
//! run NAME KEY N                    wall_ns, peak_rss, end_rss, peak_live, end_live, calls,
//!                                   failed, frag_peak, frag_end, frag_mean (x100)
//! call NAME FN N                    calls made per function
//! ns NAME FN p50|p99 N              latency per function
//! sys NAME SYSCALL N                the allocator's system calls during the replay
//! point T LIVE NAME RSS [NAME RSS]  the chart: recorded time, live bytes, each one's RSS
//! ```

mod syscalls;

use sonde_allocs::allocators::Allocator;
use sonde_allocs::ops::{Call, Recording};
use sonde_allocs::plan::Plan;
use sonde_allocs::results::Results;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The memory system calls the report names; the others are summed.
pub const MEMORY_SYSCALLS: [&str; 6] = ["mmap", "munmap", "mremap", "brk", "madvise", "mprotect"];

/// How the replays run.
#[derive(Clone, Debug)]
pub struct FeedOptions {
    /// The allocators, in order.
    pub allocators: Vec<Allocator>,
    /// Threads run free of the recorded order.
    pub threads_free: bool,
    /// Each page of each block is written.
    pub touch: bool,
    /// The sonde binary to re-execute (harness and counter).
    pub sonde: PathBuf,
    /// Whether system calls are counted (needs the kernel's tracing).
    pub count_syscalls: bool,
}

/// The plan file, removed when dropped.
struct TempPlan(PathBuf);

impl Drop for TempPlan {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn io(e: std::io::Error) -> String {
    format!("writing the results: {e}")
}

/// Replays `rec` against each allocator and writes the lines (see the module doc) to `out`.
pub fn feed(rec: &Recording, opts: &FeedOptions, out: &mut dyn Write) -> Result<(), String> {
    let plan = Plan::new(rec);
    if plan.steps.is_empty() {
        return Err(format!(
            "the recording holds no call to replay ({} calls recorded)",
            rec.ops.len()
        ));
    }
    if rec.lost_events > 0 {
        eprintln!(
            "sonde: warning: the recording lost {} events (its ring buffer was full): the replay is incomplete",
            rec.lost_events
        );
    }
    let path = std::env::temp_dir().join(format!("sonde-allocplan-{}", std::process::id()));
    let temp = TempPlan(path);
    let mut file = std::fs::File::create(&temp.0)
        .map_err(|e| format!("cannot write {}: {e}", temp.0.display()))?;
    sonde_allocs::planfile::write(&plan, &mut std::io::BufWriter::new(&mut file))
        .map_err(|e| format!("cannot write {}: {e}", temp.0.display()))?;
    drop(file);
    write_plan(rec, &plan, opts, out).map_err(io)?;
    let mut count = opts.count_syscalls;
    let mut all = Vec::new();
    for (i, a) in opts.allocators.iter().enumerate() {
        let marker = format!("sar{}-{i}", std::process::id() % 1_000_000);
        let counter = match count.then(|| syscalls::Counter::start(&opts.sonde, &marker)) {
            Some(Ok(c)) => Some(c),
            Some(Err(e)) => {
                eprintln!("sonde: warning: system calls not counted: {e}");
                count = false;
                None
            }
            None => None,
        };
        let r = harness(&temp.0, a, &marker, opts);
        let sys = counter.map(|c| c.stop()).transpose();
        let r = r?;
        let sys = sys.unwrap_or_else(|e| {
            eprintln!("sonde: warning: {e}");
            None
        });
        write_run(&a.name, &r, sys.as_deref(), out).map_err(io)?;
        out.flush().map_err(io)?;
        all.push(r);
    }
    write_points(&plan, opts, &all, out).map_err(io)?;
    out.flush().map_err(io)
}

/// One replay: the harness under allocator `a`, its results.
fn harness(
    plan: &Path,
    a: &Allocator,
    marker: &str,
    opts: &FeedOptions,
) -> Result<Results, String> {
    let mut cmd = Command::new(&opts.sonde);
    cmd.arg("__alloc-harness")
        .arg(plan)
        .args(["--marker", marker])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if opts.threads_free {
        cmd.arg("--threads-free");
    }
    if opts.touch {
        cmd.arg("--touch");
    }
    match &a.preload {
        Some(lib) => cmd.env("LD_PRELOAD", lib),
        None => cmd.env_remove("LD_PRELOAD"),
    };
    let out = cmd
        .output()
        .map_err(|e| format!("cannot start the harness {}: {e}", opts.sonde.display()))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!(
            "the replay under {} failed ({}): {}",
            a.name,
            out.status,
            stderr.trim()
        ));
    }
    let r = Results::from_json(&String::from_utf8_lossy(&out.stdout))
        .map_err(|e| format!("the replay under {}: unreadable results: {e}", a.name))?;
    if let Some(lib) = &a.preload {
        check_preloaded(a, lib, &r, &stderr)?;
    }
    Ok(r)
}

/// Fails unless `malloc` came from `lib` in the harness (the dynamic loader ignores a
/// library it cannot preload, with only a message).
fn check_preloaded(a: &Allocator, lib: &Path, r: &Results, stderr: &str) -> Result<(), String> {
    let want = std::fs::canonicalize(lib).unwrap_or(lib.to_path_buf());
    let got = std::fs::canonicalize(&r.malloc_from).unwrap_or(PathBuf::from(&r.malloc_from));
    if want == got {
        return Ok(());
    }
    Err(format!(
        "allocator {}: malloc did not come from {} under LD_PRELOAD but from {}{}",
        a.name,
        lib.display(),
        r.malloc_from,
        if stderr.trim().is_empty() {
            String::new()
        } else {
            format!(" ({})", stderr.trim())
        }
    ))
}

/// The `alloc`, `info` and `expect` lines.
fn write_plan(
    rec: &Recording,
    plan: &Plan,
    opts: &FeedOptions,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    for (i, a) in opts.allocators.iter().enumerate() {
        writeln!(out, "alloc {} {i}", a.name)?;
    }
    let info = [
        ("recorded", rec.ops.len() as u64),
        ("calls", plan.total_calls()),
        ("threads", plan.threads.len() as u64),
        ("pre_attach", plan.pre_attach),
        ("failed", plan.failed),
        ("missed_frees", plan.missed_frees),
        ("unfinished", rec.unfinished),
        ("unstarted", rec.unstarted),
        ("lost_events", rec.lost_events),
        ("peak_live", plan.peak_live),
        ("end_live", plan.end_live),
        ("threads_free", u64::from(opts.threads_free)),
        ("touch", u64::from(opts.touch)),
    ];
    for (k, v) in info {
        writeln!(out, "info {k} {v}")?;
    }
    for call in Call::ALL.into_iter().filter(|c| c.replayed()) {
        let n = plan.calls[call.code() as usize];
        if n > 0 {
            writeln!(out, "expect {} {n}", call.name())?;
        }
    }
    Ok(())
}

/// `num * 100 / den`, 0 when `den` is.
fn ratio(num: u64, den: u64) -> u64 {
    if den == 0 {
        0
    } else {
        (u128::from(num) * 100 / u128::from(den)) as u64
    }
}

/// The lines of one allocator's replay.
fn write_run(
    name: &str,
    r: &Results,
    sys: Option<&[(String, u64)]>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let with_live: Vec<u64> = r
        .samples
        .iter()
        .filter(|s| s.1 > 0)
        .map(|s| ratio(s.2, s.1))
        .collect();
    let mean = with_live.iter().sum::<u64>() / (with_live.len() as u64).max(1);
    let run = [
        ("wall_ns", r.wall_ns),
        ("peak_rss", r.peak_rss),
        ("end_rss", r.end_rss),
        ("peak_live", r.peak_live),
        ("end_live", r.end_live),
        ("calls", r.calls.iter().map(|c| c.1).sum()),
        ("failed", r.failed),
        ("frag_peak", ratio(r.peak_rss, r.peak_live)),
        ("frag_end", ratio(r.end_rss, r.end_live)),
        ("frag_mean", mean),
    ];
    for (k, v) in run {
        writeln!(out, "run {name} {k} {v}")?;
    }
    for (f, n) in &r.calls {
        writeln!(out, "call {name} {f} {n}")?;
    }
    for l in &r.latency {
        writeln!(out, "ns {name} {} p50 {}", l.name, l.p50)?;
        writeln!(out, "ns {name} {} p99 {}", l.name, l.p99)?;
    }
    let Some(sys) = sys else { return Ok(()) };
    let own = |s: &str| r.own_syscalls.iter().find(|o| o.0 == s).map_or(0, |o| o.1);
    let mut other = 0;
    for (s, n) in sys {
        if !MEMORY_SYSCALLS.contains(&s.as_str()) {
            other += n.saturating_sub(own(s));
        }
    }
    for s in MEMORY_SYSCALLS {
        let n = sys.iter().find(|x| x.0 == s).map_or(0, |x| x.1);
        writeln!(out, "sys {name} {s} {n}")?;
    }
    writeln!(out, "sys {name} other {other}")
}

/// The chart's points: at each sampled step, the recorded time, the recorded live bytes
/// and each allocator's resident bytes (its last sample at or before the step).
fn write_points(
    plan: &Plan,
    opts: &FeedOptions,
    all: &[Results],
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let mut seqs: Vec<u64> = all
        .iter()
        .flat_map(|r| r.samples.iter().map(|s| s.0))
        .collect();
    seqs.sort_unstable();
    seqs.dedup();
    let mut at = vec![0usize; all.len()];
    let mut rss = vec![0u64; all.len()];
    for seq in seqs {
        let i = seq as usize;
        write!(out, "point {} {}", plan.times[i], plan.live[i])?;
        for (k, r) in all.iter().enumerate() {
            while at[k] < r.samples.len() && r.samples[at[k]].0 <= seq {
                rss[k] = r.samples[at[k]].2;
                at[k] += 1;
            }
            write!(out, " {} {}", opts.allocators[k].name, rss[k])?;
        }
        writeln!(out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
