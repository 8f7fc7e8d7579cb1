//! Code generation: register allocation and IR → eBPF emission.

pub mod emit;
pub mod jumps;
pub mod peephole;
pub mod regalloc;
mod retarget;
