//! The system calls a harness makes during its replay, counted by a sonde probe: a child
//! `sonde` running `tracepoint:raw_syscalls:sys_enter` filtered on the name the replay
//! threads carry (`comm`), started before the harness and stopped (SIGINT) after it; its
//! `-f json` map is read back.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

/// How long the counter may take to attach, and to print its map once stopped.
const WAIT: Duration = Duration::from_secs(30);

/// A running counter.
pub struct Counter {
    child: Child,
    lines: Receiver<String>,
}

/// The probe: system calls by name, of threads named `marker`.
fn script(marker: &str) -> String {
    format!(
        "tracepoint:raw_syscalls:sys_enter /comm == \"{marker}\"/ {{ @[syscall_name(args.id)] = count(); }}"
    )
}

/// Waits for a line that contains `what`; the lines before it are dropped (the last
/// error line the counter wrote is its reason if it ends first).
fn wait_for(lines: &Receiver<String>, what: &str) -> Result<String, String> {
    let end = Instant::now() + WAIT;
    let mut said = String::new();
    loop {
        let left = end.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(l) if l.contains(what) => return Ok(l),
            Ok(l) => {
                if let Some(e) = l.strip_prefix("stderr: ").filter(|e| !e.trim().is_empty()) {
                    said = e.trim().to_string();
                }
            }
            Err(RecvTimeoutError::Timeout) => {
                return Err(format!("it did not attach within {}s", WAIT.as_secs()));
            }
            Err(RecvTimeoutError::Disconnected) if said.is_empty() => {
                return Err("it ended before attaching".into());
            }
            Err(RecvTimeoutError::Disconnected) => return Err(format!("it ended: {said}")),
        }
    }
}

impl Counter {
    /// Starts counting the system calls of threads named `marker`, once attached.
    pub fn start(sonde: &Path, marker: &str) -> Result<Counter, String> {
        let mut child = Command::new(sonde)
            .args(["-f", "json", "-e", &script(marker)])
            .env_remove("LD_PRELOAD")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", sonde.display()))?;
        let (tx, lines) = channel();
        let out = child.stdout.take().expect("piped stdout");
        let err = child.stderr.take().expect("piped stderr");
        let tx2 = tx.clone();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(l);
            }
        });
        std::thread::spawn(move || {
            for l in BufReader::new(err).lines().map_while(Result::ok) {
                let _ = tx2.send(format!("stderr: {l}"));
            }
        });
        let mut c = Counter { child, lines };
        match wait_for(&c.lines, "Attached ") {
            Ok(_) => Ok(c),
            Err(e) => {
                let _ = c.child.kill();
                let _ = c.child.wait();
                Err(format!("the system call counter did not attach: {e}"))
            }
        }
    }

    /// Stops counting: the counts by system call name (none when no call was seen: the
    /// counter prints no empty map).
    pub fn stop(mut self) -> Result<Vec<(String, u64)>, String> {
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGINT) };
        let end = Instant::now() + WAIT;
        let mut map = None;
        loop {
            match self
                .lines
                .recv_timeout(end.saturating_duration_since(Instant::now()))
            {
                Ok(l) if l.contains("\"type\": \"map\"") => map = Some(l),
                Ok(_) => {}
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return Err(format!(
                        "the system call counter did not stop within {}s",
                        WAIT.as_secs()
                    ));
                }
            }
        }
        let status = self.child.wait().map_err(|e| e.to_string())?;
        match map {
            Some(l) => parse(&l),
            None if status.success() => Ok(Vec::new()),
            None => Err(format!("the system call counter failed ({status})")),
        }
    }
}

/// The counts of a `{"type": "map", "data": {"@": {NAME: N, ...}}}` record.
fn parse(line: &str) -> Result<Vec<(String, u64)>, String> {
    let v: serde_json::Value =
        serde_json::from_str(line).map_err(|e| format!("the system call counter: {e}"))?;
    let mut counts: Vec<(String, u64)> = v["data"]["@"]
        .as_object()
        .map(|o| {
            o.iter()
                .map(|(k, n)| (k.clone(), n.as_u64().unwrap_or(0)))
                .collect()
        })
        .unwrap_or_default();
    counts.sort();
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counter_s_map_is_read_by_name() {
        let got = parse(r#"{"type": "map", "data": {"@": {"mmap": 21, "brk": 3}}}"#);
        assert_eq!(got, Ok(vec![("brk".into(), 3), ("mmap".into(), 21)]));
        // No call at all prints an empty map.
        assert_eq!(parse(r#"{"type": "map", "data": {"@": {}}}"#), Ok(vec![]));
        assert!(script("sar1-0").contains("comm == \"sar1-0\""));
    }
}
