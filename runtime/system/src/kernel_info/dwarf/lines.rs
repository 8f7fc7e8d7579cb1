//! Source lines to addresses, for `uprobe:BIN@FILE:LINE[:COL]`, as bpftrace 0.26 maps them:
//! the compilation unit whose line table names a file ending with `FILE` (whole path
//! components; two different such files are ambiguous), then the lowest address of a row of
//! that file (not of the files it includes) at `LINE` (and `COL`, when given).

use super::reader::invalid;
use super::{Dwarf, R};
use gimli::IncompleteLineProgram;
use sonde_lang::kernel::DebugInfoError;
use std::path::{Path, PathBuf};

/// A unit's line program with the full path of each of its files.
struct Table {
    program: IncompleteLineProgram<R>,
    /// `(file index, path)`.
    files: Vec<(u64, PathBuf)>,
}

impl Dwarf {
    /// The line table of unit `start` of file 0, when it has one.
    fn table(&self, start: usize) -> Result<Option<Table>, DebugInfoError> {
        let main = self.file(0)?;
        let unit = self.unit_at(0, start)?;
        let Some(program) = unit.line_program.clone() else {
            return Ok(None);
        };
        let text = |v| -> Result<String, DebugInfoError> {
            let s = main.dwarf.attr_string(&unit, v).map_err(invalid)?;
            Ok(s.to_string_lossy().into_owned())
        };
        let comp_dir = unit
            .comp_dir
            .map(|d| PathBuf::from(d.to_string_lossy().into_owned()))
            .unwrap_or_default();
        let header = program.header();
        // DWARF 5 numbers files from 0, earlier versions from 1.
        let first = u64::from(header.version() < 5);
        let mut files = Vec::new();
        for (i, entry) in header.file_names().iter().enumerate() {
            let name = PathBuf::from(text(entry.path_name())?);
            let dir = match entry.directory(header) {
                Some(d) => comp_dir.join(text(d)?),
                None => comp_dir.clone(),
            };
            files.push((i as u64 + first, dir.join(name)));
        }
        Ok(Some(Table { program, files }))
    }

    /// The address of the first statement at `line` (and `column`, when not 0) of the
    /// source file whose path ends with `file`.
    pub(super) fn line_address(
        &self,
        file: &str,
        line: u64,
        column: u64,
    ) -> Result<u64, DebugInfoError> {
        let pattern = Path::new(file);
        // The matched unit's table, kept: it is read again for the rows.
        let mut matched: Option<(Table, PathBuf)> = None;
        for &(start, _) in self.spans(0)?.iter() {
            let Some(table) = self.table(start)? else {
                continue;
            };
            let mut first_here: Option<PathBuf> = None;
            for (_, p) in &table.files {
                if !p.ends_with(pattern) {
                    continue;
                }
                match matched.as_ref().map(|(_, m)| m).or(first_here.as_ref()) {
                    Some(m) if m != p => {
                        return Err(DebugInfoError::Invalid(format!(
                            "Ambiguous source path, matches multiple files: {}, {}",
                            m.display(),
                            p.display()
                        )));
                    }
                    Some(_) => {}
                    None => first_here = Some(p.clone()),
                }
            }
            if let (None, Some(p)) = (&matched, first_here) {
                matched = Some((table, p));
            }
        }
        let Some((table, source)) = matched else {
            return Err(DebugInfoError::Invalid(format!(
                "No compilation unit matches {file}"
            )));
        };
        let mut best: Option<u64> = None;
        let mut rows = table.program.rows();
        while let Some((_, row)) = rows.next_row().map_err(invalid)? {
            if row.end_sequence() || row.line().map(|l| l.get()) != Some(line) {
                continue;
            }
            let col = match row.column() {
                gimli::ColumnType::LeftEdge => 0,
                gimli::ColumnType::Column(c) => c.get(),
            };
            if column != 0 && col != column {
                continue;
            }
            let of_source = table
                .files
                .iter()
                .any(|(i, p)| *i == row.file_index() && p.ends_with(&source));
            if of_source {
                best = Some(best.map_or(row.address(), |b| b.min(row.address())));
            }
        }
        best.ok_or_else(|| {
            let col = if column > 0 {
                format!(":{column}")
            } else {
                String::new()
            };
            DebugInfoError::Invalid(format!("Unable to map '{file}:{line}{col}' to address"))
        })
    }
}
