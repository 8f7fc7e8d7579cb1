//! Function symbols of user-space ELF files, looked up by file offset.
//!
//! A process maps a file at some address; `/proc/PID/maps` turns a runtime address into a
//! file offset, and the file's `PT_LOAD` program headers turn that offset into a *symbol
//! value* (a virtual address in the file's own address space), which is what `.symtab` and
//! `.dynsym` list. This works alike for PIE executables, fixed-address executables and
//! shared libraries.
//!
//! Symbols come from the file and from its separate debug file when one is installed: by
//! build id (`/usr/lib/debug/.build-id/xx/yyyy.debug`), by `.gnu_debuglink` name (next to
//! the file, in its `.debug/` directory, or under `/usr/lib/debug/<dir>/`), or as
//! `/usr/lib/debug/<path>.debug`. The `.gnu_debugdata` section (an xz-compressed mini ELF,
//! used by Fedora) is not read: no xz decompressor is in the dependency tree.

use object::{Object, ObjectSegment};
use std::path::{Path, PathBuf};

use crate::elf_symbols::{FunctionSymbol, sized_function_symbols};

/// A loadable segment: file bytes `[offset, offset + file_size)` mapped at `address`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Segment {
    address: u64,
    offset: u64,
    file_size: u64,
}

/// The function symbols of one ELF file (and its debug file), ready for address lookup.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ElfSymbolTable {
    /// Loadable segments of the main file.
    segments: Vec<Segment>,
    /// Function symbols sorted by address; among aliases the first seen comes first.
    functions: Vec<FunctionSymbol>,
    /// The debug file whose symbols were merged in, if any.
    debug_file: Option<PathBuf>,
}

/// The `PT_LOAD` segments of a parsed file (the only segments `object` lists for ELF).
fn segments(file: &object::File<'_>) -> Vec<Segment> {
    file.segments()
        .map(|s| Segment {
            address: s.address(),
            offset: s.file_range().0,
            file_size: s.file_range().1,
        })
        .collect()
}

/// Candidate paths of the separate debug file of `path`, most specific first.
fn debug_candidates(path: &Path, file: &object::File<'_>) -> Vec<PathBuf> {
    let root = Path::new("/usr/lib/debug");
    let mut out = Vec::new();
    if let Ok(Some(id)) = file.build_id() {
        out.extend(crate::kernel_info::debug_search::build_id_path(root, id));
    }
    if let Ok(Some((name, _crc))) = file.gnu_debuglink() {
        let name = String::from_utf8_lossy(name).into_owned();
        let dir = path.parent().unwrap_or(Path::new("/"));
        out.push(dir.join(&name));
        out.push(dir.join(".debug").join(&name));
        out.push(root.join(dir.strip_prefix("/").unwrap_or(dir)).join(&name));
    }
    let rel = path.strip_prefix("/").unwrap_or(path);
    out.push(root.join(format!("{}.debug", rel.display())));
    // A debug link naming the file itself would reread it: never a useful candidate.
    out.retain(|c| c != path);
    out
}

impl ElfSymbolTable {
    /// Builds the table from the bytes of the main file (at `path`, used to find its debug
    /// file) and, when `with_debug_file`, from its separate debug file if one exists.
    pub fn from_bytes(
        path: &Path,
        data: &[u8],
        with_debug_file: bool,
    ) -> Result<ElfSymbolTable, String> {
        let file = crate::elf_symbols::parse(&path.display().to_string(), data)?;
        let mut functions = sized_function_symbols(&file);
        let mut debug_file = None;
        if with_debug_file {
            for candidate in debug_candidates(path, &file) {
                let Ok(bytes) = std::fs::read(&candidate) else {
                    continue;
                };
                let Ok(debug) = object::File::parse(&*bytes) else {
                    continue;
                };
                // The debug file's full `.symtab` goes first: it has the local functions.
                let mut merged = sized_function_symbols(&debug);
                merged.append(&mut functions);
                functions = merged;
                debug_file = Some(candidate);
                break;
            }
        }
        functions.sort_by_key(|f| f.address);
        functions.dedup_by(|b, a| a.address == b.address && a.name == b.name);
        Ok(ElfSymbolTable {
            segments: segments(&file),
            functions,
            debug_file,
        })
    }

    /// Reads the ELF file at `path` (and its debug file when installed).
    pub fn load(path: &Path) -> Result<ElfSymbolTable, String> {
        let data = crate::elf_symbols::read(&path.display().to_string())?;
        ElfSymbolTable::from_bytes(path, &data, true)
    }

    /// Number of function symbols.
    pub fn len(&self) -> usize {
        self.functions.len()
    }

    /// True when the file has no function symbol at all.
    pub fn is_empty(&self) -> bool {
        self.functions.is_empty()
    }

    /// The debug file whose symbols were used, if any.
    pub fn debug_file(&self) -> Option<&Path> {
        self.debug_file.as_deref()
    }

    /// The symbol value (file virtual address) of the byte at file offset `offset`.
    pub fn offset_to_address(&self, offset: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|s| offset >= s.offset && offset - s.offset < s.file_size)
            // A segment of a damaged file may claim an address near the top: no address.
            .and_then(|s| (offset - s.offset).checked_add(s.address))
    }

    /// The function containing the symbol value `address`, with the offset into it. A symbol
    /// with a size must contain the address; a symbol without one covers up to the next.
    pub fn lookup_address(&self, address: u64) -> Option<(&str, u64)> {
        let after = self.functions.partition_point(|f| f.address <= address);
        let candidates = &self.functions[..after];
        let last = candidates.last()?;
        let start = candidates.partition_point(|f| f.address < last.address);
        // Aliases at one address: one whose size covers the address (or that has no size),
        // then the best name: a global one (glibc's `getppid` over its local `__GI_getppid`
        // and `__getppid`), then the one with the fewest leading underscores.
        let hit = candidates[start..]
            .iter()
            .filter(|f| f.size == 0 || address - f.address < f.size)
            .min_by_key(|f| {
                (
                    address - f.address >= f.size,
                    !f.global,
                    f.name.len() - f.name.trim_start_matches('_').len(),
                )
            })?;
        Some((hit.name.as_str(), address - hit.address))
    }

    /// The function containing file offset `offset`.
    pub fn lookup_offset(&self, offset: u64) -> Option<(&str, u64)> {
        self.lookup_address(self.offset_to_address(offset)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::elf_symbols::resolve_uaddr;

    /// Found by tests/fuzz (tests/fuzz/regressions/elf/): a damaged segment address made
    /// the file offset's address overflow.
    #[test]
    fn a_segment_address_near_the_top_has_no_addresses() {
        let table = ElfSymbolTable {
            segments: vec![Segment {
                address: u64::MAX - 4,
                offset: 0x1000,
                file_size: 0x100,
            }],
            functions: Vec::new(),
            debug_file: None,
        };
        assert_eq!(table.offset_to_address(0x1002), Some(u64::MAX - 2));
        assert_eq!(table.offset_to_address(0x1010), None);
        assert_eq!(table.lookup_offset(0x1010), None);
    }

    /// A function of this test binary with a stable name.
    #[unsafe(no_mangle)]
    #[inline(never)]
    pub extern "C" fn sonde_symbols_user_marker(x: u64) -> u64 {
        std::hint::black_box(x.wrapping_add(7))
    }

    #[test]
    fn own_function_resolves_through_its_file_offset() {
        assert_eq!(sonde_symbols_user_marker(1), 8);
        let exe = std::env::current_exe().unwrap();
        let table = ElfSymbolTable::load(&exe).unwrap();
        assert!(!table.is_empty());
        let maps = super::super::procmaps::ProcessMaps::read(std::process::id()).unwrap();
        let addr = sonde_symbols_user_marker as *const () as u64;
        let m = maps.lookup(addr).unwrap();
        assert_eq!(
            table.lookup_offset(m.file_offset(addr)),
            Some(("sonde_symbols_user_marker", 0))
        );
        assert_eq!(
            table.lookup_offset(m.file_offset(addr + 3)),
            Some(("sonde_symbols_user_marker", 3))
        );
        let value = resolve_uaddr(exe.to_str().unwrap(), "sonde_symbols_user_marker").unwrap();
        assert_eq!(
            table.lookup_address(value),
            Some(("sonde_symbols_user_marker", 0))
        );
        assert_eq!(
            resolve_uaddr(exe.to_str().unwrap(), "no_such_symbol_xyz"),
            None
        );
    }

    #[test]
    fn debug_candidates_follow_the_conventions() {
        let exe = std::env::current_exe().unwrap();
        let data = std::fs::read(&exe).unwrap();
        let file = object::File::parse(&*data).unwrap();
        let c = debug_candidates(Path::new("/opt/app/bin/tool"), &file);
        assert_eq!(
            c.last().unwrap(),
            Path::new("/usr/lib/debug/opt/app/bin/tool.debug")
        );
    }

    #[test]
    fn libc_local_functions_come_from_its_debug_file_when_installed() {
        let libc = Path::new("/usr/lib/x86_64-linux-gnu/libc.so.6");
        let Ok(table) = ElfSymbolTable::load(libc) else {
            return;
        };
        let Some(debug) = table.debug_file() else {
            // No debug file installed: .dynsym alone still names exported functions.
            assert!(table.functions.iter().any(|f| f.name == "getppid"));
            return;
        };
        assert!(debug.starts_with("/usr/lib/debug"));
        // A local (static) function, absent from .dynsym, that bpftrace printed here.
        assert!(
            table
                .functions
                .iter()
                .any(|f| f.name == "__libc_start_call_main")
        );
    }

    #[test]
    fn unreadable_files_are_errors() {
        assert!(
            ElfSymbolTable::load(Path::new("/nonexistent/x"))
                .unwrap_err()
                .starts_with("cannot read")
        );
        assert!(
            ElfSymbolTable::load(Path::new("/etc/passwd"))
                .unwrap_err()
                .contains("not a readable ELF")
        );
    }
}
