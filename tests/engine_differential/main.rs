//! Differential tests of the two engines: the same script run in the kernel (`--engine bpf`,
//! BEGIN/END through `BPF_PROG_TEST_RUN`) and natively in this process (`--engine jit`, the
//! cranelift backend and the in-process maps) must print the same bytes and exit with the
//! same status. The BPF engine is the reference.
//!
//! - [`random`]: a few hundred scripts made by the seeded [`generator`] over the language
//!   both engines run.
//! - [`interval`]: hand-written `interval` scripts.
//! - [`limits`]: the userspace engine loses events and refuses map updates exactly where the
//!   kernel does.
//!
//! [`compare`] runs a script in both engines and reports what differs.

#[path = "../common/mod.rs"]
mod common;

mod compare;
mod generator;
mod interval;
mod limits;
mod random;
