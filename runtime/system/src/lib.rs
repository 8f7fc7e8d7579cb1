//! sonde-system: what this machine is and where sonde's process stands in it. The kernel's
//! types and tracepoints ([`btf`], [`tracefs`], and [`kernel_info`], which turns them into
//! the checker's `KernelInfo` with DWARF, USDT notes and uprobe targets), symbols of ELF
//! files, of the kernel and of processes ([`elf_symbols`], [`uprobe_functions`],
//! [`symbols`]), cgroups ([`cgroup`]), CPUs ([`cpus`]), clocks ([`clock`]), and the
//! process's own channels: the stop request of SIGINT/SIGTERM ([`signals`]) and run-time
//! warnings on stderr ([`warnings`]); files the user names, checked and read with a bound
//! ([`user_files`]).
//!
//! **Invariant:** reads files (`/sys`, `/proc`, ELF and debug files) and asks the kernel
//! nothing through `bpf()` or `perf_event_open` (that is `sonde-kernel`'s job: facts the
//! kernel reports as events, such as new mappings, reach [`symbols`] through the
//! [`symbols::MappingFeed`] trait). It knows nothing of how values print. Depends on `lang`
//! and `compiler` only.

// `Diagnostic` (with its spans, labels and help) is the error type everywhere; boxing it
// would only move the allocation.
#![allow(clippy::result_large_err)]

pub mod btf;
pub mod cgroup;
pub mod clock;
pub mod cpus;
pub mod elf_symbols;
pub mod kernel_info;
pub mod signals;
pub mod symbols;
pub mod tracefs;
pub mod uprobe_functions;
pub mod user_files;
pub mod warnings;
