//! The decoded value model: what map entries and event payloads become in userspace before
//! a printer (text, JSON) renders them.
//!
//! [`decode`] turns the raw little-endian bytes of any non-aggregation [`Type`] into a
//! [`Value`]; [`decode_agg`] merges the per-CPU slots of an aggregation (dispatching to
//! `catalog::aggs`). Values that need the running system to be shown by name (stacks, symbols,
//! user names, cgroup paths, timestamps) decode to their raw form and are resolved by the
//! runtime's printer.
//!
//! Byte layouts decided here (the code generator writes them):
//! - `Buf { size }`: one length byte, then `size - 1` data bytes.
//! - `Inet`: a `u32` address family (2 = IPv4, 10 = IPv6) at offset 0, the address at offset 8
//!   (4 bytes for IPv4, 16 for IPv6).
//! - `Timestamp`: a `u64` tag (the index of the `strftime` format, assigned by the compiler),
//!   then the `u64` nanoseconds.
//! - `Stack`, `ksym`, `Username`, `CgroupPath`: one `u64` (stack id, address, uid, cgroup id).
//! - `usym`: the `u64` address, then the `u64` pid of the process it belongs to.

mod sort;

use crate::catalog::aggs;
use sonde_lang::types::{AggKind, Record, StackMode, Type, tuple_layout};

pub use sort::{compare_keys, sort_entries};

/// A decoded value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// No value (`void`).
    None,
    /// `true` / `false`.
    Bool(bool),
    /// A signed integer.
    Int(i64),
    /// An unsigned integer.
    UInt(u64),
    /// A pointer (printed in hex as text, as a number in JSON).
    Ptr(u64),
    /// A string, up to (not including) its NUL.
    Str(Vec<u8>),
    /// A byte buffer from `buf()`.
    Buf(Vec<u8>),
    /// A tuple.
    Tuple(Vec<Value>),
    /// A struct, union or tracepoint record: fields in declaration order.
    Record {
        /// The record's type name.
        name: String,
        /// Field names and values.
        fields: Vec<(String, Value)>,
    },
    /// A fixed-size array.
    Array(Vec<Value>),
    /// An enum value (printed as its number unless the printer knows the enumerator).
    Enum {
        /// The enum's tag name.
        name: String,
        /// The numeric value.
        value: i64,
    },
    /// A stack, still as the id of its entry in the stack map.
    StackId {
        /// Kernel stack when true.
        kernel: bool,
        /// Print mode.
        mode: StackMode,
        /// Maximum number of frames.
        limit: u32,
        /// The raw 8 bytes (stack id as written by the program).
        raw: u64,
    },
    /// A resolved stack.
    Stack(Stack),
    /// A code address to print by name (`ksym`, `usym`).
    Symbol {
        /// Kernel symbol when true.
        kernel: bool,
        /// The address.
        addr: u64,
        /// The process whose address space `addr` belongs to (0 for kernel symbols).
        pid: u32,
        /// The symbol name (`func+off` form), once resolved.
        name: Option<String>,
    },
    /// An IP address from `ntop()`.
    Inet(std::net::IpAddr),
    /// A MAC address from `macaddr()`.
    MacAddr([u8; 6]),
    /// A `strftime()` timestamp.
    Timestamp {
        /// The compiler's tag for the format string.
        tag: u64,
        /// Nanoseconds.
        nsecs: u64,
    },
    /// A user id to print as a user name (`username`).
    Username(u64),
    /// A cgroup id to print as a path (`cgroup_path()`).
    CgroupPath {
        /// The cgroup id.
        id: u64,
        /// The hierarchies to print (see `Type::CgroupPath`); `None`: all.
        filter: Option<String>,
    },
    /// Already resolved text (a symbol, user name, timestamp ... as the runtime rendered it).
    Text(String),
    /// A merged aggregation.
    Agg(AggValue),
}

/// A resolved stack.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stack {
    /// Kernel stack when true.
    pub kernel: bool,
    /// Print mode.
    pub mode: StackMode,
    /// Frames, innermost first.
    pub frames: Vec<Frame>,
}

/// One stack frame.
///
/// With `show_debug_info`, an address in code that has DWARF resolves to several frames:
/// one per function inlined at it, innermost first (`inlined`, their `symbol` the bare
/// function name, their `addr` the address's), then the function the code is in. Printers
/// that show one line per address skip the inlined frames ([`Frame::inlined`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Frame {
    /// Instruction address.
    pub addr: u64,
    /// `func+off`, when the address resolved (the bare name for an inlined frame).
    pub symbol: Option<String>,
    /// The module (binary or `[kernel.kallsyms]`), for perf mode.
    pub module: Option<String>,
    /// The source location from DWARF, `DIR/FILE:LINE`: the line of the address for the
    /// innermost frame, the line of the call of the next inner frame for the others.
    pub source: Option<String>,
    /// A function inlined at `addr` into the frame that follows it.
    pub inlined: bool,
}

impl Frame {
    /// A frame of `addr` resolved to `symbol` in `module`, without source information.
    pub fn new(addr: u64, symbol: Option<String>, module: Option<String>) -> Frame {
        Frame {
            addr,
            symbol,
            module,
            ..Frame::default()
        }
    }
}

/// A merged (over all CPUs) aggregation value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AggValue {
    /// `count()`.
    Count(u64),
    /// `sum(n)`; the bits are printed as unsigned when `signed` is false.
    Sum {
        /// Total (two's complement bits).
        value: i64,
        /// Signedness of the summed values.
        signed: bool,
    },
    /// `avg(n)`.
    Avg {
        /// Sum of the values.
        sum: i64,
        /// Number of values.
        count: u64,
        /// Signedness of the values.
        signed: bool,
    },
    /// `min(n)`: `None` when no CPU recorded a value.
    Min {
        /// The minimum.
        value: Option<i64>,
        /// Signedness of the values.
        signed: bool,
    },
    /// `max(n)`: `None` when no CPU recorded a value.
    Max {
        /// The maximum.
        value: Option<i64>,
        /// Signedness of the values.
        signed: bool,
    },
    /// `stats(n)`.
    Stats {
        /// Number of values.
        count: u64,
        /// Sum of the values.
        sum: i64,
        /// Signedness of the values.
        signed: bool,
    },
    /// `hist(n[, bits])`.
    Hist {
        /// Sub-bucket bits.
        bits: u8,
        /// Counts, indexed as `aggs::hist_bucket` assigns them.
        buckets: Vec<u64>,
        /// The sum of every value counted (wrapping), kept in the slot after the buckets
        /// (what metrics export as the histogram's `_sum`).
        sum: i64,
    },
    /// `lhist(n, min, max, step)`.
    Lhist {
        /// Lowest bound.
        min: i64,
        /// Highest bound.
        max: i64,
        /// Bucket width.
        step: i64,
        /// Counts, indexed as `aggs::lhist_bucket` assigns them.
        buckets: Vec<u64>,
        /// The sum of every value counted (wrapping), kept in the slot after the buckets.
        sum: i64,
    },
    /// `tseries(n, interval_ns, num_intervals[, agg])`.
    Tseries {
        /// Length of one interval in nanoseconds.
        interval_ns: u64,
        /// Number of intervals a series shows.
        num_intervals: u32,
        /// Signedness of the values.
        signed: bool,
        /// `(epoch, value)` of each slot of the ring some CPU wrote, reduced over the CPUs;
        /// `aggs::tseries::series_rows` turns them into printed rows.
        points: Vec<(u64, i64)>,
    },
}

impl AggValue {
    /// False for a value no update has touched (all counts zero, min/max unset). A `sum` is
    /// always taken as recorded: zero is a legitimate total.
    pub fn is_recorded(&self) -> bool {
        match self {
            AggValue::Count(c) => *c > 0,
            AggValue::Sum { .. } => true,
            AggValue::Avg { count, .. } | AggValue::Stats { count, .. } => *count > 0,
            AggValue::Min { value, .. } | AggValue::Max { value, .. } => value.is_some(),
            AggValue::Hist { buckets, .. } | AggValue::Lhist { buckets, .. } => {
                buckets.iter().any(|b| *b > 0)
            }
            AggValue::Tseries { points, .. } => !points.is_empty(),
        }
    }
}

impl Value {
    /// The raw 64 bits of an integer-like value (integers, bools, pointers, enums, ids and
    /// addresses); `None` for strings, buffers and aggregates.
    pub fn int_bits(&self) -> Option<u64> {
        Some(match self {
            Value::Bool(b) => u64::from(*b),
            Value::Int(i) => *i as u64,
            Value::UInt(u)
            | Value::Ptr(u)
            | Value::Username(u)
            | Value::CgroupPath { id: u, .. } => *u,
            Value::Enum { value, .. } => *value as u64,
            Value::Symbol { addr, .. } => *addr,
            Value::StackId { raw, .. } => *raw,
            _ => return None,
        })
    }
}

/// A signed or unsigned number, compared and printed according to its sign.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Num {
    /// Signed.
    I(i64),
    /// Unsigned.
    U(u64),
}

impl Num {
    /// `bits` interpreted as signed or unsigned.
    pub fn new(bits: i64, signed: bool) -> Num {
        if signed {
            Num::I(bits)
        } else {
            Num::U(bits as u64)
        }
    }

    /// The value widened to `i128` (exact for both kinds).
    pub fn wide(self) -> i128 {
        match self {
            Num::I(v) => i128::from(v),
            Num::U(v) => i128::from(v),
        }
    }

    /// Integer division truncating towards zero (C semantics); division by zero gives 0.
    pub fn div_trunc(self, d: u64) -> Num {
        if d == 0 {
            return Num::new(0, matches!(self, Num::I(_)));
        }
        match self {
            Num::I(v) => Num::I((i128::from(v) / i128::from(d)) as i64),
            Num::U(v) => Num::U(v / d),
        }
    }
}

impl std::fmt::Display for Num {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Num::I(v) => write!(f, "{v}"),
            Num::U(v) => write!(f, "{v}"),
        }
    }
}

impl AggValue {
    /// The single number a scalar aggregation prints and sorts by (`count`, `sum`, `min`,
    /// `max`, and the average of `avg` and `stats`); `None` for histograms and time series.
    pub fn scalar(&self) -> Option<Num> {
        match *self {
            AggValue::Count(c) => Some(Num::U(c)),
            AggValue::Sum { value, signed } => Some(Num::new(value, signed)),
            AggValue::Min { value, signed } | AggValue::Max { value, signed } => {
                Some(Num::new(value.unwrap_or(0), signed))
            }
            AggValue::Avg { sum, count, signed } | AggValue::Stats { sum, count, signed } => {
                Some(Num::new(sum, signed).div_trunc(count))
            }
            AggValue::Hist { .. } | AggValue::Lhist { .. } | AggValue::Tseries { .. } => None,
        }
    }

    /// Total count of a histogram (the sum of its buckets); `None` for other aggregations.
    pub fn hist_total(&self) -> Option<u64> {
        match self {
            AggValue::Hist { buckets, .. } | AggValue::Lhist { buckets, .. } => {
                Some(buckets.iter().fold(0u64, |a, b| a.wrapping_add(*b)))
            }
            _ => None,
        }
    }
}

/// Reads `n` (≤ 8) little-endian bytes at `off`; missing bytes read as zero.
pub fn read_le(bytes: &[u8], off: usize, n: usize) -> u64 {
    let mut v = 0u64;
    for i in 0..n.min(8) {
        let b = bytes.get(off + i).copied().unwrap_or(0);
        v |= u64::from(b) << (8 * i);
    }
    v
}

/// Sign-extends the low `bits` bits of `v`.
fn sign_extend(v: u64, bits: u32) -> i64 {
    if bits >= 64 {
        return v as i64;
    }
    let shift = 64 - bits;
    ((v << shift) as i64) >> shift
}

fn slice(bytes: &[u8], off: usize, len: usize) -> &[u8] {
    let start = off.min(bytes.len());
    let end = off.saturating_add(len).min(bytes.len());
    &bytes[start..end]
}

fn c_string(bytes: &[u8]) -> Vec<u8> {
    let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
    bytes[..end].to_vec()
}

/// Decodes the bytes of a value of type `ty` (little-endian; short input reads as zeros).
///
/// An aggregation type decodes as a single CPU's slot.
pub fn decode(ty: &Type, bytes: &[u8]) -> Value {
    decode_marked(ty, bytes, &[])
}

/// bpftrace 0.26's default `str_trunc_trailer`: what a cut string ends with when printed.
pub const DEFAULT_STR_TRUNC_TRAILER: &[u8] = b"..";

/// The string of a `string[size]` value: its bytes up to the NUL. One that fills its `size`
/// bytes without a NUL was cut, and ends with `trailer` (bpftrace 0.26's `str_trunc_trailer`;
/// empty: not marked).
fn str_value(bytes: &[u8], size: usize, trailer: &[u8]) -> Value {
    let mut s = c_string(bytes);
    if size > 0 && s.len() == size {
        s.extend_from_slice(trailer);
    }
    Value::Str(s)
}

/// [`decode`], strings that fill their type without a NUL (they were cut) ending with
/// `trailer`, as bpftrace 0.26 prints them.
pub fn decode_marked(ty: &Type, bytes: &[u8], trailer: &[u8]) -> Value {
    let decode = |t: &Type, b: &[u8]| decode_marked(t, b, trailer);
    match ty {
        Type::Void => Value::None,
        Type::Bool => Value::Bool(read_le(bytes, 0, 1) != 0),
        Type::Int { bits, signed } => {
            let n = usize::from(*bits / 8);
            let raw = read_le(bytes, 0, n);
            if *signed {
                Value::Int(sign_extend(raw, u32::from(*bits)))
            } else {
                Value::UInt(raw)
            }
        }
        Type::Enum { name, bits } => {
            let raw = read_le(bytes, 0, usize::from(*bits / 8));
            Value::Enum {
                name: name.clone(),
                value: sign_extend(raw, u32::from(*bits)),
            }
        }
        Type::Str { size } => str_value(slice(bytes, 0, *size as usize), *size as usize, trailer),
        Type::Buf { size } => {
            let len = (read_le(bytes, 0, 1) as usize).min((*size as usize).saturating_sub(1));
            Value::Buf(slice(bytes, 1, len).to_vec())
        }
        Type::Ptr { .. } => Value::Ptr(read_le(bytes, 0, 8)),
        Type::Record(r) => decode_record(r, bytes, trailer),
        Type::Array { elem, len } => {
            let sz = elem.size() as usize;
            let items = (0..*len as usize).map(|i| decode(elem, slice(bytes, i * sz, sz)));
            Value::Array(items.collect())
        }
        Type::Tuple(items) => {
            let (offs, _) = tuple_layout(items);
            let vals = items
                .iter()
                .zip(offs)
                .map(|(t, off)| decode(t, slice(bytes, off as usize, t.size() as usize)));
            Value::Tuple(vals.collect())
        }
        Type::Stack {
            kernel,
            mode,
            limit,
        } => Value::StackId {
            kernel: *kernel,
            mode: *mode,
            limit: *limit,
            raw: read_le(bytes, 0, 8),
        },
        Type::Symbol { kernel } => Value::Symbol {
            kernel: *kernel,
            addr: read_le(bytes, 0, 8),
            pid: if *kernel {
                0
            } else {
                read_le(bytes, 8, 4) as u32
            },
            name: None,
        },
        Type::Inet => decode_inet(bytes),
        Type::MacAddr => {
            let mut m = [0u8; 6];
            for (i, b) in m.iter_mut().enumerate() {
                *b = read_le(bytes, i, 1) as u8;
            }
            Value::MacAddr(m)
        }
        Type::Timestamp => Value::Timestamp {
            tag: read_le(bytes, 0, 8),
            nsecs: read_le(bytes, 8, 8),
        },
        Type::Username => Value::Username(read_le(bytes, 0, 8)),
        Type::CgroupPath { filter } => Value::CgroupPath {
            id: read_le(bytes, 0, 8),
            filter: filter.clone(),
        },
        Type::Agg(kind) => decode_agg(kind, &[bytes]),
    }
}

fn decode_inet(bytes: &[u8]) -> Value {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
    let family = read_le(bytes, 0, 4);
    if family == 10 {
        let mut a = [0u8; 16];
        for (i, b) in a.iter_mut().enumerate() {
            *b = read_le(bytes, 8 + i, 1) as u8;
        }
        Value::Inet(IpAddr::V6(Ipv6Addr::from(a)))
    } else {
        let a = [0, 1, 2, 3].map(|i| read_le(bytes, 8 + i, 1) as u8);
        Value::Inet(IpAddr::V4(Ipv4Addr::from(a)))
    }
}

fn decode_record(r: &Record, bytes: &[u8], trailer: &[u8]) -> Value {
    let decode = |t: &Type, b: &[u8]| decode_marked(t, b, trailer);
    let fields = r
        .fields
        .iter()
        .map(|f| {
            let off = f.offset as usize;
            let v = if f.data_loc {
                let loc = read_le(bytes, off, 4);
                let (start, len) = ((loc & 0xffff) as usize, (loc >> 16) as usize);
                match &f.ty {
                    Type::Str { .. } => Value::Str(c_string(slice(bytes, start, len))),
                    other => decode(other, slice(bytes, start, len)),
                }
            } else if let Some((bit, width)) = f.bitfield {
                let raw = read_le(bytes, off, f.ty.size() as usize) >> bit;
                let mask = if width >= 64 {
                    u64::MAX
                } else {
                    (1u64 << width) - 1
                };
                if f.ty.is_signed() {
                    Value::Int(sign_extend(raw & mask, u32::from(width)))
                } else {
                    Value::UInt(raw & mask)
                }
            } else {
                decode(&f.ty, slice(bytes, off, f.ty.size() as usize))
            };
            (f.name.clone(), v)
        })
        .collect();
    Value::Record {
        name: r.name.clone(),
        fields,
    }
}

/// Merges the per-CPU slots of an aggregation (one slice per possible CPU).
pub fn decode_agg(kind: &AggKind, per_cpu: &[&[u8]]) -> Value {
    Value::Agg(aggs::merge(kind, per_cpu))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_lang::types::{AddrSpace, Field};
    use std::sync::Arc;

    #[test]
    fn integers_by_width_and_sign() {
        assert_eq!(
            decode(&Type::I32, &[0xff, 0xff, 0xff, 0xff]),
            Value::Int(-1)
        );
        assert_eq!(
            decode(&Type::U32, &[0xff, 0xff, 0xff, 0xff]),
            Value::UInt(4294967295)
        );
        assert_eq!(
            decode(
                &Type::Int {
                    bits: 8,
                    signed: true
                },
                &[0x80]
            ),
            Value::Int(-128)
        );
        assert_eq!(
            decode(
                &Type::Int {
                    bits: 16,
                    signed: false
                },
                &[0x34, 0x12]
            ),
            Value::UInt(0x1234)
        );
        assert_eq!(
            decode(&Type::I64, &[1, 0, 0, 0, 0, 0, 0, 0x80]),
            Value::Int(i64::MIN + 1)
        );
        // Short input reads as zeros instead of panicking.
        assert_eq!(decode(&Type::U64, &[7]), Value::UInt(7));
        assert_eq!(decode(&Type::Bool, &[2]), Value::Bool(true));
    }

    #[test]
    fn strings_and_buffers() {
        assert_eq!(
            decode(&Type::Str { size: 8 }, b"abc\0xyz\0"),
            Value::Str(b"abc".to_vec())
        );
        assert_eq!(
            decode(&Type::Str { size: 3 }, b"abcdef"),
            Value::Str(b"abc".to_vec())
        );
        // bpftrace 0.26: a string filling its type without a NUL was cut, and is marked.
        let cut = |ty: &Type, b: &[u8]| decode_marked(ty, b, DEFAULT_STR_TRUNC_TRAILER);
        assert_eq!(
            cut(&Type::Str { size: 3 }, b"abcdef"),
            Value::Str(b"abc..".to_vec())
        );
        assert_eq!(
            cut(&Type::Str { size: 4 }, b"abc\0"),
            Value::Str(b"abc".to_vec())
        );
        assert_eq!(
            cut(
                &Type::Tuple(vec![Type::Str { size: 2 }, Type::I64]),
                b"ab\0\0\0\0\0\0\x01\0\0\0\0\0\0\0"
            ),
            Value::Tuple(vec![Value::Str(b"ab..".to_vec()), Value::Int(1)])
        );
        assert_eq!(
            decode(&Type::Buf { size: 6 }, &[3, 1, 2, 3, 4, 5]),
            Value::Buf(vec![1, 2, 3])
        );
        assert_eq!(
            decode(&Type::Buf { size: 3 }, &[9, 1, 2]),
            Value::Buf(vec![1, 2])
        );
    }

    #[test]
    fn tuples_use_c_layout() {
        let ty = Type::Tuple(vec![Type::U8, Type::I64, Type::Str { size: 4 }]);
        let mut bytes = vec![0u8; 24];
        bytes[0] = 5;
        bytes[8..16].copy_from_slice(&(-2i64).to_le_bytes());
        bytes[16..19].copy_from_slice(b"hi\0");
        assert_eq!(
            decode(&ty, &bytes),
            Value::Tuple(vec![
                Value::UInt(5),
                Value::Int(-2),
                Value::Str(b"hi".to_vec())
            ])
        );
    }

    #[test]
    fn arrays_pointers_and_addresses() {
        let ty = Type::Array {
            elem: Box::new(Type::Int {
                bits: 16,
                signed: true,
            }),
            len: 2,
        };
        assert_eq!(
            decode(&ty, &[1, 0, 0xfe, 0xff]),
            Value::Array(vec![Value::Int(1), Value::Int(-2)])
        );
        let ptr = Type::Ptr {
            pointee: Box::new(Type::Void),
            space: AddrSpace::Kernel,
        };
        assert_eq!(decode(&ptr, &0x1234u64.to_le_bytes()), Value::Ptr(0x1234));
        let mut inet = vec![0u8; 24];
        inet[0] = 2;
        inet[8..12].copy_from_slice(&[127, 0, 0, 1]);
        assert_eq!(
            decode(&Type::Inet, &inet).to_owned(),
            Value::Inet("127.0.0.1".parse().unwrap())
        );
        inet[0] = 10;
        inet[8..24].copy_from_slice(&"fe80::1".parse::<std::net::Ipv6Addr>().unwrap().octets());
        assert_eq!(
            decode(&Type::Inet, &inet),
            Value::Inet("fe80::1".parse().unwrap())
        );
        assert_eq!(
            decode(&Type::MacAddr, &[1, 2, 3, 4, 5, 0xff]),
            Value::MacAddr([1, 2, 3, 4, 5, 0xff])
        );
        assert_eq!(
            decode(&Type::Symbol { kernel: true }, &0xffffu64.to_le_bytes()),
            Value::Symbol {
                kernel: true,
                addr: 0xffff,
                pid: 0,
                name: None
            }
        );
        let mut user = 0x5555_0000_1234u64.to_le_bytes().to_vec();
        user.extend_from_slice(&4242u64.to_le_bytes());
        assert_eq!(
            decode(&Type::Symbol { kernel: false }, &user),
            Value::Symbol {
                kernel: false,
                addr: 0x5555_0000_1234,
                pid: 4242,
                name: None
            }
        );
    }

    #[test]
    fn records_with_bitfields_and_data_loc() {
        let field = |name: &str, offset, ty, bitfield, data_loc| Field {
            name: name.into(),
            offset,
            ty,
            bitfield,
            data_loc,
            nul_room: false,
        };
        let rec = Record {
            name: "rec".into(),
            size: 16,
            fields: vec![
                field("a", 0, Type::I32, None, false),
                field("b", 4, Type::U32, Some((4, 3)), false),
                field("s", 8, Type::Str { size: 64 }, None, true),
            ],
            is_union: false,
        };
        let mut bytes = vec![0u8; 20];
        bytes[0..4].copy_from_slice(&(-9i32).to_le_bytes());
        bytes[4] = 0b0101_0000;
        let loc: u32 = 16 | (4 << 16);
        bytes[8..12].copy_from_slice(&loc.to_le_bytes());
        bytes[16..20].copy_from_slice(b"ok\0\0");
        let v = decode(&Type::Record(Arc::new(rec)), &bytes);
        assert_eq!(
            v,
            Value::Record {
                name: "rec".into(),
                fields: vec![
                    ("a".into(), Value::Int(-9)),
                    ("b".into(), Value::UInt(5)),
                    ("s".into(), Value::Str(b"ok".to_vec())),
                ]
            }
        );
    }

    #[test]
    fn aggregation_scalars() {
        assert_eq!(
            AggValue::Avg {
                sum: -3,
                count: 2,
                signed: true
            }
            .scalar(),
            Some(Num::I(-1))
        );
        assert_eq!(
            AggValue::Sum {
                value: -1,
                signed: false
            }
            .scalar(),
            Some(Num::U(u64::MAX))
        );
        assert_eq!(
            AggValue::Hist {
                bits: 0,
                buckets: vec![1, 2],
                sum: 0
            }
            .hist_total(),
            Some(3)
        );
        assert_eq!(Num::I(-7).div_trunc(2), Num::I(-3));
        assert_eq!(
            decode_agg(&AggKind::Count, &[&5u64.to_le_bytes(), &6u64.to_le_bytes()]),
            Value::Agg(AggValue::Count(11))
        );
    }
}
