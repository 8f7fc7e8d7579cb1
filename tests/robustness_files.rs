//! Files the user names (issue 30, items 9 and 12): a directory, a character device
//! (`/dev/zero`) or a named pipe given to `--post`, `replay`, `import`, `flamediff`, a script
//! or a `uprobe:` target is refused at once with its kind named (no read until memory runs
//! out, no open blocking on a FIFO without a writer); `flamediff` and the script itself read
//! pipes (`<(...)`), with the bound; files past the bound sonde reads are refused with the
//! bound stated; `replay` checks a file's magic before reading it whole.

mod common;

use common::{Output, TempDir, run_sonde_timeout, skip_unless_root};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Hard limit for one run: every refusal here is immediate.
const RUN_TIMEOUT: Duration = Duration::from_secs(10);

/// Makes a named pipe at `dir/name`.
fn fifo(dir: &TempDir, name: &str) -> PathBuf {
    let path = dir.path().join(name);
    let ok = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .expect("mkfifo runs");
    assert!(ok.success(), "mkfifo {}", path.display());
    path
}

fn run(args: &[&str]) -> Output {
    let out = run_sonde_timeout(args, RUN_TIMEOUT);
    assert!(
        !out.timed_out,
        "{args:?} timed out (blocked on a file?)\n{out:?}"
    );
    assert!(!out.stderr.contains("panicked"), "{args:?}: {}", out.stderr);
    out
}

/// `s` without whitespace and miette's frame (which wraps long lines).
fn squeezed(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_whitespace() && *c != '│')
        .collect()
}

/// Asserts that `args` fail at once (exit 1; 2 for the script itself, a usage error) with a
/// message naming `path` and `kind`.
fn refused(args: &[&str], path: &Path, kind: &str) {
    let out = run(args);
    let script = !args.contains(&"-e") && !args.contains(&"-l") && args.len() == 1;
    assert_eq!(
        out.code,
        Some(if script { 2 } else { 1 }),
        "{args:?}: {out:?}"
    );
    let err = squeezed(&out.stderr);
    assert!(
        err.contains(&squeezed(&path.display().to_string())),
        "{args:?}: the path is not named: {}",
        out.stderr
    );
    assert!(
        err.contains(&squeezed(&format!("it is {kind}, not a regular file"))),
        "{args:?}: the kind is not named: {}",
        out.stderr
    );
}

#[test]
fn directories_devices_and_fifos_are_refused_by_kind() {
    let dir = TempDir::new("files-kinds");
    let pipe = fifo(&dir, "pipe.bt");
    let zero = Path::new("/dev/zero");
    let d = dir.path();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let (pipe_s, zero_s, dir_s) = (s(&pipe), s(zero), s(d));
    let begin = ["--engine", "jit", "-e", "BEGIN { exit(); }"];
    for (path, kind) in [
        (&pipe, "a named pipe (FIFO)"),
        (&zero.to_path_buf(), "a character device"),
        (&d.to_path_buf(), "a directory"),
    ] {
        let p = s(path);
        refused(&["replay", &p], path, kind);
        let mut post = begin.to_vec();
        post.extend(["--post", &p]);
        refused(&post, path, kind);
        let out_svg = s(&d.join("diff.svg"));
        if path != &pipe {
            refused(&["flamediff", &p, &p, "-o", &out_svg], path, kind);
        }
    }
    // flamediff and a script read pipes (`<(...)`), with the bound: a FIFO without a writer
    // is an empty file, not a wait.
    let out_svg = s(&d.join("diff.svg"));
    let out = run(&["flamediff", &pipe_s, &pipe_s, "-o", &out_svg]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(out.stderr.contains("has no stack lines"), "{}", out.stderr);
    // An import of a FIFO (a directory imports the scripts in it).
    let import = format!("import \"{pipe_s}\"; BEGIN {{ exit(); }}");
    refused(
        &["--engine", "jit", "-e", &import],
        &pipe,
        "a named pipe (FIFO)",
    );
    // The script itself: a directory or a device.
    refused(&[&dir_s], d, "a directory");
    refused(&[&zero_s], zero, "a character device");
}

#[test]
fn a_uprobe_on_a_fifo_is_refused_without_blocking() {
    if skip_unless_root("a_uprobe_on_a_fifo_is_refused_without_blocking") {
        return;
    }
    let dir = TempDir::new("files-uprobe");
    let pipe = fifo(&dir, "fifo");
    let target = format!("uprobe:{}:*", pipe.display());
    refused(&["-l", &target], &pipe, "a named pipe (FIFO)");
    // A wildcard, a function, an address, USDT probes, a source line: each reads the file.
    let p = pipe.display();
    for prog in [
        format!("{target} {{ @n = count(); }}"),
        format!("uprobe:{p}:main {{ }}"),
        format!("uprobe:{p}:0x10 {{ }}"),
        format!("usdt:{p}:a:b {{ }}"),
        format!("uprobe:{p}@a.c:12 {{ }}"),
    ] {
        refused(&["--dry-run", "-e", &prog], &pipe, "a named pipe (FIFO)");
    }
    // Relative to the working directory, as the issue wrote it.
    let out = common::run_command(
        {
            let mut c = std::process::Command::new(common::sonde());
            c.args(["-l", "uprobe:./fifo:*"]).current_dir(dir.path());
            c
        },
        RUN_TIMEOUT,
    );
    assert!(!out.timed_out, "blocked opening ./fifo");
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(out.stderr.contains("named pipe (FIFO)"), "{}", out.stderr);
}

#[test]
fn files_past_the_bound_are_refused_with_the_bound() {
    let dir = TempDir::new("files-bound");
    let big = dir.path().join("big.bt");
    // A sparse file: larger than 16 MiB without writing it.
    let f = std::fs::File::create(&big).unwrap();
    f.set_len((16 << 20) + 1).unwrap();
    drop(f);
    let out = run(&[big.to_str().unwrap()]);
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(
        out.stderr
            .contains("it is larger than the 16 MiB sonde reads from such a file"),
        "{}",
        out.stderr
    );
    let out = run(&[
        "--engine",
        "jit",
        "-e",
        "BEGIN { exit(); }",
        "--post",
        big.to_str().unwrap(),
    ]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(squeezed(&out.stderr).contains("16MiB"), "{}", out.stderr);
}

#[test]
fn replay_checks_the_magic_before_reading_a_huge_file() {
    let dir = TempDir::new("files-huge");
    let huge = dir.path().join("huge.rec");
    // 5 GiB, sparse: reading it whole would take seconds and 5 GiB of memory.
    let f = std::fs::File::create(&huge).unwrap();
    f.set_len(5 << 30).unwrap();
    drop(f);
    let start = Instant::now();
    let out = run(&["replay", huge.to_str().unwrap()]);
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "took {:?}",
        start.elapsed()
    );
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr.contains("not a sonde recording") && out.stderr.contains("at byte 0"),
        "{}",
        out.stderr
    );
}

#[test]
fn repl_load_refuses_a_fifo_and_a_device() {
    if skip_unless_root("repl_load_refuses_a_fifo_and_a_device") {
        return;
    }
    let dir = TempDir::new("files-repl");
    let pipe = fifo(&dir, "entry.bt");
    let input = format!(":load {}\n:load /dev/zero\n:quit\n", pipe.display());
    let mut cmd = std::process::Command::new(common::sonde());
    cmd.arg("repl")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().expect("sonde repl starts");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let stderr = common::bytes::read_all(child.stderr.take().unwrap());
    let _stdout = common::bytes::read_all(child.stdout.take().unwrap());
    let (status, timed_out) = common::wait_with_timeout(&mut child, RUN_TIMEOUT);
    assert!(!timed_out, ":load blocked");
    assert!(status.is_some_and(|s| s.success()));
    let err = String::from_utf8_lossy(&stderr.join().unwrap()).into_owned();
    assert!(
        err.contains(&format!(
            "cannot read {}: it is a named pipe (FIFO), not a regular file",
            pipe.display()
        )),
        "{err}"
    );
    assert!(
        err.contains("cannot read /dev/zero: it is a character device, not a regular file"),
        "{err}"
    );
}

/// A recording of `mib` entries of 1 MiB each, of a tag from a newer minor version (replay
/// skips them), then `End`.
fn big_recording(path: &Path, mib: usize) {
    use std::io::Write;
    let mut body = Vec::new();
    for s in ["big.bt", "BEGIN { }"] {
        body.extend_from_slice(&(s.len() as u32).to_le_bytes());
        body.extend_from_slice(s.as_bytes());
    }
    body.push(1); // print_maps_on_exit
    body.extend_from_slice(&0u32.to_le_bytes()); // no events
    body.extend_from_slice(&0u32.to_le_bytes()); // no maps
    body.extend_from_slice(&0u32.to_le_bytes()); // empty str_trunc_trailer
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    f.write_all(b"SONDEREC\x01\0\x01\0").unwrap();
    f.write_all(&(body.len() as u64).to_le_bytes()).unwrap();
    f.write_all(&body).unwrap();
    let chunk = vec![0x5a; 1 << 20];
    for _ in 0..mib {
        f.write_all(&[200]).unwrap();
        f.write_all(&(chunk.len() as u64).to_le_bytes()).unwrap();
        f.write_all(&chunk).unwrap();
    }
    f.write_all(&[13, 1, 0, 0, 0, 0, 0, 0, 0, 7]).unwrap();
    f.flush().unwrap();
}

#[test]
fn replay_streams_a_large_recording_in_bounded_memory() {
    let dir = TempDir::new("files-stream");
    let rec = dir.path().join("big.rec");
    big_recording(&rec, 300);
    // GNU time reports the peak resident set size.
    let mut cmd = std::process::Command::new("/usr/bin/time");
    cmd.args(["-f", "maxrss %M"])
        .arg(common::sonde())
        .args(["replay", rec.to_str().unwrap()]);
    let out = common::run_command(cmd, Duration::from_secs(60));
    assert!(!out.timed_out, "{out:?}");
    // The recorded exit code: the whole file was read.
    assert_eq!(out.code, Some(7), "{out:?}");
    let kib: u64 = out
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("maxrss ")?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no maxrss in {}", out.stderr));
    // Reading the 300 MiB file whole would take more than 300 MiB.
    assert!(
        kib < 150 << 10,
        "peak RSS {kib} KiB for a 300 MiB recording"
    );
}
