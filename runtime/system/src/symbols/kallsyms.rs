//! Kernel symbols from `/proc/kallsyms`.
//!
//! The file is read once, on first use, and only text symbols (types `t`, `T`, `w`, `W`)
//! are kept, sorted by address, so that a code address resolves by binary search to the
//! function that contains it. As root the addresses are real; for other users the kernel
//! prints zeros, and the table is then empty (every lookup fails).

use std::sync::OnceLock;

/// One kernel text symbol.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelSymbol {
    /// Start address.
    pub address: u64,
    /// Function name.
    pub name: String,
    /// The module that defines it (`[module]` in kallsyms, without the brackets); `None` for
    /// the kernel image itself.
    pub module: Option<String>,
}

/// The kernel's text symbols, sorted by address.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelSymbols {
    symbols: Vec<KernelSymbol>,
}

/// True for the kallsyms types of functions: local/global text and weak symbols.
fn is_text_type(kind: &str) -> bool {
    matches!(kind, "t" | "T" | "w" | "W")
}

/// Splits one kallsyms line `addr type name[\t[module]]` into its parts.
fn parse_line(line: &str) -> Option<(u64, &str, &str, Option<&str>)> {
    let (symbol, module) = match line.split_once('\t') {
        Some((s, m)) => (
            s,
            Some(m.trim().trim_start_matches('[').trim_end_matches(']')),
        ),
        None => (line, None),
    };
    let mut fields = symbol.split_ascii_whitespace();
    let address = u64::from_str_radix(fields.next()?, 16).ok()?;
    let kind = fields.next()?;
    let name = fields.next()?;
    Some((address, kind, name, module))
}

impl KernelSymbols {
    /// Parses the text of `/proc/kallsyms`, keeping text symbols. Symbols at address 0 (all
    /// of them when the reader is not privileged) are dropped.
    pub fn parse(text: &str) -> KernelSymbols {
        let mut symbols: Vec<KernelSymbol> = text
            .lines()
            .filter_map(parse_line)
            .filter(|(address, kind, _, _)| *address != 0 && is_text_type(kind))
            .map(|(address, _, name, module)| KernelSymbol {
                address,
                name: name.to_string(),
                module: module.map(str::to_string),
            })
            .collect();
        // Stable: among aliases at one address, the first listed stays first and wins.
        symbols.sort_by_key(|s| s.address);
        KernelSymbols { symbols }
    }

    /// Reads and parses `/proc/kallsyms`.
    pub fn load() -> std::io::Result<KernelSymbols> {
        Ok(KernelSymbols::parse(&std::fs::read_to_string(
            "/proc/kallsyms",
        )?))
    }

    /// Number of text symbols held.
    pub fn len(&self) -> usize {
        self.symbols.len()
    }

    /// True when no symbol is known (no permission, or kallsyms unreadable).
    pub fn is_empty(&self) -> bool {
        self.symbols.is_empty()
    }

    /// The symbol containing `addr`: the one with the greatest start address not above it.
    pub fn lookup(&self, addr: u64) -> Option<&KernelSymbol> {
        let after = self.symbols.partition_point(|s| s.address <= addr);
        let last = self.symbols[..after].last()?;
        // Walk back to the first alias listed at that address.
        let first = self.symbols[..after].partition_point(|s| s.address < last.address);
        self.symbols.get(first)
    }

    /// `(name, offset)` of the function containing `addr`.
    pub fn ksym(&self, addr: u64) -> Option<(&str, u64)> {
        self.lookup(addr)
            .map(|s| (s.name.as_str(), addr - s.address))
    }

    /// The address of the text symbol `name` (the first one listed when several share it).
    pub fn address_of(&self, name: &str) -> Option<u64> {
        self.symbols
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.address)
    }
}

/// The process-wide kernel symbol table, read from `/proc/kallsyms` on first use (an
/// unreadable file gives an empty table).
pub fn kernel_symbols() -> &'static KernelSymbols {
    static TABLE: OnceLock<KernelSymbols> = OnceLock::new();
    TABLE.get_or_init(|| KernelSymbols::load().unwrap_or_default())
}

/// `(name, offset)` of the kernel function containing `addr`, from the process-wide table.
pub fn ksym(addr: u64) -> Option<(&'static str, u64)> {
    kernel_symbols().ksym(addr)
}

/// The address of any kernel symbol called `name` (text or data, for bpftrace's `kaddr()`),
/// read from `/proc/kallsyms` at each call (this is a compile-time lookup). `None` when the
/// symbol is absent or its address is hidden (shown as 0).
pub fn resolve_kaddr(name: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/kallsyms").ok()?;
    text.lines()
        .filter_map(parse_line)
        .find(|(_, _, n, _)| *n == name)
        .map(|(address, _, _, _)| address)
        .filter(|a| *a != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
ffffffff81000000 T _stext
ffffffff81000010 t alias_a
ffffffff81000010 T alias_b
ffffffff81000100 D some_data
ffffffff81000200 W weak_fn
ffffffff81000300 r rodata
0000000000000000 A fixed_percpu_data
ffffffffc0201000 t ftrace_trampoline\t[__builtin__ftrace]
ffffffffc0300000 T mod_func\t[mymod]
";

    #[test]
    fn keeps_only_text_symbols_sorted() {
        let t = KernelSymbols::parse(SAMPLE);
        assert_eq!(t.len(), 6);
        assert_eq!(t.ksym(0xffffffff81000000), Some(("_stext", 0)));
        assert_eq!(t.ksym(0xffffffff8100000f), Some(("_stext", 15)));
        // Data symbols are not functions: the address stays in the preceding function.
        assert_eq!(t.ksym(0xffffffff81000150), Some(("alias_a", 0x140)));
        assert_eq!(t.ksym(0xffffffff81000205), Some(("weak_fn", 5)));
        assert_eq!(
            t.ksym(0xfffffffff0000000 - 1).map(|s| s.0),
            Some("mod_func")
        );
        assert_eq!(t.ksym(0x1000), None);
    }

    #[test]
    fn first_alias_wins_and_modules_are_kept() {
        let t = KernelSymbols::parse(SAMPLE);
        assert_eq!(t.ksym(0xffffffff81000012), Some(("alias_a", 2)));
        let m = t.lookup(0xffffffffc0300004).unwrap();
        assert_eq!(m.name, "mod_func");
        assert_eq!(m.module.as_deref(), Some("mymod"));
        assert_eq!(
            t.lookup(0xffffffffc0201000).unwrap().module.as_deref(),
            Some("__builtin__ftrace")
        );
        assert_eq!(t.lookup(0xffffffff81000000).unwrap().module, None);
        assert_eq!(t.address_of("alias_b"), Some(0xffffffff81000010));
        assert_eq!(t.address_of("some_data"), None);
    }

    #[test]
    fn unprivileged_zero_addresses_give_an_empty_table() {
        let t = KernelSymbols::parse("0000000000000000 T schedule\n0000000000000000 t foo\n");
        assert!(t.is_empty());
        assert_eq!(t.ksym(0), None);
    }

    #[test]
    fn real_kallsyms_resolves_schedule() {
        let text = std::fs::read_to_string("/proc/kallsyms").unwrap();
        let addr = text
            .lines()
            .filter_map(parse_line)
            .find(|(_, k, n, _)| *n == "schedule" && k.eq_ignore_ascii_case("t"))
            .map(|(a, _, _, _)| a)
            .expect("schedule in /proc/kallsyms");
        assert_ne!(addr, 0, "tests run as root: kallsyms addresses are real");
        assert_eq!(ksym(addr), Some(("schedule", 0)));
        assert_eq!(ksym(addr + 5), Some(("schedule", 5)));
        assert_eq!(kernel_symbols().address_of("schedule"), Some(addr));
        assert_eq!(resolve_kaddr("schedule"), Some(addr));
        assert_eq!(resolve_kaddr("no_such_kernel_symbol_xyz"), None);
    }
}
