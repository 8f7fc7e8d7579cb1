//! Fake symbol tables for tests of symbolization and of the stack printers (`sonde-present`):
//! functions by start address, each extending to the next start.

use crate::symbols::{InlinedFunction, SourceInfo, SymbolSource, UserSymbol};
use std::sync::Arc;

/// The largest size of a fake function.
pub const SPAN: u64 = 0x1000;

/// Fake symbols: functions by start address, each extending to the next start (at most
/// [`SPAN`] bytes).
pub struct Fake {
    /// Kernel functions: (start, name).
    pub kernel: Vec<(u64, &'static str)>,
    /// User functions: (start, name, module).
    pub user: Vec<(u64, &'static str, &'static str)>,
    /// The source of user addresses (`show_debug_info`): (address, source).
    pub sources: Vec<(u64, SourceInfo)>,
}

impl SymbolSource for Fake {
    fn ksym(&self, addr: u64) -> Option<(String, u64)> {
        self.kernel
            .iter()
            .filter(|(start, _)| addr >= *start && addr - start < SPAN)
            .max_by_key(|(start, _)| *start)
            .map(|(start, name)| (name.to_string(), addr - start))
    }

    fn usym(&self, pid: u32, addr: u64) -> Option<UserSymbol> {
        assert_eq!(pid, 77, "user lookups carry the stack's pid");
        self.user
            .iter()
            .filter(|(start, _, _)| addr >= *start && addr - start < SPAN)
            .max_by_key(|(start, _, _)| *start)
            .map(|(start, name, module)| UserSymbol {
                name: name.to_string(),
                offset: addr - start,
                module: module.to_string(),
            })
    }

    fn usym_source(&self, pid: u32, addr: u64) -> Option<Arc<SourceInfo>> {
        assert_eq!(pid, 77, "user lookups carry the stack's pid");
        self.sources
            .iter()
            .find(|(a, _)| *a == addr)
            .map(|(_, s)| Arc::new(s.clone()))
    }

    fn kmodule(&self, addr: u64) -> Option<String> {
        (addr >= 0xffffffffc0000000).then(|| "[mymod]".to_string())
    }
}

/// The libc path the fake user functions live in.
pub const LIBC: &str = "/usr/lib/x86_64-linux-gnu/libc.so.6";

/// Fake symbols of a few kernel functions (one in a module) and user functions of libc and
/// of a program `/tmp/sym/m`, addresses and names from bpftrace 0.17 runs on this machine.
pub fn fake() -> Fake {
    Fake {
        kernel: vec![
            (0xffffffff815fa742 - 1122, "page_vma_mapped_walk"),
            (0xffffffff816a4334 - 132, "damon_folio_mkold_one"),
            (0xffffffff81389be8 - 248, "kthread"),
            (0xffffffffc0001000, "mod_fn"),
        ],
        user: vec![
            (0x7f8352dd54f7 - 7, "getppid", LIBC),
            (0x5607f2b03161 - 24, "mid", "/tmp/sym/m"),
            (0x5607f2b0317d - 26, "main", "/tmp/sym/m"),
        ],
        sources: Vec::new(),
    }
}

/// [`fake`], with DWARF for the program `/tmp/sym/m` of [`USTACK`]: two functions inlined at
/// its first address (`mid+24`), none at its second (`main+26`).
pub fn fake_with_sources() -> Fake {
    let inlined = |name: &str, line: u32| InlinedFunction {
        name: name.to_string(),
        location: Some(format!("/src/m.c:{line}")),
    };
    Fake {
        sources: vec![
            (
                USTACK[1],
                SourceInfo {
                    location: Some("/src/m.c:12".to_string()),
                    inlined: vec![inlined("leaf", 3), inlined("helper", 8)],
                },
            ),
            (
                USTACK[2],
                SourceInfo {
                    location: Some("/src/m.c:20".to_string()),
                    inlined: Vec::new(),
                },
            ),
        ],
        ..fake()
    }
}

/// A kernel stack of three frames (ending with 0) in [`fake`]'s functions.
pub const KSTACK: [u64; 4] = [
    0xffffffff815fa742,
    0xffffffff816a4334,
    0xffffffff81389be8,
    0,
];
/// A user stack of process 77 in [`fake`]'s functions (its last frame unresolved).
pub const USTACK: [u64; 4] = [
    0x7f8352dd54f7,
    0x5607f2b03161,
    0x5607f2b0317d,
    0x7f8352d2724a,
];
