//! Function parameters from DWARF, for `args` of `uprobe:BIN:FUNC` and `sonde -lv`: what
//! bpftrace reads with libdw, read here with gimli.
//!
//! The debug info is found by [`debug_file::locate`] (the binary, or a separate debug file by
//! build id or `.gnu_debuglink`). A lookup parses as little as it can: the function's address
//! (from the ELF symbols) selects its compilation unit through `.debug_aranges` or the units'
//! address ranges, and only that unit's entries are walked; other units are loaded only when a
//! type refers into them. Only a binary without symbols for the function is searched unit by
//! unit. Every walk is bounded ([`types::MAX_DEPTH`]), so corrupt DWARF yields an error or a
//! `void`, never a hang.
//!
//! Each parameter gets the x86-64 System V location it arrives in ([`abi`]): the Nth integer
//! argument register is `argN`, as bpftrace maps them, but floating-point parameters, structs
//! passed in memory or in two registers, and a hidden pointer for a returned struct are
//! accounted for, so that the parameters after them are read from the right register.

mod abi;
mod types;

#[cfg(test)]
mod tests;

use super::debug_file::{self, Located, Mapped};
use gimli::{AttributeValue, EndianSlice, LittleEndian, UnitOffset};
use object::{Object, ObjectSymbol};
use sonde_lang::kernel::{DebugInfoError, FunctionParam, FunctionParams};
use sonde_lang::types::Record;
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;

/// gimli's reader over mapped (or inflated) section bytes.
type R<'d> = EndianSlice<'d, LittleEndian>;
/// An entry: its offset in `.debug_info`.
type Die = usize;
/// A parsed unit, shared by the entries read from it.
type UnitRc<'d> = Rc<gimli::Unit<R<'d>>>;
/// An attribute's value with the unit it is read in.
type Attr<'d> = (UnitRc<'d>, AttributeValue<R<'d>>);

/// The parameters of function `func` of the ELF file at `path`, from its DWARF, separate
/// debug files searched under [`debug_file::DEBUG_DIR`].
pub fn function_params(path: &str, func: &str) -> Result<FunctionParams, DebugInfoError> {
    function_params_in(path, func, Path::new(debug_file::DEBUG_DIR))
}

/// [`function_params`] with separate debug files searched under `debug_dir`.
pub fn function_params_in(
    path: &str,
    func: &str,
    debug_dir: &Path,
) -> Result<FunctionParams, DebugInfoError> {
    with_dwarf(path, debug_dir, |dw, symbols, debug_file| {
        let addr = symbols.get(func).copied();
        let Some(die) = dw.find_function(func, addr)? else {
            return Err(DebugInfoError::NoFunction(debug_file.to_string()));
        };
        Ok(FunctionParams {
            debug_file: debug_file.to_string(),
            params: dw.params(die)?,
        })
    })
}

/// The parameter declarations (`int argc`, `char** argv`) of each of `funcs` that the DWARF of
/// the ELF file at `path` describes, in one pass over its units (for `sonde -lv`).
pub fn function_signatures(
    path: &str,
    funcs: &[&str],
) -> Result<HashMap<String, Vec<String>>, DebugInfoError> {
    let debug_dir = Path::new(debug_file::DEBUG_DIR);
    with_dwarf(path, debug_dir, |dw, symbols, _| {
        let wanted: std::collections::HashSet<&str> = funcs.iter().copied().collect();
        // By address too: `malloc` is described as `__libc_malloc`, at the same address.
        let mut at: HashMap<u64, Vec<&str>> = HashMap::new();
        for f in funcs {
            if let Some(&a) = symbols.get(*f) {
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
        Ok(out)
    })
}

/// Maps the binary at `path` and its debug file and runs `f` on the DWARF, the binary's
/// function addresses by name, and the debug file's path.
fn with_dwarf<T>(
    path: &str,
    debug_dir: &Path,
    f: impl FnOnce(&Dwarf<'_>, &HashMap<String, u64>, &str) -> Result<T, DebugInfoError>,
) -> Result<T, DebugInfoError> {
    let binary = Mapped::open(Path::new(path)).map_err(DebugInfoError::Invalid)?;
    let file = object::File::parse(binary.bytes())
        .map_err(|e| DebugInfoError::Invalid(format!("{path} is not an ELF file: {e}")))?;
    let symbols = function_addresses(&file);
    let separate = match debug_file::locate(Path::new(path), &file, debug_dir) {
        Located::Here => None,
        Located::Separate(p) => Some(p),
        Located::Missing(searched) => {
            let text = if searched.is_empty() {
                format!("{path} has no .debug_info, build id or .gnu_debuglink")
            } else {
                format!(
                    "{path} has no .debug_info, and no debug file is at {}",
                    searched.join(", ")
                )
            };
            return Err(DebugInfoError::Missing(text));
        }
    };
    let debug_map = match &separate {
        Some(p) => Some(Mapped::open(p).map_err(DebugInfoError::Invalid)?),
        None => None,
    };
    let debug_path = separate
        .as_ref()
        .map_or_else(|| path.to_string(), |p| p.display().to_string());
    let debug_obj = match &debug_map {
        Some(m) => object::File::parse(m.bytes())
            .map_err(|e| DebugInfoError::Invalid(format!("{debug_path}: {e}")))?,
        None => file,
    };
    let sections = gimli::DwarfSections::load(|id| {
        debug_file::section_data(&debug_obj, id.name())
            .map_err(|e| DebugInfoError::Invalid(format!("{debug_path}: {e}")))
    })?;
    let dwarf = Dwarf::new(sections.borrow(|s| EndianSlice::new(s, LittleEndian)));
    f(&dwarf, &symbols, &debug_path)
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

/// A gimli error as a diagnostic's reason.
fn invalid(e: gimli::Error) -> DebugInfoError {
    DebugInfoError::Invalid(format!("corrupt DWARF: {e}"))
}

/// The DWARF of one file, its units loaded on demand.
struct Dwarf<'d> {
    dwarf: gimli::Dwarf<R<'d>>,
    /// `(start, end)` of every unit of `.debug_info`, read on first need.
    spans: RefCell<Option<Vec<(usize, usize)>>>,
    /// Units parsed so far, by start offset.
    units: RefCell<HashMap<usize, UnitRc<'d>>>,
    /// Records converted so far, by entry and pointer depth.
    records: RefCell<HashMap<(Die, u8), Arc<Record>>>,
    /// Records being converted: one met again inside itself (corrupt DWARF) is opaque.
    converting: RefCell<std::collections::HashSet<(Die, u8)>>,
}

impl<'d> Dwarf<'d> {
    fn new(dwarf: gimli::Dwarf<R<'d>>) -> Self {
        Dwarf {
            dwarf,
            spans: RefCell::new(None),
            units: RefCell::new(HashMap::new()),
            records: RefCell::new(HashMap::new()),
            converting: RefCell::new(std::collections::HashSet::new()),
        }
    }

    /// The start and end of every unit.
    fn spans(&self) -> Result<Vec<(usize, usize)>, DebugInfoError> {
        if let Some(s) = &*self.spans.borrow() {
            return Ok(s.clone());
        }
        let mut out = Vec::new();
        let mut headers = self.dwarf.units();
        while let Some(h) = headers.next().map_err(invalid)? {
            let start = h.offset().0;
            out.push((start, start.saturating_add(h.length_including_self())));
        }
        *self.spans.borrow_mut() = Some(out.clone());
        Ok(out)
    }

    /// The unit starting at `start`.
    fn unit_at(&self, start: usize) -> Result<UnitRc<'d>, DebugInfoError> {
        if let Some(u) = self.units.borrow().get(&start) {
            return Ok(u.clone());
        }
        let header = self
            .dwarf
            .unit_header(gimli::DebugInfoOffset(start))
            .map_err(invalid)?;
        let unit = Rc::new(self.dwarf.unit(header).map_err(invalid)?);
        self.units.borrow_mut().insert(start, unit.clone());
        Ok(unit)
    }

    /// The unit holding entry `die`, with `die`'s offset in it.
    fn unit_of(&self, die: Die) -> Result<(UnitRc<'d>, UnitOffset), DebugInfoError> {
        let spans = self.spans()?;
        let i = spans.partition_point(|&(start, _)| start <= die);
        let Some(&(start, end)) = i.checked_sub(1).and_then(|i| spans.get(i)) else {
            return Err(DebugInfoError::Invalid(format!(
                "corrupt DWARF: a reference to offset {die:#x} is outside every unit"
            )));
        };
        if die >= end {
            return Err(DebugInfoError::Invalid(format!(
                "corrupt DWARF: offset {die:#x} is between units"
            )));
        }
        Ok((self.unit_at(start)?, UnitOffset(die - start)))
    }

    /// Entry `die`.
    fn entry(
        &self,
        die: Die,
    ) -> Result<(UnitRc<'d>, gimli::DebuggingInformationEntry<R<'d>>), DebugInfoError> {
        let (unit, off) = self.unit_of(die)?;
        let entry = unit.entry(off).map_err(invalid)?;
        Ok((unit, entry))
    }

    /// The tag of entry `die`.
    fn tag(&self, die: Die) -> Result<gimli::DwTag, DebugInfoError> {
        Ok(self.entry(die)?.1.tag())
    }

    /// The entry an attribute refers to, as a `.debug_info` offset.
    fn reference(unit: &gimli::Unit<R<'d>>, value: AttributeValue<R<'d>>) -> Option<Die> {
        match value {
            AttributeValue::UnitRef(o) => Some(unit.header.offset().0.saturating_add(o.0)),
            AttributeValue::DebugInfoRef(o) => Some(o.0),
            _ => None,
        }
    }

    /// Attribute `at` of `die`, or of the entries it completes (`DW_AT_abstract_origin`,
    /// `DW_AT_specification`), with the unit it is read in.
    fn attr(&self, die: Die, at: gimli::DwAt) -> Result<Option<Attr<'d>>, DebugInfoError> {
        let mut die = die;
        for _ in 0..4 {
            let (unit, entry) = self.entry(die)?;
            if let Some(v) = entry.attr_value(at) {
                return Ok(Some((unit, v)));
            }
            let origin = entry
                .attr_value(gimli::DW_AT_abstract_origin)
                .or_else(|| entry.attr_value(gimli::DW_AT_specification));
            match origin.and_then(|v| Self::reference(&unit, v)) {
                Some(next) => die = next,
                None => return Ok(None),
            }
        }
        Ok(None)
    }

    /// A string attribute of `die` (or of the entries it completes).
    fn string(&self, die: Die, at: gimli::DwAt) -> Result<Option<String>, DebugInfoError> {
        let Some((unit, v)) = self.attr(die, at)? else {
            return Ok(None);
        };
        let s = self.dwarf.attr_string(&unit, v).map_err(invalid)?;
        Ok(Some(s.to_string_lossy().into_owned()))
    }

    /// The name of `die`.
    fn name(&self, die: Die) -> Result<Option<String>, DebugInfoError> {
        self.string(die, gimli::DW_AT_name)
    }

    /// An unsigned constant attribute of `die` itself.
    fn udata(&self, die: Die, at: gimli::DwAt) -> Result<Option<u64>, DebugInfoError> {
        let (_, entry) = self.entry(die)?;
        Ok(entry.attr(at).and_then(|a| a.udata_value()))
    }

    /// True when `die` itself has attribute `at`.
    fn has(&self, die: Die, at: gimli::DwAt) -> Result<bool, DebugInfoError> {
        Ok(self.entry(die)?.1.attr(at).is_some())
    }

    /// The entry `DW_AT_type` of `die` refers to (`None` is `void`).
    fn type_of(&self, die: Die) -> Result<Option<Die>, DebugInfoError> {
        Ok(self
            .attr(die, gimli::DW_AT_type)?
            .and_then(|(unit, v)| Self::reference(&unit, v)))
    }

    /// The direct children of `die`.
    fn children(&self, die: Die) -> Result<Vec<Die>, DebugInfoError> {
        let (unit, off) = self.unit_of(die)?;
        let start = unit.header.offset().0;
        let mut tree = unit.entries_tree(Some(off)).map_err(invalid)?;
        let root = tree.root().map_err(invalid)?;
        let mut children = root.children();
        let mut out = Vec::new();
        while let Some(child) = children.next().map_err(invalid)? {
            out.push(start.saturating_add(child.entry().offset().0));
        }
        Ok(out)
    }

    /// The children of `die` tagged `tag`.
    fn children_tagged(&self, die: Die, tag: gimli::DwTag) -> Result<Vec<Die>, DebugInfoError> {
        let mut out = Vec::new();
        for c in self.children(die)? {
            if self.tag(c)? == tag {
                out.push(c);
            }
        }
        Ok(out)
    }

    /// The start of the unit holding `addr`, by `.debug_aranges` or the units' ranges.
    fn unit_for_address(&self, addr: u64) -> Result<Option<usize>, DebugInfoError> {
        let mut headers = self.dwarf.debug_aranges.headers();
        while let Ok(Some(h)) = headers.next() {
            let mut entries = h.entries();
            while let Ok(Some(e)) = entries.next() {
                let r = e.range();
                if (r.begin..r.end).contains(&addr) {
                    return Ok(Some(h.debug_info_offset().0));
                }
            }
        }
        for (start, _) in self.spans()? {
            let unit = self.unit_at(start)?;
            let Ok(mut ranges) = self.dwarf.unit_ranges(&unit) else {
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

    /// The subprogram entry of function `func`: the one at `addr` when given (its unit found
    /// by address), else the first definition named `func` (or with that linkage name).
    fn find_function(&self, func: &str, addr: Option<u64>) -> Result<Option<Die>, DebugInfoError> {
        let units = match addr
            .map(|a| self.unit_for_address(a))
            .transpose()?
            .flatten()
        {
            Some(start) => vec![start],
            None => self.spans()?.into_iter().map(|(s, _)| s).collect(),
        };
        let mut by_name = None;
        for start in units {
            let unit = self.unit_at(start)?;
            let mut cursor = unit.entries();
            while let Some(entry) = cursor.next_dfs().map_err(invalid)? {
                if entry.tag() != gimli::DW_TAG_subprogram
                    || entry.attr(gimli::DW_AT_declaration).is_some()
                {
                    continue;
                }
                let die = start.saturating_add(entry.offset().0);
                let low_pc = match entry.attr_value(gimli::DW_AT_low_pc) {
                    Some(v) => self.dwarf.attr_address(&unit, v).map_err(invalid)?,
                    None => None,
                };
                if addr.is_some() && low_pc == addr {
                    return Ok(Some(die));
                }
                if by_name.is_none() && low_pc.is_some() && self.is_named(die, func)? {
                    by_name = Some(die);
                }
            }
        }
        Ok(by_name)
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
    fn all_functions(
        &self,
        wanted: &std::collections::HashSet<&str>,
        at: &HashMap<u64, Vec<&str>>,
    ) -> Result<Vec<(String, Die)>, DebugInfoError> {
        let mut out = Vec::new();
        for (start, _) in self.spans()? {
            let unit = self.unit_at(start)?;
            let mut cursor = unit.entries();
            while let Some(entry) = cursor.next_dfs().map_err(invalid)? {
                if entry.tag() != gimli::DW_TAG_subprogram
                    || entry.attr(gimli::DW_AT_declaration).is_some()
                    || entry.attr(gimli::DW_AT_low_pc).is_none()
                {
                    continue;
                }
                let die = start.saturating_add(entry.offset().0);
                let low_pc = match entry.attr_value(gimli::DW_AT_low_pc) {
                    Some(v) => self.dwarf.attr_address(&unit, v).map_err(invalid)?,
                    None => None,
                };
                if let Some(names) = low_pc.and_then(|a| at.get(&a)) {
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
    fn param_dies(&self, die: Die) -> Result<Vec<Die>, DebugInfoError> {
        let own = self.children_tagged(die, gimli::DW_TAG_formal_parameter)?;
        if !own.is_empty() {
            return Ok(own);
        }
        let (unit, entry) = self.entry(die)?;
        let origin = entry
            .attr_value(gimli::DW_AT_abstract_origin)
            .or_else(|| entry.attr_value(gimli::DW_AT_specification))
            .and_then(|v| Self::reference(&unit, v));
        match origin {
            Some(o) => self.children_tagged(o, gimli::DW_TAG_formal_parameter),
            None => Ok(own),
        }
    }

    /// The parameters of function `die`, typed and placed.
    fn params(&self, die: Die) -> Result<Vec<FunctionParam>, DebugInfoError> {
        let returns = self.type_of(die)?;
        let mut regs = abi::Registers::new(self.returns_in_memory(returns)?);
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
