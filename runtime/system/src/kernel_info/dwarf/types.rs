//! DWARF types → sonde [`Type`]s, and their C spelling as `bpftrace -lv` prints it.
//!
//! The conventions of `sonde_lang::ctypes` hold (`char[N]` is a string, anonymous members
//! are flattened, bitfields load their smallest covering unit), with these differences from
//! kernel BTF records (`crate::btf::convert`):
//! - pointers are in user space;
//! - records behind pointers are expanded too, [`MAX_POINTER_DEPTH`] pointers deep, since the
//!   checker can only look kernel types up by name; deeper ones are opaque;
//! - enums are plain integers (bpftrace types DWARF enums so; printing them by name would
//!   look them up in the kernel's enums);
//! - `bool` is an unsigned byte and floating-point values their raw bits, as in bpftrace.

use super::{Die, Dwarf};
use gimli::AttributeValue;
use sonde_lang::ctypes::opaque_record;
use sonde_lang::kernel::{DebugInfoError, RecordKind};
use sonde_lang::types::{AddrSpace, Field, Record, Type};
use std::sync::Arc;

/// Nesting limit (qualifiers, typedefs, members, array dimensions) guarding against cyclic or
/// absurdly deep DWARF.
pub const MAX_DEPTH: u32 = 48;
/// How many pointers deep records are expanded (`args.p->next->next->...`).
pub const MAX_POINTER_DEPTH: u8 = 5;

/// Reads a ULEB128 at the start of `bytes`.
fn uleb(bytes: &[u8]) -> Option<u64> {
    let mut v = 0u64;
    for (i, b) in bytes.iter().enumerate().take(10) {
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

impl Dwarf {
    /// `die` with typedefs and qualifiers peeled off (`None` is `void`).
    pub(super) fn peel(&self, mut ty: Option<Die>) -> Result<Option<Die>, DebugInfoError> {
        for _ in 0..MAX_DEPTH {
            let Some(die) = ty else { return Ok(None) };
            match self.tag(die)? {
                gimli::DW_TAG_typedef
                | gimli::DW_TAG_const_type
                | gimli::DW_TAG_volatile_type
                | gimli::DW_TAG_restrict_type
                | gimli::DW_TAG_atomic_type
                | gimli::DW_TAG_immutable_type => ty = self.type_of(die)?,
                _ => return Ok(Some(die)),
            }
        }
        Ok(None)
    }

    /// `DW_AT_byte_size` of a (peeled) type.
    pub(super) fn byte_size(&self, die: Die) -> Result<u64, DebugInfoError> {
        Ok(self.udata(die, gimli::DW_AT_byte_size)?.unwrap_or(0))
    }

    /// The base type encoding of `die` (`DW_ATE_*`), when it is a base type.
    pub(super) fn encoding(&self, die: Die) -> Result<Option<gimli::DwAte>, DebugInfoError> {
        if self.tag(die)? != gimli::DW_TAG_base_type {
            return Ok(None);
        }
        Ok(match self.attr_value(die, gimli::DW_AT_encoding)? {
            Some(AttributeValue::Encoding(e)) => Some(e),
            _ => None,
        })
    }

    /// True when `ty`, after qualifiers but not typedefs, is a one-byte character type.
    fn is_char(&self, mut ty: Option<Die>) -> Result<bool, DebugInfoError> {
        for _ in 0..8 {
            let Some(die) = ty else { return Ok(false) };
            match self.tag(die)? {
                gimli::DW_TAG_const_type | gimli::DW_TAG_volatile_type => ty = self.type_of(die)?,
                gimli::DW_TAG_base_type => {
                    let e = self.encoding(die)?;
                    return Ok(self.byte_size(die)? == 1
                        && matches!(
                            e,
                            Some(gimli::DW_ATE_signed_char | gimli::DW_ATE_unsigned_char)
                        ));
                }
                _ => return Ok(false),
            }
        }
        Ok(false)
    }

    /// The sonde type of DWARF type `ty`, `ptr_depth` pointers below a parameter.
    pub(super) fn to_type(
        &self,
        ty: Option<Die>,
        ptr_depth: u8,
        depth: u32,
    ) -> Result<Type, DebugInfoError> {
        let Some(die) = self.peel(ty)? else {
            return Ok(Type::Void);
        };
        if depth > MAX_DEPTH {
            return Ok(Type::Void);
        }
        Ok(match self.tag(die)? {
            gimli::DW_TAG_base_type => {
                let signed = matches!(
                    self.encoding(die)?,
                    Some(gimli::DW_ATE_signed | gimli::DW_ATE_signed_char)
                );
                Type::int_of_size(self.byte_size(die)?, signed)
            }
            gimli::DW_TAG_enumeration_type => {
                let signed = match self.peel(self.type_of(die)?)? {
                    Some(under) => matches!(
                        self.encoding(under)?,
                        Some(gimli::DW_ATE_signed | gimli::DW_ATE_signed_char)
                    ),
                    None => false,
                };
                Type::int_of_size(self.byte_size(die)?, signed)
            }
            gimli::DW_TAG_pointer_type
            | gimli::DW_TAG_reference_type
            | gimli::DW_TAG_rvalue_reference_type => Type::Ptr {
                pointee: Box::new(self.pointee(self.type_of(die)?, ptr_depth, depth)?),
                space: AddrSpace::User,
            },
            gimli::DW_TAG_ptr_to_member_type => Type::U64,
            gimli::DW_TAG_structure_type | gimli::DW_TAG_class_type | gimli::DW_TAG_union_type => {
                Type::Record(self.record(die, ptr_depth, depth)?)
            }
            gimli::DW_TAG_array_type => self.array(die, ptr_depth, depth)?,
            _ => Type::Void,
        })
    }

    /// What a pointer to `ty` points to: records expanded until [`MAX_POINTER_DEPTH`].
    fn pointee(&self, ty: Option<Die>, ptr_depth: u8, depth: u32) -> Result<Type, DebugInfoError> {
        let Some(die) = self.peel(ty)? else {
            return Ok(Type::Void);
        };
        let tag = self.tag(die)?;
        if tag == gimli::DW_TAG_subroutine_type {
            return Ok(Type::Void);
        }
        let record = matches!(
            tag,
            gimli::DW_TAG_structure_type | gimli::DW_TAG_class_type | gimli::DW_TAG_union_type
        );
        if record && ptr_depth >= MAX_POINTER_DEPTH {
            return Ok(Type::Record(self.opaque(die, tag)?));
        }
        self.to_type(Some(die), ptr_depth.saturating_add(1), depth + 1)
    }

    /// A record known by name only.
    fn opaque(&self, die: Die, tag: gimli::DwTag) -> Result<Arc<Record>, DebugInfoError> {
        let kind = if tag == gimli::DW_TAG_union_type {
            RecordKind::Union
        } else {
            RecordKind::Struct
        };
        let name = self.name(die)?.unwrap_or_else(|| "(anonymous)".into());
        Ok(opaque_record(kind, &name))
    }

    /// The record of struct, class or union `die`.
    fn record(&self, die: Die, ptr_depth: u8, depth: u32) -> Result<Arc<Record>, DebugInfoError> {
        if let Some(r) = self.records.borrow().get(&(die, ptr_depth)) {
            return Ok(r.clone());
        }
        let tag = self.tag(die)?;
        if self.has(die, gimli::DW_AT_declaration)?
            || !self.converting.borrow_mut().insert((die, ptr_depth))
        {
            return self.opaque(die, tag);
        }
        let union = tag == gimli::DW_TAG_union_type;
        let mut fields = Vec::new();
        let pushed = self.push_members(die, 0, &mut fields, ptr_depth, depth + 1);
        self.converting.borrow_mut().remove(&(die, ptr_depth));
        pushed?;
        let kw = if union { "union" } else { "struct" };
        let r = Arc::new(Record {
            name: format!(
                "{kw} {}",
                self.name(die)?.unwrap_or_else(|| "(anonymous)".into())
            ),
            size: u32::try_from(self.byte_size(die)?).unwrap_or(u32::MAX),
            fields,
            is_union: union,
        });
        self.records
            .borrow_mut()
            .insert((die, ptr_depth), r.clone());
        Ok(r)
    }

    /// The byte offset of member `m` in its record (`DW_AT_data_member_location`: a constant,
    /// or the DWARF 2 expression `DW_OP_plus_uconst N`).
    pub(super) fn member_offset(&self, m: Die) -> Result<u64, DebugInfoError> {
        let (_, entry) = self.entry(m)?;
        let Some(attr) = entry.attr(gimli::DW_AT_data_member_location) else {
            return Ok(0);
        };
        if let Some(v) = attr.udata_value() {
            return Ok(v);
        }
        if let AttributeValue::Exprloc(e) = attr.value() {
            let bytes = e.0.slice();
            // DW_OP_plus_uconst (0x23) or DW_OP_constu (0x10), then a ULEB128.
            if let Some((&(0x23 | 0x10), rest)) = bytes.split_first() {
                return Ok(uleb(rest).unwrap_or(0));
            }
        }
        Ok(0)
    }

    /// Appends the fields of record `die` at `base_bits`, flattening anonymous members.
    fn push_members(
        &self,
        die: Die,
        base_bits: u64,
        out: &mut Vec<Field>,
        ptr_depth: u8,
        depth: u32,
    ) -> Result<(), DebugInfoError> {
        if depth > MAX_DEPTH {
            return Ok(());
        }
        for m in self.children_tagged(die, gimli::DW_TAG_member)? {
            let mty = self.type_of(m)?;
            let byte_off = self.member_offset(m)?;
            let bit_size = self.udata(m, gimli::DW_AT_bit_size)?;
            let start_bits = match (bit_size, self.udata(m, gimli::DW_AT_data_bit_offset)?) {
                (_, Some(data_bit)) => base_bits.saturating_add(data_bit),
                (Some(width), None) => match self.udata(m, gimli::DW_AT_bit_offset)? {
                    // DWARF 2/3: bits from the storage unit's most significant bit.
                    Some(msb) => {
                        let unit_bits = match self.udata(m, gimli::DW_AT_byte_size)? {
                            Some(b) => b * 8,
                            None => self.peel(mty)?.map_or(Ok(0), |t| self.byte_size(t))? * 8,
                        };
                        let lsb = unit_bits.saturating_sub(msb).saturating_sub(width);
                        base_bits + byte_off * 8 + lsb
                    }
                    None => base_bits + byte_off * 8,
                },
                (None, None) => base_bits.saturating_add(byte_off.saturating_mul(8)),
            };
            let Some(name) = self.name(m)? else {
                if let Some(inner) = self.peel(mty)?
                    && matches!(
                        self.tag(inner)?,
                        gimli::DW_TAG_structure_type | gimli::DW_TAG_union_type
                    )
                {
                    self.push_members(inner, start_bits, out, ptr_depth, depth + 1)?;
                }
                continue;
            };
            let offset = u32::try_from(start_bits / 8).unwrap_or(u32::MAX);
            let Some(width) = bit_size.filter(|&w| w > 0) else {
                out.push(Field {
                    name,
                    offset,
                    ty: self.to_type(mty, ptr_depth, depth + 1)?,
                    bitfield: None,
                    data_loc: false,
                    nul_room: false,
                });
                continue;
            };
            let width = width.min(64) as u8;
            let shift = (start_bits % 8) as u8;
            let needed = (u32::from(shift) + u32::from(width)).div_ceil(8);
            let unit = [1u32, 2, 4, 8]
                .into_iter()
                .find(|&u| u >= needed)
                .unwrap_or(8);
            let signed = match self.peel(mty)? {
                Some(t) => matches!(
                    self.encoding(t)?,
                    Some(gimli::DW_ATE_signed | gimli::DW_ATE_signed_char)
                ),
                None => false,
            };
            out.push(Field {
                name,
                offset,
                ty: Type::Int {
                    bits: (unit * 8) as u8,
                    signed,
                },
                bitfield: Some((shift, width)),
                data_loc: false,
                nul_room: false,
            });
        }
        Ok(())
    }

    /// The dimensions of array type `die`, outermost first (0 for a flexible one).
    pub(super) fn dimensions(&self, die: Die) -> Result<Vec<u64>, DebugInfoError> {
        let mut dims = Vec::new();
        for s in self.children_tagged(die, gimli::DW_TAG_subrange_type)? {
            let n = match self.udata(s, gimli::DW_AT_count)? {
                Some(c) => c,
                None => {
                    let (_, entry) = self.entry(s)?;
                    match entry.attr(gimli::DW_AT_upper_bound).map(|a| a.value()) {
                        Some(AttributeValue::Sdata(v)) if v < 0 => 0,
                        Some(v) => v.udata_value().map_or(0, |u| u.saturating_add(1)),
                        None => 0,
                    }
                }
            };
            dims.push(n);
        }
        Ok(dims)
    }

    /// An array type: `char[N]` is a string, others arrays (of arrays).
    fn array(&self, die: Die, ptr_depth: u8, depth: u32) -> Result<Type, DebugInfoError> {
        let elem_die = self.type_of(die)?;
        let dims = self.dimensions(die)?;
        let mut ty = if self.is_char(elem_die)? {
            None
        } else {
            Some(self.to_type(elem_die, ptr_depth, depth + 1)?)
        };
        for &n in dims.iter().rev() {
            let len = u32::try_from(n).unwrap_or(u32::MAX);
            ty = Some(match ty {
                None => Type::Str { size: len },
                Some(elem) => Type::Array {
                    elem: Box::new(elem),
                    len,
                },
            });
        }
        Ok(ty.unwrap_or(Type::Void))
    }

    /// The C spelling of type `ty` as bpftrace's `-lv` prints it (`int`, `char*`,
    /// `const char*`, `struct Foo*`, `char* const`).
    pub(super) fn type_name(&self, ty: Option<Die>, depth: u32) -> Result<String, DebugInfoError> {
        let Some(die) = ty else {
            return Ok("void".into());
        };
        if depth > MAX_DEPTH {
            return Ok("<unknown type>".into());
        }
        let inner = |s: &Self| -> Result<String, DebugInfoError> {
            s.type_name(s.type_of(die)?, depth + 1)
        };
        let named = |s: &Self, kw: &str| -> Result<String, DebugInfoError> {
            Ok(format!(
                "{kw}{}",
                s.name(die)?.unwrap_or_else(|| "<anonymous>".into())
            ))
        };
        Ok(match self.tag(die)? {
            gimli::DW_TAG_base_type | gimli::DW_TAG_typedef => {
                self.name(die)?.unwrap_or_else(|| "<unknown type>".into())
            }
            gimli::DW_TAG_pointer_type => format!("{}*", inner(self)?),
            gimli::DW_TAG_reference_type => format!("{}&", inner(self)?),
            gimli::DW_TAG_rvalue_reference_type => format!("{}&&", inner(self)?),
            gimli::DW_TAG_structure_type | gimli::DW_TAG_class_type => named(self, "struct ")?,
            gimli::DW_TAG_union_type => named(self, "union ")?,
            gimli::DW_TAG_enumeration_type => named(self, "enum ")?,
            t @ (gimli::DW_TAG_const_type | gimli::DW_TAG_volatile_type) => {
                let q = if t == gimli::DW_TAG_const_type {
                    "const"
                } else {
                    "volatile"
                };
                let under = self.type_of(die)?;
                let is_ptr = match under {
                    Some(u) => self.tag(u)? == gimli::DW_TAG_pointer_type,
                    None => false,
                };
                if is_ptr {
                    format!("{} {q}", inner(self)?)
                } else {
                    format!("{q} {}", inner(self)?)
                }
            }
            gimli::DW_TAG_restrict_type => format!("{} restrict", inner(self)?),
            gimli::DW_TAG_array_type => {
                let dims: String = self
                    .dimensions(die)?
                    .iter()
                    .map(|n| format!("[{n}]"))
                    .collect();
                format!("{}{dims}", inner(self)?)
            }
            _ => "<unknown type>".into(),
        })
    }
}
