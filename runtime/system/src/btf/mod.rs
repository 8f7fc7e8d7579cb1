//! A small reader for BTF, the kernel's compact type format (`/sys/kernel/btf/vmlinux`).
//!
//! [`Btf::parse`] validates the header and walks the type section once, recording where each
//! type starts, so that later lookups decode a type in place without copying. All kinds of
//! the format are understood (INT up to ENUM64). Names are indexed on first use by
//! [`Btf::ids_named`]. [`convert`] turns BTF types into sonde [`sonde_lang::types::Type`]s
//! and [`cdecl`] renders them back as C declarations (`bpftrace -lv 'struct x'`).
//!
//! **Invariant:** no function here panics on malformed input: every read of the raw bytes is
//! bounds-checked during [`Btf::parse`] or returns a neutral value.

pub mod cdecl;
pub mod convert;
pub mod index;

use index::NameIndex;
use std::sync::OnceLock;

const BTF_MAGIC: u16 = 0xeb9f;
const HEADER_MIN: usize = 24;

/// The kind of a BTF type (the `kind` bits of its `info` word).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Type id 0: `void`.
    Void,
    /// An integer (with encoding, bit offset and bit count).
    Int,
    /// A pointer.
    Ptr,
    /// A fixed-size array.
    Array,
    /// A struct.
    Struct,
    /// A union.
    Union,
    /// An enum with 32-bit values.
    Enum,
    /// A forward declaration of a struct or union.
    Fwd,
    /// A typedef.
    Typedef,
    /// `volatile` qualifier.
    Volatile,
    /// `const` qualifier.
    Const,
    /// `restrict` qualifier.
    Restrict,
    /// A function (points to its FUNC_PROTO).
    Func,
    /// A function signature.
    FuncProto,
    /// A global variable.
    Var,
    /// A data section of variables.
    Datasec,
    /// A floating point type.
    Float,
    /// An attribute tag on a declaration.
    DeclTag,
    /// An attribute tag on a type.
    TypeTag,
    /// An enum with 64-bit values.
    Enum64,
}

impl Kind {
    fn from_raw(raw: u32) -> Option<Kind> {
        Some(match raw {
            1 => Kind::Int,
            2 => Kind::Ptr,
            3 => Kind::Array,
            4 => Kind::Struct,
            5 => Kind::Union,
            6 => Kind::Enum,
            7 => Kind::Fwd,
            8 => Kind::Typedef,
            9 => Kind::Volatile,
            10 => Kind::Const,
            11 => Kind::Restrict,
            12 => Kind::Func,
            13 => Kind::FuncProto,
            14 => Kind::Var,
            15 => Kind::Datasec,
            16 => Kind::Float,
            17 => Kind::DeclTag,
            18 => Kind::TypeTag,
            19 => Kind::Enum64,
            _ => return None,
        })
    }

    /// Bytes of kind-specific data that follow the 12-byte common header.
    fn extra_len(self, vlen: usize) -> usize {
        match self {
            Kind::Int | Kind::Var | Kind::DeclTag => 4,
            Kind::Array => 12,
            Kind::Struct | Kind::Union | Kind::Datasec | Kind::Enum64 => 12 * vlen,
            Kind::Enum | Kind::FuncProto => 8 * vlen,
            _ => 0,
        }
    }
}

/// The integer encoding bit meaning "signed".
pub const INT_SIGNED: u8 = 1;
/// The integer encoding bit meaning "char".
pub const INT_CHAR: u8 = 2;
/// The integer encoding bit meaning "bool".
pub const INT_BOOL: u8 = 4;

/// One decoded BTF type, borrowing its name and kind-specific bytes from the [`Btf`].
#[derive(Clone, Copy, Debug)]
pub struct BtfType<'a> {
    /// The type's name (empty for anonymous types, pointers and qualifiers).
    pub name: &'a str,
    /// Its kind.
    pub kind: Kind,
    /// The `kind_flag` bit (bitfield encoding for structs, signedness for enums, union for FWD).
    pub kind_flag: bool,
    /// Number of members, enumerators, parameters or variables (linkage for FUNC).
    pub vlen: u16,
    /// Size in bytes (INT, STRUCT, UNION, ENUM, DATASEC, FLOAT) or the referenced type id.
    pub size_or_type: u32,
    extra: &'a [u8],
}

/// A member of a struct or union.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member<'a> {
    /// Member name (empty for an anonymous struct or union member).
    pub name: &'a str,
    /// Type id of the member.
    pub type_id: u32,
    /// Offset of the member from the start of the record, in bits.
    pub bit_offset: u32,
    /// Bitfield width in bits when the record uses the `kind_flag` encoding, else 0.
    pub bitfield_size: u8,
}

/// The integer description that follows an INT type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntInfo {
    /// [`INT_SIGNED`], [`INT_CHAR`] and [`INT_BOOL`] bits.
    pub encoding: u8,
    /// Bit offset of the value (legacy bitfield encoding).
    pub offset: u8,
    /// Number of value bits.
    pub bits: u8,
}

/// The description that follows an ARRAY type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArrayInfo {
    /// Element type id.
    pub elem: u32,
    /// Index type id.
    pub index: u32,
    /// Number of elements.
    pub len: u32,
}

impl<'a> BtfType<'a> {
    fn word(&self, i: usize) -> u32 {
        self.extra
            .get(i * 4..i * 4 + 4)
            .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// The integer description of an INT type.
    pub fn int_info(&self) -> Option<IntInfo> {
        (self.kind == Kind::Int).then(|| {
            let w = self.word(0);
            IntInfo {
                encoding: (w >> 24) as u8 & 0xf,
                offset: (w >> 16) as u8,
                bits: w as u8,
            }
        })
    }

    /// The description of an ARRAY type.
    pub fn array_info(&self) -> Option<ArrayInfo> {
        (self.kind == Kind::Array).then(|| ArrayInfo {
            elem: self.word(0),
            index: self.word(1),
            len: self.word(2),
        })
    }

    /// Members of a STRUCT or UNION (empty for other kinds).
    pub fn members(&self, btf: &'a Btf) -> Vec<Member<'a>> {
        if !matches!(self.kind, Kind::Struct | Kind::Union) {
            return Vec::new();
        }
        (0..usize::from(self.vlen))
            .map(|i| {
                let off = self.word(i * 3 + 2);
                let (bit_offset, bitfield_size) = if self.kind_flag {
                    (off & 0xff_ffff, (off >> 24) as u8)
                } else {
                    (off, 0)
                };
                Member {
                    name: btf.string(self.word(i * 3)),
                    type_id: self.word(i * 3 + 1),
                    bit_offset,
                    bitfield_size,
                }
            })
            .collect()
    }

    /// Enumerators of an ENUM or ENUM64 as `(name, value)`; values of an unsigned 32-bit enum
    /// are zero-extended, signed ones sign-extended.
    pub fn enumerators(&self, btf: &'a Btf) -> Vec<(&'a str, i64)> {
        let n = usize::from(self.vlen);
        match self.kind {
            Kind::Enum => (0..n)
                .map(|i| {
                    let raw = self.word(i * 2 + 1);
                    let v = if self.kind_flag {
                        i64::from(raw as i32)
                    } else {
                        i64::from(raw)
                    };
                    (btf.string(self.word(i * 2)), v)
                })
                .collect(),
            Kind::Enum64 => (0..n)
                .map(|i| {
                    let lo = u64::from(self.word(i * 3 + 1));
                    let hi = u64::from(self.word(i * 3 + 2));
                    (btf.string(self.word(i * 3)), (hi << 32 | lo) as i64)
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Parameters of a FUNC_PROTO as `(name, type id)`; a trailing `(\"\", 0)` means `...`.
    pub fn params(&self, btf: &'a Btf) -> Vec<(&'a str, u32)> {
        if self.kind != Kind::FuncProto {
            return Vec::new();
        }
        (0..usize::from(self.vlen))
            .map(|i| (btf.string(self.word(i * 2)), self.word(i * 2 + 1)))
            .collect()
    }
}

/// Parsed BTF data: the raw bytes plus the start offset of every type.
pub struct Btf {
    data: Vec<u8>,
    strings: std::ops::Range<usize>,
    /// `starts[id]` is the byte offset of type `id` in `data` (`starts[0]` is unused: void).
    starts: Vec<u32>,
    names: OnceLock<NameIndex>,
    enumerators: OnceLock<NameIndex>,
    /// FUNCs and VARs by name.
    objects: OnceLock<NameIndex>,
}

impl std::fmt::Debug for Btf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Btf").field("types", &self.len()).finish()
    }
}

fn u32_at(data: &[u8], at: usize) -> Option<u32> {
    data.get(at..at + 4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

impl Btf {
    /// Reads and parses a BTF file (`/sys/kernel/btf/vmlinux`).
    pub fn from_file(path: &str) -> Result<Btf, String> {
        let data = std::fs::read(path).map_err(|e| format!("cannot read BTF from {path}: {e}"))?;
        Btf::parse(data).map_err(|e| format!("{path}: {e}"))
    }

    /// Parses raw BTF bytes (little-endian only), checking that every type fits in the data.
    pub fn parse(data: Vec<u8>) -> Result<Btf, String> {
        if data.len() < HEADER_MIN {
            return Err("BTF data is shorter than its header".into());
        }
        let magic = u16::from_le_bytes([data[0], data[1]]);
        if magic != BTF_MAGIC {
            return Err(format!(
                "bad BTF magic {magic:#06x} (expected {BTF_MAGIC:#06x})"
            ));
        }
        let field = |i: usize| u32_at(&data, 4 + i * 4).unwrap_or(0) as usize;
        let (hdr_len, type_off, type_len, str_off, str_len) =
            (field(0), field(1), field(2), field(3), field(4));
        let types = hdr_len + type_off..hdr_len + type_off + type_len;
        let strings = hdr_len + str_off..hdr_len + str_off + str_len;
        if hdr_len < HEADER_MIN || types.end > data.len() || strings.end > data.len() {
            return Err("BTF sections lie outside the data".into());
        }
        let mut starts = vec![0u32];
        let mut at = types.start;
        while at < types.end {
            let info = u32_at(&data, at + 4).ok_or("truncated BTF type")?;
            let kind_raw = (info >> 24) & 0x1f;
            let kind = Kind::from_raw(kind_raw)
                .ok_or_else(|| format!("unknown BTF kind {kind_raw} at type {}", starts.len()))?;
            let next = at + 12 + kind.extra_len((info & 0xffff) as usize);
            if next > types.end {
                return Err(format!(
                    "BTF type {} runs past the type section",
                    starts.len()
                ));
            }
            starts.push(at as u32);
            at = next;
        }
        Ok(Btf {
            data,
            strings,
            starts,
            names: OnceLock::new(),
            enumerators: OnceLock::new(),
            objects: OnceLock::new(),
        })
    }

    /// Number of type ids, including id 0 (`void`).
    pub fn len(&self) -> u32 {
        self.starts.len() as u32
    }

    /// True when there is no type besides `void`.
    pub fn is_empty(&self) -> bool {
        self.starts.len() <= 1
    }

    /// The string at `off` in the string section (empty when out of range or not UTF-8).
    pub fn string(&self, off: u32) -> &str {
        let Some(s) = self
            .data
            .get(self.strings.start + off as usize..self.strings.end)
        else {
            return "";
        };
        let end = s.iter().position(|&b| b == 0).unwrap_or(s.len());
        std::str::from_utf8(&s[..end]).unwrap_or("")
    }

    /// The type with id `id` (`Kind::Void` for 0), or `None` when out of range.
    pub fn ty(&self, id: u32) -> Option<BtfType<'_>> {
        if id == 0 {
            return Some(BtfType {
                name: "void",
                kind: Kind::Void,
                kind_flag: false,
                vlen: 0,
                size_or_type: 0,
                extra: &[],
            });
        }
        let at = *self.starts.get(id as usize)? as usize;
        let name_off = u32_at(&self.data, at)?;
        let info = u32_at(&self.data, at + 4)?;
        let kind = Kind::from_raw((info >> 24) & 0x1f)?;
        let vlen = (info & 0xffff) as u16;
        let extra_end = at + 12 + kind.extra_len(usize::from(vlen));
        Some(BtfType {
            name: self.string(name_off),
            kind,
            kind_flag: info >> 31 == 1,
            vlen,
            size_or_type: u32_at(&self.data, at + 8)?,
            extra: self.data.get(at + 12..extra_end)?,
        })
    }

    /// All ids of named STRUCT, UNION, ENUM, ENUM64, FWD and TYPEDEF types with this name,
    /// in id order. The index is built on the first call.
    pub fn ids_named(&self, name: &str) -> Vec<u32> {
        let index = self.names.get_or_init(|| {
            NameIndex::build(self.iter().filter_map(|(id, t)| {
                let indexed = matches!(
                    t.kind,
                    Kind::Struct
                        | Kind::Union
                        | Kind::Enum
                        | Kind::Enum64
                        | Kind::Fwd
                        | Kind::Typedef
                );
                (indexed && !t.name.is_empty()).then_some((t.name, id, 0))
            }))
        });
        index
            .candidates(name)
            .filter(|&(id, _)| self.ty(id).is_some_and(|t| t.name == name))
            .map(|(id, _)| id)
            .collect()
    }

    /// The id of the FUNC called `name` (the index of functions and variables is built on
    /// the first call).
    pub fn func_named(&self, name: &str) -> Option<u32> {
        self.object_named(name, Kind::Func)
    }

    /// The id of the VAR called `name`: a kernel global variable, per-CPU ones among them
    /// (`runqueues`).
    pub fn var_named(&self, name: &str) -> Option<u32> {
        self.object_named(name, Kind::Var)
    }

    /// The id of the FUNC or VAR (`kind`) called `name`.
    fn object_named(&self, name: &str, kind: Kind) -> Option<u32> {
        let index = self.objects.get_or_init(|| {
            NameIndex::build(
                self.iter()
                    .filter(|(_, t)| matches!(t.kind, Kind::Func | Kind::Var))
                    .map(|(id, t)| (t.name, id, 0)),
            )
        });
        index.candidates(name).map(|(id, _)| id).find(|&id| {
            self.ty(id)
                .is_some_and(|t| t.kind == kind && t.name == name)
        })
    }

    /// The first enumerator called `name` (in type id order) as `(enum type name, value)`.
    /// The enumerator index is built on the first call.
    pub fn enumerator(&self, name: &str) -> Option<(&str, i64)> {
        let index = self.enumerators.get_or_init(|| {
            let mut items = Vec::new();
            for (id, t) in self.iter() {
                if matches!(t.kind, Kind::Enum | Kind::Enum64) {
                    for (i, (n, _)) in t.enumerators(self).into_iter().enumerate() {
                        items.push((n, id, i as u32));
                    }
                }
            }
            NameIndex::build(items.into_iter())
        });
        index.candidates(name).find_map(|(id, item)| {
            let t = self.ty(id)?;
            let (n, v) = *t.enumerators(self).get(item as usize)?;
            (n == name).then_some((t.name, v))
        })
    }

    /// The struct (or union) called `name` with a body, preferring a definition over a FWD.
    pub fn find_record(&self, name: &str, union: bool) -> Option<u32> {
        let want = if union { Kind::Union } else { Kind::Struct };
        self.ids_named(name)
            .into_iter()
            .find(|&id| self.ty(id).is_some_and(|t| t.kind == want))
    }

    /// Follows typedefs and qualifiers (const, volatile, restrict, type tags) to the
    /// underlying type id (stops after 64 steps on a malformed cycle).
    pub fn strip(&self, mut id: u32) -> u32 {
        for _ in 0..64 {
            match self.ty(id) {
                Some(t)
                    if matches!(
                        t.kind,
                        Kind::Typedef
                            | Kind::Const
                            | Kind::Volatile
                            | Kind::Restrict
                            | Kind::TypeTag
                    ) =>
                {
                    id = t.size_or_type;
                }
                _ => return id,
            }
        }
        id
    }

    /// Iterates over all type ids with their decoded types.
    pub fn iter(&self) -> impl Iterator<Item = (u32, BtfType<'_>)> {
        (1..self.len()).filter_map(|id| self.ty(id).map(|t| (id, t)))
    }

    /// Size in bytes of a type (pointers 8, arrays element size × length, `void` 0).
    pub fn size_of(&self, id: u32) -> u32 {
        self.size_of_depth(id, 0)
    }

    fn size_of_depth(&self, id: u32, depth: u32) -> u32 {
        if depth > 64 {
            return 0;
        }
        let Some(t) = self.ty(self.strip(id)) else {
            return 0;
        };
        match t.kind {
            Kind::Int | Kind::Struct | Kind::Union | Kind::Enum | Kind::Enum64 | Kind::Float => {
                t.size_or_type
            }
            Kind::Ptr => 8,
            Kind::Array => t.array_info().map_or(0, |a| {
                self.size_of_depth(a.elem, depth + 1).saturating_mul(a.len)
            }),
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests;
