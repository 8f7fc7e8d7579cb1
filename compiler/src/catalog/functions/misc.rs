//! Other functions: `cgroupid`, `cgroup_path`, `signal`, `bswap` and `override`.

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
    /// `cgroupid("/sys/fs/cgroup/...")`: the id of a cgroup v2 path, at compile time.
    Cgroupid, "cgroupid", "cgroupid(path)", "Id of the cgroup v2 at this path (resolved when the program is built)",
    unsafe = false,
    |call| {
        let a = Args::new(call, "cgroupid(path)");
        a.arity(1, 1)?;
        a.literal(0, "a cgroup path string literal")?;
        Ok(Type::U64)
    }
);

function!(
    /// `cgroup_path(id[, filter])`: the path of a cgroup id, resolved when printed.
    CgroupPath, "cgroup_path", "cgroup_path(id[, filter])",
    "Path of a cgroup id (resolved when printed), optionally only in hierarchies matching filter",
    unsafe = false,
    |call| {
        let a = Args::new(call, "cgroup_path(id[, filter])");
        a.arity(1, 2)?;
        a.int(0, "an integer cgroup id")?;
        if a.len() == 2 {
            a.literal(1, "a filter string literal")?;
        }
        Ok(Type::CgroupPath)
    }
);

function!(
    /// `signal(sig)`: sends a signal to the current task (needs `--unsafe`).
    Signal, "signal", "signal(sig)", "Sends a signal (number or name such as \"SIGKILL\") to the current task",
    unsafe = true,
    |call| {
        let a = Args::new(call, "signal(sig)");
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
        let bits = match &call.ty { Type::Int { bits, .. } => *bits, _ => 64 };
        let dst = cx.vreg();
        cx.emit(crate::ir::Inst::Mov { dst, src: crate::ir::Operand::Reg(v) });
        let mut out = cx.imm(0);
        for i in 0..u32::from(bits / 8) {
            let sh = cx.alu(crate::ir::AluOp::LShr, dst, crate::ir::Operand::Imm(i64::from(i * 8)));
            let byte = cx.alu(crate::ir::AluOp::And, sh, crate::ir::Operand::Imm(0xff));
            let placed = cx.alu(crate::ir::AluOp::Shl, byte, crate::ir::Operand::Imm(i64::from(u32::from(bits) - 8 - i * 8)));
            out = cx.alu(crate::ir::AluOp::Or, out, crate::ir::Operand::Reg(placed));
        }
        Ok(crate::lower::Val::Int(out))
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
            check(&CgroupPath, vec![val(Type::U64)]).unwrap(),
            Type::CgroupPath
        );
        assert_eq!(check(&Override, vec![int(1)]).unwrap(), Type::Void);
        let e = check_in(&Override, &ProbeContext::bare("tracepoint"), vec![int(1)]).unwrap_err();
        assert_eq!(e.code, "sonde::sema::builtin_unavailable");
    }
}
