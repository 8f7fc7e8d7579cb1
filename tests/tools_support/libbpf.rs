//! Helpers of the side-by-side tests with libbpf-tools (bcc's CO-RE tools, `/usr/sbin/NAME`,
//! Debian's `libbpf-tools` package that .ci/test installs): the reference tool runs next to
//! `sonde tool NAME` on the same load, and the test compares their header lines and the rows
//! of the load's own processes.

use crate::common::{ATTACH_TIMEOUT, Output, Target, Tracer, settle, wait_with_timeout};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// How long a tracer gets to stop after SIGINT before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// The path of libbpf-tools' `tool`; panics when it is missing (.ci/test installs it).
pub fn reference(tool: &str) -> String {
    let path = format!("/usr/sbin/{tool}");
    assert!(
        Path::new(&path).exists(),
        "{path} is missing: install libbpf-tools (.ci/test does)"
    );
    path
}

/// The path of libbpf-tools' `name` when it runs here; when it does not, says that the
/// side-by-side test is skipped.
pub fn installed(name: &str) -> Option<PathBuf> {
    let p = Path::new("/usr/sbin").join(name);
    let runs = Command::new(&p)
        .arg("--help")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !runs {
        eprintln!(
            "skipping the side-by-side test: {} is not installed",
            p.display()
        );
    }
    runs.then_some(p)
}

/// A running libbpf-tools tool, its stdout line-buffered (`stdbuf -oL`) so that its header
/// line, which it prints once attached, tells that it is ready.
pub struct Reference {
    child: Child,
    out: Arc<Mutex<Vec<u8>>>,
    err: Arc<Mutex<Vec<u8>>>,
    readers: Vec<JoinHandle<()>>,
}

fn pump(mut r: impl Read + Send + 'static, buf: Arc<Mutex<Vec<u8>>>) -> JoinHandle<()> {
    thread::spawn(move || {
        let mut chunk = [0u8; 4096];
        while let Ok(n @ 1..) = r.read(&mut chunk) {
            buf.lock().expect("buffer").extend_from_slice(&chunk[..n]);
        }
    })
}

impl Reference {
    /// Starts `/usr/sbin/TOOL ARGS`.
    pub fn start(tool: &str, args: &[&str]) -> Reference {
        Reference::start_path(Path::new(&reference(tool)), args)
    }

    /// Starts the tool at `bin` with `args`.
    pub fn start_path(bin: &Path, args: &[&str]) -> Reference {
        let mut child = Command::new("stdbuf")
            .arg("-oL")
            .arg(bin)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the reference tool");
        let out = Arc::new(Mutex::new(Vec::new()));
        let err = Arc::new(Mutex::new(Vec::new()));
        let readers = vec![
            pump(child.stdout.take().expect("piped"), out.clone()),
            pump(child.stderr.take().expect("piped"), err.clone()),
        ];
        Reference {
            child,
            out,
            err,
            readers,
        }
    }

    /// Waits (up to `timeout`) for its first line of output; false when it exited first.
    pub fn wait_ready(&mut self, timeout: Duration) -> bool {
        let start = Instant::now();
        while start.elapsed() < timeout {
            if self.out.lock().expect("buffer").contains(&b'\n') {
                return true;
            }
            if !matches!(self.child.try_wait(), Ok(None)) {
                return false;
            }
            thread::sleep(Duration::from_millis(50));
        }
        false
    }

    /// What it printed on stdout so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.out.lock().expect("buffer")).into_owned()
    }

    /// Waits (up to `timeout`) until its stdout holds `what` (its banner, printed once
    /// attached); false when it exited first.
    pub fn wait_for(&mut self, what: &str, timeout: Duration) -> bool {
        let start = Instant::now();
        while start.elapsed() < timeout {
            if self.text().contains(what) {
                return true;
            }
            if !matches!(self.child.try_wait(), Ok(None)) {
                return false;
            }
            thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// [`Reference::stop_within`] `timeout`, its stdout.
    pub fn finish(self, timeout: Duration) -> String {
        self.stop_within(timeout).stdout
    }

    /// SIGINT (as Ctrl-C), without waiting.
    pub fn interrupt(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            // SAFETY: kill(2) on the pid of a child we started and have not reaped.
            unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGINT) };
        }
    }

    /// SIGINT (as Ctrl-C), then waits (killing it after a timeout) and collects its output.
    pub fn stop(self) -> Output {
        self.stop_within(STOP_TIMEOUT)
    }

    /// SIGINT, then waits up to `timeout` (killing it after) and collects its output.
    pub fn stop_within(mut self, timeout: Duration) -> Output {
        if matches!(self.child.try_wait(), Ok(None)) {
            // SAFETY: kill(2) on the pid of a child we started and have not reaped.
            unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGINT) };
        }
        let (status, timed_out) = wait_with_timeout(&mut self.child, timeout);
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
        let text =
            |b: &Mutex<Vec<u8>>| String::from_utf8_lossy(&b.lock().expect("buffer")).into_owned();
        Output {
            code: status.and_then(|s| s.code()),
            stdout: text(&self.out),
            stderr: text(&self.err),
            timed_out,
        }
    }
}

impl Drop for Reference {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `sonde tool TOOL ARGS` and `/usr/sbin/TOOL REF_ARGS` side by side on `target`: both
/// attached, the target let go and waited for, then both stopped. Returns (sonde, reference).
pub fn side_by_side(
    tool: &str,
    args: &[&str],
    ref_args: &[&str],
    target: &mut Target,
) -> (Output, Output) {
    let mut code = None;
    let outs = side_by_side_on(tool, args, ref_args, || {
        target.go();
        code = target.wait(Duration::from_secs(10));
    });
    assert_eq!(code, Some(0), "the load failed");
    outs
}

/// Runs `sonde tool TOOL ARGS` and `/usr/sbin/TOOL REF_ARGS` side by side on the load that
/// `load` runs (a load that is not a [`Target`]: busy loops for a while, writes to a disk):
/// both attached (the reference's first line printed), `load` run, then both stopped.
/// Returns (sonde, reference).
pub fn side_by_side_on(
    tool: &str,
    args: &[&str],
    ref_args: &[&str],
    load: impl FnOnce(),
) -> (Output, Output) {
    let mut sonde_args = vec!["tool", tool];
    sonde_args.extend_from_slice(args);
    let mut sonde = Tracer::start(&sonde_args);
    let mut bcc = Reference::start(tool, ref_args);
    let attached = sonde.wait_attached(ATTACH_TIMEOUT);
    let ready = bcc.wait_ready(ATTACH_TIMEOUT);
    settle();
    load();
    thread::sleep(Duration::from_millis(500));
    // Both stopped at once: counts of machine-wide events (interrupts, I/O) cover the same
    // time.
    sonde.interrupt();
    bcc.interrupt();
    let (sonde, bcc) = (sonde.finish(STOP_TIMEOUT), bcc.stop());
    assert!(attached, "sonde did not attach: {}", sonde.stderr);
    assert!(ready, "{tool} did not start: {}", bcc.stderr);
    (sonde, bcc)
}

/// The rows of `text` (after its header line, blank lines left out) that `keep` selects, split on whitespace, with
/// the columns `skip` names (times, which differ between two tools) left out.
pub fn rows(text: &str, skip: &[usize], keep: impl Fn(&[&str]) -> bool) -> Vec<Vec<String>> {
    let mut rows: Vec<Vec<String>> = text
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|cols| !cols.is_empty() && keep(cols))
        .map(|cols| {
            let kept = cols.iter().enumerate().filter(|(i, _)| !skip.contains(i));
            kept.map(|(_, c)| c.to_string()).collect()
        })
        .collect();
    rows.sort();
    rows
}
