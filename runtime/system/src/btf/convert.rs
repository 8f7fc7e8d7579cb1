//! Converts BTF types into sonde [`Type`]s and [`Record`]s.
//!
//! The conventions are those of `sonde_lang::ctypes` and documented on
//! `sonde_lang::kernel::KernelInfo::record`:
//! - A pointer to a *named* struct or union points to an opaque record (same name, no
//!   fields, size 0); the checker asks [`KernelInfo::record`] again by name when a member
//!   access continues through the pointer. So converting `struct task_struct` never expands
//!   `parent->parent->...`, and each conversion is bounded by the by-value nesting of C.
//!   Pointers to anonymous records are converted in full (they cannot be looked up by name).
//! - Records held by value are converted in full (their offsets are needed).
//! - Anonymous struct/union members are flattened: their fields appear in the parent with
//!   offsets relative to the parent, as bpftrace lets scripts write `sk->skc_family`.
//! - `char[N]` (element an integer type spelled `char`, `signed char` or `unsigned char`,
//!   not a typedef such as `u8`) is `Str { size: N }`; other arrays are `Array`.
//! - A bitfield is a [`Field`] whose `offset` is the byte holding its first bit, whose `ty`
//!   is an integer of the smallest width (8/16/32/64) covering the bits from there, and
//!   whose `bitfield` is `(bit shift within that unit, bit width)`: load `ty` at `offset`,
//!   shift right, mask.
//! - Pointers are in [`AddrSpace::Kernel`]. Enums become [`Type::Enum`] (anonymous ones an
//!   integer), `_Bool` becomes [`Type::Bool`], floats an unsigned integer holding the raw
//!   bits, function types `void`.
//!
//! [`KernelInfo::record`]: sonde_lang::kernel::KernelInfo::record

use super::{Btf, INT_BOOL, INT_SIGNED, Kind};
use sonde_lang::ctypes::opaque_record;
use sonde_lang::kernel::RecordKind;
use sonde_lang::types::{AddrSpace, Field, Record, Type};
use std::collections::HashMap;
use std::sync::Arc;

/// Nesting limit guarding against malformed (cyclic) BTF.
const MAX_DEPTH: u32 = 48;

/// Converted records by BTF type id, shared between conversions.
pub type RecordCache = HashMap<u32, Arc<Record>>;

/// The sonde type of BTF type `id`, reusing and filling `cache` for records held by value.
pub fn to_type(btf: &Btf, id: u32, cache: &mut RecordCache) -> Type {
    convert(btf, id, cache, 0)
}

/// The record of a STRUCT or UNION type id (after typedefs), or `None` for other kinds.
pub fn to_record(btf: &Btf, id: u32, cache: &mut RecordCache) -> Option<Arc<Record>> {
    record(btf, btf.strip(id), cache, 0)
}

/// `struct x` / `union x` for a record type, or `struct (anonymous)` when unnamed.
pub fn record_display_name(union: bool, tag: &str) -> String {
    let kw = if union { "union" } else { "struct" };
    if tag.is_empty() {
        format!("{kw} (anonymous)")
    } else {
        format!("{kw} {tag}")
    }
}

fn convert(btf: &Btf, id: u32, cache: &mut RecordCache, depth: u32) -> Type {
    if depth > MAX_DEPTH {
        return Type::Void;
    }
    let id = btf.strip(id);
    let Some(t) = btf.ty(id) else {
        return Type::Void;
    };
    match t.kind {
        Kind::Int => {
            let info = t.int_info().unwrap_or(super::IntInfo {
                encoding: 0,
                offset: 0,
                bits: 0,
            });
            if info.encoding & INT_BOOL != 0 {
                Type::Bool
            } else {
                Type::int_of_size(u64::from(t.size_or_type), info.encoding & INT_SIGNED != 0)
            }
        }
        Kind::Float => Type::int_of_size(u64::from(t.size_or_type), false),
        Kind::Enum | Kind::Enum64 if t.name.is_empty() => {
            Type::int_of_size(u64::from(t.size_or_type), t.kind_flag)
        }
        Kind::Enum | Kind::Enum64 => Type::Enum {
            name: t.name.to_string(),
            bits: (t.size_or_type * 8).min(64) as u8,
        },
        Kind::Ptr => Type::Ptr {
            pointee: Box::new(pointee(btf, t.size_or_type, cache, depth + 1)),
            space: AddrSpace::Kernel,
        },
        Kind::Array => {
            let Some(a) = t.array_info() else {
                return Type::Void;
            };
            if is_char(btf, a.elem) {
                return Type::Str { size: a.len };
            }
            Type::Array {
                elem: Box::new(convert(btf, a.elem, cache, depth + 1)),
                len: a.len,
            }
        }
        Kind::Struct | Kind::Union => {
            record(btf, id, cache, depth + 1).map_or(Type::Void, Type::Record)
        }
        Kind::Fwd => {
            let kind = if t.kind_flag {
                RecordKind::Union
            } else {
                RecordKind::Struct
            };
            Type::Record(opaque_record(kind, t.name))
        }
        _ => Type::Void,
    }
}

/// True when `id` (after qualifiers, but not typedefs) is a one-byte integer spelled `char`.
fn is_char(btf: &Btf, mut id: u32) -> bool {
    for _ in 0..8 {
        let Some(t) = btf.ty(id) else { return false };
        match t.kind {
            Kind::Const | Kind::Volatile | Kind::Restrict | Kind::TypeTag => id = t.size_or_type,
            Kind::Int => return t.size_or_type == 1 && t.name.ends_with("char"),
            _ => return false,
        }
    }
    false
}

fn pointee(btf: &Btf, id: u32, cache: &mut RecordCache, depth: u32) -> Type {
    let target = btf.strip(id);
    match btf.ty(target) {
        Some(t) if matches!(t.kind, Kind::Struct | Kind::Union) && !t.name.is_empty() => {
            let kind = if t.kind == Kind::Union {
                RecordKind::Union
            } else {
                RecordKind::Struct
            };
            Type::Record(opaque_record(kind, t.name))
        }
        Some(t) if matches!(t.kind, Kind::Func | Kind::FuncProto) => Type::Void,
        _ => convert(btf, target, cache, depth),
    }
}

fn record(btf: &Btf, id: u32, cache: &mut RecordCache, depth: u32) -> Option<Arc<Record>> {
    if let Some(r) = cache.get(&id) {
        return Some(r.clone());
    }
    let t = btf.ty(id)?;
    if !matches!(t.kind, Kind::Struct | Kind::Union) || depth > MAX_DEPTH {
        return None;
    }
    let mut fields = Vec::with_capacity(usize::from(t.vlen));
    push_members(btf, id, 0, &mut fields, cache, depth);
    let r = Arc::new(Record {
        name: record_display_name(t.kind == Kind::Union, t.name),
        size: t.size_or_type,
        fields,
        is_union: t.kind == Kind::Union,
    });
    cache.insert(id, r.clone());
    Some(r)
}

/// Appends the fields of record `id` to `out`, offset by `base_bits`, flattening anonymous
/// struct/union members.
fn push_members(
    btf: &Btf,
    id: u32,
    base_bits: u32,
    out: &mut Vec<Field>,
    cache: &mut RecordCache,
    depth: u32,
) {
    let Some(t) = btf.ty(id) else { return };
    for m in t.members(btf) {
        let bit_off = base_bits.saturating_add(m.bit_offset);
        let target = btf.strip(m.type_id);
        let Some(mt) = btf.ty(target) else { continue };
        if m.name.is_empty() {
            if matches!(mt.kind, Kind::Struct | Kind::Union) && depth <= MAX_DEPTH {
                push_members(btf, target, bit_off, out, cache, depth + 1);
            }
            continue;
        }
        // Legacy bitfields are described by the INT type's own offset and bit count.
        let (shift_extra, width) = match mt.int_info() {
            Some(i) if m.bitfield_size == 0 && u32::from(i.bits) != mt.size_or_type * 8 => {
                (u32::from(i.offset), i.bits)
            }
            _ => (0, m.bitfield_size),
        };
        if width == 0 && bit_off % 8 == 0 {
            out.push(Field {
                name: m.name.to_string(),
                offset: bit_off / 8,
                ty: convert(btf, m.type_id, cache, depth + 1),
                bitfield: None,
                data_loc: false,
                nul_room: false,
            });
            continue;
        }
        let start = bit_off + shift_extra;
        let width = if width == 0 {
            (btf.size_of(target) * 8).min(64) as u8
        } else {
            width
        };
        let shift = start % 8;
        let bytes_needed = (shift + u32::from(width)).div_ceil(8);
        let unit = [1u32, 2, 4, 8]
            .into_iter()
            .find(|&u| u >= bytes_needed)
            .unwrap_or(8);
        let signed = match mt.kind {
            Kind::Int => mt.int_info().is_some_and(|i| i.encoding & INT_SIGNED != 0),
            Kind::Enum | Kind::Enum64 => mt.kind_flag,
            _ => false,
        };
        out.push(Field {
            name: m.name.to_string(),
            offset: start / 8,
            ty: Type::Int {
                bits: (unit * 8) as u8,
                signed,
            },
            bitfield: Some((shift as u8, width)),
            data_loc: false,
            nul_room: false,
        });
    }
}
