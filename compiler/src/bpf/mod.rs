//! The low level of the backend: the eBPF instruction set as data ([`insn`]), the kernel
//! helpers its calls name ([`helpers`]), the kfuncs it calls by BTF id ([`kfuncs`]) and its
//! disassembler in verifier syntax ([`disasm`]).

pub mod disasm;
pub mod helpers;
pub mod insn;
pub mod kfuncs;

#[cfg(test)]
mod emit_tests;
