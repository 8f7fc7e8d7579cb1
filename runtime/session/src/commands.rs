//! `system()` events: the command runs with `/bin/sh -c`, its standard output becomes the
//! event's text, and Ctrl-C stops it.

use std::io;

/// Runs `cmd` with `/bin/sh -c` and returns what it wrote on stdout, or `None` when Ctrl-C
/// (or SIGTERM) arrived while it ran: the command is then killed and not waited for longer,
/// so that the run ends promptly. A signal that came before it started does not stop it: the
/// Ctrl-C that ends a run must not skip END's `system()` calls.
pub(super) fn run_system(cmd: &str) -> io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    use std::os::fd::{AsRawFd, FromRawFd};
    use std::process::{Command, Stdio};
    let signals_before = sonde_system::signals::signal_count();
    let mut child = Command::new("/bin/sh")
        .arg("-c")
        .arg(cmd)
        .stdin(Stdio::inherit())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?;
    // The output is read on a thread so that a command writing much cannot block on a full
    // pipe while this one waits for it to exit.
    let mut pipe = child.stdout.take().expect("stdout is piped");
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = pipe.read_to_end(&mut buf);
        buf
    });
    // A pidfd becomes readable when the shell exits: waiting on it ends at once then, or
    // on a signal (EINTR). Without one (before Linux 5.3), short naps.
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let raw = unsafe { libc::syscall(libc::SYS_pidfd_open, child.id() as libc::pid_t, 0) };
    let pidfd = (raw >= 0).then(|| {
        // SAFETY: `raw` is a descriptor just opened here and owned by nothing else.
        unsafe { std::os::fd::OwnedFd::from_raw_fd(raw as i32) }
    });
    loop {
        if child.try_wait()?.is_some() {
            // A grandchild that inherited the pipe could keep it open: the reader is only
            // joined once the shell exited, as `output()` would.
            return Ok(Some(reader.join().unwrap_or_default()));
        }
        if sonde_system::signals::signal_count() != signals_before {
            let _ = child.kill();
            let _ = child.wait();
            // The reader thread ends when the last writer closes the pipe; not joined.
            return Ok(None);
        }
        match &pidfd {
            Some(fd) => {
                let mut pfd = libc::pollfd {
                    fd: fd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: one valid pollfd, for the duration of the call.
                unsafe { libc::poll(&mut pfd, 1, 100) };
            }
            None => sonde_system::signals::nap(std::time::Duration::from_millis(5)),
        }
    }
}
