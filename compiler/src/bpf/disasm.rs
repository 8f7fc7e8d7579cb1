//! A disassembler in the kernel verifier's syntax (`r1 += 8`, `w1 = w2`,
//! `r0 = *(u64 *)(r1 +8)`, `if r1 > 0x5 goto pc+3`, `call bpf_map_lookup_elem#1`), so that
//! `--dump-bpf` output reads like the instruction lines of a verifier log.
//!
//! [`Insn`]'s `Display` prints one slot. A 64-bit immediate load spans two slots and is
//! printed by [`disassemble`], which sees both (`r1 = 0x1122334455667788 ll`).

use std::fmt;

use super::insn::{AluOp, AtomicOp, Helper, Insn, JmpOp, PSEUDO_CALL, PSEUDO_MAP_FD, Size, class};
use super::kfuncs::{PSEUDO_BTF_ID, PSEUDO_KFUNC_CALL};

fn size_name(size: Size) -> &'static str {
    match size {
        Size::B => "u8",
        Size::H => "u16",
        Size::W => "u32",
        Size::DW => "u64",
    }
}

fn alu_op_str(op: AluOp) -> &'static str {
    match op {
        AluOp::Add => "+=",
        AluOp::Sub => "-=",
        AluOp::Mul => "*=",
        AluOp::Div => "/=",
        AluOp::SDiv => "s/=",
        AluOp::Or => "|=",
        AluOp::And => "&=",
        AluOp::Lsh => "<<=",
        AluOp::Rsh => ">>=",
        AluOp::Mod => "%=",
        AluOp::SMod => "s%=",
        AluOp::Xor => "^=",
        AluOp::Mov | AluOp::MovSx8 | AluOp::MovSx16 | AluOp::MovSx32 => "=",
        AluOp::Arsh => "s>>=",
        AluOp::Neg => "neg",
    }
}

fn jmp_op_str(op: JmpOp) -> &'static str {
    match op {
        JmpOp::Eq => "==",
        JmpOp::Gt => ">",
        JmpOp::Ge => ">=",
        JmpOp::Set => "&",
        JmpOp::Ne => "!=",
        JmpOp::Sgt => "s>",
        JmpOp::Sge => "s>=",
        JmpOp::Lt => "<",
        JmpOp::Le => "<=",
        JmpOp::Slt => "s<",
        JmpOp::Sle => "s<=",
    }
}

fn fmt_alu(i: &Insn, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let is64 = i.class() == class::ALU64;
    let r = if is64 { 'r' } else { 'w' };
    let (dst, src) = (i.dst, i.src);
    if i.code & 0xf0 == 0xd0 {
        // Byte swaps always print 64-bit register names, like the kernel.
        return if is64 {
            write!(f, "r{dst} = bswap{} r{dst}", i.imm)
        } else {
            let kind = if i.code & 0x08 != 0 { "be" } else { "le" };
            write!(f, "r{dst} = {kind}{} r{dst}", i.imm)
        };
    }
    let Some(op) = AluOp::from_code_off(i.code, i.off) else {
        return write!(f, "invalid alu (code {:#04x}, off {})", i.code, i.off);
    };
    let reg_src = i.code & 0x08 != 0;
    match op {
        AluOp::Neg => write!(f, "{r}{dst} = -{r}{dst}"),
        AluOp::MovSx8 | AluOp::MovSx16 | AluOp::MovSx32 => {
            write!(f, "{r}{dst} = (s{}){r}{src}", i.off)
        }
        _ if reg_src => write!(f, "{r}{dst} {} {r}{src}", alu_op_str(op)),
        _ => write!(f, "{r}{dst} {} {}", alu_op_str(op), i.imm),
    }
}

fn fmt_mem(i: &Insn, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let size = size_name(Size::from_code(i.code));
    let (dst, src, off) = (i.dst, i.src, i.off);
    match (i.class(), i.code & 0xe0) {
        (class::LDX, 0x60) => write!(f, "r{dst} = *({size} *)(r{src} {off:+})"),
        (class::STX, 0x60) => write!(f, "*({size} *)(r{dst} {off:+}) = r{src}"),
        (class::ST, 0x60) => write!(f, "*({size} *)(r{dst} {off:+}) = {}", i.imm),
        (class::STX, 0xc0) => {
            let bits = if Size::from_code(i.code) == Size::DW {
                "64"
            } else {
                ""
            };
            let Some(op) = AtomicOp::from_imm(i.imm) else {
                return write!(f, "invalid atomic (imm {:#x})", i.imm);
            };
            let p = format!("({size} *)(r{dst} {off:+})");
            match op {
                AtomicOp::Add => write!(f, "lock *{p} += r{src}"),
                AtomicOp::Or => write!(f, "lock *{p} |= r{src}"),
                AtomicOp::And => write!(f, "lock *{p} &= r{src}"),
                AtomicOp::Xor => write!(f, "lock *{p} ^= r{src}"),
                AtomicOp::FetchAdd => write!(f, "r{src} = atomic{bits}_fetch_add({p}, r{src})"),
                AtomicOp::FetchOr => write!(f, "r{src} = atomic{bits}_fetch_or({p}, r{src})"),
                AtomicOp::FetchAnd => write!(f, "r{src} = atomic{bits}_fetch_and({p}, r{src})"),
                AtomicOp::FetchXor => write!(f, "r{src} = atomic{bits}_fetch_xor({p}, r{src})"),
                AtomicOp::Xchg => write!(f, "r{src} = atomic{bits}_xchg({p}, r{src})"),
                AtomicOp::CmpXchg => write!(f, "r0 = atomic{bits}_cmpxchg({p}, r0, r{src})"),
            }
        }
        _ => write!(f, "invalid memory access (code {:#04x})", i.code),
    }
}

fn fmt_jmp(i: &Insn, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let is64 = i.class() == class::JMP;
    let r = if is64 { 'r' } else { 'w' };
    match (is64, i.code & 0xf0) {
        (true, 0x00) => write!(f, "goto pc{:+}", i.off),
        (false, 0x00) => write!(f, "gotol pc{:+}", i.imm),
        (true, 0x80) if i.src == PSEUDO_CALL => write!(f, "call pc{:+}", i.imm),
        (true, 0x80) if i.src == PSEUDO_KFUNC_CALL => write!(f, "call kfunc#{}", i.imm),
        (true, 0x80) => match Helper::from_id(i.imm) {
            Some(h) => write!(f, "call {}#{}", h.name(), i.imm),
            None => write!(f, "call unknown#{}", i.imm),
        },
        (true, 0x90) => f.write_str("exit"),
        (_, code) => {
            let Some(op) = JmpOp::from_code(code) else {
                return write!(f, "invalid jump (code {:#04x})", i.code);
            };
            let (dst, op, off) = (i.dst, jmp_op_str(op), i.off);
            if i.code & 0x08 != 0 {
                write!(f, "if {r}{dst} {op} {r}{} goto pc{off:+}", i.src)
            } else {
                write!(f, "if {r}{dst} {op} {:#x} goto pc{off:+}", i.imm as u32)
            }
        }
    }
}

impl fmt::Display for Insn {
    /// One slot in verifier syntax. The first half of a `ld_imm64` prints its low 32 bits
    /// only; use [`disassemble`] to see the full constant.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.class() {
            class::ALU | class::ALU64 => fmt_alu(self, f),
            class::LDX | class::ST | class::STX => fmt_mem(self, f),
            class::JMP | class::JMP32 => fmt_jmp(self, f),
            _ if self.is_ld_imm64() => fmt_ld_imm64(self, None, f),
            _ => write!(f, "invalid insn (code {:#04x})", self.code),
        }
    }
}

fn fmt_ld_imm64(first: &Insn, second: Option<&Insn>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let hi = second.map_or(0, |s| s.imm as u32 as u64);
    let value = hi << 32 | first.imm as u32 as u64;
    match first.src {
        0 => write!(f, "r{} = {value:#x} ll", first.dst),
        PSEUDO_MAP_FD => write!(f, "r{} = map[fd:{}] ll", first.dst, first.imm),
        PSEUDO_BTF_ID => write!(f, "r{} = ksym[btf:{}] ll", first.dst, first.imm),
        src => write!(f, "r{} = {value:#x} ll (pseudo {src})", first.dst),
    }
}

struct LdImm64<'a>(&'a Insn, Option<&'a Insn>);

impl fmt::Display for LdImm64<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_ld_imm64(self.0, self.1, f)
    }
}

/// Disassembles a program, one line per instruction, as the verifier log prints them:
/// `"<slot index>: (<opcode>) <text>"`. A two-slot `ld_imm64` gives one line; the next
/// line's index skips its second slot.
pub fn disassemble(insns: &[Insn]) -> Vec<String> {
    let mut out = Vec::with_capacity(insns.len());
    let mut i = 0;
    while i < insns.len() {
        let insn = &insns[i];
        if insn.is_ld_imm64() {
            let text = LdImm64(insn, insns.get(i + 1));
            out.push(format!("{i}: ({:02x}) {text}", insn.code));
            i += 2;
        } else {
            out.push(format!("{i}: ({:02x}) {insn}", insn.code));
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bpf::insn::Reg;

    const R0: Reg = Reg::R0;
    const R1: Reg = Reg::R1;
    const R2: Reg = Reg::R2;
    const R10: Reg = Reg::R10;

    #[test]
    fn single_slots() {
        let cases: Vec<(Insn, &str)> = vec![
            (Insn::mov64_reg(R1, R2), "r1 = r2"),
            (Insn::add64_imm(R1, 8), "r1 += 8"),
            (Insn::alu64_imm(AluOp::Add, R10, -16), "r10 += -16"),
            (Insn::mov32_reg(R1, R2), "w1 = w2"),
            (Insn::mov32_imm(R1, -1), "w1 = -1"),
            (Insn::alu64_reg(AluOp::SDiv, R1, R2), "r1 s/= r2"),
            (Insn::alu32_imm(AluOp::SMod, R1, 3), "w1 s%= 3"),
            (Insn::alu64_imm(AluOp::Arsh, R1, 3), "r1 s>>= 3"),
            (Insn::alu64_imm(AluOp::Rsh, R0, 32), "r0 >>= 32"),
            (Insn::alu64_reg(AluOp::MovSx8, R1, R2), "r1 = (s8)r2"),
            (Insn::neg64(R1), "r1 = -r1"),
            (Insn::neg32(R1), "w1 = -w1"),
            (Insn::be(R1, 16), "r1 = be16 r1"),
            (Insn::le(R1, 64), "r1 = le64 r1"),
            (Insn::bswap(R1, 32), "r1 = bswap32 r1"),
            (Insn::ldx(Size::DW, R0, R1, 8), "r0 = *(u64 *)(r1 +8)"),
            (Insn::ldx(Size::B, R0, R1, 0), "r0 = *(u8 *)(r1 +0)"),
            (Insn::stx(Size::W, R10, -4, R1), "*(u32 *)(r10 -4) = r1"),
            (Insn::st(Size::H, R10, -8, 7), "*(u16 *)(r10 -8) = 7"),
            (Insn::atomic_add64(R1, 0, R2), "lock *(u64 *)(r1 +0) += r2"),
            (Insn::atomic_add32(R1, 4, R2), "lock *(u32 *)(r1 +4) += r2"),
            (
                Insn::atomic(Size::DW, AtomicOp::FetchAdd, R1, 0, R2),
                "r2 = atomic64_fetch_add((u64 *)(r1 +0), r2)",
            ),
            (
                Insn::atomic(Size::W, AtomicOp::CmpXchg, R1, 0, R2),
                "r0 = atomic_cmpxchg((u32 *)(r1 +0), r0, r2)",
            ),
            (Insn::ja(3), "goto pc+3"),
            (Insn::ja(-4), "goto pc-4"),
            (Insn::jmp_imm(JmpOp::Gt, R1, 5, 3), "if r1 > 0x5 goto pc+3"),
            (
                Insn::jmp_imm(JmpOp::Sgt, R1, -1, 3),
                "if r1 s> 0xffffffff goto pc+3",
            ),
            (
                Insn::jmp_reg(JmpOp::Ne, R1, R2, -2),
                "if r1 != r2 goto pc-2",
            ),
            (
                Insn::jmp32_imm(JmpOp::Le, R1, 16, 1),
                "if w1 <= 0x10 goto pc+1",
            ),
            (
                Insn::jmp32_reg(JmpOp::Set, R1, R2, 1),
                "if w1 & w2 goto pc+1",
            ),
            (
                Insn::call(Helper::MapLookupElem),
                "call bpf_map_lookup_elem#1",
            ),
            (Insn::call_id(1000), "call unknown#1000"),
            (Insn::call_local(-7), "call pc-7"),
            (Insn::call_kfunc(65900), "call kfunc#65900"),
            (Insn::exit(), "exit"),
        ];
        for (insn, text) in cases {
            assert_eq!(insn.to_string(), text);
        }
    }

    #[test]
    fn program_listing() {
        let mut prog = vec![Insn::mov64_imm(R0, 0)];
        prog.extend(Insn::ld_imm64(R1, 0x1122_3344_5566_7788));
        prog.extend(Insn::ld_map_fd(R2, 7));
        prog.extend(Insn::ld_map_reloc(R1));
        prog.push(Insn::exit());
        assert_eq!(
            disassemble(&prog),
            vec![
                "0: (b7) r0 = 0",
                "1: (18) r1 = 0x1122334455667788 ll",
                "3: (18) r2 = map[fd:7] ll",
                "5: (18) r1 = 0x0 ll",
                "7: (95) exit",
            ]
        );
    }

    #[test]
    fn garbage_does_not_panic() {
        let bad = [Insn::new(0xe0, 1, 2, 3, 4), Insn::new(0x18, 1, 0, 0, 5)];
        let lines = disassemble(&bad);
        assert_eq!(
            lines,
            vec!["0: (e0) invalid insn (code 0xe0)", "1: (18) r1 = 0x5 ll"]
        );
    }
}
