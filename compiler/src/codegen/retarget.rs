//! Part of the peephole pass ([`super::peephole`]): a value computed in one register only to
//! be moved into another is computed in the other directly.
//!
//! The register allocator keeps values in r6–r9 and the emitter moves them into r1–r5 for a
//! call: `r7 = r6; r7 += 34; r3 = r7` (an address made for a helper's argument), where `r7`
//! is read by nothing after the move. The chain that computes `r7` — from the instruction
//! that writes it without reading it, through the instructions that read or update it — is
//! renamed to write `r3`, and the move goes: `r3 = r6; r3 += 34`.
//!
//! Conditions, all within straight-line code of at most 64 instructions (no jump leaves or
//! arrives between the chain's start and the move): the moved register is dead after the
//! move; the destination is neither read nor written between the chain's start and the move
//! (the start itself may read it); no call lies in between when either register is one a
//! call reads or writes (`r0`–`r5`); and nothing in between is an instruction the pass does
//! not know.

use super::peephole::{MOV64_X, effects, register_fields, register_roles, width};
use crate::bpf::insn::{Insn, OP_CALL, class};

/// How far before a move its chain's start is looked for, in instructions.
const MAX_WALK: usize = 64;

/// A move `rZ = rX` whose chain can write `rZ`: the slots of the chain's instructions (its
/// start first) and the move's slot.
pub(super) struct Retarget {
    chain: Vec<usize>,
    from: u8,
    to: u8,
    at: usize,
}

impl Retarget {
    /// The slots from the chain's start to the move, both included.
    pub(super) fn span(&self) -> (usize, usize) {
        (self.chain[0], self.at)
    }

    /// Renames the chain and returns the move's slot, to be removed.
    pub(super) fn apply(&self, insns: &mut [Insn]) -> usize {
        for &j in &self.chain {
            rename(&mut insns[j], self.from, self.to);
        }
        self.at
    }
}

/// The retargeting of the move at `starts[k]`, if it is one and its conditions hold.
/// `joined` says where jumps arrive, `live_out` what is read after each slot.
pub(super) fn find(
    insns: &[Insn],
    starts: &[usize],
    k: usize,
    joined: &[bool],
    live_out: &[u16],
) -> Option<Retarget> {
    let at = starts[k];
    let mv = &insns[at];
    if mv.code != MOV64_X || mv.off != 0 || mv.dst == mv.src || mv.dst == 10 || mv.src == 10 {
        return None;
    }
    let (to, from) = (mv.dst, mv.src);
    if live_out[at] & (1 << from) != 0 || joined[at] {
        return None;
    }
    let clobbered = |r: u8| r <= 5;
    let mut chain = Vec::new();
    // The chain's start is near its move; a bounded walk keeps the pass linear in the
    // program's length.
    for &j in starts[..k].iter().rev().take(MAX_WALK) {
        let insn = &insns[j];
        let next = j + width(insn);
        if joined[next] || is_jump(insn) {
            return None;
        }
        let is_call = insn.code & 7 == class::JMP && insn.code & 0xf0 == OP_CALL;
        if is_call && (clobbered(to) || clobbered(from)) {
            return None;
        }
        let (reads, writes, may) = effects(insn);
        let touches = (reads | writes | may) & (1 << from) != 0;
        if touches && !register_fields(insn) {
            return None;
        }
        // The chain's start: writes `from` without reading it.
        if writes & (1 << from) != 0 && reads & (1 << from) == 0 {
            chain.push(j);
            chain.reverse();
            return Some(Retarget {
                chain,
                from,
                to,
                at,
            });
        }
        if (reads | may) & (1 << to) != 0 || may & (1 << from) != writes & (1 << from) {
            return None;
        }
        if touches {
            chain.push(j);
        }
    }
    None
}

/// A jump or an exit (a call is not: control comes back).
fn is_jump(i: &Insn) -> bool {
    matches!(i.code & 7, class::JMP | class::JMP32) && i.code & 0xf0 != OP_CALL
}

/// Replaces register `from` by `to` wherever `insn` names it as a register.
fn rename(insn: &mut Insn, from: u8, to: u8) {
    let (dst, src) = register_roles(insn);
    if dst && insn.dst == from {
        insn.dst = to;
    }
    if src && insn.src == from {
        insn.src = to;
    }
}
