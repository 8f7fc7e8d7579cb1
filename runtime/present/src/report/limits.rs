//! The bounds of one call of the script in time: its wall-clock limit, Ctrl-C and SIGTERM,
//! and its output. Rhai asks [`progress`] between operations; a `Some` ends the call with
//! `ErrorTerminated`, whose token (a [`Stopped`] name) [`super::diag`] turns into the
//! diagnostic that names the limit.

use super::Shared;
use rhai::Dynamic;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Why a call was stopped between operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stopped {
    /// It ran longer than its time limit.
    Time,
    /// It was still running [`super::SIGNAL_GRACE`] after Ctrl-C or SIGTERM.
    Signal,
    /// It printed more than [`super::MAX_OUTPUT`].
    Output,
}

impl From<Stopped> for Dynamic {
    /// The token rhai carries in `ErrorTerminated`.
    fn from(s: Stopped) -> Dynamic {
        s.name().into()
    }
}

impl Stopped {
    fn name(self) -> &'static str {
        match self {
            Stopped::Time => "time",
            Stopped::Signal => "signal",
            Stopped::Output => "output",
        }
    }

    /// The reason an `ErrorTerminated` token names.
    pub fn from_token(token: &Dynamic) -> Option<Stopped> {
        let name = token.clone().into_string().ok()?;
        [Stopped::Time, Stopped::Signal, Stopped::Output]
            .into_iter()
            .find(|s| s.name() == name)
    }
}

/// The clock and signal count of the running call.
#[derive(Clone, Copy, Debug)]
pub struct Watch {
    start: Instant,
    /// How long a call may run.
    pub limit: Duration,
    /// The signals that had arrived when the call began.
    signals: u64,
    /// When the call first saw a signal that came after it began.
    signalled: Option<Instant>,
}

impl Watch {
    /// A watch with time limit `limit`, started now.
    pub fn new(limit: Duration) -> Watch {
        Watch {
            start: Instant::now(),
            limit,
            signals: sonde_system::signals::signal_count(),
            signalled: None,
        }
    }

    /// Starts the clock of a new call.
    pub fn restart(&mut self) {
        *self = Watch::new(self.limit);
    }

    /// Why the call must stop now, if it must: its time is up, or a signal came after it
    /// began and it is still running [`super::SIGNAL_GRACE`] later (a callback that a
    /// Ctrl-C merely interrupts finishes long before).
    fn check(&mut self) -> Option<Stopped> {
        let now = Instant::now();
        if now.duration_since(self.start) > self.limit {
            return Some(Stopped::Time);
        }
        if self.signalled.is_none() && sonde_system::signals::signal_count() > self.signals {
            self.signalled = Some(now);
        }
        match self.signalled {
            Some(at) if now.duration_since(at) >= super::SIGNAL_GRACE => Some(Stopped::Signal),
            _ => None,
        }
    }
}

/// How often (in operations) the clock is read.
const CLOCK_EVERY: u64 = 64;

/// The engine's progress callback: stops a call whose output overflowed, whose time is up,
/// or which outlives a signal.
pub fn progress(shared: &Rc<RefCell<Shared>>) -> impl Fn(u64) -> Option<Dynamic> + 'static {
    let shared = shared.clone();
    move |ops| {
        let mut s = shared.borrow_mut();
        if s.overflowed {
            return Some(Stopped::Output.into());
        }
        if ops % CLOCK_EVERY != 0 {
            return None;
        }
        s.watch.check().map(Into::into)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_name_their_reason() {
        for s in [Stopped::Time, Stopped::Signal, Stopped::Output] {
            assert_eq!(Stopped::from_token(&s.into()), Some(s));
        }
        assert_eq!(Stopped::from_token(&Dynamic::from_int(1)), None);
    }

    #[test]
    fn a_watch_runs_out() {
        let mut w = Watch::new(Duration::ZERO);
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(w.check(), Some(Stopped::Time));
        let mut w = Watch::new(Duration::from_secs(60));
        assert_eq!(w.check(), None);
    }
}
