//! Jump layout: the short forms when they reach, the long ones (`gotol`) when they do not,
//! shown as instruction sequences on small programs with a forced small range.

use super::*;
use crate::bpf::disasm::disassemble;
use crate::bpf::insn::Reg;
use crate::codegen::emit::emit_with_range;
use crate::ir::{Cond, Function, Inst, Operand, Width};
use sonde_lang::span::Span;

/// `n` instructions with a jump placeholder at each of `jumps` (`(at, target, insn)`).
fn program(n: usize, jumps: &[(usize, usize, Insn)]) -> (Emitted, Vec<Site>) {
    let mut out = Emitted::default();
    for i in 0..n {
        out.insns.push(Insn::mov64_imm(Reg::R0, i as i32));
        out.spans.push(Span::new(i, i + 1));
    }
    let mut sites = Vec::new();
    for &(at, target, insn) in jumps {
        out.insns[at] = insn;
        sites.push(Site { at, target });
    }
    (out, sites)
}

/// The disassembly without the `N: (op) ` prefixes.
fn text(out: &Emitted) -> Vec<String> {
    strip(disassemble(&out.insns))
}

fn strip(lines: Vec<String>) -> Vec<String> {
    lines
        .into_iter()
        .map(|l| l.split_once(") ").map_or(l.clone(), |(_, t)| t.to_string()))
        .collect()
}

#[test]
fn jumps_in_range_keep_the_short_forms() {
    let cond = Insn::jmp_imm(JmpOp::Gt, Reg::R1, 5, 0);
    let (mut out, sites) = program(6, &[(0, 4, cond), (1, 5, Insn::ja(0))]);
    resolve(&mut out, &sites, SHORT_RANGE).unwrap();
    assert_eq!(
        text(&out)[..2],
        ["if r1 > 0x5 goto pc+3", "goto pc+3"].map(String::from)
    );
    assert_eq!(out.insns.len(), 6);
}

#[test]
fn far_goto_becomes_gotol_of_the_same_size() {
    // Before (range 2): `goto pc+3` does not fit; after: `gotol pc+3`.
    let (mut out, sites) = program(5, &[(0, 4, Insn::ja(0))]);
    resolve(&mut out, &sites, 2).unwrap();
    assert_eq!(out.insns.len(), 5);
    assert_eq!(text(&out)[0], "gotol pc+3");
    assert_eq!(out.insns[0], Insn::gotol(3));
}

#[test]
fn far_conditional_becomes_negated_short_branch_over_gotol() {
    // if r1 > 0x5 goto L; r0 = 1; r0 = 2; r0 = 3; L: r0 = 4
    let cond = Insn::jmp_imm(JmpOp::Gt, Reg::R1, 5, 0);
    let (mut out, sites) = program(5, &[(0, 4, cond)]);
    resolve(&mut out, &sites, 2).unwrap();
    assert_eq!(
        text(&out),
        [
            "if r1 <= 0x5 goto pc+1",
            "gotol pc+3",
            "r0 = 1",
            "r0 = 2",
            "r0 = 3",
            "r0 = 4"
        ]
        .map(String::from)
    );
    // The added instruction carries the branch's span.
    assert_eq!(
        out.spans[..3],
        [Span::new(0, 1), Span::new(0, 1), Span::new(1, 2)]
    );
}

#[test]
fn far_register_and_jset_branches() {
    let jne = Insn::jmp_reg(JmpOp::Ne, Reg::R1, Reg::R2, 0);
    let jset = Insn::jmp_imm(JmpOp::Set, Reg::R3, 8, 0);
    let (mut out, sites) = program(8, &[(0, 7, jne), (1, 7, jset)]);
    resolve(&mut out, &sites, 2).unwrap();
    assert_eq!(
        text(&out)[..6],
        [
            "if r1 == r2 goto pc+1",
            "gotol pc+8",
            // `&` has no negation: taken, it skips the `goto +1` that steps over the gotol.
            "if r3 & 0x8 goto pc+1",
            "goto pc+1",
            "gotol pc+5",
            "r0 = 2",
        ]
        .map(String::from)
    );
}

#[test]
fn backward_jumps_and_relocations_follow_the_layout() {
    // A backward goto and a map reference after a branch that grows.
    let cond = Insn::jmp_imm(JmpOp::Eq, Reg::R1, 0, 0);
    let (mut out, sites) = program(8, &[(1, 7, cond), (6, 0, Insn::ja(0))]);
    let ld = Insn::ld_map_reloc(Reg::R1);
    out.insns[3] = ld[0];
    out.insns[4] = ld[1];
    out.map_relocs.push((3, 0));
    out.func_relocs.push((3, 1));
    resolve(&mut out, &sites, 3).unwrap();
    assert_eq!(out.map_relocs, [(4, 0)]);
    assert_eq!(out.func_relocs, [(4, 1)]);
    assert!(out.insns[4].is_ld_imm64());
    assert_eq!(out.insns[7], Insn::gotol(-8));
    assert_eq!(
        out.insns[1..3],
        [Insn::jmp_imm(JmpOp::Ne, Reg::R1, 0, 1), Insn::gotol(5)]
    );
}

#[test]
fn growth_that_pushes_another_jump_out_of_range_is_followed() {
    // The second branch grows; that moves the first one's target one further, beyond range.
    let c = |r| Insn::jmp_imm(JmpOp::Eq, Reg(r), 0, 0);
    let jumps = [(0, 3, c(1)), (1, 7, c(2))];
    let (before, sites) = program(8, &jumps);
    let mut out = before.clone();
    resolve(&mut out, &sites, 2).unwrap();
    assert_eq!(out.insns.len(), 10);
    assert_eq!(out.insns[1], Insn::gotol(3));
    check_equivalent(&before, &sites, &out, 2);
}

/// Every site, followed on its taken and its fall-through path through the resolved code,
/// lands where its old target and its old next instruction landed; no short jump exceeds
/// `range`.
fn check_equivalent(before: &Emitted, sites: &[Site], after: &Emitted, range: i64) {
    // The old → new map, from the spans (each old instruction has a distinct span).
    let start_of = |old: usize| {
        if old == before.insns.len() {
            return after.insns.len();
        }
        after
            .spans
            .iter()
            .position(|s| *s == before.spans[old])
            .unwrap()
    };
    for s in sites {
        let start = start_of(s.at);
        let end = start_of(s.at + 1);
        let op = JmpOp::from_code(before.insns[s.at].code);
        for taken in [true, false] {
            let mut pc = start;
            for _ in 0..4 {
                if !(start..end).contains(&pc) {
                    break;
                }
                let i = after.insns[pc];
                let jumps = if i.code & 0xf0 == 0 {
                    true
                } else {
                    let this = JmpOp::from_code(i.code);
                    if this == op { taken } else { !taken }
                };
                let rel = if i.class() == class::JMP32 {
                    i64::from(i.imm)
                } else {
                    assert!(i64::from(i.off) <= range && i64::from(i.off) >= -range - 1);
                    i64::from(i.off)
                };
                pc = if jumps {
                    (pc as i64 + 1 + rel) as usize
                } else {
                    pc + 1
                };
            }
            assert!(!(start..end).contains(&pc), "site {s:?} loops");
            let want = if taken && op.is_some() || op.is_none() {
                start_of(s.target)
            } else {
                end
            };
            assert_eq!(pc, want, "site {s:?} taken={taken}");
        }
    }
}

#[test]
fn many_jumps_with_a_small_range_keep_their_targets() {
    // A deterministic pseudo-random program: 400 instructions, a jump every few.
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut rand = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    for range in [1, 4, 16, 100] {
        let n = 400;
        let mut jumps = Vec::new();
        let mut at = 0;
        while at < n {
            let insn = match rand(4) {
                0 => Insn::ja(0),
                1 => Insn::jmp_imm(JmpOp::Set, Reg::R1, 1, 0),
                2 => Insn::jmp_reg(JmpOp::Slt, Reg::R1, Reg::R2, 0),
                _ => Insn::jmp_imm(JmpOp::Le, Reg::R3, 7, 0),
            };
            // A jump to itself would never leave its own sequence in `check_equivalent`.
            let target = match rand(n + 1) {
                t if t == at => at + 1,
                t => t,
            };
            jumps.push((at, target, insn));
            at += 1 + rand(6);
        }
        let (before, sites) = program(n, &jumps);
        let mut after = before.clone();
        resolve(&mut after, &sites, range).unwrap();
        check_equivalent(&before, &sites, &after, range);
    }
}

/// `if ctx->x > 5 { ctx->y = 1 } return 0`, emitted with short jumps of at most `range`.
fn branchy(range: i64) -> Vec<String> {
    let mut f = Function::new("t");
    let ctx = f.vreg();
    let x = f.vreg();
    f.params = vec![ctx];
    let skip = f.label();
    let at = Span::default();
    let load = Inst::Load {
        dst: x,
        base: ctx,
        offset: 0,
        width: Width::W64,
    };
    f.push(load, at);
    let branch = Inst::Branch {
        cond: Cond::ULe,
        lhs: x,
        rhs: Operand::Imm(5),
        target: skip,
    };
    f.push(branch, at);
    for i in 0..3 {
        let store = Inst::Store {
            base: ctx,
            offset: 8 + 8 * i,
            src: Operand::Imm(1),
            width: Width::W64,
        };
        f.push(store, at);
    }
    f.push(Inst::Label(skip), at);
    f.push(
        Inst::Return {
            value: Operand::Imm(0),
        },
        at,
    );
    strip(disassemble(&emit_with_range(&f, range).unwrap().insns))
}

#[test]
fn emitter_uses_long_jumps_only_when_needed() {
    let short = branchy(SHORT_RANGE);
    let long = branchy(2);
    assert_eq!(short.len() + 1, long.len(), "{short:?} {long:?}");
    let jump = short.iter().position(|l| l.starts_with("if ")).unwrap();
    assert!(short[jump].ends_with("goto pc+3"), "{short:?}");
    assert!(long[jump].ends_with("goto pc+1"), "{long:?}");
    assert_eq!(long[jump + 1], "gotol pc+3");
    assert!(short[jump].contains(" <= ") && long[jump].contains(" > "));
    // Everything else is the same code.
    assert_eq!(short[..jump], long[..jump]);
    assert_eq!(short[jump + 1..], long[jump + 2..]);
}
