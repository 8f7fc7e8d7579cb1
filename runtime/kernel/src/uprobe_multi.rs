//! Uprobes attached as uprobe-multi links (`BPF_TRACE_UPROBE_MULTI`, Linux 6.6) instead of
//! perf events.
//!
//! Detaching a perf-event uprobe takes the kernel an RCU grace period under a global mutex
//! (`perf_trace_event_unreg`), one probe at a time: ~50 ms each, so the 140 probes of
//! `sonde tool ltrace 'libc:str*'` took seconds to leave. A uprobe-multi link waits for its
//! grace period without that mutex, so links closed from several threads share one.
//!
//! aya 0.14 can neither load a program for such links (the kernel wants
//! `expected_attach_type = BPF_TRACE_UPROBE_MULTI` at load time) nor create them, so a
//! program whose code is self-contained (no callbacks, only map references) is taken from the
//! ELF here, its `ld_imm64` map references are resolved to the fds of the maps aya created,
//! and it is loaded with the `bpf()` wrappers of [`crate::syscall`]. Anything else (programs
//! with callbacks, USDT probes with semaphores, a kernel that refuses) takes aya's perf-event
//! path, which stays correct, only slower to detach.

use std::collections::HashMap;
use std::os::fd::{BorrowedFd, OwnedFd, RawFd};

use object::{Object, ObjectSection, ObjectSymbol, RelocationTarget};
use sonde_compiler::program::{AttachSpec, ProgramSpec};

/// `BPF_PSEUDO_MAP_FD`: an `ld_imm64` whose immediate is a map fd.
const PSEUDO_MAP_FD: u8 = 1;
/// `BPF_PSEUDO_MAP_VALUE`: an `ld_imm64` whose immediates are a map fd and an offset in the
/// map's first value.
const PSEUDO_MAP_VALUE: u8 = 2;
/// Opcode of `ld_imm64` (`BPF_LD | BPF_IMM | BPF_DW`).
const LD_IMM64: u8 = 0x18;
/// Opcode of a call (`BPF_JMP | BPF_CALL`).
const CALL: u8 = 0x85;
/// `BPF_PSEUDO_CALL`: a call whose immediate is a function of the program.
const PSEUDO_CALL: u8 = 1;

/// True when every target of `spec` is a uprobe or uretprobe without a USDT semaphore, all of
/// one kind: the programs this module may load.
pub(crate) fn wanted(spec: &ProgramSpec) -> bool {
    let mut kinds = spec.attach.iter().map(|t| match t.spec {
        AttachSpec::Uprobe {
            ret,
            ref_ctr_offset: 0,
            ..
        } => Some(ret),
        _ => None,
    });
    let Some(Some(first)) = kinds.next() else {
        return false;
    };
    kinds.all(|k| k == Some(first))
}

/// Loads programs of one ELF object for uprobe-multi links: the object is parsed once, and
/// its map references resolve through `map_fds` (map symbol → fd of the map aya created).
pub(crate) struct Loader<'a> {
    file: object::File<'a>,
    map_fds: HashMap<String, RawFd>,
}

impl<'a> Loader<'a> {
    /// A loader for `elf`, or `None` when it does not parse.
    pub(crate) fn new(elf: &'a [u8], map_fds: HashMap<String, RawFd>) -> Option<Loader<'a>> {
        let file = object::File::parse(elf).ok()?;
        Some(Loader { file, map_fds })
    }

    /// Loads program `symbol`, or `None` when it cannot be (see the module documentation:
    /// the caller then loads it with aya).
    pub(crate) fn load(&self, symbol: &str) -> Option<OwnedFd> {
        let code = program_code(&self.file, symbol, &self.map_fds)?;
        crate::syscall::prog_load_uprobe_multi(&code, symbol).ok()
    }
}

/// The encoded instructions of program `symbol` in `file` with its map references resolved
/// through `map_fds` (map symbol → fd), or `None` when the program is not self-contained
/// (a call to another function of the object, a reference to anything but a known map).
fn program_code(
    file: &object::File<'_>,
    symbol: &str,
    map_fds: &HashMap<String, RawFd>,
) -> Option<Vec<u8>> {
    let sym = file.symbols().find(|s| s.name() == Ok(symbol))?;
    let section = file.section_by_index(sym.section_index()?).ok()?;
    let data = section.data().ok()?;
    let start = usize::try_from(sym.address()).ok()?;
    let size = match sym.size() {
        0 => data.len().checked_sub(start)?,
        n => usize::try_from(n).ok()?,
    };
    let mut code = data.get(start..start.checked_add(size)?)?.to_vec();
    if code.len() % 8 != 0 {
        return None;
    }
    for (offset, reloc) in section.relocations() {
        let Some(at) = usize::try_from(offset)
            .ok()
            .and_then(|o| o.checked_sub(start))
            .filter(|&o| o < size)
        else {
            continue;
        };
        let RelocationTarget::Symbol(index) = reloc.target() else {
            return None;
        };
        let target = file.symbol_by_index(index).ok()?;
        let insn = code.get_mut(at..at + 16)?;
        if insn[0] != LD_IMM64 {
            return None;
        }
        // A symbol of a data section (the error counters' `.bss`) stands for an address in
        // the value of the map named after the section; others for the map of that name.
        let section = target
            .section_index()
            .and_then(|i| file.section_by_index(i).ok())
            .and_then(|s| s.name().ok().map(str::to_owned));
        match section.as_deref() {
            Some(data @ (".bss" | ".data" | ".rodata")) => {
                let fd = *map_fds.get(data)?;
                let base = i32::from_le_bytes(insn[4..8].try_into().ok()?);
                let off = base.checked_add(i32::try_from(target.address()).ok()?)?;
                insn[1] = (insn[1] & 0x0f) | (PSEUDO_MAP_VALUE << 4);
                insn[4..8].copy_from_slice(&fd.to_le_bytes());
                insn[12..16].copy_from_slice(&off.to_le_bytes());
            }
            _ => {
                let fd = *map_fds.get(target.name().ok()?)?;
                insn[1] = (insn[1] & 0x0f) | (PSEUDO_MAP_FD << 4);
                insn[4..8].copy_from_slice(&fd.to_le_bytes());
            }
        }
    }
    // Any call of a function of the object (bpf-to-bpf) needs the linking aya does.
    let local_call = code
        .chunks_exact(8)
        .any(|i| i[0] == CALL && i[1] >> 4 == PSEUDO_CALL);
    (!local_call).then_some(code)
}

/// Attaches a program [`Loader::load`] loaded at file offset `offset` of `path`.
pub(crate) fn attach(
    prog: BorrowedFd<'_>,
    path: &str,
    offset: u64,
    ret: bool,
    pid: Option<u32>,
) -> std::io::Result<OwnedFd> {
    let path = std::ffi::CString::new(path)
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    crate::syscall::link_create_uprobe_multi(prog, &path, offset, ret, pid)
}
