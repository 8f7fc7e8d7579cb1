//! `sonde tool execsnoop`: the test execs a copy of `echo` under a unique name with known
//! arguments, and a missing program, and asserts the lines libbpf-tools' execsnoop prints
//! (PCOMM PID PPID RET ARGS, each argument followed by a space): successes only by default,
//! failures too with `-x`; `-T`, `-t` and `-U` columns; `-q` quotes; `-n` and `-l` filter by
//! a part of the name or of an argument, `-u` by user; `--max-args` cuts the list (` ...`).
//! Side by side with /usr/sbin/execsnoop, the test's lines are the same; under two
//! simultaneous exec loads every line comes out whole (one event per exec).

mod common;
mod tools_support;

use common::{ATTACH_TIMEOUT, TempDir, Tracer, settle, skip_unless_root};
use std::path::Path;
use std::process::Command;
use std::time::Duration;
use tools_support::libbpf::{installed, side_by_side_on};

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

/// The lines of `text` that end with `tail`.
fn ending<'a>(text: &'a str, tail: &str) -> Vec<&'a str> {
    text.lines().filter(|l| l.ends_with(tail)).collect()
}

#[test]
fn execsnoop_columns_and_filters_as_libbpf_tools() {
    if skip_unless_root("execsnoop_columns_and_filters_as_libbpf_tools") {
        return;
    }
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

    // -P: the execs of this test's children (their parent is this process) only.
    let me = std::process::id().to_string();
    let text = execsnoop(&bin, &missing, &["-P", &me]);
    assert_eq!(ending(&text, &ok_args).len(), 1, "{text}");
    assert!(
        text.lines()
            .skip(1)
            .filter(|l| !l.is_empty())
            .all(|l| l.split_whitespace().nth(2) == Some(me.as_str())),
        "{text}"
    );
    let text = execsnoop(&bin, &missing, &["-P", "1"]);
    assert!(ending(&text, &ok_args).is_empty(), "{text}");
}

#[test]
fn execsnoop_side_by_side_with_libbpf_tools() {
    if skip_unless_root("execsnoop_side_by_side_with_libbpf_tools") {
        return;
    }
    if installed("execsnoop").is_none() {
        return;
    }
    let dir = TempDir::new("execsnoop-bcc");
    let (bin, missing) = setup(&dir, "sdexec_bcc");
    for flags in [&["-x"][..], &["-q", "-U"]] {
        let (sonde, bcc) = side_by_side_on("execsnoop", flags, flags, || run_load(&bin, &missing));
        let (mine, theirs) = (sonde.ok_stdout().to_string(), bcc.stdout);
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

/// Two exec-heavy loads, one per thread (so on both CPUs of a small machine): every exec's
/// line comes out whole, as one event (a line printed in pieces mixed with another CPU's).
#[test]
fn execsnoop_lines_stay_whole_under_simultaneous_execs() {
    if skip_unless_root("execsnoop_lines_stay_whole_under_simultaneous_execs") {
        return;
    }
    const EXECS: usize = 150;
    let dir = TempDir::new("execsnoop-whole");
    let loads: Vec<(std::path::PathBuf, Vec<String>)> = ["sdexec_whole_a", "sdexec_whole_b"]
        .iter()
        .map(|name| {
            let (bin, _) = setup(&dir, name);
            let tag = &name[name.len() - 1..];
            let args = (1..=8).map(|i| format!("{tag}{i}-argument")).collect();
            (bin, args)
        })
        .collect();
    let mut tracer = Tracer::start(&["tool", "execsnoop", "-n", "sdexec_whole"]);
    assert!(tracer.wait_attached(ATTACH_TIMEOUT));
    settle();
    std::thread::scope(|s| {
        for (bin, args) in &loads {
            s.spawn(move || {
                for _ in 0..EXECS {
                    let st = Command::new(bin)
                        .args(args)
                        .output()
                        .expect("run echo copy");
                    assert!(st.status.success());
                }
            });
        }
    });
    std::thread::sleep(Duration::from_millis(500));
    tracer.interrupt();
    let text = tracer
        .finish(Duration::from_secs(10))
        .ok_stdout()
        .to_string();
    let me = std::process::id().to_string();
    let mut counts = [0usize; 2];
    for line in text.lines().skip(1).filter(|l| !l.is_empty()) {
        let which = loads.iter().position(|(bin, args)| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            cols.len() == 13
                && cols[0] == bin.file_name().unwrap().to_str().unwrap()
                && cols[1].parse::<u32>().is_ok()
                && cols[2] == me
                && cols[3] == "0"
                && line.ends_with(&format!("{} {} ", bin.display(), args.join(" ")))
        });
        match which {
            Some(i) => counts[i] += 1,
            None => panic!("a malformed line: {line:?}\n{text}"),
        }
    }
    assert_eq!(counts, [EXECS, EXECS], "{text}");
}
