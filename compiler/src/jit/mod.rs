//! The native backend: IR → x86-64 (or any host cranelift supports) machine code in this
//! process, for probes that run in userspace (input records, replayed events).
//!
//! Every IR function becomes a cranelift function taking its `params` as `i64`s and returning
//! an `i64` in the host's C calling convention; intrinsics become calls of host functions
//! registered by [`Intrinsic::host_name`]; `FuncAddr` becomes the address of a callback of the
//! same program, which the host calls back as `extern "C" fn(i64, ...) -> i64`.
//!
//! **Invariant:** the generated code computes exactly what the BPF backend's code computes: 64-bit
//! wrapping arithmetic, `x / 0 == 0`, `x % 0 == x`, `i64::MIN / -1 == i64::MIN`,
//! `i64::MIN % -1 == 0`, shift amounts taken mod 64, zero-extending loads, `Set` as
//! `(lhs & rhs) != 0`, a register read before any write reads 0. No arithmetic traps.
//!
//! **Invariant:** compilation never panics on any IR: whatever cranelift refuses, and malformed IR
//! (a jump to an undefined label), is a `sonde::jit::internal` diagnostic.
//!
//! **Invariant:** a call of an intrinsic the host does not provide is a
//! `sonde::jit::unsupported` diagnostic on that call's span, found before any code is run; the
//! JIT never resolves a symbol any other way (no `dlsym` fallback is ever reached).
//!
//! **Invariant:** [`kernel_only_uses`] is pure (no cranelift) and reports exactly the live calls
//! of [`Intrinsic::kernel_only`] intrinsics, the code `compile` would import.
//!
//! **Invariant:** the code lives as long as its [`JitProgram`]; dropping it frees the code, so
//! no [`ProbeFn`] of it may be called afterwards.

mod translate;

#[cfg(test)]
mod tests;

use crate::ir::{Function, Inst, Intrinsic};
use crate::lower::Lowered;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{FuncId, Module, default_libcall_names};
use sonde_lang::diag::Diagnostic;
use sonde_lang::span::Span;
use std::collections::HashMap;

/// A compiled probe: `ctx` is the probe's context pointer (may be null); returns the IR's
/// `Return` value.
pub type ProbeFn = unsafe extern "C" fn(ctx: *mut u8) -> u64;

/// Native code for a script's probes: owns the cranelift module holding the code, which is
/// freed when this is dropped.
pub struct JitProgram {
    /// Always `Some` until `drop`.
    module: Option<JITModule>,
    /// The entry point of each program's `main`.
    entries: Vec<ProbeFn>,
}

impl std::fmt::Debug for JitProgram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JitProgram")
            .field("entries", &self.entries.len())
            .finish()
    }
}

impl JitProgram {
    /// Compiles every program (each `Lowered`'s main function and its callbacks). `host` gives,
    /// for each intrinsic the programs call, the address of the host function registered under
    /// `Intrinsic::host_name()` (an `extern "C" fn` taking `arity()` `i64`s and returning an
    /// `i64`); a call of an intrinsic with no (or a null) host entry is a diagnostic on that
    /// call's span.
    pub fn compile(
        programs: &[Lowered],
        host: &[(&'static str, *const u8)],
    ) -> Result<JitProgram, Diagnostic> {
        compile_programs(programs, host, true)
    }

    /// The entry point of program `i` (its `main`). Panics when `i` is not the index of one of
    /// the compiled programs.
    pub fn entry(&self, i: usize) -> ProbeFn {
        self.entries[i]
    }

    /// Number of programs compiled.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when no program was compiled.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl Drop for JitProgram {
    fn drop(&mut self) {
        if let Some(module) = self.module.take() {
            // SAFETY: the entry points borrow `self`, which is going away: no code of this
            // module can be running or be called after this.
            unsafe { module.free_memory() };
        }
    }
}

/// Diagnostics for IR that userspace cannot run: one per live call of an intrinsic whose
/// [`Intrinsic::kernel_only`] is true, on that instruction's span (code
/// `sonde::jit::kernel_only`). Pure: no cranelift involved, usable by `--check`.
pub fn kernel_only_uses(programs: &[Lowered]) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for p in programs {
        for f in std::iter::once(&p.main).chain(&p.callbacks) {
            let mut live = f.clone();
            crate::ir::cfg::remove_dead_code(&mut live);
            for (inst, span) in &live.insts {
                if let Inst::Call { func, .. } = inst
                    && func.kernel_only()
                {
                    out.push(kernel_only(*func, *span));
                }
            }
        }
    }
    out
}

/// The name users know an intrinsic by: its host name without the `sonde_` prefix.
fn short_name(i: Intrinsic) -> &'static str {
    let n = i.host_name();
    n.strip_prefix("sonde_").unwrap_or(n)
}

fn kernel_only(func: Intrinsic, span: Span) -> Diagnostic {
    let name = short_name(func);
    Diagnostic::error(
        "sonde::jit::kernel_only",
        span,
        format!("`{name}` reads kernel state, which userspace probes cannot access"),
    )
    .with_label(format!("needs `{name}`"))
    .with_help("kernel memory, tasks, cgroups and stacks exist only in kernel probes (tracepoint, uprobe, ...), not in userspace probes (input, replay, or --engine jit)")
}

/// A cranelift failure as a diagnostic.
fn internal(span: Span, what: impl std::fmt::Display) -> Diagnostic {
    Diagnostic::error(
        "sonde::jit::internal",
        span,
        format!("the native code generator failed: {what}"),
    )
    .with_label("while compiling this")
    .with_help("this is a bug in sonde; please report it with the script")
}

fn first_span(f: &Function) -> Span {
    f.insts.first().map(|(_, s)| *s).unwrap_or_default()
}

/// The host ISA with sonde's settings.
fn host_isa() -> Result<cranelift_codegen::isa::OwnedTargetIsa, String> {
    let mut flags = settings::builder();
    let set = |flags: &mut settings::Builder, k: &str, v: &str| {
        flags.set(k, v).map_err(|e| format!("setting {k}={v}: {e}"))
    };
    set(&mut flags, "opt_level", "speed")?;
    set(&mut flags, "regalloc_algorithm", "single_pass")?;
    // cranelift-jit requires these.
    set(&mut flags, "is_pic", "false")?;
    set(&mut flags, "use_colocated_libcalls", "false")?;
    // Nothing unwinds through probes (host functions are `extern "C"`, which aborts on panic).
    set(&mut flags, "unwind_info", "false")?;
    // Frames stay far below a page; should one not, probe the stack inline (no libcall).
    set(&mut flags, "enable_probestack", "true")?;
    set(&mut flags, "probestack_strategy", "inline")?;
    let verify = if cfg!(debug_assertions) {
        "true"
    } else {
        "false"
    };
    set(&mut flags, "enable_verifier", verify)?;
    let isa = cranelift_native::builder().map_err(|e| format!("unsupported host: {e}"))?;
    isa.finish(settings::Flags::new(flags))
        .map_err(|e| e.to_string())
}

/// [`JitProgram::compile`]; `prune` runs `remove_dead_code` first (only tests turn it off, to
/// exercise the translation of unreachable code).
fn compile_programs(
    programs: &[Lowered],
    host: &[(&'static str, *const u8)],
    prune: bool,
) -> Result<JitProgram, Diagnostic> {
    let span0 = programs
        .first()
        .map(|p| first_span(&p.main))
        .unwrap_or_default();
    let isa = host_isa().map_err(|e| internal(span0, e))?;
    // A null address counts as no entry: calling it would crash the process.
    let host_map: HashMap<&str, *const u8> =
        host.iter().copied().filter(|(_, p)| !p.is_null()).collect();
    let mut builder = JITBuilder::with_isa(isa, default_libcall_names());
    builder.symbols(host_map.iter().map(|(n, p)| (*n, *p)));
    let mut prog = JitProgram {
        module: Some(JITModule::new(builder)),
        entries: Vec::with_capacity(programs.len()),
    };
    let module = prog.module.as_mut().expect("module is set until drop");

    // Declare everything first: a program's functions refer to each other by `FuncAddr`.
    let mut ids: Vec<(FuncId, Vec<FuncId>)> = Vec::with_capacity(programs.len());
    for p in programs {
        let declare = |module: &mut JITModule, f: &Function| {
            let sig = translate::signature(module, f.params.len());
            module
                .declare_anonymous_function(&sig)
                .map_err(|e| internal(first_span(f), e))
        };
        let main = declare(module, &p.main)?;
        let callbacks = p
            .callbacks
            .iter()
            .map(|f| declare(module, f))
            .collect::<Result<Vec<_>, _>>()?;
        ids.push((main, callbacks));
    }

    let mut cx = translate::Translator::new(module, &host_map);
    for (p, (main, callbacks)) in programs.iter().zip(&ids) {
        for (f, id) in std::iter::once((&p.main, *main))
            .chain(p.callbacks.iter().zip(callbacks.iter().copied()))
        {
            if prune {
                let mut live = f.clone();
                crate::ir::cfg::remove_dead_code(&mut live);
                cx.define(module, &live, id, callbacks)?;
            } else {
                cx.define(module, f, id, callbacks)?;
            }
        }
    }
    module
        .finalize_definitions()
        .map_err(|e| internal(span0, e))?;
    for (main, _) in &ids {
        let code = module.get_finalized_function(*main);
        // SAFETY: `main` was defined with the signature `fn(i64...) -> i64` in the host's C
        // calling convention; a program's first parameter is its context pointer, and extra
        // parameters (none for programs) would read unspecified registers, never memory.
        let f = unsafe { std::mem::transmute::<*const u8, ProbeFn>(code) };
        prog.entries.push(f);
    }
    Ok(prog)
}
