//! Running sonde (or another command) on bytes: stdin from nothing, a file or a pipe written
//! in chunks, stdout kept as bytes, with a hard time limit.

use super::rng::Rng;
use super::{TempDir, sonde, wait_with_timeout};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread::{self, JoinHandle};
use std::time::Duration;

/// Hard limit for one run of sonde or mawk.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(20);

/// What a finished process printed, as bytes.
pub struct Raw {
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: String,
    pub timed_out: bool,
}

impl Raw {
    /// Asserts a clean run and returns stdout.
    pub fn ok(&self, what: &str) -> &[u8] {
        assert!(
            !self.timed_out,
            "{what}: timed out\nstderr:\n{}",
            self.stderr
        );
        assert!(
            !self.stderr.contains("panicked"),
            "{what}: panic:\n{}",
            self.stderr
        );
        assert_eq!(
            self.code,
            Some(0),
            "{what}: exit code\nstderr:\n{}",
            self.stderr
        );
        &self.stdout
    }
}

/// Where a command's stdin comes from.
pub enum Input<'a> {
    /// `/dev/null`.
    Null,
    /// The file itself (a regular file on fd 0).
    File(&'a Path),
    /// A pipe, written by a thread in chunks of random sizes.
    Pipe(&'a [u8], u64),
}

/// Reads `r` to its end on a thread.
pub fn read_all(mut r: impl Read + Send + 'static) -> JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        buf
    })
}

/// Runs `cmd` with `input` on stdin and a hard timeout.
pub fn run_raw(mut cmd: Command, input: Input<'_>) -> Raw {
    cmd.stdin(match input {
        Input::Null => Stdio::null(),
        Input::File(p) => Stdio::from(
            std::fs::File::open(p).unwrap_or_else(|e| panic!("open {}: {e}", p.display())),
        ),
        Input::Pipe(..) => Stdio::piped(),
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot spawn {cmd:?}: {e}"));
    let writer = match input {
        Input::Pipe(data, seed) => {
            let mut stdin = child.stdin.take().expect("stdin piped");
            let data = data.to_vec();
            Some(thread::spawn(move || {
                let mut rng = Rng::new(seed);
                let mut at = 0;
                while at < data.len() {
                    let n = (1 + rng.below(9000)).min(data.len() - at);
                    if stdin.write_all(&data[at..at + n]).is_err() {
                        break;
                    }
                    at += n;
                }
            }))
        }
        _ => None,
    };
    let out = read_all(child.stdout.take().expect("stdout piped"));
    let err = read_all(child.stderr.take().expect("stderr piped"));
    let (status, timed_out) = wait_with_timeout(&mut child, RUN_TIMEOUT);
    if let Some(w) = writer {
        let _ = w.join();
    }
    Raw {
        code: status.and_then(|s| s.code()),
        stdout: out.join().unwrap_or_default(),
        stderr: String::from_utf8_lossy(&err.join().unwrap_or_default()).into_owned(),
        timed_out,
    }
}

/// Runs sonde with `args` and `input` on stdin.
pub fn sonde_raw(args: &[&str], input: Input<'_>) -> Raw {
    let mut cmd = Command::new(sonde());
    cmd.args(args);
    run_raw(cmd, input)
}

/// Runs sonde with `args` and `stdin` as its standard input.
pub fn sonde_with_stdin(args: &[&str], stdin: &[u8]) -> Raw {
    sonde_raw(args, Input::Pipe(stdin, 1))
}

/// Bytes as text (lossy).
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Writes `data` to `dir/name` and returns the path.
pub fn write_file(dir: &TempDir, name: &str, data: &[u8]) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, data).unwrap_or_else(|e| panic!("write {}: {e}", p.display()));
    p
}
