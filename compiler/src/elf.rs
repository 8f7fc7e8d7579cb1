//! Writes programs and maps into an ELF relocatable object that aya 0.14 loads.
//!
//! Layout (see `shared/design/kernel-notes.md`): ELF64, little-endian, `EM_BPF`. Each program
//! section is allocated + executable; its name's prefix before `/` selects the program type.
//! Every program is a global `STT_FUNC` symbol sized to its code, and several programs may
//! share a section. Maps live in a legacy `maps` section (five `u32` per map: type,
//! key size, value size, max entries, flags), one global data symbol per map. A map
//! reference is a placeholder `ld_imm64` (src 0, imm 0) with an `R_BPF_64_64` relocation
//! (addend 0) in `.rel<section>` at the byte offset of its first slot. A `license` section
//! holds `"GPL\0"`, which the stack and probe-read helpers require. The error counters are
//! a `.bss` section instead (see [`crate::program::COUNTERS_SECTION`]): references to its
//! symbol load the address of its value, so counting an error needs no map lookup.
//!
//! Callbacks (loop bodies passed to `bpf_loop` and `bpf_for_each_map_elem`: every function
//! some [`ElfProgram::func_relocs`] names) go to `.text`, as clang puts static functions,
//! never into a program section: aya takes every function symbol of a program section for a
//! program and links each program in hash-map order, replacing its code with the linked
//! result, so a callback that references another callback (a nested loop) could be linked
//! into its caller a second time with its callee already appended, both at one func info
//! offset, which the verifier rejects. aya links functions of `.text` into each program that
//! references them, from their unlinked code.
//!
//! The output depends only on the inputs (no timestamps, no hash ordering).

use object::write::{Object, Relocation, StandardSegment, Symbol, SymbolSection};
use object::{
    Architecture, BinaryFormat, Endianness, RelocationFlags, SectionKind, SymbolFlags, SymbolKind,
    SymbolScope,
};

use crate::bpf::insn::Insn;
use crate::program::{MapRole, MapSpec};
use std::collections::{HashMap, HashSet};

/// The section holding every callback (see the module documentation).
pub const CALLBACK_SECTION: &str = ".text";

/// Size of one legacy map definition (five `u32`).
pub const MAP_DEF_SIZE: usize = 20;

/// One program to place in the object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ElfProgram {
    /// Symbol name: the program's name for aya and the kernel (`[A-Za-z0-9_]`, ≤ 15 chars).
    pub symbol: String,
    /// Section name (`tracepoint/syscalls/sys_enter_getppid`, `raw_tp/sys_enter`, ...).
    /// Ignored for a callback (a function that some program's `func_relocs` names), which
    /// goes to [`CALLBACK_SECTION`].
    pub section: String,
    /// The code. Map references are [`Insn::ld_map_reloc`] placeholders.
    pub insns: Vec<Insn>,
    /// For each map reference: the index in `insns` of the `ld_imm64`'s first slot, and the
    /// referenced map's symbol.
    pub map_relocs: Vec<(usize, String)>,
    /// For each callback address (an `ld_imm64` placeholder like a map reference): the index
    /// of its first slot and the symbol of the function (another program of the object).
    pub func_relocs: Vec<(usize, String)>,
}

/// Writes an ELF object holding `programs` and `maps`.
///
/// # Panics
/// On compiler bugs only: a relocation naming a map that is not in `maps`, or pointing at
/// an instruction that is not a `ld_imm64`.
pub fn write_elf(programs: &[ElfProgram], maps: &[MapSpec]) -> Vec<u8> {
    let mut obj = Object::new(BinaryFormat::Elf, Architecture::Bpf, Endianness::Little);

    let mut map_symbols = HashMap::with_capacity(maps.len());
    let (data_maps, maps): (Vec<&MapSpec>, Vec<&MapSpec>) =
        maps.iter().partition(|m| m.role == MapRole::Counters);
    for map in data_maps {
        // A data section: aya makes it a one-element array map named after the section,
        // and turns references to its symbol into the value's address.
        let section = obj.add_section(
            Vec::new(),
            map.symbol.as_bytes().to_vec(),
            SectionKind::UninitializedData,
        );
        let offset = obj.append_section_bss(section, u64::from(map.value_size), 8);
        let id = obj.add_symbol(Symbol {
            name: b"counters".to_vec(),
            value: offset,
            size: u64::from(map.value_size),
            kind: SymbolKind::Data,
            scope: SymbolScope::Compilation,
            weak: false,
            section: SymbolSection::Section(section),
            flags: SymbolFlags::None,
        });
        map_symbols.insert(map.symbol.as_str(), id);
    }
    if !maps.is_empty() {
        let section = obj.add_section(Vec::new(), b"maps".to_vec(), SectionKind::Data);
        for map in maps {
            let mut def = Vec::with_capacity(MAP_DEF_SIZE);
            for field in [
                map.kind.kernel_type(),
                map.key_size,
                map.value_size,
                map.max_entries,
                map.kind.flags(),
            ] {
                def.extend_from_slice(&field.to_le_bytes());
            }
            let offset = obj.append_section_data(section, &def, 4);
            let id = obj.add_symbol(Symbol {
                name: map.symbol.as_bytes().to_vec(),
                value: offset,
                size: MAP_DEF_SIZE as u64,
                kind: SymbolKind::Data,
                scope: SymbolScope::Dynamic,
                weak: false,
                section: SymbolSection::Section(section),
                flags: SymbolFlags::None,
            });
            map_symbols.insert(map.symbol.as_str(), id);
        }
    }

    // Functions that programs pass to helpers: they go to `.text`.
    let callees: HashSet<&str> = programs
        .iter()
        .flat_map(|p| p.func_relocs.iter().map(|(_, f)| f.as_str()))
        .collect();

    // Sections in order of first appearance, so the output is deterministic. (Lookups by
    // name go through hash maps: a script has thousands of programs and maps.)
    let mut sections: HashMap<&str, object::write::SectionId> = HashMap::new();
    let mut placed = Vec::with_capacity(programs.len());
    let mut function_symbols = HashMap::with_capacity(programs.len());
    for program in programs {
        let name = section_of(program, &callees);
        let section = match sections.get(name) {
            Some(id) => *id,
            None => {
                let segment = obj.segment_name(StandardSegment::Text).to_vec();
                let id = obj.add_section(segment, name.as_bytes().to_vec(), SectionKind::Text);
                sections.insert(name, id);
                id
            }
        };
        let code: Vec<u8> = program.insns.iter().flat_map(Insn::encode).collect();
        let offset = obj.append_section_data(section, &code, 8);
        let id = obj.add_symbol(Symbol {
            name: program.symbol.as_bytes().to_vec(),
            value: offset,
            size: code.len() as u64,
            kind: SymbolKind::Text,
            scope: SymbolScope::Dynamic,
            weak: false,
            section: SymbolSection::Section(section),
            flags: SymbolFlags::None,
        });
        placed.push((section, offset));
        function_symbols.insert(program.symbol.as_str(), id);
    }
    // Relocations come after every symbol exists: a program may reference a callback placed
    // after it.
    let placed_offsets: Vec<u64> = placed.iter().map(|(_, o)| *o).collect();
    for (program, (section, offset)) in programs.iter().zip(placed) {
        let targets = program
            .map_relocs
            .iter()
            .map(|(index, name)| (*index, name, &map_symbols, "map"))
            .chain(
                program
                    .func_relocs
                    .iter()
                    .map(|(index, name)| (*index, name, &function_symbols, "function")),
            );
        for (index, name, symbols, what) in targets {
            // A function is referenced by its address (`ld_imm64`) or called (`call`).
            let call =
                what == "function" && program.insns.get(index).is_some_and(Insn::is_local_call);
            assert!(
                call || program.insns.get(index).is_some_and(Insn::is_ld_imm64),
                "BUG: {what} relocation at insn {index} of {} is not a ld_imm64 or a call",
                program.symbol
            );
            let Some(symbol) = symbols.get(name.as_str()) else {
                panic!(
                    "BUG: program {} references unknown {what} {name}",
                    program.symbol
                );
            };
            let relocation = Relocation {
                offset: offset + (index as u64) * 8,
                symbol: *symbol,
                addend: 0,
                flags: RelocationFlags::Elf {
                    r_type: if call {
                        object::elf::R_BPF_64_32
                    } else {
                        object::elf::R_BPF_64_64
                    },
                },
            };
            obj.add_relocation(section, relocation)
                .expect("BUG: ELF relocation rejected by the object writer");
        }
    }

    // Callbacks need function information: describe every function of the object.
    if !callees.is_empty() {
        let functions: Vec<crate::btf::BtfFunction<'_>> = programs
            .iter()
            .zip(&placed_offsets)
            .map(|(p, offset)| {
                let entry = !callees.contains(&p.symbol.as_str());
                crate::btf::BtfFunction {
                    name: &p.symbol,
                    section: section_of(p, &callees),
                    offset: *offset,
                    params: if entry { 1 } else { 4 },
                    entry,
                }
            })
            .collect();
        let (btf, ext) = crate::btf::write(&functions);
        let sec = obj.add_section(Vec::new(), b".BTF".to_vec(), SectionKind::Metadata);
        obj.append_section_data(sec, &btf, 4);
        let sec = obj.add_section(Vec::new(), b".BTF.ext".to_vec(), SectionKind::Metadata);
        obj.append_section_data(sec, &ext, 4);
    }

    let license = obj.add_section(Vec::new(), b"license".to_vec(), SectionKind::Data);
    obj.append_section_data(license, b"GPL\0", 1);

    obj.write()
        .expect("BUG: the object writer failed on a well-formed BPF object")
}

/// The section of `program`: [`CALLBACK_SECTION`] for a callback (a member of `callees`), else
/// its own.
fn section_of<'a>(program: &'a ElfProgram, callees: &HashSet<&str>) -> &'a str {
    if callees.contains(program.symbol.as_str()) {
        CALLBACK_SECTION
    } else {
        &program.section
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bpf::insn::{Helper, Reg};
    use crate::program::{MapKind, MapRole};
    use object::read::{File, Object as _, ObjectSection as _, ObjectSymbol as _};
    use object::{ObjectKind, RelocationTarget};

    fn map(symbol: &str, kind: MapKind, key: u32, value: u32, max: u32) -> MapSpec {
        MapSpec {
            symbol: symbol.into(),
            kind,
            key_size: key,
            value_size: value,
            max_entries: max,
            role: MapRole::Scratch,
        }
    }

    fn lookup_prog(symbol: &str, section: &str, map: &str) -> ElfProgram {
        let mut insns = vec![Insn::st(crate::bpf::insn::Size::W, Reg::R10, -4, 0)];
        insns.push(Insn::mov64_reg(Reg::R2, Reg::R10));
        insns.push(Insn::add64_imm(Reg::R2, -4));
        let at = insns.len();
        insns.extend(Insn::ld_map_reloc(Reg::R1));
        insns.push(Insn::call(Helper::MapLookupElem));
        insns.push(Insn::mov64_imm(Reg::R0, 0));
        insns.push(Insn::exit());
        ElfProgram {
            symbol: symbol.into(),
            section: section.into(),
            insns,
            map_relocs: vec![(at, map.into())],
            func_relocs: vec![],
        }
    }

    #[test]
    fn object_parses_back() {
        let maps = [
            map("m_counts", MapKind::PerCpuHash, 8, 8, 1024),
            map("m_events", MapKind::RingBuf, 0, 0, 1 << 16),
        ];
        let programs = [
            lookup_prog("p0", "tracepoint/syscalls/sys_enter_getppid", "m_counts"),
            lookup_prog("p1", "tracepoint/syscalls/sys_enter_getppid", "m_events"),
            lookup_prog("p2", "raw_tp/sys_enter", "m_counts"),
        ];
        let bytes = write_elf(&programs, &maps);
        let file = File::parse(&*bytes).unwrap();
        assert_eq!(file.kind(), ObjectKind::Relocatable);
        assert_eq!(file.architecture(), Architecture::Bpf);
        assert!(file.is_little_endian());
        assert!(file.is_64());

        // Map definitions.
        let maps_sec = file.section_by_name("maps").unwrap();
        let data = maps_sec.data().unwrap();
        let words: Vec<u32> = data
            .chunks(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(words, vec![5, 8, 8, 1024, 0, 27, 0, 0, 65536, 0]);

        // Symbols: programs with their offsets and sizes, maps with theirs.
        let sym = |name: &str| file.symbols().find(|s| s.name() == Ok(name)).unwrap();
        let code_len = 8 * 8;
        for (name, value, size, kind) in [
            ("p0", 0, code_len, SymbolKind::Text),
            ("p1", code_len, code_len, SymbolKind::Text),
            ("p2", 0, code_len, SymbolKind::Text),
            ("m_counts", 0, 20, SymbolKind::Data),
            ("m_events", 20, 20, SymbolKind::Data),
        ] {
            let s = sym(name);
            assert_eq!(
                (s.address(), s.size(), s.kind()),
                (value, size, kind),
                "{name}"
            );
            assert!(s.is_global(), "{name}");
        }
        assert_eq!(
            file.section_by_index(sym("p2").section_index().unwrap())
                .unwrap()
                .name(),
            Ok("raw_tp/sys_enter")
        );

        // Program sections: executable, the shared one holds both programs.
        let tp = file
            .section_by_name("tracepoint/syscalls/sys_enter_getppid")
            .unwrap();
        assert_eq!(tp.kind(), SectionKind::Text);
        assert_eq!(tp.size(), 2 * code_len);
        let code = tp.data().unwrap();
        assert_eq!(
            Insn::decode(code[24..32].try_into().unwrap()),
            Insn::ld_map_reloc(Reg::R1)[0]
        );

        // Relocations: one per map reference, at the ld_imm64's byte offset.
        let relocs: Vec<(u64, String, u32)> = tp
            .relocations()
            .map(|(off, r)| {
                let RelocationTarget::Symbol(idx) = r.target() else {
                    panic!("not a symbol")
                };
                let name = file
                    .symbol_by_index(idx)
                    .unwrap()
                    .name()
                    .unwrap()
                    .to_string();
                let object::RelocationFlags::Elf { r_type } = r.flags() else {
                    panic!()
                };
                assert_eq!(r.addend(), 0);
                (off, name, r_type)
            })
            .collect();
        assert_eq!(
            relocs,
            vec![
                (24, "m_counts".to_string(), 1),
                (code_len + 24, "m_events".to_string(), 1)
            ]
        );
        assert!(
            file.section_by_name(".reltracepoint/syscalls/sys_enter_getppid")
                .is_some()
        );
        assert!(file.section_by_name(".relraw_tp/sys_enter").is_some());

        assert_eq!(
            file.section_by_name("license").unwrap().data().unwrap(),
            b"GPL\0"
        );
    }

    /// Callbacks, nested ones included, go to `.text` with their function information there;
    /// programs stay in their sections, and references to callbacks name their symbols.
    #[test]
    fn callbacks_go_to_text() {
        let code = || vec![Insn::mov64_imm(Reg::R0, 0), Insn::exit()];
        let with_ref = |to: &str| {
            let mut insns = Insn::ld_map_reloc(Reg::R2).to_vec();
            insns.extend(code());
            (insns, vec![(0, to.to_string())])
        };
        let func = |symbol: &str, section: &str, to: Option<&str>| {
            let (insns, func_relocs) = to.map_or((code(), vec![]), with_ref);
            ElfProgram {
                symbol: symbol.into(),
                section: section.into(),
                insns,
                map_relocs: vec![],
                func_relocs,
            }
        };
        let programs = [
            func("p0", "raw_tp/a", Some("p0c0")),
            func("p0c0", "raw_tp/a", Some("p0c1")),
            func("p0c1", "raw_tp/a", None),
            func("p1", "raw_tp/b", Some("p1c0")),
            func("p1c0", "raw_tp/b", None),
        ];
        let bytes = write_elf(&programs, &[]);
        assert_eq!(bytes, write_elf(&programs, &[]));
        let file = File::parse(&*bytes).unwrap();
        let placed = |name: &str| {
            let s = file.symbols().find(|s| s.name() == Ok(name)).unwrap();
            let section = file.section_by_index(s.section_index().unwrap()).unwrap();
            (section.name().unwrap().to_string(), s.address(), s.size())
        };
        let at = |section: &str, address: u64, size: u64| (section.to_string(), address, size);
        assert_eq!(placed("p0"), at("raw_tp/a", 0, 32));
        assert_eq!(placed("p0c0"), at(".text", 0, 32));
        assert_eq!(placed("p0c1"), at(".text", 32, 16));
        assert_eq!(placed("p1"), at("raw_tp/b", 0, 32));
        assert_eq!(placed("p1c0"), at(".text", 48, 16));
        assert_eq!(file.section_by_name("raw_tp/a").unwrap().size(), 32);
        assert_eq!(file.section_by_name(".text").unwrap().size(), 64);

        let relocs = |section: &str| -> Vec<(u64, String)> {
            let sec = file.section_by_name(section).unwrap();
            sec.relocations()
                .map(|(off, r)| {
                    let RelocationTarget::Symbol(idx) = r.target() else {
                        panic!("not a symbol")
                    };
                    let sym = file.symbol_by_index(idx).unwrap();
                    (off, sym.name().unwrap().to_string())
                })
                .collect()
        };
        assert_eq!(relocs("raw_tp/a"), vec![(0, "p0c0".to_string())]);
        assert_eq!(relocs("raw_tp/b"), vec![(0, "p1c0".to_string())]);
        assert_eq!(relocs(".text"), vec![(0, "p0c1".to_string())]);

        // .BTF.ext func_info: section name offsets and (byte offset, FUNC type id) records.
        let btf = file.section_by_name(".BTF").unwrap().data().unwrap();
        let type_len = u32::from_le_bytes(btf[12..16].try_into().unwrap()) as usize;
        let strings = &btf[24 + type_len..];
        let string = |off: u32| {
            let s = &strings[off as usize..];
            std::str::from_utf8(&s[..s.iter().position(|&b| b == 0).unwrap()]).unwrap()
        };
        let ext = file.section_by_name(".BTF.ext").unwrap().data().unwrap();
        let words: Vec<u32> = ext[32..]
            .chunks(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        let mut sections = Vec::new();
        let mut i = 1;
        while i < words.len() {
            let n = words[i + 1] as usize;
            let offsets: Vec<u32> = (0..n).map(|k| words[i + 2 + 2 * k]).collect();
            sections.push((string(words[i]), offsets));
            i += 2 + 2 * n;
        }
        assert_eq!(
            sections,
            vec![
                ("raw_tp/a", vec![0]),
                (".text", vec![0, 32, 48]),
                ("raw_tp/b", vec![0]),
            ]
        );
    }

    #[test]
    fn deterministic_and_map_free() {
        let prog = ElfProgram {
            symbol: "p".into(),
            section: "perf_event".into(),
            insns: vec![Insn::mov64_imm(Reg::R0, 0), Insn::exit()],
            map_relocs: vec![],
            func_relocs: vec![],
        };
        let a = write_elf(std::slice::from_ref(&prog), &[]);
        let b = write_elf(std::slice::from_ref(&prog), &[]);
        assert_eq!(a, b);
        let file = File::parse(&*a).unwrap();
        assert!(file.section_by_name("maps").is_none());
        assert_eq!(file.section_by_name("perf_event").unwrap().size(), 16);
    }
}
