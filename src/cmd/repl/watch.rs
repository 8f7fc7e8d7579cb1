//! `:watch @map SECS`: one map redrawn in place every SECS seconds until a key is pressed.
//!
//! A histogram is drawn whole; a keyed map shows its [`TOP`] largest entries. The terminal
//! is put in non-canonical mode without echo (and without signals: Ctrl-C is a key press
//! like any other) for the duration, and restored after.

use std::io::{IsTerminal, Read, Write};
use std::time::Duration;

use super::pump::Pump;

/// How many entries of a keyed map a watch shows.
pub const TOP: u64 = 20;

/// The terminal's settings while a watch runs; restored on drop.
struct RawKeys(Option<libc::termios>);

impl RawKeys {
    fn enter() -> RawKeys {
        if !std::io::stdin().is_terminal() {
            return RawKeys(None);
        }
        // SAFETY: tcgetattr fills the zeroed struct for fd 0, a terminal.
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        if unsafe { libc::tcgetattr(0, &mut t) } != 0 {
            return RawKeys(None);
        }
        let saved = t;
        t.c_lflag &= !(libc::ICANON | libc::ECHO | libc::ISIG);
        t.c_cc[libc::VMIN] = 1;
        t.c_cc[libc::VTIME] = 0;
        // SAFETY: applying a modified copy of the terminal's own settings.
        unsafe { libc::tcsetattr(0, libc::TCSANOW, &t) };
        RawKeys(Some(saved))
    }
}

impl Drop for RawKeys {
    fn drop(&mut self) {
        if let Some(t) = &self.0 {
            // SAFETY: restoring the settings read in `enter`.
            unsafe { libc::tcsetattr(0, libc::TCSANOW, t) };
        }
    }
}

/// Waits up to `d` for input on standard input; true when some arrived (and was read).
fn key_within(d: Duration) -> bool {
    let mut fds = libc::pollfd {
        fd: 0,
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = d.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: one valid pollfd.
    let n = unsafe { libc::poll(&mut fds, 1, ms) };
    if n > 0 {
        let mut buf = [0u8; 64];
        let _ = std::io::stdin().lock().read(&mut buf);
        return true;
    }
    false
}

/// Redraws map `name` every `every` until a key is pressed. Errors: no such map.
pub fn watch(pump: &Pump, name: &str, every: Duration) -> Result<(), String> {
    let _keys = RawKeys::enter();
    let mut drawn = 0usize;
    let mut out = std::io::stdout();
    loop {
        let n = name.to_string();
        let text = pump
            .call(move |s| s.live.render_map(&n, TOP))
            .ok_or("the session has ended")??;
        let mut frame = String::new();
        if drawn > 0 {
            // Back to the first line of the previous frame, and clear from there.
            frame += &format!("\x1b[{drawn}F\x1b[J");
        }
        frame += &format!(
            "{name} every {}s (press a key to stop)\n",
            every.as_secs_f64()
        );
        frame += if text.trim().is_empty() {
            "(empty)\n"
        } else {
            text.trim_start_matches('\n')
        };
        drawn = frame.matches('\n').count();
        let _ = out.write_all(frame.as_bytes());
        let _ = out.flush();
        if key_within(every) {
            return Ok(());
        }
    }
}
