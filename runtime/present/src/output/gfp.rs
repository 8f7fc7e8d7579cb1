//! printf's `%gr`: an integer as GFP flag names in bpftrace 0.26's layout
//! (`GFP_KERNEL|__GFP_ZERO`, left-over bits as `0x...`), with the bit positions of the kernel
//! the script was compiled for (its enum table under [`sonde_compiler::gfp::TAG`]).

use super::Resolver;
use sonde_compiler::gfp::{TAG, default_bits};

const RECLAIM: &[&str] = &["DIRECT_RECLAIM", "KSWAPD_RECLAIM"];
const KERNEL: &[&str] = &["DIRECT_RECLAIM", "KSWAPD_RECLAIM", "IO", "FS"];
const USER: &[&str] = &["DIRECT_RECLAIM", "KSWAPD_RECLAIM", "IO", "FS", "HARDWALL"];
const HIGHUSER_MOVABLE: &[&str] = &[
    "DIRECT_RECLAIM",
    "KSWAPD_RECLAIM",
    "IO",
    "FS",
    "HARDWALL",
    "HIGHMEM",
    "MOVABLE",
    "SKIP_KASAN",
];
const TRANSHUGE_LIGHT: &[&str] = &[
    "IO",
    "FS",
    "HARDWALL",
    "HIGHMEM",
    "MOVABLE",
    "SKIP_KASAN",
    "COMP",
    "NOMEMALLOC",
    "NOWARN",
];
const TRANSHUGE: &[&str] = &[
    "IO",
    "FS",
    "HARDWALL",
    "HIGHMEM",
    "MOVABLE",
    "SKIP_KASAN",
    "COMP",
    "NOMEMALLOC",
    "NOWARN",
    "DIRECT_RECLAIM",
];

/// The combinations named whole, in the kernel's `__def_gfpflag_names` order (the larger
/// first, so a value is named by the widest combination it holds), each by its bits.
const COMBINATIONS: &[(&str, &[&str])] = &[
    ("GFP_TRANSHUGE", TRANSHUGE),
    ("GFP_TRANSHUGE_LIGHT", TRANSHUGE_LIGHT),
    ("GFP_HIGHUSER_MOVABLE", HIGHUSER_MOVABLE),
    (
        "GFP_HIGHUSER",
        &[
            "DIRECT_RECLAIM",
            "KSWAPD_RECLAIM",
            "IO",
            "FS",
            "HARDWALL",
            "HIGHMEM",
        ],
    ),
    ("GFP_USER", USER),
    (
        "GFP_KERNEL_ACCOUNT",
        &["DIRECT_RECLAIM", "KSWAPD_RECLAIM", "IO", "FS", "ACCOUNT"],
    ),
    ("GFP_KERNEL", KERNEL),
    ("GFP_NOFS", &["DIRECT_RECLAIM", "KSWAPD_RECLAIM", "IO"]),
    ("GFP_ATOMIC", &["HIGH", "KSWAPD_RECLAIM"]),
    ("GFP_NOIO", RECLAIM),
    ("GFP_NOWAIT", &["KSWAPD_RECLAIM", "NOWARN"]),
    ("GFP_DMA", &["DMA"]),
    ("__GFP_HIGHMEM", &["HIGHMEM"]),
    ("GFP_DMA32", &["DMA32"]),
];

/// The single bits named after the combinations, in the kernel's order.
const SINGLES: &[&str] = &[
    "HIGH",
    "IO",
    "FS",
    "ZERO",
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

/// `value` as GFP flag names, with the bit positions `resolver` knows for the script (the
/// kernel's), else bpftrace's.
pub fn gfp_text(value: u64, resolver: &dyn Resolver) -> String {
    let mut bits: Vec<(String, i64)> = (0..64)
        .filter_map(|b| Some((resolver.enum_variant(TAG, b)?, b)))
        .collect();
    if bits.is_empty() {
        bits = default_bits();
    }
    format_gfp(value, &bits)
}

/// `value` as GFP flag names, given each bit's `(NAME, position)` (a name missing is a bit
/// the kernel does not have).
pub fn format_gfp(value: u64, bits: &[(String, i64)]) -> String {
    if value == 0 {
        return "0".into();
    }
    let mask = |names: &[&str]| -> u64 {
        names
            .iter()
            .filter_map(|n| bits.iter().find(|(b, _)| b == n))
            .filter(|(_, pos)| (0..64).contains(pos))
            .fold(0, |m, (_, pos)| m | 1u64 << pos)
    };
    let named = COMBINATIONS
        .iter()
        .map(|(name, set)| (name.to_string(), mask(set)))
        .chain(SINGLES.iter().map(|s| (format!("__GFP_{s}"), mask(&[s]))));
    let mut parts = Vec::new();
    let mut rest = value;
    for (name, m) in named {
        if m != 0 && rest & m == m {
            parts.push(name);
            rest &= !m;
        }
    }
    if rest != 0 {
        parts.push(format!("{rest:#x}"));
    }
    parts.join("|")
}

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_compiler::gfp::BITS;

    /// Bits as Linux 6.18 without KASAN numbers them (SKIP_ZERO and SKIP_KASAN absent).
    fn linux_6_18() -> Vec<(String, i64)> {
        (0..)
            .zip(BITS.iter().filter(|b| !b.starts_with("SKIP")))
            .map(|(p, n)| (n.to_string(), p))
            .collect()
    }

    #[test]
    fn combinations_are_named_whole() {
        let bits = default_bits();
        // GFP_KERNEL = __GFP_RECLAIM | __GFP_IO | __GFP_FS = 0xcc0.
        assert_eq!(format_gfp(0xcc0, &bits), "GFP_KERNEL");
        assert_eq!(format_gfp(0xcc0 | 0x100, &bits), "GFP_KERNEL|__GFP_ZERO");
        assert_eq!(format_gfp(0x400cc0, &bits), "GFP_KERNEL_ACCOUNT");
        assert_eq!(format_gfp(0x820, &bits), "GFP_ATOMIC");
        assert_eq!(format_gfp(0x2800, &bits), "GFP_NOWAIT");
        assert_eq!(format_gfp(0, &bits), "0");
        assert_eq!(format_gfp(1 << 40, &bits), "0x10000000000");
        assert_eq!(
            format_gfp(0x100 | 1 << 40, &bits),
            "__GFP_ZERO|0x10000000000"
        );
    }

    #[test]
    fn the_kernels_positions_decide() {
        // Without KASAN, __GFP_NO_OBJ_EXT is bit 24 (bpftrace's table says 26).
        let bits = linux_6_18();
        assert_eq!(format_gfp(1 << 24, &bits), "__GFP_NO_OBJ_EXT");
        assert_eq!(format_gfp(1 << 24, &default_bits()), "__GFP_SKIP_ZERO");
        // GFP_HIGHUSER_MOVABLE has no SKIP_KASAN bit there.
        assert_eq!(format_gfp(0x100cca, &bits), "GFP_HIGHUSER_MOVABLE");
    }
}
