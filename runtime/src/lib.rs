//! sonde runtime: the only crate that touches the kernel or /sys; loads, attaches, reads maps
//! and events, symbolizes, prints.
//!
//! The kernel side: [`load`] (aya `EbpfLoader`, verifier logs turned into diagnostics by
//! [`verifier`]), [`attach`] (one exhaustive `match` on `AttachSpec`), [`trigger`] (BEGIN/END
//! run once through `BPF_PROG_TEST_RUN`), [`maps`] (raw byte access by fd, via [`syscall`])
//! and [`events`] (the ring buffer consumer, over [`ringbuf`]).
//!
//! **Invariant:** the only crate that touches the kernel or `/sys`. It has no knowledge of
//! specific builtins. Every kernel error that can reach a user is a `Diagnostic` on the span
//! of the probe (or instruction) that caused it.

// `Diagnostic` (with its spans, labels and help) is the error type everywhere; boxing it
// would only move the allocation.
#![allow(clippy::result_large_err)]

pub mod attach;
pub mod btf;
pub mod cgroup;
pub mod child;
pub mod clock;
pub mod cpus;
pub mod detach;
pub mod dump;
pub mod elf_symbols;
pub mod engine;
pub mod events;
pub mod features;
pub mod iter;
pub mod iterate;
pub mod kernel_info;
pub mod list;
pub mod live;
pub mod load;
pub mod maps;
pub mod mmap_tracker;
pub mod output;
pub mod perf_uprobe;
pub mod pictures;
pub mod privilege;
pub mod record;
pub mod record_tap;
pub mod replay;
pub mod report;
pub mod resolver;
pub mod ringbuf;
pub mod run;
pub mod selftest;
pub mod session;
pub mod signals;
pub mod stack_map;
pub mod symbols;
pub mod syscall;
pub mod tracefs;
pub mod trigger;
pub mod uprobe_functions;
pub mod uprobe_multi;
pub mod verifier;
pub mod warnings;
pub mod watchpoint;
