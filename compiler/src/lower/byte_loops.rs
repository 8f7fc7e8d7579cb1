//! Walks over the bytes of strings whose code would grow with their size if unrolled: a
//! compare of two 1024-byte strings (`==`, `strncmp()`), `strlen()`, the search of
//! `strcontains()` and `strstr()` (haystack × needle compares), `memcmp()`. Up to
//! [`UNROLL_BYTES`] bytes they stay unrolled (no call, a few instructions a byte); longer
//! ones run by `bpf_loop`, their body a callback built as a `for` loop's is
//! ([`LowerCx::enter_callback`]), which the verifier checks once whatever the strings'
//! size. Each stops at the first NUL or difference, as the unrolled code does, so that both
//! give the same result in both engines.

use super::cx::LowerCx;
use crate::ir::{AluOp, Cond, Inst, Intrinsic, Label, Operand, VReg, Width};

/// Most bytes a walk (a compare, a length, a search's needle at one place) is unrolled over;
/// a longer one loops.
pub const UNROLL_BYTES: u32 = 128;

/// Most byte pairs a search (`strcontains()`, `strstr()`) compares unrolled (haystack size
/// × needle size); a larger one loops over the haystack.
pub const UNROLL_PAIRS: u32 = 1024;

/// Most needle bytes a looped search compares unrolled at each place of the haystack; a
/// longer needle is compared by a loop of its own.
const UNROLL_NEEDLE: u32 = 64;

/// Words of the struct a byte loop passes its callback: the words it reads and its results.
const FRAME_WORDS: usize = 4;

/// The callback's side of a byte loop ([`LowerCx::byte_loop`]).
pub(crate) struct LoopBody {
    /// The iteration's index, checked to be below the loop's count.
    pub index: VReg,
    /// The words the caller passed, in order (loaded from its struct).
    pub words: Vec<VReg>,
    /// Jump here to go on with the next iteration.
    pub next: Label,
    /// Jump here to stop the loop.
    pub stop: Label,
    /// The caller's struct: the words, then the results.
    frame: VReg,
}

impl LoopBody {
    /// Sets result `k` of the loop (what [`LowerCx::byte_loop`] returns) to `value`.
    pub fn set_result(&self, cx: &mut LowerCx<'_>, k: usize, value: Operand) {
        let off = 8 * (self.words.len() + k) as i32;
        cx.store(self.frame, off, value, Width::W64);
    }
}

impl LowerCx<'_> {
    /// Runs `body` for each index below `count` by `bpf_loop` (its body a callback that
    /// `body` emits, reading memory through the `words` it is passed); the loop's results
    /// start as `init`, the body sets them ([`LoopBody::set_result`]), and their values
    /// after the loop are returned.
    pub(crate) fn byte_loop(
        &mut self,
        count: u32,
        words: &[VReg],
        init: &[Operand],
        body: impl FnOnce(&mut Self, &LoopBody),
    ) -> Vec<VReg> {
        let nwords = words.len();
        assert!(
            nwords + init.len() <= FRAME_WORDS,
            "a byte loop's frame holds {FRAME_WORDS} words"
        );
        // The struct lives on the caller's stack (the helper requires a stack pointer), in
        // the one slot the function's byte loops share: its results are read at once.
        let slot = match self.loop_frame {
            Some(slot) => slot,
            None => *self.loop_frame.insert(self.f.slot(8 * FRAME_WORDS as u32)),
        };
        let frame = self.vreg();
        self.emit(Inst::SlotAddr { dst: frame, slot });
        let values = words
            .iter()
            .map(|w| Operand::Reg(*w))
            .chain(init.iter().copied());
        for (i, v) in values.enumerate() {
            self.store(frame, 8 * i as i32, v, Width::W64);
        }

        let (outer, params) = self.enter_callback(2);
        let (index, cbframe) = (params[0], params[1]);
        let loaded = (0..nwords)
            .map(|i| self.load(cbframe, 8 * i as i32, Width::W64))
            .collect();
        let view = LoopBody {
            index,
            words: loaded,
            next: self.label(),
            stop: self.label(),
            frame: cbframe,
        };
        // bpf_loop's index is any number to the verifier: bounded here for the accesses.
        self.branch(Cond::UGe, index, Operand::Imm(count.into()), view.stop);
        body(self, &view);
        for (label, rc) in [(view.next, 0), (view.stop, 1)] {
            self.place_label(label);
            self.emit(Inst::Return {
                value: Operand::Imm(rc),
            });
        }
        let func = self
            .leave_callback(outer, true, Ok(view.next))
            .expect("a byte loop's body cannot fail");

        let cb = self.vreg();
        self.emit(Inst::FuncAddr { dst: cb, func });
        self.emit(Inst::Call {
            dst: None,
            func: Intrinsic::Loop,
            args: vec![
                Operand::Imm(count.into()),
                Operand::Reg(cb),
                Operand::Reg(frame),
                Operand::Imm(0),
            ],
        });
        (0..init.len())
            .map(|k| self.load(frame, 8 * (nwords + k) as i32, Width::W64))
            .collect()
    }

    /// The byte at `ptr + index` (`index` a register).
    fn byte_at(&mut self, ptr: VReg, index: VReg) -> VReg {
        let p = self.alu(AluOp::Add, ptr, Operand::Reg(index));
        self.load(p, 0, Width::W8)
    }
}

/// The index of the first NUL of the `size` bytes at `ptr`, or `size` when there is none.
pub fn length(cx: &mut LowerCx<'_>, ptr: VReg, size: u32) -> VReg {
    if size <= UNROLL_BYTES {
        let len = cx.imm(0);
        let done = cx.label();
        for i in 0..size {
            let c = cx.load(ptr, i as i32, Width::W8);
            cx.branch(Cond::Eq, c, Operand::Imm(0), done);
            cx.emit(Inst::Mov {
                dst: len,
                src: Operand::Imm(i64::from(i) + 1),
            });
        }
        cx.place_label(done);
        return len;
    }
    let len = cx.byte_loop(size, &[ptr], &[Operand::Imm(size.into())], |cx, b| {
        let c = cx.byte_at(b.words[0], b.index);
        cx.branch(Cond::Ne, c, Operand::Imm(0), b.next);
        b.set_result(cx, 0, Operand::Reg(b.index));
        cx.emit(Inst::Jump(b.stop));
    })[0];
    // At most `size`, also to the verifier, which may have lost the bound through the
    // callback: the length may offset a pointer.
    let fits = cx.label();
    cx.branch(Cond::ULe, len, Operand::Imm(size.into()), fits);
    cx.emit(Inst::Mov {
        dst: len,
        src: Operand::Imm(size.into()),
    });
    cx.place_label(fits);
    len
}

/// 1 when the strings at `a` and `b` are equal over their first `n` bytes, up to the first
/// NUL, else 0.
pub fn equal(cx: &mut LowerCx<'_>, a: VReg, b: VReg, n: u32) -> VReg {
    if n <= UNROLL_BYTES {
        let out = cx.imm(0);
        let ne = cx.label();
        let eq = cx.label();
        for i in 0..n as i32 {
            let ca = cx.load(a, i, Width::W8);
            let cb = cx.load(b, i, Width::W8);
            cx.branch(Cond::Ne, ca, Operand::Reg(cb), ne);
            cx.branch(Cond::Eq, ca, Operand::Imm(0), eq);
        }
        cx.place_label(eq);
        cx.emit(Inst::Mov {
            dst: out,
            src: Operand::Imm(1),
        });
        cx.place_label(ne);
        return out;
    }
    cx.byte_loop(n, &[a, b], &[Operand::Imm(1)], |cx, l| {
        let ca = cx.byte_at(l.words[0], l.index);
        let cb = cx.byte_at(l.words[1], l.index);
        let differ = cx.label();
        cx.branch(Cond::Ne, ca, Operand::Reg(cb), differ);
        cx.branch(Cond::Eq, ca, Operand::Imm(0), l.stop);
        cx.emit(Inst::Jump(l.next));
        cx.place_label(differ);
        l.set_result(cx, 0, Operand::Imm(0));
        cx.emit(Inst::Jump(l.stop));
    })[0]
}

/// `memcmp()`: 0 when the first `n` bytes at `l` and `r` are equal, else the difference of
/// the first differing bytes, as C's signed `char`s.
pub fn compare(cx: &mut LowerCx<'_>, l: VReg, r: VReg, n: u32) -> VReg {
    let differ = |cx: &mut LowerCx<'_>, x: VReg, y: VReg| {
        let sx = cx.sign_extend(x, 8);
        let sy = cx.sign_extend(y, 8);
        cx.alu(AluOp::Sub, sx, Operand::Reg(sy))
    };
    if n <= UNROLL_BYTES {
        let out = cx.imm(0);
        let done = cx.label();
        for i in 0..n as i32 {
            let x = cx.load(l, i, Width::W8);
            let y = cx.load(r, i, Width::W8);
            let same = cx.label();
            cx.branch(Cond::Eq, x, Operand::Reg(y), same);
            let d = differ(cx, x, y);
            cx.emit(Inst::Mov {
                dst: out,
                src: Operand::Reg(d),
            });
            cx.emit(Inst::Jump(done));
            cx.place_label(same);
        }
        cx.place_label(done);
        return out;
    }
    cx.byte_loop(n, &[l, r], &[Operand::Imm(0)], |cx, b| {
        let x = cx.byte_at(b.words[0], b.index);
        let y = cx.byte_at(b.words[1], b.index);
        cx.branch(Cond::Eq, x, Operand::Reg(y), b.next);
        let d = differ(cx, x, y);
        b.set_result(cx, 0, Operand::Reg(d));
        cx.emit(Inst::Jump(b.stop));
    })[0]
}

/// The index of the first occurrence of the NUL-terminated needle (`ns` bytes at `n`) in
/// the NUL-terminated haystack (`hs` bytes at `h`), or -1. A needle that fills its bytes
/// without a NUL is found where all of them are.
pub fn find(cx: &mut LowerCx<'_>, h: VReg, hs: u32, n: VReg, ns: u32) -> VReg {
    if u64::from(hs) * u64::from(ns) <= u64::from(UNROLL_PAIRS) {
        return find_unrolled(cx, h, hs, n, ns);
    }
    cx.byte_loop(hs, &[h, n], &[Operand::Imm(-1)], |cx, b| {
        let (h, n, i) = (b.words[0], b.words[1], b.index);
        let found = cx.label();
        let miss = cx.label();
        if ns <= UNROLL_NEEDLE {
            for j in 0..ns as i32 {
                let c2 = cx.load(n, j, Width::W8);
                cx.branch(Cond::Eq, c2, Operand::Imm(0), found);
                let at = cx.imm(j.into());
                let k = unlinked_sum(cx, at, i);
                cx.branch(Cond::UGe, k, Operand::Imm(hs.into()), miss);
                let c1 = cx.byte_at(h, k);
                cx.branch(Cond::Ne, c1, Operand::Reg(c2), miss);
            }
        } else {
            let matched = needle_at(cx, h, hs, n, ns, i);
            cx.branch(Cond::Eq, matched, Operand::Imm(0), miss);
        }
        cx.place_label(found);
        b.set_result(cx, 0, Operand::Reg(i));
        cx.emit(Inst::Jump(b.stop));
        cx.place_label(miss);
        let c = cx.byte_at(h, i);
        cx.branch(Cond::Eq, c, Operand::Imm(0), b.stop);
    })[0]
}

/// 1 when the needle (`ns` bytes at `n`, up to its NUL) is in the haystack (`hs` bytes at
/// `h`) at index `i`, compared by a loop over the needle.
fn needle_at(cx: &mut LowerCx<'_>, h: VReg, hs: u32, n: VReg, ns: u32, i: VReg) -> VReg {
    cx.byte_loop(ns, &[h, n, i], &[Operand::Imm(1)], |cx, b| {
        let (h, n, i, j) = (b.words[0], b.words[1], b.words[2], b.index);
        let c2 = cx.byte_at(n, j);
        cx.branch(Cond::Eq, c2, Operand::Imm(0), b.stop);
        let differ = cx.label();
        let k = unlinked_sum(cx, j, i);
        cx.branch(Cond::UGe, k, Operand::Imm(hs.into()), differ);
        let c1 = cx.byte_at(h, k);
        cx.branch(Cond::Eq, c1, Operand::Reg(c2), b.next);
        cx.place_label(differ);
        b.set_result(cx, 0, Operand::Imm(0));
        cx.emit(Inst::Jump(b.stop));
    })[0]
}

/// `j + i`, the haystack's index of the needle's byte `j` at place `i`, computed so that
/// the verifier does not link it to `i`: `i + j` with `j` a constant it knows would be (the
/// same value plus a known delta), and the bound checked on it would narrow `i` too, on
/// each path differently, so that the search's callback reached its end with ever other
/// ranges of the place it found and was verified again for each (past the verifier's
/// limits for a needle of 100 bytes). Added into a copy of `j`, the sum is a new value.
fn unlinked_sum(cx: &mut LowerCx<'_>, j: VReg, i: VReg) -> VReg {
    cx.alu(AluOp::Add, j, Operand::Reg(i))
}

/// [`find`] unrolled: |haystack| × |needle| compares.
fn find_unrolled(cx: &mut LowerCx<'_>, h: VReg, hs: u32, n: VReg, ns: u32) -> VReg {
    let out = cx.imm(-1);
    let done = cx.label();
    for i in 0..hs as i32 {
        let next = cx.label();
        let found = cx.label();
        for j in 0..ns as i32 {
            let c2 = cx.load(n, j, Width::W8);
            cx.branch(Cond::Eq, c2, Operand::Imm(0), found);
            if i + j >= hs as i32 {
                cx.emit(Inst::Jump(next));
                break;
            }
            let c1 = cx.load(h, i + j, Width::W8);
            cx.branch(Cond::Ne, c1, Operand::Reg(c2), next);
        }
        cx.place_label(found);
        cx.emit(Inst::Mov {
            dst: out,
            src: Operand::Imm(i64::from(i)),
        });
        cx.emit(Inst::Jump(done));
        cx.place_label(next);
        let c = cx.load(h, i, Width::W8);
        cx.branch(Cond::Eq, c, Operand::Imm(0), done);
    }
    cx.place_label(done);
    out
}
