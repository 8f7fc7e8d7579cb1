//! The codecs of the header's contents: `Type` (with records shared across the header),
//! `AggKind`, `EventSpec` and `MapSpec`.

use super::MAX_TYPE_DEPTH;
use super::codec::{
    Cursor, Result, len32, put_bool, put_count, put_i64, put_str, put_u8, put_u32, put_u64,
};
use sonde_compiler::catalog::aggs::tseries::MAX_INTERVALS;
use sonde_compiler::program::{EventSpec, MapKind, MapRole, MapSpec};
use sonde_lang::types::{AddrSpace, AggKind, Field, Record, StackMode, TseriesAgg, Type};
use std::collections::HashMap;
use std::io;
use std::sync::Arc;

/// `Type` tags.
mod tag {
    pub const VOID: u8 = 0;
    pub const BOOL: u8 = 1;
    pub const INT: u8 = 2;
    pub const STR: u8 = 3;
    pub const BUF: u8 = 4;
    pub const PTR: u8 = 5;
    pub const RECORD_DEF: u8 = 6;
    pub const ARRAY: u8 = 7;
    pub const TUPLE: u8 = 8;
    pub const ENUM: u8 = 9;
    pub const STACK: u8 = 10;
    pub const SYMBOL: u8 = 11;
    pub const INET: u8 = 12;
    pub const MACADDR: u8 = 13;
    pub const TIMESTAMP: u8 = 14;
    pub const USERNAME: u8 = 15;
    pub const CGROUP_PATH: u8 = 16;
    pub const AGG: u8 = 17;
    pub const RECORD_REF: u8 = 18;
    pub const CGROUP_PATH_FILTERED: u8 = 19;
}

/// Writes types, each shared record once (numbered in the order its definition ends).
#[derive(Default)]
pub(crate) struct TypeEncoder {
    /// Records already written, by address (the header's `Arc`s outlive the encoder).
    records: HashMap<*const Record, u32>,
}

impl TypeEncoder {
    /// Appends `t`.
    pub(crate) fn ty(&mut self, out: &mut Vec<u8>, t: &Type) -> io::Result<()> {
        self.ty_at(out, t, 0)
    }

    fn ty_at(&mut self, out: &mut Vec<u8>, t: &Type, depth: u32) -> io::Result<()> {
        if depth >= MAX_TYPE_DEPTH {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("a type nests more than {MAX_TYPE_DEPTH} deep"),
            ));
        }
        let depth = depth + 1;
        match t {
            Type::Void => put_u8(out, tag::VOID),
            Type::Bool => put_u8(out, tag::BOOL),
            Type::Int { bits, signed } => {
                put_u8(out, tag::INT);
                put_u8(out, *bits);
                put_bool(out, *signed);
            }
            Type::Str { size } => {
                put_u8(out, tag::STR);
                put_u32(out, *size);
            }
            Type::Buf { size } => {
                put_u8(out, tag::BUF);
                put_u32(out, *size);
            }
            Type::Ptr { pointee, space } => {
                put_u8(out, tag::PTR);
                self.ty_at(out, pointee, depth)?;
                put_u8(
                    out,
                    match space {
                        AddrSpace::Kernel => 0,
                        AddrSpace::User => 1,
                        AddrSpace::Unknown => 2,
                    },
                );
            }
            Type::Record(r) => {
                if let Some(&id) = self.records.get(&Arc::as_ptr(r)) {
                    put_u8(out, tag::RECORD_REF);
                    put_u32(out, id);
                } else {
                    put_u8(out, tag::RECORD_DEF);
                    put_str(out, &r.name)?;
                    put_u32(out, r.size);
                    put_bool(out, r.is_union);
                    put_count(out, r.fields.len())?;
                    for f in &r.fields {
                        put_str(out, &f.name)?;
                        put_u32(out, f.offset);
                        self.ty_at(out, &f.ty, depth)?;
                        put_bool(out, f.bitfield.is_some());
                        if let Some((off, width)) = f.bitfield {
                            put_u8(out, off);
                            put_u8(out, width);
                        }
                        put_bool(out, f.data_loc);
                    }
                    let id = len32(self.records.len(), "the number of records")?;
                    self.records.insert(Arc::as_ptr(r), id);
                }
            }
            Type::Array { elem, len } => {
                put_u8(out, tag::ARRAY);
                self.ty_at(out, elem, depth)?;
                put_u32(out, *len);
            }
            Type::Tuple(items) => {
                put_u8(out, tag::TUPLE);
                self.types_at(out, items, depth)?;
            }
            Type::Enum { name, bits } => {
                put_u8(out, tag::ENUM);
                put_str(out, name)?;
                put_u8(out, *bits);
            }
            Type::Stack {
                kernel,
                mode,
                limit,
            } => {
                put_u8(out, tag::STACK);
                put_bool(out, *kernel);
                put_u8(
                    out,
                    match mode {
                        StackMode::Bpftrace => 0,
                        StackMode::Perf => 1,
                        StackMode::Raw => 2,
                        StackMode::BuildId => 3,
                    },
                );
                put_u32(out, *limit);
            }
            Type::Symbol { kernel } => {
                put_u8(out, tag::SYMBOL);
                put_bool(out, *kernel);
            }
            Type::Inet => put_u8(out, tag::INET),
            Type::MacAddr => put_u8(out, tag::MACADDR),
            Type::Timestamp => put_u8(out, tag::TIMESTAMP),
            Type::Username => put_u8(out, tag::USERNAME),
            Type::CgroupPath { filter: None } => put_u8(out, tag::CGROUP_PATH),
            Type::CgroupPath {
                filter: Some(filter),
            } => {
                put_u8(out, tag::CGROUP_PATH_FILTERED);
                put_str(out, filter)?;
            }
            Type::Agg(k) => {
                put_u8(out, tag::AGG);
                put_agg(out, k);
            }
        }
        Ok(())
    }

    /// Appends a `list<Type>`.
    pub(crate) fn types(&mut self, out: &mut Vec<u8>, items: &[Type]) -> io::Result<()> {
        self.types_at(out, items, 0)
    }

    fn types_at(&mut self, out: &mut Vec<u8>, items: &[Type], depth: u32) -> io::Result<()> {
        put_count(out, items.len())?;
        for t in items {
            self.ty_at(out, t, depth)?;
        }
        Ok(())
    }

    /// Appends an `EventSpec`.
    pub(crate) fn event(&mut self, out: &mut Vec<u8>, e: &EventSpec) -> io::Result<()> {
        match e {
            EventSpec::Printf { format, args } => {
                put_u8(out, 0);
                put_str(out, format)?;
                self.types(out, args)?;
            }
            EventSpec::PrintValue { ty } => {
                put_u8(out, 1);
                self.ty(out, ty)?;
            }
            EventSpec::PrintMap { map, top, div } => {
                put_u8(out, 2);
                put_str(out, map)?;
                put_u64(out, *top);
                put_u64(out, *div);
            }
            EventSpec::ClearMap { map } => {
                put_u8(out, 3);
                put_str(out, map)?;
            }
            EventSpec::ZeroMap { map } => {
                put_u8(out, 4);
                put_str(out, map)?;
            }
            EventSpec::Time { format } => {
                put_u8(out, 5);
                put_str(out, format)?;
            }
            EventSpec::Cat { format, args } => {
                put_u8(out, 6);
                put_str(out, format)?;
                self.types(out, args)?;
            }
            EventSpec::System { format, args } => {
                put_u8(out, 7);
                put_str(out, format)?;
                self.types(out, args)?;
            }
            EventSpec::Join {
                sep,
                count,
                elem_size,
            } => {
                put_u8(out, 8);
                put_str(out, sep)?;
                put_u32(out, *count);
                put_u32(out, *elem_size);
            }
            EventSpec::Exit => put_u8(out, 9),
            EventSpec::Log {
                error,
                format,
                args,
                span,
            } => {
                put_u8(out, 11);
                put_u8(out, u8::from(*error));
                put_str(out, format)?;
                self.types(out, args)?;
                put_u64(out, span.start as u64);
                put_u64(out, span.end as u64);
            }
            EventSpec::HelperError { helper, span } => {
                put_u8(out, 10);
                put_str(out, helper)?;
                put_u64(out, span.start as u64);
                put_u64(out, span.end as u64);
            }
        }
        Ok(())
    }

    /// Appends a `MapSpec`.
    pub(crate) fn map(&mut self, out: &mut Vec<u8>, m: &MapSpec) -> io::Result<()> {
        put_str(out, &m.symbol)?;
        put_u8(
            out,
            match m.kind {
                MapKind::Hash => 0,
                MapKind::PerCpuHash => 1,
                MapKind::Array => 2,
                MapKind::PerCpuArray => 3,
                MapKind::RingBuf => 4,
                MapKind::StackTrace => 5,
                MapKind::ProgArray => 6,
                MapKind::LruHash => 7,
                MapKind::LruPerCpuHash => 8,
                MapKind::BuildIdStackTrace => 9,
            },
        );
        put_u32(out, m.key_size);
        put_u32(out, m.value_size);
        put_u32(out, m.max_entries);
        match &m.role {
            MapRole::User { name, key, value } => {
                put_u8(out, 0);
                put_str(out, name)?;
                put_bool(out, key.is_some());
                if let Some(k) = key {
                    self.ty(out, k)?;
                }
                self.ty(out, value)?;
            }
            MapRole::Events => put_u8(out, 1),
            MapRole::Scratch => put_u8(out, 2),
            MapRole::Stacks { kernel } => {
                put_u8(out, 3);
                put_bool(out, *kernel);
            }
            MapRole::Counters => put_u8(out, 4),
            MapRole::SyscallTable => put_u8(out, 5),
            MapRole::Delta => put_u8(out, 6),
            MapRole::BuildIdStacks => put_u8(out, 7),
        }
        Ok(())
    }
}

fn put_agg(out: &mut Vec<u8>, k: &AggKind) {
    let signed = |out: &mut Vec<u8>, tag: u8, s: bool| {
        put_u8(out, tag);
        put_bool(out, s);
    };
    match k {
        AggKind::Count => put_u8(out, 0),
        AggKind::Sum { signed: s } => signed(out, 1, *s),
        AggKind::Avg { signed: s } => signed(out, 2, *s),
        AggKind::Min { signed: s } => signed(out, 3, *s),
        AggKind::Max { signed: s } => signed(out, 4, *s),
        AggKind::Stats { signed: s } => signed(out, 5, *s),
        AggKind::Hist { bits } => {
            put_u8(out, 6);
            put_u8(out, *bits);
        }
        AggKind::Lhist { min, max, step } => {
            put_u8(out, 7);
            put_i64(out, *min);
            put_i64(out, *max);
            put_i64(out, *step);
        }
        AggKind::Tseries {
            interval_ns,
            num_intervals,
            agg,
            signed: s,
        } => {
            put_u8(out, 8);
            put_i64(out, *interval_ns as i64);
            put_i64(out, i64::from(*num_intervals));
            put_u8(out, tseries_agg_tag(*agg));
            put_bool(out, *s);
        }
    }
}

/// Reads types, resolving references to records defined earlier in the header.
#[derive(Default)]
pub(crate) struct TypeDecoder {
    records: Vec<Arc<Record>>,
}

/// Smallest encoded size of a `Type` (its tag).
const MIN_TYPE: usize = 1;

impl TypeDecoder {
    /// Reads a `Type`.
    pub(crate) fn ty(&mut self, c: &mut Cursor<'_>) -> Result<Type> {
        self.ty_at(c, 0)
    }

    /// One field of a record definition.
    fn field_at(&mut self, c: &mut Cursor<'_>, depth: u32) -> Result<Field> {
        let name = c.string("a field name")?;
        let offset = c.u32("a field offset")?;
        let ty = self.ty_at(c, depth)?;
        let bitfield = c.option("a bitfield flag", |c| {
            Ok((c.u8("a bit offset")?, c.u8("a bit width")?))
        })?;
        let data_loc = c.bool("a data_loc flag")?;
        Ok(Field {
            name,
            offset,
            ty,
            bitfield,
            data_loc,
            // Only lowering reads it; a recording's records are only printed.
            nul_room: false,
        })
    }

    fn ty_at(&mut self, c: &mut Cursor<'_>, depth: u32) -> Result<Type> {
        let at = c.offset();
        if depth >= MAX_TYPE_DEPTH {
            return Err(c.error(format!("a type nests more than {MAX_TYPE_DEPTH} deep")));
        }
        let depth = depth + 1;
        let ty = match c.u8("a type tag")? {
            tag::VOID => Type::Void,
            tag::BOOL => Type::Bool,
            tag::INT => Type::Int {
                bits: c.u8("an integer width")?,
                signed: c.bool("an integer signedness")?,
            },
            tag::STR => Type::Str {
                size: c.u32("a string size")?,
            },
            tag::BUF => Type::Buf {
                size: c.u32("a buffer size")?,
            },
            tag::PTR => {
                let pointee = Box::new(self.ty_at(c, depth)?);
                let space_at = c.offset();
                let space = match c.u8("an address space")? {
                    0 => AddrSpace::Kernel,
                    1 => AddrSpace::User,
                    2 => AddrSpace::Unknown,
                    s => return Err(c.error_at(space_at, format!("unknown address space {s}"))),
                };
                Type::Ptr { pointee, space }
            }
            tag::RECORD_DEF => {
                let name = c.string("a record name")?;
                let size = c.u32("a record size")?;
                let is_union = c.bool("a record's union flag")?;
                // name (4) + offset (4) + type (1) + bitfield (1) + data_loc (1)
                let fields = c.list(11, "a record's field count", |c| self.field_at(c, depth))?;
                let r = Arc::new(Record {
                    name,
                    size,
                    fields,
                    is_union,
                });
                self.records.push(r.clone());
                Type::Record(r)
            }
            tag::RECORD_REF => {
                let id_at = c.offset();
                let id = c.u32("a record number")?;
                match self.records.get(id as usize) {
                    Some(r) => Type::Record(r.clone()),
                    None => {
                        return Err(c.error_at(
                            id_at,
                            format!(
                                "record number {id} is not defined (only {} are)",
                                self.records.len()
                            ),
                        ));
                    }
                }
            }
            tag::ARRAY => Type::Array {
                elem: Box::new(self.ty_at(c, depth)?),
                len: c.u32("an array length")?,
            },
            tag::TUPLE => Type::Tuple(self.types_at(c, depth)?),
            tag::ENUM => Type::Enum {
                name: c.string("an enum name")?,
                bits: c.u8("an enum width")?,
            },
            tag::STACK => {
                let kernel = c.bool("a stack's kernel flag")?;
                let mode_at = c.offset();
                let mode = match c.u8("a stack mode")? {
                    0 => StackMode::Bpftrace,
                    1 => StackMode::Perf,
                    2 => StackMode::Raw,
                    3 => StackMode::BuildId,
                    m => return Err(c.error_at(mode_at, format!("unknown stack mode {m}"))),
                };
                let limit = c.u32("a stack limit")?;
                Type::Stack {
                    kernel,
                    mode,
                    limit,
                }
            }
            tag::SYMBOL => Type::Symbol {
                kernel: c.bool("a symbol's kernel flag")?,
            },
            tag::INET => Type::Inet,
            tag::MACADDR => Type::MacAddr,
            tag::TIMESTAMP => Type::Timestamp,
            tag::USERNAME => Type::Username,
            tag::CGROUP_PATH => Type::CgroupPath { filter: None },
            tag::CGROUP_PATH_FILTERED => Type::CgroupPath {
                filter: Some(c.string("a cgroup_path filter")?),
            },
            tag::AGG => Type::Agg(agg(c)?),
            t => return Err(c.error_at(at, format!("unknown type tag {t}"))),
        };
        check_type(&ty).map_err(|m| c.error_at(at, m))?;
        Ok(ty)
    }

    /// Reads a `Type` that values are decoded with (not only pointed to).
    fn value_ty(&mut self, c: &mut Cursor<'_>) -> Result<Type> {
        let at = c.offset();
        let ty = self.ty(c)?;
        check_value_count(&ty).map_err(|m| c.error_at(at, m))?;
        Ok(ty)
    }

    /// Reads the `list<Type>` of an event's arguments, which are laid out as a tuple.
    fn arg_types(&mut self, c: &mut Cursor<'_>) -> Result<Vec<Type>> {
        let at = c.offset();
        let args = c.list(MIN_TYPE, "a type count", |c| self.value_ty(c))?;
        let all = Type::Tuple(args.clone());
        check_type(&all)
            .and_then(|()| check_value_count(&all))
            .map_err(|m| c.error_at(at, m))?;
        Ok(args)
    }

    /// Reads a `list<Type>`.
    fn types_at(&mut self, c: &mut Cursor<'_>, depth: u32) -> Result<Vec<Type>> {
        c.list(MIN_TYPE, "a type count", |c| self.ty_at(c, depth))
    }

    /// Reads an `EventSpec`.
    pub(crate) fn event(&mut self, c: &mut Cursor<'_>) -> Result<EventSpec> {
        let at = c.offset();
        Ok(match c.u8("an event kind")? {
            0 => EventSpec::Printf {
                format: c.string("a printf format")?,
                args: self.arg_types(c)?,
            },
            1 => EventSpec::PrintValue {
                ty: self.value_ty(c)?,
            },
            2 => EventSpec::PrintMap {
                map: c.string("a map name")?,
                top: c.u64("print's top")?,
                div: c.u64("print's div")?,
            },
            3 => EventSpec::ClearMap {
                map: c.string("a map name")?,
            },
            4 => EventSpec::ZeroMap {
                map: c.string("a map name")?,
            },
            5 => EventSpec::Time {
                format: c.string("a time format")?,
            },
            6 => EventSpec::Cat {
                format: c.string("a cat format")?,
                args: self.arg_types(c)?,
            },
            7 => EventSpec::System {
                format: c.string("a system format")?,
                args: self.arg_types(c)?,
            },
            8 => EventSpec::Join {
                sep: c.string("a join separator")?,
                count: c.u32("a join count")?,
                elem_size: c.u32("a join element size")?,
            },
            9 => EventSpec::Exit,
            10 => EventSpec::HelperError {
                helper: c.string("a helper name")?,
                span: {
                    let start = c.u64("a span start")?;
                    let end = c.u64("a span end")?;
                    sonde_lang::span::Span::new(
                        usize::try_from(start).unwrap_or(usize::MAX),
                        usize::try_from(end).unwrap_or(usize::MAX),
                    )
                },
            },
            11 => EventSpec::Log {
                error: c.u8("a log level")? != 0,
                format: c.string("a log format")?,
                args: self.arg_types(c)?,
                span: {
                    let start = c.u64("a span start")?;
                    let end = c.u64("a span end")?;
                    sonde_lang::span::Span::new(
                        usize::try_from(start).unwrap_or(usize::MAX),
                        usize::try_from(end).unwrap_or(usize::MAX),
                    )
                },
            },
            k => return Err(c.error_at(at, format!("unknown event kind {k}"))),
        })
    }

    /// Reads a `MapSpec`.
    pub(crate) fn map(&mut self, c: &mut Cursor<'_>) -> Result<MapSpec> {
        let symbol = c.string("a map symbol")?;
        let kind_at = c.offset();
        let kind = match c.u8("a map kind")? {
            0 => MapKind::Hash,
            1 => MapKind::PerCpuHash,
            2 => MapKind::Array,
            3 => MapKind::PerCpuArray,
            4 => MapKind::RingBuf,
            5 => MapKind::StackTrace,
            6 => MapKind::ProgArray,
            7 => MapKind::LruHash,
            8 => MapKind::LruPerCpuHash,
            9 => MapKind::BuildIdStackTrace,
            k => return Err(c.error_at(kind_at, format!("unknown map kind {k}"))),
        };
        let key_size = c.u32("a map key size")?;
        let value_size = c.u32("a map value size")?;
        let max_entries = c.u32("a map's max entries")?;
        let role_at = c.offset();
        let role = match c.u8("a map role")? {
            0 => MapRole::User {
                name: c.string("a map name")?,
                key: c.option("a map key flag", |c| self.value_ty(c))?,
                value: self.value_ty(c)?,
            },
            1 => MapRole::Events,
            2 => MapRole::Scratch,
            3 => MapRole::Stacks {
                kernel: c.bool("a stack map's kernel flag")?,
            },
            4 => MapRole::Counters,
            5 => MapRole::SyscallTable,
            6 => MapRole::Delta,
            7 => MapRole::BuildIdStacks,
            r => return Err(c.error_at(role_at, format!("unknown map role {r}"))),
        };
        Ok(MapSpec {
            symbol,
            kind,
            key_size,
            value_size,
            max_entries,
            role,
        })
    }
}

/// Most values (elements, fields, items, counted with their containers) that decoding one
/// value of a header's type may build. Sonde builds its values in BPF maps and sends events
/// through a 1 MiB ring buffer, so a real type stays far below; a corrupt one could ask for
/// billions (an array of 2^32 - 1 empty records).
const MAX_DECODED_VALUES: u64 = 1 << 20;

/// Checks, one level deep (the parts were checked as they were read), what decoding and
/// printing values of `ty` rely on: integer widths, bit fields within 64 bits, and a size
/// that fits in 32 bits (`Type::size` computes it in a `u32`).
fn check_type(ty: &Type) -> std::result::Result<(), String> {
    let too_big = |what: &str, size: u64| {
        Err(format!(
            "{what} of {size} bytes is larger than any value sonde makes (the file is corrupt)"
        ))
    };
    match ty {
        Type::Int { bits, .. } | Type::Enum { bits, .. }
            if *bits % 8 != 0 || !(8..=64).contains(bits) =>
        {
            Err(format!(
                "an integer of {bits} bits (sonde's are whole bytes, 8 to 64 bits; the file is corrupt)"
            ))
        }
        Type::Record(r) => {
            for f in &r.fields {
                if let Some((bit, width)) = f.bitfield
                    && (width == 0 || u32::from(bit) + u32::from(width) > 64)
                {
                    return Err(format!(
                        "field `{}` is a bit field of {width} bits at bit {bit}, outside 64 bits \
                         (the file is corrupt)",
                        f.name
                    ));
                }
            }
            Ok(())
        }
        Type::Array { elem, len } => {
            let size = u64::from(elem.size()) * u64::from(*len);
            if size > u64::from(u32::MAX) {
                return too_big("an array", size);
            }
            Ok(())
        }
        Type::Tuple(items) => {
            // `tuple_layout`, in 64 bits.
            let (mut off, mut align) = (0u64, 1u64);
            for t in items {
                let a = u64::from(t.align().max(1));
                align = align.max(a);
                off = off.div_ceil(a) * a + u64::from(t.size());
            }
            let size = off.div_ceil(align) * align;
            if size > u64::from(u32::MAX) {
                return too_big("a tuple", size);
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Checks that decoding one value of `ty` builds at most [`MAX_DECODED_VALUES`] values.
fn check_value_count(ty: &Type) -> std::result::Result<(), String> {
    let mut left = MAX_DECODED_VALUES;
    if count_values(ty, &mut left) {
        Ok(())
    } else {
        Err(format!(
            "decoding a value of this type would build more than {MAX_DECODED_VALUES} values \
             (the file is corrupt)"
        ))
    }
}

/// Takes the number of values decoding `ty` builds from `left`; false when there are not
/// enough. Pointees are not decoded. Each value visited costs at least one, so this stops
/// after at most [`MAX_DECODED_VALUES`] steps, however records are shared.
fn count_values(ty: &Type, left: &mut u64) -> bool {
    let Some(l) = left.checked_sub(1) else {
        return false;
    };
    *left = l;
    match ty {
        Type::Array { elem, len } if *len > 0 => {
            let before = *left;
            if !count_values(elem, left) {
                return false;
            }
            let rest = (before - *left).checked_mul(u64::from(*len - 1));
            match rest {
                Some(r) if r <= *left => {
                    *left -= r;
                    true
                }
                _ => false,
            }
        }
        Type::Tuple(items) => items.iter().all(|t| count_values(t, left)),
        Type::Record(r) => r.fields.iter().all(|f| count_values(&f.ty, left)),
        _ => true,
    }
}

fn agg(c: &mut Cursor<'_>) -> Result<AggKind> {
    let at = c.offset();
    Ok(match c.u8("an aggregation kind")? {
        0 => AggKind::Count,
        1 => AggKind::Sum {
            signed: c.bool("a sum's signedness")?,
        },
        2 => AggKind::Avg {
            signed: c.bool("an avg's signedness")?,
        },
        3 => AggKind::Min {
            signed: c.bool("a min's signedness")?,
        },
        4 => AggKind::Max {
            signed: c.bool("a max's signedness")?,
        },
        5 => AggKind::Stats {
            signed: c.bool("a stats' signedness")?,
        },
        6 => AggKind::Hist {
            bits: c.u8("a hist's bits")?,
        },
        7 => AggKind::Lhist {
            min: c.i64("an lhist's min")?,
            max: c.i64("an lhist's max")?,
            step: c.i64("an lhist's step")?,
        },
        8 => {
            let interval_ns = c.i64("a tseries' interval")? as u64;
            let at_n = c.offset();
            let num_intervals = u32::try_from(c.i64("a tseries' number of intervals")?)
                .ok()
                .filter(|n| (1..=MAX_INTERVALS).contains(n))
                .ok_or_else(|| {
                    c.error_at(at_n, "a tseries' number of intervals is out of range")
                })?;
            let at_agg = c.offset();
            let agg = match c.u8("a tseries' aggregation")? {
                0 => TseriesAgg::Last,
                1 => TseriesAgg::Avg,
                2 => TseriesAgg::Max,
                3 => TseriesAgg::Min,
                4 => TseriesAgg::Sum,
                a => return Err(c.error_at(at_agg, format!("unknown tseries aggregation {a}"))),
            };
            AggKind::Tseries {
                interval_ns,
                num_intervals,
                agg,
                signed: c.bool("a tseries' signedness")?,
            }
        }
        k => return Err(c.error_at(at, format!("unknown aggregation kind {k}"))),
    })
}

/// The tag of a `tseries()` aggregation in a recording.
fn tseries_agg_tag(a: TseriesAgg) -> u8 {
    match a {
        TseriesAgg::Last => 0,
        TseriesAgg::Avg => 1,
        TseriesAgg::Max => 2,
        TseriesAgg::Min => 3,
        TseriesAgg::Sum => 4,
    }
}

#[cfg(test)]
#[path = "spec_tests.rs"]
mod tests;
