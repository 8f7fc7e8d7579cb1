//! Stack builtins: `kstack` and `ustack` (bpftrace mode, up to 127 frames). The forms with a
//! mode and a frame limit (`kstack(perf, 10)`) are functions of the same names
//! (`functions::stack`).

use crate::catalog::BuiltinBackend;
use crate::ir::{AluOp, Cond, Intrinsic, Operand, VReg};
use crate::lower::cx::{LowerCx, Val};
use crate::program::Counter;
use sonde_lang::catalog::{Builtin, ProbeContext};
use sonde_lang::diag::Diagnostic;
use sonde_lang::span::Span;
use sonde_lang::types::{StackMode, Type};

/// The default (and largest) number of frames of a stack.
pub const MAX_STACK_FRAMES: u32 = 127;

/// `kstack`: the kernel stack of the current task.
pub struct Kstack;

impl Builtin for Kstack {
    fn name(&self) -> &'static str {
        "kstack"
    }
    fn doc(&self) -> &'static str {
        "Kernel stack trace of the current task (up to 127 frames, printed in the stack_mode config's mode: bpftrace by default)"
    }
    fn check(&self, _: &ProbeContext, _: Span) -> Result<Type, Diagnostic> {
        Ok(Type::Stack {
            kernel: true,
            mode: StackMode::Bpftrace,
            limit: MAX_STACK_FRAMES,
        })
    }
}

impl BuiltinBackend for Kstack {
    fn lower(&self, cx: &mut LowerCx<'_>, ty: &Type, _: Span) -> Result<Val, Diagnostic> {
        Ok(Val::Int(lower_stack(cx, ty)))
    }
}

/// Captures the current stack of `ty` (`Type::Stack`) into the stack map and returns the
/// 8-byte value sonde stores for it: the stack id, and for user stacks the pid in the upper
/// 32 bits (user frames are resolved against that process's address map). A `build_id`
/// stack goes to the build-id stack map, its id marked with [`BUILD_ID_STACK`].
pub fn lower_stack(cx: &mut LowerCx<'_>, ty: &Type) -> VReg {
    let kernel = matches!(ty, Type::Stack { kernel: true, .. });
    let build_id = matches!(
        ty,
        Type::Stack {
            mode: StackMode::BuildId,
            ..
        }
    );
    let map = if build_id {
        cx.maps.build_id_stack_map()
    } else {
        cx.maps.stack_map(kernel)
    };
    let h = cx.map_handle(map);
    let ctx = cx.ctx();
    let flags = if kernel { 0 } else { BPF_F_USER_STACK };
    let id = cx.call(
        Intrinsic::GetStackId,
        vec![Operand::Reg(ctx), Operand::Reg(h), Operand::Imm(flags)],
    );
    // A stack whose bucket holds another one is not stored (-EEXIST): counted and reported,
    // as its key prints as an empty stack. (An empty user stack, -EFAULT, is a kernel
    // thread's: nothing was lost.)
    let stored = cx.label();
    cx.branch(Cond::Ne, id, Operand::Imm(-EEXIST), stored);
    cx.count_error(Counter::StackDropped);
    cx.place_label(stored);
    let id = cx.alu(AluOp::And, id, Operand::Imm(0xffff_ffff));
    if kernel {
        return id;
    }
    let id = if build_id {
        // Marked as the build-id map's (an error id stays negative).
        let error = cx.label();
        let sign = cx.alu(AluOp::LShr, id, Operand::Imm(31));
        cx.branch(Cond::Ne, sign, Operand::Imm(0), error);
        cx.emit(crate::ir::Inst::Alu {
            op: AluOp::Or,
            dst: id,
            lhs: id,
            rhs: Operand::Imm(BUILD_ID_STACK),
        });
        cx.place_label(error);
        id
    } else {
        id
    };
    let t = cx.pid_tgid();
    let pid = cx.alu(AluOp::LShr, t, Operand::Imm(32));
    let hi = cx.alu(AluOp::Shl, pid, Operand::Imm(32));
    cx.alu(AluOp::Or, hi, Operand::Reg(id))
}

/// `len(kstack)` / `len(ustack)`: the number of frames of the current stack of `ty`
/// (`Type::Stack`), at most its frame limit, from `bpf_get_stack` into a scratch buffer
/// (0 when the kernel gives none, as for a kernel thread's user stack).
pub fn lower_stack_len(cx: &mut LowerCx<'_>, ty: &Type) -> VReg {
    let (kernel, limit) = match ty {
        Type::Stack { kernel, limit, .. } => (*kernel, (*limit).clamp(1, MAX_STACK_FRAMES)),
        _ => (true, MAX_STACK_FRAMES),
    };
    let size = limit * 8;
    let buf = cx.alloc(size);
    let ctx = cx.ctx();
    let flags = if kernel { 0 } else { BPF_F_USER_STACK };
    let bytes = cx.call(
        Intrinsic::GetStack,
        vec![
            Operand::Reg(ctx),
            Operand::Reg(buf),
            Operand::Imm(i64::from(size)),
            Operand::Imm(flags),
        ],
    );
    let frames = cx.imm(0);
    let none = cx.label();
    cx.branch(Cond::SLe, bytes, Operand::Imm(0), none);
    cx.emit(crate::ir::Inst::Alu {
        op: AluOp::LShr,
        dst: frames,
        lhs: bytes,
        rhs: Operand::Imm(3),
    });
    cx.place_label(none);
    frames
}

/// The bit of a user stack's id (the low 32 bits of its value) that marks a stack of the
/// build-id stack map (`ustack(build_id)`); stack ids are far below it.
pub const BUILD_ID_STACK: i64 = 1 << 30;

/// `EEXIST`: `bpf_get_stackid` found another stack in the bucket.
const EEXIST: i64 = 17;

/// `BPF_F_USER_STACK`: collect the user stack.
const BPF_F_USER_STACK: i64 = 1 << 8;

/// `ustack`: the user stack of the current task.
pub struct Ustack;

impl Builtin for Ustack {
    fn name(&self) -> &'static str {
        "ustack"
    }
    fn doc(&self) -> &'static str {
        "User stack trace of the current task (up to 127 frames, printed in the stack_mode config's mode: bpftrace by default; frames of code with DWARF end with `@FILE:LINE` and list the functions inlined there, see the show_debug_info config)"
    }
    fn check(&self, _: &ProbeContext, _: Span) -> Result<Type, Diagnostic> {
        Ok(Type::Stack {
            kernel: false,
            mode: StackMode::Bpftrace,
            limit: MAX_STACK_FRAMES,
        })
    }
}

impl BuiltinBackend for Ustack {
    fn lower(&self, cx: &mut LowerCx<'_>, ty: &Type, _: Span) -> Result<Val, Diagnostic> {
        Ok(Val::Int(lower_stack(cx, ty)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_stacks() {
        let ctx = ProbeContext::bare("profile");
        assert_eq!(
            Kstack.check(&ctx, Span::default()).unwrap(),
            Type::Stack {
                kernel: true,
                mode: StackMode::Bpftrace,
                limit: 127
            }
        );
        assert_eq!(
            Ustack.check(&ctx, Span::default()).unwrap(),
            Type::Stack {
                kernel: false,
                mode: StackMode::Bpftrace,
                limit: 127
            }
        );
    }
}
