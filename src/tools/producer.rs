//! A tool's producer: the hidden command its header names (`PRODUCER: __NAME`), run as
//! `sonde __NAME --flag=value ...` with the tool's flags, whose standard output becomes the
//! standard input of the tool's `input` script. `allocreplay`'s producer replays a
//! recording and writes its measurements as lines the script reads.

use std::os::fd::AsRawFd;
use std::process::{Child, Command, ExitStatus, Stdio};

/// A producer running, its output on this process's standard input.
pub struct Producer {
    child: Child,
}

impl Producer {
    /// Starts `sonde COMMAND` with `named` as `--key=value` (`--key` for a flag without a
    /// value) and connects its standard output to this process's standard input.
    pub fn start(command: &str, named: &[(String, String)]) -> Result<Producer, String> {
        let exe = std::env::current_exe().map_err(|e| format!("cannot find sonde: {e}"))?;
        let args = named.iter().map(|(k, v)| match v.is_empty() {
            true => format!("--{k}"),
            false => format!("--{k}={v}"),
        });
        let mut child = Command::new(exe)
            .arg(command)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start the tool's producer: {e}"))?;
        let out = child.stdout.take().expect("piped stdout");
        // SAFETY: dup2 onto standard input of a descriptor this process owns.
        if unsafe { libc::dup2(out.as_raw_fd(), 0) } < 0 {
            let e = std::io::Error::last_os_error();
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("cannot read the tool's producer: {e}"));
        }
        Ok(Producer { child })
    }

    /// Waits for the producer to end: its exit status.
    pub fn wait(mut self) -> std::io::Result<ExitStatus> {
        // Its output is read to the end by the script; close our copy so that a producer
        // still writing (the script stopped early) gets EPIPE instead of blocking.
        unsafe { libc::close(0) };
        self.child.wait()
    }
}
