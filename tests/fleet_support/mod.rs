//! What the fleet tests share: a real Prometheus server started on a loopback port with its
//! own configuration and data directory, HTTP GETs, and the address a `--metrics` run
//! announces.

#![allow(dead_code)] // Each test file uses a part.

use crate::common::{TempDir, Tracer};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// True when Debian's `prometheus` is installed (`.ci/test` installs it); says why not.
pub fn prometheus_installed(test: &str) -> bool {
    let ok = Command::new("prometheus")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipping {test}: prometheus is not installed (apt-get install prometheus)");
    }
    ok
}

/// A free loopback port (bound, then released for the server to take).
pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("a free port");
    l.local_addr().expect("an address").port()
}

/// `GET http://addr/path` with `accept`: the status and the body (HTTP/1.0, bounded in time).
pub fn get(addr: &str, path: &str, accept: Option<&str>) -> Option<(u16, Vec<u8>)> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(20))).ok()?;
    let accept = accept
        .map(|a| format!("Accept: {a}\r\n"))
        .unwrap_or_default();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n{accept}\r\n").ok()?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).ok()?;
    let split = buf.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&buf[..split]).to_string();
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, buf[split + 4..].to_vec()))
}

/// The address a `--metrics` run announced ("Serving metrics on http://ADDR/metrics").
pub fn served_addr(tracer: &Tracer) -> String {
    tracer
        .stderr_so_far()
        .iter()
        .find_map(|l| l.strip_prefix("Serving metrics on http://"))
        .and_then(|l| l.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("no address announced: {:?}", tracer.stderr_so_far()))
        .to_string()
}

/// Asserts that `promtool check metrics` accepts the exposition `text`.
pub fn assert_promtool_accepts(text: &[u8]) {
    use std::io::Write;
    let mut promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool runs");
    promtool.stdin.take().unwrap().write_all(text).unwrap();
    let checked = promtool.wait_with_output().unwrap();
    assert!(
        checked.status.success(),
        "promtool check metrics:\n{}{}\n{}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr),
        String::from_utf8_lossy(text)
    );
}

/// A Prometheus server scraping `targets` every second; killed on drop.
pub struct Prometheus {
    child: Child,
    /// Its `host:port`.
    pub addr: String,
    _dir: TempDir,
}

impl Prometheus {
    /// Starts Prometheus (with `features`, e.g. `native-histograms`) scraping `targets`, and
    /// waits until it is ready.
    pub fn start(targets: &[&str], features: &[&str]) -> Prometheus {
        let dir = TempDir::new("prometheus");
        let list: Vec<String> = targets.iter().map(|t| format!("'{t}'")).collect();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: sonde\n    static_configs:\n      - targets: [{}]\n",
            list.join(", ")
        );
        let cfg = dir.path().join("prometheus.yml");
        std::fs::write(&cfg, config).expect("config written");
        let addr = format!("127.0.0.1:{}", free_port());
        let mut cmd = Command::new("prometheus");
        cmd.arg(format!("--config.file={}", cfg.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        for f in features {
            cmd.arg(format!("--enable-feature={f}"));
        }
        let child = cmd.spawn().expect("prometheus starts");
        let p = Prometheus {
            child,
            addr,
            _dir: dir,
        };
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(30) {
            if get(&p.addr, "/-/ready", None).is_some_and(|(s, _)| s == 200) {
                return p;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("prometheus did not become ready on {}", p.addr);
    }

    /// The value of instant query `q` (its single result), if there is one.
    pub fn query(&self, q: &str) -> Option<f64> {
        let path = format!("/api/v1/query?query={}", encode(q));
        let (status, body) = get(&self.addr, &path, None)?;
        if status != 200 {
            return None;
        }
        let v: serde_json::Value = serde_json::from_slice(&body).ok()?;
        let result = v["data"]["result"].as_array()?;
        if result.len() != 1 {
            return None;
        }
        result[0]["value"][1].as_str()?.parse().ok()
    }

    /// Waits (up to 30 s) until query `q` gives `want`; the last value seen.
    pub fn wait_for(&self, q: &str, want: f64) -> Option<f64> {
        let start = Instant::now();
        let mut last = None;
        while start.elapsed() < Duration::from_secs(30) {
            last = self.query(q);
            if last == Some(want) {
                break;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        last
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `s` percent-encoded for a query string.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'.' | b'-' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
