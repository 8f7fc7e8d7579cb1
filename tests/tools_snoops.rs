//! The event tools that trace processes' exits, signals, stats and syncs (`exitsnoop`,
//! `sigsnoop`, `killsnoop`, `statsnoop`, `syncsnoop`): each runs on the known load of
//! `tests/targets/tools_events.c`, side by side with its libbpf-tools namesake where there is
//! one (`/usr/sbin/NAME`, same flags), and the test asserts the same header line and the same
//! rows (time columns left out) for the load's own processes, and the rows the load makes.

mod common;
mod tools_support;

use common::{ATTACH_TIMEOUT, Target, TempDir, Tracer, compile_target, settle, skip_unless_root};
use std::time::Duration;
use tools_support::libbpf::{rows, side_by_side};

/// Starts `tools_events MODE` (blocked until its go line), built in `dir`.
fn load(dir: &TempDir, mode: &str) -> Target {
    let bin = compile_target(dir, "tools_events", &["-O2", "-g", "-pthread"]);
    let file = dir.path().join("sync.dat");
    Target::spawn(&bin, &[mode, file.to_str().expect("utf-8 path")])
}

/// Runs `tool FLAGS` and the reference with the same flags on the load `mode`; returns the
/// header line and the rows `keep` selects of sonde's output, after checking the reference
/// printed the same header and the same rows. The last output is kept in `LAST` for checks of
/// the columns left out.
fn compare(
    tool: &str,
    mode: &str,
    flags: &[&str],
    skip: &[usize],
    keep: impl Fn(&str, &[&str]) -> bool,
) -> (String, Vec<Vec<String>>) {
    let dir = TempDir::new(tool);
    let mut target = load(&dir, mode);
    let pid = target.pid();
    let flags: Vec<&str> = flags
        .iter()
        .map(|f| if *f == "PID" { pid.as_str() } else { f })
        .collect();
    let (sonde, bcc) = side_by_side(tool, &flags, &flags, &mut target);
    let text = sonde.ok_stdout();
    let header = text.lines().next().unwrap_or_default().to_string();
    assert_eq!(
        bcc.stdout.lines().next(),
        Some(header.as_str()),
        "{tool} {flags:?}: the header lines differ\nsonde:\n{text}\nreference:\n{}",
        bcc.stdout
    );
    let mine = rows(text, skip, |c| keep(&pid, c));
    let theirs = rows(&bcc.stdout, skip, |c| keep(&pid, c));
    assert_eq!(
        mine, theirs,
        "{tool} {flags:?}: the rows differ\nsonde:\n{text}\nreference:\n{}",
        bcc.stdout
    );
    LAST.with(|l| *l.borrow_mut() = text.to_string());
    (header, mine)
}

thread_local! {
    /// sonde's output in the last `compare` of this thread.
    static LAST: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

fn row(cols: &[&str]) -> Vec<String> {
    cols.iter().map(|c| c.to_string()).collect()
}

#[test]
fn exitsnoop_matches_libbpf_tools() {
    if skip_unless_root("exitsnoop_matches_libbpf_tools") {
        return;
    }
    let me = std::process::id().to_string();
    // Rows of the load (PID) and of its children (PPID), the AGE(s) column left out.
    let ours = |pid: &str, c: &[&str]| c.get(1) == Some(&pid) || c.get(2) == Some(&pid);
    let (header, got) = compare("exitsnoop", "exit", &[], &[4], ours);
    assert_eq!(
        header,
        "PCOMM            PID     PPID    TID     AGE(s)  EXIT_CODE"
    );
    // PCOMM and EXIT_CODE of each row.
    let mut ends: Vec<Vec<String>> = got.iter().map(|r| [&r[..1], &r[4..]].concat()).collect();
    ends.sort();
    let mut want = vec![
        row(&["tools_events", "0"]),
        row(&["tools_events", "code", "3"]),
        row(&["tools_events", "signal", "15", "(Terminated)"]),
        row(&["tools_events", "0"]),
    ];
    want.sort();
    assert_eq!(ends, want, "{got:?}");
    let load = got
        .iter()
        .find(|r| r[2] == me)
        .expect("the load's own exit");
    assert!(
        got.iter().all(|r| r[1] == r[3]),
        "one row per process: {got:?}"
    );
    assert!(
        got.iter().filter(|r| r[2] == load[1]).count() == 3,
        "{got:?}"
    );

    // -T: the two threads of the first child exit too; -t: a time column first.
    let ours_t = |pid: &str, c: &[&str]| c.get(2) == Some(&pid) || c.get(3) == Some(&pid);
    let (header, got) = compare("exitsnoop", "exit", &["-T", "-t"], &[0, 5], ours_t);
    assert!(header.starts_with("TIME(s)  PCOMM "), "{header}");
    assert_eq!(got.len(), 6, "{got:?}");
    let threads = got.iter().filter(|r| r[1] != r[3]).count();
    assert_eq!(threads, 2, "{got:?}");
    let text = LAST.with(|l| l.borrow().clone());
    for l in text.lines().skip(1).filter(|l| !l.is_empty()) {
        let t = l.as_bytes();
        assert!(
            t[2] == b':' && t[5] == b':' && t[8] == b' ',
            "HH:MM:SS: {l}"
        );
    }

    // -x: the failed exits only.
    let (_, got) = compare("exitsnoop", "exit", &["-x"], &[4], ours);
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(got.iter().all(|r| r[4] != "0"), "{got:?}");

    // -p: the load's own exit only (its children are other processes), its parent this test.
    let any = |_: &str, _: &[&str]| true;
    let (_, got) = compare("exitsnoop", "exit", &["-p", "PID"], &[4], any);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0][2], me, "{got:?}");
    assert_eq!(got[0][4], "0", "{got:?}");
}

/// A cgroup v2 made for a test, removed (once empty) when dropped.
struct Cgroup(std::path::PathBuf);

impl Cgroup {
    /// A new cgroup under the cgroup2 mount (`/sys/fs/cgroup/unified` on a hybrid
    /// hierarchy, else `/sys/fs/cgroup`).
    fn new(tag: &str) -> Cgroup {
        let dir = common::cgroup2_root().join(format!("sonde-{tag}-{}", std::process::id()));
        std::fs::create_dir(&dir).expect("create a cgroup");
        Cgroup(dir)
    }

    /// Moves process `pid` into the cgroup.
    fn enter(&self, pid: &str) {
        std::fs::write(self.0.join("cgroup.procs"), pid).expect("move into the cgroup");
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

#[test]
fn exitsnoop_cgroup_matches_libbpf_tools() {
    if skip_unless_root("exitsnoop_cgroup_matches_libbpf_tools") {
        return;
    }
    // -c: only the exits of the processes in the cgroup or in one below it (libbpf-tools'
    // bpf_current_task_under_cgroup): the load and its children, whether they run in the
    // cgroup itself or in a child cgroup of it.
    for below in [false, true] {
        let cg = Cgroup::new(if below { "exitsnoop-up" } else { "exitsnoop" });
        let child = cg.0.join("child");
        if below {
            std::fs::create_dir(&child).expect("create a child cgroup");
        }
        let path = cg.0.to_str().expect("utf-8 path").to_string();
        let dir = TempDir::new("exitsnoop-cg");
        let mut target = load(&dir, "exit");
        let pid = target.pid();
        match below {
            true => std::fs::write(child.join("cgroup.procs"), &pid).expect("move into the cgroup"),
            false => cg.enter(&pid),
        }
        let flags = ["-c", path.as_str()];
        let (sonde, bcc) = side_by_side("exitsnoop", &flags, &flags, &mut target);
        let text = sonde.ok_stdout();
        let all = |_: &[&str]| true;
        let mine = rows(text, &[4], all);
        assert_eq!(
            mine,
            rows(&bcc.stdout, &[4], all),
            "below={below} sonde:\n{text}\nreference:\n{}",
            bcc.stdout
        );
        assert_eq!(mine.len(), 4, "below={below}: {text}");
        assert!(mine.iter().all(|r| r[1] == pid || r[2] == pid), "{text}");
        drop(target);
        let _ = std::fs::remove_dir(&child);
    }
}

#[test]
fn sigsnoop_and_killsnoop_match_libbpf_tools() {
    if skip_unless_root("sigsnoop_and_killsnoop_match_libbpf_tools") {
        return;
    }
    let header = "TIME     PID     COMM             SIG       TPID    RESULT";
    // Rows of signals the load sends (the PID column), the TIME column left out.
    let sent = |pid: &str, c: &[&str]| c.get(1) == Some(&pid);
    let (h, got) = compare("sigsnoop", "kill", &[], &[0], sent);
    assert_eq!(h, header);
    let sigs: Vec<&str> = got.iter().map(|r| r[2].as_str()).collect();
    // SIGUSR1 and SIGUSR2 to itself, SIGTERM to its child, SIGCHLD to this test at its exit;
    // the kill() of a missing process generates no signal.
    assert_eq!(sigs, ["10", "12", "15", "17"], "{got:?}");

    let (h, got) = compare("sigsnoop", "kill", &["-k", "-n"], &[0], sent);
    assert_eq!(h, header);
    let sigs: Vec<(&str, &str)> = got.iter().map(|r| (r[2].as_str(), r[4].as_str())).collect();
    assert_eq!(
        sigs,
        [
            ("SIGHUP", "-3"),
            ("SIGTERM", "0"),
            ("SIGUSR1", "0"),
            ("SIGUSR2", "0")
        ],
        "{got:?}"
    );

    // killsnoop is sigsnoop -k; -x keeps the failed kill(), -s one signal, -p the sender.
    let (h, got) = compare("killsnoop", "kill", &["-x"], &[0], sent);
    assert_eq!(h, header);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0][2..], ["1", "4194303", "-3"], "{got:?}");
    let (_, got) = compare("killsnoop", "kill", &["-s", "15", "-p", "PID"], &[0], sent);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0][2], "15", "{got:?}");
    let (_, got) = compare("sigsnoop", "kill", &["-s", "17", "-p", "PID"], &[0], sent);
    assert_eq!(got.len(), 1, "{got:?}");
}

#[test]
fn statsnoop_matches_libbpf_tools() {
    if skip_unless_root("statsnoop_matches_libbpf_tools") {
        return;
    }
    let header = "PID     COMM                 RET  ERR  PATH";
    // libbpf-tools 0.26's statsnoop attaches none of its probes (its tracepoint check looks
    // for `syscalls/statfs` instead of `syscalls/sys_enter_statfs`, fixed in bcc 4d3e1c9a):
    // it prints its header and no rows, so only the header is compared while it is so.
    let ours = |pid: &str, c: &[&str]| c.first() == Some(&pid) && c.len() == 5;
    let dir = TempDir::new("statsnoop");
    let mut target = load(&dir, "stat");
    let (sonde, bcc) = side_by_side("statsnoop", &[], &[], &mut target);
    let text = sonde.ok_stdout();
    assert_eq!(text.lines().next(), Some(header), "{text}");
    assert_eq!(bcc.stdout.lines().next(), Some(header), "{}", bcc.stdout);
    let pid = target.pid();
    let mine = rows(text, &[], |c| ours(&pid, c));
    let theirs = rows(&bcc.stdout, &[], |c| ours(&pid, c));
    if !theirs.is_empty() {
        assert_eq!(mine, theirs, "sonde:\n{text}\nreference:\n{}", bcc.stdout);
    }
    let count = |path: &str, ret: &str, err: &str| {
        let r = row(&[&pid, "tools_events", ret, err, path]);
        mine.iter().filter(|m| **m == r).count()
    };
    // 5 stat(), 1 lstat() and 1 statfs() of "/"; 3 stat() of a missing file.
    assert_eq!(count("/", "0", "0"), 7, "{text}");
    assert_eq!(
        count("/nonexistent/sonde-statsnoop", "-1", "2"),
        3,
        "{text}"
    );

    // -x: only the failures; -t: seconds since the first event, 9 decimals; -p: the load.
    let dir = TempDir::new("statsnoop-x");
    let mut target = load(&dir, "stat");
    let pid = target.pid();
    let (sonde, _) = side_by_side("statsnoop", &["-x", "-t", "-p", &pid], &[], &mut target);
    let text = sonde.ok_stdout();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some(format!("TIME(s)        {header}").as_str())
    );
    let rest: Vec<&str> = lines.filter(|l| !l.is_empty()).collect();
    assert_eq!(rest.len(), 3, "{text}");
    for l in rest {
        let cols: Vec<&str> = l.split_whitespace().collect();
        assert_eq!(
            cols[1..],
            [
                pid.as_str(),
                "tools_events",
                "-1",
                "2",
                "/nonexistent/sonde-statsnoop"
            ],
            "{l}"
        );
        let (secs, frac) = cols[0].split_once('.').expect("seconds.fraction");
        assert!(secs.parse::<u64>().is_ok() && frac.len() == 9, "{l}");
        assert_eq!(l.find(&pid), Some(15), "TIME(s) is 14 wide: {l}");
    }
}

#[test]
fn syncsnoop_prints_each_sync_call() {
    if skip_unless_root("syncsnoop_prints_each_sync_call") {
        return;
    }
    // libbpf-tools has no syncsnoop: the reference is bcc's tools/syncsnoop_example.txt.
    let dir = TempDir::new("syncsnoop");
    let mut target = load(&dir, "sync");
    let mut tracer = Tracer::start(&["tool", "syncsnoop"]);
    let attached = tracer.wait_attached(ATTACH_TIMEOUT);
    settle();
    target.go();
    let code = target.wait(Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(300));
    tracer.interrupt();
    let out = tracer.finish(Duration::from_secs(10));
    assert!(attached && code == Some(0), "{}", out.stderr);
    let text = out.ok_stdout();
    assert_eq!(
        text.lines().next(),
        Some("TIME(s)            COMM             CALL            ")
    );
    let calls: Vec<&str> = text
        .lines()
        .filter(|l| l.get(19..36) == Some("tools_events     "))
        .map(|l| l[36..].trim_end())
        .collect();
    assert_eq!(
        calls,
        [
            "fsync",
            "fsync",
            "fdatasync",
            "syncfs",
            "sync_file_range",
            "msync"
        ],
        "{text}"
    );
    for l in text.lines().skip(1).filter(|l| l.contains("tools_events")) {
        let ts = &l[..18];
        let (secs, frac) = ts.trim_end().split_once('.').expect("seconds.fraction");
        assert!(secs.parse::<u64>().is_ok(), "{l}");
        assert!(
            frac.len() == 9 && frac.ends_with("000"),
            "microseconds, as bcc: {l}"
        );
    }
}

#[test]
fn verbose_flag_is_sondes_own() {
    if skip_unless_root("verbose_flag_is_sondes_own") {
        return;
    }
    // libbpf-tools' -v (verbose debug output) is sonde's -v: accepted by every new tool and
    // not passed to the script (which would refuse an unknown named parameter).
    let help = common::run_sonde(&["tool", "killsnoop", "-h"]);
    assert!(
        help.ok_stdout()
            .contains("  -v, --verbose        Verbose debug output (sonde's -v"),
        "{}",
        help.stdout
    );
    let mut tracer = Tracer::start(&["tool", "killsnoop", "-v", "-p", "1"]);
    let attached = tracer.wait_attached(ATTACH_TIMEOUT);
    tracer.interrupt();
    let out = tracer.finish(Duration::from_secs(10));
    assert!(attached, "{}", out.stderr);
    assert!(
        out.ok_stdout().starts_with("TIME     PID"),
        "{}",
        out.stdout
    );
}

#[test]
fn exitsnoop_csv_and_json_print_a_row_per_exit() {
    if skip_unless_root("exitsnoop_csv_and_json_print_a_row_per_exit") {
        return;
    }
    let dir = TempDir::new("exitsnoop-rows");
    // CSV: the header's columns, then a row per exit of the load's children (PPID: the
    // load), its EXIT_CODE the words of the text line (`signal 15 (Terminated)`).
    let mut target = load(&dir, "exit");
    let pid = target.pid();
    let out = common::trace_target(&["tool", "exitsnoop", "-f", "csv"], &mut target);
    let text = out.ok_stdout();
    let lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(lines[0], "PCOMM,PID,PPID,TID,AGE(s),EXIT_CODE", "{text}");
    let mut codes: Vec<&str> = lines
        .iter()
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|f| f.len() == 6 && f[2] == pid)
        .map(|f| {
            assert_eq!(f[0], "tools_events", "{text}");
            assert!(
                f[4].split_once('.').is_some_and(|(_, c)| c.len() == 2),
                "{text}"
            );
            f[5]
        })
        .collect();
    codes.sort();
    assert_eq!(codes, ["0", "code 3", "signal 15 (Terminated)"], "{text}");
    // JSON: a record per exit keyed by the columns; numbers stay numbers.
    let mut target = load(&dir, "exit");
    let pid = target.pid();
    let out = common::trace_target(&["tool", "exitsnoop", "-f", "json"], &mut target);
    let text = out.ok_stdout();
    let ours: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(&format!(r#""PPID": {pid}, "#)))
        .collect();
    assert_eq!(ours.len(), 3, "{text}");
    for l in &ours {
        assert!(
            l.starts_with(r#"{"type": "row", "data": {"PCOMM": "tools_events", "PID": "#),
            "{text}"
        );
    }
    assert!(
        ours.iter()
            .any(|l| l.ends_with(r#""EXIT_CODE": "signal 15 (Terminated)"}}"#)),
        "{text}"
    );
}
