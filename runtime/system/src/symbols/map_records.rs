//! The kernel's perf records about process address maps, parsed: executable mappings
//! (`PERF_RECORD_MMAP2`), execs (`PERF_RECORD_COMM` with `PERF_RECORD_MISC_COMM_EXEC`), forks
//! and exits (`PERF_RECORD_FORK`, `PERF_RECORD_EXIT`), each followed by the `sample_id` fields
//! `TID` and `TIME`, and the `PERF_RECORD_LOST` count of those the kernel dropped.
//!
//! A [`MappingFeed`] (the kernel crate's mmap tracker, reading one perf ring per CPU) hands
//! them over in time order; [`super::ProcessCache::apply`] turns them into the same
//! per-process maps a `/proc/PID/maps` snapshot gives.

use super::procmaps::Mapping;

/// The size of that trailer.
const SAMPLE_ID_LEN: usize = 16;

/// `PERF_RECORD_MMAP`.
const RECORD_MMAP: u32 = 1;
/// `PERF_RECORD_LOST`.
const RECORD_LOST: u32 = 2;
/// `PERF_RECORD_COMM`.
const RECORD_COMM: u32 = 3;
/// `PERF_RECORD_EXIT`.
const RECORD_EXIT: u32 = 4;
/// `PERF_RECORD_FORK`.
const RECORD_FORK: u32 = 7;
/// `PERF_RECORD_MMAP2`.
const RECORD_MMAP2: u32 = 10;
/// `PERF_RECORD_MISC_COMM_EXEC` (in a COMM record) and `PERF_RECORD_MISC_MMAP_DATA` (in an
/// MMAP record): the same bit.
const MISC_COMM_EXEC: u16 = 1 << 13;
/// `PERF_RECORD_MISC_MMAP_BUILD_ID`: an MMAP2 record carries a build id instead of the
/// device and inode.
const MISC_MMAP_BUILD_ID: u16 = 1 << 14;
/// `PROT_EXEC` in an MMAP2 record's `prot`.
const PROT_EXEC: u32 = 4;

/// What one perf record says about the address maps of a process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MapEvent {
    /// Process `pid` mapped `mapping` (executable). Its path may name no file (`[vdso]`,
    /// `//anon` for JIT code): such a mapping only replaces what was mapped there.
    Map {
        /// The process (thread group) id.
        pid: u32,
        /// The new mapping.
        mapping: Mapping,
    },
    /// Process `pid` ran `execve`: its mappings start over.
    Exec {
        /// The process id.
        pid: u32,
    },
    /// Process `pid` was forked from `parent` and starts with its mappings (threads, which
    /// share their process's maps, give no event).
    Fork {
        /// The new process.
        pid: u32,
        /// Its parent.
        parent: u32,
    },
    /// Process `pid` exited (its main thread did).
    Exit {
        /// The process id.
        pid: u32,
    },
    /// The kernel dropped `count` records because the ring was full.
    Lost {
        /// How many records.
        count: u64,
    },
}

/// A parsed record: its time (the kernel's perf clock, comparable across CPUs) and event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapRecord {
    /// When it happened, in nanoseconds of the perf clock.
    pub time: u64,
    /// What happened.
    pub event: MapEvent,
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// The NUL-terminated (and NUL-padded) file name in `b`, without a ` (deleted)` suffix.
fn file_name(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    let name = String::from_utf8_lossy(&b[..end]);
    name.strip_suffix(" (deleted)").unwrap_or(&name).to_string()
}

/// Parses one record (header included, `size` bytes as its header says) of a ring opened by
/// [`MmapTracker::open`], whose records all end with the 16-byte `sample_id` of `TID` and
/// `TIME`. `None` for records that do not concern address maps (a thread's fork or exit, a
/// rename through `prctl`, other types) and for malformed ones.
pub fn parse_record(rec: &[u8]) -> Option<MapRecord> {
    let ty = u32_at(rec, 0)?;
    let misc = u16_at(rec, 4)?;
    let size = usize::from(u16_at(rec, 6)?);
    let rec = rec.get(..size)?;
    let body_end = size.checked_sub(SAMPLE_ID_LEN).filter(|&e| e >= 8)?;
    let time = u64_at(rec, size - 8)?;
    let event = match ty {
        RECORD_MMAP | RECORD_MMAP2 => {
            let pid = u32_at(rec, 8)?;
            let start = u64_at(rec, 16)?;
            let len = u64_at(rec, 24)?;
            let offset = u64_at(rec, 32)?;
            let (inode, executable, name_at) = if ty == RECORD_MMAP2 {
                let inode = if misc & MISC_MMAP_BUILD_ID != 0 {
                    0
                } else {
                    u64_at(rec, 48)?
                };
                (inode, u32_at(rec, 64)? & PROT_EXEC != 0, 72)
            } else {
                (0, misc & MISC_COMM_EXEC == 0, 40)
            };
            let end = start.checked_add(len).filter(|&e| e > start)?;
            MapEvent::Map {
                pid,
                mapping: Mapping {
                    start,
                    end,
                    offset,
                    inode,
                    executable,
                    path: file_name(rec.get(name_at..body_end)?),
                },
            }
        }
        RECORD_COMM if misc & MISC_COMM_EXEC != 0 => MapEvent::Exec {
            pid: u32_at(rec, 8)?,
        },
        RECORD_FORK | RECORD_EXIT => {
            let (pid, ppid, tid) = (u32_at(rec, 8)?, u32_at(rec, 12)?, u32_at(rec, 16)?);
            match ty {
                RECORD_FORK if pid != ppid => MapEvent::Fork { pid, parent: ppid },
                RECORD_EXIT if pid == tid => MapEvent::Exit { pid },
                _ => return None,
            }
        }
        RECORD_LOST => MapEvent::Lost {
            count: u64_at(rec, 16)?,
        },
        _ => return None,
    };
    Some(MapRecord { time, event })
}

/// A source of [`MapRecord`]s: what started since the last call, in time order.
pub trait MappingFeed: Send + std::fmt::Debug {
    /// Reads every complete record and returns the events in time order.
    fn drain(&mut self) -> Vec<MapRecord>;
    /// How many records were lost so far.
    fn lost(&self) -> u64;
}

#[cfg(test)]
#[path = "map_records_tests.rs"]
mod tests;
