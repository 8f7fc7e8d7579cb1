//! Lowering: checked AST → IR, one IR function per group of probe instances that share
//! their types. Builtins and functions lower themselves through their catalog entries
//! (`BuiltinBackend::lower`, `FunctionBackend::lower`) using the [`LowerCx`] helpers.

mod arith;
pub mod byte_loops;
mod callbacks;
pub mod cx;
pub mod events;
mod expr;
mod helper_errors;
pub mod maps;
mod memory;
pub mod reuse;
mod stmt;
pub mod strings;
mod subprograms;

pub use cx::{LowerCall, LowerCx, PlaceSpace, Val};

use crate::ir::{Function, Inst, Intrinsic, Operand, VReg, Width};
use crate::program::EventSpec;
use maps::MapTable;
use sonde_lang::ast::Program;
use sonde_lang::catalog::ResolvedAttach;
use sonde_lang::diag::Diagnostic;
use sonde_lang::sema::TypeTable;
use sonde_lang::span::Span;
use std::collections::HashMap;

/// Inputs shared by the lowering of every probe of a script.
pub struct ScriptCx<'a> {
    /// The parsed program.
    pub program: &'a Program,
    /// Compile options (positional parameters, `-p`, `-c`, ...).
    pub options: &'a crate::options::CompileOptions,
    /// Kernel facts (symbol addresses for `kaddr()`/`uaddr()`).
    pub kernel: &'a dyn sonde_lang::kernel::KernelInfo,
    /// The script's named constants (`#define`s, its headers'), as the checker saw them.
    pub constants: &'a sonde_lang::sema::constants::Constants,
    /// The `max_strlen` config value (bytes of strings read without a length).
    pub max_strlen: u32,
    /// The script's settings (the `config` record's values).
    pub config: &'a sonde_lang::sema::Config,
}

/// One probe instance group to lower.
pub struct ProbeTarget<'a> {
    /// Index of the probe in the program.
    pub probe_index: usize,
    /// The first concrete attach point of the group (context and names).
    pub attach: &'a ResolvedAttach,
    /// The group's types.
    pub types: &'a TypeTable,
    /// How the provider's context is laid out.
    pub layout: crate::context::ContextLayout,
    /// The function's name (its ELF symbol).
    pub name: &'a str,
}

/// The scratch variables of `probe` whose address is taken (`&$x`).
fn addr_taken_vars(probe: &sonde_lang::ast::Probe) -> std::collections::HashSet<String> {
    use sonde_lang::ast::{Expr, ExprKind, UnOp};
    fn walk(e: &Expr, out: &mut std::collections::HashSet<String>) {
        if let ExprKind::Unary {
            op: UnOp::AddrOf,
            expr,
        } = &e.kind
            && let ExprKind::Var(name) = &expr.kind
        {
            out.insert(name.clone());
        }
        e.children().into_iter().for_each(|c| walk(c, out));
    }
    let mut out = std::collections::HashSet::new();
    probe.predicate.iter().for_each(|p| walk(p, &mut out));
    for s in &probe.body.stmts {
        s.exprs().into_iter().for_each(|e| walk(e, &mut out));
    }
    out
}

/// Lowers one probe (predicate and body) for one group of instances into an IR function.
pub fn lower_probe(
    script: &ScriptCx<'_>,
    target: &ProbeTarget<'_>,
    maps: &mut MapTable,
    events: &mut Vec<EventSpec>,
) -> Result<Lowered, Diagnostic> {
    let ProbeTarget {
        probe_index,
        attach,
        types,
        layout,
        name,
    } = *target;
    let probe = &script.program.probes[probe_index];
    let mut f = Function::new(name);
    let ctx = f.vreg();
    f.params = vec![ctx];
    f.ctx = Some(ctx);
    let exit_label = f.label();
    let mut cx = LowerCx {
        f,
        program: script.program,
        types,
        attach,
        maps,
        events,
        positional: &script.options.positional,
        options: script.options,
        kernel: script.kernel,
        constants: script.constants,
        max_strlen: script.max_strlen,
        config: script.config,
        layout,
        span: probe.span,
        vars: HashMap::new(),
        addr_taken: addr_taken_vars(probe),
        stable_vars: reuse::single_assigned_vars(probe),
        loops: Vec::new(),
        stack_used: 0,
        scratch_used: 0,
        scratch_peak: 0,
        scratch_pinned: 0,
        scratch_overflow: None,
        event_area: None,
        scratch_ptr: None,
        exit_label,
        stack_budget: cx::STACK_BUDGET,
        callbacks: Vec::new(),
        loop_frame: None,
        probe_index,
        agg_skip: None,
        ret_slot: None,
        reuse: Vec::new(),
        first_jump: HashMap::new(),
        forward_labels: Default::default(),
        stack_taken: Vec::new(),
        place: None,
        stack_free: Vec::new(),
        last_stack_alloc: None,
        place_spans: HashMap::new(),
        updating: false,
    };
    if let Some(pid) = script
        .options
        .filter_pid
        .filter(|_| filters_by_pid(attach.ctx.provider))
    {
        let t = cx.pid_tgid();
        let tgid = cx.alu(crate::ir::AluOp::LShr, t, Operand::Imm(32));
        cx.branch(
            crate::ir::Cond::Ne,
            tgid,
            Operand::Imm(pid.into()),
            exit_label,
        );
    }
    if let Some(me) = script
        .options
        .exclude_pid
        .filter(|_| runs_in_user_code(attach.ctx.provider))
        .filter(|_| script.options.filter_pid.is_none())
    {
        let t = cx.pid_tgid();
        let tgid = cx.alu(crate::ir::AluOp::LShr, t, Operand::Imm(32));
        cx.branch(
            crate::ir::Cond::Eq,
            tgid,
            Operand::Imm(me.into()),
            exit_label,
        );
    }
    // END runs after exit(); each `test:`/`bench:` probe is run on its own by `--test`/
    // `--bench`, whatever the one before did.
    if !matches!(attach.ctx.provider, "END" | "test" | "bench")
        && script.program.probes.iter().any(calls_exit)
    {
        events::return_after_exit(&mut cx);
    }
    // `delta` takes the firing's time (and measures the per-thread clock) once: before the
    // predicate when it uses `delta`, else after it.
    let delta = crate::catalog::builtins::delta::uses(script.program, script.constants, probe);
    if delta.before_predicate() {
        crate::catalog::builtins::delta::start(&mut cx, delta);
    }
    if let Some(pred) = &probe.predicate {
        cx.lower_cond(pred, exit_label)?;
    }
    if delta.any() && !delta.before_predicate() {
        crate::catalog::builtins::delta::start(&mut cx, delta);
    }
    cx.lower_block(&probe.body)?;
    cx.check_code_size()?;
    cx.check_scratch_size()?;
    cx.span = Span::new(probe.body.span.end.saturating_sub(1), probe.body.span.end);
    cx.place_label(exit_label);
    cx.emit(Inst::Return {
        value: Operand::Imm(0),
    });
    cx.finish_shared();
    let (scratch_ptr, scratch_used) = (cx.scratch_ptr, cx.scratch_peak);
    let callbacks = std::mem::take(&mut cx.callbacks);
    let mut f = cx.f;
    if let Some(base) = scratch_ptr {
        let map = maps.scratch_map(scratch_used);
        prepend_scratch_lookup(&mut f, base, map, exit_label);
    }
    for func in std::iter::once(&f).chain(&callbacks) {
        debug_assert_eq!(
            crate::ir::verify(func),
            Ok(()),
            "{}",
            crate::ir::print_function(func, None)
        );
    }
    Ok(Lowered { main: f, callbacks })
}

/// A lowered probe: its program function and the callbacks it passes to helpers.
#[derive(Clone, Debug)]
pub struct Lowered {
    /// The program.
    pub main: Function,
    /// Loop bodies run as callbacks (`FuncAddr` indexes this list).
    pub callbacks: Vec<Function>,
}

/// Puts the lookup of the per-CPU scratch map (into `base`) at the start of `f`, leaving
/// through `bail` if it fails.
pub(crate) fn prepend_scratch_lookup(
    f: &mut Function,
    base: VReg,
    map: crate::ir::MapRef,
    bail: crate::ir::Label,
) {
    let span = f.insts.first().map(|(_, s)| *s).unwrap_or_default();
    let body = std::mem::take(&mut f.insts);
    let key_slot = f.slot(8);
    let key = f.vreg();
    let h = f.vreg();
    f.push(
        Inst::SlotAddr {
            dst: key,
            slot: key_slot,
        },
        span,
    );
    f.push(
        Inst::Store {
            base: key,
            offset: 0,
            src: Operand::Imm(0),
            width: Width::W64,
        },
        span,
    );
    f.push(Inst::MapHandle { dst: h, map }, span);
    f.push(
        Inst::Call {
            dst: Some(base),
            func: Intrinsic::MapLookup,
            args: vec![Operand::Reg(h), Operand::Reg(key)],
        },
        span,
    );
    f.push(
        Inst::Branch {
            cond: crate::ir::Cond::Eq,
            lhs: base,
            rhs: Operand::Imm(0),
            target: bail,
        },
        span,
    );
    f.insts.extend(body);
}

/// Whether `-p PID` filters a probe of this provider (not BEGIN/END/interval, nor the probes
/// sonde runs in its own task, nor watchpoints, which are put on the process's threads, nor
/// iterators, which run in sonde's task over the objects their link selects).
/// Whether `probe` calls `exit()` (in its predicate or body; macros are expanded by now).
fn calls_exit(probe: &sonde_lang::ast::Probe) -> bool {
    fn any(e: &sonde_lang::ast::Expr) -> bool {
        matches!(&e.kind, sonde_lang::ast::ExprKind::Call { name, .. } if name.name == "exit")
            || e.children().into_iter().any(any)
    }
    probe.predicate.as_ref().is_some_and(any)
        || probe.body.stmts.iter().flat_map(|s| s.exprs()).any(any)
}

/// Probes that fire in the code of whatever process runs it (a library's function, a USDT
/// marker): sonde's own process among them, which [`CompileOptions::exclude_pid`] leaves out.
///
/// [`CompileOptions::exclude_pid`]: crate::options::CompileOptions::exclude_pid
fn runs_in_user_code(provider: &str) -> bool {
    matches!(provider, "uprobe" | "uretprobe" | "usdt")
}

fn filters_by_pid(provider: &str) -> bool {
    !matches!(
        provider,
        "BEGIN"
            | "END"
            | "interval"
            | "input"
            | "replay"
            | "self"
            | "test"
            | "bench"
            | "watchpoint"
            | "iter"
    )
}
