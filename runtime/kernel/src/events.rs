//! The consumer side of the BPF ring buffer (`BPF_MAP_TYPE_RINGBUF`) that carries events
//! (printf, print, exit, ...) from programs to userspace.
//!
//! Records are read in place through [`crate::ringbuf::Ring`], which maps a sliding window
//! of the ring's data area (not all of it twice, as aya's `RingBuf` does) and advances the
//! consumer position as each record is released; waiting uses `poll(2)` on the map's
//! descriptor, which the kernel wakes on every submitted record.

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use aya::maps::Map;

use crate::ringbuf::{DEFAULT_WINDOW, Ring};

/// The most records one [`EventReader::poll`] hands out.
pub const MAX_BATCH: usize = 1 << 14;

/// Reads records from one ring buffer map.
pub struct EventReader {
    ring: Ring,
}

impl std::fmt::Debug for EventReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventReader")
            .field("fd", &self.ring.fd().as_raw_fd())
            .finish()
    }
}

impl EventReader {
    /// A reader over `map`, which must be a ring buffer map taken out of the loaded object.
    pub fn new(map: Map) -> io::Result<EventReader> {
        let Map::RingBuf(data) = map else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a ring buffer map",
            ));
        };
        // The data area's size is the map's max_entries.
        let size = data.info().map_err(io::Error::other)?.max_entries() as usize;
        let fd = data.fd().as_fd().try_clone_to_owned()?;
        EventReader::with_window(fd, size, DEFAULT_WINDOW)
    }

    /// A reader over ring buffer map `fd` of `size` bytes, mapping `window` bytes of it at a
    /// time.
    pub(crate) fn with_window(fd: OwnedFd, size: usize, window: usize) -> io::Result<Self> {
        Ok(EventReader {
            ring: Ring::new(fd, size, window)?,
        })
    }

    /// Hands every record available now to `f`, without waiting. Returns how many.
    pub fn drain(&mut self, f: &mut impl FnMut(&[u8])) -> usize {
        // A failed window remap (out of memory) leaves the records where they are, for the
        // next call; `poll` reports it.
        self.drain_at_most(usize::MAX, f).unwrap_or(0)
    }

    /// Hands up to `max` available records to `f`, in place (each record's space is given
    /// back to the kernel once `f` returns). Returns how many; an error only when the window
    /// could not be moved to the first of them.
    fn drain_at_most(&mut self, max: usize, f: &mut impl FnMut(&[u8])) -> io::Result<usize> {
        self.ring.read(max, f)
    }

    /// Waits up to `timeout` for records, then hands the available records to `f`, at most
    /// [`MAX_BATCH`] of them so that a steady stream cannot keep the caller from its other
    /// duties (Ctrl-C, flushing output). Returns the number of records read (0 on timeout).
    /// An interrupted wait (a signal, for example Ctrl-C) returns early with the records
    /// read so far.
    pub fn poll(&mut self, timeout: Duration, f: &mut impl FnMut(&[u8])) -> io::Result<usize> {
        let n = self.drain_at_most(MAX_BATCH, f)?;
        if n > 0 {
            return Ok(n);
        }
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            // Rounded up: a remainder under a millisecond must not become a zero timeout, or
            // this loop spins on poll() until the deadline.
            let ms = left.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as i32;
            let mut pfd = libc::pollfd {
                fd: self.ring.fd().as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd, for the duration of the call.
            let ret = unsafe { libc::poll(&mut pfd, 1, ms) };
            if ret < 0 {
                let err = io::Error::last_os_error();
                if err.kind() == io::ErrorKind::Interrupted {
                    return self.drain_at_most(MAX_BATCH, f);
                }
                return Err(err);
            }
            let n = self.drain_at_most(MAX_BATCH, f)?;
            if n > 0 || left.is_zero() {
                return Ok(n);
            }
            // A wakeup without a complete record (or a spurious one): wait for the rest.
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ringbuf::testing::{Producer, pattern, ring_map};

    fn reader(size: usize, window: usize) -> (EventReader, Producer) {
        let fd = ring_map(size as u32);
        let producer = Producer::new(fd.as_fd(), 4096);
        (
            EventReader::with_window(fd, size, window).unwrap(),
            producer,
        )
    }

    #[test]
    fn poll_waits_then_hands_out_what_was_written() {
        let (mut events, producer) = reader(64 << 10, 4096);
        assert!(format!("{events:?}").starts_with("EventReader { fd: "));
        let mut got = Vec::new();
        let t = Instant::now();
        let n = events
            .poll(Duration::from_millis(30), &mut |r: &[u8]| {
                got.push(r.to_vec())
            })
            .unwrap();
        assert_eq!(n, 0);
        assert!(
            t.elapsed() >= Duration::from_millis(29),
            "{:?}",
            t.elapsed()
        );

        for seq in 0..100 {
            assert!(producer.output(&pattern(seq, seq as usize * 13 % 700)));
        }
        let n = events
            .poll(Duration::from_secs(5), &mut |r: &[u8]| got.push(r.to_vec()))
            .unwrap();
        assert_eq!(n, 100);
        for (seq, r) in got.iter().enumerate() {
            assert_eq!(*r, pattern(seq as u64, seq * 13 % 700));
        }
        assert_eq!(events.drain(&mut |_: &[u8]| panic!("no more records")), 0);
    }

    /// A record submitted while `poll` waits wakes it; a signal ends the wait early.
    #[test]
    fn poll_wakes_on_a_record_and_returns_on_a_signal() {
        let (mut events, producer) = reader(16 << 10, 4096);
        let t = Instant::now();
        let mut got = Vec::new();
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(20));
                assert!(producer.output(b"late"));
            });
            let n = events
                .poll(Duration::from_secs(10), &mut |r: &[u8]| {
                    got.push(r.to_vec())
                })
                .unwrap();
            assert_eq!(n, 1);
        });
        assert_eq!(got, [b"late".to_vec()]);
        assert!(t.elapsed() < Duration::from_secs(5));

        extern "C" fn nothing(_: libc::c_int) {}
        // SAFETY: a handler that does nothing, for a signal nothing else in the tests uses.
        unsafe { libc::signal(libc::SIGURG, nothing as *const () as libc::sighandler_t) };
        // SAFETY: pthread_self has no preconditions.
        let me = unsafe { libc::pthread_self() } as usize;
        let t = Instant::now();
        std::thread::scope(|s| {
            s.spawn(move || {
                std::thread::sleep(Duration::from_millis(50));
                // SAFETY: the polling thread is alive until this scope ends.
                unsafe { libc::pthread_kill(me as libc::pthread_t, libc::SIGURG) };
            });
            let n = events
                .poll(Duration::from_secs(10), &mut |_: &[u8]| {})
                .unwrap();
            assert_eq!(n, 0);
        });
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    }

    /// At most MAX_BATCH records per poll; drain takes all of them.
    #[test]
    fn poll_hands_out_at_most_a_batch() {
        let (mut events, producer) = reader(1 << 20, DEFAULT_WINDOW);
        let n = MAX_BATCH + 10;
        for seq in 0..n {
            assert!(producer.output(&(seq as u32).to_ne_bytes()));
        }
        let mut next = 0u32;
        let mut check = |r: &[u8]| {
            assert_eq!(r, next.to_ne_bytes());
            next += 1;
        };
        assert_eq!(events.poll(Duration::ZERO, &mut check).unwrap(), MAX_BATCH);
        assert_eq!(events.drain(&mut check), 10);
        assert_eq!(next as usize, n);
    }
}
