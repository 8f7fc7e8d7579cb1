//! The thread that owns a REPL session's kernel state ([`Live`]): it handles the probes'
//! events as they arrive, and runs what the prompt asks of the session in between.
//!
//! What the probes print goes through the line editor's external printer, whole lines at a
//! time: above the prompt while a line is being edited, straight out otherwise.

#![allow(clippy::result_large_err)] // Diagnostic is the project-wide error type.

use std::io::{self, Write};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::thread::JoinHandle;
use std::time::Duration;

use sonde_drivers::child::HeldChild;
use sonde_drivers::live::Live;
use sonde_lang::diag::Diagnostic;
use sonde_session::OutputOptions;

/// Something the prompt asks of the session.
type Job = Box<dyn FnOnce(&mut Session) + Send>;

/// What the session thread owns: the kernel state and the commands started by `:run`
/// (traced by this thread, which alone may wait for them).
pub struct Session {
    /// The kernel state.
    pub live: Live,
    children: Vec<HeldChild>,
    notices: Box<dyn Write>,
}

impl Session {
    /// Starts `cmd` as `-c` does; returns its pid.
    pub fn run(&mut self, cmd: &str) -> io::Result<u32> {
        let mut child = HeldChild::spawn(cmd)?;
        child.release()?;
        let pid = child.pid();
        self.children.push(child);
        Ok(pid)
    }

    /// Reports the `:run` commands that exited.
    fn reap(&mut self) {
        let notices = &mut self.notices;
        self.children.retain_mut(|c| {
            if c.poll(&mut |_| {}) {
                let _ = writeln!(notices, "[cpid {} exited]", c.pid());
                let _ = notices.flush();
                false
            } else {
                true
            }
        });
    }
}

/// Prints whole lines above the prompt while the user edits one.
pub type LinePrinter = Box<dyn FnMut(String) + Send>;

/// The prompt's handle on the session thread.
pub struct Pump {
    jobs: Option<Sender<Job>>,
    thread: Option<JoinHandle<()>>,
}

/// How often the session looks for events while no job arrives.
const TICK: Duration = Duration::from_millis(10);

/// The editor's external printer (standard output when there is none).
struct Screen {
    printer: Option<Arc<std::sync::Mutex<LinePrinter>>>,
    /// A line not yet complete (held back from the external printer).
    partial: Vec<u8>,
}

impl Write for Screen {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &self.printer {
            Some(p) => {
                self.partial.extend_from_slice(buf);
                if let Some(end) = self.partial.iter().rposition(|&b| b == b'\n') {
                    let lines: Vec<u8> = self.partial.drain(..=end).collect();
                    let text = String::from_utf8_lossy(&lines).into_owned();
                    if let Ok(mut p) = p.lock() {
                        p(text);
                    }
                }
                Ok(buf.len())
            }
            None => {
                let mut out = io::stdout().lock();
                out.write_all(buf)?;
                Ok(buf.len())
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stdout().flush()
    }
}

impl Pump {
    /// Starts the session thread, printing through `printer` when there is one. Errors: the
    /// session cannot start (no bpffs).
    pub fn start(opts: OutputOptions, printer: Option<LinePrinter>) -> Result<Pump, Diagnostic> {
        let (jobs, rx) = channel::<Job>();
        let (ready_tx, ready_rx) = channel();
        let printer = printer.map(|p| Arc::new(std::sync::Mutex::new(p)));
        let thread = std::thread::Builder::new()
            .name("sonde-session".into())
            .spawn(move || {
                let factory = Box::new(move || -> Box<dyn Write> {
                    Box::new(Screen {
                        printer: printer.clone(),
                        partial: Vec::new(),
                    })
                });
                let notices = factory();
                match Live::new(opts, factory) {
                    Ok(live) => {
                        let _ = ready_tx.send(Ok(()));
                        let session = Session {
                            live,
                            children: Vec::new(),
                            notices,
                        };
                        serve(session, &rx);
                    }
                    Err(d) => {
                        let _ = ready_tx.send(Err(d));
                    }
                }
            })
            .map_err(|e| {
                Diagnostic::error(
                    "sonde::repl::thread",
                    sonde_lang::span::Span::default(),
                    format!("cannot start the session thread: {e}"),
                )
            })?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(Pump {
                jobs: Some(jobs),
                thread: Some(thread),
            }),
            Ok(Err(d)) => Err(d),
            Err(_) => Err(Diagnostic::error(
                "sonde::repl::thread",
                sonde_lang::span::Span::default(),
                "the session thread ended at its start",
            )),
        }
    }

    /// Runs `f` on the session and returns its result (`None` if the session thread is
    /// gone).
    pub fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Session) -> T + Send + 'static,
    ) -> Option<T> {
        let (tx, rx) = channel();
        self.jobs
            .as_ref()?
            .send(Box::new(move |s: &mut Session| {
                let _ = tx.send(f(s));
            }))
            .ok()?;
        rx.recv().ok()
    }

    /// Ends the session thread (after the caller finished the session); kills the `:run`
    /// commands still running, as `-c` does at exit.
    pub fn stop(mut self) {
        self.jobs = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The session thread's loop: jobs as they come, events in between, until the prompt
/// hangs up.
fn serve(mut s: Session, jobs: &Receiver<Job>) {
    loop {
        match jobs.recv_timeout(Duration::ZERO) {
            Ok(job) => {
                job(&mut s);
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => {}
        }
        s.live.poll(TICK);
        s.reap();
    }
    let _ = s.live.finish();
    for c in &mut s.children {
        c.kill();
    }
}
