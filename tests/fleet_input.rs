//! `--metrics` on the userspace engine (an `input` script, no root needed): counters served
//! while lines arrive, kept monotonic across `clear()`, and a map of a million keys capped
//! to `--metrics-max-series` with the rest counted, in bounded time and memory.

mod common;
mod fleet_support;

use fleet_support::get;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

/// sonde on an `input` script reading the pipe the test writes, serving on a port it
/// announces.
struct InputRun {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Option<std::thread::JoinHandle<String>>,
    addr: String,
}

impl InputRun {
    fn start(script: &str, extra: &[&str]) -> InputRun {
        let mut child = Command::new(common::sonde())
            .args(["--metrics", "127.0.0.1:0", "--metrics-name", "in"])
            .args(extra)
            .args(["-e", script])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("sonde starts");
        let stdin = child.stdin.take();
        let mut err = BufReader::new(child.stderr.take().expect("stderr"));
        let mut line = String::new();
        let mut addr = None;
        while err.read_line(&mut line).is_ok_and(|n| n > 0) {
            if let Some(a) = line.trim().strip_prefix("Serving metrics on http://") {
                addr = a.strip_suffix("/metrics").map(str::to_string);
                break;
            }
            line.clear();
        }
        std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
        let mut out = child.stdout.take().expect("stdout");
        let stdout = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::io::Read::read_to_string(&mut out, &mut s);
            s
        });
        InputRun {
            child,
            stdin,
            stdout: Some(stdout),
            addr: addr.expect("an address announced"),
        }
    }

    fn send(&mut self, lines: &str) {
        let s = self.stdin.as_mut().expect("stdin open");
        s.write_all(lines.as_bytes()).unwrap();
        s.flush().unwrap();
    }

    /// The metrics once `want` is in them (up to 20 s).
    fn metrics_with(&self, want: &str) -> String {
        let start = Instant::now();
        let mut last = String::new();
        while start.elapsed() < Duration::from_secs(20) {
            if let Some((200, b)) = get(&self.addr, "/metrics", None) {
                last = String::from_utf8_lossy(&b).into_owned();
                if last.contains(want) {
                    break;
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        last
    }

    /// Closes the input and returns what sonde printed.
    fn finish(mut self) -> String {
        self.stdin.take();
        let (st, timed_out) = common::wait_with_timeout(&mut self.child, Duration::from_secs(60));
        assert!(!timed_out && st.is_some_and(|s| s.success()), "{st:?}");
        self.stdout
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for InputRun {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn counters_stay_monotonic_across_clear() {
    let script = r#"input /field(1) == "clear"/ { clear(@c); }
                    input /field(1) != "clear"/ { @c[field(1)] = count(); }"#;
    let mut run = InputRun::start(script, &[]);
    run.send(&"a\n".repeat(5));
    let m = run.metrics_with(r#"sonde_in_c_total{key0="a"} 5"#);
    assert!(m.contains(r#"sonde_in_c_total{key0="a"} 5"#), "{m}");
    run.send("a\na\nclear\na\na\n");
    let m = run.metrics_with(r#"sonde_in_c_total{key0="a"} 9"#);
    assert!(m.contains(r#"sonde_in_c_total{key0="a"} 9"#), "{m}");
    let out = run.finish();
    assert!(out.contains("@c[a]: 2"), "{out}");
}

#[test]
fn a_million_keys_are_capped_and_counted() {
    let script = "let @k = hash(1048576); input { @k[field(1)] = count(); }";
    let mut run = InputRun::start(script, &["--metrics-max-series", "1000"]);
    let lines: String = (0..1_000_000).map(|i| format!("key{i}\n")).collect();
    run.send(&lines);
    run.send("done\n");
    let want = r#"sonde_series_dropped{script="in",map="@k"} 999001"#;
    let started = Instant::now();
    let m = run.metrics_with(want);
    assert!(m.contains(want), "{}", &m[m.len().saturating_sub(2000)..]);
    assert_eq!(m.matches("sonde_in_k_total{").count(), 1000);
    eprintln!(
        "a scrape of 1,000,001 keys answered within {:?}",
        started.elapsed()
    );
    let pid = run.child.id();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let hwm_kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap();
    eprintln!("peak RSS {hwm_kb} kB");
    assert!(hwm_kb < 2 * 1024 * 1024, "peak RSS {hwm_kb} kB");
    run.finish();
}
