//! The consumer side of the BPF ring buffer (`BPF_MAP_TYPE_RINGBUF`) that carries events
//! (printf, print, exit, ...) from programs to userspace.
//!
//! Records are read through aya's memory-mapped `RingBuf`, which advances the consumer
//! position as each record is released; waiting uses `poll(2)` on the map's descriptor,
//! which the kernel wakes on every submitted record.

use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::time::{Duration, Instant};

use aya::maps::{Map, MapData, RingBuf};

/// The most records one [`EventReader::poll`] hands out.
pub const MAX_BATCH: usize = 1 << 14;

/// Reads records from one ring buffer map.
pub struct EventReader {
    ring: RingBuf<MapData>,
}

impl std::fmt::Debug for EventReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventReader")
            .field("fd", &self.ring.as_raw_fd())
            .finish()
    }
}

impl EventReader {
    /// A reader over `map`, which must be a ring buffer map taken out of the loaded object.
    pub fn new(map: Map) -> io::Result<EventReader> {
        let ring = RingBuf::try_from(map).map_err(io::Error::other)?;
        Ok(EventReader { ring })
    }

    /// Hands every record available now to `f`, without waiting. Returns how many.
    pub fn drain(&mut self, f: &mut impl FnMut(&[u8])) -> usize {
        self.drain_at_most(usize::MAX, f)
    }

    /// Hands up to `max` available records to `f`, in place (each record's space is given
    /// back to the kernel once `f` returns). Returns how many.
    fn drain_at_most(&mut self, max: usize, f: &mut impl FnMut(&[u8])) -> usize {
        let mut n = 0;
        while n < max {
            let Some(record) = self.ring.next() else {
                break;
            };
            f(&record);
            n += 1;
        }
        n
    }

    /// Waits up to `timeout` for records, then hands the available records to `f`, at most
    /// [`MAX_BATCH`] of them so that a steady stream cannot keep the caller from its other
    /// duties (Ctrl-C, flushing output). Returns the number of records read (0 on timeout).
    /// An interrupted wait (a signal, for example Ctrl-C) returns early with the records
    /// read so far.
    pub fn poll(&mut self, timeout: Duration, f: &mut impl FnMut(&[u8])) -> io::Result<usize> {
        let n = self.drain_at_most(MAX_BATCH, f);
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
                fd: self.ring.as_fd().as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd, for the duration of the call.
            let ret = unsafe { libc::poll(&mut pfd, 1, ms) };
            if ret < 0 {
                let err = io::Error::last_os_error();
                if err.kind() == io::ErrorKind::Interrupted {
                    return Ok(self.drain_at_most(MAX_BATCH, f));
                }
                return Err(err);
            }
            let n = self.drain_at_most(MAX_BATCH, f);
            if n > 0 || left.is_zero() {
                return Ok(n);
            }
            // A wakeup without a complete record (or a spurious one): wait for the rest.
        }
    }
}
