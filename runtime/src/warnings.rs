//! Run-time warnings on stderr ("Warning: skipping ..."), which `--no-warnings` silences
//! as it silences the checker's warnings. Counters of lost data are not warnings: they are
//! always reported.

use std::sync::atomic::{AtomicBool, Ordering};

static SILENCED: AtomicBool = AtomicBool::new(false);

/// Silences (or restores) warnings for the rest of the process.
pub fn silence(silenced: bool) {
    SILENCED.store(silenced, Ordering::Relaxed);
}

/// True when warnings are silenced.
pub fn silenced() -> bool {
    SILENCED.load(Ordering::Relaxed)
}

/// Prints `Warning: {message}` on stderr unless warnings are silenced.
pub fn warn(message: &str) {
    if !silenced() {
        eprintln!("Warning: {message}");
    }
}
