//! Where a probe's values live: stack slots (a statement's temporaries, given back after it;
//! keys and variables kept for the probe) and the per-CPU scratch map for what the stack
//! cannot hold.

use super::cx::{
    LowerCx, MAX_SCRATCH, PROBE_TOO_LARGE, Place, STACK_MAX_ALLOC, STACK_MAX_EVENT, Val,
};
use crate::ir::{AluOp, Inst, Operand, VReg};
use sonde_lang::ast::Expr;
use sonde_lang::diag::Diagnostic;
use sonde_lang::span::Span;

impl LowerCx<'_> {
    /// Allocates `size` bytes of owned memory (stack when small, per-CPU scratch otherwise);
    /// returns a pointer to it. The memory is not initialised.
    pub fn alloc(&mut self, size: u32) -> VReg {
        match self.alloc_stack(size, STACK_MAX_ALLOC) {
            Some(dst) => dst,
            None => {
                let dst = self.vreg();
                let off = self.scratch_alloc(sonde_lang::types::align_up(size.max(1), 8));
                self.scratch_addr(dst, off);
                dst
            }
        }
    }

    /// `size` bytes of the stack (a slot a finished statement freed, or a new one while the
    /// budget lasts) when `size` is at most `max`.
    fn alloc_stack(&mut self, size: u32, max: u32) -> Option<VReg> {
        let size = sonde_lang::types::align_up(size.max(1), 8);
        if size > max {
            return None;
        }
        let slot = match self.stack_free.iter().position(|&(_, s)| s == size) {
            Some(i) => self.stack_free.swap_remove(i).0,
            None if self.stack_used.saturating_add(size) <= self.stack_budget => {
                self.stack_used += size;
                self.f.slot(size)
            }
            None => return None,
        };
        self.stack_taken.push((slot, size));
        let dst = self.vreg();
        self.emit(Inst::SlotAddr { dst, slot });
        self.last_stack_alloc = Some((slot, dst));
        Some(dst)
    }

    /// Reserves `size` bytes (a multiple of 8) of scratch space; returns their offset.
    fn scratch_alloc(&mut self, size: u32) -> u32 {
        let off = self.scratch_used;
        // Saturates: a probe over the scratch limit is refused after lowering.
        self.scratch_used = self.scratch_used.saturating_add(size);
        self.scratch_peak = self.scratch_peak.max(self.scratch_used);
        if self.scratch_used > MAX_SCRATCH && self.scratch_overflow.is_none() {
            self.scratch_overflow = Some(self.span);
        }
        off
    }

    /// `dst = scratch + off`.
    fn scratch_addr(&mut self, dst: VReg, off: u32) {
        let base = self.scratch_base();
        self.emit(Inst::Alu {
            op: AluOp::Add,
            dst,
            lhs: base,
            rhs: Operand::Imm(off.into()),
        });
    }

    /// Allocates `size` zeroed bytes for an event that is built and sent by one statement:
    /// on the stack up to [`STACK_MAX_EVENT`] bytes while the budget lasts; larger event
    /// buffers share one scratch area per probe, so that a probe with several `printf`s or
    /// `join`s needs the largest of them rather than their sum (valid until the next such
    /// allocation).
    pub fn alloc_event_zeroed(&mut self, size: u32) -> VReg {
        let size = sonde_lang::types::align_up(size.max(1), 8);
        if let Some(dst) = self.alloc_stack(size, STACK_MAX_EVENT) {
            self.zero(dst, 0, size);
            return dst;
        }
        let off = match self.event_area {
            Some((off, have)) if have >= size => off,
            _ => {
                let off = self.scratch_alloc(size);
                self.event_area = Some((off, size));
                self.scratch_pinned = self.scratch_used;
                off
            }
        };
        let dst = self.vreg();
        self.scratch_addr(dst, off);
        self.zero(dst, 0, size);
        dst
    }

    /// The register holding the scratch map value pointer (looked up at function entry).
    fn scratch_base(&mut self) -> VReg {
        match self.scratch_ptr {
            Some(r) => r,
            None => {
                let r = self.vreg();
                self.scratch_ptr = Some(r);
                r
            }
        }
    }

    /// The zeroed memory where the expression at `span` may build a value of `size` bytes
    /// (an event's field, see [`Place`]), if that is where it is being lowered; else `None`
    /// and the caller allocates. Taken once: an expression nested in it has its own span.
    pub fn take_place(&mut self, span: Span, size: u32) -> Option<VReg> {
        let p = self.place.take_if(|p| p.span == span && p.room >= size)?;
        Some(p.ptr)
    }

    /// Lowers `e` offering it the zeroed memory at `ptr` (`room` bytes, see [`Place`]) to
    /// build its value in: `None` when it was built there, else its value (the caller writes
    /// it).
    pub(crate) fn lower_in_place(
        &mut self,
        e: &Expr,
        ptr: VReg,
        room: u32,
    ) -> Result<Option<Val>, Diagnostic> {
        self.place = Some(Place {
            span: e.span,
            ptr,
            room,
        });
        let v = self.lower_expr(e);
        self.place = None;
        let v = v?;
        Ok((!matches!(v, Val::Mem { ptr: p, .. } if p == ptr)).then_some(v))
    }

    /// Gives the stack slots taken since `mark` (a length of `stack_taken`) back for reuse:
    /// a statement's temporaries are dead after it, so the next statement's keys and values
    /// use the same stack instead of growing the frame until the per-CPU scratch buffer (a
    /// pointer reload and no store forwarding) takes over.
    pub(crate) fn release_stack(&mut self, mark: usize) {
        if mark < self.stack_taken.len() {
            let freed = self.stack_taken.split_off(mark);
            self.stack_free.extend(freed);
        }
    }

    /// Keeps the stack slot `ptr` addresses for the rest of the probe when it is the only
    /// slot taken since `mark` (a length of `stack_taken`): [`LowerCx::release_stack`] will
    /// not give it to a later statement. False when `ptr` is not that slot's address.
    pub(crate) fn pin_slot_of(&mut self, mark: usize, ptr: VReg) -> bool {
        let [(slot, _)] = self.stack_taken[mark.min(self.stack_taken.len())..] else {
            return false;
        };
        let addressed = self.last_stack_alloc == Some((slot, ptr));
        if addressed {
            self.stack_taken.truncate(mark);
        }
        addressed
    }

    /// Allocates zeroed owned memory.
    pub fn alloc_zeroed(&mut self, size: u32) -> VReg {
        let ptr = self.alloc(size);
        self.zero(ptr, 0, sonde_lang::types::align_up(size.max(1), 8));
        ptr
    }

    /// Fails when the probe's values in scratch space outgrew [`MAX_SCRATCH`], pointing at the
    /// construct whose value did not fit any more.
    pub fn check_scratch_size(&self) -> Result<(), Diagnostic> {
        let Some(span) = self.scratch_overflow else {
            return Ok(());
        };
        Err(Diagnostic::error(
            PROBE_TOO_LARGE,
            span,
            "this probe's values do not fit its scratch space",
        )
        .with_label(format!(
            "the probe needs {} bytes of scratch space by here, the limit is {MAX_SCRATCH}",
            self.scratch_used
        ))
        .with_help(
            "strings, buffers, tuples and map keys that do not fit the 512-byte stack share a per-CPU buffer of at most 32 KiB (the kernel's largest per-CPU map value); use smaller strings (`max_strlen`, `str(p, len)`) or split the probe",
        ))
    }
}
