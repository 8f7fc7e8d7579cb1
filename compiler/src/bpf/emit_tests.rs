//! Encoding table: every instruction form, constructed through the public constructors,
//! against the exact bytes the kernel expects (written out by hand from the kernel's
//! `include/uapi/linux/bpf.h` opcode values, not derived from the encoder).

use super::insn::*;

const R0: Reg = Reg::R0;
const R1: Reg = Reg::R1;
const R2: Reg = Reg::R2;
const R10: Reg = Reg::R10;

fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// (what, instruction, expected bytes as "xx xx ...").
fn table() -> Vec<(&'static str, Insn, &'static str)> {
    use AluOp::*;
    use JmpOp::*;
    vec![
        // ALU64, register source
        (
            "add64 reg",
            Insn::alu64_reg(Add, R1, R2),
            "0f 21 00 00 00 00 00 00",
        ),
        (
            "sub64 reg",
            Insn::alu64_reg(Sub, R1, R2),
            "1f 21 00 00 00 00 00 00",
        ),
        (
            "mul64 reg",
            Insn::alu64_reg(Mul, R1, R2),
            "2f 21 00 00 00 00 00 00",
        ),
        (
            "div64 reg",
            Insn::alu64_reg(Div, R1, R2),
            "3f 21 00 00 00 00 00 00",
        ),
        (
            "sdiv64 reg",
            Insn::alu64_reg(SDiv, R1, R2),
            "3f 21 01 00 00 00 00 00",
        ),
        (
            "or64 reg",
            Insn::alu64_reg(Or, R1, R2),
            "4f 21 00 00 00 00 00 00",
        ),
        (
            "and64 reg",
            Insn::alu64_reg(And, R1, R2),
            "5f 21 00 00 00 00 00 00",
        ),
        (
            "lsh64 reg",
            Insn::alu64_reg(Lsh, R1, R2),
            "6f 21 00 00 00 00 00 00",
        ),
        (
            "rsh64 reg",
            Insn::alu64_reg(Rsh, R1, R2),
            "7f 21 00 00 00 00 00 00",
        ),
        (
            "mod64 reg",
            Insn::alu64_reg(Mod, R1, R2),
            "9f 21 00 00 00 00 00 00",
        ),
        (
            "smod64 reg",
            Insn::alu64_reg(SMod, R1, R2),
            "9f 21 01 00 00 00 00 00",
        ),
        (
            "xor64 reg",
            Insn::alu64_reg(Xor, R1, R2),
            "af 21 00 00 00 00 00 00",
        ),
        (
            "mov64 reg",
            Insn::mov64_reg(R1, R2),
            "bf 21 00 00 00 00 00 00",
        ),
        (
            "movsx8 64",
            Insn::alu64_reg(MovSx8, R1, R2),
            "bf 21 08 00 00 00 00 00",
        ),
        (
            "movsx16 64",
            Insn::alu64_reg(MovSx16, R1, R2),
            "bf 21 10 00 00 00 00 00",
        ),
        (
            "movsx32 64",
            Insn::alu64_reg(MovSx32, R1, R2),
            "bf 21 20 00 00 00 00 00",
        ),
        (
            "arsh64 reg",
            Insn::alu64_reg(Arsh, R1, R2),
            "cf 21 00 00 00 00 00 00",
        ),
        // ALU64, immediate source
        (
            "add64 imm",
            Insn::add64_imm(R1, 8),
            "07 01 00 00 08 00 00 00",
        ),
        (
            "add64 -imm",
            Insn::alu64_imm(Add, R10, -16),
            "07 0a 00 00 f0 ff ff ff",
        ),
        (
            "sub64 imm",
            Insn::alu64_imm(Sub, R1, 1),
            "17 01 00 00 01 00 00 00",
        ),
        (
            "mul64 imm",
            Insn::alu64_imm(Mul, R1, 3),
            "27 01 00 00 03 00 00 00",
        ),
        (
            "div64 imm",
            Insn::alu64_imm(Div, R1, 10),
            "37 01 00 00 0a 00 00 00",
        ),
        (
            "sdiv64 imm",
            Insn::alu64_imm(SDiv, R1, -2),
            "37 01 01 00 fe ff ff ff",
        ),
        (
            "or64 imm",
            Insn::alu64_imm(Or, R1, 0x10),
            "47 01 00 00 10 00 00 00",
        ),
        (
            "and64 imm",
            Insn::alu64_imm(And, R1, 0xff),
            "57 01 00 00 ff 00 00 00",
        ),
        (
            "lsh64 imm",
            Insn::alu64_imm(Lsh, R1, 32),
            "67 01 00 00 20 00 00 00",
        ),
        (
            "rsh64 imm",
            Insn::alu64_imm(Rsh, R0, 32),
            "77 00 00 00 20 00 00 00",
        ),
        ("neg64", Insn::neg64(R1), "87 01 00 00 00 00 00 00"),
        (
            "mod64 imm",
            Insn::alu64_imm(Mod, R1, 7),
            "97 01 00 00 07 00 00 00",
        ),
        (
            "smod64 imm",
            Insn::alu64_imm(SMod, R1, 7),
            "97 01 01 00 07 00 00 00",
        ),
        (
            "xor64 imm",
            Insn::alu64_imm(Xor, R1, 1),
            "a7 01 00 00 01 00 00 00",
        ),
        (
            "mov64 imm",
            Insn::mov64_imm(R1, 5),
            "b7 01 00 00 05 00 00 00",
        ),
        (
            "arsh64 imm",
            Insn::alu64_imm(Arsh, R1, 63),
            "c7 01 00 00 3f 00 00 00",
        ),
        // ALU32
        (
            "add32 reg",
            Insn::alu32_reg(Add, R1, R2),
            "0c 21 00 00 00 00 00 00",
        ),
        (
            "sub32 reg",
            Insn::alu32_reg(Sub, R1, R2),
            "1c 21 00 00 00 00 00 00",
        ),
        (
            "mul32 reg",
            Insn::alu32_reg(Mul, R1, R2),
            "2c 21 00 00 00 00 00 00",
        ),
        (
            "div32 reg",
            Insn::alu32_reg(Div, R1, R2),
            "3c 21 00 00 00 00 00 00",
        ),
        (
            "sdiv32 reg",
            Insn::alu32_reg(SDiv, R1, R2),
            "3c 21 01 00 00 00 00 00",
        ),
        (
            "or32 reg",
            Insn::alu32_reg(Or, R1, R2),
            "4c 21 00 00 00 00 00 00",
        ),
        (
            "and32 reg",
            Insn::alu32_reg(And, R1, R2),
            "5c 21 00 00 00 00 00 00",
        ),
        (
            "lsh32 reg",
            Insn::alu32_reg(Lsh, R1, R2),
            "6c 21 00 00 00 00 00 00",
        ),
        (
            "rsh32 reg",
            Insn::alu32_reg(Rsh, R1, R2),
            "7c 21 00 00 00 00 00 00",
        ),
        (
            "mod32 reg",
            Insn::alu32_reg(Mod, R1, R2),
            "9c 21 00 00 00 00 00 00",
        ),
        (
            "smod32 reg",
            Insn::alu32_reg(SMod, R1, R2),
            "9c 21 01 00 00 00 00 00",
        ),
        (
            "xor32 reg",
            Insn::alu32_reg(Xor, R1, R2),
            "ac 21 00 00 00 00 00 00",
        ),
        (
            "mov32 reg",
            Insn::mov32_reg(R1, R2),
            "bc 21 00 00 00 00 00 00",
        ),
        (
            "movsx8 32",
            Insn::alu32_reg(MovSx8, R1, R2),
            "bc 21 08 00 00 00 00 00",
        ),
        (
            "arsh32 reg",
            Insn::alu32_reg(Arsh, R1, R2),
            "cc 21 00 00 00 00 00 00",
        ),
        (
            "add32 imm",
            Insn::alu32_imm(Add, R1, 1),
            "04 01 00 00 01 00 00 00",
        ),
        (
            "sub32 imm",
            Insn::alu32_imm(Sub, R1, 1),
            "14 01 00 00 01 00 00 00",
        ),
        (
            "mul32 imm",
            Insn::alu32_imm(Mul, R1, 2),
            "24 01 00 00 02 00 00 00",
        ),
        (
            "div32 imm",
            Insn::alu32_imm(Div, R1, 2),
            "34 01 00 00 02 00 00 00",
        ),
        (
            "or32 imm",
            Insn::alu32_imm(Or, R1, 2),
            "44 01 00 00 02 00 00 00",
        ),
        (
            "and32 imm",
            Insn::alu32_imm(And, R1, 2),
            "54 01 00 00 02 00 00 00",
        ),
        (
            "lsh32 imm",
            Insn::alu32_imm(Lsh, R1, 2),
            "64 01 00 00 02 00 00 00",
        ),
        (
            "rsh32 imm",
            Insn::alu32_imm(Rsh, R1, 2),
            "74 01 00 00 02 00 00 00",
        ),
        ("neg32", Insn::neg32(R1), "84 01 00 00 00 00 00 00"),
        (
            "mod32 imm",
            Insn::alu32_imm(Mod, R1, 2),
            "94 01 00 00 02 00 00 00",
        ),
        (
            "xor32 imm",
            Insn::alu32_imm(Xor, R1, 2),
            "a4 01 00 00 02 00 00 00",
        ),
        (
            "mov32 imm",
            Insn::mov32_imm(R1, -1),
            "b4 01 00 00 ff ff ff ff",
        ),
        (
            "arsh32 imm",
            Insn::alu32_imm(Arsh, R1, 2),
            "c4 01 00 00 02 00 00 00",
        ),
        // byte swaps
        ("be16", Insn::be(R1, 16), "dc 01 00 00 10 00 00 00"),
        ("be32", Insn::be(R1, 32), "dc 01 00 00 20 00 00 00"),
        ("be64", Insn::be(R1, 64), "dc 01 00 00 40 00 00 00"),
        ("le16", Insn::le(R1, 16), "d4 01 00 00 10 00 00 00"),
        ("bswap64", Insn::bswap(R1, 64), "d7 01 00 00 40 00 00 00"),
        // loads and stores
        (
            "ldx dw",
            Insn::ldx(Size::DW, R0, R1, 8),
            "79 10 08 00 00 00 00 00",
        ),
        (
            "ldx w",
            Insn::ldx(Size::W, R0, R1, 8),
            "61 10 08 00 00 00 00 00",
        ),
        (
            "ldx h",
            Insn::ldx(Size::H, R0, R1, 8),
            "69 10 08 00 00 00 00 00",
        ),
        (
            "ldx b",
            Insn::ldx(Size::B, R0, R1, -1),
            "71 10 ff ff 00 00 00 00",
        ),
        (
            "stx dw",
            Insn::stx(Size::DW, R10, -8, R1),
            "7b 1a f8 ff 00 00 00 00",
        ),
        (
            "stx w",
            Insn::stx(Size::W, R10, -4, R1),
            "63 1a fc ff 00 00 00 00",
        ),
        (
            "stx h",
            Insn::stx(Size::H, R10, -2, R1),
            "6b 1a fe ff 00 00 00 00",
        ),
        (
            "stx b",
            Insn::stx(Size::B, R10, -1, R1),
            "73 1a ff ff 00 00 00 00",
        ),
        (
            "st dw",
            Insn::st(Size::DW, R10, -8, 0),
            "7a 0a f8 ff 00 00 00 00",
        ),
        (
            "st w",
            Insn::st(Size::W, R10, -8, 7),
            "62 0a f8 ff 07 00 00 00",
        ),
        (
            "st h",
            Insn::st(Size::H, R10, -8, 7),
            "6a 0a f8 ff 07 00 00 00",
        ),
        (
            "st b",
            Insn::st(Size::B, R10, -8, 7),
            "72 0a f8 ff 07 00 00 00",
        ),
        // atomics
        (
            "atomic add64",
            Insn::atomic_add64(R1, 0, R2),
            "db 21 00 00 00 00 00 00",
        ),
        (
            "atomic add32",
            Insn::atomic_add32(R1, 4, R2),
            "c3 21 04 00 00 00 00 00",
        ),
        (
            "atomic or64",
            Insn::atomic(Size::DW, AtomicOp::Or, R1, 0, R2),
            "db 21 00 00 40 00 00 00",
        ),
        (
            "fetch add64",
            Insn::atomic(Size::DW, AtomicOp::FetchAdd, R1, 0, R2),
            "db 21 00 00 01 00 00 00",
        ),
        (
            "xchg64",
            Insn::atomic(Size::DW, AtomicOp::Xchg, R1, 0, R2),
            "db 21 00 00 e1 00 00 00",
        ),
        (
            "cmpxchg64",
            Insn::atomic(Size::DW, AtomicOp::CmpXchg, R1, 0, R2),
            "db 21 00 00 f1 00 00 00",
        ),
        // jumps
        ("ja", Insn::ja(3), "05 00 03 00 00 00 00 00"),
        ("ja back", Insn::ja(-2), "05 00 fe ff 00 00 00 00"),
        (
            "jeq imm",
            Insn::jmp_imm(Eq, R1, 0, 2),
            "15 01 02 00 00 00 00 00",
        ),
        (
            "jgt imm",
            Insn::jmp_imm(Gt, R1, 5, 3),
            "25 01 03 00 05 00 00 00",
        ),
        (
            "jge imm",
            Insn::jmp_imm(Ge, R1, 5, 3),
            "35 01 03 00 05 00 00 00",
        ),
        (
            "jset imm",
            Insn::jmp_imm(Set, R1, 5, 3),
            "45 01 03 00 05 00 00 00",
        ),
        (
            "jne imm",
            Insn::jmp_imm(Ne, R1, 5, 3),
            "55 01 03 00 05 00 00 00",
        ),
        (
            "jsgt imm",
            Insn::jmp_imm(Sgt, R1, -1, 3),
            "65 01 03 00 ff ff ff ff",
        ),
        (
            "jsge imm",
            Insn::jmp_imm(Sge, R1, 5, 3),
            "75 01 03 00 05 00 00 00",
        ),
        (
            "jlt imm",
            Insn::jmp_imm(Lt, R1, 5, 3),
            "a5 01 03 00 05 00 00 00",
        ),
        (
            "jle imm",
            Insn::jmp_imm(Le, R1, 5, 3),
            "b5 01 03 00 05 00 00 00",
        ),
        (
            "jslt imm",
            Insn::jmp_imm(Slt, R1, 5, 3),
            "c5 01 03 00 05 00 00 00",
        ),
        (
            "jsle imm",
            Insn::jmp_imm(Sle, R1, 5, 3),
            "d5 01 03 00 05 00 00 00",
        ),
        (
            "jeq reg",
            Insn::jmp_reg(Eq, R1, R2, 1),
            "1d 21 01 00 00 00 00 00",
        ),
        (
            "jgt reg",
            Insn::jmp_reg(Gt, R1, R2, 1),
            "2d 21 01 00 00 00 00 00",
        ),
        (
            "jge reg",
            Insn::jmp_reg(Ge, R1, R2, 1),
            "3d 21 01 00 00 00 00 00",
        ),
        (
            "jset reg",
            Insn::jmp_reg(Set, R1, R2, 1),
            "4d 21 01 00 00 00 00 00",
        ),
        (
            "jne reg",
            Insn::jmp_reg(Ne, R1, R2, 1),
            "5d 21 01 00 00 00 00 00",
        ),
        (
            "jsgt reg",
            Insn::jmp_reg(Sgt, R1, R2, 1),
            "6d 21 01 00 00 00 00 00",
        ),
        (
            "jsge reg",
            Insn::jmp_reg(Sge, R1, R2, 1),
            "7d 21 01 00 00 00 00 00",
        ),
        (
            "jlt reg",
            Insn::jmp_reg(Lt, R1, R2, 1),
            "ad 21 01 00 00 00 00 00",
        ),
        (
            "jle reg",
            Insn::jmp_reg(Le, R1, R2, 1),
            "bd 21 01 00 00 00 00 00",
        ),
        (
            "jslt reg",
            Insn::jmp_reg(Slt, R1, R2, 1),
            "cd 21 01 00 00 00 00 00",
        ),
        (
            "jsle reg",
            Insn::jmp_reg(Sle, R1, R2, -1),
            "dd 21 ff ff 00 00 00 00",
        ),
        (
            "jeq32 imm",
            Insn::jmp32_imm(Eq, R1, 0, 2),
            "16 01 02 00 00 00 00 00",
        ),
        (
            "jlt32 imm",
            Insn::jmp32_imm(Lt, R1, 9, 2),
            "a6 01 02 00 09 00 00 00",
        ),
        (
            "jne32 reg",
            Insn::jmp32_reg(Ne, R1, R2, 2),
            "5e 21 02 00 00 00 00 00",
        ),
        (
            "jsle32 reg",
            Insn::jmp32_reg(Sle, R1, R2, 2),
            "de 21 02 00 00 00 00 00",
        ),
        // calls and exit
        (
            "call helper",
            Insn::call(Helper::MapLookupElem),
            "85 00 00 00 01 00 00 00",
        ),
        (
            "call pid_tgid",
            Insn::call(Helper::GetCurrentPidTgid),
            "85 00 00 00 0e 00 00 00",
        ),
        (
            "call ringbuf",
            Insn::call(Helper::RingbufOutput),
            "85 00 00 00 82 00 00 00",
        ),
        ("call local", Insn::call_local(5), "85 10 00 00 05 00 00 00"),
        ("exit", Insn::exit(), "95 00 00 00 00 00 00 00"),
    ]
}

#[test]
fn encoding_table() {
    for (what, insn, expected) in table() {
        assert_eq!(hex(&insn.encode()), expected, "{what}");
        assert_eq!(Insn::decode(insn.encode()), insn, "{what} round trip");
    }
}

#[test]
fn two_slot_forms() {
    let [a, b] = Insn::ld_imm64(R1, 0x1122_3344_5566_7788);
    assert_eq!(hex(&a.encode()), "18 01 00 00 88 77 66 55");
    assert_eq!(hex(&b.encode()), "00 00 00 00 44 33 22 11");
    let [a, b] = Insn::ld_map_fd(R1, 5);
    assert_eq!(hex(&a.encode()), "18 11 00 00 05 00 00 00");
    assert_eq!(hex(&b.encode()), "00 00 00 00 00 00 00 00");
    let [a, b] = Insn::ld_map_reloc(R2);
    assert_eq!(hex(&a.encode()), "18 02 00 00 00 00 00 00");
    assert_eq!(hex(&b.encode()), "00 00 00 00 00 00 00 00");
    assert!(a.is_ld_imm64());
    assert!(!b.is_ld_imm64());
}

#[test]
fn helper_ids_match_the_kernel() {
    // Checked against `enum bpf_func_id` in /sys/kernel/btf/vmlinux (Linux 6.18).
    let expected = [
        (Helper::MapLookupElem, 1),
        (Helper::MapUpdateElem, 2),
        (Helper::MapDeleteElem, 3),
        (Helper::ProbeRead, 4),
        (Helper::KtimeGetNs, 5),
        (Helper::TracePrintk, 6),
        (Helper::GetPrandomU32, 7),
        (Helper::GetSmpProcessorId, 8),
        (Helper::TailCall, 12),
        (Helper::GetCurrentPidTgid, 14),
        (Helper::GetCurrentUidGid, 15),
        (Helper::GetCurrentComm, 16),
        (Helper::PerfEventOutput, 25),
        (Helper::GetStackid, 27),
        (Helper::GetStack, 67),
        (Helper::GetCurrentTask, 35),
        (Helper::ProbeReadStr, 45),
        (Helper::GetCurrentCgroupId, 80),
        (Helper::GetCurrentAncestorCgroupId, 123),
        (Helper::ProbeWriteUser, 36),
        (Helper::GetNumaNodeId, 42),
        (Helper::OverrideReturn, 58),
        (Helper::SendSignal, 109),
        (Helper::SendSignalThread, 117),
        (Helper::ProbeReadUser, 112),
        (Helper::ProbeReadKernel, 113),
        (Helper::ProbeReadUserStr, 114),
        (Helper::ProbeReadKernelStr, 115),
        (Helper::Jiffies64, 118),
        (Helper::GetNsCurrentPidTgid, 120),
        (Helper::KtimeGetBootNs, 125),
        (Helper::RingbufOutput, 130),
        (Helper::RingbufReserve, 131),
        (Helper::RingbufSubmit, 132),
        (Helper::RingbufDiscard, 133),
        (Helper::GetCurrentTaskBtf, 158),
        (Helper::ForEachMapElem, 164),
        (Helper::GetFuncIp, 173),
        (Helper::SeqPrintf, 126),
        (Helper::DPath, 147),
        (Helper::Loop, 181),
        (Helper::MapLookupPercpuElem, 195),
        (Helper::KtimeGetTaiNs, 208),
        (Helper::PerCpuPtr, 153),
        (Helper::ThisCpuPtr, 154),
    ];
    assert_eq!(expected.len(), Helper::ALL.len());
    for (helper, id) in expected {
        assert_eq!(helper as i32, id, "{helper:?}");
        assert_eq!(Helper::from_id(id), Some(helper));
    }
    assert_eq!(Helper::from_id(9999), None);
}

#[test]
fn op_tables_round_trip() {
    use AluOp::*;
    for op in [
        Add, Sub, Mul, Div, SDiv, Or, And, Lsh, Rsh, Neg, Mod, SMod, Xor, Mov, MovSx8, MovSx16,
        MovSx32, Arsh,
    ] {
        let (code, off) = op.code_off();
        assert_eq!(AluOp::from_code_off(code, off), Some(op));
    }
    for imm in [0x00, 0x01, 0x40, 0x41, 0x50, 0x51, 0xa0, 0xa1, 0xe1, 0xf1] {
        assert_eq!(AtomicOp::from_imm(imm).map(AtomicOp::imm), Some(imm));
    }
    assert_eq!(JmpOp::Lt.swapped(), JmpOp::Gt);
    assert_eq!(JmpOp::Sge.negated(), Some(JmpOp::Slt));
    assert_eq!(JmpOp::Set.negated(), None);
    assert_eq!(Size::from_bytes(4), Some(Size::W));
    assert_eq!(Size::from_bytes(3), None);
}
