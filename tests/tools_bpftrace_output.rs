//! bpftrace's own shipped tools (Debian's bpftrace 0.17 installs them as `/usr/sbin/*.bt`)
//! under sonde, compared with bpftrace 0.17 itself on the same machine.
//!
//! `runnable_tools_print_what_bpftrace_prints`: each tool that can attach here (tracepoints,
//! uprobes, profile, interval; this kernel has no kprobes) runs under bpftrace 0.17 and under
//! sonde *at the same time*, on one generated load (`tests/targets/bt_tools_load.c`, comm
//! `bt_tools_load`, doing what the tool traces), and both are stopped with SIGINT after it.
//! Running them side by side makes both see the same events, so the load's own lines match
//! byte for byte once the values that legitimately differ are masked (time of day, elapsed
//! time, latencies; and other processes' lines and counts, which are dropped). Aggregations
//! are compared by shape: labels, widths, order, and the load's own entries.
//!
//! The formats bpftrace changed after 0.17, where sonde follows the current release (0.26),
//! are undone on bpftrace's side before comparing:
//! - "Attaching N probes..." on stdout became "Attached N probes" on stderr (0.24); N must agree.
//! - A histogram's header `@name: ` lost its trailing space: `@name:`.
//! - At exit 0.17 printed an empty line for each empty map; 0.26 prints nothing for it.
//! - 0.17 kept a keyless count in a per-CPU array, so `clear(@)` zeroed it and `@: 0` was
//!   printed at exit; 0.26 keeps it in a hash, `clear` deletes it, nothing is printed.
//!
//! Where bpftrace 0.17 cannot run a tool here (runqlat: its headers do not parse; loads:
//! `avenrun` is not in /proc/kallsyms) the test asserts its error and compares sonde with the
//! output the tool's documentation shows, or asserts that sonde fails the same way.

mod common;
mod tools_support;

use common::{Output, Target, TempDir, compile_target, run_command, run_sonde_timeout};
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};
use tools_support::bpftrace::{RUN_TIMEOUT, bpftrace_017, bpftrace_dry_run, diagnostics};

const COMM: &str = "bt_tools_load";
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// A process whose stdout and stderr are collected while it runs.
struct Proc {
    child: Child,
    out: Arc<Mutex<Vec<u8>>>,
    err: Arc<Mutex<Vec<u8>>>,
    readers: Vec<JoinHandle<()>>,
}

impl Proc {
    fn start(program: impl AsRef<std::ffi::OsStr>, arg: &str) -> Proc {
        let mut cmd = Command::new(program);
        cmd.arg(arg).stdin(Stdio::null());
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("start the tracer");
        let out = Arc::new(Mutex::new(Vec::new()));
        let err = Arc::new(Mutex::new(Vec::new()));
        let pump = |mut r: Box<dyn Read + Send>, buf: Arc<Mutex<Vec<u8>>>| {
            thread::spawn(move || {
                let mut chunk = [0u8; 4096];
                while let Ok(n @ 1..) = r.read(&mut chunk) {
                    buf.lock().expect("buffer").extend_from_slice(&chunk[..n]);
                }
            })
        };
        let readers = [
            pump(Box::new(child.stdout.take().expect("piped")), out.clone()),
            pump(Box::new(child.stderr.take().expect("piped")), err.clone()),
        ];
        let readers = readers.into_iter().collect();
        Proc {
            child,
            out,
            err,
            readers,
        }
    }

    fn text(buf: &Mutex<Vec<u8>>) -> String {
        String::from_utf8_lossy(&buf.lock().expect("buffer")).into_owned()
    }

    fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Waits (up to `timeout`) until `ready` holds; false when the process exited first.
    fn wait_until(&mut self, timeout: Duration, mut ready: impl FnMut(&mut Proc) -> bool) -> bool {
        let start = Instant::now();
        while start.elapsed() < timeout {
            if ready(self) {
                return true;
            }
            if !self.running() {
                return false;
            }
            thread::sleep(Duration::from_millis(50));
        }
        false
    }

    /// SIGINT (as Ctrl-C), then waits up to `timeout` (killing it after) and collects output.
    fn stop(mut self, timeout: Duration) -> Output {
        if self.running() {
            // SAFETY: kill(2) on the pid of a child we started and have not reaped.
            unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGINT) };
        }
        let (status, timed_out) = common::wait_with_timeout(&mut self.child, timeout);
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
        Output {
            code: status.and_then(|s| s.code()),
            stdout: Proc::text(&self.out),
            stderr: Proc::text(&self.err),
            timed_out,
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits until the load `pid` is blocked reading its go line, so that what it does before
/// (starting, creating its file) happens before the tracers attach.
fn wait_in_read(pid: &str) {
    let want = format!("{} 0x0 ", libc::SYS_read);
    let start = Instant::now();
    while start.elapsed() < RUN_TIMEOUT {
        let now = std::fs::read_to_string(format!("/proc/{pid}/syscall")).unwrap_or_default();
        if now.starts_with(&want) {
            return;
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// How many perf events `pid` holds open: bpftrace 0.17 runs BEGIN before it attaches the
/// other probes, so the test waits until this count settles.
fn perf_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| {
        d.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
            .filter(|l| l.to_string_lossy() == "anon_inode:[perf_event]")
            .count()
    })
}

/// How one tool's outputs are compared.
enum Cmp {
    /// One line per event, `Snoop(pid_tok, mask, events, marker)`: the lines whose token
    /// `pid_tok` is the pid of the process (the load, or the one that printed a line containing
    /// `marker`), with the column ranges `mask` masked, plus every line that is not an event
    /// (headers, blank lines, and the process's entries in maps printed at exit). `events` is
    /// how many events of the load there are.
    Snoop(usize, Mask, usize, Option<&'static str>),
    /// A comparison of its own: (bpftrace's lines, sonde's lines).
    Custom(fn(&[String], &[String]) -> Result<(), String>),
}

struct Tool {
    name: &'static str,
    /// The load's mode (see bt_tools_load.c).
    mode: &'static str,
    /// How long the tracers keep running after the load exits (interval probes need a tick).
    linger_ms: u64,
    /// Maps empty at exit: bpftrace 0.17 printed an empty line for each.
    empty_maps: usize,
    /// Lines 0.17 printed at exit for scalar maps that `clear` zeroed.
    zeroed: &'static [&'static str],
    cmp: Cmp,
}

/// Column ranges to mask.
type Mask = &'static [(usize, usize)];
const TIME: (usize, usize) = (0, 8);
/// The command the bash that the load starts reads (then `exit`).
const BASH: Option<&str> = Some("sonde-bt-readline");

fn tools() -> Vec<Tool> {
    use Cmp::{Custom, Snoop};
    let t = |name, mode, empty_maps, cmp| Tool {
        name,
        mode,
        linger_ms: 300,
        empty_maps,
        zeroed: &[],
        cmp,
    };
    vec![
        // TIME(ms) is the time since each tracer started.
        t("execsnoop", "exec", 0, Snoop(1, &[(0, 10)], 2, None)),
        t("opensnoop", "open", 1, Snoop(0, &[], 2, None)),
        t("killsnoop", "kill", 0, Snoop(1, &[TIME], 2, None)),
        t("setuids", "setuid", 6, Snoop(1, &[TIME], 3, None)),
        t("statsnoop", "stat", 1, Snoop(0, &[], 4, None)),
        t("syncsnoop", "sync", 0, Snoop(1, &[TIME], 6, None)),
        t("naptime", "sleep", 0, Snoop(3, &[TIME], 1, None)),
        // LATms is columns 34..40.
        t(
            "gethostlatency",
            "resolve",
            2,
            Snoop(1, &[TIME, (34, 40)], 2, None),
        ),
        t("bashreadline", "bash", 0, Snoop(1, &[TIME], 2, BASH)),
        Tool {
            linger_ms: 1500,
            zeroed: &["@: 0"],
            ..t("pidpersec", "fork", 0, Custom(cmp_pidpersec))
        },
        t("syscount", "syscalls", 2, Custom(cmp_syscount)),
        t("bitesize", "io", 0, Custom(cmp_bitesize)),
        t("cpuwalk", "spin", 0, Custom(cmp_hists)),
        t("writeback", "sync", 2, Custom(cmp_writeback)),
    ]
}

/// `line` with the character ranges `mask` replaced by `#`.
fn masked(line: &str, mask: &[(usize, usize)]) -> String {
    let hide = |i: usize| mask.iter().any(|r| (r.0..r.1).contains(&i));
    let chars = line.chars().enumerate();
    chars.map(|(i, c)| if hide(i) { '#' } else { c }).collect()
}

/// The key of a map entry line `@name[key]: value`.
fn map_key(line: &str) -> Option<&str> {
    line.split_once('[')?.1.rsplit_once("]:").map(|(k, _)| k)
}

/// The lines of a snoop tool's output that are about process `pid` or are not events.
fn snoop_view(lines: &[String], pid: &str, pid_tok: usize, mask: &[(usize, usize)]) -> Vec<String> {
    // A line that is not an event but follows one continues it (an argument with a newline,
    // from another process's exec while the tools run) and goes with it.
    let mut last_event_kept = true;
    lines
        .iter()
        .filter(|l| match l.chars().next() {
            Some(c) if c.is_ascii_digit() => {
                last_event_kept = l.split_whitespace().nth(pid_tok) == Some(pid);
                last_event_kept
            }
            Some('@') => map_key(l).is_none_or(|k| k == pid || k == COMM),
            None => true,
            _ => last_event_kept,
        })
        .map(|l| match l.starts_with(|c: char| c.is_ascii_digit()) {
            true => masked(l, mask),
            false => l.clone(),
        })
        .collect()
}

fn mismatch(what: &str, b: &[String], s: &[String]) -> String {
    let (b, s) = (b.join("\n"), s.join("\n"));
    format!("{what}\n--- bpftrace 0.17:\n{b}\n--- sonde:\n{s}")
}

/// A histogram line `[lo, hi)   count |@@@  |`: its label and count, when well formed
/// (label in 16 columns, count in 8, a 52-column bar).
fn hist_line(l: &str) -> Option<(String, u64)> {
    let (head, bar) = l.split_once(" |")?;
    let bar = bar.strip_suffix('|')?;
    let ok = head.len() == 24
        && bar.len() == 52
        && bar.trim_end().chars().all(|c| c == '@')
        && (l.starts_with('[') || l.starts_with('('));
    let count = head[16..].trim().parse().ok()?;
    ok.then(|| (head[..16].trim_end().to_string(), count))
}

/// The histograms of an output: (header, [(label, count)]), and the other lines.
type Hists = Vec<(String, Vec<(String, u64)>)>;
fn hists(lines: &[String]) -> Result<(Hists, Vec<String>), String> {
    let mut out: Hists = Vec::new();
    let mut rest = Vec::new();
    for l in lines {
        if l.starts_with('@') && l.ends_with(':') {
            out.push((l.clone(), Vec::new()));
        } else if l.starts_with('[') || l.starts_with('(') {
            let row = hist_line(l).ok_or(format!("malformed histogram line {l:?}"))?;
            let hist = out
                .last_mut()
                .ok_or(format!("no histogram header: {l:?}"))?;
            hist.1.push(row);
        } else {
            rest.push(l.clone());
        }
    }
    Ok((out, rest))
}

/// cpuwalk (and any tool printing only histograms of other processes' events): the same
/// headers, histograms and bucket labels; counts are not compared.
fn cmp_hists(b: &[String], s: &[String]) -> Result<(), String> {
    let (hb, rb) = hists(b)?;
    let (hs, rs) = hists(s)?;
    let labels = |h: &Hists| -> Vec<(String, Vec<String>)> {
        h.iter()
            .map(|(n, rows)| (n.clone(), rows.iter().map(|r| r.0.clone()).collect()))
            .collect()
    };
    if rb != rs || labels(&hb) != labels(&hs) || hs.is_empty() {
        return Err(mismatch("histograms differ", b, s));
    }
    Ok(())
}

/// bitesize: the same text around the histograms, and the load's histogram identical.
fn cmp_bitesize(b: &[String], s: &[String]) -> Result<(), String> {
    let (hb, rb) = hists(b)?;
    let (hs, rs) = hists(s)?;
    let own = |h: &Hists| h.iter().find(|(n, _)| n == &format!("@[{COMM}]:")).cloned();
    let (ob, os) = (own(&hb), own(&hs));
    // Each histogram is followed by an empty line; how many depends on the other processes.
    let text = |r: &[String]| {
        let mut r = r.to_vec();
        r.dedup();
        r
    };
    if text(&rb) != text(&rs) || ob.is_none() || ob != os {
        let what = format!("load's histogram: {ob:?} vs {os:?}");
        return Err(mismatch(&what, b, s));
    }
    Ok(())
}

/// pidpersec: one `HH:MM:SS PIDs/sec: @: N` line a second (the two tracers tick at different
/// moments, so the counts are compared by their sum, which includes the load's 5 forks). In a
/// second without forks 0.17 prints `@: 0` (its zeroed array); sonde, as bpftrace 0.26,
/// prints nothing for `print(@)` of the empty map, so the next second's line follows on the
/// same line (`HH:MM:SS PIDs/sec: HH:MM:SS PIDs/sec: @: N`): the count is the last one.
fn cmp_pidpersec(b: &[String], s: &[String]) -> Result<(), String> {
    let view = |lines: &[String]| -> Result<(Vec<String>, u64), String> {
        let mut sum = 0;
        let mut v: Vec<String> = Vec::new();
        // Blank lines are left out: the exit's two newlines end an unfinished last line in
        // 0.26 (an empty map prints nothing), where 0.17 printed `@: 0` and a newline.
        for l in lines.iter().filter(|l| !l.is_empty()) {
            let m = match l.get(8..).and_then(|r| r.strip_prefix(" PIDs/sec: ")) {
                Some(n) => {
                    let n = n.rsplit(" PIDs/sec: ").next().unwrap_or(n);
                    let n = n.strip_prefix("@: ").map_or(Ok(0), str::parse::<u64>);
                    sum += n.map_err(|_| format!("count in {l:?}"))?;
                    masked(&l[..8], &[TIME]) + " PIDs/sec: #"
                }
                None => l.clone(),
            };
            if v.last() != Some(&m) || !m.starts_with('#') {
                v.push(m);
            }
        }
        Ok((v, sum))
    };
    let ((vb, nb), (vs, ns)) = (view(b)?, view(s)?);
    if vb != vs || nb < 5 || ns < 5 || vs.len() < 2 {
        return Err(mismatch(&format!("forks counted: {nb} vs {ns}"), b, s));
    }
    Ok(())
}

/// syscount: two top-10 lists sorted by count, of which only the load's entry is compared by
/// value (its 20000 getppid() and its exit); other processes' counts differ.
fn cmp_syscount(b: &[String], s: &[String]) -> Result<(), String> {
    let own = format!("@process[{COMM}]: 20001");
    let view = |lines: &[String]| -> Result<Vec<String>, String> {
        let (mut last, mut size) = ((String::new(), 0u64), 0);
        let mut v: Vec<String> = Vec::new();
        for l in lines {
            let Some((name, n)) = l.split_once('[').zip(l.rsplit_once("]: ")) else {
                (last, size) = ((String::new(), 0), 0);
                v.push(l.clone());
                continue;
            };
            let n: u64 = n.1.parse().map_err(|_| format!("count in {l:?}"))?;
            size += 1;
            if n < last.1 || size > 10 {
                return Err(format!("not a top 10 sorted by count at {l:?}"));
            }
            if l.starts_with("@syscall[110]: ") && n < 20000 {
                return Err(format!("the load's getppid calls are missing: {l:?}"));
            }
            last = (name.0.to_string(), n);
            // Where the load's entry ranks depends on the other processes.
            let m = if *l == own {
                "@process[#]: #".into()
            } else {
                format!("{}[#]: #", name.0)
            };
            if v.last() != Some(&m) {
                v.push(m);
            }
            if *l == own {
                v.insert(0, own.clone());
            }
        }
        Ok(v)
    };
    let (vb, vs) = (view(b)?, view(s)?);
    if vb != vs || vs.first() != Some(&own) {
        return Err(mismatch("top-10 lists differ", b, s));
    }
    Ok(())
}

/// writeback: no pid in its lines; the `sync` writebacks the load's sync() causes are the
/// same in both (device, pages, reason), with their time and duration masked.
fn cmp_writeback(b: &[String], s: &[String]) -> Result<(), String> {
    let view = |lines: &[String]| -> Vec<String> {
        lines
            .iter()
            .filter(|l| {
                !l.starts_with(|c: char| c.is_ascii_digit())
                    || l.split_whitespace().nth(3) == Some("sync")
            })
            .map(|l| masked(l, &[TIME, (45, usize::MAX)]))
            .collect()
    };
    let (vb, vs) = (view(b), view(s));
    if vb != vs || !vs.iter().any(|l| l.contains(" sync ")) {
        return Err(mismatch("sync writebacks differ", b, s));
    }
    Ok(())
}

/// Undoes the formats bpftrace changed after 0.17 (see the top of this file) in its output.
/// Returns the lines and the N of "Attaching N probes...".
fn normalize_017(raw: &str, tool: &Tool) -> Result<(Vec<String>, String), String> {
    let mut lines: Vec<String> = raw.lines().map(String::from).collect();
    let first: String = lines.drain(..lines.len().min(1)).collect();
    let n = first
        .strip_prefix("Attaching ")
        .and_then(|r| r.split(' ').next())
        .ok_or(format!("no \"Attaching N probes...\" line: {first:?}"))?
        .to_string();
    for l in &mut lines {
        if l.starts_with('@') && l.ends_with(": ") {
            l.pop();
        }
    }
    for z in tool.zeroed {
        if lines.last().map(String::as_str) != Some(z) {
            return Err(format!("0.17 should end with the zeroed map {z:?}"));
        }
        lines.pop();
    }
    for _ in 0..tool.empty_maps {
        if lines.pop().is_none_or(|l| !l.is_empty()) {
            return Err(format!("0.17 should print {} empty maps", tool.empty_maps));
        }
    }
    Ok((lines, n))
}

/// Runs `tool` under bpftrace 0.17 and sonde together on one load and compares.
fn compare_tool(tool: &Tool, load: &std::path::Path, dir: &TempDir) -> Result<(), String> {
    let path = format!("/usr/sbin/{}.bt", tool.name);
    let mut target = Target::spawn(load, &[dir.path().to_str().expect("utf-8"), tool.mode]);
    let pid = target.pid();
    wait_in_read(&pid);
    let mut bt = Proc::start("bpftrace", &path);
    let mut sd = Proc::start(common::sonde(), &path);
    let sonde_ready = sd.wait_until(RUN_TIMEOUT, |p| {
        Proc::text(&p.err).contains("Attached") && !Proc::text(&p.out).is_empty()
    });
    let bt_pid = bt.child.id();
    let mut stable = (0, Instant::now());
    let bt_ready = bt.wait_until(RUN_TIMEOUT, |p| {
        let n = perf_fds(bt_pid);
        if n != stable.0 {
            stable = (n, Instant::now());
        }
        Proc::text(&p.out).lines().count() >= 2
            && n > 0
            && stable.1.elapsed() > Duration::from_millis(400)
    });
    common::settle();
    target.go();
    let code = target.wait(Duration::from_secs(10));
    thread::sleep(Duration::from_millis(tool.linger_ms));
    let (b, s) = (bt.stop(STOP_TIMEOUT), sd.stop(STOP_TIMEOUT));
    let ran = |r: &Output| !r.timed_out && r.code == Some(0) && !r.stderr.contains("panicked");
    if !(sonde_ready && bt_ready && code == Some(0) && ran(&b) && ran(&s)) {
        return Err(format!(
            "run failed (ready: {sonde_ready}/{bt_ready}, load exit {code:?}, exits {:?}/{:?})\n\
             bpftrace stderr:\n{}\nsonde stderr:\n{}",
            b.code, s.code, b.stderr, s.stderr
        ));
    }
    let (blines, n) = normalize_017(&b.stdout, tool)?;
    let attached = format!("Attached {n} probe{}", if n == "1" { "" } else { "s" });
    if !s.stderr.lines().any(|l| l == attached) {
        let e = &s.stderr;
        return Err(format!("bpftrace attached {n} probes; sonde:\n{e}"));
    }
    let slines: Vec<String> = s.stdout.lines().map(String::from).collect();
    match tool.cmp {
        Cmp::Snoop(pid_tok, mask, events, marker) => {
            let who = |lines: &[String]| {
                marker.map_or(Some(pid.clone()), |m| {
                    let l = lines.iter().find(|l| l.contains(m))?;
                    l.split_whitespace().nth(pid_tok).map(String::from)
                })
            };
            let (wb, ws) = (who(&blines), who(&slines));
            let vb = snoop_view(&blines, wb.as_deref().unwrap_or("-"), pid_tok, mask);
            let vs = snoop_view(&slines, ws.as_deref().unwrap_or("-"), pid_tok, mask);
            let event = |l: &&String| l.starts_with(|c: char| c.is_ascii_digit() || c == '#');
            if vb != vs || vs.iter().filter(event).count() != events {
                let what = format!("the lines differ, or not {events} events of the load");
                return Err(mismatch(&what, &vb, &vs));
            }
            Ok(())
        }
        Cmp::Custom(f) => f(&blines, &slines),
    }
}

/// runqlat.bt: bpftrace 0.17 cannot compile it here (<linux/sched.h> does not parse without
/// the kernel's headers); sonde's output is compared with the tool's documented output
/// (runqlat_example.txt): the banner, two empty lines, then the `@usecs:` histogram.
fn runqlat_against_docs(load: &std::path::Path, dir: &TempDir) -> Result<(), String> {
    match bpftrace_dry_run("runqlat.bt") {
        Err(e) if e.contains("unknown type name '__aligned_u64'") => {}
        other => return Err(format!("bpftrace 0.17 compiles runqlat.bt now: {other:?}")),
    }
    let mut target = Target::spawn(load, &[dir.path().to_str().expect("utf-8"), "spin"]);
    wait_in_read(&target.pid());
    let mut sd = Proc::start(common::sonde(), "/usr/sbin/runqlat.bt");
    let ready = sd.wait_until(RUN_TIMEOUT, |p| Proc::text(&p.err).contains("Attached"));
    target.go();
    let code = target.wait(STOP_TIMEOUT);
    let s = sd.stop(STOP_TIMEOUT);
    let lines: Vec<String> = s.stdout.lines().map(String::from).collect();
    let (h, rest) = hists(&lines)?;
    let want = ["Tracing CPU scheduler... Hit Ctrl-C to end.", "", "", ""];
    // The labels of a log2 histogram, in order, as the docs show them.
    let mut labels = vec!["(..., 0)".to_string(), "[0]".into(), "[1]".into()];
    let unit = |v: u64| match v.trailing_zeros() / 10 {
        0 => v.to_string(),
        k => format!("{}{}", v >> (10 * k), &"KMGTPE"[k as usize - 1..k as usize]),
    };
    labels.extend((1..63).map(|k| format!("[{}, {})", unit(1u64 << k), unit(1u64 << (k + 1)))));
    let ok = ready
        && code == Some(0)
        && s.code == Some(0)
        && rest == want
        && h.len() == 1
        && h[0].0 == "@usecs:"
        && labels
            .windows(h[0].1.len())
            .any(|w| w.iter().eq(h[0].1.iter().map(|r| &r.0)));
    let why = format!("runqlat.bt under sonde:\n{}\n{}", s.stdout, s.stderr);
    ok.then_some(()).ok_or(why)
}

/// loads.bt reads the kernel's `avenrun` with kaddr(); where /proc/kallsyms does not list it
/// (a kernel built without CONFIG_KALLSYMS_ALL), bpftrace 0.17 and sonde both refuse it.
fn loads_where_avenrun_is_missing() -> Result<(), String> {
    let kallsyms = std::fs::read_to_string("/proc/kallsyms").unwrap_or_default();
    if kallsyms.lines().any(|l| l.ends_with(" avenrun")) {
        eprintln!("avenrun is in /proc/kallsyms: loads.bt not checked here");
        return Ok(());
    }
    let s = run_sonde_timeout(&["/usr/sbin/loads.bt"], RUN_TIMEOUT);
    let mut cmd = Command::new("bpftrace");
    cmd.arg("/usr/sbin/loads.bt");
    let b: Output = run_command(cmd, RUN_TIMEOUT);
    let want = ["sonde::codegen::unknown_symbol: Failed to resolve kernel symbol: avenrun"];
    let (se, be) = (&s.stderr, &b.stderr);
    let bt_says = be.contains("Failed to resolve kernel symbol: avenrun");
    let ok = s.code == Some(1) && diagnostics(se) == want && bt_says;
    ok.then_some(())
        .ok_or(format!("sonde:\n{se}\nbpftrace 0.17:\n{be}"))
}

#[test]
fn runnable_tools_print_what_bpftrace_prints() {
    if common::skip_unless_root("runnable_tools_print_what_bpftrace_prints") || !bpftrace_017() {
        return;
    }
    let dir = TempDir::new("bt-tools");
    let load = compile_target(&dir, "bt_tools_load", &["-O2", "-g"]);
    let started = Instant::now();
    let mut problems = Vec::new();
    for tool in tools() {
        let t = Instant::now();
        if let Err(e) = compare_tool(&tool, &load, &dir) {
            problems.push(format!("{}: {e}", tool.name));
        }
        eprintln!("{}: {:.1} s", tool.name, t.elapsed().as_secs_f64());
    }
    for (name, r) in [
        ("runqlat", runqlat_against_docs(&load, &dir)),
        ("loads", loads_where_avenrun_is_missing()),
    ] {
        if let Err(e) = r {
            problems.push(format!("{name}: {e}"));
        }
    }
    eprintln!("all tools: {:.1} s", started.elapsed().as_secs_f64());
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}
