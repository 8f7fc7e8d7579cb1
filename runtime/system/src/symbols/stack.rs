//! Reading stacks from a stack-trace map and printing them as bpftrace 0.17 does.
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

use sonde_compiler::value::Frame;
use sonde_lang::types::StackMode;

use super::{SymbolSource, UserSymbol};

/// Frame indentation of a stack printed inside a map key.
pub const KEY_INDENT: usize = 4;
/// Frame indentation of a stack printed as a map value, by `print()` or `printf("%s")`.
pub const VALUE_INDENT: usize = 8;
/// The module name perf gives kernel frames (used for [`Frame::module`]).
pub const KERNEL_MODULE: &str = "[kernel.kallsyms]";

/// The addresses of a stack-trace map value: little-endian u64s up to the first zero.
pub fn decode_stack(value: &[u8]) -> Vec<u64> {
    value
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8-byte chunk")))
        .take_while(|a| *a != 0)
        .collect()
}

/// The frames of a build-id stack-trace map value (`ustack(build_id)`): 32-byte
/// `struct bpf_stack_build_id`s up to the first empty one. A frame whose file had a build id
/// (status 1) is that id in hex as its `symbol` and the file offset as its `addr`; one
/// without (status 2) is its raw address, unresolved. At most `limit` frames.
pub fn decode_build_id_stack(value: &[u8], limit: usize) -> Vec<Frame> {
    const VALID: i32 = 1;
    const IP: i32 = 2;
    value
        .chunks_exact(32)
        .map_while(|c| {
            let status = i32::from_le_bytes(c[0..4].try_into().expect("4 bytes"));
            let addr = u64::from_le_bytes(c[24..32].try_into().expect("8 bytes"));
            let symbol = match status {
                VALID => Some(c[4..24].iter().map(|b| format!("{b:02x}")).collect()),
                IP => None,
                _ => return None,
            };
            Some(Frame {
                addr,
                symbol,
                module: None,
            })
        })
        .take(limit)
        .collect()
}

/// The mark of a build-id stack's id in the value a program stores for it.
pub const BUILD_ID_STACK: u32 = sonde_compiler::catalog::builtins::stack::BUILD_ID_STACK as u32;

/// Splits the 8 bytes a program stores for a stack into `(stack id, pid)`: bpftrace packs
/// the id in the low 32 bits and the pid (for user stacks) in the high 32 bits.
pub fn split_stack_key(raw: u64) -> (u32, u32) {
    (raw as u32, (raw >> 32) as u32)
}

/// `func+offset` of a resolved frame.
fn func_offset(name: &str, offset: u64) -> String {
    format!("{name}+{offset}")
}

/// The resolution of one address: `(func+off, module)`; `None` when unresolved.
fn resolve(
    addr: u64,
    kernel: bool,
    pid: u32,
    syms: &dyn SymbolSource,
) -> Option<(String, Option<String>)> {
    if kernel {
        let (name, offset) = syms.ksym(addr)?;
        Some((func_offset(&name, offset), None))
    } else {
        let UserSymbol {
            name,
            offset,
            module,
        } = syms.usym(pid, addr)?;
        Some((func_offset(&name, offset), Some(module)))
    }
}

/// The addresses to print: up to the first zero, at most `limit`.
fn live_frames(frames: &[u64], limit: usize) -> impl Iterator<Item = u64> + '_ {
    frames.iter().copied().take_while(|a| *a != 0).take(limit)
}

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
    sonde_present::output::text::stack_text(&resolved, mode, kernel, indent == KEY_INDENT)
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
    sonde_present::output::folded::folded_frames(&resolve_frames(
        frames,
        kernel,
        pid,
        usize::MAX,
        syms,
    ))
}

/// The frames of a stack, resolved, for the output's [`Frame`] model (innermost first, at
/// most `limit`): `symbol` is `func+off`; `module` is the file path for user frames, the
/// kallsyms module or [`KERNEL_MODULE`] for kernel frames, `None` when unresolved.
pub fn resolve_frames(
    frames: &[u64],
    kernel: bool,
    pid: u32,
    limit: usize,
    syms: &dyn SymbolSource,
) -> Vec<Frame> {
    live_frames(frames, limit)
        .map(|addr| match resolve(addr, kernel, pid, syms) {
            Some((sym, module)) => Frame {
                addr,
                symbol: Some(sym),
                module: module.or_else(|| {
                    Some(
                        syms.kmodule(addr)
                            .unwrap_or_else(|| KERNEL_MODULE.to_string()),
                    )
                }),
            },
            None => Frame {
                addr,
                symbol: None,
                module: None,
            },
        })
        .collect()
}

#[cfg(test)]
#[path = "stack_tests.rs"]
mod tests;
