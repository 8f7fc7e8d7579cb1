//! `-c CMD`: a child process that is created before tracing starts but held before `exec`
//! until every probe is attached, so that its first events are seen.
//!
//! The child is also held once more when it exits: sonde seizes it with `ptrace`
//! (`PTRACE_O_TRACEEXIT` only, so it runs normally otherwise) and the event loop sees it
//! stopped at the exit event while its address space still exists. That is the moment to
//! snapshot `/proc/PID/maps`, so that user stacks and `usym()` of a short-lived command still
//! resolve when the maps are printed after it is gone. Signals sent to the child pass through
//! unchanged; a child stopped by a job-control signal is released from tracing.

use std::ffi::CString;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// A child created with `-c`, waiting to be released.
#[derive(Debug)]
pub struct HeldChild {
    pid: libc::pid_t,
    release: Option<std::fs::File>,
    exited: bool,
    /// Whether the child is seized with ptrace (held at its exit event).
    traced: bool,
}

impl HeldChild {
    /// Splits `cmd` like a shell would for simple words (no quoting rules beyond `'` and `"`),
    /// creates the process, and holds it before `exec`.
    pub fn spawn(cmd: &str) -> io::Result<HeldChild> {
        let words = split_words(cmd);
        if words.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "-c needs a command",
            ));
        }
        let program = resolve_program(&words[0]).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("{}: command not found", words[0]),
            )
        })?;
        // The child execs only after the probes are attached: whatever would make exec fail
        // is found now, so that sonde stops before attaching, with the reason.
        check_executable(&program)?;
        let cwords: Vec<CString> = words
            .iter()
            .map(|w| CString::new(w.as_str()))
            .collect::<Result<_, _>>()
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL byte in -c command"))?;
        let cprog = CString::new(program.into_os_string().into_vec())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL byte in -c command"))?;
        let mut argv: Vec<*const libc::c_char> = cwords.iter().map(|c| c.as_ptr()).collect();
        argv.push(std::ptr::null());
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors pipe2() writes.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: pipe2 returned two fresh descriptors that we now own.
        let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let wr_fd = wr.as_raw_fd();
        // SAFETY: after fork the child only calls async-signal-safe functions (read, execv,
        // _exit) on memory prepared before the fork.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(io::Error::last_os_error());
        }
        if pid == 0 {
            // SAFETY: see above; the child never returns from this block.
            unsafe {
                let mut b = [0u8; 1];
                // The write end is the parent's alone: a sonde that dies (even by SIGKILL)
                // closes it, and this child exits instead of waiting for ever.
                libc::close(wr_fd);
                // Blocks until the parent writes (released) or closes the pipe (abandoned).
                if libc::read(rd.as_raw_fd(), b.as_mut_ptr().cast(), 1) == 1 {
                    libc::execv(cprog.as_ptr(), argv.as_ptr());
                }
                libc::_exit(127);
            }
        }
        drop(rd);
        // SAFETY: PTRACE_SEIZE on our own child with no address arguments. Failure (a
        // seccomp or Yama policy) only loses the exit hold.
        let traced = unsafe {
            libc::ptrace(
                libc::PTRACE_SEIZE,
                pid,
                std::ptr::null_mut::<libc::c_void>(),
                libc::PTRACE_O_TRACEEXIT as usize as *mut libc::c_void,
            )
        } == 0;
        Ok(HeldChild {
            pid,
            release: Some(std::fs::File::from(wr)),
            exited: false,
            traced,
        })
    }

    /// The child's pid.
    pub fn pid(&self) -> u32 {
        self.pid as u32
    }

    /// Lets the child run its command.
    pub fn release(&mut self) -> io::Result<()> {
        if let Some(mut f) = self.release.take() {
            f.write_all(b"g")?;
        }
        Ok(())
    }

    /// True once the child has exited (reaps it).
    pub fn exited(&mut self) -> bool {
        self.poll(&mut |_| {})
    }

    /// Handles what happened to the child since the last call and returns true once it has
    /// exited (and was reaped). When the child is stopped at its exit event, `at_exit` is
    /// called with its pid while its address space still exists, then the child goes on.
    pub fn poll(&mut self, at_exit: &mut dyn FnMut(u32)) -> bool {
        while !self.exited {
            let mut status = 0;
            // SAFETY: waitpid on our own child with a valid status pointer.
            let r = unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG | libc::__WALL) };
            if r == 0 {
                break;
            }
            if r != self.pid || libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
                self.exited = true;
                break;
            }
            if libc::WIFSTOPPED(status) {
                self.resume_stopped(status, at_exit);
            }
        }
        self.exited
    }

    /// Lets a ptrace-stopped child go on: after `at_exit` at its exit event, with its signal
    /// at a signal-delivery stop; a job-control stop ends the tracing (the child stays
    /// stopped, as it would without sonde).
    fn resume_stopped(&mut self, status: i32, at_exit: &mut dyn FnMut(u32)) {
        let event = (status >> 16) & 0xff;
        let (request, signal) = if event == libc::PTRACE_EVENT_EXIT {
            at_exit(self.pid as u32);
            (libc::PTRACE_CONT, 0)
        } else if event == libc::PTRACE_EVENT_STOP {
            self.traced = false;
            (libc::PTRACE_DETACH, 0)
        } else {
            (libc::PTRACE_CONT, libc::WSTOPSIG(status))
        };
        // SAFETY: resuming our own ptrace-stopped child; the data argument is a signal number.
        unsafe {
            libc::ptrace(
                request,
                self.pid,
                std::ptr::null_mut::<libc::c_void>(),
                signal as usize as *mut libc::c_void,
            );
        }
    }

    /// Whether the child is held at its exit event (see the module docs).
    pub fn traced(&self) -> bool {
        self.traced
    }

    /// Kills the child if it still runs, and reaps it.
    pub fn kill(&mut self) {
        self.release = None;
        if !self.exited() {
            // SAFETY: signalling and reaping our own child.
            unsafe {
                libc::kill(self.pid, libc::SIGKILL);
                let mut status = 0;
                // A traced child may report stops before it is gone: resume until the end.
                while libc::waitpid(self.pid, &mut status, libc::__WALL) == self.pid
                    && libc::WIFSTOPPED(status)
                {
                    libc::ptrace(
                        libc::PTRACE_CONT,
                        self.pid,
                        std::ptr::null_mut::<libc::c_void>(),
                        std::ptr::null_mut::<libc::c_void>(),
                    );
                }
            }
            self.exited = true;
        }
    }
}

impl Drop for HeldChild {
    fn drop(&mut self) {
        if self.release.is_some() {
            // Never released: closing the pipe makes it exit.
            self.kill();
        }
    }
}

/// The process given with `-p`, watched so that a run ends when it exits (as bpftrace does).
#[derive(Debug)]
pub struct WatchedPid {
    pid: u32,
    /// A pidfd (readable once the process has exited), or `None` on kernels without
    /// `pidfd_open` (or for a thread id), where `/proc/PID/stat` is read instead.
    pidfd: Option<OwnedFd>,
}

impl WatchedPid {
    /// Starts watching process `pid`; an error when there is no such process.
    pub fn open(pid: u32) -> io::Result<WatchedPid> {
        let gone = || {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("no process with pid {pid}"),
            )
        };
        let Some(raw) = libc::pid_t::try_from(pid).ok().filter(|&p| p > 0) else {
            return Err(gone());
        };
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, raw, 0) };
        if fd >= 0 {
            return Ok(WatchedPid {
                pid,
                // SAFETY: the kernel just returned this descriptor; nothing else owns it.
                pidfd: Some(unsafe { OwnedFd::from_raw_fd(fd as i32) }),
            });
        }
        let err = io::Error::last_os_error();
        let w = WatchedPid { pid, pidfd: None };
        if err.raw_os_error() == Some(libc::ESRCH) || w.exited() {
            return Err(gone());
        }
        Ok(w)
    }

    /// The pid watched.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// True once the process has exited (a zombie counts as exited).
    pub fn exited(&self) -> bool {
        match &self.pidfd {
            Some(fd) => {
                let mut pfd = libc::pollfd {
                    fd: fd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: one valid pollfd, no wait.
                unsafe { libc::poll(&mut pfd, 1, 0) > 0 }
            }
            None => match std::fs::read_to_string(format!("/proc/{}/stat", self.pid)) {
                // The state follows the command name, which is in parentheses.
                Ok(stat) => stat
                    .rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().next())
                    .is_none_or(|state| matches!(state, "Z" | "X" | "x")),
                Err(_) => true,
            },
        }
    }
}

/// Finds `name` like `execvp` would: a path containing `/` as is, else through `$PATH`.
fn resolve_program(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        return Some(PathBuf::from(name));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Fails (with the reason) when `exec` of `path` would: it does not exist, is not a regular
/// file, is not executable by this user, or is neither an ELF executable nor a script with a
/// `#!` line. (bpftrace refuses scripts too; sonde runs them, as a shell would.)
pub fn check_executable(path: &Path) -> io::Result<()> {
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| {
        let why = match e.kind() {
            io::ErrorKind::NotFound => "no such file".to_string(),
            _ => e.to_string(),
        };
        io::Error::new(e.kind(), format!("{shown}: {why}"))
    })?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{shown}: not a regular file"),
        ));
    }
    let cpath = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL byte in -c command"))?;
    // SAFETY: `cpath` is a valid NUL-terminated path for the duration of the call.
    if unsafe { libc::access(cpath.as_ptr(), libc::X_OK) } != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{shown}: not executable (permission denied)"),
        ));
    }
    let mut magic = [0u8; 4];
    // Opened without blocking: a FIFO is refused by its kind.
    let n = sonde_system::user_files::open(path, sonde_system::user_files::Pipes::Refuse)
        .and_then(|mut f| read_up_to(&mut f, &mut magic))
        .map_err(|e| io::Error::new(e.kind(), format!("{shown}: {e}")))?;
    let magic = &magic[..n];
    if magic == b"\x7fELF" || magic.starts_with(b"#!") {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{shown}: not an executable (neither an ELF binary nor a script starting with #!)"
            ),
        ))
    }
}

/// Reads into `buf` until it is full or the file ends; returns the bytes read.
fn read_up_to(f: &mut std::fs::File, buf: &mut [u8]) -> io::Result<usize> {
    use std::io::Read;
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// Splits a command line into words, honouring single and double quotes.
pub fn split_words(s: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in s.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            (None, c) => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child whose sonde goes away before releasing it (the pipe closed, as when sonde is
    /// killed) exits without running its command.
    #[test]
    fn an_abandoned_child_exits_without_running() {
        let marker =
            std::env::temp_dir().join(format!("sonde-child-abandoned-{}", std::process::id()));
        let _ = std::fs::remove_file(&marker);
        let mut c = HeldChild::spawn(&format!("/usr/bin/touch {}", marker.display())).unwrap();
        c.release = None;
        let start = std::time::Instant::now();
        while !c.poll(&mut |_| {}) {
            if start.elapsed() > std::time::Duration::from_secs(10) {
                c.kill();
                panic!("the abandoned child still waits");
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(!marker.exists(), "the abandoned child ran its command");
    }

    #[test]
    fn words_and_quotes() {
        assert_eq!(
            split_words("ls -l  'a b' \"c\""),
            vec!["ls", "-l", "a b", "c"]
        );
        assert!(split_words("   ").is_empty());
    }

    #[test]
    fn commands_that_cannot_run_are_refused_before_forking() {
        let dir = std::env::temp_dir().join(format!("sonde-child-exec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let write = |name: &str, text: &[u8], mode: u32| {
            use std::os::unix::fs::PermissionsExt;
            let p = dir.join(name);
            std::fs::write(&p, text).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
            p.display().to_string()
        };
        let text = write("text", b"hello\n", 0o755);
        let script = write("script", b"#!/bin/sh\nexit 0\n", 0o755);
        let unexecutable = write("noexec", b"#!/bin/sh\nexit 0\n", 0o644);
        let missing = dir.join("missing").display().to_string();
        let err = |cmd: &str| HeldChild::spawn(cmd).unwrap_err().to_string();
        assert!(
            err(&text).ends_with(
                "not an executable (neither an ELF binary nor a script starting with #!)"
            ),
            "{}",
            err(&text)
        );
        assert!(
            err(&missing).ends_with("missing: no such file"),
            "{}",
            err(&missing)
        );
        assert!(err(&dir.display().to_string()).ends_with("not a regular file"));
        // Without any x bit, even root cannot execute it.
        assert!(err(&unexecutable).ends_with("not executable (permission denied)"));
        assert!(err("no-such-command-anywhere").ends_with("command not found"));
        let mut c = HeldChild::spawn(&script).expect("a #! script runs");
        c.kill();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn watched_pid_sees_the_exit() {
        assert!(WatchedPid::open(0).is_err());
        assert!(WatchedPid::open(u32::MAX).is_err());
        let mut child = std::process::Command::new("/bin/sleep")
            .arg("0.2")
            .spawn()
            .unwrap();
        let w = WatchedPid::open(child.id()).unwrap();
        assert!(!w.exited());
        let fallback = WatchedPid {
            pid: child.id(),
            pidfd: None,
        };
        assert!(!fallback.exited());
        // Not reaped yet: a zombie has exited too.
        for _ in 0..200 {
            if w.exited() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(w.exited());
        assert!(fallback.exited());
        child.wait().unwrap();
        let e = WatchedPid::open(child.id()).unwrap_err();
        assert_eq!(e.to_string(), format!("no process with pid {}", child.id()));
    }

    #[test]
    fn exit_is_held_while_the_address_space_still_exists() {
        let mut c = HeldChild::spawn("/bin/true").unwrap();
        assert!(c.traced(), "PTRACE_SEIZE failed");
        let pid = c.pid();
        c.release().unwrap();
        let mut maps_at_exit = None;
        for _ in 0..500 {
            if c.poll(&mut |p| {
                assert_eq!(p, pid);
                maps_at_exit = std::fs::read_to_string(format!("/proc/{p}/maps")).ok();
            }) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(c.exited());
        let maps = maps_at_exit.expect("the exit event was seen");
        assert!(maps.lines().any(|l| l.ends_with("/true")), "{maps}");
    }

    #[test]
    fn held_child_runs_only_after_release() {
        let dir = std::env::temp_dir().join(format!("sonde-child-{}", std::process::id()));
        let _ = std::fs::remove_file(&dir);
        let mut c = HeldChild::spawn(&format!("touch {}", dir.display())).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(!dir.exists(), "the child ran before release");
        c.release().unwrap();
        for _ in 0..100 {
            if c.exited() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(dir.exists());
        let _ = std::fs::remove_file(&dir);
    }
}
