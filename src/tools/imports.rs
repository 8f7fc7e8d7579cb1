//! ltrace's default: the library calls a program makes itself (ltrace's `-e PATTERN`, whose
//! default is every function: the calls made through the main program's PLT). The functions
//! the program imports (its undefined dynamic function symbols) are found in the libraries it
//! needs (DT_NEEDED, looked up as the dynamic linker would), each becoming one `-x` filter
//! `LIBRARY:SYMBOL` of the library that defines it; the tool's script keeps the calls whose
//! return address is in the program's own code.

use object::read::elf::{Dyn, ElfFile64, FileHeader};
use object::{Object, ObjectSymbol, SymbolKind};

/// The largest program or library read (a bound on what a user's path can make sonde read).
const MAX_ELF: u64 = 1 << 30;

/// With `--expr` given (or neither `--expr` nor `--filter`, when a program is traced), each
/// `expr` value (ltrace's `-e`: a symbol pattern with `*` wildcards, `@MAIN` allowed after it)
/// becomes one `filter` value per function of the traced program's imports it matches, in
/// name order. Errors are usage messages.
pub fn expand_imports(
    doc: &super::ToolDoc,
    named: &mut Vec<(String, String)>,
) -> Result<(), String> {
    if !doc.flags.iter().any(|f| f.long == "expr") {
        return Ok(());
    }
    let has = |k: &str| named.iter().any(|(n, _)| n == k);
    if !has("expr") {
        if has("filter") {
            return Ok(());
        }
        named.push(("expr".into(), "*".into()));
    }
    let program = program_of(named)?;
    let (imports, avx): (Vec<_>, Vec<_>) =
        imports(&program)?.into_iter().partition(|(lib, sym)| {
            !sonde_system::uprobe_functions::function_code(lib, sym)
                .is_some_and(|c| sonde_system::uprobe_functions::vector_encoded(&c))
        });
    if !avx.is_empty() {
        let names: Vec<&str> = avx.iter().map(|(_, s)| s.as_str()).collect();
        eprintln!(
            "sonde tool ltrace: not traced: {} (the code of each starts with an AVX instruction, \
             which a uprobe cannot step over without corrupting it)",
            names.join(", ")
        );
    }
    // Imports one implementation serves (glibc's memcpy and memmove) are one probe: two
    // would both fire at each call. The first name stands for them.
    let mut places = std::collections::HashSet::new();
    let imports: Vec<_> = imports
        .into_iter()
        .filter(|(lib, sym)| {
            let at = sonde_system::uprobe_functions::function_offset(lib, sym).ok();
            at.is_none() || places.insert((lib.clone(), at))
        })
        .collect();
    let mut filters = Vec::new();
    for (_, e) in named.iter().filter(|(k, _)| k == "expr") {
        let pattern = e.strip_suffix("@MAIN").unwrap_or(e);
        if pattern.contains(['@', '+', '-', '/']) {
            return Err(format!(
                "`{e}` is not a symbol pattern (ltrace's rule chains and library rules are not supported; use -x SYMBOL@LIBRARY)"
            ));
        }
        let before = filters.len();
        for (lib, sym) in &imports {
            if sonde_lang::glob::wildcard_match(pattern, sym) {
                filters.push(format!("{lib}:{sym}"));
            }
        }
        if filters.len() == before {
            return Err(format!("no function {program} imports matches `{pattern}`"));
        }
    }
    filters.sort();
    filters.dedup();
    named.extend(filters.into_iter().map(|f| ("filter".to_string(), f)));
    Ok(())
}

/// The traced program's file: the `-p` process's executable, or the command's first word
/// looked up in `PATH`.
fn program_of(named: &[(String, String)]) -> Result<String, String> {
    let value = |k: &str| named.iter().rev().find(|(n, _)| n == k).map(|(_, v)| v);
    if let Some(pid) = value("pid") {
        let exe = format!("/proc/{pid}/exe");
        return std::fs::read_link(&exe)
            .map(|p| exe_path(&p))
            .map_err(|e| format!("cannot read {exe}: {e}"));
    }
    let Some(command) = value("command").or(value("cmd")) else {
        return Err("give -p PID or a COMMAND".into());
    };
    let first = command.split_whitespace().next().unwrap_or("");
    if first.contains('/') {
        return Ok(first.to_string());
    }
    std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .map(|d| std::path::Path::new(d).join(first))
        .find(|p| p.is_file())
        .and_then(|p| p.to_str().map(str::to_string))
        .ok_or_else(|| format!("`{first}` is not a program in PATH"))
}

/// A `/proc/PID/exe` link's target as a path (without the kernel's ` (deleted)` suffix).
fn exe_path(p: &std::path::Path) -> String {
    let s = p.to_string_lossy();
    s.strip_suffix(" (deleted)").unwrap_or(&s).to_string()
}

/// `(library path, symbol)` of each function `program` imports that one of its needed
/// libraries defines, in name order; functions no needed library defines are left out.
pub fn imports(program: &str) -> Result<Vec<(String, String)>, String> {
    let data = read_elf(program)?;
    let file = object::File::parse(&*data).map_err(|e| format!("{program}: {e}"))?;
    let mut wanted: Vec<String> = file
        .dynamic_symbols()
        .filter(|s| s.is_undefined() && matches!(s.kind(), SymbolKind::Text | SymbolKind::Unknown))
        .filter_map(|s| s.name().ok().map(str::to_string))
        .filter(|n| !n.is_empty())
        .collect();
    wanted.sort();
    wanted.dedup();
    let mut found = Vec::new();
    for lib in needed(&data).map_err(|e| format!("{program}: {e}"))? {
        let Some(path) = sonde_system::kernel_info::binaries::resolve_binary(&lib) else {
            continue;
        };
        let lib_data = read_elf(&path)?;
        let Ok(lib_file) = object::File::parse(&*lib_data) else {
            continue;
        };
        let defined: std::collections::HashSet<&str> = lib_file
            .dynamic_symbols()
            .filter(|s| !s.is_undefined() && s.kind() == SymbolKind::Text && s.is_global())
            .filter_map(|s| s.name().ok())
            .collect();
        wanted.retain(|w| match defined.contains(w.as_str()) {
            true => {
                found.push((path.clone(), w.clone()));
                false
            }
            false => true,
        });
    }
    found.sort_by(|a, b| a.1.cmp(&b.1));
    Ok(found)
}

/// The DT_NEEDED names of an ELF file's dynamic section, in order.
fn needed(data: &[u8]) -> Result<Vec<String>, object::read::Error> {
    let elf = ElfFile64::<object::Endianness>::parse(data)?;
    let endian = elf.endian();
    let sections = elf.elf_header().sections(endian, data)?;
    let Some((dyns, link)) = sections.dynamic(endian, data)? else {
        return Ok(Vec::new());
    };
    let strings = sections.strings(endian, data, link)?;
    let mut names = Vec::new();
    for d in dyns {
        if d.tag32(endian) == Some(object::elf::DT_NEEDED as i32) {
            names.push(String::from_utf8_lossy(d.string(endian, strings)?).into_owned());
        }
    }
    Ok(names)
}

/// A regular ELF file's bytes, read with a bound.
fn read_elf(path: &str) -> Result<Vec<u8>, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{path}: {e}"))?;
    if !meta.is_file() || meta.len() > MAX_ELF {
        return Err(format!(
            "{path} is not a program (a regular file of at most 1 GiB)"
        ));
    }
    std::fs::read(path).map_err(|e| format!("{path}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ls_imports_libc_functions() {
        let found = imports("/bin/ls").expect("/bin/ls's imports");
        let libc = found.iter().find(|(_, s)| s == "getenv").expect("getenv");
        assert!(libc.0.contains("libc.so"), "{libc:?}");
        // Data symbols (stdout, optarg) are not functions.
        assert!(!found.iter().any(|(_, s)| s == "stdout" || s == "optarg"));
    }
}
