//! sonde-kernel: the kernel's BPF and perf facilities. [`load`] (aya's `EbpfLoader`, verifier
//! logs turned into diagnostics by [`verifier`]), [`attach`] (one exhaustive `match` on
//! `AttachSpec`; [`uprobe_multi`], [`perf_uprobe`], [`watchpoint`] and [`iter`] for the
//! mechanisms aya lacks) and [`detach`]; [`trigger`] (BEGIN/END run once through
//! `BPF_PROG_TEST_RUN`); [`maps`] (raw byte access by fd, via [`syscall`]) and
//! [`stack_map`]; [`events`] (the ring buffer consumer, over [`ringbuf`]); [`mmap_tracker`]
//! (the perf rings reporting process mappings); [`features`] (`--info`) and [`privilege`];
//! [`bpffs`] (a bpffs of the process's own, mounted nowhere, for a live session's pins).
//!
//! **Invariant:** the only crate that calls `bpf()`, `perf_event_open` and their kin. It has
//! no knowledge of specific builtins and prints nothing but warnings (on `sonde-system`'s
//! channel); it does not depend on the printers. Every kernel error that
//! can reach a user is a `Diagnostic` on the span of the probe (or instruction) that caused
//! it.

// `Diagnostic` (with its spans, labels and help) is the error type everywhere; boxing it
// would only move the allocation.
#![allow(clippy::result_large_err)]

pub mod attach;
pub mod attach_errors;
pub mod bpffs;
pub mod detach;
pub mod errors;
pub mod events;
pub mod features;
pub mod iter;
pub mod link;
pub mod load;
pub mod maps;
pub mod mmap_tracker;
pub mod perf_uprobe;
pub mod privilege;
pub mod ringbuf;
pub mod stack_map;
pub mod syscall;
pub mod trigger;
pub mod unavailable;
pub mod uprobe_multi;
pub mod verifier;
pub mod watchpoint;
