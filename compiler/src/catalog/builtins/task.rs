//! Builtins about the current task's relatives and where it runs: `ppid`, `pcomm`,
//! `leader_tid`, `leader_comm` (fields of `struct task_struct`, read through the kernel's BTF
//! when the program is built), `usermode`, `numaid` and `has_cpid`. The call forms with a task
//! argument (`ppid(task)`) are in `functions::task`.

use super::process::fixed_builtin;
use crate::catalog::BuiltinBackend;
use crate::catalog::functions::symbols::{PT_REGS_PROVIDERS, pt_regs_offset};
use crate::ir::{AluOp, Intrinsic, Operand, VReg, Width};
use crate::lower::cx::{LowerCx, PlaceSpace, Val};
use sonde_lang::catalog::{Builtin, ProbeContext};
use sonde_lang::diag::Diagnostic;
use sonde_lang::kernel::RecordKind;
use sonde_lang::span::Span;
use sonde_lang::types::Type;

/// Size of `task_struct.comm` (`TASK_COMM_LEN`).
pub const COMM_SIZE: u32 = 16;

/// The byte offset of `field` in `struct task_struct`, from the kernel's BTF.
pub(crate) fn task_field(cx: &LowerCx<'_>, field: &str, span: Span) -> Result<i32, Diagnostic> {
    cx.kernel
        .record(RecordKind::Struct, "task_struct")
        .and_then(|r| r.field(field).map(|f| f.offset as i32))
        .ok_or_else(|| {
            Diagnostic::error(
                "sonde::compile::no_btf",
                span,
                format!("`struct task_struct` has no field `{field}` in this kernel's BTF"),
            )
            .with_label("needs the task's layout")
            .with_help("this builtin reads the current task through the kernel's BTF (/sys/kernel/btf/vmlinux)")
        })
}

/// Which relative of a task a builtin reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Relative {
    /// `task->real_parent` (`ppid`, `pcomm`).
    Parent,
    /// `task->group_leader` (`leader_tid`, `leader_comm`).
    Leader,
}

impl Relative {
    fn field(self) -> &'static str {
        match self {
            Relative::Parent => "real_parent",
            Relative::Leader => "group_leader",
        }
    }
}

/// The pointer to `task`'s relative (a kernel `struct task_struct *`).
fn relative(
    cx: &mut LowerCx<'_>,
    task: VReg,
    rel: Relative,
    span: Span,
) -> Result<VReg, Diagnostic> {
    let off = task_field(cx, rel.field(), span)?;
    let place = Val::Place {
        base: task,
        offset: off,
        space: PlaceSpace::Kernel,
    };
    Ok(cx.read_place_int(place, &Type::U64))
}

/// `task->REL->pid` as a `uint32`.
pub fn lower_relative_pid(
    cx: &mut LowerCx<'_>,
    task: VReg,
    rel: Relative,
    span: Span,
) -> Result<Val, Diagnostic> {
    let r = relative(cx, task, rel, span)?;
    let off = task_field(cx, "pid", span)?;
    let place = Val::Place {
        base: r,
        offset: off,
        space: PlaceSpace::Kernel,
    };
    Ok(Val::Int(cx.read_place_int(place, &Type::U32)))
}

/// `task->REL->comm` as a 16-byte string.
pub fn lower_relative_comm(
    cx: &mut LowerCx<'_>,
    task: VReg,
    rel: Relative,
    span: Span,
) -> Result<Val, Diagnostic> {
    let r = relative(cx, task, rel, span)?;
    let off = task_field(cx, "comm", span)?;
    let buf = cx.alloc_zeroed(COMM_SIZE);
    cx.read_place_into(
        Val::Place {
            base: r,
            offset: off,
            space: PlaceSpace::Kernel,
        },
        buf,
        0,
        COMM_SIZE,
    );
    Ok(Val::Mem {
        ptr: buf,
        size: COMM_SIZE,
    })
}

/// Declares a builtin reading a relative of the current task (a [`fixed_builtin`]).
macro_rules! relative_builtin {
    ($(#[$m:meta])* $ty:ident, $name:literal, $doc:literal, $value:expr, $rel:expr, $lower:ident) => {
        fixed_builtin!(
            $(#[$m])* $ty, $name, $doc, $value,
            try |cx, span| {
                let task = cx.call(Intrinsic::GetCurrentTask, vec![]);
                $lower(cx, task, $rel, span)
            }
        );
    };
}

relative_builtin!(
    /// `ppid`: the pid of the current task's parent (`curtask->real_parent->pid`).
    Ppid, "ppid", "Pid of the parent process of the current task (curtask->real_parent->pid)",
    Type::U32, Relative::Parent, lower_relative_pid
);
relative_builtin!(
    /// `pcomm`: the command name of the current task's parent.
    Pcomm, "pcomm", "Command name of the parent process of the current task (curtask->real_parent->comm)",
    Type::Str { size: COMM_SIZE }, Relative::Parent, lower_relative_comm
);
relative_builtin!(
    /// `leader_tid`: the thread id of the current thread group's leader.
    LeaderTid, "leader_tid", "Thread id of the current task's thread group leader (curtask->group_leader->pid)",
    Type::U32, Relative::Leader, lower_relative_pid
);
relative_builtin!(
    /// `leader_comm`: the command name of the current thread group's leader.
    LeaderComm, "leader_comm", "Command name of the current task's thread group leader (curtask->group_leader->comm)",
    Type::Str { size: COMM_SIZE }, Relative::Leader, lower_relative_comm
);

fixed_builtin!(
    /// `numaid`: the NUMA node of the CPU running the probe.
    Numaid, "numaid", "Id of the NUMA node of the CPU the probe runs on", Type::U32,
    |cx| cx.call(Intrinsic::NumaNodeId, vec![])
);
fixed_builtin!(
    /// `has_cpid`: whether `-c` started a child (`cpid` has a value).
    HasCpid, "has_cpid", "True when a child process was started with -c (cpid has a value)", Type::Bool,
    |cx| cx.imm(i64::from(cx.options.cpid.is_some()))
);

/// `usermode`: 1 when the probe interrupted the task in user mode (x86-64: the saved `cs`
/// has privilege level 3), read from the probe's saved registers.
pub struct Usermode;

impl Builtin for Usermode {
    fn name(&self) -> &'static str {
        "usermode"
    }
    fn doc(&self) -> &'static str {
        "1 when the probe interrupted the task in user mode, else 0 (probes with saved registers; 1 in BEGIN and END, which sonde starts from user mode)"
    }
    fn check(&self, ctx: &ProbeContext, span: Span) -> Result<Type, Diagnostic> {
        if !PT_REGS_PROVIDERS.contains(&ctx.provider) && !started_by_sonde(ctx.provider) {
            return Err(super::unavailable(
                "usermode",
                ctx,
                span,
                "`usermode` reads the saved `cs` register: use it in kprobe, uprobe, usdt, profile, interval, software or hardware probes",
            ));
        }
        Ok(Type::U8)
    }
}

/// BEGIN and END run when sonde, in user mode, starts and ends: `usermode` is 1 there (as in
/// bpftrace, whose begin and end probes are uprobes on itself).
fn started_by_sonde(provider: &str) -> bool {
    matches!(provider, "BEGIN" | "END")
}

impl BuiltinBackend for Usermode {
    fn lower(&self, cx: &mut LowerCx<'_>, _: &Type, span: Span) -> Result<Val, Diagnostic> {
        if started_by_sonde(cx.attach.ctx.provider) {
            return Ok(Val::Int(cx.imm(1)));
        }
        let Some(off) = pt_regs_offset("cs") else {
            return Err(cx.unsupported(span, "`usermode`"));
        };
        let ctx = cx.ctx();
        let cs = cx.load(ctx, off, Width::W64);
        let pl = cx.alu(AluOp::And, cs, Operand::Imm(3));
        Ok(Val::Int(cx.flag(crate::ir::Cond::Eq, pl, Operand::Imm(3))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_and_contexts() {
        let bare = ProbeContext::bare("tracepoint");
        let s = Span::new(0, 4);
        assert_eq!(Ppid.check(&bare, s).unwrap(), Type::U32);
        assert_eq!(Pcomm.check(&bare, s).unwrap(), Type::Str { size: 16 });
        assert_eq!(LeaderTid.check(&bare, s).unwrap(), Type::U32);
        assert_eq!(Numaid.check(&bare, s).unwrap(), Type::U32);
        assert_eq!(HasCpid.check(&bare, s).unwrap(), Type::Bool);
        assert_eq!(
            Usermode.check(&bare, s).unwrap_err().code,
            super::super::BUILTIN_UNAVAILABLE
        );
        assert_eq!(
            Usermode.check(&ProbeContext::bare("profile"), s).unwrap(),
            Type::U8
        );
    }
}
