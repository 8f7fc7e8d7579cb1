//! The low level of the backend: the eBPF instruction set as data ([`insn`]) and its
//! disassembler in verifier syntax ([`disasm`]).

pub mod disasm;
pub mod insn;

#[cfg(test)]
mod emit_tests;
