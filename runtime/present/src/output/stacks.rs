//! Stacks printed as bpftrace 0.17 prints them, their frames resolved through a
//! [`SymbolSource`] (`sonde-system`'s symbols, or a fake in tests).
//!
//! bpftrace's layout (checked against `/usr/bin/bpftrace` 0.17 on this machine):
//!
//! - A stack's text starts with a newline and ends each frame with a newline, so inside a map
//!   key it reads `@[\n    f1+1\n    f2+2\n]: 3`, and as a value `@v: \n        f1+1\n...`.
//! - Default mode: each frame is `func+offset` (decimal offset) after `indent` spaces: 4 in
//!   map keys ([`KEY_INDENT`]), 8 for values, `print()` and `printf("%s")`
//!   ([`VALUE_INDENT`]). An unresolved address prints as `0x` and lowercase hex.
//! - Perf mode: `\t<hex address> <symbol>`; user frames add ` (<module path>)`, or
//!   ` ([unknown])` when unresolved. Kernel frames carry no module.
//! - Raw mode (not in 0.17, which rejects `kstack(raw)`; later versions): the hex address.
//! - A missing stack (a kernel stack taken in user mode, where `bpf_get_stackid` fails)
//!   prints as the empty string: `@[]: 12`.

use sonde_lang::types::StackMode;
use sonde_system::symbols::{SymbolSource, func_offset, resolve_frames};

/// Frame indentation of a stack printed inside a map key.
pub const KEY_INDENT: usize = 4;
/// Frame indentation of a stack printed as a map value, by `print()` or `printf("%s")`.
pub const VALUE_INDENT: usize = 8;
/// The text of a stack exactly as bpftrace prints it (see the module docs): `frames` are
/// innermost first; `pid` is the process of a user stack (ignored for kernel stacks);
/// `limit` caps the number of frames; `indent` is [`KEY_INDENT`] or [`VALUE_INDENT`]
/// (default mode only). An empty stack gives the empty string.
pub fn format_stack(
    frames: &[u64],
    kernel: bool,
    pid: u32,
    mode: StackMode,
    limit: usize,
    indent: usize,
    syms: &dyn SymbolSource,
) -> String {
    let resolved = resolve_frames(frames, kernel, pid, limit, syms);
    crate::output::text::stack_text(&resolved, mode, kernel, indent == KEY_INDENT)
}

/// One address as bpftrace's `ksym()` / `usym()` print it: the function name (with
/// `+offset` when `show_offset`), or `0x` and hex when unresolved.
pub fn symbol_text(
    addr: u64,
    kernel: bool,
    pid: u32,
    show_offset: bool,
    syms: &dyn SymbolSource,
) -> String {
    let sym = if kernel {
        syms.ksym(addr)
    } else {
        syms.usym(pid, addr).map(|u| (u.name, u.offset))
    };
    match sym {
        Some((name, offset)) if show_offset => func_offset(&name, offset),
        Some((name, _)) => name,
        None => format!("{addr:#x}"),
    }
}

/// A stack as one folded line for flame graphs: function names without offsets, root
/// first, joined by `;` (unresolved frames as `0x` hex). Empty for an empty stack.
pub fn folded(frames: &[u64], kernel: bool, pid: u32, syms: &dyn SymbolSource) -> String {
    crate::output::folded::folded_frames(&resolve_frames(frames, kernel, pid, usize::MAX, syms))
}

#[cfg(test)]
#[path = "stacks_tests.rs"]
mod tests;
