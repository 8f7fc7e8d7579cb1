//! sonde runtime: the only crate that touches the kernel or /sys; loads, attaches, reads maps
//! and events, symbolizes, prints.

pub mod btf;
pub mod elf_symbols;
pub mod kernel_info;
pub mod list;
pub mod tracefs;
