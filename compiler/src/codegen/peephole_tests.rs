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

/// The pass turns `before` into `after`.
fn assert_becomes(before: Vec<Insn>, after: Vec<Insn>) {
    let mut out = emitted(before);
    run(&mut out, &mut Vec::new());
    assert_eq!(out.insns, after);
    assert_eq!(out.spans.len(), out.insns.len());
}

/// The pass leaves `prog` as it is.
fn assert_unchanged(prog: Vec<Insn>) {
    let mut out = emitted(prog.clone());
    run(&mut out, &mut Vec::new());
    assert_eq!(out.insns, prog);
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
    run(&mut out, &mut Vec::new());
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
    run(&mut out, &mut Vec::new());
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
    assert_unchanged(prog);
}

#[test]
fn a_constant_register_becomes_the_immediate_of_alu_jump_and_store() {
    use crate::bpf::insn::{AluOp, Size};
    // r2 = 1; r8 += r2; *(u64 *)(r10 -8) = r2; if r8 <= r2 goto +1; r0 = r8; exit
    let mut out = emitted(vec![
        Insn::mov64_imm(Reg::R8, 5),
        Insn::call(crate::bpf::insn::Helper::GetPrandomU32),
        Insn::mov64_reg(Reg::R8, Reg::R0),
        Insn::mov64_imm(Reg::R2, 1),
        Insn::alu64_reg(AluOp::Add, Reg::R8, Reg::R2),
        Insn::stx(Size::DW, Reg::R10, -8, Reg::R2),
        Insn::jmp_reg(JmpOp::Le, Reg::R8, Reg::R2, 1),
        Insn::mov64_reg(Reg::R0, Reg::R8),
        Insn::exit(),
    ]);
    let mut sites = vec![Site { at: 6, target: 8 }];
    run(&mut out, &mut sites);
    assert_eq!(
        out.insns,
        vec![
            Insn::call(crate::bpf::insn::Helper::GetPrandomU32),
            Insn::mov64_reg(Reg::R8, Reg::R0),
            Insn::alu64_imm(AluOp::Add, Reg::R8, 1),
            Insn::st(Size::DW, Reg::R10, -8, 1),
            Insn::jmp_imm(JmpOp::Le, Reg::R8, 1, 1),
            Insn::mov64_reg(Reg::R0, Reg::R8),
            Insn::exit(),
        ]
    );
    assert_eq!(sites, vec![Site { at: 4, target: 6 }]);
}

#[test]
fn division_by_a_zero_register_and_wide_shifts_keep_their_register() {
    use crate::bpf::insn::AluOp;
    let prog = vec![
        Insn::call(crate::bpf::insn::Helper::GetPrandomU32),
        Insn::mov64_imm(Reg::R2, 0),
        Insn::alu64_reg(AluOp::Div, Reg::R0, Reg::R2),
        Insn::mov64_imm(Reg::R3, 64),
        Insn::alu64_reg(AluOp::Lsh, Reg::R0, Reg::R3),
        Insn::exit(),
    ];
    assert_unchanged(prog);
}

#[test]
fn a_stack_store_overwritten_whole_before_any_read_goes() {
    use crate::bpf::insn::Size;
    // A key zeroed, then written: the zeroing goes. A partial overwrite, or a load that may
    // read it (through a copy of r10) in between, keeps the first store.
    let mut out = emitted(vec![
        Insn::st(Size::DW, Reg::R10, -8, 0),
        Insn::st(Size::DW, Reg::R10, -8, 7),
        Insn::st(Size::DW, Reg::R10, -16, 0),
        Insn::st(Size::W, Reg::R10, -16, 3),
        Insn::mov64_reg(Reg::R2, Reg::R10),
        Insn::st(Size::DW, Reg::R10, -24, 0),
        Insn::ldx(Size::DW, Reg::R1, Reg::R2, -24),
        Insn::st(Size::DW, Reg::R10, -24, 5),
        Insn::mov64_reg(Reg::R0, Reg::R1),
        Insn::exit(),
    ]);
    run(&mut out, &mut Vec::new());
    assert_eq!(
        out.insns,
        vec![
            Insn::st(Size::DW, Reg::R10, -8, 7),
            Insn::st(Size::DW, Reg::R10, -16, 0),
            Insn::st(Size::W, Reg::R10, -16, 3),
            Insn::mov64_reg(Reg::R2, Reg::R10),
            Insn::st(Size::DW, Reg::R10, -24, 0),
            // (the load's value, moved to r0 after, is loaded into r0)
            Insn::ldx(Size::DW, Reg::R0, Reg::R2, -24),
            Insn::st(Size::DW, Reg::R10, -24, 5),
            Insn::exit(),
        ]
    );
}

#[test]
fn a_stored_value_is_read_back_from_where_it_came_and_constants_fold() {
    use crate::bpf::insn::{AluOp, Size};
    // A missing key's first count: the zeroed buffer is read, incremented and written back;
    // after, `1` is stored once.
    let mut out = emitted(vec![
        Insn::st(Size::DW, Reg::R10, -16, 0),
        Insn::ldx(Size::DW, Reg::R8, Reg::R10, -16),
        Insn::alu64_imm(AluOp::Add, Reg::R8, 1),
        Insn::stx(Size::DW, Reg::R10, -16, Reg::R8),
        Insn::mov64_reg(Reg::R1, Reg::R10),
        Insn::alu64_imm(AluOp::Add, Reg::R1, -16),
        Insn::call(crate::bpf::insn::Helper::GetPrandomU32),
        Insn::exit(),
    ]);
    run(&mut out, &mut Vec::new());
    assert_eq!(
        out.insns,
        vec![
            Insn::st(Size::DW, Reg::R10, -16, 1),
            Insn::mov64_reg(Reg::R1, Reg::R10),
            Insn::alu64_imm(AluOp::Add, Reg::R1, -16),
            Insn::call(crate::bpf::insn::Helper::GetPrandomU32),
            Insn::exit(),
        ]
    );
}

#[test]
fn a_spilled_value_reloaded_into_the_register_that_holds_it_is_not_reloaded() {
    use crate::bpf::insn::Size;
    // r1 = spill; read through it; r1 = spill again (r1 unchanged): the second load goes.
    let mut out = emitted(vec![
        Insn::ldx(Size::DW, Reg::R1, Reg::R10, -32),
        Insn::ldx(Size::W, Reg::R6, Reg::R1, 0),
        Insn::stx(Size::W, Reg::R10, -40, Reg::R6),
        Insn::ldx(Size::DW, Reg::R1, Reg::R10, -32),
        Insn::ldx(Size::W, Reg::R0, Reg::R1, 4),
        Insn::exit(),
    ]);
    run(&mut out, &mut Vec::new());
    assert_eq!(
        out.insns,
        vec![
            Insn::ldx(Size::DW, Reg::R1, Reg::R10, -32),
            Insn::ldx(Size::W, Reg::R6, Reg::R1, 0),
            Insn::stx(Size::W, Reg::R10, -40, Reg::R6),
            Insn::ldx(Size::W, Reg::R0, Reg::R1, 4),
            Insn::exit(),
        ]
    );
}

#[test]
fn a_value_made_for_a_call_argument_is_made_in_the_argument_register() {
    use crate::bpf::insn::{AluOp, Helper, Size};
    // Before: the source address is made in r7 and moved to r3 (r7 not read after).
    // After: it is made in r3. r8, read after the call, keeps its move.
    assert_becomes(
        vec![
            Insn::mov64_reg(Reg::R6, Reg::R1),
            Insn::ldx(Size::DW, Reg::R8, Reg::R6, 16),
            Insn::mov64_reg(Reg::R7, Reg::R6),
            Insn::alu64_imm(AluOp::Add, Reg::R7, 34),
            Insn::mov64_reg(Reg::R1, Reg::R10),
            Insn::alu64_imm(AluOp::Add, Reg::R1, -16),
            Insn::mov64_imm(Reg::R2, 10),
            Insn::mov64_reg(Reg::R3, Reg::R7),
            Insn::mov64_reg(Reg::R4, Reg::R8),
            Insn::call(Helper::ProbeReadKernel),
            Insn::mov64_reg(Reg::R0, Reg::R8),
            Insn::exit(),
        ],
        vec![
            Insn::ldx(Size::DW, Reg::R8, Reg::R1, 16),
            Insn::mov64_reg(Reg::R3, Reg::R1),
            Insn::alu64_imm(AluOp::Add, Reg::R3, 34),
            Insn::mov64_reg(Reg::R1, Reg::R10),
            Insn::alu64_imm(AluOp::Add, Reg::R1, -16),
            Insn::mov64_imm(Reg::R2, 10),
            Insn::mov64_reg(Reg::R4, Reg::R8),
            Insn::call(Helper::ProbeReadKernel),
            Insn::mov64_reg(Reg::R0, Reg::R8),
            Insn::exit(),
        ],
    );
}

#[test]
fn no_retarget_across_a_join_a_call_or_a_read_of_the_destination() {
    use crate::bpf::insn::{AluOp, Helper};
    // r7 is made, then r1 is read (the call), then r7 moves to r1: renaming would overwrite
    // the call's argument. A call between also clobbers r1–r5.
    let prog = vec![
        Insn::mov64_imm(Reg::R7, 5),
        Insn::alu64_reg(AluOp::Add, Reg::R7, Reg::R0),
        Insn::call(Helper::GetPrandomU32),
        Insn::mov64_reg(Reg::R1, Reg::R7),
        Insn::call(Helper::GetPrandomU32),
        Insn::exit(),
    ];
    assert_unchanged(prog);
}

#[test]
fn adding_to_zero_is_a_move_and_powers_of_two_divide_by_shifts() {
    use crate::bpf::insn::AluOp;
    assert_becomes(
        vec![
            Insn::call(crate::bpf::insn::Helper::GetPrandomU32),
            Insn::mov64_imm(Reg::R6, 0),
            Insn::alu64_reg(AluOp::Add, Reg::R6, Reg::R0),
            Insn::alu64_imm(AluOp::Div, Reg::R6, 1024),
            Insn::alu64_imm(AluOp::Mod, Reg::R6, 16),
            Insn::alu64_imm(AluOp::Div, Reg::R6, 10),
            Insn::mov64_reg(Reg::R0, Reg::R6),
            Insn::exit(),
        ],
        vec![
            Insn::call(crate::bpf::insn::Helper::GetPrandomU32),
            Insn::alu64_imm(AluOp::Rsh, Reg::R0, 10),
            Insn::alu64_imm(AluOp::And, Reg::R0, 15),
            Insn::alu64_imm(AluOp::Div, Reg::R0, 10),
            Insn::exit(),
        ],
    );
}
