//! The sonde compiler: checked AST → IR → eBPF bytecode → ELF object.
//!
//! **Invariant:** no aya and no syscalls. Deterministic: the same script plus the same
//! `KernelInfo` gives the same bytes. Everything the runtime needs is in
//! [`program::CompiledScript`].

// `Diagnostic` (with its spans, labels and help) is the error type everywhere; boxing it
// would only move the allocation.
#![allow(clippy::result_large_err)]

pub mod bpf;
pub mod btf;
pub mod catalog;
pub mod codegen;
pub mod compile;
pub mod context;
pub mod elf;
pub mod enums;
pub mod gfp;
pub mod ir;
pub mod jit;
pub mod lower;
pub mod options;
pub mod program;
pub mod value;
