//! Function symbols of ELF files, for uprobe listing and attachment.
//!
//! Symbols come from both `.symtab` (absent in stripped binaries) and `.dynsym`. Only defined
//! function symbols (`STT_FUNC` and `STT_GNU_IFUNC` with a section) are kept. Where a uprobe
//! on one of them goes (IFUNCs resolved, aliases merged) is [`crate::uprobe_functions`]'s
//! business.

use object::{Object, ObjectSegment, ObjectSymbol, SymbolKind};
use sonde_lang::kernel::ElfSymbol;
use std::collections::BTreeSet;

/// Most bytes of an ELF file read to find its symbols.
pub const MAX_ELF: u64 = 4 << 30;

/// Reads `path` into memory, with an error text naming the file: refused at once when it is
/// not a regular file (a FIFO would block), or is larger than [`MAX_ELF`].
pub(crate) fn read(path: &str) -> Result<Vec<u8>, String> {
    crate::user_files::read(
        std::path::Path::new(path),
        MAX_ELF,
        crate::user_files::Pipes::Refuse,
    )
    .map_err(|e| format!("cannot read {path}: {e}"))
}

/// Parses ELF bytes, with an error text naming the file.
pub(crate) fn parse<'d>(path: &str, data: &'d [u8]) -> Result<object::File<'d>, String> {
    object::File::parse(data).map_err(|e| format!("{path} is not a readable ELF file: {e}"))
}

/// The symbol value of `name` in the ELF file at `path`, of any kind (function or object),
/// for bpftrace's `uaddr()`. For a PIE or a library this is relative to its load address.
pub fn resolve_uaddr(path: &str, name: &str) -> Option<u64> {
    elf_symbol(path, name).map(|s| s.address)
}

/// Symbol `name` of the ELF file at `path`, of any kind (function or object; `.symtab`
/// first, then `.dynsym`), with its size and whether the file is position independent.
pub fn elf_symbol(path: &str, name: &str) -> Option<ElfSymbol> {
    let data = read(path).ok()?;
    let file = parse(path, &data).ok()?;
    let relocatable = file.kind() == object::ObjectKind::Dynamic;
    file.symbols()
        .chain(file.dynamic_symbols())
        .find(|s| !s.is_undefined() && s.name() == Ok(name))
        .map(|s| ElfSymbol {
            address: s.address(),
            size: s.size(),
            relocatable,
        })
}

/// The link-time virtual address a uprobe of the ELF file at `path` lands at: function
/// `symbol` (placed by [`crate::uprobe_functions`], IFUNCs at their implementation) plus
/// `offset`, or file offset `offset` without a symbol; the file offset is mapped to its
/// address through the `PT_LOAD` segment that holds it.
pub fn uprobe_address(path: &str, symbol: Option<&str>, offset: u64) -> Option<u64> {
    let at = match symbol {
        None => offset,
        Some(s) => crate::uprobe_functions::function_offset(path, s)
            .ok()?
            .checked_add(offset)?,
    };
    let data = read(path).ok()?;
    let file = parse(path, &data).ok()?;
    file.segments().find_map(|seg| {
        let (start, size) = seg.file_range();
        (start <= at && at < start + size).then(|| seg.address() + (at - start))
    })
}

/// A defined function symbol with its virtual address and size (from the symbol table).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionSymbol {
    /// The symbol name, as stored (not demangled).
    pub name: String,
    /// The symbol value: a virtual address in the file's own address space.
    pub address: u64,
    /// The symbol size in bytes (0 when the table does not say).
    pub size: u64,
    /// Whether the symbol is visible outside its file (`STB_GLOBAL` or `STB_WEAK`).
    pub global: bool,
}

/// Every defined, named function symbol of a parsed ELF file, `.symtab` first and then
/// `.dynsym`, in table order (a name present in both tables appears twice).
pub fn sized_function_symbols(file: &object::File<'_>) -> Vec<FunctionSymbol> {
    let mut out = Vec::new();
    for sym in file.symbols().chain(file.dynamic_symbols()) {
        if sym.kind() != SymbolKind::Text || sym.is_undefined() {
            continue;
        }
        match sym.name() {
            Ok(name) if !name.is_empty() => out.push(FunctionSymbol {
                name: name.to_string(),
                address: sym.address(),
                size: sym.size(),
                global: sym.is_global(),
            }),
            _ => {}
        }
    }
    out
}

/// The names of the functions defined in the ELF file at `path`, deduplicated and sorted.
pub fn elf_functions(path: &str) -> Result<Vec<String>, String> {
    let data = read(path)?;
    let file = parse(path, &data)?;
    let names: BTreeSet<String> = sized_function_symbols(&file)
        .into_iter()
        .map(|s| s.name)
        .collect();
    Ok(names.into_iter().collect())
}

/// The file offset of function `name` in the ELF file at `path`: the offset a uprobe is
/// attached at (of the implementation, for an IFUNC). See [`crate::uprobe_functions`].
pub fn elf_function_offset(path: &str, name: &str) -> Result<u64, String> {
    crate::uprobe_functions::function_offset(path, name)
}

/// Translates a virtual address into a file offset through the segment that contains it.
pub(crate) fn address_to_offset(file: &object::File<'_>, addr: u64) -> Option<u64> {
    file.segments().find_map(|seg| {
        let (file_off, file_size) = seg.file_range();
        let start = seg.address();
        (addr >= start && addr - start < file_size).then(|| addr - start + file_off)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A function this test binary defines under a stable, unmangled name.
    #[unsafe(no_mangle)]
    #[inline(never)]
    pub extern "C" fn sonde_elf_symbols_test_marker(x: u64) -> u64 {
        std::hint::black_box(x.wrapping_mul(3))
    }

    fn exe() -> String {
        std::env::current_exe()
            .unwrap()
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn own_binary_lists_the_marker_function() {
        assert_eq!(sonde_elf_symbols_test_marker(2), 6);
        let funcs = elf_functions(&exe()).unwrap();
        assert!(funcs.iter().any(|f| f == "sonde_elf_symbols_test_marker"));
        assert!(
            funcs.windows(2).all(|w| w[0] < w[1]),
            "sorted and deduplicated"
        );
    }

    #[test]
    fn marker_offset_points_at_its_code() {
        let path = exe();
        let off = elf_function_offset(&path, "sonde_elf_symbols_test_marker").unwrap();
        let data = std::fs::read(&path).unwrap();
        // The offset must land inside the file, on the function's first code bytes.
        let code = sonde_elf_symbols_test_marker as *const u8;
        // SAFETY: reading the first 4 bytes of a function's machine code in our own image.
        let first = unsafe { std::slice::from_raw_parts(code, 4) };
        assert_eq!(&data[off as usize..off as usize + 4], first);
    }

    #[test]
    fn function_code_is_the_symbols_bytes() {
        let path = exe();
        let bytes =
            crate::uprobe_functions::function_code(&path, "sonde_elf_symbols_test_marker").unwrap();
        let code = sonde_elf_symbols_test_marker as *const u8;
        // SAFETY: reading the machine code of a function in our own image, as long as its symbol says.
        let live = unsafe { std::slice::from_raw_parts(code, bytes.len()) };
        assert_eq!(bytes, live);
        assert_eq!(
            crate::uprobe_functions::function_code(&path, "no_such_function_here"),
            None
        );
    }

    #[test]
    fn errors_name_the_file_and_function() {
        let err = elf_functions("/nonexistent/bin").unwrap_err();
        assert!(err.starts_with("cannot read /nonexistent/bin"), "{err}");
        let err = elf_function_offset(&exe(), "no_such_function_xyz").unwrap_err();
        assert!(
            err.starts_with("function `no_such_function_xyz` not found in"),
            "{err}"
        );
        let err = elf_functions("/etc/passwd").unwrap_err();
        assert!(err.contains("is not a readable ELF file"), "{err}");
    }
}
