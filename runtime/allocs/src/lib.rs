//! Allocation record and replay (`sonde tool allocrecord`, `sonde tool allocreplay`): a
//! program's malloc-family calls, as recorded by uprobes, replayed call for call against
//! other allocators in a harness process and measured side by side.
//!
//! [`ops`] is the contract between the two halves: the recording's calls, completed and in
//! order, as the reader of an allocation recording (`sonde_drivers::allocs`) produces them
//! and the replay consumes them. [`plan`] turns them into what a replay runs (block lives as
//! slots, per-thread steps in the global order, what cannot be replayed counted apart),
//! [`planfile`] is its binary form, [`harness`] the process that replays it and measures
//! itself, [`results`] what it measured, and [`allocators`] the allocators it can run
//! against (glibc's, Debian's jemalloc and tcmalloc, a library by path).
//!
//! *Invariant:* no kernel facility and no printing: the harness is a plain process that calls
//! the allocator it was started with (`LD_PRELOAD`) and measures itself; what it measured is
//! data for the caller to print.

pub mod allocators;
pub mod harness;
pub mod ops;
pub mod plan;
pub mod planfile;
pub mod results;
