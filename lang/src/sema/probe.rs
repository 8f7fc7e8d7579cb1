//! The per-probe checker: state shared by the expression and statement checks, and the pass
//! over all probes.

use super::errors::Diags;
use super::maps::Maps;
use super::resolve::Defs;
use super::scope::Scopes;
use super::{CheckOptions, CheckedProbe, Config, ProbeInstance, TypeTable};
use crate::ast::{Block, Expr, ExprKind, Program, StmtKind};
use crate::catalog::{Catalog, ProbeContext, ResolvedAttach};
use crate::ctypes::{is_opaque, record_ref};
use crate::diag::Diagnostic;
use crate::kernel::KernelInfo;
use crate::types::{Record, Type};
use std::sync::Arc;

/// Program-wide state of a check.
pub(crate) struct Globals<'a> {
    /// The registries.
    pub catalog: &'a dyn Catalog,
    /// Kernel facts.
    pub kernel: &'a dyn KernelInfo,
    /// Positional parameters and `--unsafe`.
    pub options: &'a CheckOptions,
    /// The config block.
    pub config: Config,
    /// The script's C definitions.
    pub defs: Defs,
    /// Map types.
    pub maps: Maps,
    /// Diagnostics so far.
    pub diags: Diags,
    /// The widest integer assigned to each map.
    pub map_widths: super::widths::Widths,
    /// The script's macros (a call none of them took is checked as a function's).
    pub macros: &'a [crate::ast::MacroDef],
}

/// Checks one probe body in one probe context.
pub(crate) struct ProbeChecker<'g, 'a> {
    /// Program-wide state.
    pub g: &'g mut Globals<'a>,
    /// What the body may use.
    pub ctx: &'g ProbeContext,
    /// The types found.
    pub table: TypeTable,
    /// Scratch variables in scope.
    pub scopes: Scopes,
    /// Depth of enclosing `while`/`for` loops.
    pub loop_depth: u32,
    /// Depth of enclosing `typeof(...)` operands (checked, never evaluated).
    pub typeof_depth: u32,
    /// Variables tied by `let $y: typeof($x)` while `$x` had no type yet: the first of the
    /// two to get one gives it to the other.
    pub typeof_ties: Vec<(String, String)>,
    /// Variables defined with a written type (`let $x: string[3]`), which values must fit.
    pub written_types: std::collections::HashSet<String>,
    /// The widest integer assigned to each variable.
    pub var_widths: super::widths::Widths,
    /// The variables and maps read, for their widths.
    pub reads: super::widths::Reads,
}

/// Checks every probe once per distinct probe context.
pub(crate) fn run_pass(
    g: &mut Globals<'_>,
    program: &Program,
    attaches: &[Vec<ResolvedAttach>],
) -> Vec<CheckedProbe> {
    let mut out = Vec::new();
    for (index, (probe, resolved)) in program.probes.iter().zip(attaches).enumerate() {
        if resolved.is_empty() {
            // The attach point's error is reported; the maps this probe assigns must not
            // also be reported as never assigned.
            let mut names = Vec::new();
            assigned_maps(&probe.body, &mut names);
            for name in names {
                g.maps.poison(&name, probe.span);
            }
            continue;
        }
        let mut tables: Vec<(&ProbeContext, Arc<TypeTable>)> = Vec::new();
        let mut instances = Vec::with_capacity(resolved.len());
        for ra in resolved {
            let types = match tables.iter().find(|(c, _)| **c == ra.ctx) {
                Some((_, t)) => t.clone(),
                None => {
                    let mut pc = ProbeChecker {
                        g,
                        ctx: &ra.ctx,
                        table: TypeTable::default(),
                        scopes: Scopes::default(),
                        loop_depth: 0,
                        typeof_depth: 0,
                        typeof_ties: Vec::new(),
                        written_types: Default::default(),
                        var_widths: Default::default(),
                        reads: Default::default(),
                    };
                    pc.probe(probe);
                    let mut table = pc.table;
                    table.widths = pc.reads.resolve(&pc.var_widths, &pc.g.map_widths);
                    let shared = tables
                        .iter()
                        .map(|(_, t)| t)
                        .find(|t| ***t == table)
                        .cloned();
                    let arc = shared.unwrap_or_else(|| Arc::new(table));
                    tables.push((&ra.ctx, arc.clone()));
                    arc
                }
            };
            instances.push(ProbeInstance {
                attach: ra.clone(),
                types,
            });
        }
        out.push(CheckedProbe { index, instances });
    }
    out
}

/// Names of the maps that `block` assigns (`@m = v`, `@m op= v`, `@m++`), nested blocks included.
fn assigned_maps(block: &Block, out: &mut Vec<String>) {
    for s in &block.stmts {
        match &s.kind {
            StmtKind::Assign { target, .. } => map_name(target, out),
            StmtKind::Expr(Expr {
                kind: ExprKind::IncDec { target, .. },
                ..
            }) => map_name(target, out),
            StmtKind::If { then, else_, .. } => {
                assigned_maps(then, out);
                if let Some(b) = else_ {
                    assigned_maps(b, out);
                }
            }
            StmtKind::While { body, .. }
            | StmtKind::Unroll { body, .. }
            | StmtKind::ForMap { body, .. }
            | StmtKind::ForRange { body, .. } => assigned_maps(body, out),
            _ => {}
        }
    }
}

fn map_name(e: &Expr, out: &mut Vec<String>) {
    if let ExprKind::Map { name, .. } = &e.kind {
        out.push(name.clone());
    }
}

impl ProbeChecker<'_, '_> {
    /// Checks the predicate and the body of `probe`.
    fn probe(&mut self, probe: &crate::ast::Probe) {
        self.scopes.push();
        if let Some(pred) = &probe.predicate {
            self.condition(pred);
        }
        self.block(&probe.body);
        self.pop_scope();
    }

    /// Ends the innermost scope; a variable declared in it (`let $x;`) and never assigned is
    /// bpftrace 0.27's warning.
    pub fn pop_scope(&mut self) {
        for (name, at) in self.scopes.pop() {
            self.report(
                Diagnostic::warning(
                    super::errors::NEVER_ASSIGNED,
                    at,
                    format!("Variable ${name} was never assigned to."),
                )
                .with_label("declared here, given no value")
                .with_help(format!(
                    "assign it (`${name} = ...`) or remove the declaration"
                )),
            );
        }
    }

    /// Reports a diagnostic.
    pub fn report(&mut self, d: Diagnostic) {
        self.g.diags.push(d);
    }

    /// Records the type of `e` and returns it.
    pub fn set(&mut self, e: &Expr, t: Type) -> Option<Type> {
        self.table.exprs.insert(e.id, t.clone());
        Some(t)
    }

    /// Fills in an opaque record (known by name only) from the script or the kernel.
    pub fn complete_record(&self, r: &Arc<Record>) -> Arc<Record> {
        if !is_opaque(r) {
            return r.clone();
        }
        record_ref(r)
            .and_then(|(kind, tag)| self.g.defs.record(self.g.kernel, kind, tag))
            .unwrap_or_else(|| r.clone())
    }
}
