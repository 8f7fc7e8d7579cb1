//! Split DWARF (`gcc -gsplit-dwarf`): the binary keeps a skeleton unit per compilation unit
//! (its addresses, line table and `DW_AT_dwo_name`), and the entries are in a `.dwo` file per
//! unit, or in one `.dwp` package (`dwp -e BINARY`) next to the binary.
//!
//! As libdw does, the package `BINARY.dwp` is tried first (its unit found by the skeleton's
//! DWO id), then the `.dwo` file: the name itself when absolute, else next to the binary,
//! then under `DW_AT_comp_dir`. A `.dwo` file is taken only when its unit has the skeleton's
//! DWO id. A split unit read here is file N of the [`Dwarf`], its addresses relocated by its
//! skeleton's (`DW_AT_addr_base`, `DW_AT_low_pc`).

use super::load::parse;
use super::reader::{File, UnitRc, invalid};
use super::{Dwarf, R};
use gimli::{EndianSlice, LittleEndian};
use sonde_lang::kernel::DebugInfoError;
use std::path::{Path, PathBuf};
use std::sync::Arc;

impl Dwarf {
    /// For a skeleton unit of file 0 starting at `start`, the file holding its split unit
    /// (`Some(None)` when it cannot be found); `None` for an ordinary unit.
    pub(super) fn split_file(&self, start: usize) -> Result<Option<Option<usize>>, DebugInfoError> {
        if let Some(known) = self.split.borrow().get(&start) {
            return Ok(Some(*known));
        }
        let skeleton = self.unit_at(0, start)?;
        let Some(id) = skeleton.dwo_id else {
            return Ok(None);
        };
        let found = match self.unit_in_package(&skeleton, id)? {
            Some(f) => Some(f),
            None => self.unit_in_dwo(&skeleton, id)?,
        };
        self.split.borrow_mut().insert(start, found);
        Ok(Some(found))
    }

    /// The split unit of `skeleton` in the `.dwp` package next to the binary, as a new
    /// file.
    fn unit_in_package(
        &self,
        skeleton: &UnitRc,
        id: gimli::DwoId,
    ) -> Result<Option<usize>, DebugInfoError> {
        let Some(dwp) = self.package()? else {
            return Ok(None);
        };
        let main = self.file(0)?;
        let Some(dwarf) = dwp.find_cu(id, &main.dwarf).map_err(invalid)? else {
            return Ok(None);
        };
        Ok(Some(self.push_file(File::new(
            dwarf,
            Some(skeleton.clone()),
            main_sup(self)?,
        ))))
    }

    /// The `.dwp` package `BINARY.dwp`, opened once.
    fn package(&self) -> Result<Option<Arc<gimli::DwarfPackage<R>>>, DebugInfoError> {
        if let Some(known) = &*self.dwp.borrow() {
            return Ok(known.clone());
        }
        let mut name = self.binary.clone().into_os_string();
        name.push(".dwp");
        let path = PathBuf::from(name);
        let package = if path.is_file() {
            let mut storage = self.storage.borrow_mut();
            let obj = parse(&mut storage, &path)?;
            let sections = gimli::DwarfPackageSections::load(|id| {
                storage.section(&obj, &path, id, true).map_err(Failed)
            })
            .map_err(|Failed(e)| e)?;
            let empty = EndianSlice::new(&[][..], LittleEndian);
            let dwp = sections.borrow(|s: &R| *s, empty).map_err(|e| {
                DebugInfoError::Invalid(format!("{}: corrupt DWARF package: {e}", path.display()))
            })?;
            Some(Arc::new(dwp))
        } else {
            None
        };
        *self.dwp.borrow_mut() = Some(package.clone());
        Ok(package)
    }

    /// The split unit of `skeleton` in its `.dwo` file, as a new file; a missing file is
    /// noted for the diagnostic.
    fn unit_in_dwo(
        &self,
        skeleton: &UnitRc,
        id: gimli::DwoId,
    ) -> Result<Option<usize>, DebugInfoError> {
        let main = self.file(0)?;
        let string = |v| -> Option<String> {
            let s = main.dwarf.attr_string(skeleton, v).ok()?;
            Some(s.to_string_lossy().into_owned())
        };
        let Some(name) = skeleton.dwo_name().map_err(invalid)?.and_then(string) else {
            return Ok(None);
        };
        let comp_dir = skeleton
            .comp_dir
            .map(|d| PathBuf::from(d.to_string_lossy().into_owned()));
        let binary_dir = self.binary.parent().unwrap_or(Path::new("/"));
        let candidates = dwo_candidates(&name, binary_dir, comp_dir.as_deref());
        for c in &candidates {
            if !c.is_file() {
                continue;
            }
            let mut dwarf = {
                let mut storage = self.storage.borrow_mut();
                let obj = parse(&mut storage, c)?;
                storage.sections(&obj, c, true)?
            };
            dwarf.make_dwo(&main.dwarf);
            let matches = match dwarf.units().next() {
                Ok(Some(h)) => dwarf.unit(h).is_ok_and(|u| u.dwo_id == Some(id)),
                _ => false,
            };
            if matches {
                return Ok(Some(self.push_file(File::new(
                    dwarf,
                    Some(skeleton.clone()),
                    main_sup(self)?,
                ))));
            }
        }
        let mut dwp = self.binary.clone().into_os_string();
        dwp.push(".dwp");
        let searched: Vec<String> = candidates.iter().map(|c| c.display().to_string()).collect();
        let why = format!(
            "the split DWARF of {} is missing: no {} (searched {}) nor {}",
            self.binary.display(),
            Path::new(&name)
                .file_name()
                .map_or(name.clone(), |n| n.to_string_lossy().into_owned()),
            searched.join(", "),
            PathBuf::from(dwp).display()
        );
        let mut missing = self.missing.borrow_mut();
        if !missing.contains(&why) {
            missing.push(why);
        }
        Ok(None)
    }
}

/// A section that could not be read, or a gimli error, while loading a package.
struct Failed(DebugInfoError);

impl From<gimli::Error> for Failed {
    fn from(e: gimli::Error) -> Failed {
        Failed(invalid(e))
    }
}

/// The supplementary file of file 0, which split units share.
fn main_sup(dw: &Dwarf) -> Result<Option<usize>, DebugInfoError> {
    Ok(dw.file(0)?.sup)
}

/// Where `.dwo` file `name` may be, in libdw's order: itself when absolute, else next to
/// the binary, then under the unit's compilation directory.
pub(super) fn dwo_candidates(
    name: &str,
    binary_dir: &Path,
    comp_dir: Option<&Path>,
) -> Vec<PathBuf> {
    let name = Path::new(name);
    if name.is_absolute() {
        // Also next to the binary, for a tree that was moved after the build.
        let mut out = vec![name.to_path_buf()];
        if let Some(base) = name.file_name()
            && binary_dir.join(base) != name
        {
            out.push(binary_dir.join(base));
        }
        return out;
    }
    let mut out = vec![binary_dir.join(name)];
    if let Some(dir) = comp_dir {
        out.push(dir.join(name));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dwo_files_are_searched_next_to_the_binary_then_in_the_comp_dir() {
        let bin = Path::new("/opt/app");
        assert_eq!(
            dwo_candidates("t-a.dwo", bin, Some(Path::new("/build"))),
            [
                PathBuf::from("/opt/app/t-a.dwo"),
                PathBuf::from("/build/t-a.dwo")
            ]
        );
        assert_eq!(
            dwo_candidates("/build/obj/t-a.dwo", bin, Some(Path::new("/build"))),
            [
                PathBuf::from("/build/obj/t-a.dwo"),
                PathBuf::from("/opt/app/t-a.dwo")
            ]
        );
        assert_eq!(
            dwo_candidates("obj/t-a.dwo", bin, None),
            [PathBuf::from("/opt/app/obj/t-a.dwo")]
        );
    }
}
