//! The `input` probe's edges in the userspace engine: several input files, a missing file,
//! `line`, `nf`, `nr`, `exit()`, interval probes while stdin is idle, Ctrl-C during a blocked
//! read, running as an unprivileged user, the diagnostics that refuse kernel-only things, and
//! `-f json`. None of these tests needs root. (The comparison with mawk is `engine_input.rs`.)

mod common;

use common::bytes::{RUN_TIMEOUT, read_all, sonde_with_stdin, text, write_file};
use common::{Output, TempDir, run_command, run_sonde, sonde, wait_with_timeout};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------------
// The engine's edges

/// Two `input:PATH` probes read their files one after the other in declaration order (not
/// argument or name order), `nr` counts across them, and probes on one file all see each line.
#[test]
fn two_input_files_in_declaration_order() {
    let dir = TempDir::new("input-two");
    let a = write_file(&dir, "a.txt", b"a1 x\na2 y z\n");
    let b = write_file(&dir, "b.txt", b"b1\nb2 q\nb3");
    let (a, b) = (a.display(), b.display());
    let prog = format!(
        r#"input:{b} {{ printf("B %d %d %s\n", nr, nf, line); }}
           input:{a} {{ printf("A %d %d %s\n", nr, nf, line); }}
           input:{b} {{ @b = count(); }}
           END {{ printf("end\n"); }}"#
    );
    let out = run_sonde(&["-q", "-e", &prog]);
    assert_eq!(
        out.ok_stdout(),
        "B 1 1 b1\nB 2 2 b2 q\nB 3 1 b3\nA 4 2 a1 x\nA 5 3 a2 y z\nend\n\n\n@b: 3\n"
    );
}

#[test]
fn missing_input_file_is_a_diagnostic() {
    let dir = TempDir::new("input-missing");
    let ok = write_file(&dir, "ok.txt", b"x\n");
    let prog = format!(
        r#"BEGIN {{ printf("begin\n"); }} input:{} {{ printf("%s\n", line); }} input:/missing/file {{ @n = count(); }}"#,
        ok.display()
    );
    let out = run_sonde(&["-e", &prog]);
    assert_eq!(out.code, Some(1), "stderr:\n{}", out.stderr);
    assert!(!out.timed_out);
    assert!(
        out.stderr.contains("sonde::engine::input") && out.stderr.contains("/missing/file"),
        "stderr:\n{}",
        out.stderr
    );
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    // The inputs are opened before BEGIN runs: nothing was printed.
    assert_eq!(out.stdout, "");
    assert!(!out.stderr.contains("Attached"), "{}", out.stderr);
}

/// `line` is the line without its end (`\n`; a `\r` before it stays, as in awk), cut to 255
/// bytes; `nf` and `nr` are awk's NF and NR.
#[test]
fn line_nf_and_nr() {
    let long: String = (0..30).map(|i| format!("w{i:07} ")).collect(); // 270 bytes
    let data = format!("  one  two\t three  \n\n{long}\nlast\r\nno-newline");
    let prog = r#"input { printf("%d %d [%s]\n", nr, nf, line); }"#;
    let out = sonde_with_stdin(&["-q", "-e", prog], data.as_bytes());
    let expect = format!(
        "1 3 [  one  two\t three  ]\n2 0 []\n3 30 [{}]\n4 1 [last\r]\n5 1 [no-newline]\n\n\n",
        &long[..255]
    );
    assert_eq!(text(out.ok("line")), expect);
}

/// `exit()` in an input probe stops reading: the rest of that line's probes and the lines
/// after it do not run, END does. The input here never ends.
#[test]
fn exit_stops_reading_and_end_runs() {
    let prog = r#"input { @n = count(); if (nr > 2998) { printf("nr %d\n", nr); }
                          if (nr == 3000) { exit(); @after = 1; } }
                  input { @second = count(); }
                  END { printf("end %d\n", @n); }"#;
    let mut child = Command::new(sonde())
        .args(["-q", "-e", prog])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn sonde");
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = thread::spawn(move || {
        let chunk = "some line 1\n".repeat(1000);
        let start = Instant::now();
        // Until sonde closes its end (or a minute passes, when it failed to stop).
        while start.elapsed() < Duration::from_secs(60) {
            if stdin.write_all(chunk.as_bytes()).is_err() {
                break;
            }
        }
    });
    let out = read_all(child.stdout.take().expect("stdout"));
    let err = read_all(child.stderr.take().expect("stderr"));
    let (status, timed_out) = wait_with_timeout(&mut child, RUN_TIMEOUT);
    let _ = writer.join();
    let stdout = text(&out.join().unwrap_or_default());
    let stderr = text(&err.join().unwrap_or_default());
    assert!(!timed_out, "sonde did not stop at exit()\n{stderr}");
    assert_eq!(status.and_then(|s| s.code()), Some(0), "{stderr}");
    assert_eq!(
        stdout,
        "nr 2999\nnr 3000\nend 3000\n\n\n@n: 3000\n@second: 2999\n"
    );
}

/// A running sonde whose stdin we write, whose stdout lines we read as they come.
struct Live {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    seen: Vec<String>,
    stdout: Option<JoinHandle<()>>,
    stderr: Option<JoinHandle<Vec<u8>>>,
}

impl Live {
    fn start(args: &[&str]) -> Live {
        let mut child = Command::new(sonde())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn sonde");
        let stdin = child.stdin.take();
        let out = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        let stdout = thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = read_all(child.stderr.take().expect("stderr"));
        Live {
            child,
            stdin,
            lines,
            seen: Vec::new(),
            stdout: Some(stdout),
            stderr: Some(stderr),
        }
    }

    fn write(&mut self, data: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(data).expect("write to sonde");
        stdin.flush().expect("flush");
    }

    /// Waits (up to `timeout`) for a stdout line equal to `want`; true when it came.
    fn wait_line(&mut self, want: &str, timeout: Duration) -> bool {
        let start = Instant::now();
        while start.elapsed() < timeout {
            if let Ok(l) = self.lines.recv_timeout(Duration::from_millis(50)) {
                let hit = l == want;
                self.seen.push(l);
                if hit {
                    return true;
                }
            }
        }
        false
    }

    /// Closes stdin (unless `keep_stdin`), waits for the exit and returns what was printed.
    fn finish(mut self, keep_stdin: bool) -> Output {
        if !keep_stdin {
            self.stdin.take();
        }
        let (status, timed_out) = wait_with_timeout(&mut self.child, RUN_TIMEOUT);
        self.stdin.take();
        if let Some(h) = self.stdout.take() {
            let _ = h.join();
        }
        self.seen.extend(self.lines.try_iter());
        let mut stdout = self.seen.join("\n");
        if !stdout.is_empty() {
            stdout.push('\n');
        }
        Output {
            code: status.and_then(|s| s.code()),
            stdout,
            stderr: text(
                &self
                    .stderr
                    .take()
                    .map(|h| h.join().unwrap_or_default())
                    .unwrap_or_default(),
            ),
            timed_out,
        }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Interval probes fire while the input probe waits for a line that has not come.
#[test]
fn interval_fires_while_stdin_is_idle() {
    let mut live = Live::start(&[
        "-q",
        "-e",
        r#"input { printf("line %s\n", line); } interval:ms:300 { @ticks = count(); printf("tick\n"); }"#,
    ]);
    thread::sleep(Duration::from_millis(1200));
    live.write(b"x\n");
    assert!(
        live.wait_line("line x", Duration::from_secs(10)),
        "{:?}",
        live.seen
    );
    let out = live.finish(false);
    let stdout = out.ok_stdout();
    let ticks_before = stdout.lines().take_while(|l| *l != "line x").count();
    assert!(
        stdout
            .lines()
            .take_while(|l| *l != "line x")
            .all(|l| l == "tick")
            && ticks_before >= 2,
        "expected at least 2 ticks before the line:\n{stdout}"
    );
    assert!(stdout.contains("\n\n\n@ticks: "), "{stdout}");
}

/// Ctrl-C while the input probe is blocked reading ends the run: END runs, maps print, exit 0.
#[test]
fn sigint_during_a_blocked_read_prints_the_maps() {
    let mut live = Live::start(&[
        "-q",
        "-e",
        r#"input { printf("seen %s\n", field(1)); @s = sum(num(field(2))); @c[field(1)] = count(); } END { printf("end\n"); }"#,
    ]);
    live.write(b"a 1\nb -3\na 10\n");
    assert!(live.wait_line("seen a", Duration::from_secs(10)));
    assert!(live.wait_line("seen b", Duration::from_secs(10)));
    assert!(live.wait_line("seen a", Duration::from_secs(10)));
    // sonde now waits for more input; stdin stays open.
    thread::sleep(Duration::from_millis(200));
    // SAFETY: kill(2) on the pid of a child we started and have not reaped.
    unsafe {
        libc::kill(live.child.id() as libc::pid_t, libc::SIGINT);
    }
    let out = live.finish(true);
    assert_eq!(
        out.ok_stdout(),
        "seen a\nseen b\nseen a\nend\n\n\n@c[b]: 1\n@c[a]: 2\n@s: 8\n"
    );
}

/// The user sonde runs as, without privilege: `nobody`, through setpriv or runuser, when this
/// is root; the current user otherwise.
fn unprivileged(bin: &Path, args: &[&str]) -> Option<Command> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        let mut cmd = Command::new(bin);
        cmd.args(args);
        return Some(cmd);
    }
    let exists = |p: &str| Path::new(p).exists();
    if let Some(setpriv) = ["/usr/bin/setpriv", "/bin/setpriv"]
        .into_iter()
        .find(|p| exists(p))
    {
        let mut cmd = Command::new(setpriv);
        cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(bin)
            .args(args);
        return Some(cmd);
    }
    if let Some(runuser) = ["/usr/sbin/runuser", "/sbin/runuser"]
        .into_iter()
        .find(|p| exists(p))
    {
        let mut cmd = Command::new(runuser);
        cmd.args(["-u", "nobody", "--"]).arg(bin).args(args);
        return Some(cmd);
    }
    None
}

/// True when `path` and every directory above it let others in (x) and `path` lets them
/// read and execute.
fn others_can_run(path: &Path) -> bool {
    let mode = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| m.permissions().mode())
            .unwrap_or(0)
    };
    mode(path) & 0o005 == 0o005
        && path
            .ancestors()
            .skip(1)
            .filter(|p| !p.as_os_str().is_empty())
            .all(|d| mode(d) & 0o001 != 0)
}

#[test]
fn input_runs_without_root() {
    let dir = TempDir::new("input-noroot");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = if others_can_run(&sonde()) {
        sonde()
    } else {
        let copy = dir.path().join("sonde");
        std::fs::copy(sonde(), &copy).expect("copy sonde");
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
        copy
    };
    let data = write_file(&dir, "data.txt", b"GET 200 12\nPOST 500 3\nGET 404 7\n");
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o644)).unwrap();
    let prog = format!(
        r#"input:{} {{ @bytes[field(1)] = sum(num(field(3))); @n = count(); }} END {{ printf("uid %d\n", uid); }}"#,
        data.display()
    );
    let Some(cmd) = unprivileged(&bin, &["-e", &prog]) else {
        eprintln!("skipping input_runs_without_root: no setpriv or runuser");
        return;
    };
    let out = run_command(cmd, RUN_TIMEOUT);
    let stdout = out.ok_stdout();
    // SAFETY: geteuid has no preconditions.
    let uid = if unsafe { libc::geteuid() } == 0 {
        65534
    } else {
        unsafe { libc::geteuid() }
    };
    assert_eq!(
        stdout,
        format!("uid {uid}\n\n\n@bytes[POST]: 3\n@bytes[GET]: 19\n@n: 3\n")
    );
    assert!(out.stderr.contains("Attached 2 probes"), "{}", out.stderr);
}

// ---------------------------------------------------------------------------------------------
// Diagnostics

/// Asserts that `prog` is refused before running, with `code` and `words` on stderr, and the
/// same under `--check`.
fn assert_refused(prog: &str, extra: &[&str], code: &str, words: &[&str]) {
    for check in [false, true] {
        let mut args: Vec<&str> = extra.to_vec();
        if check {
            args.push("--check");
        }
        args.extend(["-e", prog]);
        let out = sonde_with_stdin(&args, b"a line\n");
        let what = format!("{args:?}");
        assert!(!out.timed_out, "{what}: timed out");
        assert_eq!(
            out.code,
            Some(1),
            "{what}: exit code\nstderr:\n{}",
            out.stderr
        );
        assert!(!out.stderr.contains("panicked"), "{what}: {}", out.stderr);
        assert!(out.stdout.is_empty(), "{what}: ran: {}", text(&out.stdout));
        assert!(
            !out.stderr.contains("Attached"),
            "{what}: ran: {}",
            out.stderr
        );
        for w in std::iter::once(&code).chain(words) {
            assert!(
                out.stderr.contains(w),
                "{what}: stderr lacks {w:?}:\n{}",
                out.stderr
            );
        }
    }
}

#[test]
fn kernel_only_things_are_refused_in_input_probes() {
    assert_refused(
        r#"input { printf("%s\n", kstack); }"#,
        &[],
        "sonde::jit::kernel_only",
        &["kstack", "userspace probes cannot"],
    );
    assert_refused(
        r#"input { @[curtask] = count(); }"#,
        &[],
        "sonde::jit::kernel_only",
        &["curtask", "userspace probes cannot"],
    );
    assert_refused(
        r#"input { printf("%s", str(arg0)); }"#,
        &[],
        "sonde::sema::builtin_unavailable",
        &["`arg0` is not available in `input` probes"],
    );
    assert_refused(
        r#"input { @n = count(); }"#,
        &["--engine", "bpf"],
        "sonde::engine::userspace_probe",
        &["--engine bpf"],
    );
}

/// The tracepoint these tests name resolves only where tracefs is readable.
fn tracefs_readable() -> bool {
    ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .iter()
        .any(|d| std::fs::read(format!("{d}/events/syscalls/sys_enter_openat/format")).is_ok())
}

#[test]
fn kernel_and_userspace_probes_do_not_mix() {
    if !tracefs_readable() {
        eprintln!("skipping kernel_and_userspace_probes_do_not_mix: tracefs is not readable");
        return;
    }
    assert_refused(
        r#"tracepoint:syscalls:sys_enter_openat { } input { }"#,
        &[],
        "sonde::engine::mixed",
        &["userspace", "kernel"],
    );
    assert_refused(
        r#"tracepoint:syscalls:sys_enter_openat { printf("%s\n", field(1)); }"#,
        &[],
        "sonde::sema::builtin_unavailable",
        &["`field` is not available in `tracepoint` probes"],
    );
}

// ---------------------------------------------------------------------------------------------
// JSON

/// `-f json` prints one JSON document a line (bpftrace 0.26 writes no empty lines before the
/// maps, as 0.17 did), holding the values the text output holds.
#[test]
fn json_output_is_ndjson_with_the_same_values() {
    // Keys with quotes, backslashes, a tab, a control byte, UTF-8 and a byte that is not
    // UTF-8, split on commas.
    let data: &[u8] =
        b"plain,5\nq\"uote,-2\nback\\slash,7\nt\tab,1\nctl\x01,3\nd\xc3\xa9j\xc3\xa0,4\nplain,10\nbad\xff,6\n";
    let prog = r#"input { printf("%s=%d\n", field(1), num(field(2))); @c[field(1)] = count(); @s = sum(num(field(2))); @last = nr; @h = hist(num(field(2))); }"#;
    let json = sonde_with_stdin(&["-F", ",", "-f", "json", "-e", prog], data);
    let json = json.ok("json");
    let txt = sonde_with_stdin(&["-q", "-F", ",", "-e", prog], data);
    let txt = txt.ok("text");

    let mut printed = Vec::new();
    let mut maps = serde_json::Map::new();
    let mut blank = 0;
    for line in json.split(|&b| b == b'\n') {
        if line.is_empty() {
            blank += 1;
            continue;
        }
        let line = std::str::from_utf8(line)
            .unwrap_or_else(|e| panic!("not UTF-8 ({e}): {}", line.escape_ascii()));
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        let kind = v["type"]
            .as_str()
            .unwrap_or_else(|| panic!("no type: {line}"));
        match kind {
            "attached_probes" => assert_eq!(v["data"]["probes"], 1),
            "printf" => printed.push(v["data"].as_str().expect("printf data").to_string()),
            "map" | "hist" => {
                for (k, val) in v["data"].as_object().expect("map data") {
                    maps.insert(k.clone(), val.clone());
                }
            }
            other => panic!("unexpected type {other}: {line}"),
        }
    }
    // The last line ends with a newline; nothing comes between the messages and the maps.
    assert_eq!(blank, 1, "{}", text(json));

    // The printf events hold what the text output printed.
    let expect_txt: &[u8] =
        b"plain=5\nq\"uote=-2\nback\\slash=7\nt\tab=1\nctl\x01=3\nd\xc3\xa9j\xc3\xa0=4\nplain=10\nbad\xff=6\n\n\n";
    assert!(txt.starts_with(expect_txt), "{}", txt.escape_ascii());
    let printed = printed.concat();
    let (utf8, bad) = printed.split_at(printed.find("bad").expect("bad line"));
    assert_eq!(
        utf8,
        "plain=5\nq\"uote=-2\nback\\slash=7\nt\tab=1\nctl\u{1}=3\ndéjà=4\nplain=10\n"
    );
    // A byte that is not UTF-8 comes out as some character (sonde: the code point of the same
    // number), the rest of the string intact.
    assert!(
        bad.starts_with("bad") && bad.ends_with("=6\n") && bad.chars().count() == 7,
        "{bad:?}"
    );

    let c = maps["@c"].as_object().expect("@c");
    assert_eq!(c.len(), 7, "{c:?}");
    for (k, n) in [
        ("plain", 2),
        ("q\"uote", 1),
        ("back\\slash", 1),
        ("t\tab", 1),
        ("ctl\u{1}", 1),
        ("déjà", 1),
    ] {
        assert_eq!(c.get(k), Some(&serde_json::json!(n)), "@c[{k:?}] in {c:?}");
    }
    assert!(
        c.iter()
            .any(|(k, v)| k.starts_with("bad") && k.chars().count() == 4 && v == 1),
        "{c:?}"
    );
    assert_eq!(maps["@s"], 34);
    assert_eq!(maps["@last"], 8);
    let buckets = maps["@h"].as_array().expect("hist buckets");
    let total: u64 = buckets.iter().map(|b| b["count"].as_u64().unwrap()).sum();
    assert_eq!(total, 8);
    // The same values as the text output.
    let txt = text(txt);
    assert!(
        txt.contains("\n@s: 34\n") && txt.contains("\n@last: 8\n"),
        "{txt}"
    );
    assert!(txt.contains("\n@c[plain]: 2\n"), "{txt}");
}
