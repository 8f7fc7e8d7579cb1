//! `sonde repl` driven through a real terminal (tmux, on a server of the test's own), as a
//! person types: probes entered and triggered, a map printed, a second probe updating the
//! same map, the first detached, a tracepoint name completed with Tab, a syntax error
//! recovered from, printf output above the prompt, a watched map, an `input` entry run in
//! the userspace engine, quit — with the screen checked at each step and no probe, link or
//! pinned map left behind.
//!
//! The probes filter on the test's own thread: other tracers and tests may run alongside.

mod common;

use common::{TempDir, anon_fds, skip_unless_root, sonde};
use std::process::Command;
use std::time::{Duration, Instant};

/// A tmux server and one window running `sonde repl`, killed on drop.
struct Term {
    socket: String,
    dir: TempDir,
}

impl Term {
    fn start(tag: &str) -> Term {
        let dir = TempDir::new(tag);
        let socket = format!("sonde-{tag}-{}", std::process::id());
        let cmd = format!(
            "SONDE_HISTORY={}/history {} repl; echo \"[repl exited $?]\"; sleep 30",
            dir.path().display(),
            sonde().display()
        );
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
