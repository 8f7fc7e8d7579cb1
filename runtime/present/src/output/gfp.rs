//! printf's `%gr`: an integer as GFP flag names in bpftrace 0.26's layout
//! (`GFP_KERNEL|__GFP_ZERO`, left-over bits as `0x...`), with the bit positions of the kernel
//! the script was compiled for (its enum table under [`sonde_compiler::gfp::TAG`]).

use super::Resolver;
use sonde_compiler::gfp::{BITS, TAG, default_bits};

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
    // The kernel's combinations (`gfp_types.h`), named whole before single bits, the widest
    // first, in its `__def_gfpflag_names` order.
    let reclaim = mask(&["DIRECT_RECLAIM", "KSWAPD_RECLAIM"]);
    let nofs = reclaim | mask(&["IO"]);
    let kernel = nofs | mask(&["FS"]);
    let user = kernel | mask(&["HARDWALL"]);
    let highuser = user | mask(&["HIGHMEM"]);
    let highuser_movable = highuser | mask(&["MOVABLE", "SKIP_KASAN"]);
    let transhuge_light = (highuser_movable | mask(&["COMP", "NOMEMALLOC", "NOWARN"])) & !reclaim;
    let combinations = [
        ("GFP_TRANSHUGE", transhuge_light | mask(&["DIRECT_RECLAIM"])),
        ("GFP_TRANSHUGE_LIGHT", transhuge_light),
        ("GFP_HIGHUSER_MOVABLE", highuser_movable),
        ("GFP_HIGHUSER", highuser),
        ("GFP_USER", user),
        ("GFP_KERNEL_ACCOUNT", kernel | mask(&["ACCOUNT"])),
        ("GFP_KERNEL", kernel),
        ("GFP_NOFS", nofs),
        ("GFP_ATOMIC", mask(&["HIGH", "KSWAPD_RECLAIM"])),
        ("GFP_NOIO", reclaim),
        ("GFP_NOWAIT", mask(&["KSWAPD_RECLAIM", "NOWARN"])),
        ("GFP_DMA", mask(&["DMA"])),
        ("__GFP_HIGHMEM", mask(&["HIGHMEM"])),
        ("GFP_DMA32", mask(&["DMA32"])),
    ];
    // Then the single bits from `__GFP_HIGH` on, in the kernel's order.
    let first_single = BITS.iter().position(|b| *b == "HIGH").unwrap_or(0);
    let singles = BITS[first_single..]
        .iter()
        .filter(|b| **b != "UNUSED")
        .map(|b| (format!("__GFP_{b}"), mask(&[b])));
    let named = combinations
        .into_iter()
        .map(|(n, m)| (n.to_string(), m))
        .chain(singles);
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
