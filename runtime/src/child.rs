//! `-c CMD`: a child process that is created before tracing starts but held before `exec`
//! until every probe is attached, so that its first events are seen.

use std::io::{self, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

/// A child created with `-c`, waiting to be released.
#[derive(Debug)]
pub struct HeldChild {
    child: Child,
    release: Option<std::fs::File>,
}

impl HeldChild {
    /// Splits `cmd` like a shell would for simple words (no quoting rules beyond `'` and `"`),
    /// creates the process, and holds it before `exec`.
    pub fn spawn(cmd: &str) -> io::Result<HeldChild> {
        let words = split_words(cmd);
        let Some((prog, args)) = words.split_first() else {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "-c needs a command"));
        };
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors pipe() writes.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: pipe2 returned two fresh descriptors that we now own.
        let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let mut command = Command::new(prog);
        command.args(args);
        let rd_raw = std::os::fd::AsRawFd::as_raw_fd(&rd);
        let wr_raw = std::os::fd::AsRawFd::as_raw_fd(&wr);
        // SAFETY: the closure only calls async-signal-safe functions (close, read).
        unsafe {
            command.pre_exec(move || {
                libc::close(wr_raw);
                let mut b = [0u8; 1];
                // Blocks until the parent writes (released) or closes the pipe (abandoned).
                let n = libc::read(rd_raw, b.as_mut_ptr().cast(), 1);
                if n != 1 {
                    libc::_exit(127);
                }
                Ok(())
            });
        }
        let child = command.spawn()?;
        drop(rd);
        Ok(HeldChild { child, release: Some(std::fs::File::from(wr)) })
    }

    /// The child's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
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
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    /// Kills the child if it still runs.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for HeldChild {
    fn drop(&mut self) {
        if self.release.is_some() {
            // Never released: closing the pipe makes it exit.
            self.release = None;
            let _ = self.child.wait();
        }
    }
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
        assert_eq!(split_words("ls -l  'a b' \"c\""), vec!["ls", "-l", "a b", "c"]);
        assert!(split_words("   ").is_empty());
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
