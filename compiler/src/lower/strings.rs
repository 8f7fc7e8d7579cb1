//! Strings and byte buffers: literals, comparison, reads of C strings.

use super::cx::{LowerCx, PlaceSpace, Val};
use crate::ir::{AluOp, Cond, Inst, Intrinsic, Operand, VReg, Width};

/// Materialises a string literal into `size` bytes of owned memory (zero padded).
pub fn literal(cx: &mut LowerCx<'_>, bytes: &[u8], size: u32) -> Val {
    let size = size.max(bytes.len() as u32 + 1);
    let padded = sonde_lang::types::align_up(size, 8);
    // A buffer of 64 bytes or more (`probe`'s 128) is zeroed by one call first, then only
    // the words holding characters are stored.
    let zeroed = padded >= 64;
    let ptr = if zeroed {
        cx.alloc_zeroed(padded)
    } else {
        cx.alloc(padded)
    };
    let mut buf = bytes.to_vec();
    buf.resize(padded as usize, 0);
    for (i, chunk) in buf.chunks(8).enumerate() {
        let v = i64::from_le_bytes(chunk.try_into().expect("8-byte chunk"));
        if v != 0 || !zeroed {
            cx.store(ptr, (i * 8) as i32, Operand::Imm(v), Width::W64);
        }
    }
    Val::Mem { ptr, size }
}

/// Writes the characters of a string known when compiling into zeroed memory at
/// `dst + off` (any alignment: each store as wide as the address allows), skipping the
/// chunks that are all zero: a literal argument goes straight into its event or key field.
pub fn constant_into(cx: &mut LowerCx<'_>, bytes: &[u8], dst: VReg, off: i32) {
    let mut at = 0usize;
    while at < bytes.len() {
        let w = super::cx::chunk_aligned(off + at as i32, (bytes.len() - at) as u32);
        let n = w.bytes() as usize;
        let mut word = [0u8; 8];
        word[..n].copy_from_slice(&bytes[at..at + n]);
        let v = i64::from_le_bytes(word);
        if v != 0 {
            cx.store(dst, off + at as i32, Operand::Imm(v), w);
        }
        at += n;
    }
}

/// Compares two NUL-terminated strings in owned memory; returns a register holding 1 when
/// equal (up to the first NUL, within the shorter buffer).
pub fn equal(cx: &mut LowerCx<'_>, a: Val, b: Val) -> VReg {
    equal_n(cx, a, b, u32::MAX)
}

/// Like [`equal`], comparing at most `n` bytes.
pub fn equal_n(cx: &mut LowerCx<'_>, a: Val, b: Val, n: u32) -> VReg {
    let (Val::Mem { ptr: pa, size: sa }, Val::Mem { ptr: pb, size: sb }) = (a, b) else {
        return cx.imm(0);
    };
    super::byte_loops::equal(cx, pa, pb, sa.min(sb).min(n))
}

/// Lowers `lhs == rhs` (`want_equal`) or `lhs != rhs` of strings or tuples as a condition: jumps
/// to `if_false` when it does not hold. A string known when compiling on either side is
/// compared byte by byte against immediates ([`branch_unless_literal`]).
pub fn branch_on_compare(
    cx: &mut LowerCx<'_>,
    lhs: &sonde_lang::ast::Expr,
    rhs: &sonde_lang::ast::Expr,
    want_equal: bool,
    if_false: crate::ir::Label,
) -> Result<(), sonde_lang::diag::Diagnostic> {
    let is_str = matches!(cx.type_of(lhs), sonde_lang::types::Type::Str { .. });
    let known = |cx: &LowerCx<'_>, e| is_str.then(|| constant_string(cx, e)).flatten();
    let literal = match (known(cx, lhs), known(cx, rhs)) {
        (_, Some(lit)) => Some((lhs, lit)),
        (Some(lit), None) => Some((rhs, lit)),
        (None, None) => None,
    };
    if let Some((other, lit)) = literal {
        let v = cx.lower_value(other)?;
        if want_equal {
            branch_unless_literal(cx, v, &lit, if_false);
        } else {
            let ne = cx.label();
            branch_unless_literal(cx, v, &lit, ne);
            cx.emit(Inst::Jump(if_false));
            cx.place_label(ne);
        }
        return Ok(());
    }
    let a = cx.lower_value(lhs)?;
    let b = cx.lower_value(rhs)?;
    let eq = match cx.type_of(lhs) {
        _ if is_str => equal(cx, a, b),
        sonde_lang::types::Type::Buf { .. } => buf_equal(cx, a, b),
        _ => mem_equal(cx, a, b),
    };
    let cond = if want_equal { Cond::Eq } else { Cond::Ne };
    cx.branch(cond, eq, Operand::Imm(0), if_false);
    Ok(())
}

/// Jumps to `ne` unless the string `a` equals `lit`, a string known when compiling (without
/// its NUL): each byte of `a` is compared with an immediate, up to the literal's NUL, and the
/// condition branches on each (2 instructions a character, where [`equal`] needs two loads,
/// two tests, the literal's stores and a flag).
pub fn branch_unless_literal(cx: &mut LowerCx<'_>, a: Val, lit: &[u8], ne: crate::ir::Label) {
    let Val::Mem { ptr, size } = a else {
        cx.emit(Inst::Jump(ne));
        return;
    };
    let want = lit.iter().copied().chain(std::iter::once(0));
    for (i, byte) in want.take(size as usize).enumerate() {
        let c = cx.load(ptr, i as i32, Width::W8);
        cx.branch(Cond::Ne, c, Operand::Imm(byte.into()), ne);
        if byte == 0 {
            break;
        }
    }
}

/// The bytes of a string expression known when compiling: a literal, a positional
/// parameter used as a string, `str()` of one of those, or `probe`.
pub fn constant_string(cx: &LowerCx<'_>, e: &sonde_lang::ast::Expr) -> Option<Vec<u8>> {
    use sonde_lang::ast::ExprKind;
    let bytes = match &e.kind {
        ExprKind::Str(b) => b.clone(),
        ExprKind::Positional(n) if matches!(cx.type_of(e), sonde_lang::types::Type::Str { .. }) => {
            cx.positional
                .get((*n as usize).checked_sub(1)?)?
                .as_bytes()
                .to_vec()
        }
        ExprKind::Call { name, args } if name.name == "str" && args.len() == 1 => {
            constant_string(cx, &args[0])?
        }
        ExprKind::Binary { .. } if matches!(cx.type_of(e), sonde_lang::types::Type::Str { .. }) => {
            sonde_lang::catalog::const_string(e, cx.positional)?
        }
        // The probe's name: one program per attach point.
        ExprKind::Ident(n) if n == "probe" => cx.attach.name.as_bytes().to_vec(),
        _ => return None,
    };
    // The string as its buffer holds it: cut at its size less the NUL.
    let size = cx.type_of(e).size() as usize;
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    Some(bytes[..end.min(size.saturating_sub(1))].to_vec())
}

/// Compares two byte buffers of equal layout (tuples); returns 1 when all bytes are equal.
pub fn mem_equal(cx: &mut LowerCx<'_>, a: Val, b: Val) -> VReg {
    mem_equal_prefix(cx, a, b, false)
}

/// Compares two `buf()` values, their length byte and data: their bytes beyond the shorter's
/// size are zeroes in both when the lengths are equal, so the shorter's size is compared.
/// Returns 1 when equal.
pub fn buf_equal(cx: &mut LowerCx<'_>, a: Val, b: Val) -> VReg {
    mem_equal_prefix(cx, a, b, true)
}

/// 1 when the first `min(sizes)` bytes of `a` and `b` are equal, and their sizes are too
/// unless `prefix`.
fn mem_equal_prefix(cx: &mut LowerCx<'_>, a: Val, b: Val, prefix: bool) -> VReg {
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
    if sa == sb || prefix {
        cx.emit(Inst::Mov {
            dst: out,
            src: Operand::Imm(1),
        });
    }
    cx.place_label(ne);
    out
}

/// Reads a NUL-terminated string at pointer `src` (kernel or user memory) into `size` bytes
/// of zeroed owned memory.
pub fn read_str(cx: &mut LowerCx<'_>, src: VReg, space: PlaceSpace, size: u32) -> Val {
    read_str_upto(cx, src, space, size, None, None)
}

/// [`read_str`] of at most `len - 1` characters (`str(p, $n)`: `len` known at run time;
/// beyond `size` it is `size`), into the zeroed buffer `into` when given.
pub fn read_str_upto(
    cx: &mut LowerCx<'_>,
    src: VReg,
    space: PlaceSpace,
    size: u32,
    len: Option<VReg>,
    into: Option<VReg>,
) -> Val {
    read_str_room(cx, src, space, size, len, 0, into)
}

/// Below this `max_strlen`, `str()` reads one byte more than its string holds, as bpftrace
/// 0.26 does: a string that fills its `max_strlen` bytes without a NUL was cut, and prints
/// with the `str_trunc_trailer` (`..`).
pub const STR_TRUNC_MARK_BELOW: u32 = 1024;

/// [`read_str_upto`] of a `str()` whose string is `max_strlen` bytes: below
/// [`STR_TRUNC_MARK_BELOW`] it reads up to one byte more (into a buffer one byte larger),
/// so that a longer string keeps `max_strlen` characters and no NUL.
pub fn read_str_marking_cut(
    cx: &mut LowerCx<'_>,
    src: VReg,
    space: PlaceSpace,
    size: u32,
    len: Option<VReg>,
    into: Option<VReg>,
) -> Val {
    let extra = u32::from(size < STR_TRUNC_MARK_BELOW);
    read_str_room(cx, src, space, size, len, extra, into)
}

/// Reads a string of `size` bytes into a buffer of `size + extra` bytes (`into`, zeroed,
/// or a new one), at most `len` (clamped to the buffer) bytes, its NUL included.
fn read_str_room(
    cx: &mut LowerCx<'_>,
    src: VReg,
    space: PlaceSpace,
    size: u32,
    len: Option<VReg>,
    extra: u32,
    into: Option<VReg>,
) -> Val {
    let room = size.saturating_add(extra);
    let buf = match into {
        Some(b) => b,
        None => cx.alloc_zeroed(room),
    };
    let n = match len {
        Some(l) => {
            let n = cx.vreg();
            cx.emit(crate::ir::Inst::Mov {
                dst: n,
                src: Operand::Reg(l),
            });
            let fits = cx.label();
            cx.branch(crate::ir::Cond::ULe, n, Operand::Imm(room.into()), fits);
            cx.emit(crate::ir::Inst::Mov {
                dst: n,
                src: Operand::Imm(room.into()),
            });
            cx.place_label(fits);
            Operand::Reg(n)
        }
        None => Operand::Imm(room.into()),
    };
    let func = match space {
        PlaceSpace::User => Intrinsic::ProbeReadUserStr,
        PlaceSpace::Any => Intrinsic::ProbeReadStr,
        _ => Intrinsic::ProbeReadKernelStr,
    };
    cx.probe_read(func, vec![Operand::Reg(buf), n, Operand::Reg(src)]);
    Val::Mem { ptr: buf, size }
}

/// Reads a tracepoint `__data_loc` string: the u32 at `place` holds `len << 16 | offset`
/// relative to the start of the record.
pub fn read_data_loc(cx: &mut LowerCx<'_>, place: Val, size: u32) -> Val {
    let Val::Place { base, offset, .. } = place else {
        return place;
    };
    let loc = cx.load(base, offset, Width::W32);
    let off = cx.alu(AluOp::And, loc, Operand::Imm(0xffff));
    let ptr = cx.alu(AluOp::Add, base, Operand::Reg(off));
    read_str(cx, ptr, PlaceSpace::Kernel, size)
}

/// Number of array elements `join()` prints (bpftrace's `join_argnum`).
pub const JOIN_ARGS: u32 = 16;
/// Bytes kept of each element `join()` prints, its NUL included (bpftrace's `join_argsize`:
/// an argument is cut at 1023 bytes, whatever `max_strlen` is). The event, 8 + 16 × 1024
/// bytes, fits the scratch space with room to spare.
pub const JOIN_ARG_SIZE: u32 = 1024;

/// `join(argv[, sep])`: reads up to [`JOIN_ARGS`] strings of a NULL-terminated array of
/// string pointers and sends them to user space, which prints them separated by `sep`.
pub fn join(
    cx: &mut LowerCx<'_>,
    array: &sonde_lang::ast::Expr,
    sep: String,
) -> Result<Val, sonde_lang::diag::Diagnostic> {
    let ty = cx.type_of(array);
    let space = match &ty {
        sonde_lang::types::Type::Ptr { space, .. } => {
            PlaceSpace::of_pointer(*space, cx.attach.ctx.user)
        }
        _ => PlaceSpace::Any,
    };
    let base = cx.lower_int(array)?;
    let spec = crate::program::EventSpec::Join {
        sep,
        count: JOIN_ARGS,
        elem_size: JOIN_ARG_SIZE,
    };
    let id = cx.event_id(spec);
    let total = 8 + JOIN_ARGS * JOIN_ARG_SIZE;
    let buf = cx.alloc_event_zeroed(total);
    cx.store(buf, 0, Operand::Imm(id as i64), Width::W64);
    let slot = cx.alloc(8);
    let done = cx.label();
    let (read, read_str) = match space {
        PlaceSpace::User => (Intrinsic::ProbeReadUser, Intrinsic::ProbeReadUserStr),
        PlaceSpace::Kernel => (Intrinsic::ProbeReadKernel, Intrinsic::ProbeReadKernelStr),
        _ => (Intrinsic::ProbeRead, Intrinsic::ProbeReadStr),
    };
    for i in 0..JOIN_ARGS {
        let src = cx.alu(AluOp::Add, base, Operand::Imm(i64::from(i) * 8));
        cx.store(slot, 0, Operand::Imm(0), Width::W64);
        cx.probe_read(
            read,
            vec![Operand::Reg(slot), Operand::Imm(8), Operand::Reg(src)],
        );
        let p = cx.load(slot, 0, Width::W64);
        cx.branch(Cond::Eq, p, Operand::Imm(0), done);
        let dst = cx.alu(
            AluOp::Add,
            buf,
            Operand::Imm(i64::from(8 + i * JOIN_ARG_SIZE)),
        );
        cx.probe_read(
            read_str,
            vec![
                Operand::Reg(dst),
                Operand::Imm(JOIN_ARG_SIZE.into()),
                Operand::Reg(p),
            ],
        );
    }
    cx.place_label(done);
    cx.output(buf, total);
    Ok(Val::None)
}

/// Whether NUL-terminated `needle` occurs in NUL-terminated `hay` (both in owned memory);
/// returns a register holding 1 or 0: where [`super::byte_loops::find`] finds it (unrolled for
/// small strings, else a loop over the haystack) is not before the start.
pub fn contains(cx: &mut LowerCx<'_>, hay: Val, needle: Val) -> VReg {
    let (Val::Mem { ptr: h, size: hs }, Val::Mem { ptr: n, size: ns }) = (hay, needle) else {
        return cx.imm(0);
    };
    let at = super::byte_loops::find(cx, h, hs, n, ns);
    cx.flag(Cond::SGe, at, Operand::Imm(0))
}
