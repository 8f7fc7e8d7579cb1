//! `sonde serve`: three scripts of a directory run as one agent scraped by a real
//! Prometheus — one broken (reported, the others unaffected), one unreadable, one edited
//! while running (restarted with its new maps) — and `--metrics-file` read by
//! node_exporter's textfile collector; an address in use is refused before tracing.

mod common;
mod fleet_support;

use common::{TempDir, Tracer, run_sonde_timeout, skip_unless_root};
use fleet_support::{Prometheus, assert_promtool_accepts, free_port, get, prometheus_installed};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Waits (up to 30 s) until `GET addr path` answers 200 with a body containing `want`.
fn wait_body(addr: &str, path: &str, want: &str) -> String {
    let start = Instant::now();
    let mut last = String::new();
    while start.elapsed() < Duration::from_secs(30) {
        if let Some((200, b)) = get(addr, path, None) {
            last = String::from_utf8_lossy(&b).into_owned();
            if last.contains(want) {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    last
}

#[test]
fn one_agent_three_scripts_one_broken_one_edited() {
    let test = "one_agent_three_scripts_one_broken_one_edited";
    if skip_unless_root(test) || !prometheus_installed(test) {
        return;
    }
    let dir = TempDir::new("serve");
    let scripts = dir.path().join("scripts.d");
    std::fs::create_dir(&scripts).unwrap();
    let getppid = "tracepoint:syscalls:sys_enter_getppid { @calls = count(); }";
    std::fs::write(scripts.join("ppid.sd"), getppid).unwrap();
    std::fs::write(scripts.join("broken.sd"), "BEGIN { @x = nosuchfn(); }").unwrap();
    std::os::unix::fs::symlink("/nonexistent/x.sd", scripts.join("gone.sd")).unwrap();
    let reads = "tracepoint:syscalls:sys_enter_getpid { @pids = count(); }";
    std::fs::write(scripts.join("edited.sd"), reads).unwrap();
    let addr = format!("127.0.0.1:{}", free_port());
    let mut agent = Command::new(common::sonde())
        .args(["serve", "--listen", &addr, "--scripts"])
        .arg(&scripts)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("sonde serve starts");
    let prom = Prometheus::start(&[&addr], &[]);

    let status = wait_body(&addr, "/scripts", "\"failed\"");
    let list: serde_json::Value = serde_json::from_str(&status).expect("JSON");
    let state = |name: &str| {
        list.as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .map(|s| s["state"].as_str().unwrap_or("").to_string())
    };
    assert_eq!(state("broken").as_deref(), Some("failed"), "{status}");
    let errors = list.to_string();
    assert!(
        errors.contains("unknown function"),
        "the broken script says why: {status}"
    );
    assert!(
        prom.wait_for(r#"sonde_serve_script_up{script="ppid"}"#, 1.0)
            .is_some()
    );
    assert_eq!(
        prom.wait_for(r#"sonde_serve_script_up{script="broken"}"#, 0.0),
        Some(0.0)
    );
    assert_eq!(
        prom.wait_for(r#"sonde_serve_script_up{script="gone"}"#, 0.0),
        Some(0.0)
    );
    let metrics = wait_body(&addr, "/metrics", "sonde_ppid_calls_total");
    assert!(metrics.contains("sonde_edited_pids_total"), "{metrics}");

    // Edited while running: restarted with its new map; the others go on.
    let edited = "tracepoint:syscalls:sys_enter_getpid { @pids2 = count(); }";
    std::fs::write(scripts.join("edited.sd"), edited).unwrap();
    let metrics = wait_body(&addr, "/metrics", "sonde_edited_pids2_total");
    assert!(metrics.contains("sonde_edited_pids2_total"), "{metrics}");
    assert!(!metrics.contains("sonde_edited_pids_total"), "{metrics}");
    assert!(metrics.contains("sonde_ppid_calls_total"), "{metrics}");
    assert!(
        prom.wait_for(r#"sonde_serve_script_up{script="edited"}"#, 1.0)
            .is_some()
    );

    // promtool accepts the merged exposition.
    assert_promtool_accepts(metrics.as_bytes());

    // SIGHUP (systemctl reload) restarts every script: ppid serves from a new address.
    let addr_of = |name: &str| -> Option<String> {
        let (_, b) = get(&addr, "/scripts", None)?;
        let v: serde_json::Value = serde_json::from_slice(&b).ok()?;
        v.as_array()?.iter().find(|s| s["name"] == name)?["addr"]
            .as_str()
            .map(str::to_string)
    };
    let before = addr_of("ppid").expect("ppid serves");
    // SAFETY: kill(2) on our own child.
    unsafe {
        libc::kill(agent.id() as libc::pid_t, libc::SIGHUP);
    }
    let start = Instant::now();
    let mut after = Some(before.clone());
    while start.elapsed() < Duration::from_secs(30) && after.as_ref().is_none_or(|a| *a == before) {
        std::thread::sleep(Duration::from_millis(200));
        after = addr_of("ppid");
    }
    assert!(
        after.is_some_and(|a| a != before),
        "ppid restarted on SIGHUP"
    );

    // SIGTERM ends the agent and its scripts.
    // SAFETY: kill(2) on our own child.
    unsafe {
        libc::kill(agent.id() as libc::pid_t, libc::SIGTERM);
    }
    let (st, timed_out) = common::wait_with_timeout(&mut agent, Duration::from_secs(20));
    assert!(!timed_out && st.is_some_and(|s| s.success()), "{st:?}");
}

#[test]
fn an_address_in_use_is_refused_before_tracing() {
    if skip_unless_root("an_address_in_use_is_refused_before_tracing") {
        return;
    }
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = busy.local_addr().unwrap().to_string();
    let out = run_sonde_timeout(
        &[
            "--metrics",
            &addr,
            "-e",
            "tracepoint:syscalls:sys_enter_getppid { @c = count(); }",
        ],
        Duration::from_secs(30),
    );
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(
        out.stderr
            .contains(&format!("--metrics: cannot listen on {addr}")),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("Attached"), "{}", out.stderr);
}

#[test]
fn node_exporter_reads_the_metrics_file() {
    let test = "node_exporter_reads_the_metrics_file";
    if skip_unless_root(test) {
        return;
    }
    if Command::new("prometheus-node-exporter")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipping {test}: prometheus-node-exporter is not installed");
        return;
    }
    let dir = TempDir::new("textfile");
    let file = dir.path().join("sonde.prom");
    let file_arg = file.display().to_string();
    let mut tracer = Tracer::start(&[
        "--metrics-file",
        &file_arg,
        "--metrics-interval",
        "1",
        "--metrics-name",
        "tf",
        "-e",
        "BEGIN { @answer = 42; @c[\"x\"] = count(); } interval:s:1 { @ticks = count(); }",
    ]);
    assert!(tracer.wait_attached(Duration::from_secs(60)));
    let port = free_port();
    let mut exporter = Command::new("prometheus-node-exporter")
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .arg(format!(
            "--collector.textfile.directory={}",
            dir.path().display()
        ))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("node_exporter starts");
    let body = wait_body(
        &format!("127.0.0.1:{port}"),
        "/metrics",
        "sonde_tf_ticks_total",
    );
    let _ = exporter.kill();
    let _ = exporter.wait();
    tracer.interrupt();
    let out = tracer.finish(Duration::from_secs(20));
    assert!(body.contains("sonde_tf_answer 42"), "{body}");
    assert!(body.contains("sonde_tf_c_total{key0=\"x\"} 1"), "{body}");
    assert!(body.contains("sonde_tf_ticks_total"), "{body}");
    assert!(body.contains("\nnode_textfile_scrape_error 0"), "{body}");
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    // No temporary file is left behind.
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left.len(), 1, "{left:?}");
}

/// Accepts HTTP requests on `listener` for `for_how_long`, answering 200; returns each
/// request's target and body.
fn record_requests(
    listener: std::net::TcpListener,
    for_how_long: Duration,
) -> Vec<(String, String)> {
    use std::io::{BufRead, BufReader, Read, Write};
    listener.set_nonblocking(true).unwrap();
    let start = Instant::now();
    let mut seen = Vec::new();
    while start.elapsed() < for_how_long {
        let Ok((stream, _)) = listener.accept() else {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        };
        stream.set_nonblocking(false).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut r = BufReader::new(stream);
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        let target = line.split_whitespace().nth(1).unwrap_or("").to_string();
        let mut len = 0;
        loop {
            let mut h = String::new();
            if r.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                break;
            }
            if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; len];
        r.read_exact(&mut body).unwrap();
        let _ = r
            .get_mut()
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        seen.push((target, String::from_utf8_lossy(&body).into_owned()));
    }
    seen
}

#[test]
fn folded_profiles_are_pushed_every_interval() {
    if skip_unless_root("folded_profiles_are_pushed_every_interval") {
        return;
    }
    let dir = TempDir::new("push");
    let bin = common::build_target(&dir, "tools_syscalls");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let server = std::thread::spawn(move || record_requests(listener, Duration::from_secs(8)));
    let script = "tracepoint:syscalls:sys_enter_getppid /comm == \"tools_syscalls\"/ { @calls[ustack, comm] = count(); }";
    let mut tracer = Tracer::start(&[
        "--push-folded",
        &url,
        "--metrics-interval",
        "1",
        "--metrics-name",
        "p",
        "-e",
        script,
    ]);
    assert!(tracer.wait_attached(Duration::from_secs(60)));
    let mut target = common::Target::spawn(&bin, &[]);
    target.go();
    assert_eq!(target.wait(Duration::from_secs(30)), Some(0));
    std::thread::sleep(Duration::from_millis(2500));
    let mut second = common::Target::spawn(&bin, &[]);
    second.go();
    assert_eq!(second.wait(Duration::from_secs(30)), Some(0));
    std::thread::sleep(Duration::from_millis(1500));
    tracer.interrupt();
    let out = tracer.finish(Duration::from_secs(20));
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let pushes = server.join().unwrap();
    assert!(
        pushes.len() >= 2,
        "one push per interval with counts: {pushes:?}"
    );
    let mut total = 0u64;
    for (target, body) in &pushes {
        assert!(
            target.starts_with("/ingest?name=sonde.p.calls&from="),
            "{target}"
        );
        assert!(target.contains("&format=folded"), "{target}");
        for line in body.lines() {
            let (frames, n) = line.rsplit_once(' ').expect("frames count");
            assert!(frames.starts_with("tools_syscalls;"), "{line}");
            total += n.parse::<u64>().unwrap();
        }
    }
    // Each push holds what its interval counted: together, the two runs' calls once.
    assert_eq!(total, 6000, "{pushes:?}");
}
