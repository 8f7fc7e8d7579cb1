//! Stacks as the kernel stores them and as symbols resolve them: stack-trace map values
//! decoded ([`decode_stack`], [`decode_build_id_stack`]), the id and pid packed into a key
//! ([`split_stack_key`]), and frames resolved to `func+offset` and their module
//! ([`resolve_frames`]). How they print (bpftrace's layouts) is `sonde-present`'s
//! `output::stacks`.

use sonde_compiler::value::Frame;

use super::{SymbolSource, UserSymbol};

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
                ..Frame::default()
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
pub fn func_offset(name: &str, offset: u64) -> String {
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

/// The frames of a stack, resolved, for the output's [`Frame`] model (innermost first, at
/// most `limit` addresses): `symbol` is `func+off`; `module` is the file path for user
/// frames, the kallsyms module or [`KERNEL_MODULE`] for kernel frames, `None` when
/// unresolved. A resolved user address whose file has DWARF also gets its source line, and
/// the functions inlined there come before it, innermost first (see
/// [`SymbolSource::usym_source`]): so a stack may have more frames than `limit`, as in
/// bpftrace 0.27.
pub fn resolve_frames(
    frames: &[u64],
    kernel: bool,
    pid: u32,
    limit: usize,
    syms: &dyn SymbolSource,
) -> Vec<Frame> {
    let mut out = Vec::new();
    for addr in live_frames(frames, limit) {
        let Some((sym, module)) = resolve(addr, kernel, pid, syms) else {
            out.push(Frame::new(addr, None, None));
            continue;
        };
        let module = module.or_else(|| {
            Some(
                syms.kmodule(addr)
                    .unwrap_or_else(|| KERNEL_MODULE.to_string()),
            )
        });
        let source = if kernel {
            None
        } else {
            syms.usym_source(pid, addr)
        };
        let mut frame = Frame::new(addr, Some(sym), module);
        if let Some(source) = source {
            out.extend(source.inlined.iter().map(|f| Frame {
                addr,
                symbol: Some(f.name.clone()),
                module: frame.module.clone(),
                source: f.location.clone(),
                inlined: true,
            }));
            frame.source = source.location.clone();
        }
        out.push(frame);
    }
    out
}

#[cfg(test)]
#[path = "stack_tests.rs"]
mod tests;
