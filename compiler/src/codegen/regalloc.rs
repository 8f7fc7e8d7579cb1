//! Register allocation: live intervals from a CFG liveness analysis, then linear scan over
//! the callee-saved registers r6–r9. Intervals that do not fit are spilled to 8-byte stack
//! slots (never a failure); r0–r5 stay free as the emitter's temporaries and call arguments.

use crate::ir::cfg::build_cfg;
use crate::ir::{Function, Inst, MapRef, Operand, Slot, VReg};
use std::collections::{HashMap, HashSet};

/// Where a virtual register lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loc {
    /// A callee-saved physical register (6..=9).
    Reg(u8),
    /// A spill slot: index into the spill area.
    Spill(u32),
    /// Nowhere: a constant recomputed wherever it is used.
    Remat(Remat),
}

/// A value that is cheaper to recompute at each use than to keep in a register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Remat {
    /// A constant.
    Imm(i64),
    /// A map handle or map value address (an `ld_imm64` with a relocation).
    Map(MapRef),
    /// The address of a stack slot.
    Slot(Slot),
}

/// Registers defined exactly once, by a constant, a map handle or a slot address.
fn rematerializable(f: &Function) -> HashMap<VReg, Remat> {
    let mut defs: HashMap<VReg, (u32, Option<Remat>)> = HashMap::new();
    for (inst, _) in &f.insts {
        let Some(d) = inst.def() else { continue };
        let remat = match inst {
            Inst::Mov {
                src: Operand::Imm(v),
                ..
            } => Some(Remat::Imm(*v)),
            Inst::MapHandle { map, .. } | Inst::MapValue { map, .. } => Some(Remat::Map(*map)),
            Inst::SlotAddr { slot, .. } => Some(Remat::Slot(*slot)),
            _ => None,
        };
        let e = defs.entry(d).or_insert((0, remat));
        e.0 += 1;
    }
    defs.into_iter()
        .filter(|(r, (n, _))| *n == 1 && !f.params.contains(r))
        .filter_map(|(r, (_, m))| m.map(|m| (r, m)))
        .collect()
}

/// The result of allocation.
#[derive(Clone, Debug, Default)]
pub struct Allocation {
    /// Location of every virtual register that is defined or used.
    pub locs: HashMap<VReg, Loc>,
    /// Number of spill slots used.
    pub spills: u32,
}

/// The physical registers handed out.
const ALLOCATABLE: [u8; 4] = [6, 7, 8, 9];

/// Live interval `[start, end]` (instruction indices) of every register.
pub fn intervals(f: &Function) -> HashMap<VReg, (usize, usize)> {
    let cfg = build_cfg(f);
    let nb = cfg.blocks.len();
    let mut uses: Vec<HashSet<VReg>> = vec![HashSet::new(); nb];
    let mut defs: Vec<HashSet<VReg>> = vec![HashSet::new(); nb];
    for (b, &(s, e)) in cfg.blocks.iter().enumerate() {
        for (inst, _) in &f.insts[s..e] {
            for u in inst.uses() {
                if !defs[b].contains(&u) {
                    uses[b].insert(u);
                }
            }
            if let Some(d) = inst.def() {
                defs[b].insert(d);
            }
        }
    }
    let mut live_in: Vec<HashSet<VReg>> = vec![HashSet::new(); nb];
    let mut live_out: Vec<HashSet<VReg>> = vec![HashSet::new(); nb];
    let mut changed = true;
    while changed {
        changed = false;
        for b in (0..nb).rev() {
            let mut out = HashSet::new();
            for &s in &cfg.succs[b] {
                out.extend(live_in[s].iter().copied());
            }
            let mut inn: HashSet<VReg> = out.difference(&defs[b]).copied().collect();
            inn.extend(uses[b].iter().copied());
            if inn != live_in[b] || out != live_out[b] {
                live_in[b] = inn;
                live_out[b] = out;
                changed = true;
            }
        }
    }
    let mut iv: HashMap<VReg, (usize, usize)> = HashMap::new();
    let mut extend = |r: VReg, a: usize, b: usize| {
        let e = iv.entry(r).or_insert((a, b));
        e.0 = e.0.min(a);
        e.1 = e.1.max(b);
    };
    for &p in &f.params {
        extend(p, 0, 0);
    }
    for (b, &(s, e)) in cfg.blocks.iter().enumerate() {
        for &r in &live_in[b] {
            extend(r, s, s);
        }
        for &r in &live_out[b] {
            extend(r, e - 1, e - 1);
        }
        for (i, (inst, _)) in f.insts[s..e].iter().enumerate() {
            for u in inst.uses() {
                extend(u, s + i, s + i);
            }
            if let Some(d) = inst.def() {
                extend(d, s + i, s + i);
            }
        }
    }
    iv
}

/// The active interval whose register `r` can take: that of the value `r`'s defining
/// instruction (at `start`) copies or computes from as its left operand, when that value's
/// interval ends at `start`.
fn coalescable(f: &Function, r: VReg, start: usize, active: &[(VReg, usize, u8)]) -> Option<usize> {
    let from = match &f.insts.get(start)?.0 {
        Inst::Mov {
            dst,
            src: Operand::Reg(v),
        } if *dst == r => *v,
        Inst::Alu { dst, lhs, .. } if *dst == r => *lhs,
        _ => return None,
    };
    active
        .iter()
        .position(|&(v, end, _)| v == from && end == start)
}

/// Allocates every register of `f` to r6–r9 or a spill slot.
pub fn allocate(f: &Function) -> Allocation {
    let iv = intervals(f);
    let remat = rematerializable(f);
    let mut alloc = Allocation::default();
    for (r, m) in &remat {
        alloc.locs.insert(*r, Loc::Remat(*m));
    }
    let mut order: Vec<(VReg, (usize, usize))> = iv
        .into_iter()
        .filter(|(r, _)| !remat.contains_key(r))
        .collect();
    order.sort_by_key(|(r, (s, e))| (*s, *e, r.0));
    let starts: HashMap<VReg, usize> = order.iter().map(|(r, (s, _))| (*r, *s)).collect();
    let mut use_counts: HashMap<VReg, u32> = HashMap::new();
    for (inst, _) in &f.insts {
        for r in inst.uses().into_iter().chain(inst.def()) {
            *use_counts.entry(r).or_default() += 1;
        }
    }
    let mut active: Vec<(VReg, usize, u8)> = Vec::new(); // (reg, end, phys)
    // Per spill slot: the end of the last interval kept there (slots are shared by intervals
    // that do not overlap, so a long probe needs as many as are live at once).
    let mut slot_ends: Vec<usize> = Vec::new();
    let mut spill = |from: usize, to: usize| -> u32 {
        let slot = match slot_ends.iter().position(|&e| e < from) {
            Some(i) => i,
            None => {
                slot_ends.push(0);
                slot_ends.len() - 1
            }
        };
        slot_ends[slot] = to;
        slot as u32
    };
    for (r, (start, end)) in order {
        active.retain(|&(_, e, _)| e >= start);
        // Coalescing: a value computed from one whose life ends right here (`v2 = v` or
        // `v2 = v op x`) takes its register, so no copy is needed (`r8 = r7; r8 += 1`
        // becomes `r7 += 1`).
        if let Some(i) = coalescable(f, r, start, &active) {
            let p = active[i].2;
            active.remove(i);
            active.push((r, end, p));
            alloc.locs.insert(r, Loc::Reg(p));
            continue;
        }
        let used: HashSet<u8> = active.iter().map(|a| a.2).collect();
        if let Some(&p) = ALLOCATABLE.iter().find(|p| !used.contains(p)) {
            active.push((r, end, p));
            alloc.locs.insert(r, Loc::Reg(p));
            continue;
        }
        // Spill the value used least often for the length of its life (each use of a
        // spilled value costs a load or a store): a long-lived value read all along (the
        // context, an event buffer's address) keeps its register, one read once at the
        // end of a long stretch goes to the stack. Ties: the one ending last.
        let weight = |r: VReg, s: usize, e: usize| {
            (u64::from(use_counts.get(&r).copied().unwrap_or(0)) << 20) / (e - s + 1) as u64
        };
        let (idx, &(victim, vend, phys)) = active
            .iter()
            .enumerate()
            .min_by_key(|(_, a)| (weight(a.0, starts[&a.0], a.1), std::cmp::Reverse(a.1)))
            .expect("four active intervals");
        let keep_current = weight(r, start, end) > weight(victim, starts[&victim], vend)
            || (weight(r, start, end) == weight(victim, starts[&victim], vend) && vend > end);
        if keep_current {
            let slot = spill(starts[&victim], vend);
            alloc.locs.insert(victim, Loc::Spill(slot));
            active.remove(idx);
            active.push((r, end, phys));
            alloc.locs.insert(r, Loc::Reg(phys));
        } else {
            let slot = spill(start, end);
            alloc.locs.insert(r, Loc::Spill(slot));
        }
    }
    alloc.spills = slot_ends.len() as u32;
    alloc
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{AluOp, Inst, Operand};
    use sonde_lang::span::Span;

    /// Appends `acc += r`.
    fn add(f: &mut Function, acc: VReg, r: VReg) {
        let inst = Inst::Alu {
            op: AluOp::Add,
            dst: acc,
            lhs: acc,
            rhs: Operand::Reg(r),
        };
        f.push(inst, Span::default());
    }

    /// Appends `return v`.
    fn ret(f: &mut Function, v: VReg) {
        f.push(
            Inst::Return {
                value: Operand::Reg(v),
            },
            Span::default(),
        );
    }

    #[test]
    fn spills_instead_of_failing_when_six_values_are_live() {
        let mut f = Function::new("t");
        let regs: Vec<VReg> = (0..6).map(|_| f.vreg()).collect();
        let ctx = f.vreg();
        f.params = vec![ctx];
        for (i, r) in regs.iter().enumerate() {
            f.push(
                Inst::Load {
                    dst: *r,
                    base: ctx,
                    offset: 8 * i as i32,
                    width: crate::ir::Width::W64,
                },
                Span::default(),
            );
        }
        let sum = f.vreg();
        f.push(
            Inst::Mov {
                dst: sum,
                src: Operand::Reg(ctx),
            },
            Span::default(),
        );
        for r in &regs {
            add(&mut f, sum, *r);
        }
        ret(&mut f, sum);
        let a = allocate(&f);
        assert_eq!(a.locs.len(), 8);
        assert!(
            a.spills >= 3,
            "7 values live at once need at least 3 spills, got {}",
            a.spills
        );
        // Four registers, one of them shared by `ctx` and `sum`: the copy ends ctx's life,
        // and the coalesced sum takes its register.
        let in_regs = a.locs.values().filter(|l| matches!(l, Loc::Reg(_))).count();
        assert_eq!(in_regs, 5);
        assert_eq!(a.locs[&sum], a.locs[&ctx]);
    }

    #[test]
    fn loop_carried_value_lives_across_the_back_edge() {
        let mut f = Function::new("t");
        let i = f.vreg();
        let top = f.label();
        let done = f.label();
        f.push(
            Inst::Mov {
                dst: i,
                src: Operand::Imm(0),
            },
            Span::default(),
        );
        f.push(Inst::Label(top), Span::default());
        f.push(
            Inst::Branch {
                cond: crate::ir::Cond::SGe,
                lhs: i,
                rhs: Operand::Imm(10),
                target: done,
            },
            Span::default(),
        );
        let t = f.vreg();
        f.push(
            Inst::Mov {
                dst: t,
                src: Operand::Imm(5),
            },
            Span::default(),
        );
        f.push(
            Inst::Alu {
                op: AluOp::Add,
                dst: i,
                lhs: i,
                rhs: Operand::Imm(1),
            },
            Span::default(),
        );
        f.push(Inst::Jump(top), Span::default());
        f.push(Inst::Label(done), Span::default());
        ret(&mut f, i);
        let iv = intervals(&f);
        assert_eq!(iv[&i], (0, 7));
        assert_eq!(iv[&t], (3, 3));
    }

    /// Ten groups of seven values live at once, one group after another: the spill slots
    /// of one group are the next group's (a long probe needs the slots of its widest point).
    #[test]
    fn spill_slots_are_shared_by_values_not_live_together() {
        let mut f = Function::new("t");
        let ctx = f.vreg();
        f.params = vec![ctx];
        let acc = f.vreg();
        f.push(
            Inst::Mov {
                dst: acc,
                src: Operand::Imm(0),
            },
            Span::default(),
        );
        for _ in 0..10 {
            let regs: Vec<VReg> = (0..7).map(|_| f.vreg()).collect();
            for (i, r) in regs.iter().enumerate() {
                f.push(
                    Inst::Load {
                        dst: *r,
                        base: ctx,
                        offset: 8 * i as i32,
                        width: crate::ir::Width::W64,
                    },
                    Span::default(),
                );
            }
            for r in &regs {
                add(&mut f, acc, *r);
            }
        }
        ret(&mut f, acc);
        let a = allocate(&f);
        let spilled = a
            .locs
            .values()
            .filter(|l| matches!(l, Loc::Spill(_)))
            .count();
        assert!(
            spilled >= 30,
            "each group spills, got {spilled} spilled values"
        );
        assert!(a.spills <= 5, "slots of one group only, got {}", a.spills);
    }

    /// Seven values live at once, four registers: the values spilled are four of the five read
    /// once each at the end of a long life, not the context, which most instructions read,
    /// nor the value loaded and added again and again (before, the interval ending last went
    /// to the stack: the context, reloaded at each of its uses).
    #[test]
    fn the_values_read_least_are_spilled() {
        let mut f = Function::new("t");
        let ctx = f.vreg();
        f.params = vec![ctx];
        let vals: Vec<VReg> = (0..5).map(|_| f.vreg()).collect();
        let load = |dst, off| Inst::Load {
            dst,
            base: ctx,
            offset: off,
            width: crate::ir::Width::W64,
        };
        for (i, v) in vals.iter().enumerate() {
            f.push(load(*v, 8 * i as i32), Span::default());
        }
        let scratch = f.vreg();
        for i in 0..10 {
            f.push(load(scratch, 64 + 8 * i), Span::default());
        }
        let acc = f.vreg();
        f.push(
            Inst::Mov {
                dst: acc,
                src: Operand::Reg(ctx),
            },
            Span::default(),
        );
        for v in &vals {
            add(&mut f, acc, *v);
        }
        // The context is read after the others' last use: it is the interval ending last.
        for i in 0..10 {
            f.push(load(scratch, 160 + 8 * i), Span::default());
        }
        add(&mut f, acc, scratch);
        ret(&mut f, acc);
        let a = allocate(&f);
        assert!(matches!(a.locs[&ctx], Loc::Reg(_)), "{:?}", a.locs);
        assert!(matches!(a.locs[&scratch], Loc::Reg(_)), "{:?}", a.locs);
        let spilled = vals
            .iter()
            .filter(|v| matches!(a.locs[v], Loc::Spill(_)))
            .count();
        assert_eq!(spilled, 4, "{:?}", a.locs);
    }
}
