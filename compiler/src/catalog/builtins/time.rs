//! Time builtins: `nsecs`, `elapsed` and `jiffies`.

use super::process::fixed_builtin;
use crate::catalog::BuiltinBackend;
use crate::ir::{AluOp, Intrinsic, Operand};
use sonde_lang::catalog::{Builtin, ProbeContext};
use sonde_lang::diag::Diagnostic;
use sonde_lang::span::Span;
use sonde_lang::types::Type;

fixed_builtin!(
    /// `nsecs`: nanoseconds since boot (`bpf_ktime_get_boot_ns`).
    Nsecs, "nsecs", "Nanoseconds since boot", Type::U64,
    |cx| cx.call(Intrinsic::KtimeGetBootNs, vec![])
);
fixed_builtin!(
    /// `elapsed`: nanoseconds since the program started.
    Elapsed, "elapsed", "Nanoseconds since the program started", Type::U64,
    |cx| {
        let now = cx.call(Intrinsic::KtimeGetBootNs, vec![]);
        cx.alu(AluOp::Sub, now, Operand::Imm(cx.options.start_ns as i64))
    }
);
fixed_builtin!(
    /// `jiffies`: the kernel's jiffies counter.
    Jiffies, "jiffies", "The kernel's jiffies counter", Type::U64,
    |cx| cx.call(Intrinsic::Jiffies, vec![])
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_builtins_are_u64() {
        let ctx = ProbeContext::bare("profile");
        for b in [&Nsecs as &dyn Builtin, &Elapsed, &Jiffies] {
            assert_eq!(
                b.check(&ctx, Span::default()).unwrap(),
                Type::U64,
                "{}",
                b.name()
            );
        }
    }
}
