//! Function parameters and source lines from DWARF, for `args` of `uprobe:BIN:FUNC`, `sonde
//! -lv` and `uprobe:BIN@FILE:LINE`: what bpftrace reads with libdw, read here with gimli; and
//! the source lines and inlined functions of stack frames ([`SourceFrames`], `show_debug_info`).
//!
//! A binary's DWARF is opened once per run ([`DwarfCache`], [`load::Loaded`]): in the binary,
//! or in a separate debug file found on the search path (`debug_search`, `--debuginfo`),
//! with the supplementary file a dwz-compressed one names (`.gnu_debugaltlink`), and the
//! split units of `-gsplit-dwarf` (`.dwo` files, or a `.dwp` package: [`split`]) opened as
//! they are reached. A lookup parses as little as it can: the function's address (from the
//! ELF symbols) selects its compilation unit through `.debug_aranges` or the units' address
//! ranges, and only that unit's entries are walked; other units are loaded only when a type
//! refers into them. Parsed units stay parsed for the next lookup. Every walk is bounded
//! ([`types::MAX_DEPTH`]), so corrupt DWARF yields an error or a `void`, never a hang.
//!
//! Each parameter gets the x86-64 System V location it arrives in ([`abi`]): the Nth integer
//! argument register is `argN`, as bpftrace maps them, but floating-point parameters, structs
//! passed in memory or in two registers, and a hidden pointer for a returned struct are
//! accounted for, so that the parameters after them are read from the right register.

mod abi;
mod frames;
mod lines;
mod load;
mod reader;
mod split;
mod types;

#[cfg(test)]
mod frames_tests;
#[cfg(test)]
mod tests;

use super::debug_search::DebugPath;
pub use frames::{InlinedFunction, MEMO_LIMIT, SourceFrames, SourceInfo};
use gimli::{EndianSlice, LittleEndian};
pub use load::Loaded;
use reader::Dwarf;
use sonde_lang::kernel::{DebugInfoError, FunctionParams, SourceLine};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// gimli's reader over section bytes kept by the [`Dwarf`] that reads them.
type R = EndianSlice<'static, LittleEndian>;

/// An entry: the file it is in (an index of [`Dwarf`]'s files) and its offset in that file's
/// `.debug_info`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Die {
    file: usize,
    off: usize,
}

/// The opened DWARF of one binary, or why it could not be opened.
type Opened = Arc<Mutex<Result<Loaded, DebugInfoError>>>;

/// The DWARF of the binaries a run reads, each opened once, searched for separate debug
/// files on one path.
#[derive(Default)]
pub struct DwarfCache {
    search: DebugPath,
    files: Mutex<HashMap<String, Opened>>,
}

impl std::fmt::Debug for DwarfCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DwarfCache")
            .field("search", &self.search)
            .finish()
    }
}

impl DwarfCache {
    /// An empty cache searching `search` for separate debug files.
    pub fn new(search: DebugPath) -> DwarfCache {
        DwarfCache {
            search,
            files: Mutex::new(HashMap::new()),
        }
    }

    /// Runs `f` on the DWARF of the binary at `path`, opened on first use.
    fn with<T>(
        &self,
        path: &str,
        f: impl FnOnce(&Loaded) -> Result<T, DebugInfoError>,
    ) -> Result<T, DebugInfoError> {
        let opened = {
            let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
            files
                .entry(path.to_string())
                .or_insert_with(|| Arc::new(Mutex::new(Loaded::open(path, &self.search))))
                .clone()
        };
        let loaded = opened.lock().unwrap_or_else(|e| e.into_inner());
        match &*loaded {
            Ok(l) => f(l),
            Err(e) => Err(e.clone()),
        }
    }

    /// The parameters of function `func` of the ELF file at `path`, from its DWARF.
    pub fn function_params(
        &self,
        path: &str,
        func: &str,
    ) -> Result<FunctionParams, DebugInfoError> {
        self.with(path, |l| l.function_params(func))
    }

    /// The parameter declarations (`int argc`, `char** argv`) of each of `funcs` that the
    /// DWARF of the ELF file at `path` describes (for `sonde -lv`).
    pub fn function_signatures(
        &self,
        path: &str,
        funcs: &[&str],
    ) -> Result<HashMap<String, Vec<String>>, DebugInfoError> {
        self.with(path, |l| l.function_signatures(funcs))
    }

    /// The file offset of the first statement at source line `at` in the binary at `path`,
    /// from its DWARF line table: where a uprobe on that line goes.
    pub fn line_offset(&self, path: &str, at: SourceLine<'_>) -> Result<u64, DebugInfoError> {
        let SourceLine { file, line, column } = at;
        self.with(path, |l| {
            let addr = l.dwarf.line_address(file, line, column)?;
            l.file_offset(addr).ok_or_else(|| {
                DebugInfoError::Invalid(format!(
                    "address {addr:#x} of '{file}:{line}' is in no segment of {path}"
                ))
            })
        })
    }
}

/// The parameters of function `func` of the ELF file at `path`, from its DWARF, separate
/// debug files searched on the default path.
pub fn function_params(path: &str, func: &str) -> Result<FunctionParams, DebugInfoError> {
    Loaded::open(path, &DebugPath::default())?.function_params(func)
}

/// The parameter declarations of each of `funcs` in the ELF file at `path` (see
/// [`DwarfCache::function_signatures`]), separate debug files searched on the default path.
pub fn function_signatures(
    path: &str,
    funcs: &[&str],
) -> Result<HashMap<String, Vec<String>>, DebugInfoError> {
    Loaded::open(path, &DebugPath::default())?.function_signatures(funcs)
}

impl Loaded {
    /// The parameters of function `func`.
    pub fn function_params(&self, func: &str) -> Result<FunctionParams, DebugInfoError> {
        let dw = &self.dwarf;
        let addr = self.symbols.get(func).copied();
        let Some(die) = dw.find_function(func, addr)? else {
            return Err(match dw.missing_split() {
                Some(why) => DebugInfoError::Missing(why),
                None => DebugInfoError::NoFunction(self.debug_path.clone()),
            });
        };
        Ok(FunctionParams {
            debug_file: self.debug_path.clone(),
            params: dw.params(die)?,
        })
    }

    /// The parameter declarations of each of `funcs` the DWARF describes, in one pass over
    /// its units.
    pub fn function_signatures(
        &self,
        funcs: &[&str],
    ) -> Result<HashMap<String, Vec<String>>, DebugInfoError> {
        let dw = &self.dwarf;
        let wanted: std::collections::HashSet<&str> = funcs.iter().copied().collect();
        // By address too: `malloc` is described as `__libc_malloc`, at the same address.
        let mut at: HashMap<u64, Vec<&str>> = HashMap::new();
        for f in funcs {
            if let Some(&a) = self.symbols.get(*f) {
                at.entry(a).or_default().push(f);
            }
        }
        let mut out = HashMap::new();
        for (name, die) in dw.all_functions(&wanted, &at)? {
            let lines = dw
                .param_dies(die)?
                .into_iter()
                .map(|p| {
                    let ty = dw.type_name(dw.type_of(p)?, 0)?;
                    Ok(match dw.name(p)? {
                        Some(n) => format!("{ty} {n}"),
                        None => ty,
                    })
                })
                .collect::<Result<Vec<String>, DebugInfoError>>()?;
            out.entry(name).or_insert(lines);
        }
        if out.is_empty()
            && let Some(why) = dw.missing_split()
        {
            return Err(DebugInfoError::Missing(why));
        }
        Ok(out)
    }
}
