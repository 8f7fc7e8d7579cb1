//! The peephole pass on small emitted programs: the instruction sequences before and after.

use super::run;
use crate::bpf::insn::{Insn, JmpOp, Reg};
use crate::codegen::emit::Emitted;
use crate::codegen::jumps::Site;

fn emitted(insns: Vec<Insn>) -> Emitted {
    Emitted {
        spans: vec![Default::default(); insns.len()],
        insns,
        ..Default::default()
    }
}

#[test]
fn a_copy_of_a_call_result_is_read_from_the_call_and_the_dead_moves_go() {
    // r7 = r0; r6 = r7; exit with r6: before, two moves; after, one.
    let mut out = emitted(vec![
        Insn::call(crate::bpf::insn::Helper::GetPrandomU32),
        Insn::mov64_reg(Reg::R7, Reg::R0),
        Insn::mov64_reg(Reg::R6, Reg::R7),
        Insn::mov64_reg(Reg::R0, Reg::R6),
        Insn::exit(),
    ]);
    run(&mut out, &mut []);
    assert_eq!(
        out.insns,
        vec![
            Insn::call(crate::bpf::insn::Helper::GetPrandomU32),
            Insn::exit(),
        ]
    );
    assert_eq!(out.spans.len(), out.insns.len());
}

#[test]
fn an_unread_context_copy_and_an_ignored_result_are_removed() {
    let mut out = emitted(vec![
        Insn::mov64_reg(Reg::R6, Reg::R1), // the context, never read
        Insn::call(crate::bpf::insn::Helper::GetPrandomU32),
        Insn::mov64_reg(Reg::R7, Reg::R0), // the result, never read
        Insn::mov64_imm(Reg::R0, 0),
        Insn::exit(),
    ]);
    run(&mut out, &mut []);
    assert_eq!(
        out.insns,
        vec![
            Insn::call(crate::bpf::insn::Helper::GetPrandomU32),
            Insn::mov64_imm(Reg::R0, 0),
            Insn::exit(),
        ]
    );
}

#[test]
fn jumps_follow_the_instructions_and_copies_stop_where_jumps_arrive() {
    // 0: r6 = r0 (kept: read after the join)
    // 1: if r6 == 0 goto 4     -> reads r0 after propagation
    // 2: r8 = r6               (dead)
    // 3: r6 = 1
    // 4: r0 = r6               (a join: r6 is not a copy of r0 here)
    // 5: exit
    let mut out = emitted(vec![
        Insn::mov64_reg(Reg::R6, Reg::R0),
        Insn::jmp_imm(JmpOp::Eq, Reg::R6, 0, 0),
        Insn::mov64_reg(Reg::R8, Reg::R6),
        Insn::mov64_imm(Reg::R6, 1),
        Insn::mov64_reg(Reg::R0, Reg::R6),
        Insn::exit(),
    ]);
    let mut sites = vec![Site { at: 1, target: 4 }];
    run(&mut out, &mut sites);
    assert_eq!(
        out.insns,
        vec![
            Insn::mov64_reg(Reg::R6, Reg::R0),
            Insn::jmp_imm(JmpOp::Eq, Reg::R0, 0, 0),
            Insn::mov64_imm(Reg::R6, 1),
            Insn::mov64_reg(Reg::R0, Reg::R6),
            Insn::exit(),
        ]
    );
    assert_eq!(sites, vec![Site { at: 1, target: 3 }]);
}

#[test]
fn stores_calls_and_the_frame_pointer_stay() {
    let prog = vec![
        Insn::mov64_reg(Reg::R1, Reg::R10),
        Insn::alu64_imm(crate::bpf::insn::AluOp::Add, Reg::R1, -8),
        Insn::st(crate::bpf::insn::Size::DW, Reg::R10, -8, 0),
        Insn::mov64_imm(Reg::R2, 8),
        Insn::call(crate::bpf::insn::Helper::GetCurrentComm),
        Insn::mov64_imm(Reg::R0, 0),
        Insn::exit(),
    ];
    let mut out = emitted(prog.clone());
    run(&mut out, &mut []);
    assert_eq!(out.insns, prog);
}
