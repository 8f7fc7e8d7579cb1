//! Process address maps (`/proc/PID/maps`) and a cache of them taken while processes live.
//!
//! A stack is usually printed after the traced process has exited (at the end of the run),
//! when `/proc/PID/maps` is gone. [`ProcessCache::observe`] snapshots the maps of a pid the
//! first time the event loop sees it, so that its addresses still resolve later; a process
//! that lives for a millisecond is gone before that, and is known from the mappings the
//! kernel reports as they are made ([`ProcessCache::apply`], [`super::map_records`]).

use super::map_records::MapEvent;
use std::collections::{HashMap, HashSet, VecDeque, hash_map};
use std::sync::{Arc, Mutex, MutexGuard};

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
    /// The process id the maps were read or tracked for (a forked child shares its parent's
    /// maps, this pid included, until it maps something of its own).
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

    /// No mappings (a process that has just exec'd, before it maps anything).
    pub fn empty(pid: u32) -> ProcessMaps {
        ProcessMaps {
            pid,
            mappings: Vec::new(),
        }
    }

    /// Adds a new mapping, which replaces whatever it overlaps (as `mmap` with a fixed address
    /// does; unmaps are not reported, a later mapping at the same place is). A mapping whose
    /// path is not a file (`[vdso]`, `//anon`) only removes what it overlaps.
    pub fn insert(&mut self, new: Mapping) {
        if new.start >= new.end {
            return;
        }
        // Mappings never overlap, so their ends are sorted like their starts.
        let first = self.mappings.partition_point(|m| m.end <= new.start);
        let last = self.mappings.partition_point(|m| m.start < new.end);
        let mut pieces = Vec::with_capacity(3);
        if let Some(m) = self
            .mappings
            .get(first)
            .filter(|m| first < last && m.start < new.start)
        {
            pieces.push(Mapping {
                end: new.start,
                ..m.clone()
            });
        }
        let tail = last
            .checked_sub(1)
            .and_then(|i| self.mappings.get(i))
            .filter(|m| first < last && m.end > new.end)
            .map(|m| Mapping {
                start: new.end,
                offset: m.offset.wrapping_add(new.end - m.start),
                ..m.clone()
            });
        // perf names anonymous executable memory (JIT code) `//anon`.
        if new.path.starts_with('/') && !new.path.starts_with("//") {
            pieces.push(new);
        }
        pieces.extend(tail);
        self.mappings.splice(first..last, pieces);
    }
}

/// How many exited processes keep their address maps for symbolizing (tracked processes):
/// past it the maps of the process that exited first are dropped, and counted in
/// the run's counts of evicted maps.
pub const MAX_EXITED_KEPT: usize = 16384;
/// How many generations of a pid's maps from before its execs (or before the pid was reused)
/// are kept.
const MAX_OLDER: usize = 4;

/// What is known of one pid's maps.
#[derive(Debug)]
struct Entry {
    /// The maps of the running program (or of the last one, after an exit).
    current: Arc<ProcessMaps>,
    /// Maps of the programs the pid ran before its last execs, oldest first.
    older: Vec<Arc<ProcessMaps>>,
    /// False while only tracked mappings are known: a process that was running before the
    /// tracking began, whose `/proc/PID/maps` has not been read yet.
    complete: bool,
    /// Its exit was tracked.
    exited: bool,
}

impl Entry {
    fn new(current: Arc<ProcessMaps>, complete: bool) -> Entry {
        Entry {
            current,
            older: Vec::new(),
            complete,
            exited: false,
        }
    }

    /// The mapping containing `addr`: in the newest maps, else in the older ones, newest
    /// first. A stack does not say when it was taken, so an address outside the running
    /// program's maps may be one of the program the pid ran before its exec (the shell that
    /// forked it, for example).
    fn find(&self, addr: u64) -> Option<&Mapping> {
        self.current
            .lookup(addr)
            .or_else(|| self.older.iter().rev().find_map(|m| m.lookup(addr)))
    }

    /// A new program (exec) or a new process with the same pid: `next` becomes the current
    /// maps, the previous ones are kept as an older generation.
    fn start_over(&mut self, next: Arc<ProcessMaps>, complete: bool) {
        let previous = std::mem::replace(&mut self.current, next);
        if !previous.mappings.is_empty() {
            self.older.push(previous);
            if self.older.len() > MAX_OLDER {
                self.older.remove(0);
            }
        }
        self.complete = complete;
        self.exited = false;
    }
}

/// The cache's table, under one lock.
#[derive(Debug, Default)]
struct State {
    entries: HashMap<u32, Entry>,
    /// Tracked exits, oldest first (a pid may appear twice when it was reused).
    exited: VecDeque<u32>,
    /// Exited processes whose maps were dropped to stay within [`MAX_EXITED_KEPT`].
    evicted: u64,
}

/// The address maps of processes, keyed by pid: snapshots of `/proc/PID/maps` taken while the
/// processes were alive, and the mappings, execs, forks and exits the kernel reported
/// ([`ProcessCache::apply`], from [`super::map_records`]).
///
/// Thread-safe: the event loop may observe pids while the printer resolves addresses.
#[derive(Debug, Default)]
pub struct ProcessCache {
    state: Mutex<State>,
    /// Processes whose maps were already re-read after a miss (see [`ProcessCache::lookup`]).
    missed: Mutex<HashSet<u32>>,
}

impl ProcessCache {
    /// An empty cache.
    pub fn new() -> ProcessCache {
        ProcessCache::default()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the map half-updated: recover it.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn missed(&self) -> MutexGuard<'_, HashSet<u32>> {
        self.missed.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stores a snapshot read from `/proc` as the current maps of `pid`.
    fn store(&self, pid: u32, maps: ProcessMaps) {
        self.state().store(pid, maps);
    }

    /// Snapshots the maps of `pid` unless they are known (seen before, or tracked since the
    /// process started). Returns false when the process is unknown and its maps cannot be
    /// read (it has already exited).
    pub fn observe(&self, pid: u32) -> bool {
        let known = self.state().entries.get(&pid).map(|e| e.complete);
        match known {
            Some(true) => true,
            // Only tracked mappings are known: read the rest while the process lives.
            Some(false) => {
                self.refresh(pid);
                true
            }
            None => self.refresh(pid),
        }
    }

    /// Reads the maps of `pid` again (after a `dlopen` or an `exec`), replacing the previous
    /// snapshot. Returns false, keeping the old snapshot, when the process is gone.
    pub fn refresh(&self, pid: u32) -> bool {
        self.missed().remove(&pid);
        match ProcessMaps::read(pid) {
            Ok(maps) => {
                self.store(pid, maps);
                true
            }
            Err(_) => false,
        }
    }

    /// The current maps of `pid`, if they are known.
    pub fn get(&self, pid: u32) -> Option<Arc<ProcessMaps>> {
        self.state().entries.get(&pid).map(|e| e.current.clone())
    }

    /// Drops what is known of `pid`.
    pub fn forget(&self, pid: u32) {
        self.state().entries.remove(&pid);
    }

    /// The known mapping containing `addr` in process `pid`, without reading `/proc`: in its
    /// current maps, else in those of the programs it ran before an exec (newest first).
    pub fn find(&self, pid: u32, addr: u64) -> Option<Mapping> {
        self.state().entries.get(&pid)?.find(addr).cloned()
    }

    /// The mapping containing `addr` in process `pid`. A pid never observed is snapshotted
    /// now; when the address is outside every known mapping and the process still lives, its
    /// maps are read again once (it may have loaded a library since).
    pub fn lookup(&self, pid: u32, addr: u64) -> Option<Mapping> {
        if let Some(m) = self.find(pid, addr) {
            return Some(m);
        }
        // Re-read once per miss streak: addresses in unnamed mappings (vdso, JIT code) never
        // resolve, and must not cost a read of /proc/PID/maps each.
        if !self.missed().insert(pid) {
            return None;
        }
        self.store(pid, ProcessMaps::read(pid).ok()?);
        self.find(pid, addr)
    }

    /// Exited processes whose maps were dropped (beyond [`MAX_EXITED_KEPT`]).
    pub fn evicted(&self) -> u64 {
        self.state().evicted
    }

    /// Applies tracked events, in the order they happened: a mapping joins (and replaces what
    /// it overlaps in) the maps of its process; an exec starts them over; a fork gives the
    /// child its parent's maps (reading the parent's from `/proc` first if it was running
    /// before the tracking began); an exit keeps them, up to [`MAX_EXITED_KEPT`] exited
    /// processes. A process first seen through a mapping (it was running already) is read
    /// from `/proc` when it is next observed or an address misses.
    pub fn apply<'a>(&self, events: impl IntoIterator<Item = &'a MapEvent>) {
        let mut dropped = Vec::new();
        {
            let mut st = self.state();
            for event in events {
                st.apply(event, &mut dropped);
            }
        }
        if !dropped.is_empty() {
            let mut missed = self.missed();
            for pid in dropped {
                missed.remove(&pid);
            }
        }
    }
}

impl State {
    /// Stores a snapshot read from `/proc` as the current maps of `pid` (it includes whatever
    /// was tracked of the same program).
    fn store(&mut self, pid: u32, maps: ProcessMaps) {
        let maps = Arc::new(maps);
        match self.entries.entry(pid) {
            hash_map::Entry::Occupied(mut e) => {
                let e = e.get_mut();
                e.current = maps;
                e.complete = true;
            }
            hash_map::Entry::Vacant(e) => {
                e.insert(Entry::new(maps, true));
            }
        }
    }

    fn apply(&mut self, event: &MapEvent, dropped: &mut Vec<u32>) {
        match event {
            MapEvent::Map { pid, mapping } => {
                let e = self
                    .entries
                    .entry(*pid)
                    .or_insert_with(|| Entry::new(Arc::new(ProcessMaps::empty(*pid)), false));
                let maps = Arc::make_mut(&mut e.current);
                maps.pid = *pid;
                maps.insert(mapping.clone());
            }
            MapEvent::Exec { pid } => {
                let empty = Arc::new(ProcessMaps::empty(*pid));
                match self.entries.get_mut(pid) {
                    Some(e) => e.start_over(empty, true),
                    None => {
                        self.entries.insert(*pid, Entry::new(empty, true));
                    }
                }
            }
            MapEvent::Fork { pid, parent } => {
                // A parent that was running before the tracking began is read now, while it
                // lives (it has just forked): the child starts with all of its maps.
                if !self.entries.get(parent).is_some_and(|p| p.complete)
                    && let Ok(maps) = ProcessMaps::read(*parent)
                {
                    self.store(*parent, maps);
                }
                // Shared until one of them maps something (`Arc::make_mut`).
                let (base, complete) = self.entries.get(parent).map_or_else(
                    || (Arc::new(ProcessMaps::empty(*pid)), false),
                    |p| (p.current.clone(), p.complete),
                );
                match self.entries.get_mut(pid) {
                    Some(e) => e.start_over(base, complete),
                    None => {
                        self.entries.insert(*pid, Entry::new(base, complete));
                    }
                }
            }
            MapEvent::Exit { pid } => {
                let Some(e) = self.entries.get_mut(pid) else {
                    return;
                };
                e.exited = true;
                self.exited.push_back(*pid);
                while self.exited.len() > MAX_EXITED_KEPT {
                    let Some(old) = self.exited.pop_front() else {
                        break;
                    };
                    // Skipped when the pid was reused by a process still running.
                    if self.entries.get(&old).is_some_and(|e| e.exited) {
                        self.entries.remove(&old);
                        self.evicted += 1;
                        dropped.push(old);
                    }
                }
            }
            MapEvent::Lost { .. } => {}
        }
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

    #[test]
    fn a_new_mapping_replaces_what_it_overlaps() {
        let m = |start, end, offset, path: &str| Mapping {
            start,
            end,
            offset,
            inode: 1,
            executable: true,
            path: path.into(),
        };
        let spans = |maps: &ProcessMaps| {
            maps.mappings()
                .iter()
                .map(|m| (m.start, m.end, m.offset, m.path.clone()))
                .collect::<Vec<_>>()
        };
        let mut maps = ProcessMaps::empty(1);
        maps.insert(m(0x1000, 0x5000, 0, "/a"));
        maps.insert(m(0x8000, 0x9000, 0, "/b"));
        maps.insert(m(0x6000, 0x7000, 0, "/c"));
        // Inside /a: splits it, the right part keeps its file offsets.
        maps.insert(m(0x2000, 0x3000, 0x100, "/d"));
        assert_eq!(
            spans(&maps),
            [
                (0x1000, 0x2000, 0, "/a".into()),
                (0x2000, 0x3000, 0x100, "/d".into()),
                (0x3000, 0x5000, 0x2000, "/a".into()),
                (0x6000, 0x7000, 0, "/c".into()),
                (0x8000, 0x9000, 0, "/b".into()),
            ]
        );
        // Across the tail of /a, all of /c and the head of /b.
        maps.insert(m(0x4000, 0x8800, 0, "/e"));
        assert_eq!(
            spans(&maps),
            [
                (0x1000, 0x2000, 0, "/a".into()),
                (0x2000, 0x3000, 0x100, "/d".into()),
                (0x3000, 0x4000, 0x2000, "/a".into()),
                (0x4000, 0x8800, 0, "/e".into()),
                (0x8800, 0x9000, 0x800, "/b".into()),
            ]
        );
        // An anonymous executable mapping (JIT code) only makes a hole.
        maps.insert(m(0x1800, 0x2800, 0, "//anon"));
        assert_eq!(maps.lookup(0x1900), None);
        assert_eq!(maps.lookup(0x2900).unwrap().path, "/d");
        assert_eq!(maps.lookup(0x17ff).unwrap().path, "/a");
        // Empty ones change nothing.
        let before = maps.clone();
        maps.insert(m(0x3000, 0x3000, 0, "/f"));
        assert_eq!(maps, before);
    }

    #[test]
    fn exited_processes_are_kept_up_to_the_limit() {
        let cache = ProcessCache::new();
        let extra = 3;
        let events: Vec<MapEvent> = (1..=(MAX_EXITED_KEPT as u32 + extra))
            .flat_map(|pid| {
                [
                    MapEvent::Exec { pid },
                    MapEvent::Map {
                        pid,
                        mapping: Mapping {
                            start: 0x1000,
                            end: 0x2000,
                            offset: 0,
                            inode: 1,
                            executable: true,
                            path: "/bin/true".into(),
                        },
                    },
                    MapEvent::Exit { pid },
                ]
            })
            .collect();
        cache.apply(&events);
        assert_eq!(cache.evicted(), u64::from(extra));
        assert_eq!(cache.find(1, 0x1000), None);
        assert_eq!(cache.find(extra, 0x1000), None);
        assert!(cache.find(extra + 1, 0x1000).is_some());
        assert!(cache.find(MAX_EXITED_KEPT as u32 + extra, 0x1000).is_some());
        // A process still running is never dropped.
        cache.apply(&[MapEvent::Exec { pid: 1 }]);
        cache.apply(&[MapEvent::Exit { pid: 5 }]);
        assert!(cache.get(1).is_some());
    }
}
