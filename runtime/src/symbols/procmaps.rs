//! Process address maps (`/proc/PID/maps`) and a cache of them taken while processes live.
//!
//! A stack is usually printed after the traced process has exited (at the end of the run),
//! when `/proc/PID/maps` is gone. [`ProcessCache::observe`] snapshots the maps of a pid the
//! first time the event loop sees it, so that its addresses still resolve later.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// One file-backed mapping of a process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    /// First address of the mapping.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// The file offset mapped at `start`.
    pub offset: u64,
    /// The file's inode number (0 for anonymous or special mappings).
    pub inode: u64,
    /// Whether the mapping is executable (`x` in the permissions).
    pub executable: bool,
    /// The mapped file's path (without a ` (deleted)` suffix).
    pub path: String,
}

impl Mapping {
    /// The file offset of `addr`, which must lie in this mapping.
    pub fn file_offset(&self, addr: u64) -> u64 {
        addr - self.start + self.offset
    }
}

/// The file-backed mappings of one process, sorted by address.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcessMaps {
    /// The process id the maps were read from.
    pub pid: u32,
    mappings: Vec<Mapping>,
}

/// Parses one maps line `start-end perms offset dev inode [path]`; `None` for anonymous and
/// pseudo mappings (`[heap]`, `[vdso]`, ...), whose path does not start with `/`.
fn parse_line(line: &str) -> Option<Mapping> {
    let mut fields = line.splitn(6, ' ');
    let (start, end) = fields.next()?.split_once('-')?;
    let perms = fields.next()?;
    let offset = fields.next()?;
    let _dev = fields.next()?;
    let inode = fields.next()?;
    let path = fields.next()?.trim_start();
    if !path.starts_with('/') {
        return None;
    }
    Some(Mapping {
        start: u64::from_str_radix(start, 16).ok()?,
        end: u64::from_str_radix(end, 16).ok()?,
        offset: u64::from_str_radix(offset, 16).ok()?,
        inode: inode.parse().ok()?,
        executable: perms.as_bytes().get(2) == Some(&b'x'),
        path: path.strip_suffix(" (deleted)").unwrap_or(path).to_string(),
    })
}

impl ProcessMaps {
    /// Parses the text of a `/proc/PID/maps` file.
    pub fn parse(pid: u32, text: &str) -> ProcessMaps {
        let mut mappings: Vec<Mapping> = text.lines().filter_map(parse_line).collect();
        mappings.sort_by_key(|m| m.start);
        ProcessMaps { pid, mappings }
    }

    /// Reads `/proc/PID/maps` now.
    pub fn read(pid: u32) -> std::io::Result<ProcessMaps> {
        Ok(ProcessMaps::parse(
            pid,
            &std::fs::read_to_string(format!("/proc/{pid}/maps"))?,
        ))
    }

    /// The file-backed mappings, sorted by start address.
    pub fn mappings(&self) -> &[Mapping] {
        &self.mappings
    }

    /// The mapping containing `addr`.
    pub fn lookup(&self, addr: u64) -> Option<&Mapping> {
        let after = self.mappings.partition_point(|m| m.start <= addr);
        self.mappings[..after].last().filter(|m| addr < m.end)
    }
}

/// Snapshots of process maps, keyed by pid, taken while the processes were alive.
///
/// Thread-safe: the event loop may observe pids while the printer resolves addresses.
#[derive(Debug, Default)]
pub struct ProcessCache {
    maps: Mutex<HashMap<u32, Arc<ProcessMaps>>>,
    /// Processes whose maps were already re-read after a miss (see [`ProcessCache::lookup`]).
    missed: Mutex<std::collections::HashSet<u32>>,
}

impl ProcessCache {
    /// An empty cache.
    pub fn new() -> ProcessCache {
        ProcessCache::default()
    }

    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<u32, Arc<ProcessMaps>>> {
        // A panic while holding the lock cannot leave the map half-updated: recover it.
        self.maps.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Snapshots the maps of `pid` unless it was seen before. Returns false when the process
    /// is unknown and its maps cannot be read (it has already exited).
    pub fn observe(&self, pid: u32) -> bool {
        if self.table().contains_key(&pid) {
            return true;
        }
        self.refresh(pid)
    }

    /// Reads the maps of `pid` again (after a `dlopen` or an `exec`), replacing the previous
    /// snapshot. Returns false, keeping the old snapshot, when the process is gone.
    pub fn refresh(&self, pid: u32) -> bool {
        self.missed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&pid);
        match ProcessMaps::read(pid) {
            Ok(maps) => {
                self.table().insert(pid, Arc::new(maps));
                true
            }
            Err(_) => false,
        }
    }

    /// The snapshot of `pid`, if it was observed.
    pub fn get(&self, pid: u32) -> Option<Arc<ProcessMaps>> {
        self.table().get(&pid).cloned()
    }

    /// Drops the snapshot of `pid`.
    pub fn forget(&self, pid: u32) {
        self.table().remove(&pid);
    }

    /// The mapping containing `addr` in process `pid`. A pid never observed is snapshotted
    /// now; when the address is outside every cached mapping and the process still lives, its
    /// maps are read again once (it may have loaded a library since).
    pub fn lookup(&self, pid: u32, addr: u64) -> Option<Mapping> {
        if let Some(m) = self.get(pid).and_then(|maps| maps.lookup(addr).cloned()) {
            return Some(m);
        }
        // Re-read once per miss streak: addresses in unnamed mappings (vdso, JIT code) never
        // resolve, and must not cost a read of /proc/PID/maps each.
        if !self
            .missed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(pid)
        {
            return None;
        }
        match ProcessMaps::read(pid) {
            Ok(maps) => {
                self.table().insert(pid, Arc::new(maps));
            }
            Err(_) => return None,
        }
        self.get(pid)?.lookup(addr).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
55d0c0a00000-55d0c0a01000 r--p 00000000 fd:01 1234                       /tmp/x/app
55d0c0a01000-55d0c0a02000 r-xp 00001000 fd:01 1234                       /tmp/x/app
55d0c1000000-55d0c1021000 rw-p 00000000 00:00 0                          [heap]
7f0000000000-7f0000028000 r--p 00000000 fd:01 99                         /usr/lib/libc.so.6
7f0000028000-7f00001bd000 r-xp 00028000 fd:01 99                         /usr/lib/libc.so.6
7f00001c0000-7f00001c1000 r-xp 00000000 fd:01 77                         /tmp/x/gone.so (deleted)
7f00001d0000-7f00001d2000 rw-p 00000000 00:00 0 
7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0                          [vdso]
";

    #[test]
    fn parses_file_backed_mappings() {
        let maps = ProcessMaps::parse(42, SAMPLE);
        assert_eq!(maps.mappings().len(), 5);
        let m = maps.lookup(0x55d0c0a01010).unwrap();
        assert_eq!(
            m,
            &Mapping {
                start: 0x55d0c0a01000,
                end: 0x55d0c0a02000,
                offset: 0x1000,
                inode: 1234,
                executable: true,
                path: "/tmp/x/app".into(),
            }
        );
        assert_eq!(m.file_offset(0x55d0c0a01010), 0x1010);
        assert_eq!(
            maps.lookup(0x7f0000028123)
                .unwrap()
                .file_offset(0x7f0000028123),
            0x28123
        );
        assert_eq!(maps.lookup(0x7f00001c0004).unwrap().path, "/tmp/x/gone.so");
        assert!(!maps.lookup(0x55d0c0a00000).unwrap().executable);
    }

    #[test]
    fn anonymous_and_pseudo_mappings_and_gaps_do_not_resolve() {
        let maps = ProcessMaps::parse(42, SAMPLE);
        assert_eq!(maps.lookup(0x55d0c1000010), None);
        assert_eq!(maps.lookup(0x7ffd00000010), None);
        assert_eq!(maps.lookup(0x7f00001d0000), None);
        assert_eq!(maps.lookup(0x7f00001bd000), None);
        assert_eq!(maps.lookup(0x10), None);
    }

    #[test]
    fn cache_snapshots_a_live_process_and_keeps_it() {
        let cache = ProcessCache::new();
        let me = std::process::id();
        assert!(cache.observe(me));
        let here = cache_snapshots_a_live_process_and_keeps_it as *const () as u64;
        let m = cache.lookup(me, here).expect("own code is file-backed");
        assert!(m.executable);
        assert_eq!(m.path, std::env::current_exe().unwrap().to_string_lossy());
        // A pid that does not exist can be neither observed nor looked up.
        assert!(!cache.observe(u32::MAX - 1));
        assert_eq!(cache.lookup(u32::MAX - 1, here), None);
        cache.forget(me);
        assert!(cache.get(me).is_none());
    }
}
