//! Runs BEGIN and END programs exactly once, synchronously, from sonde itself, and
//! `self:signal:SIGUSR1` programs each time sonde receives `SIGUSR1`.
//!
//! They are compiled as raw tracepoint programs (section `raw_tp/...`) and executed with
//! `BPF_PROG_TEST_RUN` (raw tracepoints support it since Linux 5.10): the program runs in
//! sonde's own task on the current CPU, so `pid`, `comm` and the like describe sonde, as in
//! bpftrace. Maps, ring buffer output and the tracing helpers all work there.

#![allow(clippy::result_large_err)] // Diagnostic is the project-wide error type.

use sonde_compiler::program::{AttachSpec, ProgramSpec};
use sonde_lang::diag::Diagnostic;

use std::sync::atomic::{AtomicBool, Ordering};

use crate::errors::permission_denied;
use crate::load::Loaded;
use crate::syscall;

/// The kernel's internal `ENOTSUPP` (524), which `BPF_PROG_TEST_RUN` returns for program
/// types without test-run support; libc does not define it.
const ENOTSUPP: i32 = 524;

/// Which one-shot probes to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// BEGIN: before the other probes are attached.
    Begin,
    /// END: after the other probes are detached.
    End,
    /// `self:signal:NAME`: sonde received this signal.
    Signal(i32),
}

impl Trigger {
    fn matches(self, spec: &AttachSpec) -> bool {
        match (self, spec) {
            (Trigger::Begin, AttachSpec::Begin) | (Trigger::End, AttachSpec::End) => true,
            (Trigger::Signal(a), AttachSpec::Signal { signal: b }) => a == *b,
            _ => false,
        }
    }
}

static SIGUSR1_PENDING: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigusr1(_: libc::c_int) {
    SIGUSR1_PENDING.store(true, Ordering::SeqCst);
}

/// Catches `SIGUSR1` for the run (as bpftrace does, whether or not the script has a
/// `self:signal:SIGUSR1` probe: the signal no longer ends sonde); the event loop runs the
/// probes when [`take_sigusr1`] says it arrived.
pub fn install_sigusr1() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGUSR1, on_sigusr1 as *const () as libc::sighandler_t);
    }
}

/// True when `SIGUSR1` arrived since the last call (several arrivals in between count once,
/// as the kernel merges pending signals).
pub fn take_sigusr1() -> bool {
    SIGUSR1_PENDING.swap(false, Ordering::SeqCst)
}

/// Runs the program `symbol` once with an empty context; returns its return value.
pub fn run_once(loaded: &Loaded, program: &ProgramSpec) -> Result<u32, Diagnostic> {
    let Some(fd) = loaded.program_fd(&program.symbol) else {
        return Err(Diagnostic::error(
            "sonde::attach::program_type",
            program.span,
            format!("program {} is not loaded", program.symbol),
        )
        .with_help("this is a sonde bug; please report it with the script"));
    };
    syscall::prog_test_run(fd, &[]).map_err(|e| match e.raw_os_error() {
        Some(libc::EPERM | libc::EACCES) => {
            permission_denied(program.span, "running a BEGIN, END or self probe")
        }
        Some(ENOTSUPP | libc::EINVAL) => Diagnostic::error(
            "sonde::attach::trigger",
            program.span,
            format!("the kernel cannot run this probe once (BPF_PROG_TEST_RUN: {e})"),
        )
        .with_help(format!(
            "BEGIN, END and self programs must be raw tracepoint programs; section `{}` is not",
            program.section
        )),
        _ => Diagnostic::error(
            "sonde::attach::trigger",
            program.span,
            format!("cannot run this probe: {e}"),
        ),
    })
}

/// Runs every program attached at `which` (in script order). Returns how many ran.
pub fn run(loaded: &Loaded, which: Trigger) -> Result<usize, Diagnostic> {
    let mut ran = 0;
    for program in loaded.programs() {
        for target in &program.attach {
            if which.matches(&target.spec) {
                run_once(loaded, program)?;
                ran += 1;
            }
        }
    }
    Ok(ran)
}
