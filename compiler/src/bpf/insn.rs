//! The eBPF instruction set as data: one [`Insn`] per 8-byte slot, with a constructor for
//! every form the compiler emits and an exact encoder.
//!
//! Encoding (kernel `struct bpf_insn`, little-endian): byte 0 is the opcode, byte 1 holds
//! `dst` in its low nibble and `src` in its high nibble, bytes 2..4 the signed offset and
//! bytes 4..8 the signed immediate. A 64-bit immediate load (`ld_imm64`) takes two slots.
//!
//! The kernel helpers a `call` names are [`Helper`]s (`super::helpers`).
//! Signed division and modulo (`off = 1`), sign-extending moves and unconditional byte
//! swaps are "cpu v4" instructions, accepted by kernels from 6.6 on.

pub use super::helpers::Helper;

/// Instruction classes (low 3 bits of the opcode).
pub mod class {
    /// Immediate loads (`ld_imm64`).
    pub const LD: u8 = 0x00;
    /// Register loads.
    pub const LDX: u8 = 0x01;
    /// Immediate stores.
    pub const ST: u8 = 0x02;
    /// Register stores and atomics.
    pub const STX: u8 = 0x03;
    /// 32-bit arithmetic.
    pub const ALU: u8 = 0x04;
    /// 64-bit jumps, calls and exit.
    pub const JMP: u8 = 0x05;
    /// 32-bit jumps.
    pub const JMP32: u8 = 0x06;
    /// 64-bit arithmetic.
    pub const ALU64: u8 = 0x07;
}

/// Source operand bit: immediate (`K`) or register (`X`).
const SRC_K: u8 = 0x00;
pub(crate) const SRC_X: u8 = 0x08;
/// Memory mode bits (`MODE_ATOMIC`: the atomic operations of `STX`).
const MODE_IMM: u8 = 0x00;
const MODE_MEM: u8 = 0x60;
pub(crate) const MODE_ATOMIC: u8 = 0xc0;
/// Operation codes inside the JMP class: `goto`, `call`, `exit`.
pub(crate) const OP_JA: u8 = 0x00;
pub(crate) const OP_CALL: u8 = 0x80;
pub(crate) const OP_EXIT: u8 = 0x90;
/// The ALU operation code for byte swaps.
pub(crate) const OP_END: u8 = 0xd0;
/// `src` value of a `ld_imm64` whose immediate is a map file descriptor.
pub const PSEUDO_MAP_FD: u8 = 1;
/// `src` value of a `call` to a BPF function of the same program (bpf-to-bpf call).
pub const PSEUDO_CALL: u8 = 1;

/// A BPF register, `r0`..`r10`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Reg(pub u8);

impl Reg {
    /// Return value of helpers and of the program.
    pub const R0: Reg = Reg(0);
    /// First argument (the program's context on entry).
    pub const R1: Reg = Reg(1);
    /// Second argument.
    pub const R2: Reg = Reg(2);
    /// Third argument.
    pub const R3: Reg = Reg(3);
    /// Fourth argument.
    pub const R4: Reg = Reg(4);
    /// Fifth argument.
    pub const R5: Reg = Reg(5);
    /// Callee-saved.
    pub const R6: Reg = Reg(6);
    /// Callee-saved.
    pub const R7: Reg = Reg(7);
    /// Callee-saved.
    pub const R8: Reg = Reg(8);
    /// Callee-saved.
    pub const R9: Reg = Reg(9);
    /// Read-only frame pointer; the stack is `[r10 - 512, r10)`.
    pub const R10: Reg = Reg(10);
}

/// Memory access width.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Size {
    /// 1 byte (`u8`).
    B,
    /// 2 bytes (`u16`).
    H,
    /// 4 bytes (`u32`).
    W,
    /// 8 bytes (`u64`).
    DW,
}

impl Size {
    /// The size bits of the opcode.
    pub fn bits(self) -> u8 {
        match self {
            Size::W => 0x00,
            Size::H => 0x08,
            Size::B => 0x10,
            Size::DW => 0x18,
        }
    }

    /// Width in bytes.
    pub fn bytes(self) -> u32 {
        match self {
            Size::B => 1,
            Size::H => 2,
            Size::W => 4,
            Size::DW => 8,
        }
    }

    /// The access of `bytes` bytes, if it is 1, 2, 4 or 8.
    pub fn from_bytes(bytes: u32) -> Option<Size> {
        match bytes {
            1 => Some(Size::B),
            2 => Some(Size::H),
            4 => Some(Size::W),
            8 => Some(Size::DW),
            _ => None,
        }
    }

    /// Decodes the size bits of an opcode.
    pub fn from_code(code: u8) -> Size {
        match code & 0x18 {
            0x00 => Size::W,
            0x08 => Size::H,
            0x10 => Size::B,
            _ => Size::DW,
        }
    }
}

/// Arithmetic operations. The signed and sign-extending forms share an opcode with their
/// plain form and differ by `off`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AluOp {
    /// `+=`
    Add,
    /// `-=`
    Sub,
    /// `*=`
    Mul,
    /// Unsigned `/=` (division by zero gives 0).
    Div,
    /// Signed `s/=` (cpu v4).
    SDiv,
    /// `|=`
    Or,
    /// `&=`
    And,
    /// `<<=`
    Lsh,
    /// Logical `>>=`.
    Rsh,
    /// Negation; the source operand is ignored.
    Neg,
    /// Unsigned `%=` (modulo by zero leaves the destination unchanged).
    Mod,
    /// Signed `s%=` (cpu v4).
    SMod,
    /// `^=`
    Xor,
    /// `=`
    Mov,
    /// Sign-extending move from the low 8 bits of the source (cpu v4, register only).
    MovSx8,
    /// Sign-extending move from the low 16 bits (cpu v4, register only).
    MovSx16,
    /// Sign-extending move from the low 32 bits (cpu v4, 64-bit register only).
    MovSx32,
    /// Arithmetic `s>>=`.
    Arsh,
}

impl AluOp {
    /// The operation bits of the opcode and the `off` field.
    pub fn code_off(self) -> (u8, i16) {
        match self {
            AluOp::Add => (0x00, 0),
            AluOp::Sub => (0x10, 0),
            AluOp::Mul => (0x20, 0),
            AluOp::Div => (0x30, 0),
            AluOp::SDiv => (0x30, 1),
            AluOp::Or => (0x40, 0),
            AluOp::And => (0x50, 0),
            AluOp::Lsh => (0x60, 0),
            AluOp::Rsh => (0x70, 0),
            AluOp::Neg => (0x80, 0),
            AluOp::Mod => (0x90, 0),
            AluOp::SMod => (0x90, 1),
            AluOp::Xor => (0xa0, 0),
            AluOp::Mov => (0xb0, 0),
            AluOp::MovSx8 => (0xb0, 8),
            AluOp::MovSx16 => (0xb0, 16),
            AluOp::MovSx32 => (0xb0, 32),
            AluOp::Arsh => (0xc0, 0),
        }
    }

    /// Decodes opcode bits and `off` back into an operation.
    pub fn from_code_off(code: u8, off: i16) -> Option<AluOp> {
        let op = match (code & 0xf0, off) {
            (0x00, 0) => AluOp::Add,
            (0x10, 0) => AluOp::Sub,
            (0x20, 0) => AluOp::Mul,
            (0x30, 0) => AluOp::Div,
            (0x30, 1) => AluOp::SDiv,
            (0x40, 0) => AluOp::Or,
            (0x50, 0) => AluOp::And,
            (0x60, 0) => AluOp::Lsh,
            (0x70, 0) => AluOp::Rsh,
            (0x80, 0) => AluOp::Neg,
            (0x90, 0) => AluOp::Mod,
            (0x90, 1) => AluOp::SMod,
            (0xa0, 0) => AluOp::Xor,
            (0xb0, 0) => AluOp::Mov,
            (0xb0, 8) => AluOp::MovSx8,
            (0xb0, 16) => AluOp::MovSx16,
            (0xb0, 32) => AluOp::MovSx32,
            (0xc0, 0) => AluOp::Arsh,
            _ => return None,
        };
        Some(op)
    }
}

/// Conditional jump comparisons.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JmpOp {
    /// `==`
    Eq,
    /// Unsigned `>`.
    Gt,
    /// Unsigned `>=`.
    Ge,
    /// `&` (jump if any bit in common).
    Set,
    /// `!=`
    Ne,
    /// Signed `s>`.
    Sgt,
    /// Signed `s>=`.
    Sge,
    /// Unsigned `<`.
    Lt,
    /// Unsigned `<=`.
    Le,
    /// Signed `s<`.
    Slt,
    /// Signed `s<=`.
    Sle,
}

impl JmpOp {
    /// The operation bits of the opcode.
    pub fn code(self) -> u8 {
        match self {
            JmpOp::Eq => 0x10,
            JmpOp::Gt => 0x20,
            JmpOp::Ge => 0x30,
            JmpOp::Set => 0x40,
            JmpOp::Ne => 0x50,
            JmpOp::Sgt => 0x60,
            JmpOp::Sge => 0x70,
            JmpOp::Lt => 0xa0,
            JmpOp::Le => 0xb0,
            JmpOp::Slt => 0xc0,
            JmpOp::Sle => 0xd0,
        }
    }

    /// Decodes the operation bits of a conditional jump.
    pub fn from_code(code: u8) -> Option<JmpOp> {
        let op = match code & 0xf0 {
            0x10 => JmpOp::Eq,
            0x20 => JmpOp::Gt,
            0x30 => JmpOp::Ge,
            0x40 => JmpOp::Set,
            0x50 => JmpOp::Ne,
            0x60 => JmpOp::Sgt,
            0x70 => JmpOp::Sge,
            0xa0 => JmpOp::Lt,
            0xb0 => JmpOp::Le,
            0xc0 => JmpOp::Slt,
            0xd0 => JmpOp::Sle,
            _ => return None,
        };
        Some(op)
    }

    /// The comparison with its operands swapped (`a < b` ⇔ `b > a`); `Set` is symmetric.
    pub fn swapped(self) -> JmpOp {
        match self {
            JmpOp::Gt => JmpOp::Lt,
            JmpOp::Ge => JmpOp::Le,
            JmpOp::Lt => JmpOp::Gt,
            JmpOp::Le => JmpOp::Ge,
            JmpOp::Sgt => JmpOp::Slt,
            JmpOp::Sge => JmpOp::Sle,
            JmpOp::Slt => JmpOp::Sgt,
            JmpOp::Sle => JmpOp::Sge,
            JmpOp::Eq | JmpOp::Ne | JmpOp::Set => self,
        }
    }

    /// The negated comparison (`Set` has none).
    pub fn negated(self) -> Option<JmpOp> {
        Some(match self {
            JmpOp::Eq => JmpOp::Ne,
            JmpOp::Ne => JmpOp::Eq,
            JmpOp::Gt => JmpOp::Le,
            JmpOp::Ge => JmpOp::Lt,
            JmpOp::Lt => JmpOp::Ge,
            JmpOp::Le => JmpOp::Gt,
            JmpOp::Sgt => JmpOp::Sle,
            JmpOp::Sge => JmpOp::Slt,
            JmpOp::Slt => JmpOp::Sge,
            JmpOp::Sle => JmpOp::Sgt,
            JmpOp::Set => return None,
        })
    }
}

/// Atomic read-modify-write operations (`imm` of a `BPF_ATOMIC` store).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomicOp {
    /// `lock *(p) += r`
    Add,
    /// `lock *(p) |= r`
    Or,
    /// `lock *(p) &= r`
    And,
    /// `lock *(p) ^= r`
    Xor,
    /// `r = fetch_add(p, r)`
    FetchAdd,
    /// `r = fetch_or(p, r)`
    FetchOr,
    /// `r = fetch_and(p, r)`
    FetchAnd,
    /// `r = fetch_xor(p, r)`
    FetchXor,
    /// `r = xchg(p, r)`
    Xchg,
    /// `r0 = cmpxchg(p, r0, r)`
    CmpXchg,
}

impl AtomicOp {
    /// The immediate that selects this operation.
    pub fn imm(self) -> i32 {
        const FETCH: i32 = 0x01;
        match self {
            AtomicOp::Add => 0x00,
            AtomicOp::Or => 0x40,
            AtomicOp::And => 0x50,
            AtomicOp::Xor => 0xa0,
            AtomicOp::FetchAdd => FETCH,
            AtomicOp::FetchOr => 0x40 | FETCH,
            AtomicOp::FetchAnd => 0x50 | FETCH,
            AtomicOp::FetchXor => 0xa0 | FETCH,
            AtomicOp::Xchg => 0xe0 | FETCH,
            AtomicOp::CmpXchg => 0xf0 | FETCH,
        }
    }

    /// Decodes an atomic immediate.
    pub fn from_imm(imm: i32) -> Option<AtomicOp> {
        [
            AtomicOp::Add,
            AtomicOp::Or,
            AtomicOp::And,
            AtomicOp::Xor,
            AtomicOp::FetchAdd,
            AtomicOp::FetchOr,
            AtomicOp::FetchAnd,
            AtomicOp::FetchXor,
            AtomicOp::Xchg,
            AtomicOp::CmpXchg,
        ]
        .into_iter()
        .find(|op| op.imm() == imm)
    }
}

/// Byte order conversion target of [`Insn::be`] / [`Insn::le`] / [`Insn::bswap`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Endian {
    /// Convert to little-endian (truncates on this little-endian target).
    Le,
    /// Convert to big-endian (swaps on this little-endian target).
    Be,
    /// Swap unconditionally (cpu v4, `ALU64` class).
    Swap,
}

/// One instruction slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Insn {
    /// Opcode: class, source bit / size, operation / mode.
    pub code: u8,
    /// Destination register (low nibble of byte 1).
    pub dst: u8,
    /// Source register (high nibble of byte 1).
    pub src: u8,
    /// Signed offset: memory displacement, jump distance or operation variant.
    pub off: i16,
    /// Signed immediate.
    pub imm: i32,
}

impl Insn {
    /// An instruction from its raw fields.
    pub const fn new(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
        Insn {
            code,
            dst,
            src,
            off,
            imm,
        }
    }

    /// The 8 bytes of this slot, little-endian, `dst` in the low nibble of byte 1.
    pub fn encode(&self) -> [u8; 8] {
        let mut b = [0u8; 8];
        b[0] = self.code;
        b[1] = (self.dst & 0x0f) | ((self.src & 0x0f) << 4);
        b[2..4].copy_from_slice(&self.off.to_le_bytes());
        b[4..8].copy_from_slice(&self.imm.to_le_bytes());
        b
    }

    /// Decodes one 8-byte slot.
    pub fn decode(b: [u8; 8]) -> Insn {
        Insn {
            code: b[0],
            dst: b[1] & 0x0f,
            src: b[1] >> 4,
            off: i16::from_le_bytes([b[2], b[3]]),
            imm: i32::from_le_bytes([b[4], b[5], b[6], b[7]]),
        }
    }

    /// The instruction class (`class::*`).
    pub fn class(&self) -> u8 {
        self.code & 0x07
    }

    /// True for the first slot of a two-slot `ld_imm64`.
    pub fn is_ld_imm64(&self) -> bool {
        self.code == class::LD | MODE_IMM | Size::DW.bits()
    }

    // ---- arithmetic ----

    fn alu(class: u8, op: AluOp, src_bit: u8, dst: Reg, src: u8, imm: i32) -> Insn {
        let (code, off) = op.code_off();
        Insn::new(class | src_bit | code, dst.0, src, off, imm)
    }

    /// 64-bit `dst op= src`.
    pub fn alu64_reg(op: AluOp, dst: Reg, src: Reg) -> Insn {
        Insn::alu(class::ALU64, op, SRC_X, dst, src.0, 0)
    }

    /// 64-bit `dst op= imm` (the immediate is sign-extended to 64 bits).
    pub fn alu64_imm(op: AluOp, dst: Reg, imm: i32) -> Insn {
        Insn::alu(class::ALU64, op, SRC_K, dst, 0, imm)
    }

    /// 32-bit `wdst op= wsrc` (the upper 32 bits of `dst` are zeroed).
    pub fn alu32_reg(op: AluOp, dst: Reg, src: Reg) -> Insn {
        Insn::alu(class::ALU, op, SRC_X, dst, src.0, 0)
    }

    /// 32-bit `wdst op= imm` (the upper 32 bits of `dst` are zeroed).
    pub fn alu32_imm(op: AluOp, dst: Reg, imm: i32) -> Insn {
        Insn::alu(class::ALU, op, SRC_K, dst, 0, imm)
    }

    /// `dst = src` (64-bit).
    pub fn mov64_reg(dst: Reg, src: Reg) -> Insn {
        Insn::alu64_reg(AluOp::Mov, dst, src)
    }

    /// `dst = imm` (sign-extended to 64 bits).
    pub fn mov64_imm(dst: Reg, imm: i32) -> Insn {
        Insn::alu64_imm(AluOp::Mov, dst, imm)
    }

    /// `wdst = wsrc` (zero-extends to 64 bits).
    pub fn mov32_reg(dst: Reg, src: Reg) -> Insn {
        Insn::alu32_reg(AluOp::Mov, dst, src)
    }

    /// `wdst = imm` (zero-extends to 64 bits).
    pub fn mov32_imm(dst: Reg, imm: i32) -> Insn {
        Insn::alu32_imm(AluOp::Mov, dst, imm)
    }

    /// `dst += imm` (64-bit).
    pub fn add64_imm(dst: Reg, imm: i32) -> Insn {
        Insn::alu64_imm(AluOp::Add, dst, imm)
    }

    /// `dst = -dst` (64-bit).
    pub fn neg64(dst: Reg) -> Insn {
        Insn::alu64_imm(AluOp::Neg, dst, 0)
    }

    /// `dst = -dst` (32-bit).
    pub fn neg32(dst: Reg) -> Insn {
        Insn::alu32_imm(AluOp::Neg, dst, 0)
    }

    /// Byte-order conversion of the low `bits` (16, 32 or 64) bits of `dst`.
    pub fn endian(kind: Endian, dst: Reg, bits: i32) -> Insn {
        let code = match kind {
            Endian::Le => class::ALU | OP_END | SRC_K,
            Endian::Be => class::ALU | OP_END | SRC_X,
            Endian::Swap => class::ALU64 | OP_END | SRC_K,
        };
        Insn::new(code, dst.0, 0, 0, bits)
    }

    /// `dst = be<bits> dst`: to big-endian (network order).
    pub fn be(dst: Reg, bits: i32) -> Insn {
        Insn::endian(Endian::Be, dst, bits)
    }

    /// `dst = le<bits> dst`: to little-endian (a truncation here).
    pub fn le(dst: Reg, bits: i32) -> Insn {
        Insn::endian(Endian::Le, dst, bits)
    }

    /// `dst = bswap<bits> dst`: unconditional byte swap (cpu v4).
    pub fn bswap(dst: Reg, bits: i32) -> Insn {
        Insn::endian(Endian::Swap, dst, bits)
    }

    // ---- 64-bit immediates ----

    /// `dst = imm64` (two slots).
    pub fn ld_imm64(dst: Reg, imm: u64) -> [Insn; 2] {
        Insn::ld_imm64_src(dst, 0, imm)
    }

    /// `dst = map` by file descriptor (`src = PSEUDO_MAP_FD`, two slots), for programs
    /// loaded without an ELF object.
    pub fn ld_map_fd(dst: Reg, fd: i32) -> [Insn; 2] {
        Insn::ld_imm64_src(dst, PSEUDO_MAP_FD, fd as u32 as u64)
    }

    /// `dst = map` placeholder for an ELF relocation (`src = 0`, `imm = 0`, two slots):
    /// the loader rewrites it into [`Insn::ld_map_fd`] (see `elf::ElfProgram::map_relocs`).
    pub fn ld_map_reloc(dst: Reg) -> [Insn; 2] {
        Insn::ld_imm64(dst, 0)
    }

    /// `dst = &kernel variable` by its id in the kernel's BTF (`src = PSEUDO_BTF_ID`, two
    /// slots: a typed ksym, which the verifier resolves).
    pub fn ld_ksym(dst: Reg, btf_id: u32) -> [Insn; 2] {
        Insn::ld_imm64_src(dst, super::kfuncs::PSEUDO_BTF_ID, u64::from(btf_id))
    }

    fn ld_imm64_src(dst: Reg, src: u8, imm: u64) -> [Insn; 2] {
        [
            Insn::new(
                class::LD | MODE_IMM | Size::DW.bits(),
                dst.0,
                src,
                0,
                imm as u32 as i32,
            ),
            Insn::new(0, 0, 0, 0, (imm >> 32) as u32 as i32),
        ]
    }

    // ---- memory ----

    /// `dst = *(size *)(src + off)` (zero-extended).
    pub fn ldx(size: Size, dst: Reg, src: Reg, off: i16) -> Insn {
        Insn::new(class::LDX | MODE_MEM | size.bits(), dst.0, src.0, off, 0)
    }

    /// `*(size *)(dst + off) = src`.
    pub fn stx(size: Size, dst: Reg, off: i16, src: Reg) -> Insn {
        Insn::new(class::STX | MODE_MEM | size.bits(), dst.0, src.0, off, 0)
    }

    /// `*(size *)(dst + off) = imm` (the immediate is sign-extended to the width).
    pub fn st(size: Size, dst: Reg, off: i16, imm: i32) -> Insn {
        Insn::new(class::ST | MODE_MEM | size.bits(), dst.0, 0, off, imm)
    }

    /// Atomic `op` on `*(size *)(dst + off)` with `src` (size `W` or `DW`).
    pub fn atomic(size: Size, op: AtomicOp, dst: Reg, off: i16, src: Reg) -> Insn {
        Insn::new(
            class::STX | MODE_ATOMIC | size.bits(),
            dst.0,
            src.0,
            off,
            op.imm(),
        )
    }

    /// `lock *(u64 *)(dst + off) += src`.
    pub fn atomic_add64(dst: Reg, off: i16, src: Reg) -> Insn {
        Insn::atomic(Size::DW, AtomicOp::Add, dst, off, src)
    }

    /// `lock *(u32 *)(dst + off) += src`.
    pub fn atomic_add32(dst: Reg, off: i16, src: Reg) -> Insn {
        Insn::atomic(Size::W, AtomicOp::Add, dst, off, src)
    }

    // ---- control flow ----

    /// `goto pc+off` (relative to the next instruction).
    pub fn ja(off: i16) -> Insn {
        Insn::new(class::JMP | OP_JA, 0, 0, off, 0)
    }

    /// `gotol pc+imm`: the unconditional jump with a 32-bit distance (`BPF_JMP32 | BPF_JA`,
    /// cpu v4, kernel ≥ 6.6), for targets beyond the 16-bit offset of [`Insn::ja`].
    pub fn gotol(imm: i32) -> Insn {
        Insn::new(class::JMP32 | OP_JA, 0, 0, 0, imm)
    }

    /// `if dst op src goto pc+off` (64-bit comparison).
    pub fn jmp_reg(op: JmpOp, dst: Reg, src: Reg, off: i16) -> Insn {
        Insn::new(class::JMP | SRC_X | op.code(), dst.0, src.0, off, 0)
    }

    /// `if dst op imm goto pc+off` (64-bit comparison, immediate sign-extended).
    pub fn jmp_imm(op: JmpOp, dst: Reg, imm: i32, off: i16) -> Insn {
        Insn::new(class::JMP | SRC_K | op.code(), dst.0, 0, off, imm)
    }

    /// `if wdst op wsrc goto pc+off` (32-bit comparison).
    pub fn jmp32_reg(op: JmpOp, dst: Reg, src: Reg, off: i16) -> Insn {
        Insn::new(class::JMP32 | SRC_X | op.code(), dst.0, src.0, off, 0)
    }

    /// `if wdst op imm goto pc+off` (32-bit comparison).
    pub fn jmp32_imm(op: JmpOp, dst: Reg, imm: i32, off: i16) -> Insn {
        Insn::new(class::JMP32 | SRC_K | op.code(), dst.0, 0, off, imm)
    }

    /// `call helper`: arguments in r1..r5, result in r0, r1..r5 clobbered.
    pub fn call(helper: Helper) -> Insn {
        Insn::call_id(helper as i32)
    }

    /// `call` of a helper by raw id.
    pub fn call_id(id: i32) -> Insn {
        Insn::new(class::JMP | OP_CALL, 0, 0, 0, id)
    }

    /// `call` of a kernel function by its id in the kernel's BTF (`src =
    /// PSEUDO_KFUNC_CALL`, `off = 0`: vmlinux): arguments and result as for a helper.
    pub fn call_kfunc(btf_id: u32) -> Insn {
        Insn::new(
            class::JMP | OP_CALL,
            0,
            super::kfuncs::PSEUDO_KFUNC_CALL,
            0,
            btf_id as i32,
        )
    }

    /// bpf-to-bpf call of the function starting at `pc + 1 + off`.
    pub fn call_local(off: i32) -> Insn {
        Insn::new(class::JMP | OP_CALL, 0, PSEUDO_CALL, 0, off)
    }

    /// `exit`: return r0.
    pub fn exit() -> Insn {
        Insn::new(class::JMP | OP_EXIT, 0, 0, 0, 0)
    }

    /// True for `call` (helper or local).
    pub fn is_call(&self) -> bool {
        self.code == class::JMP | OP_CALL
    }

    /// True for a bpf-to-bpf `call` (of a function of the program, not a helper).
    pub fn is_local_call(&self) -> bool {
        self.is_call() && self.src == PSEUDO_CALL
    }

    /// True for `exit`.
    pub fn is_exit(&self) -> bool {
        self.code == class::JMP | OP_EXIT
    }
}
