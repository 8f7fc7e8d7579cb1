//! A minimal BTF writer: the `.BTF` and `.BTF.ext` sections that describe each function of the
//! object (a `FUNC` with a `FUNC_PROTO` of `long f(void *, ...)`) and where it starts. The
//! kernel needs this function information for programs that pass callbacks to helpers such as
//! `bpf_for_each_map_elem` and `bpf_loop`.

/// BTF magic number.
const MAGIC: u16 = 0xeb9f;
const KIND_INT: u32 = 1;
const KIND_PTR: u32 = 2;
const KIND_FUNC: u32 = 12;
const KIND_FUNC_PROTO: u32 = 13;
/// `BTF_INT_SIGNED` encoding bit.
const INT_SIGNED: u32 = 1;
/// Linkage of a function only reachable from its program.
const LINKAGE_STATIC: u32 = 0;
/// Linkage of a program's entry function.
const LINKAGE_GLOBAL: u32 = 1;
/// Size of one `bpf_func_info` record.
const FUNC_INFO_REC: u32 = 8;

/// One function to describe.
#[derive(Clone, Debug)]
pub struct BtfFunction<'a> {
    /// Symbol name.
    pub name: &'a str,
    /// ELF section holding it.
    pub section: &'a str,
    /// Byte offset of its first instruction in the section.
    pub offset: u64,
    /// Number of parameters (all `void *`).
    pub params: usize,
    /// A program's entry point (global) rather than a callback (static).
    pub entry: bool,
}

/// Strings of the BTF string section, deduplicated.
#[derive(Default)]
struct Strings {
    bytes: Vec<u8>,
    offsets: std::collections::HashMap<String, u32>,
}

impl Strings {
    fn add(&mut self, s: &str) -> u32 {
        if self.bytes.is_empty() {
            self.bytes.push(0);
        }
        if s.is_empty() {
            return 0;
        }
        if let Some(&off) = self.offsets.get(s) {
            return off;
        }
        let off = self.bytes.len() as u32;
        self.bytes.extend(s.bytes().chain([0]));
        self.offsets.insert(s.to_string(), off);
        off
    }
}

/// A section's name offset and its functions as `(byte offset, FUNC type id)`.
type SectionFuncs<'a> = (&'a str, u32, Vec<(u64, u32)>);

fn push_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn type_header(out: &mut Vec<u8>, name: u32, kind: u32, vlen: u32, size_or_type: u32) {
    push_u32(out, name);
    push_u32(out, (kind << 24) | (vlen & 0xffff));
    push_u32(out, size_or_type);
}

/// The `.BTF` and `.BTF.ext` section contents describing `functions`.
pub fn write(functions: &[BtfFunction<'_>]) -> (Vec<u8>, Vec<u8>) {
    let mut strings = Strings::default();
    let mut types = Vec::new();
    // [1] long
    type_header(&mut types, strings.add("long"), KIND_INT, 0, 8);
    push_u32(&mut types, (INT_SIGNED << 24) | 64);
    // [2] void *
    type_header(&mut types, 0, KIND_PTR, 0, 0);
    let mut next_id = 3u32;
    let mut func_ids = Vec::with_capacity(functions.len());
    for f in functions {
        let proto = next_id;
        type_header(&mut types, 0, KIND_FUNC_PROTO, f.params as u32, 1);
        for i in 0..f.params {
            push_u32(&mut types, strings.add(&format!("a{i}")));
            push_u32(&mut types, 2);
        }
        let linkage = if f.entry {
            LINKAGE_GLOBAL
        } else {
            LINKAGE_STATIC
        };
        type_header(&mut types, strings.add(f.name), KIND_FUNC, linkage, proto);
        func_ids.push(proto + 1);
        next_id += 2;
    }
    // Section names are referenced from .BTF.ext.
    let mut sections: Vec<SectionFuncs<'_>> = Vec::new();
    for (f, id) in functions.iter().zip(&func_ids) {
        let name_off = strings.add(f.section);
        match sections.iter_mut().find(|(s, _, _)| *s == f.section) {
            Some(sec) => sec.2.push((f.offset, *id)),
            None => sections.push((f.section, name_off, vec![(f.offset, *id)])),
        }
    }
    let mut btf = Vec::new();
    btf.extend_from_slice(&MAGIC.to_le_bytes());
    btf.push(1); // version
    btf.push(0); // flags
    push_u32(&mut btf, 24); // header length
    push_u32(&mut btf, 0); // type offset
    push_u32(&mut btf, types.len() as u32);
    push_u32(&mut btf, types.len() as u32); // string offset
    push_u32(&mut btf, strings.bytes.len() as u32);
    btf.extend_from_slice(&types);
    btf.extend_from_slice(&strings.bytes);

    let mut info = Vec::new();
    push_u32(&mut info, FUNC_INFO_REC);
    for (_, name_off, funcs) in &mut sections {
        funcs.sort_unstable();
        push_u32(&mut info, *name_off);
        push_u32(&mut info, funcs.len() as u32);
        for (offset, id) in funcs.iter() {
            push_u32(&mut info, *offset as u32);
            push_u32(&mut info, *id);
        }
    }
    let mut ext = Vec::new();
    ext.extend_from_slice(&MAGIC.to_le_bytes());
    ext.push(1);
    ext.push(0);
    push_u32(&mut ext, 32); // header length (with the CO-RE relocation fields, all empty)
    push_u32(&mut ext, 0); // func_info offset
    push_u32(&mut ext, info.len() as u32);
    push_u32(&mut ext, info.len() as u32); // line_info offset
    push_u32(&mut ext, 0); // line_info length
    push_u32(&mut ext, info.len() as u32); // core_relo offset
    push_u32(&mut ext, 0); // core_relo length
    ext.extend_from_slice(&info);
    (btf, ext)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describes_functions_with_their_sections() {
        let funcs = [
            BtfFunction {
                name: "p0_0",
                section: "raw_tp/p0_0",
                offset: 0,
                params: 1,
                entry: true,
            },
            BtfFunction {
                name: "p0_0c0",
                section: "raw_tp/p0_0",
                offset: 80,
                params: 4,
                entry: false,
            },
        ];
        let (btf, ext) = write(&funcs);
        assert_eq!(&btf[..4], &[0x9f, 0xeb, 1, 0]);
        let type_len = u32::from_le_bytes(btf[12..16].try_into().unwrap()) as usize;
        // long (16) + ptr (12) + proto(1 param: 12+8) + func (12) + proto(4: 12+32) + func (12)
        assert_eq!(type_len, 16 + 12 + 20 + 12 + 44 + 12);
        let strings = &btf[24 + type_len..];
        assert!(strings.windows(7).any(|w| w == b"p0_0c0\0"));
        // func_info: rec size, then one section with two records at 0 and 80 bytes.
        let info = &ext[32..];
        let word = |i: usize| u32::from_le_bytes(info[i * 4..i * 4 + 4].try_into().unwrap());
        assert_eq!(word(0), 8);
        assert_eq!(word(2), 2);
        assert_eq!((word(3), word(4)), (0, 4));
        assert_eq!((word(5), word(6)), (80, 6));
    }
}
