//! `sonde repl` driven through a real terminal (tmux, on a server of the test's own), as a
//! person types: probes entered and triggered, a map printed, a second probe updating the
//! same map, the first detached, a tracepoint name completed with Tab, a syntax error
//! recovered from, printf output above the prompt, a watched map, an `input` entry run in
//! the userspace engine, quit — with the screen checked at each step and no probe, link or
//! pinned map left behind; the README's session as written, entries that make a valid
//! script one after another, an entry left open (continuation prompt, a `(` ended by the
//! probe's `}`), paths planted where sessions once pinned their maps, and a session killed
//! while an entry loads.
//!
//! The probes filter on the test's own thread: other tracers and tests may run alongside.

mod common;

use common::{TempDir, anon_fds, skip_unless_root, sonde};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A tmux server and one window running `sonde repl`, killed on drop.
struct Term {
    socket: String,
    dir: TempDir,
}

impl Term {
    fn start(tag: &str) -> Term {
        Term::with_command(tag, |dir| {
            format!(
                "SONDE_HISTORY={}/history {} repl",
                dir.display(),
                sonde().display()
            )
        })
    }

    /// A window running the shell command `repl(dir)` (given the test's directory), which
    /// starts the session.
    fn with_command(tag: &str, repl: impl FnOnce(&Path) -> String) -> Term {
        let dir = TempDir::new(tag);
        let socket = format!("sonde-{tag}-{}", std::process::id());
        let cmd = format!("{}; echo \"[repl exited $?]\"; sleep 30", repl(dir.path()));
        let ok = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-s",
                "t",
            ])
            .args(["-x", "160", "-y", "50", &cmd])
            .status()
            .expect("tmux runs (the tests install it)");
        assert!(ok.success(), "tmux new-session failed");
        Term { socket, dir }
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .expect("tmux runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Types `text` literally.
    fn type_text(&self, text: &str) {
        self.tmux(&["send-keys", "-t", "t", "-l", text]);
    }

    /// Presses keys by tmux name (`Enter`, `Tab`, `C-u`).
    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "t"];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    /// Waits for an empty prompt (as a person does before typing), then types `line` and
    /// Enter.
    fn line(&self, line: &str) {
        self.wait("the prompt", 20, |s| {
            s.lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(str::trim_end)
                == Some("sonde>")
        });
        self.type_text(line);
        self.keys(&["Enter"]);
    }

    /// Waits for the continuation prompt of an entry left open.
    fn wait_more(&self) {
        self.wait("the continuation prompt", 20, |s| {
            s.lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(str::trim)
                == Some("...>")
        });
    }

    /// Types `text` and Enter at once (the next line of an entry left open).
    fn more(&self, text: &str) {
        self.type_text(text);
        self.keys(&["Enter"]);
    }

    /// The screen and its scrollback, lines joined where they wrapped.
    fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-J", "-t", "t", "-S", "-1000"])
    }

    /// Waits until the screen satisfies `ok`; panics with the screen after `secs`.
    fn wait(&self, what: &str, secs: u64, ok: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if ok(&s) {
                return s;
            }
            if start.elapsed() > Duration::from_secs(secs) {
                panic!("waited {secs} s for {what}; the screen:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until `needle` appears on the screen `n` times.
    fn wait_count(&self, needle: &str, n: usize) -> String {
        self.wait(&format!("{n}× `{needle}`"), 20, |s| {
            s.matches(needle).count() >= n
        })
    }

    /// The pid of the sonde process in the window.
    fn sonde_pid(&self) -> u32 {
        let shell: u32 = self
            .tmux(&["display-message", "-p", "-t", "t", "#{pane_pid}"])
            .trim()
            .parse()
            .expect("pane pid");
        let children = std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children"))
            .unwrap_or_default();
        children
            .split_whitespace()
            .filter_map(|p| p.parse::<u32>().ok())
            .find(|p| {
                std::fs::read_to_string(format!("/proc/{p}/comm"))
                    .is_ok_and(|c| c.trim() == "sonde")
            })
            .expect("sonde runs in the window")
    }
}

impl Drop for Term {
    fn drop(&mut self) {
        self.tmux(&["kill-server"]);
        let _ = &self.dir;
    }
}

/// Calls getppid `n` times (the probes count this process's calls).
fn getppid(n: usize) {
    for _ in 0..n {
        // SAFETY: getppid has no preconditions.
        unsafe { libc::getppid() };
    }
}

fn links(pid: u32) -> usize {
    anon_fds(pid).iter().filter(|k| *k == "bpf_link").count()
}

#[test]
fn a_session_attaches_shares_maps_detaches_completes_and_quits_clean() {
    if skip_unless_root("a_session_attaches_shares_maps_detaches_completes_and_quits_clean") {
        return;
    }
    // This thread's id: tests run in parallel threads of one process.
    // SAFETY: gettid has no preconditions.
    let me = unsafe { libc::gettid() };
    let t = Term::start("repl");
    t.wait("the prompt", 20, |s| s.contains("sonde> "));
    let pid = t.sonde_pid();
    let pin_dir = format!("/sys/fs/bpf/sonde-{pid}");

    // A probe; its map printed.
    t.line(&format!(
        "tracepoint:syscalls:sys_enter_getppid /tid == {me}/ {{ @calls = count(); }}"
    ));
    t.wait_count("[1] attached 1 probe", 1);
    assert_eq!(links(pid), 1);
    getppid(5);
    t.line(":print @calls");
    t.wait_count("@calls: 5", 1);

    // A second entry, over two lines, updating the same map.
    t.line(&format!(
        "tracepoint:syscalls:sys_exit_getppid /tid == {me}/ {{"
    ));
    t.more("@calls = count(); @exits = count(); }");
    t.wait_count("[2] attached 1 probe", 1);
    assert_eq!(links(pid), 2);
    getppid(3);
    t.line(":print @calls");
    t.wait_count("@calls: 11", 1);

    // The first detached: only exits count now.
    t.line(":detach 1");
    t.wait_count("[1] detached", 1);
    assert_eq!(links(pid), 1);
    getppid(2);
    t.line(":print @calls");
    t.wait_count("@calls: 13", 1);
    t.line(":list");
    let s = t.wait_count("[2] tracepoint:syscalls:sys_exit_getppid", 1);
    assert!(!s.contains("[1] tracepoint"), "{s}");
    t.line(":maps");
    t.wait_count("@exits: count", 1);

    // Tab completes a tracepoint name from the kernel's list.
    t.line("");
    t.type_text("tracepoint:syscalls:sys_enter_getpp");
    t.keys(&["Tab"]);
    t.wait("the completed name", 10, |s| {
        s.contains("sonde> tracepoint:syscalls:sys_enter_getppid")
    });
    // Ctrl-C drops the line, not the session.
    t.keys(&["C-c"]);

    // A syntax error is shown inline and changes nothing.
    t.line("BEGIN { @x = ; }");
    t.wait("the diagnostic", 10, |s| s.contains("sonde::parse"));
    t.line(":list");
    t.wait_count("[2] tracepoint:syscalls:sys_exit_getppid", 2);
    assert_eq!(links(pid), 1);

    // printf output appears while the prompt waits.
    t.line(&format!(
        "tracepoint:syscalls:sys_enter_getppid /tid == {me}/ {{ printf(\"hello %d\\n\", @calls); }}"
    ));
    t.wait_count("[3] attached 1 probe", 1);
    getppid(1);
    t.wait_count("hello 13", 1);

    // A watched map, stopped by a key.
    t.line(":watch @exits 0.2");
    t.wait_count("@exits every 0.2s", 1);
    getppid(1);
    t.wait_count("@exits: 7", 1);
    // Ctrl-C stops the view (any key would), not the session.
    t.keys(&["C-c"]);
    t.wait("the prompt after the watch", 10, |s| {
        s.trim_end().ends_with("sonde>")
    });

    // The script so far: the entries still attached.
    t.line(":script");
    let s = t.wait_count("printf(\"hello %d\\n\", @calls)", 2);
    assert!(s.contains("sys_exit_getppid"), "{s}");

    // Quit: maps printed, everything detached. Nothing is pinned between loads (the
    // session holds its maps open), so nothing outlives the process.
    assert!(
        !std::path::Path::new(&pin_dir).exists(),
        "{pin_dir} pinned between loads"
    );
    t.line(":quit");
    let s = t.wait_count("[repl exited 0]", 1);
    assert!(s.contains("@exits: 7"), "{s}");
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists() || links(pid) == 0);
    assert!(
        !std::path::Path::new(&pin_dir).exists(),
        "{pin_dir} left behind"
    );
    // The history was saved.
    let history = std::fs::read_to_string(t.dir.path().join("history")).unwrap_or_default();
    assert!(history.contains(":print @calls"), "{history}");
}

#[test]
fn a_map_that_would_change_type_is_refused_and_the_session_goes_on() {
    if skip_unless_root("a_map_that_would_change_type_is_refused_and_the_session_goes_on") {
        return;
    }
    // This thread's id: tests run in parallel threads of one process.
    // SAFETY: gettid has no preconditions.
    let me = unsafe { libc::gettid() };
    let t = Term::start("repl-types");
    t.wait("the prompt", 20, |s| s.contains("sonde> "));
    t.line(&format!(
        "tracepoint:syscalls:sys_enter_getppid /tid == {me}/ {{ @v = 1; }}"
    ));
    // Typed ahead while the entry loads: kept for the next prompt.
    t.more(":maps");
    t.wait_count("[1] attached 1 probe", 1);
    t.wait_count("@v: int64", 1);
    t.line(&format!(
        "tracepoint:syscalls:sys_enter_getppid /tid == {me}/ {{ @v = \"text\"; }}"
    ));
    t.wait("the type error", 10, |s| s.contains("@v"));
    // An iterator does not run in a session: refused, no id taken.
    t.line("iter:task { printf(\"%d\\n\", ctx.task.pid); }");
    t.wait("the iterator refusal", 10, |s| {
        s.contains("sonde::repl::iter")
    });
    // The refused entries took no id.
    t.line("BEGIN { printf(\"begin ran\\n\"); }");
    t.wait_count("begin ran", 1);
    t.line(":list");
    let s = t.wait_count("[2] BEGIN", 1);
    assert!(
        s.contains("[1] tracepoint:syscalls:sys_enter_getppid"),
        "{s}"
    );
    // An entry of userspace probes runs at once, over its file, with the session's macros.
    t.line("macro twice(x) { x * 2 }");
    t.wait_count("[3] defined", 1);
    let log = t.dir.path().join("latency.log");
    std::fs::write(&log, "read 10\nwrite 7\nread 5\n").expect("write the log");
    t.line(&format!(
        "input:{} {{ @by[field(1)] = sum(twice(num(field(2)))); }}",
        log.display()
    ));
    t.wait_count("@by[read]: 30", 1);
    t.wait_count("@by[write]: 14", 1);
    getppid(1);
    t.line(":q");
    let s = t.wait_count("[repl exited 0]", 1);
    assert!(s.contains("@v: 1"), "{s}");
    // The userspace run's maps are its own.
    assert_eq!(s.matches("@by[read]: 30").count(), 1, "{s}");
}

/// The names under `/sys/fs/bpf` that mention `pid`.
fn bpffs_names_of(pid: u32) -> Vec<String> {
    let pid = pid.to_string();
    std::fs::read_dir("/sys/fs/bpf")
        .map(|d| {
            d.filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned()))
                .filter(|n| n.contains(&pid))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn the_readme_session_runs_as_written() {
    if skip_unless_root("the_readme_session_runs_as_written") {
        return;
    }
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("the README");
    let entries = [
        "tracepoint:syscalls:sys_enter_read { @start[tid] = nsecs; }",
        "tracepoint:syscalls:sys_exit_read /has_key(@start, tid)/ {",
        "@us[comm] = hist((nsecs - @start[tid]) / 1000); delete(@start, tid); }",
    ];
    for e in entries {
        assert!(
            readme.contains(e),
            "the README's session no longer has `{e}`"
        );
    }
    for c in [":watch @us 2", ":detach 1", ":quit"] {
        assert!(
            readme.contains(&format!("sonde> {c}")),
            "no `{c}` in the README"
        );
    }
    let t = Term::start("repl-readme");
    t.wait("the prompt", 20, |s| s.contains("sonde> "));
    t.line(entries[0]);
    t.wait_count("[1] attached 1 probe", 1);
    t.line(entries[1]);
    t.wait_more();
    t.more(entries[2]);
    t.wait_count("[2] attached 1 probe", 1);
    let reads = || {
        for _ in 0..20 {
            let _ = std::fs::read("/proc/self/stat");
        }
    };
    reads();
    t.line(":watch @us 2");
    t.wait_count("@us every 2s", 1);
    reads();
    t.wait("a histogram", 10, |s| s.contains("@us["));
    t.keys(&["C-c"]);
    t.line(":detach 1");
    t.wait_count("[1] detached", 1);
    t.line(":quit");
    let s = t.wait_count("[repl exited 0]", 1);
    assert!(!s.contains("sonde::"), "{s}");
}

#[test]
fn entries_that_make_a_valid_script_load_one_after_another() {
    if skip_unless_root("entries_that_make_a_valid_script_load_one_after_another") {
        return;
    }
    // SAFETY: gettid has no preconditions.
    let me = unsafe { libc::gettid() };
    let probe = format!("tracepoint:syscalls:sys_enter_getppid /tid == {me}/");
    let t = Term::start("repl-valid");
    t.wait("the prompt", 20, |s| s.contains("sonde> "));
    let entries = [
        format!("{probe} {{ @n = count(); @s = \"ab\"; @k[\"a\"] = 1; }}"),
        // A keyed histogram, an aggregation larger than a counter.
        format!("{probe} {{ @h[comm] = hist(5); @l = lhist(3, 0, 10, 1); }}"),
        // Longer strings into the maps of the first entry, in a value, a key and a tuple.
        format!("{probe} {{ @s = comm; @k[comm] = 2; @t = (comm, 7); }}"),
        format!("{probe} {{ @st[kstack(3)] = count(); }}"),
        format!("{probe} {{ @st[kstack] = count(); @n = count(); }}"),
    ];
    for (i, e) in entries.iter().enumerate() {
        t.line(e);
        t.wait_count(&format!("[{}] attached 1 probe", i + 1), 1);
    }
    getppid(2);
    t.line(":print @n");
    t.wait_count("@n: 4", 1);
    t.line(":print @t");
    t.wait_count("@t: (", 1);
    t.line(":q");
    let s = t.wait_count("[repl exited 0]", 1);
    assert!(!s.contains("sonde::"), "{s}");
    assert!(s.contains("@k[a]: 1"), "{s}");
    assert!(s.contains("@h["), "{s}");
}

#[test]
fn an_entry_left_open_shows_a_continuation_prompt_and_its_closing_brace_ends_it() {
    if skip_unless_root(
        "an_entry_left_open_shows_a_continuation_prompt_and_its_closing_brace_ends_it",
    ) {
        return;
    }
    let t = Term::start("repl-open");
    t.wait("the prompt", 20, |s| s.contains("sonde> "));
    t.line("BEGIN {");
    t.wait_more();
    t.more("printf(\"two lines\\n\"); }");
    t.wait_count("two lines", 1);
    // A parenthesis left open: the probe's `}` ends the entry, and the parser says why.
    t.line("BEGIN { @x = count( }");
    t.wait("the syntax error", 10, |s| s.contains("sonde::parse"));
    // The next command is a command, not more of the entry.
    t.line(":list");
    t.wait_count("[1] BEGIN", 1);
    // Ctrl-C drops an open entry, all its lines.
    t.line("BEGIN { @dropped = 1;");
    t.wait_more();
    t.keys(&["C-c"]);
    t.line(":maps");
    t.wait_count("no maps", 1);
    t.line(":q");
    let s = t.wait_count("[repl exited 0]", 1);
    assert!(!s.contains("@dropped:"), "{s}");
    assert!(!s.contains("@x:"), "{s}");
}

/// Removes what a test planted in bpffs.
struct Planted(Vec<PathBuf>);

impl Drop for Planted {
    fn drop(&mut self) {
        for p in self.0.iter().rev() {
            let _ = std::fs::remove_file(p).or_else(|_| std::fs::remove_dir(p));
        }
    }
}

#[test]
fn paths_planted_where_sessions_pinned_their_maps_change_nothing() {
    if skip_unless_root("paths_planted_where_sessions_pinned_their_maps_change_nothing") {
        return;
    }
    // SAFETY: gettid has no preconditions.
    let me = unsafe { libc::gettid() };
    // The session's pid is known before it starts: the shell's, which execs sonde.
    let t = Term::with_command("repl-plant", |dir| {
        format!(
            "sh -c 'echo $$ > {d}/pid; while [ ! -e {d}/go ]; do sleep 0.05; done; SONDE_HISTORY={d}/history exec {sonde} repl'",
            d = dir.display(),
            sonde = sonde().display()
        )
    });
    let pid_file = t.dir.path().join("pid");
    let start = Instant::now();
    let pid: u32 = loop {
        if let Some(p) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            break p;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "no pid file");
        std::thread::sleep(Duration::from_millis(20));
    };
    // Another user's directory (as it might be), and the session's old predictable path
    // made a link to it; in it, names the old sessions pinned under.
    let victim = PathBuf::from(format!(
        "/sys/fs/bpf/sonde-test-victim-{}-{pid}",
        std::process::id()
    ));
    let old = PathBuf::from(format!("/sys/fs/bpf/sonde-{pid}"));
    let mut planted = Planted(Vec::new());
    if std::fs::create_dir(&victim).is_err() {
        eprintln!("skipped: no bpffs at /sys/fs/bpf");
        std::fs::write(t.dir.path().join("go"), "").expect("go");
        return;
    }
    planted.0.push(victim.clone());
    let keep = victim.join("keep");
    std::os::unix::fs::symlink("/nonexistent", &keep).expect("a link in bpffs");
    planted.0.push(keep.clone());
    for d in ["counters", "events"] {
        std::fs::create_dir(victim.join(d)).expect("a directory in bpffs");
        planted.0.push(victim.join(d));
    }
    std::os::unix::fs::symlink(&victim, &old).expect("the planted link");
    planted.0.push(old.clone());
    std::fs::write(t.dir.path().join("go"), "").expect("go");

    t.wait("the prompt", 20, |s| s.contains("sonde> "));
    t.line(&format!(
        "tracepoint:syscalls:sys_enter_getppid /tid == {me}/ {{ @calls = count(); printf(\"call\\n\"); }}"
    ));
    t.wait_count("[1] attached 1 probe", 1);
    getppid(3);
    t.line(":print @calls");
    t.wait_count("@calls: 3", 1);
    t.line(":q");
    t.wait_count("[repl exited 0]", 1);
    let mut names: Vec<String> = std::fs::read_dir(&victim)
        .expect("the directory is still there")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["counters", "events", "keep"]);
    assert!(std::fs::symlink_metadata(&old).is_ok_and(|m| m.file_type().is_symlink()));
    assert!(std::fs::symlink_metadata(&keep).is_ok_and(|m| m.file_type().is_symlink()));
}

#[test]
fn a_session_killed_while_an_entry_loads_leaves_nothing_pinned() {
    if skip_unless_root("a_session_killed_while_an_entry_loads_leaves_nothing_pinned") {
        return;
    }
    let t = Term::start("repl-kill");
    t.wait("the prompt", 20, |s| s.contains("sonde> "));
    let pid = t.sonde_pid();
    assert_eq!(bpffs_names_of(pid), Vec::<String>::new());
    let old = PathBuf::from(format!("/sys/fs/bpf/sonde-{pid}"));
    t.line("tracepoint:syscalls:sys_enter_getppid { @calls = count(); @h = hist(1); }");
    // Watch the load: nothing of the session may appear in the system's bpffs, then kill it
    // as soon as anything does, or once the entry is attached.
    let start = Instant::now();
    let mut seen = Vec::new();
    for i in 0u64.. {
        seen = bpffs_names_of(pid);
        if !seen.is_empty() || start.elapsed() > Duration::from_secs(20) {
            break;
        }
        if i % 100 == 0 && t.screen().contains("[1] attached") {
            break;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    // SAFETY: kill has no memory preconditions; `pid` is the session's.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    t.wait_count("[repl exited 137]", 1);
    assert_eq!(
        seen,
        Vec::<String>::new(),
        "pinned in /sys/fs/bpf while loading"
    );
    assert!(!old.exists(), "{} left behind", old.display());
    assert_eq!(bpffs_names_of(pid), Vec::<String>::new());
}
