//! Code addresses to their source: the line of an address and the functions inlined there,
//! for stacks printed with `show_debug_info` (bpftrace 0.27 prints them through blazesym).
//!
//! A binary's DWARF is opened once ([`SourceFrames::open`], in the binary or in its separate
//! debug file, with dwz's supplementary file), and read with the `addr2line` crate, which
//! parses a unit's line table and inlined subroutines the first time an address falls in it
//! and keeps them. An address's answer is kept too ([`MEMO_LIMIT`] of them), as stacks
//! repeat the same return addresses. The split units of `-gsplit-dwarf` are read from their
//! `.dwo` files (not from a `.dwp` package: without it, an address in such a unit gets its
//! line from the skeleton's table but no inlined functions).
//!
//! As addr2line and blazesym give them, the innermost function at an address (the last one
//! inlined, or the function itself) has the address's line; each function around it has the
//! line of the call that the inner one was inlined at. A file is its path as the line table
//! gives it, joined to the unit's directory and compilation directory unless absolute.

use super::super::debug_search::DebugPath;
use super::R;
use super::load::{Sections, Storage, open_sections, parse};
use sonde_lang::kernel::DebugInfoError;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// How many answers a binary keeps; past it they are dropped and found again.
pub const MEMO_LIMIT: usize = 1 << 16;

/// A function inlined at an address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InlinedFunction {
    /// Its name as DWARF gives it.
    pub name: String,
    /// `FILE:LINE` (see the module doc for which line).
    pub location: Option<String>,
}

/// The source of a code address.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceInfo {
    /// `FILE:LINE` in the function the address is in: the address's line, or the line of
    /// the call of the outermost inlined function when there is one.
    pub location: Option<String>,
    /// The functions inlined at the address, innermost first.
    pub inlined: Vec<InlinedFunction>,
}

/// The lookups of one binary and the bytes they read.
struct Lookups {
    context: addr2line::Context<R>,
    memo: HashMap<u64, Arc<SourceInfo>>,
    /// Where `.dwo` files are looked for first: the binary's directory.
    binary_dir: PathBuf,
}

/// The DWARF of one binary, opened for address lookups.
pub struct SourceFrames {
    /// The lookups (the addr2line context borrows `storage`'s bytes: it is declared first,
    /// so it drops first).
    lookups: Mutex<Lookups>,
    /// The bytes of the files read; `.dwo` files are added as they are opened.
    storage: Mutex<Storage>,
    /// The file the DWARF was read from.
    debug_path: PathBuf,
}

impl std::fmt::Debug for SourceFrames {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SourceFrames")
            .field("debug_path", &self.debug_path)
            .finish()
    }
}

impl SourceFrames {
    /// Opens the DWARF of the binary at `path` (its own, or its separate debug file's found
    /// on `search`). An error when it has none.
    pub fn open(path: &Path, search: &DebugPath) -> Result<SourceFrames, DebugInfoError> {
        let mut storage = Storage::lines_only();
        let binary = parse(&mut storage, path)?;
        let Sections {
            main, debug_path, ..
        } = open_sections(&mut storage, &path.display().to_string(), binary, search)?;
        let context = addr2line::Context::from_dwarf(main)
            .map_err(|e| DebugInfoError::Invalid(format!("corrupt DWARF: {e}")))?;
        Ok(SourceFrames {
            lookups: Mutex::new(Lookups {
                context,
                memo: HashMap::new(),
                binary_dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
            }),
            storage: Mutex::new(storage),
            debug_path,
        })
    }

    /// The file the DWARF was read from (the binary, or its debug file).
    pub fn debug_path(&self) -> &Path {
        &self.debug_path
    }

    /// The source of `addr` (an address of the binary's own address space, as its symbols
    /// have them); `None` when no unit covers it.
    pub fn lookup(&self, addr: u64) -> Option<Arc<SourceInfo>> {
        // addr2line looks up `[addr, addr + 1)`: the last address has no range (found by
        // tests/fuzz).
        if addr == u64::MAX {
            return None;
        }
        let mut lookups = self.lookups.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(known) = lookups.memo.get(&addr) {
            return Some(known.clone());
        }
        let found = self.find(&lookups, addr).map(Arc::new);
        if let Some(info) = &found {
            if lookups.memo.len() >= MEMO_LIMIT {
                lookups.memo.clear();
            }
            lookups.memo.insert(addr, info.clone());
        }
        found
    }

    /// The frames at `addr`, innermost first, as `(function name, location)`, turned into
    /// a [`SourceInfo`]. Corrupt DWARF gives what was read before it.
    fn find(&self, lookups: &Lookups, addr: u64) -> Option<SourceInfo> {
        let mut lookup = lookups.context.find_frames(addr);
        let mut iter = loop {
            match lookup {
                addr2line::LookupResult::Output(r) => break r.ok()?,
                addr2line::LookupResult::Load { load, continuation } => {
                    let dwo = self.load_dwo(&lookups.binary_dir, &load);
                    lookup = addr2line::LookupContinuation::resume(continuation, dwo);
                }
            }
        };
        let mut frames: Vec<(Option<String>, Option<String>)> = Vec::new();
        while let Ok(Some(frame)) = iter.next() {
            let name = frame
                .function
                .as_ref()
                .and_then(|f| f.raw_name().ok())
                .map(|n| n.into_owned());
            let location = frame.location.as_ref().and_then(|l| {
                l.file
                    .map(|file| format!("{file}:{}", l.line.unwrap_or_default()))
            });
            frames.push((name, location));
            // A corrupt chain of inlined subroutines cannot be deeper than DWARF nests.
            if frames.len() > super::types::MAX_DEPTH as usize {
                break;
            }
        }
        let (_, location) = frames.pop()?;
        Some(SourceInfo {
            location,
            inlined: frames
                .into_iter()
                .map(|(name, location)| InlinedFunction {
                    name: name.unwrap_or_else(|| "??".to_string()),
                    location,
                })
                .collect(),
        })
    }

    /// The split unit `load` asks for, from its `.dwo` file: the name when absolute, else
    /// next to the binary, then under the compilation directory; taken only when its unit
    /// has the skeleton's DWO id.
    fn load_dwo(
        &self,
        binary_dir: &Path,
        load: &addr2line::SplitDwarfLoad<R>,
    ) -> Option<Arc<gimli::Dwarf<R>>> {
        let name = PathBuf::from(load.path.as_ref()?.to_string_lossy().into_owned());
        let comp_dir = load
            .comp_dir
            .as_ref()
            .map(|d| PathBuf::from(d.to_string_lossy().into_owned()));
        let candidates = if name.is_absolute() {
            vec![name]
        } else {
            let mut c = vec![binary_dir.join(&name)];
            c.extend(comp_dir.map(|d| d.join(&name)));
            c
        };
        let mut storage = self.storage.lock().unwrap_or_else(|e| e.into_inner());
        candidates.iter().filter(|p| p.is_file()).find_map(|p| {
            let obj = parse(&mut storage, p).ok()?;
            let mut dwarf = storage.sections(&obj, p, true).ok()?;
            dwarf.make_dwo(&load.parent);
            let header = dwarf.units().next().ok()??;
            let unit = dwarf.unit(header).ok()?;
            (unit.dwo_id == Some(load.dwo_id)).then(|| Arc::new(dwarf))
        })
    }
}
