//! The process's stop request: SIGINT and SIGTERM set a flag that every loop of a run (the
//! event loop, the userspace engine, iterators, `system()` commands) looks at, and [`nap`]
//! sleeps in a way a signal cuts short.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

static STOP: AtomicBool = AtomicBool::new(false);
/// How many SIGINT/SIGTERM arrived.
static SIGNALS: AtomicU64 = AtomicU64::new(0);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
    SIGNALS.fetch_add(1, Ordering::SeqCst);
}

/// Installs the SIGINT/SIGTERM handlers that end a run (see [`stop_requested`]).
pub fn install_signal_handlers() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
}

/// True once Ctrl-C or SIGTERM arrived.
pub fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// How many times Ctrl-C or SIGTERM arrived: work that starts after the stop request (the
/// post-processing script's `on_end`) ends on a signal that comes after it began.
pub fn signal_count() -> u64 {
    SIGNALS.load(Ordering::SeqCst)
}

/// Sleeps for `d`, returning early on a signal (unlike `thread::sleep`, which resumes after
/// one): Ctrl-C must end the wait.
pub fn nap(d: Duration) {
    let ms = d.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: poll with no descriptors only sleeps; a signal interrupts it (EINTR).
    unsafe { libc::poll(std::ptr::null_mut(), 0, ms) };
}
