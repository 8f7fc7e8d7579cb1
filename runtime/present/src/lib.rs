//! sonde-present: what a run prints. Decoded values ([`sonde_compiler::value::Value`]) go in;
//! text, JSON, CSV and folded stacks ([`output`], with bpftrace's stack layouts in
//! [`output::stacks`]), pictures ([`pictures`]: heatmaps, charts, flame graphs) and
//! post-processing reports in rhai ([`report`]) come out.
//!
//! **Invariant:** pure presentation. Nothing here reads the kernel, `/proc` or `/sys`, or
//! knows where a map lives: maps arrive through [`output::MapSource`], names (user names,
//! cgroup paths, symbols) through [`output::Resolver`] and `sonde-system`'s `SymbolSource`,
//! so every printer, picture and report is tested on values alone (and fake symbol tables).
//! The only effects are writes to the destinations it is handed (standard output and error,
//! `-o`, a picture's file) and warnings on `sonde-system`'s channel. Depends on `lang`,
//! `compiler` and, for those traits, `strftime` and the warnings channel, `system`; nothing
//! below it knows how anything prints.

// `Diagnostic` (with its spans, labels and help) is the error type everywhere; boxing it
// would only move the allocation.
#![allow(clippy::result_large_err)]

pub mod output;
pub mod pictures;
pub mod report;
