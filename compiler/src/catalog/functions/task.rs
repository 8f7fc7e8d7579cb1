//! The call forms of task and clock builtins: `comm(pid)` (the task found by the
//! `bpf_task_from_pid` kfunc), `ppid(task)`, `pcomm(task)`, `leader_tid(task)`,
//! `leader_comm(task)` (a `struct task_struct *` argument), `pid(curr_ns|init)`,
//! `tid(curr_ns|init)` and `nsecs(boot|monotonic|tai|sw_tai)`. Without arguments, each name
//! is its builtin.
//!
//! The namespace and clock are bare identifiers read from the expression, as `kstack(perf)`'s
//! mode: the checker must not resolve them as variables.

use super::args::Args;
use super::function;
use crate::bpf::kfuncs::{Kfunc, KfuncCall};
use crate::catalog::builtins::task::{
    COMM_SIZE, Relative, lower_relative_comm, lower_relative_pid, task_field,
};
use crate::ir::{AluOp, Cond, Inst, Intrinsic, Operand, Width};
use crate::lower::cx::{LowerCall, LowerCx, PlaceSpace, Val};
use crate::lower::events::send_word;
use crate::program::EventSpec;
use sonde_lang::ast::ExprKind;
use sonde_lang::catalog::CallCheck;
use sonde_lang::diag::Diagnostic;
use sonde_lang::kernel::{BtfObject, KernelInfo};
use sonde_lang::span::Span;
use sonde_lang::types::Type;

/// Code of a kfunc the kernel's BTF does not have.
pub const NO_KFUNC: &str = "sonde::sema::no_kfunc";

/// The call of `func` with its id in the kernel's BTF, or a diagnostic on `span` when the
/// kernel has no such kfunc.
fn kfunc(kernel: &dyn KernelInfo, func: Kfunc, span: Span) -> Result<Intrinsic, Diagnostic> {
    kernel
        .kernel_btf_id(BtfObject::Func, func.name())
        .map(|btf_id| Intrinsic::Kfunc(KfuncCall { func, btf_id }))
        .ok_or_else(|| {
            Diagnostic::error(
                NO_KFUNC,
                span,
                format!("this kernel's BTF has no kfunc `{}`", func.name()),
            )
            .with_label("needs a kernel function called by its BTF id")
            .with_help("kfuncs are found in /sys/kernel/btf/vmlinux; `bpf_task_from_pid` appeared in Linux 6.2")
        })
}

/// The signature of `comm(pid)`.
const COMM_SIG: &str = "comm([pid])";

/// The rule of `comm(pid)`: an integer pid, and the kfuncs it calls present.
fn comm_of_rule(call: &CallCheck<'_>) -> Result<Type, Diagnostic> {
    let a = Args::new(call, COMM_SIG);
    a.arity(1, 1)?;
    a.int(0, "an integer pid")?;
    for f in [Kfunc::TaskFromPid, Kfunc::TaskRelease] {
        kfunc(call.kernel, f, call.span)?;
    }
    Ok(Type::Str { size: COMM_SIZE })
}

/// `comm(pid)`: the task of `pid` taken with `bpf_task_from_pid`, its `comm` read and its
/// reference dropped; when no task has that pid, `N/A` and bpftrace's warning.
fn lower_comm_of(cx: &mut LowerCx<'_>, call: &LowerCall<'_>) -> Result<Val, Diagnostic> {
    let span = call.span;
    let from_pid = kfunc(cx.kernel, Kfunc::TaskFromPid, span)?;
    let release = kfunc(cx.kernel, Kfunc::TaskRelease, span)?;
    let off = task_field(cx, "comm", span)?;
    let pid = cx.lower_int(&call.args[0])?;
    let buf = cx.alloc_zeroed(COMM_SIZE);
    let task = cx.call(from_pid, vec![Operand::Reg(pid)]);
    let (missing, done) = (cx.label(), cx.label());
    cx.branch(Cond::Eq, task, Operand::Imm(0), missing);
    let comm = Val::Place {
        base: task,
        offset: off,
        space: PlaceSpace::Kernel,
    };
    cx.read_place_into(comm, buf, 0, COMM_SIZE);
    cx.emit(Inst::Call {
        dst: None,
        func: release,
        args: vec![Operand::Reg(task)],
    });
    cx.emit(Inst::Jump(done));
    cx.place_label(missing);
    let na = i64::from(u32::from_le_bytes(*b"N/A\0"));
    cx.store(buf, 0, Operand::Imm(na), Width::W32);
    let warning = EventSpec::Log {
        error: false,
        format: "No such process (pid=%d)".into(),
        args: vec![Type::I64],
        span,
    };
    send_word(cx, warning, Some(pid));
    cx.place_label(done);
    Ok(Val::Mem {
        ptr: buf,
        size: COMM_SIZE,
    })
}

function!(
    /// `comm(pid)`: the command name of the task with this pid.
    CommOf, "comm", "comm([pid])",
    "Command name of the task with this pid (the bpf_task_from_pid kfunc: tracepoint, profile, interval and iter probes), \"N/A\" and a warning when there is none; the current task's by default",
    unsafe = false,
    |call| { comm_of_rule(call) },
    lower |cx, call| { lower_comm_of(cx, call) }
);

/// The rule of the `(task)` forms: one pointer argument.
fn task_arg(call: &CallCheck<'_>, sig: &'static str, ty: Type) -> Result<Type, Diagnostic> {
    let a = Args::new(call, sig);
    a.arity(1, 1)?;
    match a.ty(0) {
        Type::Ptr { .. } | Type::Int { .. } => Ok(ty),
        _ => Err(a.error(0, "a `struct task_struct *`")),
    }
}

/// The word argument `i` of a call (`curr_ns`, `tai`), checked against `words`.
fn word(call: &CallCheck<'_>, sig: &'static str, words: &[&str]) -> Result<String, Diagnostic> {
    let a = Args::new(call, sig);
    a.arity(1, 1)?;
    match a.expr(0).map(|e| &e.kind) {
        Some(ExprKind::Ident(w)) if words.contains(&w.as_str()) => Ok(w.clone()),
        _ => {
            let list: Vec<String> = words.iter().map(|w| format!("`{w}`")).collect();
            Err(a.error(0, &format!("one of {}", list.join(", "))))
        }
    }
}

/// The word argument of a lowered call.
fn lowered_word(call: &crate::lower::cx::LowerCall<'_>) -> String {
    match call.args.first().map(|e| &e.kind) {
        Some(ExprKind::Ident(w)) => w.clone(),
        _ => String::new(),
    }
}

function!(
    /// `ppid(task)`: the pid of a task's parent.
    PpidOf, "ppid", "ppid([task])", "Pid of the parent process (task->real_parent->pid) of a task, the current one by default",
    unsafe = false,
    |call| { task_arg(call, "ppid([task])", Type::U32) },
    lower |cx, call| {
        let task = cx.lower_int(&call.args[0])?;
        lower_relative_pid(cx, task, Relative::Parent, call.span)
    }
);

function!(
    /// `pcomm(task)`: the command name of a task's parent.
    PcommOf, "pcomm", "pcomm([task])", "Command name of the parent process (task->real_parent->comm) of a task, the current one by default",
    unsafe = false,
    |call| { task_arg(call, "pcomm([task])", Type::Str { size: COMM_SIZE }) },
    lower |cx, call| {
        let task = cx.lower_int(&call.args[0])?;
        lower_relative_comm(cx, task, Relative::Parent, call.span)
    }
);

function!(
    /// `leader_tid(task)`: the thread id of a task's thread group leader.
    LeaderTidOf, "leader_tid", "leader_tid([task])", "Thread id of the thread group leader (task->group_leader->pid) of a task, the current one by default",
    unsafe = false,
    |call| { task_arg(call, "leader_tid([task])", Type::U32) },
    lower |cx, call| {
        let task = cx.lower_int(&call.args[0])?;
        lower_relative_pid(cx, task, Relative::Leader, call.span)
    }
);

function!(
    /// `leader_comm(task)`: the command name of a task's thread group leader.
    LeaderCommOf, "leader_comm", "leader_comm([task])", "Command name of the thread group leader (task->group_leader->comm) of a task, the current one by default",
    unsafe = false,
    |call| { task_arg(call, "leader_comm([task])", Type::Str { size: COMM_SIZE }) },
    lower |cx, call| {
        let task = cx.lower_int(&call.args[0])?;
        lower_relative_comm(cx, task, Relative::Leader, call.span)
    }
);

/// The pid namespaces `pid(...)`/`tid(...)` accept.
const NAMESPACES: &[&str] = &["curr_ns", "init"];

/// `tgid << 32 | pid` in the namespace the call names (`init`, else sonde's own).
fn pid_tgid_in(cx: &mut LowerCx<'_>, call: &LowerCall<'_>) -> crate::ir::VReg {
    match call.args.first().map(|a| &a.kind) {
        Some(ExprKind::Ident(w)) if w == "init" => cx.pid_tgid(),
        _ => cx.pid_tgid_here(),
    }
}

function!(
    /// `pid(curr_ns|init)`: the process id in sonde's or the initial pid namespace.
    PidNs, "pid", "pid([curr_ns|init])",
    "Process id as seen from sonde's pid namespace (curr_ns, the default; 0 for a task outside it) or the initial one (init)",
    unsafe = false, unchecked = &[0],
    |call| { word(call, "pid([curr_ns|init])", NAMESPACES).map(|_| Type::U32) },
    lower |cx, call| {
        let t = pid_tgid_in(cx, call);
        Ok(Val::Int(cx.alu(AluOp::LShr, t, Operand::Imm(32))))
    }
);

function!(
    /// `tid(curr_ns|init)`: the thread id in sonde's or the initial pid namespace.
    TidNs, "tid", "tid([curr_ns|init])",
    "Thread id as seen from sonde's pid namespace (curr_ns, the default; 0 for a task outside it) or the initial one (init)",
    unsafe = false, unchecked = &[0],
    |call| { word(call, "tid([curr_ns|init])", NAMESPACES).map(|_| Type::U32) },
    lower |cx, call| {
        let t = pid_tgid_in(cx, call);
        Ok(Val::Int(cx.alu(AluOp::And, t, Operand::Imm(0xffff_ffff))))
    }
);

/// The clocks `nsecs(...)` reads.
const CLOCKS: &[&str] = &["boot", "monotonic", "tai", "sw_tai"];

function!(
    /// `nsecs(boot|monotonic|tai|sw_tai)`: a timestamp of the given kernel clock.
    NsecsOf, "nsecs", "nsecs([boot|monotonic|tai|sw_tai])",
    "Nanoseconds of a kernel clock: boot (CLOCK_BOOTTIME, the default), monotonic (CLOCK_MONOTONIC), tai (CLOCK_TAI); sw_tai reads CLOCK_TAI too",
    unsafe = false, unchecked = &[0],
    |call| { word(call, "nsecs([boot|monotonic|tai|sw_tai])", CLOCKS).map(|_| Type::U64) },
    lower |cx, call| {
        let clock = match lowered_word(call).as_str() {
            "monotonic" => Intrinsic::KtimeGetNs,
            "tai" | "sw_tai" => Intrinsic::KtimeGetTaiNs,
            _ => Intrinsic::KtimeGetBootNs,
        };
        Ok(Val::Int(cx.call(clock, vec![])))
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::functions::args::ARG_TYPE;
    use crate::catalog::functions::testutil::{arg_span, check, check_on, ident, int, lit, val};

    #[test]
    fn forms() {
        assert_eq!(check(&NsecsOf, vec![ident("tai")]).unwrap(), Type::U64);
        assert_eq!(
            check(&NsecsOf, vec![ident("utc")]).unwrap_err().code,
            ARG_TYPE
        );
        assert_eq!(check(&PidNs, vec![ident("init")]).unwrap(), Type::U32);
        assert_eq!(check(&TidNs, vec![ident("curr_ns")]).unwrap(), Type::U32);
        assert_eq!(check(&TidNs, vec![int(1)]).unwrap_err().code, ARG_TYPE);
        assert_eq!(check(&PpidOf, vec![val(Type::U64)]).unwrap(), Type::U32);
        assert_eq!(
            check(&PcommOf, vec![val(Type::U64)]).unwrap(),
            Type::Str { size: 16 }
        );
        let k = sonde_lang::testing::FixtureKernel;
        let tp = sonde_lang::catalog::ProbeContext::bare("tracepoint");
        assert_eq!(
            check_on(&CommOf, &tp, &k, vec![val(Type::U32)]).unwrap(),
            Type::Str { size: 16 }
        );
        let e = check_on(&CommOf, &tp, &k, vec![lit("1")]).unwrap_err();
        assert_eq!((e.code, e.span), (ARG_TYPE, arg_span(0)));
        // A kernel whose BTF has no `bpf_task_from_pid` (before Linux 6.2).
        assert_eq!(check(&CommOf, vec![int(1)]).unwrap_err().code, NO_KFUNC);
        assert_eq!(
            check(&LeaderCommOf, vec![val(Type::Str { size: 4 })])
                .unwrap_err()
                .code,
            ARG_TYPE
        );
    }
}
