//! The sonde language front end: AST, parser, type checker and diagnostics.
//!
//! **Invariant:** no BPF, no IO, no aya. Kernel facts arrive through [`kernel::KernelInfo`];
//! probe types, builtins and functions through [`catalog::Catalog`]. The checker reports
//! everything it finds and never panics on user input. No pest `Pair` escapes [`syntax`].

#![allow(clippy::result_large_err)]

pub mod ast;
pub mod catalog;
pub mod ctypes;
pub mod diag;
pub mod format;
pub mod glob;
pub mod kernel;
pub mod limits;
pub mod numbers;
pub mod sema;
pub mod span;
pub mod syntax;
#[doc(hidden)]
pub mod testing;
pub mod types;

pub use diag::Diagnostic;
pub use span::Span;
