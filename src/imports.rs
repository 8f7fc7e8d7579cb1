//! `import "path";` (bpftrace 0.26): bpftrace scripts (`.bt`: their probes, macros and map
//! declarations join the importing script), C headers (`.h`: their definitions), and
//! directories (every `.bt` and `.h` file in them, not recursively). Paths are relative to
//! the importing script's directory (the current directory for `-e` and stdin); each file
//! is imported once; world-writable directories are refused, as bpftrace refuses them.
//!
//! The imported texts are appended to the script's, so that the rest of the pipeline sees
//! one source; [`Segments`] remembers which part came from which file, and [`locate`] gives
//! a diagnostic back its own file and offsets. BPF C (`.bpf.c`) needs a C compiler, which
//! sonde does not have: importing one is a diagnostic.

use crate::diagnostics;
use crate::segments::{self, Segment};
use sonde_lang::ast::Program;
use sonde_lang::diag::Diagnostic;
use sonde_lang::span::Span;
use sonde_system::user_files::{self, Pipes};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Code of an import that cannot be read or is not allowed.
pub const IMPORT: &str = "sonde::parse::import";

/// The script's text with every file it imports (transitively) appended, or the
/// diagnostics (already rendered for an imported file's own errors) of what could not be
/// imported. `None` when the script imports nothing.
pub fn combine(
    name: &str,
    src: &str,
    program: &Program,
) -> Result<Option<String>, Vec<Diagnostic>> {
    if program.imports.is_empty() {
        return Ok(None);
    }
    let base = match name {
        "-e" | "stdin" => PathBuf::from("."),
        file => Path::new(file)
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
    };
    let mut text = src.to_string();
    let mut seen = Vec::new();
    let mut segments = Vec::new();
    let mut errors = Vec::new();
    let mut pending: Vec<(PathBuf, String, Span, bool)> = program
        .imports
        .iter()
        .map(|(p, span)| (base.clone(), p.clone(), *span, true))
        .collect();
    while !pending.is_empty() {
        let (dir, path, span, from_script) = pending.remove(0);
        // Errors about imports of imported files point at the script's first import.
        let at = if from_script {
            span
        } else {
            program.imports[0].1
        };
        let files = match files_of(&dir.join(&path), &path, at) {
            Ok(f) => f,
            Err(d) => {
                errors.push(*d);
                continue;
            }
        };
        for file in files {
            let canonical = file.canonicalize().unwrap_or_else(|_| file.clone());
            if seen.contains(&canonical) {
                continue;
            }
            seen.push(canonical);
            let shown = file.display().to_string();
            let body = match user_files::read(&file, user_files::MAX_SCRIPT, Pipes::Refuse)
                .map(sonde_lang::syntax::encoding::decode)
            {
                Ok(Ok(text)) => text,
                Ok(Err((text, d))) => {
                    diagnostics::render(&[d], &shown, &text);
                    errors.push(import_error(
                        at,
                        format!("{shown} is not UTF-8 text (above)"),
                    ));
                    continue;
                }
                Err(e) => {
                    errors.push(import_error(at, format!("cannot read {shown}: {e}")));
                    continue;
                }
            };
            let imported = match sonde_lang::syntax::parse(&body) {
                Ok(p) => p,
                Err(diags) => {
                    diagnostics::render(&diags, &shown, &body);
                    errors.push(import_error(at, format!("{shown} has errors (above)")));
                    continue;
                }
            };
            if let Some(c) = imported.config.first() {
                let d = Diagnostic::error(
                    IMPORT,
                    c.name.span,
                    "an imported script cannot have a `config` block",
                )
                .with_label("config here")
                .with_help("only the script that imports may configure the run; move this to it");
                diagnostics::render(&[d], &shown, &body);
                errors.push(import_error(at, format!("{shown} has a config block")));
                continue;
            }
            let file_dir = file
                .parent()
                .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
            pending.extend(
                imported
                    .imports
                    .iter()
                    .map(|(p, s)| (file_dir.clone(), p.clone(), *s, false)),
            );
            text.push('\n');
            segments.push(Segment {
                name: shown,
                start: text.len(),
                text: body.clone(),
            });
            text.push_str(&body);
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    segments::register(segments);
    Ok(Some(text))
}

/// The files an import names: the file itself, or a directory's `.bt` and `.h` files.
fn files_of(path: &Path, written: &str, at: Span) -> Result<Vec<PathBuf>, Box<Diagnostic>> {
    let meta = std::fs::metadata(path)
        .map_err(|e| Box::new(import_error(at, format!("cannot import `{written}`: {e}"))))?;
    let dir = if meta.is_dir() {
        path.to_path_buf()
    } else {
        path.parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
    };
    let dir_mode = std::fs::metadata(&dir)
        .map(|m| m.permissions().mode())
        .unwrap_or(0);
    if dir_mode & 0o002 != 0 {
        return Err(Box::new(
            import_error(
                at,
                format!(
                    "refusing to import from {}: anyone can write there",
                    dir.display()
                ),
            )
            .with_help(
                "move the file to a directory only its owner can write to, as bpftrace requires",
            ),
        ));
    }
    if !meta.is_dir() {
        return kind_ok(path, written, at).map(|()| vec![path.to_path_buf()]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| {
            Box::new(import_error(
                at,
                format!("cannot read directory `{written}`: {e}"),
            ))
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && supported(p) != Kind::Other)
        .collect();
    files.sort();
    for f in &files {
        kind_ok(f, &f.display().to_string(), at)?;
    }
    Ok(files)
}

#[derive(PartialEq)]
enum Kind {
    Script,
    Header,
    BpfC,
    Other,
}

fn supported(p: &Path) -> Kind {
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if name.ends_with(".bpf.c") {
        Kind::BpfC
    } else if name.ends_with(".bt") {
        Kind::Script
    } else if name.ends_with(".h") {
        Kind::Header
    } else {
        Kind::Other
    }
}

fn kind_ok(p: &Path, written: &str, at: Span) -> Result<(), Box<Diagnostic>> {
    match supported(p) {
        Kind::Script | Kind::Header => Ok(()),
        Kind::BpfC => Err(Box::new(
            import_error(
                at,
                format!(
                    "cannot import `{written}`: BPF C needs a C compiler, which sonde does not have"
                ),
            )
            .with_help("write the function as a `macro` in a `.bt` file and import that"),
        )),
        Kind::Other => Err(Box::new(
            import_error(at, format!("cannot import `{written}`")).with_help(
                "imports are bpftrace scripts (`.bt`), C headers (`.h`) or directories of them",
            ),
        )),
    }
}

fn import_error(at: Span, message: String) -> Diagnostic {
    Diagnostic::error(IMPORT, at, message).with_label("imported here")
}
