//! The DWARF reader on `tests/targets/dwarf_target.c`, built here with gcc: parameter types
//! and registers, separate debug files (debuglink, build id), and missing or corrupt DWARF.

use super::*;
use crate::kernel_info::debug_search::DebugPath;
use object::{Object, ObjectSection};
use sonde_lang::kernel::FunctionParam;
use sonde_lang::kernel::ParamLocation;
use sonde_lang::types::{AddrSpace, Type};
use std::path::PathBuf;
use std::process::Command;

/// A scratch directory removed at drop.
pub(super) struct Scratch(pub(super) PathBuf);

impl Scratch {
    pub(super) fn new(tag: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("sonde-dwarf-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
    pub(super) fn join(&self, name: &str) -> String {
        self.0.join(name).display().to_string()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub(super) fn run(cmd: &str, args: &[&str]) {
    let out = Command::new(cmd).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{cmd} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Builds the target with `flags` into `dir/name`.
fn build(dir: &Scratch, name: &str, flags: &[&str]) -> String {
    let src = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/targets/dwarf_target.c"
    );
    let bin = dir.join(name);
    let mut args = flags.to_vec();
    args.extend(["-o", &bin, src]);
    run("gcc", &args);
    bin
}

fn params(path: &str, func: &str) -> Vec<FunctionParam> {
    function_params(path, func).unwrap().params
}

/// [`function_params`] with separate debug files searched under `global` instead of
/// `/usr/lib/debug`.
fn params_under(
    path: &str,
    func: &str,
    global: &std::path::Path,
) -> Result<FunctionParams, DebugInfoError> {
    let search = super::super::debug_search::DebugPath::rooted(global);
    Loaded::open(path, &search)?.function_params(func)
}

fn summary(ps: &[FunctionParam]) -> Vec<(String, String, ParamLocation)> {
    ps.iter()
        .map(|p| (p.name.clone(), p.c_type.clone(), p.location.clone()))
        .collect()
}

fn reg(name: &str, c_type: &str, n: u8) -> (String, String, ParamLocation) {
    (name.into(), c_type.into(), ParamLocation::Register(n))
}

#[test]
fn parameters_are_typed_and_placed_in_registers() {
    let dir = Scratch::new("types");
    for flags in [
        &["-O0", "-g"][..],
        &["-O2", "-gdwarf-4"],
        &["-O1", "-g", "-gz"],
    ] {
        let bin = build(&dir, "t", flags);
        let ps = params(&bin, "func");
        assert_eq!(
            summary(&ps),
            [
                reg("n", "int", 0),
                reg("name", "const char*", 1),
                reg("s", "struct settings*", 2),
                reg("c", "counter_t", 3),
                reg("col", "enum color", 4),
                reg("ch", "unsigned char", 5),
            ],
            "{flags:?}"
        );
        assert_eq!(ps[0].ty, Type::I32);
        assert_eq!(ps[3].ty, Type::U64);
        assert_eq!(ps[4].ty, Type::U32);
        assert_eq!(ps[5].ty, Type::U8);
        let Type::Ptr { pointee, space } = &ps[1].ty else {
            panic!("{:?}", ps[1].ty)
        };
        assert_eq!(
            **pointee,
            Type::Int {
                bits: 8,
                signed: true
            }
        );
        assert_eq!(*space, AddrSpace::User);
        let Type::Ptr { pointee, .. } = &ps[2].ty else {
            panic!()
        };
        let Type::Record(s) = &**pointee else {
            panic!()
        };
        assert_eq!(s.name, "struct settings");
        let f = |n: &str| s.field(n).unwrap_or_else(|| panic!("no field {n}: {s:?}"));
        assert_eq!((f("field").offset, &f("field").ty), (0, &Type::I32));
        assert_eq!(
            (f("label").offset, &f("label").ty),
            (4, &Type::Str { size: 8 })
        );
        assert_eq!(f("flag").offset, 12);
        assert_eq!(f("flag").bitfield, Some((0, 3)));
        assert_eq!(f("mode").bitfield, Some((3, 5)));
        // Anonymous union members are flattened.
        assert_eq!((f("as_long").offset, &f("as_long").ty), (16, &Type::I64));
        assert_eq!(f("as_bytes").offset, 16);
        assert_eq!(
            f("pair").ty,
            Type::Array {
                elem: Box::new(Type::Int {
                    bits: 16,
                    signed: true
                }),
                len: 2
            }
        );
        // Records behind pointers are expanded a few levels deep: chain->next->depth.
        let Type::Ptr { pointee, .. } = &f("chain").ty else {
            panic!()
        };
        let Type::Record(inner) = &**pointee else {
            panic!()
        };
        assert_eq!(inner.name, "struct inner");
        let Type::Ptr { pointee, .. } = &inner.field("next").unwrap().ty else {
            panic!()
        };
        let Type::Record(next) = &**pointee else {
            panic!()
        };
        assert_eq!(next.field("depth").unwrap().ty, Type::I32);
    }
}

#[test]
fn floats_stack_and_hidden_pointers_shift_the_registers() {
    let dir = Scratch::new("abi");
    let bin = build(&dir, "t", &["-O0", "-g"]);
    let ps = params(&bin, "mixed");
    let names: Vec<&str> = ps.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["d", "after", "sm", "bg", "last"]);
    assert!(matches!(&ps[0].location, ParamLocation::Elsewhere(w) if w.contains("SSE")));
    assert_eq!(ps[1].location, ParamLocation::Register(0));
    assert_eq!(ps[2].location, ParamLocation::Register(1));
    assert!(matches!(&ps[3].location, ParamLocation::Elsewhere(w) if w.contains("stack")));
    assert_eq!(ps[4].location, ParamLocation::Register(2));
    assert_eq!(ps[2].c_type, "struct small");
    // A returned 24-byte struct takes rdi: the first parameter is in rsi.
    assert_eq!(summary(&params(&bin, "make_big")), [reg("seed", "int", 1)]);
    let many = params(&bin, "many");
    assert_eq!(many[5].location, ParamLocation::Register(5));
    assert!(matches!(&many[6].location, ParamLocation::Elsewhere(w) if w.contains("stack")));
    assert!(params(&bin, "noargs").is_empty());
    let sigs = function_signatures(&bin, &["main", "func", "noargs", "nosuch"]).unwrap();
    assert_eq!(sigs["func"][1], "const char* name");
    assert_eq!(sigs["func"][2], "struct settings* s");
    assert!(sigs["noargs"].is_empty());
    assert!(!sigs.contains_key("nosuch"));
}

#[test]
fn separate_debug_files_by_debuglink_and_build_id() {
    let dir = Scratch::new("separate");
    let bin = build(&dir, "t", &["-O0", "-g", "-Wl,--build-id"]);
    let debug = dir.join("t.debug");
    run("objcopy", &["--only-keep-debug", &bin, &debug]);
    let stripped = dir.join("t-stripped");
    run(
        "objcopy",
        &[
            "--strip-debug",
            &format!("--add-gnu-debuglink={debug}"),
            &bin,
            &stripped,
        ],
    );
    let found = function_params(&stripped, "func").unwrap();
    assert_eq!(found.debug_file, debug);
    assert_eq!(found.params.len(), 6);
    // In the .debug subdirectory.
    std::fs::create_dir_all(dir.join(".debug")).unwrap();
    std::fs::rename(&debug, dir.join(".debug/t.debug")).unwrap();
    assert_eq!(
        function_params(&stripped, "func").unwrap().debug_file,
        dir.join(".debug/t.debug")
    );
    // By build id under a debug directory; the debuglink file is gone.
    let file_bytes = std::fs::read(&bin).unwrap();
    let elf = object::File::parse(&*file_bytes).unwrap();
    let id = elf.build_id().unwrap().unwrap().to_vec();
    let global = dir.0.join("global");
    let by_id = super::super::debug_search::build_id_path(&global, &id).unwrap();
    std::fs::create_dir_all(by_id.parent().unwrap()).unwrap();
    std::fs::rename(dir.join(".debug/t.debug"), &by_id).unwrap();
    let found = params_under(&stripped, "func", &global).unwrap();
    assert_eq!(found.debug_file, by_id.display().to_string());
    // Nowhere: the diagnostic says where sonde looked.
    std::fs::remove_file(&by_id).unwrap();
    let Err(DebugInfoError::Missing(text)) = params_under(&stripped, "func", &global) else {
        panic!()
    };
    assert!(text.contains(&by_id.display().to_string()), "{text}");
    assert!(text.contains("t.debug"), "{text}");
}

#[test]
fn missing_function_missing_file_and_no_debug_info() {
    let dir = Scratch::new("missing");
    let bin = build(&dir, "t", &["-O0", "-g"]);
    assert_eq!(
        function_params(&bin, "nosuch"),
        Err(DebugInfoError::NoFunction(bin.clone()))
    );
    assert!(matches!(
        function_params("/no/such/binary", "f"),
        Err(DebugInfoError::Invalid(t)) if t.contains("/no/such/binary")
    ));
    let plain = build(&dir, "plain", &["-O0", "-Wl,--build-id=none"]);
    assert!(matches!(
        function_params(&plain, "func"),
        Err(DebugInfoError::Missing(t)) if t.contains("no .debug_info")
    ));
    let text = dir.join("text");
    std::fs::write(&text, "not an ELF").unwrap();
    assert!(matches!(
        function_params(&text, "f"),
        Err(DebugInfoError::Invalid(_))
    ));
}

#[test]
fn corrupt_dwarf_is_an_error_not_a_panic() {
    let dir = Scratch::new("corrupt");
    let bin = build(&dir, "t", &["-O0", "-g"]);
    let mut bytes = std::fs::read(&bin).unwrap();
    let (start, size) = {
        let elf = object::File::parse(&*bytes).unwrap();
        let s = ObjectSection::file_range(&elf.section_by_name(".debug_info").unwrap()).unwrap();
        (s.0 as usize, s.1 as usize)
    };
    // Garbage after the first unit header: abbreviation codes and references are wrong.
    for (i, b) in bytes[start + 12..start + size].iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(37) ^ 0x5a;
    }
    let bad = dir.join("bad");
    std::fs::write(&bad, &bytes).unwrap();
    for func in ["func", "mixed", "nosuch"] {
        let r = function_params(&bad, func);
        assert!(r.is_err() || r.is_ok(), "{r:?}");
    }
    let _ = function_signatures(&bad, &["func"]);
}

#[test]
fn split_units_and_source_lines() {
    let dir = Scratch::new("split");
    let bin = build(&dir, "t", &["-O0", "-g", "-gsplit-dwarf"]);
    let loaded = Loaded::open(&bin, &DebugPath::default()).unwrap();
    // Read through the skeleton unit from the .dwo file.
    let found = loaded.function_params("func").unwrap();
    assert_eq!(found.debug_file, bin);
    assert_eq!(summary(&found.params)[1], reg("name", "const char*", 1));
    // `func`'s opening line is its entry, a file offset of this PIE at its address.
    let func = loaded.symbols["func"];
    let cache = DwarfCache::default();
    assert_eq!(
        cache.line_offset(&bin, at("dwarf_target.c", 54, 0)),
        Ok(func)
    );
    assert_eq!(
        cache.line_offset(&bin, at("targets/dwarf_target.c", 54, 1)),
        Ok(func)
    );
    assert!(matches!(
        cache.line_offset(&bin, at("dwarf_target.c", 53, 0)),
        Err(DebugInfoError::Invalid(t)) if t == "Unable to map 'dwarf_target.c:53' to address"
    ));
    assert!(matches!(
        cache.line_offset(&bin, at("get.c", 54, 0)),
        Err(DebugInfoError::Invalid(t)) if t == "No compilation unit matches get.c"
    ));
    // The cache opened the binary once and answers parameters from the same copy.
    assert_eq!(
        cache
            .function_params(&bin, "make_big")
            .unwrap()
            .params
            .len(),
        1
    );
    assert_eq!(cache.files.lock().unwrap().len(), 1);
}

/// Source line `line` (column `column`) of `file`.
fn at(file: &str, line: u64, column: u64) -> SourceLine<'_> {
    SourceLine { file, line, column }
}
