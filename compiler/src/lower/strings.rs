//! Strings and byte buffers: literals, comparison, reads of C strings.

use super::cx::{LowerCx, PlaceSpace, Val};
use crate::ir::{AluOp, Cond, Inst, Intrinsic, Operand, VReg, Width};

/// Materialises a string literal into `size` bytes of owned memory (zero padded).
pub fn literal(cx: &mut LowerCx<'_>, bytes: &[u8], size: u32) -> Val {
    let size = size.max(bytes.len() as u32 + 1);
    let padded = size.div_ceil(8) * 8;
    let ptr = cx.alloc(padded);
    let mut buf = bytes.to_vec();
    buf.resize(padded as usize, 0);
    for (i, chunk) in buf.chunks(8).enumerate() {
        let v = i64::from_le_bytes(chunk.try_into().expect("8-byte chunk"));
        cx.store(ptr, (i * 8) as i32, Operand::Imm(v), Width::W64);
    }
    Val::Mem { ptr, size }
}

/// Compares two NUL-terminated strings in owned memory; returns a register holding 1 when
/// equal (up to the first NUL, within the shorter buffer).
pub fn equal(cx: &mut LowerCx<'_>, a: Val, b: Val) -> VReg {
    let (Val::Mem { ptr: pa, size: sa }, Val::Mem { ptr: pb, size: sb }) = (a, b) else {
        return cx.imm(0);
    };
    let out = cx.imm(0);
    let ne = cx.label();
    let eq = cx.label();
    for i in 0..sa.min(sb) as i32 {
        let ca = cx.load(pa, i, Width::W8);
        let cb = cx.load(pb, i, Width::W8);
        cx.branch(Cond::Ne, ca, Operand::Reg(cb), ne);
        cx.branch(Cond::Eq, ca, Operand::Imm(0), eq);
    }
    cx.place_label(eq);
    cx.emit(Inst::Mov { dst: out, src: Operand::Imm(1) });
    cx.place_label(ne);
    out
}

/// Compares two byte buffers of equal layout (tuples); returns 1 when all bytes are equal.
pub fn mem_equal(cx: &mut LowerCx<'_>, a: Val, b: Val) -> VReg {
    let (Val::Mem { ptr: pa, size: sa }, Val::Mem { ptr: pb, size: sb }) = (a, b) else {
        return cx.imm(0);
    };
    let out = cx.imm(0);
    let ne = cx.label();
    let n = sa.min(sb) as i32;
    let mut off = 0;
    while off < n {
        let w = if n - off >= 8 { Width::W64 } else { Width::W8 };
        let x = cx.load(pa, off, w);
        let y = cx.load(pb, off, w);
        cx.branch(Cond::Ne, x, Operand::Reg(y), ne);
        off += w.bytes() as i32;
    }
    if sa == sb {
        cx.emit(Inst::Mov { dst: out, src: Operand::Imm(1) });
    }
    cx.place_label(ne);
    out
}

/// Reads a NUL-terminated string at pointer `src` (kernel or user memory) into `size` bytes
/// of zeroed owned memory.
pub fn read_str(cx: &mut LowerCx<'_>, src: VReg, space: PlaceSpace, size: u32) -> Val {
    let buf = cx.alloc_zeroed(size);
    let func = if space == PlaceSpace::User { Intrinsic::ProbeReadUserStr } else { Intrinsic::ProbeReadKernelStr };
    cx.emit(Inst::Call { dst: None, func, args: vec![Operand::Reg(buf), Operand::Imm(size.into()), Operand::Reg(src)] });
    Val::Mem { ptr: buf, size }
}

/// Reads a tracepoint `__data_loc` string: the u32 at `place` holds `len << 16 | offset`
/// relative to the start of the record.
pub fn read_data_loc(cx: &mut LowerCx<'_>, place: Val, size: u32) -> Val {
    let Val::Place { base, offset, .. } = place else { return place };
    let loc = cx.load(base, offset, Width::W32);
    let off = cx.alu(AluOp::And, loc, Operand::Imm(0xffff));
    let ptr = cx.alu(AluOp::Add, base, Operand::Reg(off));
    read_str(cx, ptr, PlaceSpace::Kernel, size)
}
