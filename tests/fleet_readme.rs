//! The README's fleet examples, run as written: each `sonde ...` line is started (with the
//! binary under test first on PATH, in a directory holding `scripts.d/`), and the client
//! lines after it (`curl`, `go tool pprof`) must succeed and print something.

mod common;

use common::{TempDir, skip_unless_root};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A shell running `line` with sonde first on PATH, in `dir`.
fn shell(line: &str, dir: &TempDir) -> Command {
    let bin = common::sonde();
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut c = Command::new("sh");
    c.args(["-c", line])
        .current_dir(dir.path())
        .env("PATH", path)
        .env("HOME", dir.path());
    c
}

/// A server started by a line, stopped when dropped (a failed assertion included).
struct Server(Option<Child>);

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn stop(child: &mut Option<Child>) {
    if let Some(mut c) = child.take() {
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(c.id() as libc::pid_t, libc::SIGTERM) };
        let (_, timed_out) = common::wait_with_timeout(&mut c, Duration::from_secs(20));
        assert!(!timed_out, "sonde ends on SIGTERM");
    }
}

#[test]
fn the_readme_fleet_examples_work_as_written() {
    if skip_unless_root("the_readme_fleet_examples_work_as_written") {
        return;
    }
    assert!(
        TcpStream::connect("127.0.0.1:9435").is_err(),
        "port 9435 is taken by another program: the README's examples use it"
    );
    let lines = common::readme_block("## Metrics and profiles for a fleet");
    assert!(
        lines.iter().any(|l| l.starts_with("sonde serve")),
        "{lines:?}"
    );
    let dir = TempDir::new("readme-fleet");
    let scripts = dir.path().join("scripts.d");
    std::fs::create_dir(&scripts).unwrap();
    std::fs::write(
        scripts.join("opens.sd"),
        "tracepoint:syscalls:sys_enter_openat { @opens[comm] = count(); }",
    )
    .unwrap();
    let mut guard = Server(None);
    let server = &mut guard.0;
    for line in &lines {
        if line.starts_with("sonde ") {
            stop(server);
            // `exec`: SIGTERM reaches sonde itself, not a shell around it.
            let child = shell(&format!("exec {line}"), &dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            *server = Some(child);
            let start = Instant::now();
            while TcpStream::connect("127.0.0.1:9435").is_err()
                && start.elapsed() < Duration::from_secs(60)
            {
                std::thread::sleep(Duration::from_millis(100));
            }
            // Attached and counting for a moment.
            std::thread::sleep(Duration::from_secs(2));
            continue;
        }
        let out = shell(line, &dir).output().unwrap();
        assert!(
            out.status.success() && !out.stdout.is_empty(),
            "{line}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        if line.contains("/metrics") {
            assert!(text.contains("sonde_e_reads_total{comm="), "{text}");
            assert!(text.contains("sonde_e_bytes_bucket{le="), "{text}");
        }
        if line.contains("/scripts") {
            assert!(text.contains("\"running\""), "{text}");
        }
        if line.starts_with("go tool pprof") {
            assert!(text.contains("flat%"), "{text}");
        }
    }
    stop(server);
}
