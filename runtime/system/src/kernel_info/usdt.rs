//! USDT probes of ELF files: the notes of section `.note.stapsdt` (owner `stapsdt`, type 3).
//!
//! Each note's descriptor holds three addresses of the file's word size (the probe's pc, the
//! link-time address of `.stapsdt.base`, the semaphore's address or 0), then the provider,
//! the probe name and the argument string, each NUL-terminated. When the file was prelinked
//! the section `.stapsdt.base` moved, and the pc moves with it; the uprobe goes at the file
//! offset of the adjusted pc.

use crate::elf_symbols::{address_to_offset, parse, read};
use object::{Object, ObjectSection};
use sonde_lang::kernel::UsdtProbe;

/// Section holding the probe notes.
const NOTE_SECTION: &str = ".note.stapsdt";
/// Section whose address the notes record, to detect prelinking.
const BASE_SECTION: &str = ".stapsdt.base";
/// Note type of a USDT probe descriptor.
const NT_STAPSDT: u32 = 3;

/// One note as stored, before address adjustment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawNote {
    /// The probe address recorded at link time.
    pub pc: u64,
    /// The recorded address of `.stapsdt.base`.
    pub base: u64,
    /// The semaphore address, 0 when none.
    pub semaphore: u64,
    /// Provider name.
    pub provider: String,
    /// Probe name.
    pub name: String,
    /// Argument specification.
    pub args: String,
}

/// Reads a `u32` at `at` of `data` in the given byte order.
fn u32_at(data: &[u8], at: usize, little: bool) -> Option<u32> {
    let b: [u8; 4] = data.get(at..at + 4)?.try_into().ok()?;
    Some(if little {
        u32::from_le_bytes(b)
    } else {
        u32::from_be_bytes(b)
    })
}

/// Reads an address of `size` (4 or 8) bytes at `at` of `data`.
fn addr_at(data: &[u8], at: usize, size: usize, little: bool) -> Option<u64> {
    if size == 4 {
        return u32_at(data, at, little).map(u64::from);
    }
    let b: [u8; 8] = data.get(at..at + 8)?.try_into().ok()?;
    Some(if little {
        u64::from_le_bytes(b)
    } else {
        u64::from_be_bytes(b)
    })
}

/// Rounds `n` up to a multiple of 4 (note fields are 4-byte aligned).
fn align4(n: usize) -> usize {
    n.div_ceil(4) * 4
}

/// Parses the USDT notes of a `.note.stapsdt` section's bytes; notes of other owners or
/// types are skipped. `addr_size` is 8 for 64-bit files and 4 for 32-bit ones.
pub fn parse_notes(data: &[u8], little: bool, addr_size: usize) -> Result<Vec<RawNote>, String> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let bad = || format!("truncated note at byte {at} of {NOTE_SECTION}");
        let namesz = u32_at(data, at, little).ok_or_else(bad)? as usize;
        let descsz = u32_at(data, at + 4, little).ok_or_else(bad)? as usize;
        let kind = u32_at(data, at + 8, little).ok_or_else(bad)?;
        let name_at = at + 12;
        let desc_at = name_at + align4(namesz);
        let end = desc_at + align4(descsz);
        let owner = data.get(name_at..name_at + namesz).ok_or_else(bad)?;
        let desc = data.get(desc_at..desc_at + descsz).ok_or_else(bad)?;
        at = end;
        if kind != NT_STAPSDT || owner.strip_suffix(b"\0").unwrap_or(owner) != b"stapsdt" {
            continue;
        }
        let note = parse_descriptor(desc, little, addr_size)
            .ok_or_else(|| format!("malformed USDT note in {NOTE_SECTION}"))?;
        out.push(note);
    }
    Ok(out)
}

/// Parses one descriptor: three addresses, then three NUL-terminated strings.
fn parse_descriptor(desc: &[u8], little: bool, addr_size: usize) -> Option<RawNote> {
    let pc = addr_at(desc, 0, addr_size, little)?;
    let base = addr_at(desc, addr_size, addr_size, little)?;
    let semaphore = addr_at(desc, 2 * addr_size, addr_size, little)?;
    let mut strings = desc.get(3 * addr_size..)?.split(|&b| b == 0);
    let mut next = || {
        strings
            .next()
            .map(|s| String::from_utf8_lossy(s).into_owned())
    };
    let provider = next()?;
    let name = next()?;
    let args = next().unwrap_or_default();
    Some(RawNote {
        pc,
        base,
        semaphore,
        provider,
        name,
        args,
    })
}

/// The USDT probes of a parsed ELF file (none when it has no `.note.stapsdt`).
pub fn file_probes(path: &str, file: &object::File<'_>) -> Result<Vec<UsdtProbe>, String> {
    let Some(section) = file.section_by_name(NOTE_SECTION) else {
        return Ok(Vec::new());
    };
    let data = section
        .data()
        .map_err(|e| format!("cannot read {NOTE_SECTION} of {path}: {e}"))?;
    let addr_size = if file.is_64() { 8 } else { 4 };
    let notes = parse_notes(data, file.is_little_endian(), addr_size)
        .map_err(|e| format!("{path}: {e}"))?;
    let actual_base = file.section_by_name(BASE_SECTION).map(|s| s.address());
    notes
        .into_iter()
        .map(|n| {
            let pc = match actual_base {
                Some(actual) if n.base != 0 => n.pc.wrapping_add(actual).wrapping_sub(n.base),
                _ => n.pc,
            };
            let offset = address_to_offset(file, pc).ok_or_else(|| {
                format!(
                    "USDT probe {}:{} at {pc:#x} lies in no loadable segment of {path}",
                    n.provider, n.name
                )
            })?;
            // The semaphore moves with the probes when the file was prelinked.
            let semaphore_offset = match (n.semaphore, actual_base) {
                (0, _) => 0,
                (sem, Some(actual)) if n.base != 0 => {
                    address_to_offset(file, sem.wrapping_add(actual).wrapping_sub(n.base))
                        .unwrap_or(0)
                }
                (sem, _) => address_to_offset(file, sem).unwrap_or(0),
            };
            Ok(UsdtProbe {
                provider: n.provider,
                name: n.name,
                pc,
                base: n.base,
                semaphore: n.semaphore,
                semaphore_offset,
                offset,
                args: n.args,
            })
        })
        .collect()
}

/// The USDT probes of the ELF file at `path`, in note order.
pub fn usdt_probes(path: &str) -> Result<Vec<UsdtProbe>, String> {
    let data = read(path)?;
    let file = parse(path, &data)?;
    file_probes(path, &file)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Encodes one note the way the assembler lays it out (little-endian, 64-bit).
    fn note(owner: &str, kind: u32, desc: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&u32::try_from(owner.len() + 1).unwrap().to_le_bytes());
        v.extend_from_slice(&u32::try_from(desc.len()).unwrap().to_le_bytes());
        v.extend_from_slice(&kind.to_le_bytes());
        v.extend_from_slice(owner.as_bytes());
        v.push(0);
        v.resize(align4(v.len()), 0);
        v.extend_from_slice(desc);
        v.resize(align4(v.len()), 0);
        v
    }

    fn desc(pc: u64, base: u64, sema: u64, strings: &[&str]) -> Vec<u8> {
        let mut d = Vec::new();
        for a in [pc, base, sema] {
            d.extend_from_slice(&a.to_le_bytes());
        }
        for s in strings {
            d.extend_from_slice(s.as_bytes());
            d.push(0);
        }
        d
    }

    #[test]
    fn parses_notes_and_skips_foreign_ones() {
        let mut data = note(
            "stapsdt",
            3,
            &desc(0x1184, 0x2036, 0, &["prov", "work", "-4@-4(%rbp) 8@%rsi"]),
        );
        data.extend(note("GNU", 3, &[1, 2, 3, 4]));
        data.extend(note(
            "stapsdt",
            3,
            &desc(0x11be, 0x2036, 0x4010, &["prov", "done", ""]),
        ));
        let notes = parse_notes(&data, true, 8).unwrap();
        assert_eq!(
            notes,
            vec![
                RawNote {
                    pc: 0x1184,
                    base: 0x2036,
                    semaphore: 0,
                    provider: "prov".into(),
                    name: "work".into(),
                    args: "-4@-4(%rbp) 8@%rsi".into(),
                },
                RawNote {
                    pc: 0x11be,
                    base: 0x2036,
                    semaphore: 0x4010,
                    provider: "prov".into(),
                    name: "done".into(),
                    args: String::new(),
                },
            ]
        );
    }

    #[test]
    fn truncated_notes_are_errors() {
        let data = note("stapsdt", 3, &desc(1, 2, 3, &["p", "n", ""]));
        let err = parse_notes(&data[..data.len() - 12], true, 8).unwrap_err();
        assert_eq!(err, "truncated note at byte 0 of .note.stapsdt");
        let short = note("stapsdt", 3, &[0; 10]);
        assert_eq!(
            parse_notes(&short, true, 8).unwrap_err(),
            "malformed USDT note in .note.stapsdt"
        );
    }

    /// Builds `tests/targets/usdt_target.c` at `-O0`; `None` when gcc or `<sys/sdt.h>` is
    /// missing (the end-to-end tests in `tests/probes_usdt.rs` require them).
    fn build_target() -> Option<std::path::PathBuf> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let out = std::env::temp_dir().join(format!("sonde-usdt-notes-{}", std::process::id()));
        let ok = std::process::Command::new("gcc")
            .args(["-O0", "-fPIE", "-pie", "-o"])
            .arg(&out)
            .arg(root.join("tests/targets/usdt_target.c"))
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(out)
    }

    #[test]
    fn probes_of_a_built_program_point_at_their_nops() {
        let Some(bin) = build_target() else {
            eprintln!("skipped: cannot build the USDT target");
            return;
        };
        let probes = usdt_probes(bin.to_str().unwrap()).unwrap();
        let data = std::fs::read(&bin).unwrap();
        let _ = std::fs::remove_file(&bin);
        let names: Vec<(&str, &str, &str)> = probes
            .iter()
            .map(|p| (p.provider.as_str(), p.name.as_str(), p.args.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("sondetest", "work", "-4@-4(%rbp) 8@-16(%rbp)"),
                ("sondetest", "mixed", "-4@-20(%rbp) -8@%rax -4@$7"),
                ("sondetest", "done", "-4@-36(%rbp)"),
            ]
        );
        for p in &probes {
            assert_eq!(p.semaphore, 0);
            // Each probe site is a one-byte `nop` the uprobe replaces.
            assert_eq!(data[usize::try_from(p.offset).unwrap()], 0x90, "{p:?}");
        }
    }

    #[test]
    fn files_without_notes_have_no_probes() {
        let exe = std::env::current_exe().unwrap();
        assert_eq!(usdt_probes(exe.to_str().unwrap()).unwrap(), vec![]);
        assert!(
            usdt_probes("/nonexistent/x")
                .unwrap_err()
                .starts_with("cannot read")
        );
    }
}
