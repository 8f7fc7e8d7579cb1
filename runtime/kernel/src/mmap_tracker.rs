//! Tracking of process address maps through the kernel's perf records, the way `perf record`
//! does it, so that the user addresses of a process that lived for a millisecond still resolve
//! after it exited.
//!
//! [`MmapTracker::open`] opens one `PERF_COUNT_SW_DUMMY` software event per online CPU for
//! every process (`pid = -1`), asking only for side-band records: executable mappings
//! (`PERF_RECORD_MMAP2`), execs (`PERF_RECORD_COMM` with `PERF_RECORD_MISC_COMM_EXEC`), forks
//! and exits (`PERF_RECORD_FORK`, `PERF_RECORD_EXIT`), each followed by the `sample_id`
//! fields `TID` and `TIME`. Nothing is sampled, so the events cost nothing between records.
//!
//! [`MappingFeed::drain`] reads what the rings hold, parses it with [`parse_record`] into
//! [`MapEvent`]s and sorts them by time across CPUs (a fork is written on the parent's CPU, the
//! child's exec perhaps on another); [`super::ProcessCache::apply`] turns them into the same
//! per-process maps a `/proc/PID/maps` snapshot gives. Records the kernel could not write
//! because a ring was full arrive as `PERF_RECORD_LOST` and are counted ([`MappingFeed::lost`]).
//!
//! Not done: CPUs that come online after the tracker was opened are not watched.

use crate::perf_uprobe::{FLAG_FD_CLOEXEC, PerfEventAttr};
use sonde_system::symbols::map_records::{MapEvent, MapRecord, MappingFeed, parse_record};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

/// `PERF_TYPE_SOFTWARE`.
const TYPE_SOFTWARE: u32 = 1;
/// `PERF_COUNT_SW_DUMMY`: a software event that never counts, for side-band records only.
const COUNT_SW_DUMMY: u64 = 9;
/// `PERF_SAMPLE_TID | PERF_SAMPLE_TIME`: the `sample_id` trailer of every record is
/// `u32 pid, tid; u64 time`.
const SAMPLE_TID_TIME: u64 = (1 << 1) | (1 << 2);
/// `perf_event_attr` flag bits: `mmap`, `comm`, `task`, `sample_id_all`, `mmap2`,
/// `comm_exec` (not `mmap_data`: only executable mappings are reported).
const ATTR_FLAGS: u64 = (1 << 8) | (1 << 9) | (1 << 13) | (1 << 18) | (1 << 23) | (1 << 24);

/// The data size of each per-CPU ring: about two thousand process starts (fork, exec, a
/// handful of executable mappings, exit) between two reads. Within the kernel's default
/// locked-memory allowance for perf rings without `CAP_IPC_LOCK` (516 KiB per CPU).
const RING_BYTES: usize = 256 << 10;
/// Offsets of `data_head`, `data_tail`, `data_offset` and `data_size` in
/// `struct perf_event_mmap_page`.
const DATA_HEAD: usize = 1024;
const DATA_TAIL: usize = 1032;
const DATA_OFFSET: usize = 1040;
const DATA_SIZE: usize = 1048;

/// One CPU's perf event and its memory-mapped ring.
struct Ring {
    /// Keeps the event open.
    _fd: OwnedFd,
    /// The mapping: the metadata page, then the data pages.
    base: NonNull<u8>,
    /// Its length in bytes.
    len: usize,
    /// Where the data pages start, and their size (a power of two).
    data_offset: usize,
    data_size: usize,
}

// SAFETY: the ring's memory is owned by this value alone (mapped in `open`, unmapped on drop)
// and only read or written through `&mut self`; the kernel side synchronizes through the
// documented head/tail protocol.
unsafe impl Send for Ring {}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: base/len are exactly what mmap returned; nothing borrows the mapping.
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
    }
}

impl Ring {
    fn open(cpu: u32, page: usize) -> io::Result<Ring> {
        let attr = PerfEventAttr {
            type_: TYPE_SOFTWARE,
            size: std::mem::size_of::<PerfEventAttr>() as u32,
            config: COUNT_SW_DUMMY,
            sample_period: 1,
            sample_type: SAMPLE_TID_TIME,
            flags: ATTR_FLAGS,
            ..Default::default()
        };
        // SAFETY: attr is a valid perf_event_attr of the size it declares.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                &attr as *const PerfEventAttr,
                -1 as libc::pid_t,
                cpu as libc::c_int,
                -1 as libc::c_int,
                FLAG_FD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: perf_event_open returned a fresh descriptor that we now own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
        // A power of two of pages, as the kernel requires.
        let pages = (RING_BYTES / page).max(1).next_power_of_two();
        let len = (1 + pages) * page;
        // SAFETY: a fresh shared mapping of the event's ring; checked for failure below.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base = NonNull::new(base.cast::<u8>()).ok_or_else(|| io::Error::other("mmap"))?;
        let mut ring = Ring {
            _fd: fd,
            base,
            len,
            data_offset: page,
            data_size: pages * page,
        };
        // Kernels since 4.1 say where the data is; older ones put it after the first page.
        let (off, size) = (
            ring.meta(DATA_OFFSET).load(Ordering::Relaxed),
            ring.meta(DATA_SIZE).load(Ordering::Relaxed),
        );
        if size != 0 {
            let (off, size) = (off as usize, size as usize);
            if !size.is_power_of_two() || off.checked_add(size).is_none_or(|e| e > len) {
                return Err(io::Error::other("unexpected perf ring layout"));
            }
            (ring.data_offset, ring.data_size) = (off, size);
        }
        Ok(ring)
    }

    /// A `u64` field of the metadata page.
    fn meta(&self, at: usize) -> &AtomicU64 {
        // SAFETY: `at` is one of the 8-aligned field offsets inside the first page, which is
        // mapped for as long as `self` lives.
        unsafe { &*self.base.as_ptr().add(at).cast::<AtomicU64>() }
    }

    /// The kernel's write position now (records before it are complete).
    fn head(&self) -> u64 {
        self.meta(DATA_HEAD).load(Ordering::Acquire)
    }

    /// Hands each record between the tail and `head` to `f` (copied out of the ring when it
    /// wraps around its end), then gives their space back to the kernel. Returns false when
    /// the ring holds something that is not a record (then everything up to `head` is
    /// skipped).
    fn read_to(&mut self, head: u64, scratch: &mut Vec<u8>, f: &mut impl FnMut(&[u8])) -> bool {
        let mut tail = self.meta(DATA_TAIL).load(Ordering::Relaxed);
        let mask = self.data_size as u64 - 1;
        // SAFETY: the data area lies inside the mapping (checked in `open`).
        let data = unsafe {
            std::slice::from_raw_parts(self.base.as_ptr().add(self.data_offset), self.data_size)
        };
        let mut sane = true;
        while tail < head {
            let at = (tail & mask) as usize;
            // Records are 8-byte aligned and at least 8 bytes long: a header never wraps.
            let size = data
                .get(at + 6..at + 8)
                .map_or(0, |b| usize::from(u16::from_le_bytes([b[0], b[1]])));
            if size < 8 || size > data.len() || size as u64 > head - tail {
                sane = false;
                break;
            }
            if at + size <= data.len() {
                f(&data[at..at + size]);
            } else {
                scratch.clear();
                scratch.extend_from_slice(&data[at..]);
                scratch.extend_from_slice(&data[..size - (data.len() - at)]);
                f(scratch);
            }
            tail += size as u64;
        }
        self.meta(DATA_TAIL).store(head, Ordering::Release);
        sane
    }
}

/// The per-CPU perf rings that report mappings, execs, forks and exits of every process.
pub struct MmapTracker {
    rings: Vec<Ring>,
    scratch: Vec<u8>,
    lost: u64,
}

impl std::fmt::Debug for MmapTracker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MmapTracker")
            .field("cpus", &self.rings.len())
            .field("lost", &self.lost)
            .finish()
    }
}

impl MmapTracker {
    /// Starts tracking on every online CPU. Fails when a ring cannot be opened (without
    /// `CAP_PERFMON`, for instance).
    pub fn open() -> io::Result<MmapTracker> {
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
            .ok()
            .filter(|p| p.is_power_of_two())
            .unwrap_or(4096);
        let rings = sonde_system::cpus::online_cpus()?
            .into_iter()
            .map(|cpu| Ring::open(cpu, page))
            .collect::<io::Result<Vec<_>>>()?;
        Ok(MmapTracker {
            rings,
            scratch: Vec::new(),
            lost: 0,
        })
    }
}

impl MappingFeed for MmapTracker {
    /// Reads every complete record from every ring and returns the events in time order.
    ///
    /// The rings' write positions are all read first, then each ring up to its position: an
    /// event that depends on another (a child's exec on its parent's fork) is written after it
    /// and cannot be read without it, except when it is written in the instants between two of
    /// those reads — far shorter than any fork and exec.
    fn drain(&mut self) -> Vec<MapRecord> {
        let heads: Vec<u64> = self.rings.iter().map(Ring::head).collect();
        let mut records = Vec::new();
        let mut malformed = 0;
        for (ring, head) in self.rings.iter_mut().zip(heads) {
            let ok = ring.read_to(head, &mut self.scratch, &mut |r| {
                records.extend(parse_record(r));
            });
            malformed += u64::from(!ok);
        }
        records.sort_by_key(|r| r.time);
        let mut lost = malformed;
        records.retain(|r| match r.event {
            MapEvent::Lost { count } => {
                lost += count;
                false
            }
            _ => true,
        });
        self.lost += lost;
        records
    }

    /// How many records the kernel dropped so far because a ring was full (plus one per
    /// ring found holding something unreadable, whose contents were skipped).
    fn lost(&self) -> u64 {
        self.lost
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against the kernel (needs root or CAP_PERFMON): a process that lives a millisecond is
    /// seen exec'ing and mapping its program and libc.
    #[test]
    fn tracks_a_short_lived_process() {
        let Ok(mut tracker) = MmapTracker::open() else {
            eprintln!("skipped: cannot open the perf rings");
            return;
        };
        let mut child = std::process::Command::new("/bin/true")
            .spawn()
            .expect("/bin/true runs");
        let pid = child.id();
        assert!(child.wait().unwrap().success());
        let mut events = Vec::new();
        let exited =
            |events: &[MapRecord]| events.iter().any(|r| r.event == MapEvent::Exit { pid });
        for _ in 0..50 {
            events.extend(tracker.drain());
            if exited(&events) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(exited(&events), "{events:?}");
        assert!(events.windows(2).all(|w| w[0].time <= w[1].time));
        // This test's process forked the child, which exec'd, mapped /bin/true and libc, exited.
        let ours: Vec<&MapEvent> = events
            .iter()
            .map(|r| &r.event)
            .filter(|e| match e {
                MapEvent::Map { pid: p, .. }
                | MapEvent::Exec { pid: p }
                | MapEvent::Exit { pid: p } => *p == pid,
                MapEvent::Fork { pid: p, .. } => *p == pid,
                MapEvent::Lost { .. } => false,
            })
            .collect();
        assert_eq!(
            ours.first(),
            Some(&&MapEvent::Fork {
                pid,
                parent: std::process::id()
            }),
            "{ours:?}"
        );
        let exec = ours
            .iter()
            .position(|e| **e == MapEvent::Exec { pid })
            .unwrap_or_else(|| panic!("no exec in {ours:?}"));
        let paths: Vec<&str> = ours[exec..]
            .iter()
            .filter_map(|e| match e {
                MapEvent::Map { mapping, .. } => Some(mapping.path.as_str()),
                _ => None,
            })
            .collect();
        let true_path = std::fs::canonicalize("/bin/true").unwrap();
        assert!(
            paths.iter().any(|p| std::path::Path::new(p) == true_path),
            "{paths:?}"
        );
        assert!(paths.iter().any(|p| p.contains("libc")), "{paths:?}");
        assert_eq!(tracker.lost(), 0);
    }
}
