//! deploy/: the systemd unit's command and the Kubernetes DaemonSet's scripts, run for real:
//! the unit's `ExecStart` (paths and address swapped for the test's) serves the
//! ConfigMap's scripts, each of which attaches on this kernel and exports its maps.

mod common;
mod fleet_support;

use common::{TempDir, repo_root, skip_unless_root};
use fleet_support::{free_port, get};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The `name.sd: |` blocks of the ConfigMap's `data:`.
fn configmap_scripts(yaml: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut in_data = false;
    for line in yaml.lines() {
        if line == "data:" {
            in_data = true;
            continue;
        }
        if in_data && line == "---" {
            break;
        }
        if !in_data {
            continue;
        }
        if let Some(name) = line.strip_prefix("  ").and_then(|l| l.strip_suffix(": |")) {
            out.push((name.to_string(), String::new()));
        } else if let (Some(body), Some(last)) = (line.strip_prefix("    "), out.last_mut()) {
            last.1.push_str(body);
            last.1.push('\n');
        }
    }
    out
}

#[test]
fn the_unit_serves_the_configmap_scripts() {
    if skip_unless_root("the_unit_serves_the_configmap_scripts") {
        return;
    }
    let unit = std::fs::read_to_string(repo_root().join("deploy/sonde.service")).unwrap();
    let yaml = std::fs::read_to_string(repo_root().join("deploy/kubernetes/sonde.yaml")).unwrap();
    let exec = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("an ExecStart line");
    let args: Vec<&str> = exec.split_whitespace().collect();
    assert_eq!(args[0], "/usr/local/bin/sonde");
    // The DaemonSet runs the same command.
    let ds_args = format!(
        "args: [{}]",
        args[1..]
            .iter()
            .map(|a| format!("\"{a}\""))
            .collect::<Vec<_>>()
            .join(", ")
    );
    assert!(
        yaml.contains(&ds_args),
        "the DaemonSet's args are the unit's: {ds_args}"
    );

    let dir = TempDir::new("deploy");
    let scripts = configmap_scripts(&yaml);
    assert_eq!(scripts.len(), 3, "{scripts:?}");
    for (name, body) in &scripts {
        std::fs::write(dir.path().join(name), body).unwrap();
    }
    let addr = format!("127.0.0.1:{}", free_port());
    let args: Vec<String> = args[1..]
        .iter()
        .map(|a| match *a {
            "0.0.0.0:9435" => addr.clone(),
            "/etc/sonde/scripts.d" => dir.path().display().to_string(),
            a => a.to_string(),
        })
        .collect();
    let mut agent = Command::new(common::sonde())
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the agent starts");
    let start = Instant::now();
    let mut status = String::new();
    while start.elapsed() < Duration::from_secs(60) {
        if let Some((200, b)) = get(&addr, "/scripts", None) {
            status = String::from_utf8_lossy(&b).into_owned();
            if status.matches("\"running\"").count() == 3 {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    assert_eq!(status.matches("\"running\"").count(), 3, "{status}");
    // Attached and counting: the syscalls script sees this test's own calls.
    std::thread::sleep(Duration::from_secs(2));
    let (_, metrics) = get(&addr, "/metrics", None).unwrap();
    let metrics = String::from_utf8_lossy(&metrics);
    assert!(
        metrics.contains("sonde_syscalls_syscalls_total{comm="),
        "{metrics}"
    );
    let (code, profile) = get(&addr, "/debug/pprof/profile/cpu", None).unwrap();
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&profile));
    assert_eq!(&profile[..2], [0x1f, 0x8b], "a gzipped profile");
    // systemctl stop: SIGTERM ends the agent and its scripts.
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(agent.id() as libc::pid_t, libc::SIGTERM) };
    let (st, timed_out) = common::wait_with_timeout(&mut agent, Duration::from_secs(30));
    assert!(!timed_out && st.is_some_and(|s| s.success()), "{st:?}");
}
