//! The semantic types of sonde values.

use std::fmt;
use std::sync::Arc;

/// Which address space a pointer points into (decides `probe_read_kernel` vs `_user`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AddrSpace {
    /// Kernel memory.
    Kernel,
    /// User memory of the current process.
    User,
    /// Not known (treated like the probe's natural space: user for uprobes, else kernel).
    Unknown,
}

/// How a stack is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StackMode {
    /// bpftrace's default: indented frames `func+off`.
    Bpftrace,
    /// perf's: `\taddr func+off (module)`.
    Perf,
    /// Raw addresses.
    Raw,
    /// User stacks only: each frame as the build id of its file (hex) and the offset in it,
    /// or the raw address when the kernel found no build id (`BPF_F_STACK_BUILD_ID`).
    BuildId,
}

impl StackMode {
    /// The mode a script names (`bpftrace`, `perf`, `raw`, `build_id`: in `kstack(perf)` and
    /// the `stack_mode` config alike).
    pub fn from_word(w: &str) -> Option<StackMode> {
        match w {
            "bpftrace" => Some(StackMode::Bpftrace),
            "perf" => Some(StackMode::Perf),
            "raw" => Some(StackMode::Raw),
            "build_id" => Some(StackMode::BuildId),
            _ => None,
        }
    }

    /// The word that names the mode (the inverse of [`StackMode::from_word`]).
    pub fn word(self) -> &'static str {
        match self {
            StackMode::Bpftrace => "bpftrace",
            StackMode::Perf => "perf",
            StackMode::Raw => "raw",
            StackMode::BuildId => "build_id",
        }
    }
}

/// The aggregation functions a map value can hold.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AggKind {
    /// `count()`
    Count,
    /// `sum(n)`
    Sum {
        /// Whether the summed values are signed.
        signed: bool,
    },
    /// `avg(n)`
    Avg {
        /// Whether the values are signed.
        signed: bool,
    },
    /// `min(n)`
    Min {
        /// Whether the values are signed.
        signed: bool,
    },
    /// `max(n)`
    Max {
        /// Whether the values are signed.
        signed: bool,
    },
    /// `stats(n)`
    Stats {
        /// Whether the values are signed.
        signed: bool,
    },
    /// `hist(n[, bits])` log2 histogram with 2^bits sub-buckets per power of two.
    Hist {
        /// Sub-bucket bits (0..=5).
        bits: u8,
    },
    /// `lhist(n, min, max, step)` linear histogram.
    Lhist {
        /// Lowest bucket.
        min: i64,
        /// Highest bucket bound.
        max: i64,
        /// Bucket width.
        step: i64,
    },
    /// `tseries(n, interval_ns, num_intervals[, agg])`: the last `num_intervals` intervals of
    /// `interval_ns` nanoseconds, each holding one value of n.
    Tseries {
        /// Length of one interval in nanoseconds (≥ 1).
        interval_ns: u64,
        /// Number of intervals kept (the ring's length, ≥ 1).
        num_intervals: u32,
        /// How the values of one interval combine.
        agg: TseriesAgg,
        /// Whether the values are signed.
        signed: bool,
    },
}

/// How `tseries()` combines the values recorded in one interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TseriesAgg {
    /// The last value recorded (the default).
    Last,
    /// The average (integer division).
    Avg,
    /// The largest value.
    Max,
    /// The smallest value.
    Min,
    /// The sum.
    Sum,
}

/// A field of a [`Record`] (struct, union, tracepoint args).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Field {
    /// Field name.
    pub name: String,
    /// Byte offset from the start of the record.
    pub offset: u32,
    /// Field type.
    pub ty: Type,
    /// For bitfields: (bit offset within the loaded unit, bit width).
    pub bitfield: Option<(u8, u8)>,
    /// True for a tracepoint `__data_loc` field: the record holds a `u32` locator
    /// (`offset | len << 16`, offset from the record start) instead of the value; `ty` is the
    /// type of the located data (`Str` for `__data_loc char[]`).
    pub data_loc: bool,
    /// True for a `char[N]` member of a struct the script defines: typed `string[N + 1]`, as
    /// bpftrace's C parser types it (a string that fills the array is whole, not cut), and
    /// read as its N bytes followed by a NUL.
    pub nul_room: bool,
}

/// A struct, union or tracepoint argument record with a known layout.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Record {
    /// `struct task_struct`, `union x`, or a synthetic name such as `tracepoint:syscalls:sys_enter_openat`.
    pub name: String,
    /// Size in bytes.
    pub size: u32,
    /// Fields in declaration order.
    pub fields: Vec<Field>,
    /// True when this record is a union.
    pub is_union: bool,
}

impl Record {
    /// Looks up a field by name.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// The type of a value in a sonde program.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    /// No value (statements, `printf`, ...).
    Void,
    /// `true`/`false`, comparisons.
    Bool,
    /// Integers of 8, 16, 32 or 64 bits.
    Int {
        /// Width in bits.
        bits: u8,
        /// Signedness.
        signed: bool,
    },
    /// A NUL-terminated string in a buffer of `size` bytes (including the NUL).
    Str {
        /// Buffer size in bytes.
        size: u32,
    },
    /// A byte buffer from `buf()`, printed with `%r`.
    Buf {
        /// Capacity in bytes.
        size: u32,
    },
    /// A pointer.
    Ptr {
        /// What it points to (`Void` for `void *`).
        pointee: Box<Type>,
        /// Address space.
        space: AddrSpace,
    },
    /// A struct or union (by value; accessed through pointers read with probe_read).
    Record(Arc<Record>),
    /// A fixed-size array `T[N]`.
    Array {
        /// Element type.
        elem: Box<Type>,
        /// Number of elements.
        len: u32,
    },
    /// A tuple `(a, b, ...)`.
    Tuple(Vec<Type>),
    /// An enum value (an integer printed by name where possible).
    Enum {
        /// The enum's tag name.
        name: String,
        /// Width in bits of the underlying integer.
        bits: u8,
    },
    /// A kernel or user stack (`kstack`, `ustack`).
    Stack {
        /// Kernel stack when true, user stack otherwise.
        kernel: bool,
        /// Print mode.
        mode: StackMode,
        /// Maximum number of frames.
        limit: u32,
    },
    /// A kernel symbol to print by name (`ksym(addr)`), or a user symbol (`usym(addr)`).
    Symbol {
        /// Kernel symbol when true.
        kernel: bool,
    },
    /// An IP address from `ntop()` (family + 16 bytes).
    Inet,
    /// A MAC address from `macaddr()`.
    MacAddr,
    /// A timestamp to format from `strftime()`.
    Timestamp,
    /// A user name from `username`.
    Username,
    /// A cgroup path from `cgroup_path()`.
    CgroupPath {
        /// `cgroup_path(id, filter)`'s wildcard over hierarchy names (cgroup2 is `unified`):
        /// only the paths in the hierarchies it matches print; `None` prints them all.
        filter: Option<String>,
    },
    /// A map value produced by an aggregation function.
    Agg(AggKind),
}

impl Type {
    /// An integer of `bytes` bytes (1, 2, 4 or 8), or a byte array when no integer type has
    /// that size (as a C type of another size reads).
    pub fn int_of_size(bytes: u64, signed: bool) -> Type {
        match bytes {
            1 | 2 | 4 | 8 => Type::Int {
                bits: (bytes * 8) as u8,
                signed,
            },
            n => Type::Array {
                elem: Box::new(Type::U8),
                len: u32::try_from(n).unwrap_or(u32::MAX),
            },
        }
    }
    /// `uint64`
    pub const U64: Type = Type::Int {
        bits: 64,
        signed: false,
    };
    /// `int64`
    pub const I64: Type = Type::Int {
        bits: 64,
        signed: true,
    };
    /// `uint32`
    pub const U32: Type = Type::Int {
        bits: 32,
        signed: false,
    };
    /// `int32`
    pub const I32: Type = Type::Int {
        bits: 32,
        signed: true,
    };
    /// `uint8`
    pub const U8: Type = Type::Int {
        bits: 8,
        signed: false,
    };

    /// True for integers, bools and enums (values that fit in a register).
    pub fn is_integer(&self) -> bool {
        matches!(self, Type::Int { .. } | Type::Bool | Type::Enum { .. })
    }

    /// True for signed integers.
    pub fn is_signed(&self) -> bool {
        matches!(self, Type::Int { signed: true, .. })
    }

    /// True for pointers.
    pub fn is_ptr(&self) -> bool {
        matches!(self, Type::Ptr { .. })
    }

    /// The size in bytes of a value of this type as stored in a map or event.
    ///
    /// Saturates at `u32::MAX` instead of wrapping: the sizes a script declares are bounded
    /// by [`crate::limits`], but a size computed from them (an array of records, a tuple of
    /// large values) must never come out small.
    pub fn size(&self) -> u32 {
        match self {
            Type::Void => 0,
            Type::Bool => 1,
            Type::Int { bits, .. } | Type::Enum { bits, .. } => u32::from(*bits) / 8,
            Type::Str { size } | Type::Buf { size } => *size,
            Type::Ptr { .. } => 8,
            Type::Record(r) => r.size,
            Type::Array { elem, len } => elem.size().saturating_mul(*len),
            Type::Tuple(items) => tuple_layout(items).1,
            Type::Stack { .. } => 8,
            // A user symbol also carries the pid whose address space it belongs to.
            Type::Symbol { kernel: true } => 8,
            Type::Symbol { kernel: false } => 16,
            Type::Inet => 24,
            Type::MacAddr => 6,
            Type::Timestamp => 16,
            Type::Username => 8,
            Type::CgroupPath { .. } => 8,
            Type::Agg(_) => 8,
        }
    }

    /// Natural alignment in bytes (1..=8).
    pub fn align(&self) -> u32 {
        match self {
            Type::Int { bits, .. } | Type::Enum { bits, .. } => (u32::from(*bits) / 8).max(1),
            Type::Ptr { .. } | Type::Stack { .. } | Type::Symbol { .. } | Type::Agg(_) => 8,
            Type::Username | Type::CgroupPath { .. } | Type::Timestamp | Type::Inet => 8,
            Type::Tuple(items) => items.iter().map(Type::align).max().unwrap_or(1),
            Type::Array { elem, .. } => elem.align(),
            Type::Record(_) => 8,
            _ => 1,
        }
    }
}

/// Byte offsets of each element of a tuple and the tuple's total size (C struct layout).
///
/// Offsets and size saturate at `u32::MAX` (see [`Type::size`]); the checker refuses tuples
/// larger than [`crate::limits::MAX_VALUE_SIZE`].
pub fn tuple_layout(items: &[Type]) -> (Vec<u32>, u32) {
    let mut offsets = Vec::with_capacity(items.len());
    let mut off = 0u32;
    let mut max_align = 1;
    for t in items {
        let a = t.align();
        max_align = max_align.max(a);
        off = align_up(off, a);
        offsets.push(off);
        off = off.saturating_add(t.size());
    }
    (offsets, align_up(off, max_align))
}

/// The type of a record `(name = value, ...)`: a struct named `record` whose fields are laid
/// out as a tuple's elements.
pub fn record_of(fields: Vec<(String, Type)>) -> Type {
    let types: Vec<Type> = fields.iter().map(|(_, t)| t.clone()).collect();
    let (offsets, size) = tuple_layout(&types);
    Type::Record(Arc::new(Record {
        name: RECORD_NAME.to_string(),
        size,
        fields: fields
            .into_iter()
            .zip(offsets)
            .map(|((name, ty), offset)| Field {
                name,
                offset,
                ty,
                bitfield: None,
                data_loc: false,
                nul_room: false,
            })
            .collect(),
        is_union: false,
    }))
}

/// The name of the records made by `(name = value, ...)`.
pub const RECORD_NAME: &str = "record";

/// `n` rounded up to a multiple of `align` (≥ 1), saturating at the largest multiple that
/// fits a `u32`.
pub fn align_up(n: u32, align: u32) -> u32 {
    let align = align.max(1);
    n.div_ceil(align)
        .checked_mul(align)
        .unwrap_or(u32::MAX / align * align)
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Void => write!(f, "void"),
            Type::Bool => write!(f, "bool"),
            Type::Int { bits, signed } => {
                write!(f, "{}int{}", if *signed { "" } else { "u" }, bits)
            }
            Type::Str { size } => write!(f, "string[{size}]"),
            Type::Buf { size } => write!(f, "buffer[{size}]"),
            Type::Ptr { pointee, .. } => write!(f, "{pointee} *"),
            Type::Record(r) => write!(f, "{}", r.name),
            Type::Array { elem, len } => write!(f, "{elem}[{len}]"),
            Type::Tuple(items) => {
                write!(f, "(")?;
                for (i, t) in items.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{t}")?;
                }
                write!(f, ")")
            }
            Type::Enum { name, .. } => write!(f, "enum {name}"),
            Type::Stack { kernel: true, .. } => write!(f, "kstack"),
            Type::Stack { kernel: false, .. } => write!(f, "ustack"),
            Type::Symbol { kernel: true } => write!(f, "ksym"),
            Type::Symbol { kernel: false } => write!(f, "usym"),
            Type::Inet => write!(f, "inet"),
            Type::MacAddr => write!(f, "macaddr"),
            Type::Timestamp => write!(f, "timestamp"),
            Type::Username => write!(f, "username"),
            Type::CgroupPath { .. } => write!(f, "cgroup_path"),
            Type::Agg(k) => write!(f, "{}", agg_name(k)),
        }
    }
}

/// The function name that produces an aggregation kind (`count`, `hist`, ...).
pub fn agg_name(k: &AggKind) -> &'static str {
    match k {
        AggKind::Count => "count",
        AggKind::Sum { .. } => "sum",
        AggKind::Avg { .. } => "avg",
        AggKind::Min { .. } => "min",
        AggKind::Max { .. } => "max",
        AggKind::Stats { .. } => "stats",
        AggKind::Hist { .. } => "hist",
        AggKind::Lhist { .. } => "lhist",
        AggKind::Tseries { .. } => "tseries",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_saturate_instead_of_wrapping() {
        let big = Type::Array {
            elem: Box::new(Type::U64),
            len: u32::MAX,
        };
        assert_eq!(big.size(), u32::MAX);
        let (offs, size) = tuple_layout(&[Type::U8, big.clone(), big]);
        assert_eq!(offs[1], 8);
        assert!(size >= offs[2], "{offs:?} {size}");
        assert_eq!(align_up(u32::MAX, 8), u32::MAX / 8 * 8);
        assert_eq!(align_up(9, 8), 16);
    }

    #[test]
    fn tuple_layout_pads_like_c() {
        let (offs, size) = tuple_layout(&[Type::U8, Type::U64, Type::Str { size: 3 }]);
        assert_eq!(offs, vec![0, 8, 16]);
        assert_eq!(size, 24);
    }
}
