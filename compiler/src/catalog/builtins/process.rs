//! Builtins about the current task and CPU: `pid`, `tid`, `uid`, `gid`, `comm`, `cpu`,
//! `ncpus`, `curtask`, `cgroup`, `rand`, `username` and `cpid`. They are available in every
//! probe type.

use crate::catalog::BuiltinBackend;
use crate::ir::{AluOp, Inst, Intrinsic, Operand};
use crate::lower::cx::{LowerCx, Val};
use sonde_lang::catalog::{Builtin, ProbeContext};
use sonde_lang::ctypes::opaque_record;
use sonde_lang::diag::Diagnostic;
use sonde_lang::kernel::RecordKind;
use sonde_lang::span::Span;
use sonde_lang::types::{AddrSpace, Type};

/// Declares a builtin whose type does not depend on the probe. Its lowering is an integer
/// expression (`|cx| ...`), or any fallible lowering given the call's span
/// (`try |cx, span| ...`, returning `Result<Val, Diagnostic>`).
macro_rules! fixed_builtin {
    ($(#[$m:meta])* $ty:ident, $name:literal, $doc:literal, $value:expr, |$cx:ident| $lower:expr) => {
        fixed_builtin!(
            $(#[$m])* $ty, $name, $doc, $value,
            try |$cx, _span| Ok(crate::lower::cx::Val::Int($lower))
        );
    };
    ($(#[$m:meta])* $ty:ident, $name:literal, $doc:literal, $value:expr, try |$cx:ident, $span:ident| $lower:expr) => {
        $(#[$m])*
        pub struct $ty;

        impl Builtin for $ty {
            fn name(&self) -> &'static str {
                $name
            }
            fn doc(&self) -> &'static str {
                $doc
            }
            fn check(&self, _: &ProbeContext, _: Span) -> Result<Type, Diagnostic> {
                Ok($value)
            }
        }

        impl BuiltinBackend for $ty {
            fn lower(
                &self,
                $cx: &mut crate::lower::cx::LowerCx<'_>,
                _: &Type,
                $span: Span,
            ) -> Result<crate::lower::cx::Val, Diagnostic> {
                $lower
            }
        }
    };
}
pub(crate) use fixed_builtin;

fixed_builtin!(
    /// `pid`: the process id (thread group id) of the current task.
    Pid, "pid", "Process id (thread group id) of the current task, as seen from sonde's pid namespace", Type::U32,
    |cx| { let t = cx.pid_tgid_here(); cx.alu(AluOp::LShr, t, Operand::Imm(32)) }
);
fixed_builtin!(
    /// `tid`: the thread id of the current task.
    Tid, "tid", "Thread id of the current task, as seen from sonde's pid namespace", Type::U32,
    |cx| { let t = cx.pid_tgid_here(); cx.alu(AluOp::And, t, Operand::Imm(0xffff_ffff)) }
);
fixed_builtin!(
    /// `uid`: the real user id of the current task.
    Uid, "uid", "User id of the current task", Type::U64,
    |cx| { let t = cx.call(Intrinsic::GetUidGid, vec![]); cx.alu(AluOp::And, t, Operand::Imm(0xffff_ffff)) }
);
fixed_builtin!(
    /// `gid`: the real group id of the current task.
    Gid, "gid", "Group id of the current task", Type::U64,
    |cx| { let t = cx.call(Intrinsic::GetUidGid, vec![]); cx.alu(AluOp::LShr, t, Operand::Imm(32)) }
);
/// `comm`: the current task's command name (16 bytes, as the kernel keeps it).
pub struct Comm;

impl Builtin for Comm {
    fn name(&self) -> &'static str {
        "comm"
    }
    fn doc(&self) -> &'static str {
        "Command name of the current task (up to 15 characters)"
    }
    fn check(&self, _: &ProbeContext, _: Span) -> Result<Type, Diagnostic> {
        Ok(Type::Str { size: 16 })
    }
}

impl BuiltinBackend for Comm {
    fn lower(&self, cx: &mut LowerCx<'_>, _: &Type, span: Span) -> Result<Val, Diagnostic> {
        let buf = match cx.take_place(span, 16) {
            Some(field) => field,
            None => cx.alloc_zeroed(16),
        };
        cx.emit(Inst::Call {
            dst: None,
            func: Intrinsic::GetCurrentComm,
            args: vec![Operand::Reg(buf), Operand::Imm(16)],
        });
        Ok(Val::Mem { ptr: buf, size: 16 })
    }
}
fixed_builtin!(
    /// `cpu`: the id of the CPU running the probe.
    Cpu, "cpu", "Id of the CPU the probe runs on", Type::U32,
    |cx| cx.call(Intrinsic::GetCpu, vec![])
);
fixed_builtin!(
    /// `ncpus`: the number of online CPUs, known when the program is loaded.
    Ncpus, "ncpus", "Number of online CPUs", Type::U64,
    |cx| cx.imm(i64::from(cx.options.ncpus))
);
fixed_builtin!(
    /// `default_str_length`: the `max_strlen` config value (the length of strings read
    /// without one).
    DefaultStrLength, "default_str_length", "Bytes of the strings `str()` reads without a length (the max_strlen config value)", Type::U64,
    |cx| cx.imm(i64::from(cx.max_strlen))
);
fixed_builtin!(
    /// `cgroup`: the cgroup v2 id of the current task.
    Cgroup, "cgroup", "Cgroup v2 id of the current task", Type::U64,
    |cx| cx.call(Intrinsic::GetCgroupId, vec![])
);
fixed_builtin!(
    /// `rand`: a pseudo-random 32-bit number.
    Rand, "rand", "A pseudo-random 32-bit number", Type::U32,
    |cx| cx.call(Intrinsic::Random, vec![])
);
fixed_builtin!(
    /// `username`: the name of the current task's user, resolved when printed.
    Username, "username", "User name of the current task (resolved in user space)", Type::Username,
    |cx| { let t = cx.call(Intrinsic::GetUidGid, vec![]); cx.alu(AluOp::And, t, Operand::Imm(0xffff_ffff)) }
);
fixed_builtin!(
    /// `cpid`: the pid of the child started with `-c`. Whether `-c` was given is a command-line
    /// fact the checker verifies; the type is always `uint64`.
    Cpid, "cpid", "Pid of the child process started with -c", Type::U64,
    |cx| cx.imm(cx.options.cpid.map_or(0, i64::from))
);

/// `curtask`: a kernel pointer to the current `struct task_struct`.
///
/// A builtin's type rule has no access to [`KernelInfo`](sonde_lang::kernel::KernelInfo), so the
/// pointee is the *opaque* `struct task_struct` (no fields, size 0); the checker looks the record
/// up by name when a field is accessed (see `sonde_lang::ctypes::is_opaque`).
pub struct Curtask;

impl Builtin for Curtask {
    fn name(&self) -> &'static str {
        "curtask"
    }
    fn doc(&self) -> &'static str {
        "Pointer to the current task's struct task_struct"
    }
    fn check(&self, _: &ProbeContext, _: Span) -> Result<Type, Diagnostic> {
        Ok(Type::Ptr {
            pointee: Box::new(Type::Record(opaque_record(
                RecordKind::Struct,
                "task_struct",
            ))),
            space: AddrSpace::Kernel,
        })
    }
}

impl BuiltinBackend for Curtask {
    fn lower(&self, cx: &mut LowerCx<'_>, _: &Type, _: Span) -> Result<Val, Diagnostic> {
        Ok(Val::Int(cx.call(Intrinsic::GetCurrentTask, vec![])))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_builtins_have_fixed_types() {
        let ctx = ProbeContext::bare("BEGIN");
        let s = Span::new(0, 3);
        assert_eq!(Pid.check(&ctx, s).unwrap(), Type::U32);
        assert_eq!(Comm.check(&ctx, s).unwrap(), Type::Str { size: 16 });
        assert_eq!(Username.check(&ctx, s).unwrap(), Type::Username);
        let Type::Ptr { pointee, space } = Curtask.check(&ctx, s).unwrap() else {
            panic!("not a pointer")
        };
        assert_eq!(space, AddrSpace::Kernel);
        let Type::Record(r) = *pointee else {
            panic!("not a record")
        };
        assert_eq!(r.name, "struct task_struct");
        assert!(sonde_lang::ctypes::is_opaque(&r));
    }
}
