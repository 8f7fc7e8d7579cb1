//! The kernel's GFP flag bits, for printf's `%gr` (bpftrace 0.26): a script that prints with
//! `%gr` carries the bit of each `___GFP_*_BIT` enumerator of the running kernel's BTF in its
//! enum table under [`TAG`], so the printers name the flags as that kernel numbers them (the
//! bits move with its configuration: `__GFP_SKIP_KASAN` exists only with KASAN).

use crate::enums::EnumTable;
use crate::program::EventSpec;
use sonde_lang::format::{Conv, FmtPiece, parse_format};
use sonde_lang::kernel::KernelInfo;

/// The enum-table tag under which a script keeps the kernel's GFP bits (not a C identifier,
/// so no enum of a script or of the kernel takes it).
pub const TAG: &str = "%gr";

/// The GFP bits, `___GFP_{NAME}_BIT` without prefix and suffix, in the kernel's order; a
/// kernel without GFP enumerators in its BTF gets these positions (bpftrace's table).
pub const BITS: &[&str] = &[
    "DMA",
    "HIGHMEM",
    "DMA32",
    "MOVABLE",
    "RECLAIMABLE",
    "HIGH",
    "IO",
    "FS",
    "ZERO",
    "UNUSED",
    "DIRECT_RECLAIM",
    "KSWAPD_RECLAIM",
    "WRITE",
    "NOWARN",
    "RETRY_MAYFAIL",
    "NOFAIL",
    "NORETRY",
    "MEMALLOC",
    "COMP",
    "NOMEMALLOC",
    "HARDWALL",
    "THISNODE",
    "ACCOUNT",
    "ZEROTAGS",
    "SKIP_ZERO",
    "SKIP_KASAN",
    "NO_OBJ_EXT",
];

/// Adds the kernel's GFP bits to `enums` when one of `events` formats with `%gr`.
pub fn add_bits(enums: &mut EnumTable, events: &[EventSpec], kernel: &dyn KernelInfo) {
    if events.iter().any(uses_gfp_flags) {
        enums.insert(TAG.to_string(), kernel_bits(kernel));
    }
}

/// `(NAME, bit)` of the GFP bits `kernel` defines; bpftrace's positions when it names none.
pub fn kernel_bits(kernel: &dyn KernelInfo) -> Vec<(String, i64)> {
    let found: Vec<(String, i64)> = BITS
        .iter()
        .filter_map(|name| {
            let (_, bit) = kernel.enum_value(&format!("___GFP_{name}_BIT"))?;
            Some((name.to_string(), bit))
        })
        .collect();
    if found.is_empty() {
        return default_bits();
    }
    found
}

/// bpftrace's positions of the GFP bits.
pub fn default_bits() -> Vec<(String, i64)> {
    (0..).zip(BITS).map(|(b, n)| (n.to_string(), b)).collect()
}

fn uses_gfp_flags(e: &EventSpec) -> bool {
    let format = match e {
        EventSpec::Printf { format, .. }
        | EventSpec::Cat { format, .. }
        | EventSpec::System { format, .. }
        | EventSpec::Log { format, .. } => format,
        _ => return false,
    };
    parse_format(format).is_ok_and(|pieces| {
        pieces
            .iter()
            .any(|p| matches!(p, FmtPiece::Spec(s) if s.conv == Conv::GfpFlags))
    })
}
