//! Shared helpers for sonde's end-to-end tests: locating the binary, running it with a hard
//! timeout, building the C targets in `tests/targets/` with gcc, starting a target that waits
//! for a go signal on stdin (so the tracer can attach first), and skipping when not root.
//!
//! Every expected output in these tests was taken from bpftrace 0.17 running the same script
//! on the same target, minus its "Attaching N probes..." line (0.17 printed that on stdout;
//! sonde prints "Attached N probes" on stderr like newer bpftrace).

#![allow(dead_code)]

pub mod bytes;
pub mod rng;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Default hard limit for one sonde run.
pub const TIMEOUT: Duration = Duration::from_secs(20);

/// How long to wait for the tracer to report that its probes are attached.
pub const ATTACH_TIMEOUT: Duration = Duration::from_secs(15);

/// The kinds of the anonymous-inode files process `pid` holds (`perf_event`, `bpf_link`, ...),
/// one entry per descriptor.
pub fn anon_fds(pid: u32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|dir| {
            dir.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
                .filter_map(|l| {
                    let l = l.to_string_lossy().into_owned();
                    l.strip_prefix("anon_inode:")
                        .map(|k| k.trim_matches(['[', ']']).to_string())
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Path of the sonde binary built by cargo for these tests.
pub fn sonde() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_sonde"))
}

/// Root of the sonde source tree (where `examples/` and `tests/` live).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// What a finished process produced.
#[derive(Debug, Clone)]
pub struct Output {
    /// Exit code, `None` when killed by a signal (including our timeout kill).
    pub code: Option<i32>,
    /// Everything written to stdout.
    pub stdout: String,
    /// Everything written to stderr.
    pub stderr: String,
    /// True when the process had to be killed because it ran past its timeout.
    pub timed_out: bool,
}

impl Output {
    /// Asserts a clean run (exit code 0, no timeout, no panic) and returns stdout.
    pub fn ok_stdout(&self) -> &str {
        assert!(
            !self.timed_out,
            "timed out\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        assert!(!self.stderr.contains("panicked"), "panic:\n{}", self.stderr);
        assert_eq!(
            self.code,
            Some(0),
            "exit code\nstdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        &self.stdout
    }
}

fn collect(mut r: impl Read + Send + 'static) -> JoinHandle<String> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    })
}

fn status_code(status: ExitStatus) -> Option<i32> {
    status.code()
}

/// Waits for `child` up to `timeout`; kills it (SIGKILL) when it runs past. Returns its status
/// (`None` when it had to be killed) and whether it timed out.
pub fn wait_with_timeout(child: &mut Child, timeout: Duration) -> (Option<ExitStatus>, bool) {
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(st)) => return (Some(st), false),
            Ok(None) => {}
            Err(_) => return (None, false),
        }
        if start.elapsed() >= timeout {
            let _ = child.kill();
            let st = child.wait().ok();
            return (st, true);
        }
        thread::sleep(Duration::from_millis(20));
    }
}

/// Runs `cmd` (stdin closed) with a hard timeout and returns what it printed.
pub fn run_command(mut cmd: Command, timeout: Duration) -> Output {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot spawn {cmd:?}: {e}"));
    let out = collect(child.stdout.take().expect("stdout piped"));
    let err = collect(child.stderr.take().expect("stderr piped"));
    let (status, timed_out) = wait_with_timeout(&mut child, timeout);
    Output {
        code: status.and_then(status_code),
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
        timed_out,
    }
}

/// Runs sonde with `args` and the default timeout.
pub fn run_sonde(args: &[&str]) -> Output {
    run_sonde_timeout(args, TIMEOUT)
}

/// Runs sonde with `args` and a hard timeout.
pub fn run_sonde_timeout(args: &[&str], timeout: Duration) -> Output {
    let mut cmd = Command::new(sonde());
    cmd.args(args);
    run_command(cmd, timeout)
}

/// The non-empty lines, trimmed, of the README's first code block after the heading
/// `heading` (README examples are run by the tests as written).
pub fn readme_block(heading: &str) -> Vec<String> {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let section = readme
        .split(heading)
        .nth(1)
        .unwrap_or_else(|| panic!("the README has no `{heading}`"));
    let block = section.split("```").nth(1).expect("its example block");
    block
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// The cgroup2 mount: `/sys/fs/cgroup/unified` on a hybrid hierarchy, else `/sys/fs/cgroup`.
pub fn cgroup2_root() -> &'static Path {
    let unified = Path::new("/sys/fs/cgroup/unified");
    match unified.join("cgroup.controllers").exists() {
        true => unified,
        false => Path::new("/sys/fs/cgroup"),
    }
}

/// True when running as root (needed to load eBPF programs).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Returns true (and prints why) when the test must be skipped because it is not root.
pub fn skip_unless_root(test: &str) -> bool {
    if is_root() {
        return false;
    }
    eprintln!("skipping {test}: loading eBPF programs needs root");
    true
}

/// A uniquely named directory under the system temp dir, removed on drop.
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    /// Creates a fresh directory named after `tag`, this process and a counter.
    pub fn new(tag: &str) -> TempDir {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let path = std::env::temp_dir().join(format!(
            "sonde-e2e-{tag}-{}-{n}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&path)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", path.display()));
        TempDir { path }
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Compiles `tests/targets/<name>.c` with gcc (`-O2 -g`) into `dir` and returns the binary's
/// path.
pub fn build_target(dir: &TempDir, name: &str) -> PathBuf {
    compile_target(dir, name, &["-O2", "-g"])
}

/// Compiles `tests/targets/<name>.c` with gcc and `flags` into `dir/<name>`.
pub fn compile_target(dir: &TempDir, name: &str, flags: &[&str]) -> PathBuf {
    let src = repo_root().join("tests/targets").join(format!("{name}.c"));
    let bin = dir.path().join(name);
    let out = Command::new("gcc")
        .args(flags)
        .arg("-o")
        .arg(&bin)
        .arg(&src)
        .output()
        .unwrap_or_else(|e| panic!("cannot run gcc: {e}"));
    assert!(
        out.status.success(),
        "gcc failed for {} (are the packages .ci/run installs there?):\n{}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    bin
}

/// A target process that is blocked reading its go line from stdin.
pub struct Target {
    child: Child,
    stdin: Option<ChildStdin>,
}

impl Target {
    /// Starts `bin` with `args`; the target must wait for a line on stdin before acting.
    pub fn spawn(bin: &Path, args: &[&str]) -> Target {
        let mut child = Command::new(bin)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
        let stdin = child.stdin.take();
        Target { child, stdin }
    }

    /// The target's pid (as a string, ready to be passed as `$1`).
    pub fn pid(&self) -> String {
        self.child.id().to_string()
    }

    /// Sends the go line: the target starts firing its events.
    pub fn go(&mut self) {
        if let Some(mut s) = self.stdin.take() {
            let _ = s.write_all(b"go\n");
        }
    }

    /// Waits for the target to exit (killing it after `timeout`) and returns its exit code.
    pub fn wait(&mut self, timeout: Duration) -> Option<i32> {
        self.stdin.take();
        let (st, _) = wait_with_timeout(&mut self.child, timeout);
        st.and_then(status_code)
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A running sonde whose stderr is watched for the "Attached" line.
pub struct Tracer {
    child: Child,
    stdout: Option<JoinHandle<String>>,
    stderr_lines: Receiver<String>,
    stderr_seen: Vec<String>,
    stderr_thread: Option<JoinHandle<()>>,
}

impl Tracer {
    /// Starts sonde with `args` (stdin closed, stdout and stderr captured).
    pub fn start(args: &[&str]) -> Tracer {
        let mut child = Command::new(sonde())
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start sonde: {e}"));
        let stdout = collect(child.stdout.take().expect("stdout piped"));
        let err = child.stderr.take().expect("stderr piped");
        let (tx, rx) = mpsc::channel();
        let stderr_thread = thread::spawn(move || {
            for line in BufReader::new(err).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Tracer {
            child,
            stdout: Some(stdout),
            stderr_lines: rx,
            stderr_seen: Vec::new(),
            stderr_thread: Some(stderr_thread),
        }
    }

    /// Waits until sonde prints "Attached ..." on stderr. Returns false when it exited or
    /// the timeout passed first (the caller goes on; the output comparison then fails).
    pub fn wait_attached(&mut self, timeout: Duration) -> bool {
        let start = Instant::now();
        while start.elapsed() < timeout {
            match self.stderr_lines.recv_timeout(Duration::from_millis(50)) {
                Ok(line) => {
                    let attached = line.starts_with("Attached");
                    self.stderr_seen.push(line);
                    if attached {
                        return true;
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if let Ok(Some(_)) = self.child.try_wait() {
                        return false;
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => return false,
            }
        }
        false
    }

    /// The stderr lines read so far (up to the "Attached" line after
    /// [`Tracer::wait_attached`]).
    #[allow(dead_code)] // Not every test file that includes this module reads it.
    pub fn stderr_so_far(&self) -> &[String] {
        &self.stderr_seen
    }

    /// sonde's pid.
    #[allow(dead_code)] // Not every test file that includes this module reads it.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// True while sonde is still running.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Sends SIGINT (what Ctrl-C does): sonde prints its maps and exits.
    pub fn interrupt(&mut self) {
        if self.running() {
            // SAFETY: plain kill(2) on the pid of a child we started and have not reaped.
            unsafe {
                libc::kill(self.child.id() as libc::pid_t, libc::SIGINT);
            }
        }
    }

    /// Waits (up to `timeout`, then kills) for sonde to exit and returns its output.
    pub fn finish(mut self, timeout: Duration) -> Output {
        let (status, timed_out) = wait_with_timeout(&mut self.child, timeout);
        let stdout = self
            .stdout
            .take()
            .map(|h| h.join().unwrap_or_default())
            .unwrap_or_default();
        if let Some(h) = self.stderr_thread.take() {
            let _ = h.join();
        }
        let mut lines = std::mem::take(&mut self.stderr_seen);
        lines.extend(self.stderr_lines.try_iter());
        let mut stderr = lines.join("\n");
        if !stderr.is_empty() {
            stderr.push('\n');
        }
        Output {
            code: status.and_then(status_code),
            stdout,
            stderr,
            timed_out,
        }
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A short pause after the "Attached" message before the target is let go: a margin for
/// tracers that print the message just before the last attach completes. Override with
/// `SONDE_E2E_SETTLE_MS` (e.g. when pointing the suite at a slower reference tracer).
pub fn settle() {
    let ms = std::env::var("SONDE_E2E_SETTLE_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    thread::sleep(Duration::from_millis(ms));
}

/// Runs the usual traced scenario: start sonde with `args`, wait until attached, let the
/// target go, wait for it to exit, give sonde a moment, then SIGINT it and collect output.
pub fn trace_target(args: &[&str], target: &mut Target) -> Output {
    let mut tracer = Tracer::start(args);
    let attached = tracer.wait_attached(ATTACH_TIMEOUT);
    settle();
    target.go();
    let code = target.wait(Duration::from_secs(10));
    assert_eq!(code, Some(0), "target failed (attached: {attached})");
    thread::sleep(Duration::from_millis(300));
    tracer.interrupt();
    tracer.finish(Duration::from_secs(10))
}

/// The expected stdout of a run that printed `body` (from printf/print/time) and then, at
/// exit, the maps `maps`: bpftrace 0.17 writes two newlines between the two.
pub fn with_exit_maps(body: &str, maps: &str) -> String {
    format!("{body}\n\n{maps}")
}
