//! A pass over the emitted BPF of one function, before its jumps are laid out
//! ([`super::jumps`]): copies are propagated along straight-line code, then instructions
//! whose result nothing reads are removed, until nothing changes.
//!
//! - *Copy propagation*: after `mov rX, rY` (64-bit), a later read of `rX` — an operand, a
//!   memory base, a compared register — reads `rY` instead, for as long as neither is written
//!   and no jump can arrive in between. `r7 = r0; r6 = r7` becomes `r7 = r0; r6 = r0`. Copies
//!   of `r10` are not propagated (the frame pointer is only ever a memory base).
//! - *Constant propagation*: after `mov rX, imm` (64-bit), a later register operand `rX` of
//!   an ALU instruction, a conditional jump or a store becomes the immediate, under the same
//!   conditions: `r2 = 1; r8 += r2` becomes `r8 += 1`, `*(u64 *)(r10 -8) = r2` becomes
//!   `*(u64 *)(r10 -8) = 1`. Division by 0 and out-of-range shifts keep their register (their
//!   immediate forms are refused by the verifier).
//! - *Constant folding and stored values*: `r = 0; r += 1` becomes `r = 1`; a load from the
//!   stack of what a store just wrote there (`*(u64 *)(r10 -16) = 0; r8 = *(u64 *)(r10 -16)`)
//!   becomes a move of the stored constant or register.
//! - *Dead stores*: a store to the stack (`r10` + offset) that a later store in the same
//!   straight-line code overwrites whole, with nothing in between that could read memory (a
//!   load, a call, an atomic), is removed: a key zeroed and then written.
//! - *Identities*: `r += 0`, `r <<= 0`, `r *= 1` and the like (64-bit) are removed, `r &= 0`
//!   becomes `r = 0`.
//! - *Empty jumps*: a jump to the next instruction is removed.
//! - *Dead code*: a register-only instruction (arithmetic, a move, a load, a constant) whose
//!   destination no path reads before writing it again is removed: `r6 = r1` when the context
//!   is never read, `r7 = r0` after a helper whose result is ignored, the moves the
//!   propagation emptied, and moves of a register to itself. Stores, calls, jumps, atomics and relocated instructions stay.
//!
//! Both are exact on BPF's semantics: a call reads `r1`–`r5` and writes `r0`–`r5`, `exit`
//! reads `r0`, and the verifier links a copy to its source (bounds and null checks learnt on
//! one apply to the other), so what it accepted before it accepts after. Jump sites, map and
//! callback relocations and the per-instruction spans follow the instructions that remain.

use super::emit::Emitted;
use super::jumps::Site;
use super::retarget;
use crate::bpf::insn::{Insn, MODE_ATOMIC, OP_CALL, OP_END, OP_EXIT, OP_JA, SRC_X, class};

/// ALU operation codes (high nibble) this pass tells apart, besides `bpf::insn`'s.
const OP_ADD: u8 = 0x00;
const OP_SUB: u8 = 0x10;
const OP_MUL: u8 = 0x20;
const OP_OR: u8 = 0x40;
const OP_AND: u8 = 0x50;
const OP_XOR: u8 = 0xa0;
const OP_MOV: u8 = 0xb0;
const OP_NEG: u8 = 0x80;
/// `ld_imm64`.
const LD_IMM64: u8 = 0x18;
/// `mov64 rX, rY`.
pub(super) const MOV64_X: u8 = class::ALU64 | SRC_X | OP_MOV;

/// `r0`–`r5`: what a call writes.
const CALL_CLOBBERS: u16 = 0b11_1111;
/// `r1`–`r5`: what a call may read.
const CALL_ARGS: u16 = 0b11_1110;

fn bit(r: u8) -> u16 {
    1 << r
}

/// What an instruction reads, what it always writes, and what it may write.
pub(super) fn effects(i: &Insn) -> (u16, u16, u16) {
    let op = i.code & 0xf0;
    match i.code & 7 {
        class::ALU | class::ALU64 => {
            let src = if i.code & SRC_X != 0 && op != OP_END {
                bit(i.src)
            } else {
                0
            };
            let reads = match op {
                OP_MOV => src,
                OP_NEG | OP_END => bit(i.dst),
                _ => bit(i.dst) | src,
            };
            (reads, bit(i.dst), bit(i.dst))
        }
        class::LDX => (bit(i.src), bit(i.dst), bit(i.dst)),
        class::ST => (bit(i.dst), 0, 0),
        class::STX if i.code & 0xe0 == MODE_ATOMIC => {
            // Fetching atomics write their source register (compare-exchange: r0).
            (bit(i.dst) | bit(i.src) | bit(0), 0, bit(i.src) | bit(0))
        }
        class::STX => (bit(i.dst) | bit(i.src), 0, 0),
        class::LD if i.code == LD_IMM64 => (0, bit(i.dst), bit(i.dst)),
        class::JMP | class::JMP32 => match op {
            OP_CALL => (CALL_ARGS, CALL_CLOBBERS, CALL_CLOBBERS),
            OP_EXIT => (bit(0), 0, 0),
            OP_JA => (0, 0, 0),
            _ => {
                let src = if i.code & SRC_X != 0 { bit(i.src) } else { 0 };
                (bit(i.dst) | src, 0, 0)
            }
        },
        // Anything else: assume it reads and may write everything.
        _ => (0x7ff, 0, 0x7ff),
    }
}

/// Whether `i` names a register in its `dst` and `src` fields (an immediate operand, a byte
/// swap's width and `ld_imm64`'s pseudo source are not registers).
pub(super) fn register_roles(i: &Insn) -> (bool, bool) {
    match i.code & 7 {
        class::ALU | class::ALU64 => (true, i.code & SRC_X != 0 && i.code & 0xf0 != OP_END),
        class::LDX | class::STX => (true, true),
        class::ST => (true, false),
        class::LD if i.code == LD_IMM64 => (true, false),
        class::JMP | class::JMP32 if !matches!(i.code & 0xf0, OP_CALL | OP_EXIT | OP_JA) => {
            (true, i.code & SRC_X != 0)
        }
        _ => (false, false),
    }
}

/// True when every register `i` reads or writes is named by its fields (not a call's or an
/// exit's implied registers, not an unknown instruction).
pub(super) fn register_fields(i: &Insn) -> bool {
    match i.code & 7 {
        class::ALU | class::ALU64 | class::LDX | class::ST | class::STX => true,
        class::LD => i.code == LD_IMM64,
        _ => false,
    }
}

/// The slots an instruction takes (an `ld_imm64` two).
pub(super) fn width(i: &Insn) -> usize {
    if i.code == LD_IMM64 { 2 } else { 1 }
}

/// The function as the pass sees it: which slots start an instruction, where jumps go, and
/// which instructions must stay.
struct Shape {
    /// Per slot: the jump target of the site there.
    target: Vec<Option<usize>>,
    /// Per slot: a jump arrives here.
    joined: Vec<bool>,
    /// Per slot: a relocation or a jump site (kept whatever the liveness).
    pinned: Vec<bool>,
}

impl Shape {
    fn new(out: &Emitted, sites: &[Site]) -> Shape {
        let n = out.insns.len();
        let mut s = Shape {
            target: vec![None; n],
            joined: vec![false; n + 1],
            pinned: vec![false; n],
        };
        for site in sites {
            s.target[site.at] = Some(site.target);
            s.joined[site.target] = true;
            s.pinned[site.at] = true;
        }
        for &(at, _) in out.map_relocs.iter().chain(&out.func_relocs) {
            s.pinned[at] = true;
        }
        s
    }

    /// Where control goes after the instruction at `i`.
    fn successors(&self, insns: &[Insn], i: usize) -> Vec<usize> {
        let insn = &insns[i];
        let next = i + width(insn);
        let op = insn.code & 0xf0;
        match (insn.code & 7, self.target[i]) {
            (class::JMP, _) if op == OP_EXIT => Vec::new(),
            (class::JMP, Some(t)) if op == OP_JA => vec![t],
            (class::JMP | class::JMP32, Some(t)) => vec![next, t],
            _ => vec![next],
        }
    }
}

/// The instruction starts among the slots of `insns`.
fn starts(insns: &[Insn]) -> Vec<usize> {
    let mut v = Vec::with_capacity(insns.len());
    let mut i = 0;
    while i < insns.len() {
        v.push(i);
        i += width(&insns[i]);
    }
    v
}

/// `mov64 rX, imm`.
const MOV64_K: u8 = class::ALU64 | OP_MOV;
/// ALU operation codes whose immediate form the verifier checks (0 divisor, shift range).
const OP_DIV: u8 = 0x30;
const OP_MOD: u8 = 0x90;
const OP_LSH: u8 = 0x60;
const OP_RSH: u8 = 0x70;
const OP_ARSH: u8 = 0xc0;

/// Rewrites `insn`'s register source to the immediate `k` where that means the same.
fn use_constant(insn: &mut Insn, k: i32) -> bool {
    let op = insn.code & 0xf0;
    let ok = match insn.code & 7 {
        class::ALU | class::ALU64 => {
            let bits = if insn.code & 7 == class::ALU64 {
                64
            } else {
                32
            };
            match op {
                OP_END => false,
                OP_MOV => insn.off == 0,
                OP_DIV | OP_MOD => k != 0,
                OP_LSH | OP_RSH | OP_ARSH => (0..bits).contains(&k),
                _ => true,
            }
        }
        class::JMP | class::JMP32 => !matches!(op, OP_CALL | OP_EXIT | OP_JA),
        class::STX => insn.code & 0xe0 != MODE_ATOMIC,
        _ => false,
    };
    if !ok {
        return false;
    }
    if insn.code & 7 == class::STX {
        // STX (mode MEM, size) becomes ST with the same mode and size.
        insn.code = (insn.code & !7) | class::ST;
    } else {
        insn.code &= !SRC_X;
    }
    insn.src = 0;
    insn.imm = k;
    true
}

/// True for a 64-bit operation with an immediate that leaves its register as it is
/// (`r += 0`, `r <<= 0`, `r *= 1`, ...). 32-bit ones are not: they clear the upper half.
fn identity(i: &Insn) -> bool {
    if i.code & 7 != class::ALU64 || i.code & SRC_X != 0 || i.off != 0 {
        return false;
    }
    match i.code & 0xf0 {
        OP_ADD | OP_SUB | OP_OR | OP_XOR | OP_LSH | OP_RSH | OP_ARSH => i.imm == 0,
        OP_MUL | OP_DIV => i.imm == 1,
        _ => false,
    }
}

/// What a store to the stack wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stored {
    /// An immediate (sign-extended to the store's size).
    Imm(i32),
    /// A register's value (still in it while it is not written).
    Reg(u8),
}

/// The move that replaces `insn`, a 64-bit load from the stack of exactly what a tracked
/// store wrote there (a 32-bit load of a non-negative immediate too).
fn forward_load(insn: &Insn, mem: &[(i32, i32, Stored)]) -> Option<Insn> {
    if insn.code & 7 != class::LDX || insn.code & 0xe0 != 0x60 || insn.src != 10 {
        return None;
    }
    let size = crate::bpf::insn::Size::from_code(insn.code).bytes() as i32;
    let off = i32::from(insn.off);
    let &(_, _, v) = mem.iter().find(|&&(o, s, _)| o == off && s == size)?;
    match (v, size) {
        (Stored::Imm(k), 8) => Some(Insn::new(MOV64_K, insn.dst, 0, 0, k)),
        (Stored::Imm(k), 4) if k >= 0 => Some(Insn::new(MOV64_K, insn.dst, 0, 0, k)),
        (Stored::Reg(r), 8) => Some(Insn::new(MOV64_X, insn.dst, r, 0, 0)),
        _ => None,
    }
}

/// The constant a 64-bit operation with an immediate computes from `k`, when it fits an
/// immediate: `r = 0; r += 1` is `r = 1`.
fn fold(insn: &Insn, k: i32) -> Option<i32> {
    if insn.code & 7 != class::ALU64 || insn.code & SRC_X != 0 || insn.off != 0 {
        return None;
    }
    let (a, b) = (i64::from(k), i64::from(insn.imm));
    let shift = u32::try_from(insn.imm).ok().filter(|&s| s < 64);
    let v = match insn.code & 0xf0 {
        OP_ADD => a.wrapping_add(b),
        OP_SUB => a.wrapping_sub(b),
        OP_MUL => a.wrapping_mul(b),
        OP_OR => a | b,
        OP_AND => a & b,
        OP_XOR => a ^ b,
        OP_LSH => a.wrapping_shl(shift?),
        OP_RSH => ((a as u64) >> shift?) as i64,
        OP_ARSH => a >> shift?,
        _ => return None,
    };
    i32::try_from(v).ok()
}

/// Rewrites reads of copies and constants to reads of their sources, within straight-line
/// code; `r &= 0` becomes `r = 0`.
fn propagate_copies(out: &mut Emitted, shape: &Shape, starts: &[usize]) -> bool {
    let mut changed = false;
    // copy[x] = y: rx holds the same value as ry.
    let mut copy: [Option<u8>; 11] = [None; 11];
    // konst[x] = k: rx holds k (sign-extended).
    let mut konst: [Option<i32>; 11] = [None; 11];
    // Stack bytes [off, off + size) hold what a store wrote there.
    let mut mem: Vec<(i32, i32, Stored)> = Vec::new();
    for &i in starts {
        if shape.joined[i] {
            copy = [None; 11];
            konst = [None; 11];
            mem.clear();
        }
        let insn = &mut out.insns[i];
        let reads_src = match insn.code & 7 {
            class::ALU | class::ALU64 => insn.code & SRC_X != 0 && insn.code & 0xf0 != OP_END,
            class::JMP | class::JMP32 => insn.code & SRC_X != 0,
            class::STX => true,
            _ => false,
        };
        if reads_src
            && let Some(k) = konst.get(insn.src as usize).copied().flatten()
            && use_constant(insn, k)
        {
            changed = true;
        }
        if insn.code == class::ALU64 | OP_AND && insn.imm == 0 {
            *insn = Insn::new(MOV64_K, insn.dst, 0, 0, 0);
            changed = true;
        }
        let sub = |r: &mut u8, copy: &[Option<u8>; 11], changed: &mut bool| {
            if let Some(y) = copy.get(*r as usize).copied().flatten() {
                *r = y;
                *changed = true;
            }
        };
        let op = insn.code & 0xf0;
        match insn.code & 7 {
            class::ALU | class::ALU64 if insn.code & SRC_X != 0 && op != OP_END => {
                sub(&mut insn.src, &copy, &mut changed);
            }
            class::LDX => sub(&mut insn.src, &copy, &mut changed),
            class::ST => sub(&mut insn.dst, &copy, &mut changed),
            class::STX if insn.code & 0xe0 == MODE_ATOMIC => {
                sub(&mut insn.dst, &copy, &mut changed)
            }
            class::STX => {
                sub(&mut insn.dst, &copy, &mut changed);
                sub(&mut insn.src, &copy, &mut changed);
            }
            class::JMP | class::JMP32 if !matches!(op, OP_CALL | OP_EXIT | OP_JA) => {
                sub(&mut insn.dst, &copy, &mut changed);
                if insn.code & SRC_X != 0 {
                    sub(&mut insn.src, &copy, &mut changed);
                }
            }
            _ => {}
        }
        if let Some(k) = konst.get(insn.dst as usize).copied().flatten()
            && let Some(v) = fold(insn, k)
        {
            *insn = Insn::new(MOV64_K, insn.dst, 0, 0, v);
            changed = true;
        }
        // Unsigned division and remainder by a power of two are a shift and a mask.
        if insn.code & 7 == class::ALU64
            && insn.code & SRC_X == 0
            && insn.off == 0
            && matches!(insn.code & 0xf0, OP_DIV | OP_MOD)
            && insn.imm > 1
            && (insn.imm as u32).is_power_of_two()
        {
            let k = insn.imm as u32;
            *insn = if insn.code & 0xf0 == OP_DIV {
                Insn::new(
                    class::ALU64 | OP_RSH,
                    insn.dst,
                    0,
                    0,
                    k.trailing_zeros() as i32,
                )
            } else {
                Insn::new(class::ALU64 | OP_AND, insn.dst, 0, 0, (k - 1) as i32)
            };
            changed = true;
        }
        // `r = 0; r += rY` (or `|=`, `^=`) is `r = rY`.
        if konst.get(insn.dst as usize).copied().flatten() == Some(0)
            && insn.code & 7 == class::ALU64
            && insn.code & SRC_X != 0
            && insn.off == 0
            && matches!(insn.code & 0xf0, OP_ADD | OP_OR | OP_XOR)
        {
            *insn = Insn::new(MOV64_X, insn.dst, insn.src, 0, 0);
            changed = true;
        }
        // Stack memory: a load of what a store just wrote is the stored value.
        if let Some(f) = forward_load(insn, &mem) {
            *insn = f;
            changed = true;
        }
        if let Some((off, size)) = stack_store(insn) {
            mem.retain(|&(o, s, _)| o + s <= off || off + size <= o);
            if insn.code & 7 == class::ST {
                mem.push((off, size, Stored::Imm(insn.imm)));
            } else if insn.src != 10 {
                mem.push((off, size, Stored::Reg(insn.src)));
            }
        } else {
            match insn.code & 7 {
                // Stores through other registers may write the stack; calls and atomics may
                // write memory.
                class::ST | class::STX => mem.clear(),
                class::JMP | class::JMP32 if insn.code & 0xf0 == OP_CALL => mem.clear(),
                _ => {}
            }
        }
        let (_, _, may) = effects(insn);
        for r in 0..11u8 {
            if may & bit(r) != 0 {
                mem.retain(|&(_, _, v)| v != Stored::Reg(r));
                konst[r as usize] = None;
                copy[r as usize] = None;
                for c in copy.iter_mut() {
                    if *c == Some(r) {
                        *c = None;
                    }
                }
            }
        }
        if insn.code == MOV64_X && insn.off == 0 && insn.dst != insn.src && insn.src != 10 {
            copy[insn.dst as usize] = Some(insn.src);
        }
        if insn.code == MOV64_K && insn.off == 0 && insn.dst < 10 {
            konst[insn.dst as usize] = Some(insn.imm);
        }
        // A 64-bit load from the stack leaves the value in its register too: reloading a
        // spilled value that register still holds is a copy (and no copy when it is the
        // same register).
        if insn.code == class::LDX | 0x60 | 0x18 && insn.src == 10 && insn.dst != 10 {
            let off = i32::from(insn.off);
            mem.retain(|&(o, s, _)| o + s <= off || off + 8 <= o);
            mem.push((off, 8, Stored::Reg(insn.dst)));
        }
    }
    changed
}

/// The bytes `[off, off + size)` of the stack a store writes, if it writes the stack through
/// `r10` (not an atomic).
fn stack_store(i: &Insn) -> Option<(i32, i32)> {
    let class = i.code & 7;
    if !(class == class::ST || class == class::STX) || i.code & 0xe0 != 0x60 || i.dst != 10 {
        return None;
    }
    let size = crate::bpf::insn::Size::from_code(i.code).bytes() as i32;
    Some((i32::from(i.off), size))
}

/// Marks stores to the stack that a later store overwrites whole within straight-line code,
/// with nothing in between that may read memory. Returns true when one was found.
fn dead_stores(out: &Emitted, shape: &Shape, starts: &[usize], keep: &mut [bool]) -> bool {
    let mut found = false;
    // Earlier stores not yet read: (slot, offset, size).
    let mut pending: Vec<(usize, i32, i32)> = Vec::new();
    for &i in starts {
        if shape.joined[i] {
            pending.clear();
        }
        let insn = &out.insns[i];
        if let Some((off, size)) = stack_store(insn) {
            pending.retain(|&(at, o, s)| {
                let covered = off <= o && o + s <= off + size;
                if covered && !shape.pinned[at] {
                    keep[at] = false;
                    found = true;
                }
                // A partial overlap keeps the earlier store (its other bytes are still read).
                !covered
            });
            pending.push((i, off, size));
            continue;
        }
        match insn.code & 7 {
            // A load from the stack reads only its own bytes.
            class::LDX if insn.src == 10 => {
                let size = crate::bpf::insn::Size::from_code(insn.code).bytes() as i32;
                let off = i32::from(insn.off);
                pending.retain(|&(_, o, s)| o + s <= off || off + size <= o);
            }
            // Stores through other registers may write the stack (a copy of r10): forget
            // the overlapping ones too, conservatively all.
            class::ST | class::STX | class::LDX | class::JMP | class::JMP32 => pending.clear(),
            class::LD => pending.clear(),
            _ => {}
        }
    }
    found
}

/// True for an instruction the pass may remove when its result is dead.
fn removable(i: &Insn, pinned: bool) -> bool {
    register_only(i) && !pinned && i.dst != 10
}

/// Per slot: the registers read after the instruction there (before being written), where
/// instructions whose result is never read count as reading nothing ("faint" registers).
fn live_out(out: &Emitted, shape: &Shape, starts: &[usize]) -> Vec<u16> {
    let n = out.insns.len();
    let mut live_in = vec![0u16; n + 1];
    let mut live_out = vec![0u16; n];
    let succ: Vec<Vec<usize>> = starts
        .iter()
        .map(|&i| shape.successors(&out.insns, i))
        .collect();
    loop {
        let mut changed = false;
        for (k, &i) in starts.iter().enumerate().rev() {
            let lo = succ[k]
                .iter()
                .fold(0u16, |acc, &s| acc | live_in.get(s).copied().unwrap_or(0));
            let insn = &out.insns[i];
            let (reads, writes, _) = effects(insn);
            // An instruction that will be removed reads nothing: what feeds only it is dead
            // too, found in the same analysis (not one instruction per round).
            let li = if removable(insn, shape.pinned[i]) && writes & lo == 0 {
                lo
            } else {
                reads | (lo & !writes)
            };
            if li != live_in[i] || lo != live_out[i] {
                live_in[i] = li;
                live_out[i] = lo;
                changed = true;
            }
        }
        if !changed {
            return live_out;
        }
    }
}

/// True for an instruction that only computes its destination register.
fn register_only(i: &Insn) -> bool {
    match i.code & 7 {
        class::ALU | class::ALU64 | class::LDX => true,
        class::LD => i.code == LD_IMM64,
        _ => false,
    }
}

/// Optimises `out` in place (see the module docs); `sites` follow the instructions.
pub fn run(out: &mut Emitted, sites: &mut Vec<Site>) {
    loop {
        let shape = Shape::new(out, sites);
        // Rewrites keep every instruction's width: the starts hold for the whole round.
        let starts = starts(&out.insns);
        let propagated = propagate_copies(out, &shape, &starts);
        let live = live_out(out, &shape, &starts);
        let mut keep = vec![true; out.insns.len()];
        let mut removed = dead_stores(out, &shape, &starts, &mut keep);
        // A jump to the next instruction does nothing.
        for s in sites.iter() {
            if s.target == s.at + width(&out.insns[s.at]) {
                keep[s.at] = false;
                removed = true;
            }
        }
        for &i in &starts {
            let insn = &out.insns[i];
            let (_, writes, _) = effects(insn);
            let no_op =
                (insn.code == MOV64_X && insn.dst == insn.src && insn.off == 0) || identity(insn);
            let dead = writes & live[i] == 0 || no_op;
            if removable(insn, shape.pinned[i]) && dead {
                for k in 0..width(insn) {
                    keep[i + k] = false;
                }
                removed = true;
            }
        }
        if !removed && !propagated {
            // The program is stable: values moved into another register are computed there.
            removed = retarget_moves(out, &shape, &starts, &live, &mut keep);
        }
        if removed {
            sites.retain(|s| keep[s.at]);
            compact(out, sites, &keep);
        } else if !propagated {
            return;
        }
    }
}

/// Applies every [`retarget`] whose span overlaps none applied before it; marks the moves
/// removed. Renaming leaves liveness outside each span as it was, so the spans found on one
/// analysis stay valid together.
fn retarget_moves(
    out: &mut Emitted,
    shape: &Shape,
    starts: &[usize],
    live: &[u16],
    keep: &mut [bool],
) -> bool {
    let mut done = false;
    let mut free_from = 0;
    for k in 0..starts.len() {
        let Some(r) = retarget::find(&out.insns, starts, k, &shape.joined, live) else {
            continue;
        };
        let (first, last) = r.span();
        if first < free_from {
            continue;
        }
        keep[r.apply(&mut out.insns)] = false;
        free_from = last + 1;
        done = true;
    }
    done
}

/// Drops the slots not in `keep`, moving jump sites, targets, relocations and spans.
fn compact(out: &mut Emitted, sites: &mut [Site], keep: &[bool]) {
    // new_index[i]: the kept slots before slot i (where slot i, or what follows it, lands).
    let mut new_index = Vec::with_capacity(keep.len() + 1);
    let mut n = 0;
    for &k in keep {
        new_index.push(n);
        n += usize::from(k);
    }
    new_index.push(n);
    for s in sites.iter_mut() {
        s.at = new_index[s.at];
        s.target = new_index[s.target];
    }
    for (at, _) in out.map_relocs.iter_mut().chain(out.func_relocs.iter_mut()) {
        *at = new_index[*at];
    }
    let mut k = keep.iter();
    out.insns.retain(|_| *k.next().unwrap_or(&true));
    let mut k = keep.iter();
    out.spans.retain(|_| *k.next().unwrap_or(&true));
}

#[cfg(test)]
#[path = "peephole_tests.rs"]
mod tests;
