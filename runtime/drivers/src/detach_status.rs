//! The status line shown while probes detach: releasing hundreds of uprobe links can take
//! seconds after the traced command ended (116 pid-filtered uprobes: 6.5 s), which must not
//! look like a hang.
//!
//! On a terminal, "Detaching N probes..." is shown at once when there are many links (or
//! once detaching has lasted [`TERMINAL_DELAY`]) and erased when done. Elsewhere (a pipe, a
//! file) it is a line of its own, written only once detaching has lasted [`PLAIN_DELAY`],
//! so quick runs print nothing more than before. `-q` silences it, as it does "Attached N
//! probes".

use std::io::{IsTerminal, Write};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Links above which a terminal shows the status at once: a pid-filtered uprobe link takes
/// the kernel ~50 ms to release.
const MANY_LINKS: usize = 20;
/// How long detaching lasts before a terminal shows the status anyway.
const TERMINAL_DELAY: Duration = Duration::from_millis(300);
/// How long detaching lasts before the status is written where it cannot be erased.
pub const PLAIN_DELAY: Duration = Duration::from_secs(1);

/// Where the status goes, and how.
pub struct StatusSink {
    /// The stream (stderr).
    pub out: Box<dyn Write + Send>,
    /// True when it is a terminal: the line is erased afterwards.
    pub terminal: bool,
}

impl StatusSink {
    /// Standard error.
    pub fn stderr() -> StatusSink {
        StatusSink {
            terminal: std::io::stderr().is_terminal(),
            out: Box::new(std::io::stderr()),
        }
    }
}

/// The status of a detach in progress; dropping it ends the status (erasing the line on a
/// terminal).
pub struct DetachStatus {
    done: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl DetachStatus {
    /// Starts the status of detaching `links` links on stderr (nothing when `quiet`).
    pub fn start(links: usize, quiet: bool) -> DetachStatus {
        if quiet {
            return DetachStatus {
                done: None,
                thread: None,
            };
        }
        DetachStatus::start_on(links, StatusSink::stderr())
    }

    /// Starts the status of detaching `links` links on `sink`.
    pub fn start_on(links: usize, sink: StatusSink) -> DetachStatus {
        if links <= 1 {
            return DetachStatus {
                done: None,
                thread: None,
            };
        }
        let delay = match (sink.terminal, links > MANY_LINKS) {
            (true, true) => Duration::ZERO,
            (true, false) => TERMINAL_DELAY,
            (false, _) => PLAIN_DELAY,
        };
        let (done, rx) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("detach-status".into())
            .spawn(move || show(links, sink, delay, &rx))
            .ok();
        DetachStatus {
            done: Some(done),
            thread,
        }
    }
}

/// The status thread: waits `delay` for the end; shows the line if it did not come, and on
/// a terminal erases it at the end.
fn show(links: usize, mut sink: StatusSink, delay: Duration, done: &mpsc::Receiver<()>) {
    if delay > Duration::ZERO && done.recv_timeout(delay) != Err(mpsc::RecvTimeoutError::Timeout) {
        return;
    }
    let line = format!("Detaching {links} probes...");
    if sink.terminal {
        let _ = write!(sink.out, "{line}");
        let _ = sink.out.flush();
        let _ = done.recv();
        let _ = write!(sink.out, "\r\x1b[K");
    } else {
        let _ = writeln!(sink.out, "{line}");
    }
    let _ = sink.out.flush();
}

impl Drop for DetachStatus {
    fn drop(&mut self) {
        drop(self.done.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A sink that keeps what is written.
    #[derive(Clone, Default)]
    struct Kept(Arc<Mutex<Vec<u8>>>);

    impl Write for Kept {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn detach(links: usize, terminal: bool, takes: Duration) -> String {
        let kept = Kept::default();
        let sink = StatusSink {
            out: Box::new(kept.clone()),
            terminal,
        };
        let status = DetachStatus::start_on(links, sink);
        std::thread::sleep(takes);
        drop(status);
        String::from_utf8(kept.0.lock().unwrap().clone()).unwrap()
    }

    #[test]
    fn a_slow_detach_says_so_where_nothing_can_be_erased() {
        assert_eq!(
            detach(116, false, PLAIN_DELAY + Duration::from_millis(300)),
            "Detaching 116 probes...\n"
        );
        // A quick one prints nothing.
        assert_eq!(detach(116, false, Duration::ZERO), "");
    }

    #[test]
    fn a_terminal_shows_the_line_and_erases_it() {
        assert_eq!(
            detach(116, true, Duration::from_millis(50)),
            "Detaching 116 probes...\r\x1b[K"
        );
        assert_eq!(
            detach(5, true, TERMINAL_DELAY + Duration::from_millis(200)),
            "Detaching 5 probes...\r\x1b[K"
        );
        assert_eq!(detach(5, true, Duration::ZERO), "");
        assert_eq!(detach(1, true, Duration::from_millis(400)), "");
    }
}
