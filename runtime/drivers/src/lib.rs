//! sonde-drivers: the runs sonde makes of the crates below it. [`run`] (a kernel run: load,
//! BEGIN, attach, the event loop, END and the map printout, in bpftrace's order, with
//! [`iterate`] for iterators and [`selftest`] for `--test`/`--bench`), [`live`] (a script
//! growing entry by entry for `sonde repl`), [`record_tap`] and [`replay`] (`sonde record`,
//! `sonde replay`, on the [`record`] file format), [`resolver`] (names for the printers from
//! the live machine), [`list`] (`-l`), [`dump`] (`-lv`'s types), [`child`] (`-c`, and
//! watching the `-p` process), [`detach_status`] (the line shown while probes detach),
//! [`allocs`] (allocation recordings read back) and [`allocreplay`] (`sonde tool
//! allocreplay`'s producer: the harness run per allocator, its system calls counted).
//!
//! **Invariant:** drivers wire the other crates together and own no mechanism of their own:
//! a kernel facility belongs to `sonde-kernel`, a fact about the machine to `sonde-system`,
//! how something prints to `sonde-present`, the handling of events to `sonde-session`, the
//! userspace engine to `sonde-engine`. Only the `sonde` binary sits above.

// `Diagnostic` (with its spans, labels and help) is the error type everywhere; boxing it
// would only move the allocation.
#![allow(clippy::result_large_err)]

pub mod allocreplay;
pub mod allocs;
pub mod child;
pub mod detach_status;
pub mod dump;
pub mod iterate;
pub mod kernel_maps;
pub mod list;
pub mod live;
pub mod metrics;
pub mod push_folded;
pub mod record;
pub mod record_tap;
pub mod replay;
pub mod resolver;
pub mod run;
pub mod selftest;
