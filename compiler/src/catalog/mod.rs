//! The concrete registries: probe providers, builtin variables, functions and aggregations.
//!
//! Each entry is a unit struct in its own themed file implementing the `sonde_lang::catalog`
//! contract (names, docs, type rule) and the backend trait of this module (attach mechanism or
//! BPF lowering). Adding a probe type, builtin, function or aggregation is one entry in one
//! file plus one line in that directory's `ALL` list.

pub mod aggs;
pub mod builtins;
pub mod functions;
pub mod providers;
pub mod reference;
mod reference_cli;
mod reference_compat;

#[cfg(test)]
mod hygiene_tests;

use crate::context::ContextLayout;
use crate::lower::cx::{LowerCall, LowerCx, Val};
use crate::program::AttachSpec;
use sonde_lang::ast::Program;
use sonde_lang::catalog::{Builtin, Catalog, Function, Provider, ResolvedAttach};
use sonde_lang::diag::Diagnostic;
use sonde_lang::span::Span;
use sonde_lang::types::Type;

/// The compiler side of a probe provider.
pub trait ProviderBackend: Provider {
    /// The kernel mechanism for one concrete attach point.
    fn attach_spec(&self, attach: &ResolvedAttach) -> AttachSpec;
    /// How arguments are read from the program context of one concrete attach point.
    fn context_layout(&self, attach: &ResolvedAttach) -> ContextLayout;
    /// True for probes that only the userspace engine runs (`input`, `replay`).
    fn userspace(&self) -> bool {
        false
    }
    /// True for probes that either engine runs (`BEGIN`, `END`, `interval`): they go with the
    /// script's other probes.
    fn either_engine(&self) -> bool {
        false
    }
}

/// The compiler side of a builtin variable: how its value is computed in a probe.
pub trait BuiltinBackend: Builtin {
    /// Emits IR computing the builtin's value (of checked type `ty`).
    fn lower(&self, cx: &mut LowerCx<'_>, ty: &Type, span: Span) -> Result<Val, Diagnostic> {
        let _ = ty;
        Err(cx.unsupported(span, &format!("`{}`", self.name())))
    }
}

/// The compiler side of a function or aggregation: the code it emits.
pub trait FunctionBackend: Function {
    /// Emits IR for a call (for aggregations, `call.target` holds the map and key).
    fn lower(&self, cx: &mut LowerCx<'_>, call: &LowerCall<'_>) -> Result<Val, Diagnostic> {
        Err(cx.unsupported(call.span, &format!("`{}()`", self.name())))
    }
}

/// sonde's real catalog.
#[derive(Clone, Copy, Debug, Default)]
pub struct SondeCatalog;

impl SondeCatalog {
    /// The provider backend with this name or alias.
    pub fn provider_backend(&self, name: &str) -> Option<&'static dyn ProviderBackend> {
        providers::ALL
            .iter()
            .copied()
            .find(|p| p.names().contains(&name))
    }
    /// The builtin backend with this name.
    pub fn builtin_backend(&self, name: &str) -> Option<&'static dyn BuiltinBackend> {
        let name = sonde_lang::catalog::builtin_name(name);
        builtins::ALL.iter().copied().find(|b| b.name() == name)
    }
    /// The function backend with this name (aggregations included).
    pub fn function_backend(&self, name: &str) -> Option<&'static dyn FunctionBackend> {
        functions::ALL
            .iter()
            .chain(aggs::ALL.iter())
            .copied()
            .find(|f| f.name() == name)
    }
}

/// The builtin a bare name (or `name()`) refers to in `program`: the catalog's, unless it
/// yields to definitions and the script defines the name itself (an enumerator or a
/// `#define`), as the checker resolves it.
pub fn builtin_of(
    program: &Program,
    constants: &sonde_lang::sema::constants::Constants,
    name: &str,
) -> Option<&'static dyn BuiltinBackend> {
    let b = SondeCatalog.builtin_backend(name)?;
    let defined = || {
        constants.is_defined(name)
            || program
                .c_defs
                .iter()
                .any(|d| d.enumerators.iter().any(|(n, _)| n == name))
    };
    (!(b.yields_to_definitions() && defined())).then_some(b)
}

impl Catalog for SondeCatalog {
    fn providers(&self) -> Vec<&dyn Provider> {
        providers::ALL.iter().map(|p| *p as &dyn Provider).collect()
    }
    fn builtins(&self) -> Vec<&dyn Builtin> {
        builtins::ALL.iter().map(|b| *b as &dyn Builtin).collect()
    }
    fn functions(&self) -> Vec<&dyn Function> {
        functions::ALL
            .iter()
            .chain(aggs::ALL.iter())
            .map(|f| *f as &dyn Function)
            .collect()
    }
}
