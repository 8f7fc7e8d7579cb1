//! `sonde tool opensnoop`: a shell waiting on stdin opens a known file and a missing one;
//! the tool, filtered with `-p` (or `-t`, `-u`, `-n`), shows both with their fd and errno as
//! libbpf-tools' opensnoop does (PID COMM FD ERR PATH, with -T TIME, -U UID, -e FLAGS), only
//! the failures with `-x`, and stops after `-d` seconds. Side by side with /usr/sbin/opensnoop
//! on a target making 700 failing openat() calls, the output is the same, line for line.

mod common;
mod tools_support;

use common::{ATTACH_TIMEOUT, Target, TempDir, Tracer, build_target, settle, skip_unless_root};
use std::path::Path;
use std::time::{Duration, Instant};
use tools_support::libbpf::{installed, side_by_side};

/// Runs a shell that opens `present` and `missing` under `sonde tool opensnoop <flags>`
/// (`{pid}` in a flag is the shell's pid); returns stdout and the pid.
fn shell_opens(present: &Path, missing: &Path, flags: &[&str]) -> (String, String) {
    let script = format!(
        "read go; : <{}; : <{}",
        present.display(),
        missing.display()
    );
    let mut target = Target::spawn(Path::new("/bin/sh"), &["-c", &script]);
    let pid = target.pid();
    let flags: Vec<String> = flags.iter().map(|f| f.replace("{pid}", &pid)).collect();
    let mut args = vec!["tool", "opensnoop"];
    args.extend(flags.iter().map(String::as_str));
    let mut tracer = Tracer::start(&args);
    assert!(tracer.wait_attached(ATTACH_TIMEOUT));
    settle();
    target.go();
    target.wait(Duration::from_secs(5));
    std::thread::sleep(Duration::from_millis(300));
    tracer.interrupt();
    (
        tracer
            .finish(Duration::from_secs(10))
            .ok_stdout()
            .to_string(),
        pid,
    )
}

#[test]
fn opensnoop_columns_and_filters_as_libbpf_tools() {
    if skip_unless_root("opensnoop_columns_and_filters_as_libbpf_tools") {
        return;
    }
    let dir = TempDir::new("opensnoop");
    let present = dir.path().join("present.txt");
    std::fs::write(&present, "x").unwrap();
    let missing = dir.path().join("missing.txt");

    let (text, pid) = shell_opens(&present, &missing, &["-p", "{pid}"]);
    let lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(lines[0], "PID    COMM              FD ERR PATH");
    assert!(
        lines[1..]
            .iter()
            .all(|l| l.starts_with(&format!("{pid:<6} sh "))),
        "only pid {pid}:\n{text}"
    );
    let fd = lines
        .iter()
        .find(|l| l.ends_with(&present.display().to_string()))
        .expect("present file line");
    let cols: Vec<&str> = fd.split_whitespace().collect();
    // The shell picks the lowest free descriptor (at least 3): check it is one.
    assert!(cols[2].parse::<u32>().is_ok_and(|n| n >= 3), "{fd}");
    assert_eq!(
        [cols[0], cols[1], cols[3]],
        [pid.as_str(), "sh", "0"],
        "{fd}"
    );
    let miss = format!(
        "{pid:<6} {:<16} {:>3} {:>3} {}",
        "sh",
        -1,
        2,
        missing.display()
    );
    assert!(
        lines.contains(&miss.as_str()),
        "missing {miss:?} in:\n{text}"
    );

    // -t (the shell's one thread) -x -T -U -e: failures only, with time, uid and flags.
    let (text, _) = shell_opens(&present, &missing, &["-t", "{pid}", "-x", "-T", "-U", "-e"]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "TIME     UID     PID    COMM              FD ERR FLAGS    PATH"
    );
    let row = lines
        .iter()
        .find(|l| l.ends_with(&format!(" {}", missing.display())))
        .unwrap_or_else(|| panic!("{text}"));
    let b = row.as_bytes();
    assert!(b[2] == b':' && b[5] == b':' && b[8] == b' ', "{row}");
    assert_eq!(&row[9..17], "0       ", "{row}");
    let flags = row.split_whitespace().nth(6).unwrap();
    assert!(
        flags.len() == 8 && flags.bytes().all(|c| (b'0'..=b'7').contains(&c)),
        "{row}"
    );
    assert!(
        !text.contains(&present.display().to_string()),
        "-x hides successful opens:\n{text}"
    );

    // -n: a part of the name; -u: another user sees none of root's opens.
    let (text, pid) = shell_opens(&present, &missing, &["-p", "{pid}", "-n", "s"]);
    let miss = format!(
        "{pid:<6} {:<16} {:>3} {:>3} {}",
        "sh",
        -1,
        2,
        missing.display()
    );
    assert!(text.contains(&miss), "{text}");
    let (text, _) = shell_opens(&present, &missing, &["-p", "{pid}", "-n", "nosuch"]);
    assert_eq!(text.trim_end().lines().count(), 1, "{text}");
    let (text, _) = shell_opens(&present, &missing, &["-p", "{pid}", "-u", "12345"]);
    assert_eq!(text.trim_end().lines().count(), 1, "{text}");
}

#[test]
fn opensnoop_duration_stops_by_itself() {
    if skip_unless_root("opensnoop_duration_stops_by_itself") {
        return;
    }
    let start = Instant::now();
    let out = common::run_sonde_timeout(
        &["tool", "opensnoop", "-d", "1", "-p", "1"],
        Duration::from_secs(15),
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(start.elapsed() < Duration::from_secs(10), "{out:?}");
    assert!(out.ok_stdout().starts_with("PID    COMM"), "{out:?}");
}

#[test]
fn opensnoop_side_by_side_with_libbpf_tools() {
    if skip_unless_root("opensnoop_side_by_side_with_libbpf_tools") {
        return;
    }
    if installed("opensnoop").is_none() {
        return;
    }
    let dir = TempDir::new("opensnoop-bcc");
    let bin = build_target(&dir, "tools_syscalls");
    let mut target = Target::spawn(&bin, &[]);
    let pid = target.pid();
    let args = ["-p", pid.as_str(), "-x", "-U"];
    let (sonde, bcc) = side_by_side("opensnoop", &args, &args, &mut target);
    let (mine, theirs) = (sonde.ok_stdout().to_string(), bcc.stdout);
    // 700 failing opens of the missing file, the same lines in both.
    let expected = format!("0       {pid:<6} tools_syscalls    -1   2 /nonexistent/sonde-syscount");
    let n = mine.lines().filter(|l| *l == expected).count();
    assert_eq!(n, 700, "{}", &mine[..mine.len().min(2000)]);
    // (sonde ends its output with the empty lines of its exit printout.)
    let (m, t): (Vec<&str>, Vec<&str>) =
        (mine.trim_end().lines().collect(), theirs.lines().collect());
    let differ = m.iter().zip(&t).position(|(a, b)| a != b);
    assert_eq!(
        differ,
        None,
        "line {differ:?}: {:?} / {:?}",
        differ.map(|i| m[i]),
        differ.map(|i| t[i])
    );
    assert_eq!(m.len(), t.len());
}

#[test]
fn opensnoop_csv_prints_a_row_per_open() {
    if skip_unless_root("opensnoop_csv_prints_a_row_per_open") {
        return;
    }
    let dir = TempDir::new("opensnoop-csv");
    let bin = build_target(&dir, "tools_syscalls");
    let mut target = Target::spawn(&bin, &[]);
    let pid = target.pid();
    let mut tracer = Tracer::start(&["tool", "opensnoop", "-p", &pid, "-x", "-f", "csv"]);
    assert!(tracer.wait_attached(ATTACH_TIMEOUT));
    settle();
    target.go();
    assert_eq!(target.wait(Duration::from_secs(10)), Some(0));
    std::thread::sleep(Duration::from_millis(300));
    tracer.interrupt();
    let text = tracer
        .finish(Duration::from_secs(10))
        .ok_stdout()
        .to_string();
    let lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(
        lines[0],
        "PID,COMM,FD,ERR,PATH",
        "{}",
        &text[..text.len().min(500)]
    );
    let row = format!("{pid},tools_syscalls,-1,2,/nonexistent/sonde-syscount");
    assert_eq!(lines[1..].iter().filter(|l| **l == row).count(), 700);
    assert_eq!(lines.len(), 701, "{}", &text[..text.len().min(500)]);
}
