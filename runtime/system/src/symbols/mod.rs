//! Symbolization: kernel and user addresses to `function+offset`, and stack printing.
//!
//! - [`kallsyms`]: the kernel's text symbols, read once from `/proc/kallsyms`.
//! - [`procmaps`]: per-process address maps: `/proc/PID/maps` snapshots, taken while
//!   processes live, and the mappings the kernel reports as they are made.
//! - [`map_records`]: the kernel's perf records of mappings, execs, forks and exits of every
//!   process (read by the mmap tracker, a [`MappingFeed`]), so that a process that lived for
//!   a millisecond resolves after it exited.
//! - [`user`]: function symbols of ELF files (and their debug files) by file offset.
//! - [`debug_info`]: source lines and inlined functions of user addresses from DWARF
//!   (`show_debug_info`), each file's DWARF opened once.
//! - [`stack`]: stack-trace map values decoded, frames resolved (printed by `sonde-present`).
//! - [`testing`]: fake symbol tables for tests.
//!
//! [`Symbolizer`] ties them together behind the [`SymbolSource`] trait that the stack
//! printers take, so printers can be tested with fake symbol tables.
//!
//! Not done: C++ and Rust demangling (bpftrace demangles C++ names; no demangler crate is in
//! the dependency tree), `.gnu_debugdata` (needs an xz decompressor), perf JIT maps
//! (`/tmp/perf-PID.map`) and build-id stacks (the tracked mappings make them unneeded for
//! files that are still there when printing).

pub mod debug_info;
pub mod kallsyms;
pub mod map_records;
pub mod procmaps;
pub mod stack;
pub mod testing;
pub mod user;

use crate::kernel_info::debug_search::DebugPath;
use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub use crate::elf_symbols::resolve_uaddr;
pub use debug_info::{InlinedFunction, SourceInfo};
pub use kallsyms::{KernelSymbols, kernel_symbols, ksym, resolve_kaddr};
pub use map_records::MappingFeed;
pub use procmaps::{Mapping, ProcessCache, ProcessMaps};
pub use stack::{
    BUILD_ID_STACK, KERNEL_MODULE, decode_build_id_stack, decode_stack, func_offset,
    resolve_frames, split_stack_key,
};
pub use user::ElfSymbolTable;

/// A resolved user-space address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserSymbol {
    /// The function name (as stored in the symbol table).
    pub name: String,
    /// The offset of the address from the function's start.
    pub offset: u64,
    /// The path of the mapped file (the executable or library), as `/proc/PID/maps` names it.
    pub module: String,
}

/// Address-to-symbol lookups used by the stack printers.
pub trait SymbolSource {
    /// `(function, offset)` of a kernel address.
    fn ksym(&self, addr: u64) -> Option<(String, u64)>;
    /// The function, offset and file of an address in process `pid`.
    fn usym(&self, pid: u32, addr: u64) -> Option<UserSymbol>;
    /// The source line of an address in process `pid` and the functions inlined there, from
    /// the DWARF of its file (`show_debug_info`); `None` without DWARF, or when off.
    fn usym_source(&self, pid: u32, addr: u64) -> Option<Arc<SourceInfo>> {
        let _ = (pid, addr);
        None
    }
    /// The kernel module (`[name]`) of a kernel address in a loadable module; `None` for the
    /// kernel image.
    fn kmodule(&self, addr: u64) -> Option<String> {
        let _ = addr;
        None
    }
}

/// A cache key for one mapped file: its path and inode.
type FileKey = (String, u64);

/// The real symbolizer: process-wide kallsyms, per-process maps, per-file ELF symbols.
///
/// Call [`Symbolizer::observe`] with the pid of every event that carries a user stack or
/// address, while the process still runs; later lookups then work after it exits. With
/// [`Symbolizer::track_mappings`], processes started since are known from the kernel's reports
/// of their mappings, however short their lives.
#[derive(Debug, Default)]
pub struct Symbolizer {
    processes: ProcessCache,
    files: Mutex<HashMap<FileKey, Option<Arc<ElfSymbolTable>>>>,
    tracker: Mutex<Option<Box<dyn MappingFeed>>>,
    debug_info: debug_info::DebugInfoCache,
}

impl Symbolizer {
    /// A symbolizer with empty caches.
    pub fn new() -> Symbolizer {
        Symbolizer::default()
    }

    /// A symbolizer that looks for the separate debug files holding the DWARF of mapped
    /// files (`show_debug_info`) on `search` (`--debuginfo`).
    pub fn with_debug_search(search: DebugPath) -> Symbolizer {
        Symbolizer {
            debug_info: debug_info::DebugInfoCache::new(search),
            ..Symbolizer::default()
        }
    }

    /// Snapshots the address maps of `pid` the first time it is seen (see [`ProcessCache`]).
    pub fn observe(&self, pid: u32) {
        self.processes.observe(pid);
    }

    /// Whether user frames get their source lines and inlined functions from DWARF
    /// (`config = { show_debug_info = ... }`, on by default): off, no DWARF is opened.
    pub fn set_debug_info(&self, on: bool) {
        self.debug_info.set_enabled(on);
    }

    /// The process maps cache.
    pub fn processes(&self) -> &ProcessCache {
        &self.processes
    }

    /// Tracks the mappings, execs, forks and exits of every process through `feed` (the
    /// kernel's reports, see [`map_records`]); [`Symbolizer::sync_maps`] must then be called
    /// often enough that the feed's rings do not fill up (the run loop does it every tick).
    pub fn track_mappings(&self, feed: Box<dyn MappingFeed>) {
        *self.tracker.lock().unwrap_or_else(|e| e.into_inner()) = Some(feed);
    }

    /// Applies what the tracker reported since the last call to the process maps (nothing
    /// when not tracking). Lookups that miss call it themselves.
    pub fn sync_maps(&self) {
        let mut tracker = self.tracker.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = tracker.as_mut() {
            let records = t.drain();
            self.processes.apply(records.iter().map(|r| &r.event));
        }
    }

    /// What tracking could not keep: `(records the kernel dropped, exited processes whose
    /// maps were dropped)`.
    pub fn map_losses(&self) -> (u64, u64) {
        let tracker = self.tracker.lock().unwrap_or_else(|e| e.into_inner());
        (
            tracker.as_ref().map_or(0, |t| t.lost()),
            self.processes.evicted(),
        )
    }

    /// The symbol table of the file of `mapping` in process `pid`, loaded once per file.
    ///
    /// While the process lives the file is opened through `/proc/PID/root`, so processes
    /// in other mount namespaces resolve; a candidate whose inode differs from the mapping's
    /// is another file of the same name and is skipped.
    fn file_table(&self, pid: u32, mapping: &Mapping) -> Option<Arc<ElfSymbolTable>> {
        let key = (mapping.path.clone(), mapping.inode);
        let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(cached) = files.get(&key) {
            return cached.clone();
        }
        let table = mapped_file_paths(pid, mapping)
            .find_map(|p| load_named(&p, Path::new(&mapping.path)))
            .map(Arc::new);
        files.insert(key, table.clone());
        table
    }

    /// The mapping of `addr` in process `pid`.
    fn mapping(&self, pid: u32, addr: u64) -> Option<Mapping> {
        match self.processes.find(pid, addr) {
            Some(m) => Some(m),
            None => {
                // The mapping may have been reported since the last sync.
                self.sync_maps();
                self.processes.lookup(pid, addr)
            }
        }
    }

    /// The source line of `addr` in process `pid` and the functions inlined there (see
    /// [`SymbolSource::usym_source`]).
    pub fn usym_source(&self, pid: u32, addr: u64) -> Option<Arc<SourceInfo>> {
        if !self.debug_info.enabled() {
            return None;
        }
        let mapping = self.mapping(pid, addr)?;
        let table = self.file_table(pid, &mapping)?;
        let address = table.offset_to_address(mapping.file_offset(addr))?;
        self.debug_info.file(pid, &mapping)?.lookup(address)
    }

    /// `(function, offset, file)` of `addr` in process `pid`.
    pub fn usym(&self, pid: u32, addr: u64) -> Option<UserSymbol> {
        let mapping = self.mapping(pid, addr)?;
        let table = self.file_table(pid, &mapping)?;
        let (name, offset) = table.lookup_offset(mapping.file_offset(addr))?;
        Some(UserSymbol {
            name: name.to_string(),
            offset,
            module: mapping.path.clone(),
        })
    }

    /// `(function, offset)` of a kernel address.
    pub fn ksym(&self, addr: u64) -> Option<(&'static str, u64)> {
        ksym(addr)
    }
}

/// Loads the ELF at `open` (perhaps a `/proc/PID/root` path) and finds its debug file by its
/// own name `named` when the two differ.
fn load_named(open: &Path, named: &Path) -> Option<ElfSymbolTable> {
    let data = std::fs::read(open).ok()?;
    ElfSymbolTable::from_bytes(named, &data, true).ok()
}

impl SymbolSource for Symbolizer {
    fn ksym(&self, addr: u64) -> Option<(String, u64)> {
        ksym(addr).map(|(n, o)| (n.to_string(), o))
    }

    fn usym(&self, pid: u32, addr: u64) -> Option<UserSymbol> {
        Symbolizer::usym(self, pid, addr)
    }

    fn usym_source(&self, pid: u32, addr: u64) -> Option<Arc<SourceInfo>> {
        Symbolizer::usym_source(self, pid, addr)
    }

    fn kmodule(&self, addr: u64) -> Option<String> {
        kernel_symbols()
            .lookup(addr)?
            .module
            .as_ref()
            .map(|m| format!("[{m}]"))
    }
}

/// The paths that open the file of `mapping` in process `pid`: through `/proc/PID/root` while
/// the process lives (so processes in other mount namespaces resolve), then the path itself;
/// a candidate whose inode differs from the mapping's is another file of the same name and
/// is left out.
pub(crate) fn mapped_file_paths(pid: u32, mapping: &Mapping) -> impl Iterator<Item = PathBuf> {
    let inode = mapping.inode;
    [
        PathBuf::from(format!("/proc/{pid}/root{}", mapping.path)),
        PathBuf::from(&mapping.path),
    ]
    .into_iter()
    .filter(move |p| std::fs::metadata(p).is_ok_and(|md| inode == 0 || md.ino() == inode))
}

#[cfg(test)]
mod live_tests;
