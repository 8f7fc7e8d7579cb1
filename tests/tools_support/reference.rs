//! A reference tool found and run by path (the side-by-side tests of syscount, runqlat,
//! biolatency, opensnoop and execsnoop; `libbpf` has the others' helpers): bcc's libbpf-tools (Debian's `libbpf-tools` package: /usr/sbin/syscount, runqlat, ...),
//! the reference the shipped tools are compared with side by side: run at the same time as
//! sonde's tool on the same load, stopped with SIGINT after it.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// The path of libbpf-tools' NAME, if it is installed.
pub fn reference(name: &str) -> Option<PathBuf> {
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

/// A running libbpf tool, its stdout line-buffered (through stdbuf) and collected.
pub struct Reference {
    child: Child,
    out: Arc<Mutex<Vec<u8>>>,
    reader: Option<JoinHandle<()>>,
}

impl Reference {
    /// Starts `bin` with `args`.
    pub fn start(bin: &Path, args: &[&str]) -> Reference {
        let mut child = Command::new("stdbuf")
            .arg("-oL")
            .arg(bin)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the reference tool");
        let out = Arc::new(Mutex::new(Vec::new()));
        let mut stdout = child.stdout.take().expect("stdout piped");
        let buf = out.clone();
        let reader = thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n @ 1..) = stdout.read(&mut chunk) {
                buf.lock().expect("buffer").extend_from_slice(&chunk[..n]);
            }
        });
        Reference {
            child,
            out,
            reader: Some(reader),
        }
    }

    /// What it printed so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.out.lock().expect("buffer")).into_owned()
    }

    /// Waits until its output contains `what` (its banner, printed once attached).
    pub fn wait_for(&mut self, what: &str, timeout: Duration) -> bool {
        let start = Instant::now();
        while start.elapsed() < timeout {
            if self.text().contains(what) {
                return true;
            }
            if let Ok(Some(_)) = self.child.try_wait() {
                return false;
            }
            thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// Sends SIGINT, waits (up to `timeout`, then kills) and returns its output.
    pub fn finish(mut self, timeout: Duration) -> String {
        // SAFETY: kill(2) on the pid of a child we started and have not reaped. stdbuf
        // execs the tool, so the pid is the tool's.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGINT);
        }
        let (_, _) = crate::common::wait_with_timeout(&mut self.child, timeout);
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        self.text()
    }
}

impl Drop for Reference {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
