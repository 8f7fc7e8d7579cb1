//! The call forms of the stack builtins: `kstack(mode)`, `kstack(limit)`, `kstack(mode, limit)`
//! and the same for `ustack`. The bare `kstack`/`ustack` are builtins (`builtins::stack`); a
//! call with arguments resolves here.
//!
//! The mode is a bare identifier (`bpftrace`, `perf`, `raw`, `build_id`) read from the
//! expression: the checker must not resolve it as a variable. Without one, the mode is the
//! `stack_mode` config's; `build_id` is for user stacks only (bpftrace's rule).

use super::args::Args;
use super::function;
use crate::catalog::builtins::stack::MAX_STACK_FRAMES;
use sonde_lang::ast::ExprKind;
use sonde_lang::catalog::CallCheck;
use sonde_lang::diag::Diagnostic;
use sonde_lang::types::{StackMode, Type};

/// The shared rule of `kstack(...)` and `ustack(...)`.
fn stack_call(call: &CallCheck<'_>, sig: &'static str, kernel: bool) -> Result<Type, Diagnostic> {
    let a = Args::new(call, sig);
    a.arity(0, 2)?;
    let mut mode = call.stack_mode;
    let mut limit = MAX_STACK_FRAMES;
    let mut next = 0;
    if let Some(ExprKind::Ident(name)) = a.expr(0).map(|e| &e.kind) {
        mode = StackMode::from_word(name)
            .ok_or_else(|| a.error(0, "a stack mode: `bpftrace`, `perf`, `raw` or `build_id`"))?;
        next = 1;
    }
    if a.len() > next {
        let n = a.const_int(next, "a constant frame limit")?;
        if !(1..=i64::from(MAX_STACK_FRAMES)).contains(&n) {
            return Err(a.error(
                next,
                &format!("a frame limit between 1 and {MAX_STACK_FRAMES}"),
            ));
        }
        limit = n as u32;
        next += 1;
    }
    if a.len() > next {
        return Err(a.error(next, "nothing: the mode comes before the limit"));
    }
    if kernel && mode == StackMode::BuildId {
        return Err(Diagnostic::error(
            super::args::ARG_TYPE,
            call.span,
            "'build_id' stack mode can only be used for ustack",
        )
        .with_label("a kernel stack has no build ids")
        .with_help("use `kstack(raw)` for the raw addresses, or `ustack(build_id)`"));
    }
    Ok(Type::Stack {
        kernel,
        mode,
        limit,
    })
}

function!(
    /// `kstack(mode, limit)`: the kernel stack with a print mode and frame limit.
    KstackFn, "kstack", "kstack([mode][, limit])",
    "Kernel stack trace with a print mode (bpftrace, perf, raw; default the stack_mode config) and a frame limit (1..127)", unsafe = false, unchecked = &[0, 1],
    |call| { stack_call(call, "kstack([mode][, limit])", true) },
    lower |cx, call| { Ok(crate::lower::cx::Val::Int(crate::catalog::builtins::stack::lower_stack(cx, &call.ty))) }
);

function!(
    /// `ustack(mode, limit)`: the user stack with a print mode and frame limit.
    UstackFn, "ustack", "ustack([mode][, limit])",
    "User stack trace with a print mode (bpftrace, perf, raw, or build_id: the build id of each frame's file and the offset in it; default the stack_mode config) and a frame limit (1..127): the limit counts addresses, and the functions inlined at one print as lines of their own (show_debug_info)", unsafe = false, unchecked = &[0, 1],
    |call| { stack_call(call, "ustack([mode][, limit])", false) },
    lower |cx, call| { Ok(crate::lower::cx::Val::Int(crate::catalog::builtins::stack::lower_stack(cx, &call.ty))) }
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::functions::args::ARG_TYPE;
    use crate::catalog::functions::testutil::{arg_span, check, ident, int};

    #[test]
    fn stack_forms() {
        assert_eq!(
            check(&KstackFn, vec![ident("perf"), int(10)]).unwrap(),
            Type::Stack {
                kernel: true,
                mode: StackMode::Perf,
                limit: 10
            }
        );
        assert_eq!(
            check(&UstackFn, vec![int(5)]).unwrap(),
            Type::Stack {
                kernel: false,
                mode: StackMode::Bpftrace,
                limit: 5
            }
        );
        assert_eq!(
            check(&UstackFn, vec![ident("raw")]).unwrap(),
            Type::Stack {
                kernel: false,
                mode: StackMode::Raw,
                limit: 127
            }
        );
        assert_eq!(
            check(&UstackFn, vec![ident("build_id"), int(3)]).unwrap(),
            Type::Stack {
                kernel: false,
                mode: StackMode::BuildId,
                limit: 3
            }
        );
        let e = check(&KstackFn, vec![ident("build_id")]).unwrap_err();
        assert_eq!(
            e.message,
            "'build_id' stack mode can only be used for ustack"
        );
        let e = check(&KstackFn, vec![ident("fancy")]).unwrap_err();
        assert_eq!((e.code, e.span), (ARG_TYPE, arg_span(0)));
        assert_eq!(
            check(&KstackFn, vec![int(500)]).unwrap_err().span,
            arg_span(0)
        );
        assert_eq!(
            check(&KstackFn, vec![int(5), ident("perf")])
                .unwrap_err()
                .code,
            ARG_TYPE
        );
    }
}
