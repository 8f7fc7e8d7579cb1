//! Tests of [`super`] against this machine's libc (loaded in the test process, so resolved in
//! process) and libm (not loaded, and no helper in a test binary: the resolver fallback).

use super::*;

fn libc_path() -> String {
    crate::kernel_info::binaries::resolve_binary("libc").expect("libc resolves")
}

/// The file offset, in this process's libc, of what `dlsym` gives for `name`.
fn dlsym_offset(name: &str) -> u64 {
    let c = CString::new(name).unwrap();
    // SAFETY: RTLD_DEFAULT and a valid C string; the result is only used as a number.
    let addr = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c.as_ptr()) } as u64;
    assert_ne!(addr, 0, "dlsym({name})");
    let id = file_id(&libc_path()).unwrap();
    let maps = own_mappings();
    let m = maps
        .iter()
        .find(|m| m.start <= addr && addr < m.end)
        .expect("mapped");
    assert!(same_file(m, id), "{name} is in libc");
    addr - m.start + m.offset
}

/// The file offset of symbol `name`'s own value in `path` (the resolver, for an IFUNC).
fn symbol_offset(path: &str, name: &str) -> u64 {
    let data = std::fs::read(path).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let sym = file
        .dynamic_symbols()
        .find(|s| s.name() == Ok(name) && !s.is_undefined())
        .unwrap();
    address_to_offset(&file, sym.address()).unwrap()
}

#[test]
fn libc_strlen_is_placed_at_its_implementation() {
    let path = libc_path();
    let f = FileFunctions::of(&path).unwrap();
    let site = f.site("strlen").expect("strlen");
    assert_eq!(site.unresolved_ifunc, None);
    let at = f.offset("strlen").unwrap();
    assert_ne!(at, symbol_offset(&path, "strlen"), "not the resolver");
    assert_eq!(at, dlsym_offset("strlen"));
    assert_eq!(function_offset(&path, "strlen"), Ok(at));
    assert_eq!(
        crate::elf_symbols::elf_function_offset(&path, "strlen"),
        Ok(at)
    );
}

#[test]
fn default_versions_win_over_compat_ones() {
    // memcpy@@GLIBC_2.14 (an IFUNC) and the compat memcpy@GLIBC_2.2.5 are two symbols:
    // programs call the default one, which is what dlsym returns.
    assert_eq!(
        function_offset(&libc_path(), "memcpy"),
        Ok(dlsym_offset("memcpy"))
    );
}

#[test]
fn aliases_are_one_place_named_by_the_public_name() {
    let f = FileFunctions::of(&libc_path()).unwrap();
    let site = f.site("__libc_malloc").expect("__libc_malloc");
    assert_eq!(site.names[0], "malloc", "{:?}", site.names);
    assert!(site.names.contains(&"__libc_malloc".to_string()));
    assert_eq!(f.offset("malloc"), f.offset("__libc_malloc"));
    let groups = f.groups();
    assert_eq!(
        groups
            .iter()
            .filter(|g| g.iter().any(|n| n == "malloc" || n == "__libc_malloc"))
            .count(),
        1
    );
    // Every place is distinct, and every name is in exactly one place.
    let mut offsets: Vec<u64> = f.sites().iter().filter_map(|s| s.offset).collect();
    let n = offsets.len();
    offsets.sort_unstable();
    offsets.dedup();
    assert_eq!(offsets.len(), n);
    let names: usize = groups.iter().map(Vec::len).sum();
    assert_eq!(
        names,
        crate::elf_symbols::elf_functions(&libc_path())
            .unwrap()
            .len()
    );
}

#[test]
fn the_code_of_an_ifunc_is_its_implementations() {
    let path = libc_path();
    let code = function_code(&path, "strlen").expect("strlen's code");
    assert!(!code.is_empty() && code.len() < 64 * 1024, "{}", code.len());
    let c = CString::new("strlen").unwrap();
    // SAFETY: as in dlsym_offset.
    let addr = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c.as_ptr()) } as *const u8;
    let n = code.len().min(32);
    // SAFETY: the first bytes of the mapped, executable code of strlen's implementation,
    // which `code` says is at least `n` bytes long.
    let live = unsafe { std::slice::from_raw_parts(addr, n) };
    assert_eq!(&code[..n], live);
}

#[test]
fn preference_orders_public_then_short_then_alphabetical() {
    let mut names = vec!["__libc_malloc", "mallocx", "_malloc", "malloc", "alloca"];
    names.sort_by_key(|n| preference(n));
    assert_eq!(
        names,
        ["alloca", "malloc", "mallocx", "_malloc", "__libc_malloc"]
    );
}

#[test]
fn unwind_table_lists_function_starts() {
    let data = std::fs::read(libc_path()).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let starts = unwind_starts(&file);
    assert!(starts.len() > 1000, "{}", starts.len());
    assert!(starts.windows(2).all(|w| w[0] <= w[1]));
}

#[test]
fn a_library_not_loaded_here_is_never_loaded_and_falls_back_to_the_resolver() {
    let Some(libm) = crate::kernel_info::binaries::resolve_binary("libm.so.6") else {
        return;
    };
    let id = file_id(&libm).unwrap();
    if own_mappings().iter().any(|m| same_file(m, id)) {
        return; // loaded by something else in this test process: nothing to check
    }
    let f = FileFunctions::of(&libm).unwrap();
    let fallback: Vec<&Site> = f
        .sites()
        .iter()
        .filter(|s| s.unresolved_ifunc.is_some())
        .collect();
    assert!(!fallback.is_empty(), "libm has IFUNCs");
    let name = &fallback[0].names[0];
    assert_eq!(f.offset(name), Ok(symbol_offset(&libm, name)));
    assert!(
        fallback[0]
            .unresolved_ifunc
            .as_deref()
            .unwrap()
            .contains("not loaded in sonde"),
        "{:?}",
        fallback[0].unresolved_ifunc
    );
    assert!(
        !own_mappings().iter().any(|m| same_file(m, id)),
        "libm was loaded into this process"
    );
}

#[test]
fn bad_files_are_errors_not_panics() {
    let e = FileFunctions::of("/nonexistent/lib.so").unwrap_err();
    assert!(e.starts_with("cannot read /nonexistent/lib.so"), "{e}");
    let e = function_groups("/etc/passwd").unwrap_err();
    assert!(e.contains("is not a readable ELF file"), "{e}");
    assert_eq!(function_code("/etc/passwd", "x"), None);
    let e = function_offset(&libc_path(), "no_such_function_xyz").unwrap_err();
    assert!(
        e.starts_with("function `no_such_function_xyz` not found in"),
        "{e}"
    );
}

#[test]
fn vex_and_evex_instructions_are_recognised() {
    // vpbroadcastb %esi,%zmm16 (EVEX), vpbroadcastb (%rsi),%ymm2 (VEX3), vzeroupper (VEX2).
    assert!(vector_encoded(&[0x62, 0xe2, 0x7d, 0x48, 0x7a, 0xc6]));
    assert!(vector_encoded(&[0xc4, 0xe2, 0x7d, 0x78, 0x16]));
    assert!(vector_encoded(&[0xc5, 0xf8, 0x77]));
    // mov %edi,%eax; endbr64; movd %esi,%xmm4 (SSE, legacy encoding); push %rbp; nothing.
    assert!(!vector_encoded(&[0x89, 0xf8]));
    assert!(!vector_encoded(&[0xf3, 0x0f, 0x1e, 0xfa]));
    assert!(!vector_encoded(&[0x66, 0x0f, 0x6e, 0xe6]));
    assert!(!vector_encoded(&[0x55]));
    assert!(!vector_encoded(&[]));
}

#[test]
fn probes_on_avx_instructions_are_refused() {
    let path = libc_path();
    let f = FileFunctions::of(&path).unwrap();
    // Every resolved function whose first instruction is VEX/EVEX is refused, the others not.
    let data = std::fs::read(&path).unwrap();
    for site in f.sites() {
        let Some(off) = site.offset else { continue };
        let code = &data[off as usize..(off as usize + 15).min(data.len())];
        assert_eq!(
            check_probe_instruction(&path, off).is_err(),
            vector_encoded(code),
            "{:?}",
            site.names
        );
    }
    assert_eq!(
        check_probe_instruction(&path, f.offset("malloc").unwrap()),
        Ok(())
    );
    // Not an ELF file, or past its end: left to the kernel.
    assert_eq!(check_probe_instruction("/etc/passwd", 0), Ok(()));
    assert_eq!(check_probe_instruction(&path, u64::MAX / 2), Ok(()));
    assert_eq!(check_probe_instruction("/nonexistent", 0), Ok(()));
}
