//! Other functions: `cgroupid`, `in_cgroup`, `cgroup_path`, `signal`, `signal_thread`, `is_err`,
//! `write_user`, `bswap` and `override`.

use super::args::Args;
use super::function;
use sonde_lang::diag::Diagnostic;
use sonde_lang::types::Type;

/// Linux signal names (without `SIG`) and numbers that `signal()` accepts by name.
pub const SIGNALS: &[(&str, i64)] = &[
    ("HUP", 1),
    ("INT", 2),
    ("QUIT", 3),
    ("ILL", 4),
    ("TRAP", 5),
    ("ABRT", 6),
    ("BUS", 7),
    ("FPE", 8),
    ("KILL", 9),
    ("USR1", 10),
    ("SEGV", 11),
    ("USR2", 12),
    ("PIPE", 13),
    ("ALRM", 14),
    ("TERM", 15),
    ("STKFLT", 16),
    ("CHLD", 17),
    ("CONT", 18),
    ("STOP", 19),
    ("TSTP", 20),
    ("TTIN", 21),
    ("TTOU", 22),
    ("URG", 23),
    ("XCPU", 24),
    ("XFSZ", 25),
    ("VTALRM", 26),
    ("PROF", 27),
    ("WINCH", 28),
    ("IO", 29),
    ("PWR", 30),
    ("SYS", 31),
];

/// The number of a signal name (`SIGKILL`, `KILL`).
pub fn signal_number(name: &str) -> Option<i64> {
    let bare = name.strip_prefix("SIG").unwrap_or(name);
    SIGNALS.iter().find(|(n, _)| *n == bare).map(|(_, v)| *v)
}

function!(
    /// `cgroupid("/sys/fs/cgroup/...")`: the id of a cgroup v2 path, at compile time; the
    /// path may be a string `getopt()` (whose empty value gives 0).
    Cgroupid, "cgroupid", "cgroupid(path)", "Id of the cgroup v2 at this path (resolved when the program is built); the path may be a string `getopt(name, default)`, whose empty value gives 0",
    unsafe = false,
    |call| {
        let a = Args::new(call, "cgroupid(path)");
        a.arity(1, 1)?;
        if super::getopt::const_string(&call.args[0], call.named).is_none() {
            a.literal(0, "a cgroup path string literal (or a string getopt())")?;
        }
        Ok(Type::U64)
    },
    lower |cx, call| {
        // A tool's path flag left out: no cgroup has id 0.
        let id = cgroup_arg(cx, call)?.map_or(0, |(_, id)| id);
        Ok(crate::lower::cx::Val::Int(cx.imm(id as i64)))
    }
);

/// The cgroup v2 a function's path argument names, as its path and id, or `None` for the
/// empty value of a string `getopt()` (a tool's cgroup flag left out).
fn cgroup_arg(
    cx: &crate::lower::cx::LowerCx<'_>,
    call: &crate::lower::cx::LowerCall<'_>,
) -> Result<Option<(String, u64)>, Diagnostic> {
    let path = match super::getopt::const_string(&call.args[0], &cx.options.named) {
        Some(p) if p.is_empty() => return Ok(None),
        Some(p) => p,
        None => crate::lower::events::literal_text(&call.args[0], cx.positional),
    };
    match cx.kernel.cgroup_id(&path) {
        Some(id) => Ok(Some((path, id))),
        None => Err(Diagnostic::error(
            "sonde::codegen::unknown_cgroup",
            call.args[0].span,
            format!("no cgroup v2 at `{path}`"),
        )
        .with_label("not a directory of a mounted cgroup2 file system")
        .with_help(
            "give the path of a cgroup v2 directory, such as \"/sys/fs/cgroup/system.slice\"",
        )),
    }
}

/// The level of the cgroup v2 directory `path` in its hierarchy (the root is 0): how many of
/// the directories above it are cgroups of the same hierarchy.
fn cgroup_level(kernel: &dyn sonde_lang::kernel::KernelInfo, path: &str) -> u32 {
    let mut level = 0;
    let mut at = std::path::Path::new(path).parent();
    while let Some(dir) = at {
        if dir.to_str().and_then(|d| kernel.cgroup_id(d)).is_some() {
            level += 1;
        }
        at = dir.parent();
    }
    level
}

function!(
    /// `in_cgroup(path)`: whether the current task runs in the cgroup v2 at `path` or in one
    /// below it (libbpf-tools' `-c` test, `bpf_current_task_under_cgroup`); the path is
    /// resolved when the program is built and may be a string `getopt()`, whose empty value
    /// makes it true.
    InCgroup, "in_cgroup", "in_cgroup(path)", "Whether the current task runs in the cgroup v2 at this path or in one below it (the path resolved when the program is built; an empty string `getopt(name, default)` is true; sonde extension)",
    unsafe = false,
    |call| {
        let a = Args::new(call, "in_cgroup(path)");
        a.arity(1, 1)?;
        if super::getopt::const_string(&call.args[0], call.named).is_none() {
            a.literal(0, "a cgroup path string literal (or a string getopt())")?;
        }
        Ok(Type::Bool)
    },
    lower |cx, call| {
        use crate::ir::{Cond, Intrinsic, Operand};
        // A tool's cgroup flag left out: every task.
        let Some((path, id)) = cgroup_arg(cx, call)? else {
            return Ok(crate::lower::cx::Val::Int(cx.imm(1)));
        };
        let level = cgroup_level(cx.kernel, &path);
        let ancestor = cx.call(Intrinsic::GetAncestorCgroupId, vec![Operand::Imm(i64::from(level))]);
        let id = cx.imm(id as i64);
        Ok(crate::lower::cx::Val::Int(cx.flag(Cond::Eq, ancestor, Operand::Reg(id))))
    }
);

function!(
    /// `cgroup_path(id[, filter])`: the path of a cgroup id, resolved when printed, in the
    /// hierarchies whose name matches the filter.
    CgroupPath, "cgroup_path", "cgroup_path(id[, filter])",
    "Path of a cgroup id in each cgroup hierarchy, as `name:path` joined with `,` (resolved when printed); a filter literal keeps the hierarchies whose name matches its `*` wildcard (cgroup2 is `unified`)",
    unsafe = false,
    |call| {
        let a = Args::new(call, "cgroup_path(id[, filter])");
        a.arity(1, 2)?;
        a.int(0, "an integer cgroup id")?;
        let filter = if a.len() == 2 {
            Some(a.literal_text(1, "a filter string literal")?)
        } else {
            None
        };
        // `*` (bpftrace's default) keeps every hierarchy, as no filter does.
        Ok(Type::CgroupPath { filter: filter.filter(|f| f != "*") })
    },
    // The id is carried as is; printers resolve it and apply the filter the type holds.
    lower |cx, call| { Ok(crate::lower::cx::Val::Int(cx.lower_int(&call.args[0])?)) }
);

/// The rule of `signal` and `signal_thread`: a signal name literal or number.
fn signal_rule(
    call: &sonde_lang::catalog::CallCheck<'_>,
    sig: &'static str,
) -> Result<Type, Diagnostic> {
    let a = Args::new(call, sig);
    a.arity(1, 1)?;
    if let Some(bytes) = call.const_str(0) {
        let name = String::from_utf8_lossy(&bytes);
        if signal_number(&name).is_none() {
            return Err(a.error(0, "a signal name such as \"SIGKILL\" or a number"));
        }
        return Ok(Type::Void);
    }
    a.int(0, "a signal number or name")?;
    if let Some(n) = call.const_int(0)
        && !(1..=64).contains(&n)
    {
        return Err(a.error(0, "a signal number between 1 and 64"));
    }
    Ok(Type::Void)
}

/// The lowering of `signal` and `signal_thread`: the helper called with the signal's number.
fn lower_signal(
    cx: &mut crate::lower::cx::LowerCx<'_>,
    call: &crate::lower::cx::LowerCall<'_>,
    helper: crate::ir::Intrinsic,
) -> Result<crate::lower::cx::Val, Diagnostic> {
    let arg = &call.args[0];
    let sig = match &arg.kind {
        sonde_lang::ast::ExprKind::Str(b) => {
            let n = signal_number(&String::from_utf8_lossy(b)).unwrap_or(0);
            cx.imm(n)
        }
        _ if matches!(cx.type_of(arg), Type::Str { .. }) => {
            let text = crate::lower::events::literal_text(arg, cx.positional);
            let n = signal_number(&text).unwrap_or(0);
            cx.imm(n)
        }
        _ => cx.lower_int(arg)?,
    };
    cx.call(helper, vec![crate::ir::Operand::Reg(sig)]);
    Ok(crate::lower::cx::Val::None)
}

function!(
    /// `signal(sig)`: sends a signal to the current process (needs `--unsafe`).
    Signal, "signal", "signal(sig)", "Sends a signal (number or name such as \"SIGKILL\") to the current process",
    unsafe = true,
    |call| { signal_rule(call, "signal(sig)") },
    lower |cx, call| { lower_signal(cx, call, crate::ir::Intrinsic::SendSignal) }
);

function!(
    /// `signal_thread(sig)`: sends a signal to the current thread (needs `--unsafe`).
    SignalThread, "signal_thread", "signal_thread(sig)", "Sends a signal (number or name such as \"SIGKILL\") to the current thread",
    unsafe = true,
    |call| { signal_rule(call, "signal_thread(sig)") },
    lower |cx, call| { lower_signal(cx, call, crate::ir::Intrinsic::SendSignalThread) }
);

function!(
    /// `is_err(ptr)`: whether a pointer is a kernel `ERR_PTR` (-4095..-1).
    IsErr, "is_err", "is_err(ptr)", "True when a pointer encodes a kernel error code (ERR_PTR: -4095 to -1), as IS_ERR()",
    unsafe = false,
    |call| {
        let a = Args::new(call, "is_err(ptr)");
        a.arity(1, 1)?;
        match a.ty(0) {
            Type::Ptr { .. } | Type::Int { .. } => Ok(Type::Bool),
            _ => Err(a.error(0, "a pointer or integer")),
        }
    },
    lower |cx, call| {
        let p = cx.lower_int(&call.args[0])?;
        Ok(crate::lower::cx::Val::Int(cx.flag(crate::ir::Cond::UGe, p, crate::ir::Operand::Imm(-4095))))
    }
);

function!(
    /// `write_user(dst, src, len)`: writes `len` bytes of `src` to user memory at `dst`.
    WriteUser, "write_user", "write_user(dst, src, len)",
    "Writes len bytes of a value (src) to the current task's user memory at dst; true on success (needs --unsafe)",
    unsafe = true,
    |call| {
        let a = Args::new(call, "write_user(dst, src, len)");
        a.arity(3, 3)?;
        match a.ty(0) {
            Type::Ptr { .. } | Type::Int { .. } => {}
            _ => return Err(a.error(0, "a user-space pointer")),
        }
        let n = a.const_int(2, "a constant length")?;
        let size = i64::from(a.ty(1).size());
        if n <= 0 || n > size {
            return Err(a.error(2, &format!("a length between 1 and {size} (the size of src)")));
        }
        Ok(Type::Bool)
    },
    lower |cx, call| {
        let dst = cx.lower_int(&call.args[0])?;
        let ty = cx.type_of(&call.args[1]);
        let v = cx.lower_expr(&call.args[1])?;
        let size = ty.size().max(8);
        let buf = cx.alloc_zeroed(size.next_multiple_of(8));
        cx.write_val(v, &ty, buf, 0, ty.size());
        let n = sonde_lang::catalog::const_int(&call.args[2], cx.positional).unwrap_or(0);
        let rc = cx.call(crate::ir::Intrinsic::ProbeWriteUser, vec![
            crate::ir::Operand::Reg(dst), crate::ir::Operand::Reg(buf), crate::ir::Operand::Imm(n),
        ]);
        Ok(crate::lower::cx::Val::Int(cx.flag(crate::ir::Cond::Eq, rc, crate::ir::Operand::Imm(0))))
    }
);

function!(
    /// `bswap(n)`: reverses the byte order of an integer, keeping its type.
    Bswap, "bswap", "bswap(n)", "Reverses the byte order of an integer", unsafe = false,
    |call| {
        let a = Args::new(call, "bswap(n)");
        a.arity(1, 1)?;
        match a.ty(0) {
            t @ Type::Int { .. } => Ok(t.clone()),
            _ => Err(a.error(0, "an integer")),
        }
    },
    lower |cx, call| {
        let v = cx.lower_int(&call.args[0])?;
        // The declared width: a `uint32` variable is stored in 64 bits.
        let bits = match cx.declared_type(&call.args[0]) { Type::Int { bits, .. } => bits, _ => 64 };
        let dst = cx.vreg();
        cx.emit(crate::ir::Inst::Mov { dst, src: crate::ir::Operand::Reg(v) });
        let mut out = cx.imm(0);
        for i in 0..u32::from(bits / 8) {
            let sh = cx.alu(crate::ir::AluOp::LShr, dst, crate::ir::Operand::Imm(i64::from(i * 8)));
            let byte = cx.alu(crate::ir::AluOp::And, sh, crate::ir::Operand::Imm(0xff));
            let placed = cx.alu(crate::ir::AluOp::Shl, byte, crate::ir::Operand::Imm(i64::from(u32::from(bits) - 8 - i * 8)));
            out = cx.alu(crate::ir::AluOp::Or, out, crate::ir::Operand::Reg(placed));
        }
        Ok(crate::lower::cx::Val::Int(out))
    }
);

function!(
    /// `override(rc)`: makes the probed kernel function return `rc` (kprobes; needs `--unsafe`).
    Override, "override", "override(rc)",
    "Makes the probed kernel function return rc instead of running (kprobe only)", unsafe = true,
    |call| {
        let a = Args::new(call, "override(rc)");
        a.arity(1, 1)?;
        a.int(0, "an integer return value")?;
        if call.ctx.provider != "kprobe" {
            return Err(Diagnostic::error(
                "sonde::sema::builtin_unavailable",
                call.span,
                format!("`override` is not available in `{}` probes", call.ctx.provider),
            )
            .with_label("only a kprobe can override its function's return value")
            .with_help("use `override` in a kprobe on a function that allows error injection"));
        }
        Ok(Type::Void)
    },
    lower |cx, call| {
        let rc = cx.lower_int(&call.args[0])?;
        let ctx = cx.ctx();
        cx.call(crate::ir::Intrinsic::OverrideReturn, vec![crate::ir::Operand::Reg(ctx), crate::ir::Operand::Reg(rc)]);
        Ok(crate::lower::cx::Val::None)
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::functions::args::ARG_TYPE;
    use crate::catalog::functions::testutil::{check, check_in, int, lit, val};
    use sonde_lang::catalog::{Function, ProbeContext};

    #[test]
    fn signals() {
        assert_eq!(signal_number("SIGKILL"), Some(9));
        assert_eq!(signal_number("USR1"), Some(10));
        assert_eq!(check(&Signal, vec![lit("SIGTERM")]).unwrap(), Type::Void);
        assert_eq!(check(&Signal, vec![int(9)]).unwrap(), Type::Void);
        assert_eq!(
            check(&Signal, vec![lit("SIGNOPE")]).unwrap_err().code,
            ARG_TYPE
        );
        assert_eq!(check(&Signal, vec![int(99)]).unwrap_err().code, ARG_TYPE);
        assert!(Signal.is_unsafe() && Override.is_unsafe() && !Bswap.is_unsafe());
    }

    #[test]
    fn other_rules() {
        assert_eq!(check(&Bswap, vec![val(Type::U32)]).unwrap(), Type::U32);
        assert_eq!(check(&Bswap, vec![lit("x")]).unwrap_err().code, ARG_TYPE);
        assert_eq!(
            check(&Cgroupid, vec![lit("/sys/fs/cgroup")]).unwrap(),
            Type::U64
        );
        assert_eq!(
            check(&InCgroup, vec![lit("/sys/fs/cgroup")]).unwrap(),
            Type::Bool
        );
        assert_eq!(
            check(&InCgroup, vec![val(Type::U64)]).unwrap_err().code,
            ARG_TYPE
        );
        assert_eq!(
            check(&CgroupPath, vec![val(Type::U64)]).unwrap(),
            Type::CgroupPath { filter: None }
        );
        assert_eq!(
            check(&CgroupPath, vec![val(Type::U64), lit("*")]).unwrap(),
            Type::CgroupPath { filter: None }
        );
        assert_eq!(
            check(&CgroupPath, vec![val(Type::U64), lit("cpu*")]).unwrap(),
            Type::CgroupPath {
                filter: Some("cpu*".into())
            }
        );
        let e = check(&CgroupPath, vec![val(Type::U64), val(Type::U64)]).unwrap_err();
        assert_eq!(e.code, ARG_TYPE);
        assert_eq!(check(&Override, vec![int(1)]).unwrap(), Type::Void);
        let e = check_in(&Override, &ProbeContext::bare("tracepoint"), vec![int(1)]).unwrap_err();
        assert_eq!(e.code, "sonde::sema::builtin_unavailable");
    }
}
