//! Kernel tests of verifier rejections: the diagnostic points at the failing instruction's
//! span and explains it; and sonde's disassembler prints instructions exactly as the
//! verifier log does.

mod kernel_support;

use kernel_support::{Asm, insn_span, map, script, target};
use sonde_compiler::bpf::disasm::disassemble;
use sonde_compiler::bpf::insn::{AluOp, AtomicOp, Helper, Insn, JmpOp, Reg, Size};
use sonde_compiler::program::{AttachSpec, MapKind};
use sonde_kernel::load::load;

const R0: Reg = Reg::R0;
const R1: Reg = Reg::R1;
const R2: Reg = Reg::R2;
const R3: Reg = Reg::R3;
const R10: Reg = Reg::R10;

#[test]
fn hash_lookup_without_null_check() {
    let mut a = Asm::new();
    a.push(Insn::st(Size::DW, R10, -8, 0));
    a.push(Insn::mov64_reg(R2, R10));
    a.push(Insn::add64_imm(R2, -8));
    a.ld_map(R1, "h");
    a.push(Insn::call(Helper::MapLookupElem));
    let bad = a.push(Insn::ldx(Size::DW, R0, R0, 0));
    a.ret0();
    let prog = a.finish("nullchk", "raw_tp/begin");
    let s = script(
        vec![(prog, vec![target(AttachSpec::Begin)])],
        vec![map("h", MapKind::Hash, 8, 8, 4)],
    );
    let err = load(&s).unwrap_err();
    let d = err.diagnostic;
    assert_eq!(d.code, "sonde::load::verifier");
    assert_eq!(bad, 6);
    assert_eq!(d.span, insn_span(bad));
    assert_eq!(
        d.message,
        "the kernel rejected this probe: a map lookup result is used without a NULL check"
    );
    assert_eq!(
        d.label,
        "verifier: R0 invalid mem access 'map_value_or_null' at instruction 6"
    );
    let log = err.verifier_log.expect("the verifier log is kept");
    assert!(log.contains("6: (79) r0 = *(u64 *)(r0 +0)"), "{log}");
}

#[test]
fn uninitialised_register() {
    let mut a = Asm::new();
    a.push(Insn::mov64_imm(R0, 0));
    a.push(Insn::alu64_reg(AluOp::Add, R0, R3));
    a.push(Insn::exit());
    let prog = a.finish("uninit", "raw_tp/begin");
    let s = script(vec![(prog, vec![target(AttachSpec::Begin)])], vec![]);
    let d = load(&s).unwrap_err().diagnostic;
    assert_eq!(d.span, insn_span(1));
    assert_eq!(
        d.message,
        "the kernel rejected this probe: a register is read before anything was written to it"
    );
    assert_eq!(d.label, "verifier: R3 !read_ok at instruction 1");
}

#[test]
fn unbounded_loop_is_explained() {
    let mut a = Asm::new();
    a.push(Insn::call(Helper::GetPrandomU32));
    a.label("top");
    a.push(Insn::add64_imm(R0, 1));
    a.jmp_imm(JmpOp::Ne, R0, 0, "top");
    a.ret0();
    let prog = a.finish("loop", "raw_tp/begin");
    let s = script(vec![(prog, vec![target(AttachSpec::Begin)])], vec![]);
    let err = load(&s).unwrap_err();
    let d = err.diagnostic;
    assert_eq!(d.code, "sonde::load::verifier");
    // The 6.x verifier explores loops; this one never ends, and the loop detector says so
    // on the back-edge.
    assert_eq!(
        d.message,
        "the kernel rejected this probe: the program contains a loop the verifier cannot prove terminates"
    );
    assert_eq!(
        d.span,
        insn_span(2),
        "{}",
        err.verifier_log.unwrap_or_default()
    );
}

/// Every instruction form the disassembler prints, checked against the verifier's own
/// rendering of the same program (a log is produced because the program ends in an error).
#[test]
fn disassembly_matches_the_verifier_log() {
    let mut a = Asm::new();
    let body = [
        Insn::mov64_imm(R0, 0),
        Insn::mov64_imm(R1, -3),
        Insn::mov32_imm(R2, 7),
        Insn::mov64_reg(R3, R1),
        Insn::mov32_reg(R3, R2),
        Insn::alu64_imm(AluOp::Add, R1, 8),
        Insn::alu64_reg(AluOp::Sub, R1, R2),
        Insn::alu64_imm(AluOp::Mul, R1, 3),
        Insn::alu64_imm(AluOp::Div, R1, 2),
        Insn::alu64_imm(AluOp::SDiv, R1, 2),
        Insn::alu64_imm(AluOp::Mod, R1, 5),
        Insn::alu64_imm(AluOp::SMod, R1, 5),
        Insn::alu32_imm(AluOp::Or, R2, 0x10),
        Insn::alu64_imm(AluOp::And, R1, 0xff),
        Insn::alu64_imm(AluOp::Lsh, R1, 4),
        Insn::alu64_imm(AluOp::Rsh, R1, 2),
        Insn::alu64_imm(AluOp::Arsh, R1, 1),
        Insn::alu64_reg(AluOp::Xor, R1, R2),
        Insn::alu64_reg(AluOp::MovSx8, R3, R1),
        Insn::alu64_reg(AluOp::MovSx32, R3, R1),
        Insn::neg64(R1),
        Insn::neg32(R2),
        Insn::be(R1, 16),
        Insn::le(R1, 32),
        Insn::bswap(R1, 64),
        Insn::stx(Size::DW, R10, -8, R1),
        Insn::stx(Size::W, R10, -12, R2),
        Insn::st(Size::H, R10, -14, 5),
        Insn::st(Size::B, R10, -15, 1),
        Insn::st(Size::B, R10, -16, 1),
        Insn::ldx(Size::DW, R3, R10, -8),
        Insn::ldx(Size::W, R3, R10, -12),
        Insn::ldx(Size::H, R3, R10, -14),
        Insn::ldx(Size::B, R3, R10, -15),
        Insn::mov64_reg(R2, R10),
        Insn::mov64_imm(R3, 1),
        Insn::atomic_add64(R2, -8, R3),
        Insn::atomic(Size::DW, AtomicOp::FetchAdd, R2, -8, R3),
        Insn::atomic(Size::W, AtomicOp::Or, R2, -12, R3),
        Insn::jmp_imm(JmpOp::Gt, R1, 5, 0),
        Insn::jmp_reg(JmpOp::Ne, R1, R3, 0),
        Insn::jmp32_imm(JmpOp::Sle, R1, -1, 0),
        Insn::ja(0),
        Insn::call(Helper::KtimeGetNs),
    ];
    for insn in body {
        a.push(insn);
    }
    a.push2(Insn::ld_imm64(R1, 0x1122_3344_5566_7788));
    // Fail on purpose so that the verifier prints its log: read an uninitialised register.
    a.push(Insn::mov64_reg(R0, Reg::R4));
    a.push(Insn::exit());
    let prog = a.finish("disasm", "raw_tp/begin");
    let insns = prog.insns.clone();
    let s = script(vec![(prog, vec![target(AttachSpec::Begin)])], vec![]);
    let err = load(&s).unwrap_err();
    assert_eq!(
        err.diagnostic.label,
        format!("verifier: R4 !read_ok at instruction {}", insns.len() - 2)
    );
    let log = err.verifier_log.unwrap();

    // Kernel lines look like `12: (79) r1 = *(u64 *)(r2 +0)       ; R1_w=...`.
    let kernel: Vec<String> = log
        .lines()
        .filter(|l| {
            l.split_once(": (")
                .is_some_and(|(i, _)| i.parse::<usize>().is_ok())
        })
        .map(|l| l.split(" ; ").next().unwrap().trim_end().to_string())
        .collect();
    let ours = disassemble(&insns);
    let ld_imm64 = ours.len() - 3;
    // The final `exit` is never reached, so the kernel does not print it.
    for (i, line) in ours.iter().enumerate().take(ours.len() - 1) {
        if i == ld_imm64 {
            // The verifier prints 64-bit constants without llvm's ` ll` suffix.
            assert!(
                kernel.contains(&line.trim_end_matches(" ll").to_string()),
                "{line}\n{log}"
            );
        } else {
            assert!(kernel.contains(line), "ours: {line}\nkernel log:\n{log}");
        }
    }
}
