//! `sonde tool execsnoop`: the test execs a copy of `echo` under a unique name with known
//! arguments, and a missing program, and asserts the lines libbpf-tools' execsnoop prints
//! (PCOMM PID PPID RET ARGS, each argument followed by a space): successes only by default,
//! failures too with `-x`; `-T`, `-t` and `-U` columns; `-q` quotes; `-n` and `-l` filter by
//! a part of the name or of an argument, `-u` by user; `--max-args` cuts the list (` ...`).
//! Side by side with /usr/sbin/execsnoop, the test's lines are the same.

mod common;
mod tools_support;

use common::{ATTACH_TIMEOUT, TempDir, Tracer, settle, skip_unless_root};
use std::path::Path;
use std::process::Command;
use std::time::Duration;
use tools_support::libbpf::{Reference, installed};

const NAME: &str = "sdexec_probe";

/// Runs `sonde tool execsnoop <flags>` while the echo copy `bin` runs with `alpha`, `beta
/// gamma` and `delta`, and `missing` fails to exec; returns stdout.
fn execsnoop(bin: &Path, missing: &Path, flags: &[&str]) -> String {
    let mut args = vec!["tool", "execsnoop"];
    args.extend_from_slice(flags);
    let mut tracer = Tracer::start(&args);
    assert!(tracer.wait_attached(ATTACH_TIMEOUT));
    settle();
    run_load(bin, missing);
    tracer.interrupt();
    tracer
        .finish(Duration::from_secs(10))
        .ok_stdout()
        .to_string()
}

fn run_load(bin: &Path, missing: &Path) {
    let child = Command::new(bin)
        .args(["alpha", "beta gamma", "delta"])
        .output()
        .expect("run echo copy");
    assert!(child.status.success());
    let err = Command::new(missing)
        .arg("delta")
        .spawn()
        .expect_err("missing program");
    assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
    std::thread::sleep(Duration::from_millis(300));
}

/// A copy of echo named `name` in `dir` (each test its own: tests run side by side), and
/// the path of a missing program.
fn setup(dir: &TempDir, name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let bin = dir.path().join(name);
    std::fs::copy("/bin/echo", &bin).expect("copy /bin/echo");
    (bin, dir.path().join("missing-program"))
}

/// The tests of this file run one at a time: execsnoop prints an exec's line in several
/// printf events, which an exec on another CPU at the same moment can interleave with (to be
/// fixed in the tool: one event per exec); the tests' own execs must not be that other one.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// The lines of `text` that end with `tail`.
fn ending<'a>(text: &'a str, tail: &str) -> Vec<&'a str> {
    text.lines().filter(|l| l.ends_with(tail)).collect()
}

#[test]
fn execsnoop_columns_and_filters_as_libbpf_tools() {
    if skip_unless_root("execsnoop_columns_and_filters_as_libbpf_tools") {
        return;
    }
    let _serial = one_at_a_time();
    let dir = TempDir::new("execsnoop");
    let (bin, missing) = setup(&dir, NAME);
    let me = std::process::id();
    let ok_args = format!("{} alpha beta gamma delta ", bin.display());
    let failed_args = format!("{} delta ", missing.display());

    // Default: successful execs only.
    let text = execsnoop(&bin, &missing, &[]);
    assert_eq!(
        text.lines().next(),
        Some("PCOMM            PID    PPID   RET ARGS")
    );
    let ok = ending(&text, &ok_args);
    assert_eq!(ok.len(), 1, "{text}");
    assert!(ok[0].starts_with(&format!("{NAME:<16} ")), "{}", ok[0]);
    let cols: Vec<&str> = ok[0].split_whitespace().collect();
    assert_eq!(
        [cols[2], cols[3]],
        [me.to_string().as_str(), "0"],
        "{}",
        ok[0]
    );
    assert_eq!(&ok[0][31..], format!("  0 {ok_args}"), "{}", ok[0]);
    assert!(ending(&text, &failed_args).is_empty(), "{text}");

    // -x -T -t -U: failures too, with time, seconds and uid columns.
    let text = execsnoop(&bin, &missing, &["-x", "-T", "-t", "-U"]);
    assert!(
        text.starts_with("TIME     TIME(s)  UID    PCOMM            PID    PPID   RET ARGS\n"),
        "{text}"
    );
    let failed = ending(&text, &failed_args);
    assert_eq!(failed.len(), 1, "{text}");
    let cols: Vec<&str> = failed[0].split_whitespace().collect();
    assert_eq!(cols[0].len(), 8, "HH:MM:SS time column: {}", failed[0]);
    assert!(
        cols[1].contains('.') && failed[0][9..17].ends_with(' '),
        "{}",
        failed[0]
    );
    assert_eq!(&failed[0][17..23], "0     ", "{}", failed[0]);
    assert_eq!(
        [cols[5], cols[6]],
        [me.to_string().as_str(), "-2"],
        "{}",
        failed[0]
    );
    assert_eq!(ending(&text, &ok_args).len(), 1, "{text}");

    // -q, --max-args 2: quoted, cut after two arguments.
    let text = execsnoop(
        &bin,
        &missing,
        &["-q", "--max-args", "2", "-n", "exec_probe"],
    );
    let cut = format!("\"{}\" \"alpha\" \" ...", bin.display());
    assert_eq!(ending(&text, &cut).len(), 1, "{text}");
    assert_eq!(
        text.trim_end().lines().count(),
        2,
        "-n: only the echo copy:\n{text}"
    );

    // -l: an argument's part; -u: another user's execs only.
    let text = execsnoop(&bin, &missing, &["-l", "ta gam"]);
    assert_eq!(ending(&text, &ok_args).len(), 1, "{text}");
    let text = execsnoop(&bin, &missing, &["-l", "nosuchargument"]);
    assert!(ending(&text, &ok_args).is_empty(), "{text}");
    let text = execsnoop(&bin, &missing, &["-u", "12345"]);
    assert!(ending(&text, &ok_args).is_empty(), "{text}");
}

#[test]
fn execsnoop_side_by_side_with_libbpf_tools() {
    if skip_unless_root("execsnoop_side_by_side_with_libbpf_tools") {
        return;
    }
    let _serial = one_at_a_time();
    let Some(reference_bin) = installed("execsnoop") else {
        return;
    };
    let dir = TempDir::new("execsnoop-bcc");
    let (bin, missing) = setup(&dir, "sdexec_bcc");
    for flags in [&["-x"][..], &["-q", "-U"]] {
        let mut bcc = Reference::start_path(&reference_bin, flags);
        assert!(bcc.wait_for("ARGS", ATTACH_TIMEOUT), "{}", bcc.text());
        let mut args = vec!["tool", "execsnoop"];
        args.extend_from_slice(flags);
        let mut tracer = Tracer::start(&args);
        assert!(tracer.wait_attached(ATTACH_TIMEOUT));
        settle();
        run_load(&bin, &missing);
        tracer.interrupt();
        let mine = tracer
            .finish(Duration::from_secs(10))
            .ok_stdout()
            .to_string();
        let theirs = bcc.finish(Duration::from_secs(10));
        // The test's own lines (this process's children), the same in both.
        let ppid = format!(" {:<6} ", std::process::id());
        let own = |t: &str| -> Vec<String> {
            t.lines()
                .filter(|l| l.contains(&ppid) && l.contains(&dir.path().display().to_string()))
                .map(String::from)
                .collect()
        };
        let why = format!(
            "{flags:?}\nsonde:\n{:?}\nbcc:\n{:?}",
            own(&mine),
            own(&theirs)
        );
        assert_eq!(mine.lines().next(), theirs.lines().next(), "{why}");
        assert_eq!(own(&mine), own(&theirs), "{why}");
        assert_eq!(
            own(&mine).len(),
            if flags.contains(&"-x") { 2 } else { 1 },
            "{why}"
        );
    }
}

#[test]
fn execsnoop_csv_and_json_print_a_row_per_exec() {
    if skip_unless_root("execsnoop_csv_and_json_print_a_row_per_exec") {
        return;
    }
    let _serial = one_at_a_time();
    let dir = TempDir::new("execsnoop-rows");
    let name = "sdexec_rows";
    let (bin, missing) = setup(&dir, name);
    // CSV: the header's columns, then one row per exec; `-t`'s seconds are one field.
    let text = execsnoop(&bin, &missing, &["-t", "-n", "exec_rows", "-f", "csv"]);
    let lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(lines[0], "TIME(s),PCOMM,PID,PPID,RET,ARGS", "{text}");
    assert_eq!(lines.len(), 2, "{text}");
    let f: Vec<&str> = lines[1].split(',').collect();
    assert_eq!(f.len(), 6, "{text}");
    let secs: Vec<&str> = f[0].split('.').collect();
    assert!(secs.len() == 2 && secs[1].len() == 3, "{text}");
    assert_eq!(f[1], name, "{text}");
    assert_eq!(f[3], std::process::id().to_string(), "{text}");
    assert_eq!(
        f[5],
        format!("{} alpha beta gamma delta", bin.display()),
        "{text}"
    );
    // JSON: one record per exec, keyed by the columns; numbers stay numbers.
    let text = execsnoop(&bin, &missing, &["-n", "exec_rows", "-f", "json"]);
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(r#""type": "row""#))
        .collect();
    assert_eq!(rows.len(), 1, "{text}");
    assert!(
        rows[0].starts_with(&format!(
            r#"{{"type": "row", "data": {{"PCOMM": "{name}", "PID": "#
        )),
        "{text}"
    );
    assert!(
        rows[0].ends_with(&format!(
            r#""PPID": {}, "RET": 0, "ARGS": "{} alpha beta gamma delta"}}}}"#,
            std::process::id(),
            bin.display()
        )),
        "{text}"
    );
}
