//! One script of `sonde serve`: a sonde process of its own (`sonde --metrics 127.0.0.1:0
//! SCRIPT`), so that a script that fails, or is being reloaded, takes nothing else down.
//! Its output lines are passed on prefixed with its name; the address it serves on is read
//! from its announcement.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// How much of a failed script's error output is kept for `/scripts`.
const KEPT_ERROR_LINES: usize = 20;

/// What a script is doing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum State {
    /// Started, not serving yet.
    Starting,
    /// Serving on this address.
    Running(String),
    /// Ended (its exit code, if it exited) and not restarted until its file changes.
    Failed(Option<i32>),
}

/// What the supervisor knows of a script file (to tell that it changed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Signature {
    modified: Option<SystemTime>,
    len: u64,
}

impl Signature {
    /// The signature of the file at `path` now.
    pub fn of(path: &Path) -> Option<Signature> {
        let m = std::fs::metadata(path).ok()?;
        Some(Signature {
            modified: m.modified().ok(),
            len: m.len(),
        })
    }
}

/// The shared state of a script's process, updated by its output readers.
#[derive(Debug)]
pub struct Status {
    /// What it is doing.
    pub state: State,
    /// Its last error output lines.
    pub errors: Vec<String>,
}

/// A script's process.
#[derive(Debug)]
pub struct ScriptProcess {
    /// The script's name (its file's stem).
    pub name: String,
    /// Its file.
    pub path: PathBuf,
    /// The file's signature when it was started.
    pub signature: Option<Signature>,
    child: Option<Child>,
    /// Its state and errors.
    pub status: Arc<Mutex<Status>>,
}

impl ScriptProcess {
    /// Starts `exe` (sonde itself) on the script at `path` with `args` before it.
    pub fn start(exe: &Path, path: &Path, name: &str, args: &[String]) -> ScriptProcess {
        let status = Arc::new(Mutex::new(Status {
            state: State::Starting,
            errors: Vec::new(),
        }));
        let mut cmd = Command::new(exe);
        cmd.args(["--metrics", "127.0.0.1:0", "--metrics-name", name])
            .args(args)
            .arg(path)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // SAFETY: prctl in the child before exec: it is killed when the supervisor dies.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                Ok(())
            });
        }
        let child = match cmd.spawn() {
            Ok(mut c) => {
                pass_on(c.stdout.take(), name, false, status.clone());
                pass_on(c.stderr.take(), name, true, status.clone());
                Some(c)
            }
            Err(e) => {
                let mut s = status.lock().expect("status lock");
                s.state = State::Failed(None);
                s.errors.push(format!("cannot start: {e}"));
                None
            }
        };
        ScriptProcess {
            name: name.to_string(),
            path: path.to_path_buf(),
            signature: Signature::of(path),
            child,
            status,
        }
    }

    /// Notices an exit: the script is then failed until its file changes.
    pub fn poll(&mut self) {
        let Some(c) = self.child.as_mut() else {
            return;
        };
        if let Ok(Some(st)) = c.try_wait() {
            self.child = None;
            let mut s = self.status.lock().expect("status lock");
            s.state = State::Failed(st.code());
            eprintln!(
                "[{}] the script ended ({st}); it restarts when its file changes",
                self.name
            );
        }
    }

    /// Where it serves, when it does.
    pub fn addr(&self) -> Option<String> {
        match &self.status.lock().expect("status lock").state {
            State::Running(a) => Some(a.clone()),
            _ => None,
        }
    }

    /// Stops it (SIGTERM, then SIGKILL after 5 s).
    pub fn stop(&mut self) {
        let Some(mut c) = self.child.take() else {
            return;
        };
        // SAFETY: kill(2) on our own child, not reaped yet.
        unsafe {
            libc::kill(c.id() as libc::pid_t, libc::SIGTERM);
        }
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(_)) = c.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = c.kill();
        let _ = c.wait();
    }
}

impl Drop for ScriptProcess {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Passes a script's output lines on, prefixed with its name; on stderr, reads the address
/// it announces and keeps its last error lines.
fn pass_on<R: std::io::Read + Send + 'static>(
    from: Option<R>,
    name: &str,
    is_stderr: bool,
    status: Arc<Mutex<Status>>,
) {
    let Some(from) = from else { return };
    let name = name.to_string();
    std::thread::spawn(move || {
        for line in BufReader::new(from).lines() {
            let Ok(line) = line else { break };
            if !is_stderr {
                println!("[{name}] {line}");
                continue;
            }
            let mut s = status.lock().expect("status lock");
            if let Some(addr) = line
                .strip_prefix("Serving metrics on http://")
                .and_then(|a| a.strip_suffix("/metrics"))
            {
                s.state = State::Running(addr.to_string());
                continue;
            }
            eprintln!("[{name}] {line}");
            if line.starts_with("Attached ") {
                continue;
            }
            s.errors.push(line);
            if s.errors.len() > KEPT_ERROR_LINES {
                s.errors.remove(0);
            }
        }
    });
}
