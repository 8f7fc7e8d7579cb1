//! sonde-present: what a run prints. Decoded values ([`sonde_compiler::value::Value`]) go in;
//! text, JSON, CSV and folded stacks ([`output`]), pictures ([`pictures`]: heatmaps, charts,
//! flame graphs), post-processing reports in rhai ([`report`]) and run-time warnings
//! ([`warnings`]) come out.
//!
//! **Invariant:** pure presentation. Nothing here reads the kernel, `/proc` or `/sys`, or
//! knows where a map lives: maps arrive through [`output::MapSource`], names (symbols, user
//! names, cgroup paths) through [`output::Resolver`], so every printer, picture and report is
//! tested on values alone. The only effects are writing to the destinations it is handed
//! (standard output and error, `-o`, a picture's file). Depends on `lang` and `compiler`
//! only.

// `Diagnostic` (with its spans, labels and help) is the error type everywhere; boxing it
// would only move the allocation.
#![allow(clippy::result_large_err)]

pub mod output;
pub mod pictures;
pub mod report;
