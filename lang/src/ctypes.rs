//! C types as sonde sees them: tracepoint format field types, the C definitions a script
//! writes (`struct x { ... };`), and the type names usable in casts (`(uint32)x`,
//! `(struct task_struct *)arg0`, `(uint8[8])x`).
//!
//! Sizes follow the x86_64 LP64 ABI: `char` 1, `short` 2, `int` 4, `long` 8, pointers 8.
//!
//! Conventions shared with every producer of [`Record`]s (BTF readers included):
//! - `char[N]` arrays are strings: `Type::Str { size: N }`.
//! - A pointer to a record that cannot be built yet (a self-referential
//!   `struct task_struct *parent`, or a struct that is only declared) points to an *opaque*
//!   record: same name, no fields, size 0 (see [`opaque_record`]). Consumers that need its
//!   fields look the record up again by name ([`is_opaque`], [`record_ref`]).
//! - A tracepoint `__data_loc char[] x` field is `Field { ty: Str { size: 64 }, data_loc: true }`.

// `Diagnostic` is the contract's error type everywhere; boxing it would change the contract.
#![allow(clippy::result_large_err)]

use crate::ast::{BaseType, CDef, CDefKind, CField, TypeExpr};
use crate::diag::Diagnostic;
use crate::kernel::{RecordKind, TracepointField};
use crate::limits::{MAX_VALUE_SIZE, TOO_LARGE, check_value_size, too_large};
use crate::span::Span;
use crate::types::{AddrSpace, Field, Record, Type};
use std::sync::Arc;

/// The string size given to `__data_loc char[]` fields in a tracepoint's record (its value,
/// read through the locator, is a string of `max_strlen` bytes, as bpftrace's `str()` reads it:
/// the checker gives it that type).
pub const DATA_LOC_STR_SIZE: u32 = 64;

/// Looks up a struct or union by kind and tag (script definitions first, then BTF).
pub type RecordLookup<'a> = &'a dyn Fn(RecordKind, &str) -> Option<Arc<Record>>;

/// Width in bits and signedness of a named C or bpftrace scalar type (`int`, `unsigned long`,
/// `u32`, `__s16`, `uint8_t`, `pid_t`, `uint64`, ...), or `None` for an unknown name.
pub fn c_scalar(name: &str) -> Option<(u8, bool)> {
    let n = normalize(name);
    let n = n.as_str();
    let r = match n {
        "char" | "signed char" => (8, true),
        "unsigned char" => (8, false),
        "short" | "short int" | "signed short" | "signed short int" => (16, true),
        "unsigned short" | "unsigned short int" => (16, false),
        "int" | "signed" | "signed int" => (32, true),
        "unsigned" | "unsigned int" => (32, false),
        "long" | "long int" | "signed long" | "signed long int" => (64, true),
        "unsigned long" | "unsigned long int" => (64, false),
        "long long" | "long long int" | "signed long long" | "signed long long int" => (64, true),
        "unsigned long long" | "unsigned long long int" => (64, false),
        "_Bool" => (8, false),
        "size_t" | "uintptr_t" | "dma_addr_t" | "phys_addr_t" | "sector_t" | "blkcnt_t" => {
            (64, false)
        }
        "ssize_t" | "intptr_t" | "ptrdiff_t" | "off_t" | "loff_t" | "time64_t" | "ktime_t"
        | "clock_t" | "time_t" => (64, true),
        "pid_t" | "key_serial_t" | "clockid_t" | "timer_t" | "mqd_t" => (32, true),
        "uid_t" | "gid_t" | "dev_t" | "fmode_t" | "gfp_t" | "slab_flags_t" | "blk_opf_t" => {
            (32, false)
        }
        "umode_t" => (16, false),
        "u8" | "__u8" | "uint8" | "uint8_t" | "u_int8_t" => (8, false),
        "s8" | "__s8" | "int8" | "int8_t" => (8, true),
        "u16" | "__u16" | "uint16" | "uint16_t" | "u_int16_t" | "__be16" | "__le16" => (16, false),
        "s16" | "__s16" | "int16" | "int16_t" => (16, true),
        "u32" | "__u32" | "uint32" | "uint32_t" | "u_int32_t" | "__be32" | "__le32" => (32, false),
        "s32" | "__s32" | "int32" | "int32_t" => (32, true),
        "u64" | "__u64" | "uint64" | "uint64_t" | "u_int64_t" | "__be64" | "__le64" => (64, false),
        "s64" | "__s64" | "int64" | "int64_t" => (64, true),
        _ => return None,
    };
    Some(r)
}

/// Collapses whitespace and drops qualifiers that do not change a type's layout.
fn normalize(c_type: &str) -> String {
    let mut words = Vec::new();
    let spaced = c_type.replace('*', " * ");
    for w in spaced.split_whitespace() {
        match w {
            "const" | "volatile" | "__user" | "__rcu" | "__iomem" | "__percpu" | "__force"
            | "restrict" | "__restrict" => {}
            _ => words.push(w),
        }
    }
    words.join(" ")
}

/// The sonde type of a tracepoint format field, from its C type as written in the format file
/// (name removed: `const char *`, `char[16]`, `unsigned int`), its size and signedness.
///
/// Integers of any typedef take `size * 8` bits with `signed`; `T *` is a pointer (user
/// space when written `__user`, else unknown) and `char *` points to `int8`; `char[N]` is
/// `string[N]`; other `T[N]` arrays are arrays; `__data_loc char[]` is `string[64]` (the
/// caller marks the field with `data_loc`). Sizes that are no integer width become `uint8[size]`.
pub fn c_type_to_type(c_type: &str, size: u32, signed: bool) -> Type {
    let raw = c_type.trim();
    if let Some(rest) = raw.strip_prefix("__data_loc") {
        let elem = rest.trim().trim_end_matches("[]").trim();
        return match c_scalar(elem) {
            Some((8, _)) | None => Type::Str {
                size: DATA_LOC_STR_SIZE,
            },
            Some((bits, s)) => Type::Array {
                elem: Box::new(Type::Int { bits, signed: s }),
                len: DATA_LOC_STR_SIZE / u32::from(bits / 8),
            },
        };
    }
    if let Some(open) = raw.rfind('[') {
        let base = raw[..open].trim();
        let len_text = raw[open + 1..].trim_end_matches(']').trim();
        let len = len_text.parse::<u32>().ok().filter(|&l| l > 0);
        let elem_size = len.map_or(1, |l| (size / l).max(1));
        let is_char = normalize(base).ends_with("char");
        return match len {
            Some(l) if is_char => Type::Str { size: l },
            Some(l) => Type::Array {
                elem: Box::new(c_type_to_type(base, elem_size, signed)),
                len: l,
            },
            None => Type::Array {
                elem: Box::new(Type::U8),
                len: size,
            },
        };
    }
    if let Some(inner) = raw.strip_suffix('*') {
        let space = if raw.contains("__user") {
            AddrSpace::User
        } else {
            AddrSpace::Unknown
        };
        let inner = normalize(inner);
        let pointee = if inner.ends_with('*') {
            c_type_to_type(&inner, 8, false)
        } else {
            pointee_type(&inner)
        };
        return Type::Ptr {
            pointee: Box::new(pointee),
            space,
        };
    }
    if normalize(raw) == "bool" {
        return Type::Bool;
    }
    Type::int_of_size(u64::from(size), signed)
}

/// The pointee of a `T *` written in a format file: scalars by name, records opaque, else void.
fn pointee_type(inner: &str) -> Type {
    let n = normalize(inner);
    if n == "void" {
        return Type::Void;
    }
    if let Some((bits, signed)) = c_scalar(&n) {
        return Type::Int { bits, signed };
    }
    if let Some(tag) = n.strip_prefix("struct ") {
        return Type::Record(opaque_record(RecordKind::Struct, tag));
    }
    if let Some(tag) = n.strip_prefix("union ") {
        return Type::Record(opaque_record(RecordKind::Union, tag));
    }
    Type::Void
}

/// Builds the `args` record of tracepoint `category:name` from its format fields: `common_*`
/// fields are skipped, offsets are kept as in the format, the size covers every field.
pub fn tracepoint_record(category: &str, name: &str, fields: &[TracepointField]) -> Record {
    let size = fields
        .iter()
        .map(|f| f.offset.saturating_add(f.size))
        .max()
        .unwrap_or(0);
    let fields = fields
        .iter()
        .filter(|f| !f.name.starts_with("common_"))
        .map(|f| Field {
            name: f.name.clone(),
            offset: f.offset,
            ty: c_type_to_type(&f.c_type, f.size, f.signed),
            bitfield: None,
            data_loc: f.c_type.trim_start().starts_with("__data_loc"),
            nul_room: false,
        })
        .collect();
    Record {
        name: format!("tracepoint:{category}:{name}"),
        size,
        fields,
        is_union: false,
    }
}

/// The display name of a record: `struct x` or `union x`.
pub fn record_name(kind: RecordKind, tag: &str) -> String {
    match kind {
        RecordKind::Struct => format!("struct {tag}"),
        RecordKind::Union => format!("union {tag}"),
    }
}

/// An opaque stand-in for a record known only by name (see the module docs).
pub fn opaque_record(kind: RecordKind, tag: &str) -> Arc<Record> {
    Arc::new(Record {
        name: record_name(kind, tag),
        size: 0,
        fields: Vec::new(),
        is_union: kind == RecordKind::Union,
    })
}

/// True for a record made by [`opaque_record`] (no fields and size 0).
pub fn is_opaque(r: &Record) -> bool {
    r.fields.is_empty() && r.size == 0
}

/// Splits a record name (`struct task_struct`) into its kind and tag.
pub fn record_ref(r: &Record) -> Option<(RecordKind, &str)> {
    if let Some(tag) = r.name.strip_prefix("struct ") {
        Some((RecordKind::Struct, tag))
    } else {
        r.name
            .strip_prefix("union ")
            .map(|tag| (RecordKind::Union, tag))
    }
}

/// C alignment of a type (records: the largest alignment of their fields).
pub fn c_align(t: &Type) -> u32 {
    match t {
        Type::Record(r) => r.fields.iter().map(|f| c_align(&f.ty)).max().unwrap_or(1),
        Type::Array { elem, .. } => c_align(elem),
        Type::Tuple(items) => items.iter().map(c_align).max().unwrap_or(1),
        other => other.align(),
    }
}

/// The type a [`TypeExpr`] denotes, as written in a cast, `let`, `sizeof` or C field.
///
/// `string[N]` is `Str { size: N }` (bare `string` gets [`DATA_LOC_STR_SIZE`]; the checker
/// substitutes `max_strlen` itself). Records come from `lookup`; behind a pointer an unknown
/// record is opaque, by value it is an error (`sonde::sema::unknown_record`). Unknown type
/// names are `sonde::sema::unknown_type`. A string or array larger than
/// [`MAX_VALUE_SIZE`](crate::limits::MAX_VALUE_SIZE) bytes is `sonde::sema::too_large` (its
/// size computed without overflow).
pub fn c_decl_type(ty: &TypeExpr, lookup: RecordLookup<'_>) -> Result<Type, Diagnostic> {
    let base = match &ty.base {
        BaseType::String => {
            let Some(n) = ty.array else {
                return Ok(Type::Str {
                    size: DATA_LOC_STR_SIZE,
                });
            };
            check_value_size(ty.span, &format!("`string[{n}]`"), n)?;
            return Ok(Type::Str { size: n as u32 });
        }
        BaseType::Named(name) => named_type(name, ty)?,
        BaseType::Enum(tag) => Type::Enum {
            name: tag.clone(),
            bits: 32,
        },
        BaseType::Struct(tag) => record_type(RecordKind::Struct, tag, ty, lookup)?,
        BaseType::Union(tag) => record_type(RecordKind::Union, tag, ty, lookup)?,
        // The checker resolves `typeof(expr)` itself; C declarations cannot hold one.
        BaseType::Typeof(_) => {
            return Err(Diagnostic::error(
                "sonde::sema::unknown_type",
                ty.span,
                "`typeof(...)` cannot be used here",
            )
            .with_label("not allowed in a C declaration")
            .with_help("write the type itself"));
        }
    };
    with_suffix(base, ty)
}

/// `base` with the stars and array length `ty` writes after its base (`T *`, `T[N]`; a
/// `char[N]` is a string).
pub fn with_suffix(base: Type, ty: &TypeExpr) -> Result<Type, Diagnostic> {
    let mut t = base;
    for _ in 0..ty.pointer_depth {
        t = Type::Ptr {
            pointee: Box::new(t),
            space: AddrSpace::Unknown,
        };
    }
    if let Some(n) = ty.array {
        let what = if is_char(ty) {
            format!("`char[{n}]`")
        } else {
            format!("`{t}[{n}]`")
        };
        let bytes = u64::from(t.size()).saturating_mul(n);
        check_value_size(ty.span, &what, bytes)?;
        // Within the limit, so within u32 unless the elements are empty (`void[N]`).
        let len = u32::try_from(n)
            .map_err(|_| too_large(ty.span, &what, n, MAX_VALUE_SIZE, "elements"))?;
        t = match t {
            Type::Int { bits: 8, .. } if is_char(ty) => Type::Str { size: len },
            elem => Type::Array {
                elem: Box::new(elem),
                len,
            },
        };
    }
    Ok(t)
}

/// True when the base is `char`/`unsigned char`/`signed char` with no pointer.
fn is_char(ty: &TypeExpr) -> bool {
    ty.pointer_depth == 0
        && matches!(&ty.base, BaseType::Named(n) if normalize(n).ends_with("char"))
}

/// A named scalar (`bool`, `void`, integers).
fn named_type(name: &str, ty: &TypeExpr) -> Result<Type, Diagnostic> {
    let n = normalize(name);
    match n.as_str() {
        "void" => return Ok(Type::Void),
        "bool" => return Ok(Type::Bool),
        // bpftrace's user id that prints as the user's name (`(username_t)1000`).
        "username_t" => return Ok(Type::Username),
        _ => {}
    }
    match c_scalar(&n) {
        Some((bits, signed)) => Ok(Type::Int { bits, signed }),
        None => Err(Diagnostic::error(
            "sonde::sema::unknown_type",
            ty.span,
            format!("unknown type `{name}`"),
        )
        .with_label("not a known type")
        .with_help("use an integer type such as `uint64`, `int32` or `u8`, or `struct name`")),
    }
}

/// A struct or union by tag: from `lookup`, or opaque behind a pointer.
fn record_type(
    kind: RecordKind,
    tag: &str,
    ty: &TypeExpr,
    lookup: RecordLookup<'_>,
) -> Result<Type, Diagnostic> {
    match lookup(kind, tag) {
        Some(r) => Ok(Type::Record(r)),
        None if ty.pointer_depth > 0 => Ok(Type::Record(opaque_record(kind, tag))),
        None => Err(Diagnostic::error(
            "sonde::sema::unknown_record",
            ty.span,
            format!("unknown {}", record_name(kind, tag)),
        )
        .with_label("not defined in the script nor in kernel BTF")
        .with_help("define it before the probes, e.g. `struct x { int a; };`")),
    }
}

/// Lays out a script's `struct`/`union` definition like a C compiler on x86_64: each field
/// aligned to its natural alignment, the size rounded up to the largest alignment; union
/// fields all at offset 0. Nested records come from `lookup`.
///
/// Sizes are computed in `u64`; a field, or the record, larger than
/// [`MAX_VALUE_SIZE`](crate::limits::MAX_VALUE_SIZE) is `sonde::sema::too_large` on the
/// field (`char name[N]`) or on the definition.
pub fn record_from_cdef(def: &CDef, lookup: RecordLookup<'_>) -> Result<Record, Diagnostic> {
    let kind = match def.kind {
        CDefKind::Union => RecordKind::Union,
        _ => RecordKind::Struct,
    };
    let union = kind == RecordKind::Union;
    let name = record_name(kind, &def.name);
    let mut fields = Vec::with_capacity(def.fields.len());
    // The next free bit (structs), the size so far and the largest alignment, in bytes.
    let mut bit = 0u64;
    let mut size = 0u64;
    let mut max_align = 1u64;
    for cf in &def.fields {
        // The field's declaration as written: `char name` (its `[N]` follows the name).
        let field_span = Span::new(cf.ty.span.start, cf.name.span.end.max(cf.ty.span.end));
        let ty = field_type(cf, lookup).map_err(|mut d| {
            if d.code == TOO_LARGE {
                d.span = field_span;
            }
            d
        })?;
        let fsize = u64::from(ty.size());
        let falign = if def.packed {
            1
        } else {
            u64::from(c_align(&ty).max(1))
        };
        let unnamed = cf.name.name.is_empty() && cf.inline.is_none();
        // An unnamed bit-field pads: it does not align the record (as GCC on x86_64).
        if !unnamed {
            max_align = max_align.max(falign);
        }
        if let Some(width) = cf.bits {
            let width = u64::from(width);
            let unit = fsize * 8;
            if unnamed && width == 0 && ty.is_integer() {
                // `int :0;`: the next bit-field starts in a new unit of its type.
                if !union && !def.packed {
                    bit = bit.div_ceil(unit) * unit;
                }
                continue;
            }
            if width == 0 || width > unit || !ty.is_integer() {
                return Err(Diagnostic::error(
                    "sonde::sema::bitfield",
                    field_span,
                    match unnamed {
                        true => "invalid unnamed bit-field".to_string(),
                        false => format!("invalid bit-field `{}`", cf.name.name),
                    },
                )
                .with_label(format!("{width} bits of {ty}"))
                .with_help("a bit-field is an integer field of 1 to its type's size in bits"));
            }
            // As GCC lays them out: in the storage unit of its type where it starts, or the
            // next one when it would straddle two (packed: anywhere).
            let start = if union {
                0
            } else if !def.packed && bit % unit + width > unit {
                bit.div_ceil(unit) * unit
            } else {
                bit
            };
            if !union {
                bit = start + width;
            }
            size = size.max((start + width).div_ceil(8));
            if unnamed {
                continue;
            }
            let shift = start % 8;
            let load = [8u64, 16, 32, 64]
                .into_iter()
                .find(|b| *b >= shift + width)
                .ok_or_else(|| {
                    Diagnostic::error(
                        "sonde::sema::bitfield",
                        field_span,
                        format!("bit-field `{}` spans more than 8 bytes", cf.name.name),
                    )
                    .with_label("not supported in a packed struct")
                })?;
            fields.push(Field {
                name: cf.name.name.clone(),
                offset: (start / 8) as u32,
                ty: Type::Int {
                    bits: load as u8,
                    signed: ty.is_signed(),
                },
                bitfield: Some((shift as u8, width as u8)),
                data_loc: false,
                nul_room: false,
            });
            continue;
        }
        let offset = if union {
            0
        } else {
            bit.div_ceil(8).div_ceil(falign).saturating_mul(falign)
        };
        let end = offset.saturating_add(fsize);
        if !union {
            bit = end.saturating_mul(8);
        }
        size = size.max(end);
        check_value_size(
            field_span,
            &format!("{name} up to field `{}`", cf.name.name),
            end,
        )?;
        match (&ty, cf.name.name.is_empty()) {
            // An anonymous struct or union: its fields are this record's.
            (Type::Record(inner), true) => fields.extend(inner.fields.iter().map(|f| Field {
                offset: f.offset + offset as u32,
                ..f.clone()
            })),
            _ => {
                // `char name[N]`: a `string[N + 1]` (bpftrace's C parser), read as N bytes.
                let nul_room = is_char(&cf.ty) && matches!(ty, Type::Str { .. });
                let ty = match ty {
                    Type::Str { size } if nul_room => Type::Str { size: size + 1 },
                    t => t,
                };
                fields.push(Field {
                    name: cf.name.name.clone(),
                    offset: offset as u32,
                    ty,
                    bitfield: None,
                    data_loc: false,
                    nul_room,
                })
            }
        }
    }
    let size = size.div_ceil(max_align).saturating_mul(max_align);
    check_value_size(def.span, &name, size)?;
    Ok(Record {
        name,
        size: size as u32,
        fields,
        is_union: union,
    })
}

/// The type of a field: its struct or union defined in place, or its declared type with
/// every array dimension (`int x[2][3]` is an array of 2 arrays of 3).
fn field_type(cf: &CField, lookup: RecordLookup<'_>) -> Result<Type, Diagnostic> {
    if let Some(inner) = &cf.inline {
        // `struct { ... } *p, a[2]`: the record behind the declarator's `*`s and dimensions.
        let mut t = Type::Record(Arc::new(record_from_cdef(inner, lookup)?));
        for _ in 0..cf.ty.pointer_depth {
            t = Type::Ptr {
                pointee: Box::new(t),
                space: AddrSpace::Unknown,
            };
        }
        for n in cf.ty.array.iter().chain(&cf.dims).rev() {
            let len = u32::try_from(*n).unwrap_or(u32::MAX);
            check_value_size(
                cf.ty.span,
                "this array",
                u64::from(t.size()).saturating_mul(u64::from(len)),
            )?;
            t = Type::Array {
                elem: Box::new(t),
                len,
            };
        }
        return Ok(t);
    }
    let Some((last, outer)) = cf.dims.split_last() else {
        return c_decl_type(&cf.ty, lookup);
    };
    let innermost = TypeExpr {
        array: Some(*last),
        ..cf.ty.clone()
    };
    let mut t = c_decl_type(&innermost, lookup)?;
    for n in cf.ty.array.iter().chain(outer).rev() {
        let len = u32::try_from(*n).unwrap_or(u32::MAX);
        t = Type::Array {
            elem: Box::new(t),
            len,
        };
        check_value_size(cf.ty.span, "this array", u64::from(t.size()))?;
    }
    Ok(t)
}

#[cfg(test)]
#[path = "ctypes_tests.rs"]
mod tests;
