//! Stack builtins: `kstack` and `ustack` (bpftrace mode, up to 127 frames). The forms with a
//! mode and a frame limit (`kstack(perf, 10)`) are functions of the same names
//! (`functions::stack`).

use crate::catalog::BuiltinBackend;
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
        "Kernel stack trace of the current task (bpftrace format, up to 127 frames)"
    }
    fn check(&self, _: &ProbeContext, _: Span) -> Result<Type, Diagnostic> {
        Ok(Type::Stack { kernel: true, mode: StackMode::Bpftrace, limit: MAX_STACK_FRAMES })
    }
}

impl BuiltinBackend for Kstack {}

/// `ustack`: the user stack of the current task.
pub struct Ustack;

impl Builtin for Ustack {
    fn name(&self) -> &'static str {
        "ustack"
    }
    fn doc(&self) -> &'static str {
        "User stack trace of the current task (bpftrace format, up to 127 frames)"
    }
    fn check(&self, _: &ProbeContext, _: Span) -> Result<Type, Diagnostic> {
        Ok(Type::Stack { kernel: false, mode: StackMode::Bpftrace, limit: MAX_STACK_FRAMES })
    }
}

impl BuiltinBackend for Ustack {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_stacks() {
        let ctx = ProbeContext::bare("profile");
        assert_eq!(
            Kstack.check(&ctx, Span::default()).unwrap(),
            Type::Stack { kernel: true, mode: StackMode::Bpftrace, limit: 127 }
        );
        assert_eq!(
            Ustack.check(&ctx, Span::default()).unwrap(),
            Type::Stack { kernel: false, mode: StackMode::Bpftrace, limit: 127 }
        );
    }
}
