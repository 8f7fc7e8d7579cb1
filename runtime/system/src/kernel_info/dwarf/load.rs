//! Opening the DWARF of a binary once: the files are mapped (or their compressed sections
//! inflated) into a [`Storage`] that lives as long as the [`Dwarf`] reading them, so that a
//! whole run's lookups on one binary share one parsed copy of its units.
//!
//! gimli's readers borrow the section bytes; the bytes are kept in the same value as the
//! readers, behind the `'static` lifetime [`Storage::keep`] gives them. That is sound
//! because the bytes never move (a mapping stays where it is, a `Vec`'s heap buffer too)
//! and are released only when the [`Dwarf`] holding them drops, after its readers (fields
//! drop in declaration order, and `storage` is the last field). No `'static` slice ever leaves
//! the module's private types.

use super::super::debug_file::{self, Mapped};
use super::super::debug_search::{self, DebugPath};
use super::{Dwarf, R};
use gimli::{EndianSlice, LittleEndian};
use object::{Object, ObjectSegment, ObjectSymbol};
use sonde_lang::kernel::DebugInfoError;
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The bytes the readers of a [`Dwarf`] borrow.
#[derive(Default)]
pub(super) struct Storage {
    maps: Vec<Mapped>,
    inflated: Vec<Vec<u8>>,
    /// Only the sections that lines and inlined functions are read from are loaded (the
    /// others read as empty): compressed sections are inflated whole when loaded.
    lines_only: bool,
}

/// The sections addresses' lines and inlined functions are read from.
const LINE_SECTIONS: &[gimli::SectionId] = &[
    gimli::SectionId::DebugAbbrev,
    gimli::SectionId::DebugAddr,
    gimli::SectionId::DebugAranges,
    gimli::SectionId::DebugInfo,
    gimli::SectionId::DebugLine,
    gimli::SectionId::DebugLineStr,
    gimli::SectionId::DebugRanges,
    gimli::SectionId::DebugRngLists,
    gimli::SectionId::DebugStr,
    gimli::SectionId::DebugStrOffsets,
    gimli::SectionId::DebugCuIndex,
    gimli::SectionId::DebugTuIndex,
];

impl Storage {
    /// A storage that loads only the sections lines and inlined functions are read from.
    pub(super) fn lines_only() -> Storage {
        Storage {
            lines_only: true,
            ..Storage::default()
        }
    }

    /// Keeps `map` alive with this storage and returns its bytes.
    pub(super) fn map(&mut self, path: &Path) -> Result<&'static [u8], String> {
        let map = Mapped::open(path)?;
        // SAFETY: the mapping's pages do not move when the `Mapped` value moves, and they
        // are unmapped only when this storage drops, after every reader (module doc).
        let bytes = unsafe { std::slice::from_raw_parts(map.bytes().as_ptr(), map.bytes().len()) };
        self.maps.push(map);
        Ok(bytes)
    }

    /// Keeps section `data` (borrowed from a kept mapping, or inflated) and returns it.
    fn keep(&mut self, data: Cow<'static, [u8]>) -> &'static [u8] {
        match data {
            Cow::Borrowed(b) => b,
            Cow::Owned(v) => {
                // SAFETY: a `Vec`'s heap buffer does not move when the `Vec` moves into
                // `inflated`, and is freed only when this storage drops (module doc).
                let bytes = unsafe { std::slice::from_raw_parts(v.as_ptr(), v.len()) };
                self.inflated.push(v);
                bytes
            }
        }
    }

    /// Section `id` of `file` (of `path`, mapped by [`Storage::map`]), empty when it has
    /// none; `dwo` reads the `.dwo` name of a split DWARF file or package.
    pub(super) fn section(
        &mut self,
        file: &object::File<'static>,
        path: &Path,
        id: gimli::SectionId,
        dwo: bool,
    ) -> Result<R, DebugInfoError> {
        let name = if dwo { id.dwo_name() } else { Some(id.name()) };
        let name = name.filter(|_| !self.lines_only || LINE_SECTIONS.contains(&id));
        let data = match name {
            Some(n) => debug_file::section_data(file, n)
                .map_err(|e| DebugInfoError::Invalid(format!("{}: {e}", path.display())))?,
            None => Cow::Borrowed(&[][..]),
        };
        Ok(EndianSlice::new(self.keep(data), LittleEndian))
    }

    /// The DWARF sections of `file` (see [`Storage::section`]).
    pub(super) fn sections(
        &mut self,
        file: &object::File<'static>,
        path: &Path,
        dwo: bool,
    ) -> Result<gimli::Dwarf<R>, DebugInfoError> {
        gimli::Dwarf::load(|id| self.section(file, path, id, dwo))
    }
}

/// The parsed ELF of the file at `path`, mapped into `storage`.
pub(super) fn parse(
    storage: &mut Storage,
    path: &Path,
) -> Result<object::File<'static>, DebugInfoError> {
    let bytes = storage.map(path).map_err(DebugInfoError::Invalid)?;
    object::File::parse(bytes)
        .map_err(|e| DebugInfoError::Invalid(format!("{} is not an ELF file: {e}", path.display())))
}

/// The addresses of the function symbols of `file` (static and dynamic), by name.
fn function_addresses(file: &object::File<'_>) -> HashMap<String, u64> {
    let mut out = HashMap::new();
    for sym in file.symbols().chain(file.dynamic_symbols()) {
        if sym.kind() == object::SymbolKind::Text
            && sym.is_definition()
            && let Ok(name) = sym.name()
        {
            out.entry(name.to_string()).or_insert(sym.address());
        }
    }
    out
}

/// The DWARF of one binary, opened once.
pub struct Loaded {
    /// The binary's function addresses by name (they select a function's unit).
    pub(super) symbols: HashMap<String, u64>,
    /// The file the DWARF was read from (the binary, or its separate debug file).
    pub(super) debug_path: String,
    /// The binary's loaded segments: `(address, file offset, size in the file)`.
    segments: Vec<(u64, u64, u64)>,
    /// The DWARF and the bytes it reads.
    pub(super) dwarf: Dwarf,
}

impl Loaded {
    /// Opens the binary at `path` and the files holding its DWARF: its separate debug file
    /// when it has no DWARF of its own, and the supplementary file that file names
    /// (`.gnu_debugaltlink`). Split units (`.dwo`, `.dwp`) are opened when first read.
    pub fn open(path: &str, search: &DebugPath) -> Result<Loaded, DebugInfoError> {
        let mut storage = Storage::default();
        let binary = parse(&mut storage, Path::new(path))?;
        let symbols = function_addresses(&binary);
        let segments = binary
            .segments()
            .map(|s| {
                let (offset, size) = s.file_range();
                (s.address(), offset, size)
            })
            .collect();
        let Sections {
            main,
            sup,
            debug_path,
        } = open_sections(&mut storage, path, binary, search)?;
        let binary_path = std::fs::canonicalize(path).unwrap_or_else(|_| PathBuf::from(path));
        Ok(Loaded {
            symbols,
            debug_path: debug_path.display().to_string(),
            segments,
            dwarf: Dwarf::new(main, sup, binary_path, storage),
        })
    }
}

/// The DWARF sections of a binary, ready for gimli: see [`open_sections`].
pub(super) struct Sections {
    /// The main DWARF, with the supplementary file's sections as its `sup`.
    pub(super) main: gimli::Dwarf<R>,
    /// The supplementary file's sections on their own, when there is one.
    pub(super) sup: Option<gimli::Dwarf<R>>,
    /// The file the DWARF was read from (the binary, or its separate debug file).
    pub(super) debug_path: PathBuf,
}

/// The DWARF sections of `binary` (the file at `path`, parsed in `storage`): its own, or its
/// separate debug file's found on `search`, with the supplementary file that file names
/// (`.gnu_debugaltlink`).
pub(super) fn open_sections(
    storage: &mut Storage,
    path: &str,
    binary: object::File<'static>,
    search: &DebugPath,
) -> Result<Sections, DebugInfoError> {
    let (debug_obj, debug_path) = if debug_file::has_dwarf(&binary) {
        (binary, PathBuf::from(path))
    } else {
        let found = debug_search::find_debug_file(Path::new(path), &binary, search)
            .map_err(|searched| missing(path, &searched))?;
        (parse(storage, &found)?, found)
    };
    let mut main = storage.sections(&debug_obj, &debug_path, false)?;
    let mut sup = None;
    if let Ok(Some((name, id))) = debug_obj.gnu_debugaltlink() {
        let name = String::from_utf8_lossy(name).into_owned();
        let alt =
            debug_search::find_alt_file(&debug_path, &name, id, search).map_err(|searched| {
                DebugInfoError::Missing(format!(
                    "the DWARF of {} refers to the supplementary file {name} \
                     (.gnu_debugaltlink), which is not at {}",
                    debug_path.display(),
                    searched.join(", ")
                ))
            })?;
        let alt_obj = parse(storage, &alt)?;
        // Two readers of the same bytes: one for the main file's `_alt` forms, one
        // whose units are read on their own.
        main.set_sup(storage.sections(&alt_obj, &alt, false)?);
        sup = Some(storage.sections(&alt_obj, &alt, false)?);
    }
    Ok(Sections {
        main,
        sup,
        debug_path,
    })
}

impl Loaded {
    /// The file offset of virtual address `addr` of the binary, through the segment holding
    /// it.
    pub(super) fn file_offset(&self, addr: u64) -> Option<u64> {
        self.segments.iter().find_map(|&(start, offset, size)| {
            (addr >= start && addr - start < size).then(|| addr - start + offset)
        })
    }
}

/// The diagnostic reason for a binary without DWARF whose debug file is nowhere in
/// `searched`.
fn missing(path: &str, searched: &[String]) -> DebugInfoError {
    let mut text = if searched.is_empty() {
        format!("{path} has no .debug_info, build id or .gnu_debuglink")
    } else {
        format!(
            "{path} has no .debug_info, and no debug file is at {}",
            searched.join(", ")
        )
    };
    if std::env::var_os("DEBUGINFOD_URLS").is_some_and(|v| !v.is_empty()) {
        text.push_str(
            " (sonde does not download from debuginfod servers: fetch the file with \
             `debuginfod-find debuginfo BINARY`, which sonde then finds in the client's cache)",
        );
    }
    DebugInfoError::Missing(text)
}
