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
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;

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

    #[test]
    fn words_and_quotes() {
        assert_eq!(
            split_words("ls -l  'a b' \"c\""),
            vec!["ls", "-l", "a b", "c"]
        );
        assert!(split_words("   ").is_empty());
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
