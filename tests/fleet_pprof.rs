//! `GET /debug/pprof/<map>`: a map keyed by stacks as a pprof profile that `go tool pprof`
//! (Debian's golang-go) reads with the right frames, counts and labels, and `?seconds=N` as
//! what the map counted during those seconds.

mod common;
mod fleet_support;

use common::{Target, TempDir, Tracer, build_target, skip_unless_root};
use fleet_support::{get, served_addr};
use std::process::Command;
use std::time::Duration;

/// `go tool pprof -raw` of `profile`, or `None` (said) when Go is not installed.
fn pprof_raw(dir: &TempDir, profile: &[u8]) -> Option<String> {
    if Command::new("go").arg("version").output().is_err() {
        eprintln!(
            "skipping the go tool pprof check: go is not installed (apt-get install golang-go)"
        );
        return None;
    }
    let path = dir.path().join("profile.pb.gz");
    std::fs::write(&path, profile).unwrap();
    let out = Command::new("go")
        .args(["tool", "pprof", "-raw"])
        .arg(&path)
        .env("HOME", dir.path())
        .output()
        .expect("go tool pprof runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The sample counts of `go tool pprof -raw`'s output whose labels hold `comm`.
fn samples_of(raw: &str, comm: &str) -> u64 {
    let lines: Vec<&str> = raw.lines().collect();
    let mut total = 0;
    for (i, l) in lines.iter().enumerate() {
        let label = format!("comm:[{comm}]");
        if lines.get(i + 1).is_some_and(|n| n.contains(&label))
            && let Some(n) = l
                .split(':')
                .next()
                .and_then(|c| c.trim().parse::<u64>().ok())
        {
            total += n;
        }
    }
    total
}

#[test]
fn go_tool_pprof_reads_a_stack_keyed_map() {
    if skip_unless_root("go_tool_pprof_reads_a_stack_keyed_map") {
        return;
    }
    let dir = TempDir::new("pprof");
    let bin = build_target(&dir, "tools_syscalls");
    let script = "tracepoint:syscalls:sys_enter_getppid /comm == \"tools_syscalls\"/ { @calls[ustack, comm] = count(); }";
    let mut tracer = Tracer::start(&["--metrics", "127.0.0.1:0", "-e", script]);
    assert!(tracer.wait_attached(Duration::from_secs(60)));
    let addr = served_addr(&tracer);
    // Started once sonde runs, so that its mappings are known when it has exited.
    let mut first = Target::spawn(&bin, &[]);
    first.go();
    assert_eq!(first.wait(Duration::from_secs(30)), Some(0));
    std::thread::sleep(Duration::from_millis(300));

    let (status, body) = get(&addr, "/debug/pprof/calls", None).expect("sonde answers");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(&body[..2], [0x1f, 0x8b], "gzipped");

    // ?seconds=N: a second run during the window is all the profile counts.
    let mut second = Target::spawn(&bin, &[]);
    let delta_addr = addr.clone();
    let window = std::thread::spawn(move || get(&delta_addr, "/debug/pprof/calls?seconds=3", None));
    std::thread::sleep(Duration::from_millis(800));
    second.go();
    assert_eq!(second.wait(Duration::from_secs(30)), Some(0));
    let (status, delta) = window.join().unwrap().expect("sonde answers");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&delta));

    let (status, text) = get(&addr, "/debug/pprof/nosuch", None).unwrap();
    assert_eq!(status, 404, "{}", String::from_utf8_lossy(&text));
    tracer.interrupt();
    let out = tracer.finish(Duration::from_secs(20));
    assert_eq!(out.code, Some(0), "{}", out.stderr);

    let Some(raw) = pprof_raw(&dir, &body) else {
        return;
    };
    assert_eq!(samples_of(&raw, "tools_syscalls"), 3000, "{raw}");
    assert!(
        raw.contains("PeriodType") || raw.contains("samples/count"),
        "{raw}"
    );
    // The frames are symbolized (libc's syscall(), in libc's mapping; libc has no frame
    // pointers, so the walk stops there).
    assert!(raw.lines().any(|l| l.contains(" syscall ")), "{raw}");
    assert!(raw.lines().any(|l| l.contains("libc.so")), "{raw}");
    let raw = pprof_raw(&dir, &delta).unwrap();
    assert_eq!(
        samples_of(&raw, "tools_syscalls"),
        3000,
        "the second run only: {raw}"
    );
}
