//! The low level of the backend: the eBPF instruction set as data ([`insn`]), the kernel
//! helpers its calls name ([`helpers`]) and its disassembler in verifier syntax ([`disasm`]).

pub mod disasm;
pub mod helpers;
pub mod insn;

#[cfg(test)]
mod emit_tests;
