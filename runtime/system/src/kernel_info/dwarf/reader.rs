//! [`Dwarf`]: the entries of a binary's DWARF files, read on demand and kept parsed.
//!
//! File 0 is the main DWARF (the binary's or its debug file's), file 1 the supplementary file
//! of dwz (when there is one); split units (`.dwo`, `.dwp`) are appended as they are opened.
//! An entry ([`Die`]) names its file, so a reference into the supplementary file
//! (`DW_FORM_GNU_ref_alt`) or an entry of a split unit is followed like any other.

use super::load::Storage;
use super::{Die, R};
use gimli::{AttributeValue, UnitOffset};
use sonde_lang::kernel::{DebugInfoError, FunctionParam};
use sonde_lang::types::Record;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

/// A parsed unit, shared by the entries read from it.
pub(super) type UnitRc = Arc<gimli::Unit<R>>;
/// The `(start, end)` of the units of a file.
type Spans = Arc<Vec<(usize, usize)>>;
/// The defined subprograms of a unit, with their entry address.
type Subprograms = Arc<Vec<(Die, u64)>>;
/// An attribute's value with the file and unit it is read in.
type Attr = (usize, UnitRc, AttributeValue<R>);

/// A gimli error as a diagnostic's reason.
pub(super) fn invalid(e: gimli::Error) -> DebugInfoError {
    DebugInfoError::Invalid(format!("corrupt DWARF: {e}"))
}

/// `m` locked (a poisoned lock holds a cache, still usable).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One DWARF file (or one split unit's sections) and its units parsed so far.
pub(super) struct File {
    pub(super) dwarf: gimli::Dwarf<R>,
    /// `(start, end)` of every unit of `.debug_info`, read on first need.
    spans: Mutex<Option<Spans>>,
    /// Units parsed so far, by start offset.
    units: Mutex<HashMap<usize, UnitRc>>,
    /// The subprograms of the units walked so far, by start offset.
    subprograms: Mutex<HashMap<usize, Subprograms>>,
    /// For a split unit: the skeleton unit of the main file it completes.
    skeleton: Option<UnitRc>,
    /// The file `DW_FORM_GNU_ref_alt` references of this file point into.
    pub(super) sup: Option<usize>,
}

impl File {
    /// A file whose units are not read yet.
    pub(super) fn new(
        dwarf: gimli::Dwarf<R>,
        skeleton: Option<UnitRc>,
        sup: Option<usize>,
    ) -> File {
        File {
            dwarf,
            spans: Mutex::new(None),
            units: Mutex::new(HashMap::new()),
            subprograms: Mutex::new(HashMap::new()),
            skeleton,
            sup,
        }
    }
}

/// The DWARF of one binary, its units loaded on demand.
pub(super) struct Dwarf {
    /// The files, main first (see the module doc).
    files: RefCell<Vec<Arc<File>>>,
    /// The binary (its directory and name locate split DWARF files).
    pub(super) binary: PathBuf,
    /// The split unit of each skeleton unit of file 0 opened so far, by the skeleton's start
    /// (`None`: not found).
    pub(super) split: RefCell<HashMap<usize, Option<usize>>>,
    /// The `.dwp` package next to the binary, opened on first need (`None` inside: none).
    pub(super) dwp: RefCell<Option<Option<Arc<gimli::DwarfPackage<R>>>>>,
    /// Split DWARF files that could not be found, for the diagnostic.
    pub(super) missing: RefCell<Vec<String>>,
    /// Records converted so far, by entry and pointer depth.
    pub(super) records: RefCell<HashMap<(Die, u8), Arc<Record>>>,
    /// Records being converted: one met again inside itself (corrupt DWARF) is opaque.
    pub(super) converting: RefCell<HashSet<(Die, u8)>>,
    /// The bytes every reader above borrows: the last field, dropped last.
    pub(super) storage: RefCell<Storage>,
}

impl Dwarf {
    /// The DWARF of `main` (with its supplementary file `sup`) of the binary at `binary`,
    /// reading the bytes of `storage`.
    pub(super) fn new(
        main: gimli::Dwarf<R>,
        sup: Option<gimli::Dwarf<R>>,
        binary: PathBuf,
        storage: Storage,
    ) -> Dwarf {
        let mut files = vec![Arc::new(File::new(main, None, sup.as_ref().map(|_| 1)))];
        if let Some(s) = sup {
            files.push(Arc::new(File::new(s, None, None)));
        }
        Dwarf {
            files: RefCell::new(files),
            binary,
            split: RefCell::new(HashMap::new()),
            dwp: RefCell::new(None),
            missing: RefCell::new(Vec::new()),
            records: RefCell::new(HashMap::new()),
            converting: RefCell::new(HashSet::new()),
            storage: RefCell::new(storage),
        }
    }

    /// File `i`.
    pub(super) fn file(&self, i: usize) -> Result<Arc<File>, DebugInfoError> {
        self.files
            .borrow()
            .get(i)
            .cloned()
            .ok_or_else(|| DebugInfoError::Invalid(format!("corrupt DWARF: no file {i}")))
    }

    /// Adds a file, returning its index.
    pub(super) fn push_file(&self, file: File) -> usize {
        let mut files = self.files.borrow_mut();
        files.push(Arc::new(file));
        files.len() - 1
    }

    /// Why functions may be missing: the split DWARF files that were not found.
    pub(super) fn missing_split(&self) -> Option<String> {
        let missing = self.missing.borrow();
        (!missing.is_empty()).then(|| missing.join("; "))
    }

    /// The start and end of every unit of file `f`.
    pub(super) fn spans(&self, f: usize) -> Result<Spans, DebugInfoError> {
        let file = self.file(f)?;
        if let Some(s) = &*lock(&file.spans) {
            return Ok(s.clone());
        }
        let mut out = Vec::new();
        let mut headers = file.dwarf.units();
        while let Some(h) = headers.next().map_err(invalid)? {
            let start = h.offset().0;
            out.push((start, start.saturating_add(h.length_including_self())));
        }
        let out = Arc::new(out);
        *lock(&file.spans) = Some(out.clone());
        Ok(out)
    }

    /// The unit of file `f` starting at `start` (a split unit with its skeleton's
    /// addresses).
    pub(super) fn unit_at(&self, f: usize, start: usize) -> Result<UnitRc, DebugInfoError> {
        let file = self.file(f)?;
        if let Some(u) = lock(&file.units).get(&start) {
            return Ok(u.clone());
        }
        let header = file
            .dwarf
            .unit_header(gimli::DebugInfoOffset(start))
            .map_err(invalid)?;
        let mut unit = file.dwarf.unit(header).map_err(invalid)?;
        if let Some(skeleton) = &file.skeleton {
            unit.copy_relocated_attributes(skeleton);
        }
        let unit = Arc::new(unit);
        lock(&file.units).insert(start, unit.clone());
        Ok(unit)
    }

    /// The unit holding entry `die`, with `die`'s offset in it.
    fn unit_of(&self, die: Die) -> Result<(UnitRc, UnitOffset), DebugInfoError> {
        let spans = self.spans(die.file)?;
        let i = spans.partition_point(|&(start, _)| start <= die.off);
        let Some(&(start, end)) = i.checked_sub(1).and_then(|i| spans.get(i)) else {
            return Err(DebugInfoError::Invalid(format!(
                "corrupt DWARF: a reference to offset {:#x} is outside every unit",
                die.off
            )));
        };
        if die.off >= end {
            return Err(DebugInfoError::Invalid(format!(
                "corrupt DWARF: offset {:#x} is between units",
                die.off
            )));
        }
        Ok((self.unit_at(die.file, start)?, UnitOffset(die.off - start)))
    }

    /// Entry `die`.
    pub(super) fn entry(
        &self,
        die: Die,
    ) -> Result<(UnitRc, gimli::DebuggingInformationEntry<R>), DebugInfoError> {
        let (unit, off) = self.unit_of(die)?;
        let entry = unit.entry(off).map_err(invalid)?;
        Ok((unit, entry))
    }

    /// The tag of entry `die`.
    pub(super) fn tag(&self, die: Die) -> Result<gimli::DwTag, DebugInfoError> {
        Ok(self.entry(die)?.1.tag())
    }

    /// The entry an attribute of an entry of file `f` refers to.
    fn reference(&self, f: usize, unit: &gimli::Unit<R>, value: AttributeValue<R>) -> Option<Die> {
        match value {
            AttributeValue::UnitRef(o) => Some(Die {
                file: f,
                off: unit.header.offset().0.saturating_add(o.0),
            }),
            AttributeValue::DebugInfoRef(o) => Some(Die { file: f, off: o.0 }),
            AttributeValue::DebugInfoRefSup(o) => Some(Die {
                file: self.file(f).ok()?.sup?,
                off: o.0,
            }),
            _ => None,
        }
    }

    /// Attribute `at` of `die`, or of the entries it completes (`DW_AT_abstract_origin`,
    /// `DW_AT_specification`), with the file and unit it is read in.
    fn attr(&self, die: Die, at: gimli::DwAt) -> Result<Option<Attr>, DebugInfoError> {
        let mut die = die;
        for _ in 0..4 {
            let (unit, entry) = self.entry(die)?;
            if let Some(v) = entry.attr_value(at) {
                return Ok(Some((die.file, unit, v)));
            }
            let origin = entry
                .attr_value(gimli::DW_AT_abstract_origin)
                .or_else(|| entry.attr_value(gimli::DW_AT_specification));
            match origin.and_then(|v| self.reference(die.file, &unit, v)) {
                Some(next) => die = next,
                None => return Ok(None),
            }
        }
        Ok(None)
    }

    /// Attribute `at` of `die` (or of the entries it completes).
    pub(super) fn attr_value(
        &self,
        die: Die,
        at: gimli::DwAt,
    ) -> Result<Option<AttributeValue<R>>, DebugInfoError> {
        Ok(self.attr(die, at)?.map(|(_, _, v)| v))
    }

    /// A string attribute of `die` (or of the entries it completes).
    pub(super) fn string(
        &self,
        die: Die,
        at: gimli::DwAt,
    ) -> Result<Option<String>, DebugInfoError> {
        let Some((f, unit, v)) = self.attr(die, at)? else {
            return Ok(None);
        };
        let s = self.file(f)?.dwarf.attr_string(&unit, v).map_err(invalid)?;
        Ok(Some(s.to_string_lossy().into_owned()))
    }

    /// The name of `die`.
    pub(super) fn name(&self, die: Die) -> Result<Option<String>, DebugInfoError> {
        self.string(die, gimli::DW_AT_name)
    }

    /// An unsigned constant attribute of `die` itself.
    pub(super) fn udata(&self, die: Die, at: gimli::DwAt) -> Result<Option<u64>, DebugInfoError> {
        let (_, entry) = self.entry(die)?;
        Ok(entry.attr(at).and_then(|a| a.udata_value()))
    }

    /// True when `die` itself has attribute `at`.
    pub(super) fn has(&self, die: Die, at: gimli::DwAt) -> Result<bool, DebugInfoError> {
        Ok(self.entry(die)?.1.attr(at).is_some())
    }

    /// The entry `DW_AT_type` of `die` refers to (`None` is `void`).
    pub(super) fn type_of(&self, die: Die) -> Result<Option<Die>, DebugInfoError> {
        Ok(self
            .attr(die, gimli::DW_AT_type)?
            .and_then(|(f, unit, v)| self.reference(f, &unit, v)))
    }

    /// The direct children of `die`.
    pub(super) fn children(&self, die: Die) -> Result<Vec<Die>, DebugInfoError> {
        let (unit, off) = self.unit_of(die)?;
        let start = unit.header.offset().0;
        let mut tree = unit.entries_tree(Some(off)).map_err(invalid)?;
        let root = tree.root().map_err(invalid)?;
        let mut children = root.children();
        let mut out = Vec::new();
        while let Some(child) = children.next().map_err(invalid)? {
            out.push(Die {
                file: die.file,
                off: start.saturating_add(child.entry().offset().0),
            });
        }
        Ok(out)
    }

    /// The children of `die` tagged `tag`.
    pub(super) fn children_tagged(
        &self,
        die: Die,
        tag: gimli::DwTag,
    ) -> Result<Vec<Die>, DebugInfoError> {
        let mut out = Vec::new();
        for c in self.children(die)? {
            if self.tag(c)? == tag {
                out.push(c);
            }
        }
        Ok(out)
    }

    /// The start of the unit of file 0 holding `addr`, by `.debug_aranges` or the units'
    /// ranges.
    fn unit_for_address(&self, addr: u64) -> Result<Option<usize>, DebugInfoError> {
        let main = self.file(0)?;
        let mut headers = main.dwarf.debug_aranges.headers();
        while let Ok(Some(h)) = headers.next() {
            let mut entries = h.entries();
            while let Ok(Some(e)) = entries.next() {
                let r = e.range();
                if (r.begin..r.end).contains(&addr) {
                    return Ok(Some(h.debug_info_offset().0));
                }
            }
        }
        for &(start, _) in self.spans(0)?.iter() {
            let unit = self.unit_at(0, start)?;
            let Ok(mut ranges) = main.dwarf.unit_ranges(&unit) else {
                continue;
            };
            while let Ok(Some(r)) = ranges.next() {
                if (r.begin..r.end).contains(&addr) {
                    return Ok(Some(start));
                }
            }
        }
        Ok(None)
    }

    /// The units whose entries describe unit `start` of file 0: itself, or for a skeleton
    /// unit the split unit it stands for (none when that cannot be found).
    fn content_units(&self, start: usize) -> Result<Vec<(usize, usize)>, DebugInfoError> {
        match self.split_file(start)? {
            None => Ok(vec![(0, start)]),
            Some(None) => Ok(Vec::new()),
            Some(Some(f)) => Ok(self.spans(f)?.iter().map(|&(s, _)| (f, s)).collect()),
        }
    }

    /// Every unit with entries to walk: those of file 0, split units in place of their
    /// skeletons.
    fn all_units(&self) -> Result<Vec<(usize, usize)>, DebugInfoError> {
        let mut out = Vec::new();
        for &(start, _) in self.spans(0)?.iter() {
            out.extend(self.content_units(start)?);
        }
        Ok(out)
    }

    /// The defined subprograms of unit `start` of file `f`, with their entry address (one
    /// walk of the unit per run).
    fn subprograms(&self, f: usize, start: usize) -> Result<Subprograms, DebugInfoError> {
        let file = self.file(f)?;
        if let Some(known) = lock(&file.subprograms).get(&start) {
            return Ok(known.clone());
        }
        let unit = self.unit_at(f, start)?;
        let mut out = Vec::new();
        let mut cursor = unit.entries();
        while let Some(entry) = cursor.next_dfs().map_err(invalid)? {
            if entry.tag() != gimli::DW_TAG_subprogram
                || entry.attr(gimli::DW_AT_declaration).is_some()
            {
                continue;
            }
            let low_pc = match entry.attr_value(gimli::DW_AT_low_pc) {
                Some(v) => file.dwarf.attr_address(&unit, v).map_err(invalid)?,
                None => None,
            };
            if let Some(pc) = low_pc {
                let off = start.saturating_add(entry.offset().0);
                out.push((Die { file: f, off }, pc));
            }
        }
        let out = Arc::new(out);
        lock(&file.subprograms).insert(start, out.clone());
        Ok(out)
    }

    /// The subprogram entry of function `func`: the one at `addr` when given (its unit found
    /// by address), else the first definition named `func` (or with that linkage name).
    pub(super) fn find_function(
        &self,
        func: &str,
        addr: Option<u64>,
    ) -> Result<Option<Die>, DebugInfoError> {
        let units = match addr
            .map(|a| self.unit_for_address(a))
            .transpose()?
            .flatten()
        {
            Some(start) => self.content_units(start)?,
            None => self.all_units()?,
        };
        if let Some(addr) = addr {
            for &(f, start) in &units {
                if let Some(&(die, _)) = self.subprograms(f, start)?.iter().find(|s| s.1 == addr) {
                    return Ok(Some(die));
                }
            }
        }
        for (f, start) in units {
            for &(die, _) in self.subprograms(f, start)?.iter() {
                if self.is_named(die, func)? {
                    return Ok(Some(die));
                }
            }
        }
        Ok(None)
    }

    /// True when `die` is named `func` (or has it as its linkage name).
    fn is_named(&self, die: Die, func: &str) -> Result<bool, DebugInfoError> {
        if self.name(die)?.as_deref() == Some(func) {
            return Ok(true);
        }
        Ok(self.string(die, gimli::DW_AT_linkage_name)?.as_deref() == Some(func))
    }

    /// Every defined function whose name is in `wanted`, or whose address is a key of `at`
    /// (under the names given there), walking all units.
    pub(super) fn all_functions(
        &self,
        wanted: &HashSet<&str>,
        at: &HashMap<u64, Vec<&str>>,
    ) -> Result<Vec<(String, Die)>, DebugInfoError> {
        let mut out = Vec::new();
        for (f, start) in self.all_units()? {
            for &(die, pc) in self.subprograms(f, start)?.iter() {
                if let Some(names) = at.get(&pc) {
                    out.extend(names.iter().map(|n| (n.to_string(), die)));
                }
                for name_at in [gimli::DW_AT_name, gimli::DW_AT_linkage_name] {
                    if let Some(n) = self.string(die, name_at)?
                        && wanted.contains(n.as_str())
                    {
                        out.push((n, die));
                    }
                }
            }
        }
        Ok(out)
    }

    /// The formal parameter entries of function `die` (those of the abstract instance when
    /// the concrete one lists none).
    pub(super) fn param_dies(&self, die: Die) -> Result<Vec<Die>, DebugInfoError> {
        let own = self.children_tagged(die, gimli::DW_TAG_formal_parameter)?;
        if !own.is_empty() {
            return Ok(own);
        }
        let (unit, entry) = self.entry(die)?;
        let origin = entry
            .attr_value(gimli::DW_AT_abstract_origin)
            .or_else(|| entry.attr_value(gimli::DW_AT_specification))
            .and_then(|v| self.reference(die.file, &unit, v));
        match origin {
            Some(o) => self.children_tagged(o, gimli::DW_TAG_formal_parameter),
            None => Ok(own),
        }
    }

    /// The parameters of function `die`, typed and placed.
    pub(super) fn params(&self, die: Die) -> Result<Vec<FunctionParam>, DebugInfoError> {
        let returns = self.type_of(die)?;
        let mut regs = super::abi::Registers::new(self.returns_in_memory(returns)?);
        let mut out = Vec::new();
        for p in self.param_dies(die)? {
            let ty = self.type_of(p)?;
            let class = self.classify(ty)?;
            out.push(FunctionParam {
                name: self.name(p)?.unwrap_or_default(),
                c_type: self.type_name(ty, 0)?,
                ty: self.to_type(ty, 0, 0)?,
                location: regs.place(&class),
            });
        }
        Ok(out)
    }
}
