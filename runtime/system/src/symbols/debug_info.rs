//! Source lines and inlined functions of user addresses (`show_debug_info`): the DWARF of
//! each mapped file opened once ([`SourceFrames`]) and kept by file, as the symbol tables are.

use super::FileKey;
use super::procmaps::Mapping;
use crate::kernel_info::debug_search::DebugPath;
use crate::kernel_info::dwarf::SourceFrames;
pub use crate::kernel_info::dwarf::{InlinedFunction, SourceInfo};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The DWARF of the mapped files, each opened on first need; off, it opens nothing.
#[derive(Debug)]
pub struct DebugInfoCache {
    enabled: AtomicBool,
    files: Mutex<HashMap<FileKey, Option<Arc<SourceFrames>>>>,
    search: DebugPath,
}

impl Default for DebugInfoCache {
    fn default() -> Self {
        DebugInfoCache::new(DebugPath::default())
    }
}

impl DebugInfoCache {
    /// A cache, on, that looks for separate debug files on `search`.
    pub fn new(search: DebugPath) -> DebugInfoCache {
        DebugInfoCache {
            enabled: AtomicBool::new(true),
            files: Mutex::new(HashMap::new()),
            search,
        }
    }

    /// Turns lookups on or off (`config = { show_debug_info = ... }`; on by default).
    pub fn set_enabled(&self, on: bool) {
        self.enabled.store(on, Ordering::Relaxed);
    }

    /// True when lookups are on.
    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// The DWARF of the file of `mapping` in process `pid`, opened once per file (through
    /// `/proc/PID/root` while the process lives; a file of another inode is not it). `None`
    /// when lookups are off or the file has no DWARF.
    pub fn file(&self, pid: u32, mapping: &Mapping) -> Option<Arc<SourceFrames>> {
        if !self.enabled() {
            return None;
        }
        let key = (mapping.path.clone(), mapping.inode);
        let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(cached) = files.get(&key) {
            return cached.clone();
        }
        let opened = super::mapped_file_paths(pid, mapping)
            .find_map(|p| SourceFrames::open(&p, &self.search).ok())
            .map(Arc::new);
        files.insert(key, opened.clone());
        opened
    }
}
