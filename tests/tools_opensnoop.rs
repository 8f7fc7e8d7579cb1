//! `sonde tool opensnoop`: a shell waiting on stdin opens a known file and a missing one;
//! the tool, filtered with `-p`, shows both with their fd and errno (PID COMM FD ERR PATH).

mod common;

use common::{ATTACH_TIMEOUT, Target, TempDir, Tracer, settle, skip_unless_root};
use std::path::Path;
use std::time::Duration;

#[test]
fn opensnoop_shows_a_file_and_a_missing_file_of_one_process() {
    if skip_unless_root("opensnoop_shows_a_file_and_a_missing_file_of_one_process") {
        return;
    }
    let dir = TempDir::new("opensnoop");
    let present = dir.path().join("present.txt");
    std::fs::write(&present, "x").unwrap();
    let missing = dir.path().join("missing.txt");
    let script = format!(": <{}; : <{}", present.display(), missing.display());
    let mut target = Target::spawn(Path::new("/bin/sh"), &["-c", &format!("read go; {script}")]);
    let pid = target.pid();
    let mut tracer = Tracer::start(&["tool", "opensnoop", "-p", &pid]);
    let mut failed = Tracer::start(&["tool", "opensnoop", "-x", "-T", "-n", "sh"]);
    assert!(tracer.wait_attached(ATTACH_TIMEOUT) && failed.wait_attached(ATTACH_TIMEOUT));
    settle();
    target.go();
    target.wait(Duration::from_secs(5));
    std::thread::sleep(Duration::from_millis(300));
    tracer.interrupt();
    failed.interrupt();
    let out = tracer.finish(Duration::from_secs(10));
    let failed = failed.finish(Duration::from_secs(10));

    let text = out.ok_stdout();
    let lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(lines[0], "PID     COMM              FD ERR PATH");
    assert!(
        lines[1..]
            .iter()
            .all(|l| l.starts_with(&format!("{pid:<7} sh "))),
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
        "{pid:<7} {:<16} {:>3} {:>3} {}",
        "sh",
        -1,
        2,
        missing.display()
    );
    assert!(
        lines.contains(&miss.as_str()),
        "missing {miss:?} in:\n{text}"
    );

    let text = failed.ok_stdout();
    assert!(
        text.starts_with("TIME(s)   PID     COMM              FD ERR PATH\n"),
        "{text}"
    );
    assert!(text.lines().any(|l| l.ends_with(&miss)), "{text}");
    assert!(
        !text.contains(&present.display().to_string()),
        "-x hides successful opens:\n{text}"
    );
}
