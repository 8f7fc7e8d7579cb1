//! `sonde tool syscount`: a target makes 3000 getppid() and 700 failing openat() calls
//! (ENOENT); the tool, filtered with `-p` (or `-c` and the target's own cgroup), prints bcc's
//! table of exactly those by name, by process with `-P`, only the failures with `-x` or `-e`,
//! the top `-T` rows, their latency with `-L` (`-m`: in ms), every `-i` seconds and for `-d`
//! seconds; `-l` lists the names. Side by side with libbpf-tools' syscount on the same load,
//! the headers and the target's rows are the same.

mod common;
mod tools_support;

use common::{
    ATTACH_TIMEOUT, Target, TempDir, Tracer, build_target, run_sonde, settle, skip_unless_root,
};
use std::time::{Duration, Instant};
use tools_support::libbpf::{installed, side_by_side};

/// Runs the target under `sonde tool syscount <flags>` and returns stdout and the pid.
/// `-p PID` is added unless `flags` filter by cgroup.
fn syscount(bin: &std::path::Path, flags: &[&str]) -> (String, String) {
    let mut target = Target::spawn(bin, &[]);
    let pid = target.pid();
    let mut args = vec!["tool", "syscount", "-p", &pid];
    args.extend_from_slice(flags);
    let mut tracer = Tracer::start(&args);
    assert!(tracer.wait_attached(ATTACH_TIMEOUT));
    settle();
    target.go();
    assert_eq!(target.wait(Duration::from_secs(10)), Some(0));
    std::thread::sleep(Duration::from_millis(200));
    tracer.interrupt();
    let out = tracer.finish(Duration::from_secs(10));
    (out.ok_stdout().to_string(), pid)
}

/// The table rows of `out` (the lines after a header, up to the empty line).
fn rows(out: &str) -> Vec<&str> {
    out.lines()
        .skip_while(|l| !l.starts_with("SYSCALL ") && !l.starts_with("PID "))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect()
}

/// `[HH:MM:SS]`.
fn is_timestamp(l: &str) -> bool {
    let b = l.as_bytes();
    b.len() == 10
        && b[0] == b'['
        && b[9] == b']'
        && [3, 6].iter().all(|&i| b[i] == b':')
        && [1, 2, 4, 5, 7, 8].iter().all(|&i| b[i].is_ascii_digit())
}

#[test]
fn syscount_prints_bccs_table_by_name_process_failure_errno_and_top() {
    if skip_unless_root("syscount_prints_bccs_table_by_name_process_failure_errno_and_top") {
        return;
    }
    let dir = TempDir::new("syscount");
    let bin = build_target(&dir, "tools_syscalls");

    let (out, _) = syscount(&bin, &[]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0], "Tracing syscalls, printing top 10... Ctrl+C to quit.",
        "{out}"
    );
    assert!(is_timestamp(lines[1]), "{out}");
    assert_eq!(lines[2], "SYSCALL                   COUNT", "{out}");
    // Top first: getppid, the most frequent, then openat.
    assert_eq!(
        &rows(&out)[..2],
        [
            "getppid                    3000",
            "openat                      700"
        ],
        "{out}"
    );
    assert!(out.ends_with("\n\n"), "{out:?}");

    // -P -x: by process, failures only: the 700 missing-file opens, plus whatever failed
    // while the loader ran.
    let (out, pid) = syscount(&bin, &["-P", "-x"]);
    assert!(out.contains("\nPID    COMM               COUNT\n"), "{out}");
    let mine = rows(&out);
    assert_eq!(mine.len(), 1, "{out}");
    assert!(
        mine[0].starts_with(&format!("{pid:<6} tools_syscalls  ")),
        "{out}"
    );
    let count: u64 = mine[0].rsplit(' ').next().unwrap().parse().unwrap();
    assert!((700..720).contains(&count), "{out}");

    // -e ENOENT: exactly the opens; -e EACCES (13): nothing.
    let (out, _) = syscount(&bin, &["-e", "ENOENT"]);
    assert_eq!(rows(&out), ["openat                      700"], "{out}");
    let (out, _) = syscount(&bin, &["-e", "13"]);
    assert!(rows(&out).is_empty(), "{out}");
    assert!(out.contains("\nSYSCALL                   COUNT\n"), "{out}");

    // -T 1: only the top row.
    let (out, _) = syscount(&bin, &["-T", "1"]);
    assert!(
        out.starts_with("Tracing syscalls, printing top 1..."),
        "{out}"
    );
    assert_eq!(rows(&out), ["getppid                    3000"], "{out}");

    // -L -x: latency, sorted by it; -m in milliseconds.
    let (out, _) = syscount(&bin, &["-L", "-x"]);
    assert!(
        out.contains("\nSYSCALL                   COUNT        TIME (us)\n"),
        "{out}"
    );
    let r = rows(&out);
    assert_eq!(r.len(), 1, "getppid never fails:\n{out}");
    assert!(
        r[0].starts_with("openat                      700 "),
        "{out}"
    );
    let us: f64 = r[0].rsplit(' ').next().unwrap().parse().unwrap();
    assert!(us > 0.0 && us < 5_000_000.0, "{out}");
    assert_eq!(r[0].len(), 22 + 1 + 8 + 1 + 16, "{out}");
    let (out, _) = syscount(&bin, &["-L", "-m", "-T", "2"]);
    assert!(
        out.contains("\nSYSCALL                   COUNT        TIME (ms)\n"),
        "{out}"
    );
    let r = rows(&out);
    assert_eq!(r.len(), 2, "{out}");
    let ms = |l: &str| -> f64 { l.rsplit(' ').next().unwrap().parse().unwrap() };
    assert!(ms(r[0]) >= ms(r[1]), "sorted by time:\n{out}");
}

#[test]
fn syscount_prints_every_interval_and_stops_after_its_duration() {
    if skip_unless_root("syscount_prints_every_interval_and_stops_after_its_duration") {
        return;
    }
    let dir = TempDir::new("syscount-interval");
    let bin = build_target(&dir, "tools_syscalls");
    let target = Target::spawn(&bin, &[]);
    let pid = target.pid();
    let start = Instant::now();
    let mut tracer = Tracer::start(&["tool", "syscount", "-p", &pid, "-i", "1", "-d", "3"]);
    assert!(tracer.wait_attached(ATTACH_TIMEOUT));
    let out = tracer.finish(Duration::from_secs(20));
    assert!(start.elapsed() < Duration::from_secs(15), "{out:?}");
    assert_eq!(out.code, Some(0), "{out:?}");
    let text = out.ok_stdout();
    let stamps: Vec<&str> = text.lines().filter(|l| is_timestamp(l)).collect();
    assert_eq!(stamps.len(), 3, "{text}");
    assert_eq!(
        text.matches("\nSYSCALL                   COUNT\n").count(),
        3,
        "{text}"
    );
    // Without -i: one table, after the duration.
    let mut tracer = Tracer::start(&["tool", "syscount", "-p", &pid, "-d", "1"]);
    assert!(tracer.wait_attached(ATTACH_TIMEOUT));
    let out = tracer.finish(Duration::from_secs(20));
    assert_eq!(out.ok_stdout().matches("SYSCALL ").count(), 1, "{out:?}");
    drop(target);
}

#[test]
fn syscount_cgroup_counts_only_that_cgroup() {
    if skip_unless_root("syscount_cgroup_counts_only_that_cgroup") {
        return;
    }
    if !std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
        eprintln!("skipping: no cgroup v2 at /sys/fs/cgroup");
        return;
    }
    let dir = TempDir::new("syscount-cgroup");
    let bin = build_target(&dir, "tools_syscalls");
    let cg = format!("/sys/fs/cgroup/sonde-syscount-{}", std::process::id());
    std::fs::create_dir(&cg).expect("create a cgroup");
    let mut target = Target::spawn(&bin, &[]);
    let pid = target.pid();
    let moved = std::fs::write(format!("{cg}/cgroup.procs"), &pid);
    let mut tracer = Tracer::start(&["tool", "syscount", "-c", &cg]);
    let attached = tracer.wait_attached(ATTACH_TIMEOUT);
    settle();
    target.go();
    let code = target.wait(Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(200));
    tracer.interrupt();
    let out = tracer.finish(Duration::from_secs(10));
    let _ = std::fs::remove_dir(&cg);
    moved.expect("move the target into the cgroup");
    assert!(attached && code == Some(0), "{out:?}");
    let text = out.ok_stdout();
    // Only the target runs in the cgroup: its calls, and nobody else's.
    assert_eq!(
        &rows(text)[..2],
        [
            "getppid                    3000",
            "openat                      700"
        ],
        "{text}"
    );
    assert!(
        !text.contains("bpf "),
        "sonde's own calls are not in the cgroup:\n{text}"
    );
}

#[test]
fn syscount_bad_values_are_usage_errors() {
    for (flags, says) in [
        (&["-i", "0"][..], "bad value for --interval: `0`"),
        (&["-i", "-5"], "bad value for --interval: `-5`"),
        (&["-p", "99999999999"], "bad value for --pid: `99999999999`"),
        (&["-d", "0"], "bad value for --duration: `0`"),
        (&["-T", "x"], "bad value for --top: `x`"),
        (&["-e", "EFOO"], "bad value for --errno: `EFOO`"),
        (
            &["-c", "/nonexistent"],
            "bad value for --cgroup: `/nonexistent`",
        ),
    ] {
        let mut args = vec!["tool", "syscount"];
        args.extend_from_slice(flags);
        let out = run_sonde(&args);
        assert_eq!(out.code, Some(2), "{flags:?}: {out:?}");
        assert!(out.stderr.contains(says), "{flags:?}: {}", out.stderr);
        assert!(
            out.stderr.contains("USAGE: sonde tool syscount"),
            "{}",
            out.stderr
        );
    }
}

#[test]
fn syscount_list_holds_every_name_libbpf_tools_lists() {
    if skip_unless_root("syscount_list_holds_every_name_libbpf_tools_lists") {
        return;
    }
    let out = run_sonde(&["tool", "syscount", "-l"]);
    let mine = out.ok_stdout();
    assert!(mine.starts_with("  0: read\n  1: write\n"), "{mine}");
    let Some(bin) = installed("syscount") else {
        return;
    };
    let theirs = std::process::Command::new(bin)
        .arg("-l")
        .output()
        .expect("syscount -l");
    let theirs = String::from_utf8_lossy(&theirs.stdout);
    assert!(theirs.lines().count() > 300, "{theirs}");
    for l in theirs.lines() {
        assert!(
            mine.lines().any(|m| m == l),
            "`{l}` is missing from:\n{mine}"
        );
    }
}

#[test]
fn syscount_side_by_side_with_libbpf_tools() {
    if skip_unless_root("syscount_side_by_side_with_libbpf_tools") {
        return;
    }
    if installed("syscount").is_none() {
        return;
    }
    let dir = TempDir::new("syscount-bcc");
    let bin = build_target(&dir, "tools_syscalls");
    for flags in [
        &[][..],
        &["-P", "-x"],
        &["-L", "-e", "ENOENT"],
        &["-T", "1", "-x", "-m", "-L"],
    ] {
        let mut target = Target::spawn(&bin, &[]);
        let pid = target.pid();
        let mut args = vec!["-p", &pid];
        args.extend_from_slice(flags);
        let (sonde, bcc) = side_by_side("syscount", &args, &args, &mut target);
        let (mine, theirs) = (sonde.ok_stdout().to_string(), bcc.stdout);
        // The banner, then the timestamp, the header and the rows.
        let (m, t): (Vec<&str>, Vec<&str>) = (mine.lines().collect(), theirs.lines().collect());
        assert_eq!(m[0], t[0], "{flags:?}\nsonde:\n{mine}\nbcc:\n{theirs}");
        assert!(is_timestamp(m[1]) && is_timestamp(t[1]), "{mine}\n{theirs}");
        assert_eq!(m[2], t[2], "{flags:?}\nsonde:\n{mine}\nbcc:\n{theirs}");
        // The same rows, but for the latency column, which each measures on its own.
        let cut = |l: &&str| {
            if flags.contains(&"-L") {
                l[..31].to_string()
            } else {
                l.to_string()
            }
        };
        let (mr, tr): (Vec<String>, Vec<String>) = (
            rows(&mine).iter().map(cut).collect(),
            rows(&theirs).iter().map(cut).collect(),
        );
        assert_eq!(mr, tr, "{flags:?}\nsonde:\n{mine}\nbcc:\n{theirs}");
        assert!(!mr.is_empty(), "{flags:?}\nsonde:\n{mine}");
    }
}

#[test]
fn syscall_names_match_the_kernels_syscall_numbers() {
    if skip_unless_root("syscall_names_match_the_kernels_syscall_numbers") {
        return;
    }
    // The kernel reports each call's number in its syscalls:sys_enter_* tracepoints; the
    // name syscall_name() gives that number must be the tracepoint's name.
    let dir = TempDir::new("syscount-names");
    let bin = build_target(&dir, "tools_syscalls");
    let mut target = Target::spawn(&bin, &[]);
    let pid = target.pid();
    let script = format!(
        "tracepoint:syscalls:sys_enter_getppid, tracepoint:syscalls:sys_enter_openat  \
         /pid == {pid}/ {{ @[probe, syscall_name(args.__syscall_nr)] = count(); }}"
    );
    let mut tracer = Tracer::start(&["-e", &script]);
    assert!(tracer.wait_attached(ATTACH_TIMEOUT));
    settle();
    target.go();
    assert_eq!(target.wait(Duration::from_secs(10)), Some(0));
    std::thread::sleep(Duration::from_millis(200));
    tracer.interrupt();
    let out = tracer.finish(Duration::from_secs(10));
    let text = out.ok_stdout();
    assert!(
        text.contains("@[tracepoint:syscalls:sys_enter_getppid, getppid]: 3000\n"),
        "{text}"
    );
    assert!(
        text.contains("@[tracepoint:syscalls:sys_enter_openat, openat]: 700\n"),
        "{text}"
    );
}
