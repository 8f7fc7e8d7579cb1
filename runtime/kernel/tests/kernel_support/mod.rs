//! Shared helpers of the kernel tests: a small assembler with labels on top of the `Insn`
//! constructors, and builders for `CompiledScript`s holding hand-written programs.
//!
//! Every kernel test runs against the real kernel (root needed), filters on its own pid
//! (other tracers may run on the machine) and bounds its waiting time.

#![allow(dead_code)]

use std::collections::HashMap;

use sonde_compiler::bpf::insn::{Insn, JmpOp, Reg};
use sonde_compiler::elf::{ElfProgram, write_elf};
use sonde_compiler::program::{
    AttachSpec, AttachTarget, CompiledScript, MapKind, MapRole, MapSpec, ProgramSpec,
};
use sonde_lang::span::Span;

/// Straight-line code with forward/backward labels and map references.
#[derive(Default)]
pub struct Asm {
    pub insns: Vec<Insn>,
    labels: HashMap<&'static str, usize>,
    fixups: Vec<(usize, &'static str)>,
    relocs: Vec<(usize, String)>,
}

impl Asm {
    pub fn new() -> Asm {
        Asm::default()
    }

    /// Appends one instruction; returns its index.
    pub fn push(&mut self, insn: Insn) -> usize {
        self.insns.push(insn);
        self.insns.len() - 1
    }

    /// Appends a two-slot instruction.
    pub fn push2(&mut self, pair: [Insn; 2]) -> usize {
        let at = self.insns.len();
        self.insns.extend(pair);
        at
    }

    /// `dst = map` (relocated in the ELF).
    pub fn ld_map(&mut self, dst: Reg, map: &str) -> usize {
        let at = self.push2(Insn::ld_map_reloc(dst));
        self.relocs.push((at, map.to_string()));
        at
    }

    /// Defines `label` at the next instruction.
    pub fn label(&mut self, label: &'static str) {
        self.labels.insert(label, self.insns.len());
    }

    /// `if dst op imm goto label`.
    pub fn jmp_imm(&mut self, op: JmpOp, dst: Reg, imm: i32, label: &'static str) -> usize {
        let at = self.push(Insn::jmp_imm(op, dst, imm, 0));
        self.fixups.push((at, label));
        at
    }

    /// `goto label`.
    pub fn ja(&mut self, label: &'static str) -> usize {
        let at = self.push(Insn::ja(0));
        self.fixups.push((at, label));
        at
    }

    /// `r0 = 0; exit`.
    pub fn ret0(&mut self) {
        self.push(Insn::mov64_imm(Reg::R0, 0));
        self.push(Insn::exit());
    }

    /// Resolves labels into an ELF program.
    pub fn finish(mut self, symbol: &str, section: &str) -> ElfProgram {
        for (at, label) in &self.fixups {
            let target = self.labels[label];
            self.insns[*at].off = (target as i64 - *at as i64 - 1) as i16;
        }
        ElfProgram {
            symbol: symbol.into(),
            section: section.into(),
            insns: self.insns,
            map_relocs: self.relocs,
            func_relocs: Vec::new(),
        }
    }
}

/// The span the test scripts give instruction `i`: `10*i .. 10*i+5`.
pub fn insn_span(i: usize) -> Span {
    Span::new(10 * i, 10 * i + 5)
}

/// A map spec with a scratch role.
pub fn map(
    symbol: &str,
    kind: MapKind,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
) -> MapSpec {
    MapSpec {
        symbol: symbol.into(),
        kind,
        key_size,
        value_size,
        max_entries,
        role: MapRole::Scratch,
    }
}

/// An attach target named after its spec.
pub fn target(spec: AttachSpec) -> AttachTarget {
    AttachTarget {
        name: format!("{spec:?}"),
        spec,
        span: Span::new(1000, 1010),
    }
}

/// A script of `programs` (each with its attach targets) and `maps`.
pub fn script(
    programs: Vec<(ElfProgram, Vec<AttachTarget>)>,
    maps: Vec<MapSpec>,
) -> CompiledScript {
    let elf_programs: Vec<ElfProgram> = programs.iter().map(|(p, _)| p.clone()).collect();
    let elf = write_elf(&elf_programs, &maps);
    let programs = programs
        .into_iter()
        .enumerate()
        .map(|(i, (p, attach))| ProgramSpec {
            insn_spans: (0..p.insns.len()).map(insn_span).collect(),
            symbol: p.symbol,
            section: p.section,
            attach,
            probe_index: i,
            span: Span::new(2000, 2010),
        })
        .collect();
    CompiledScript {
        elf,
        programs,
        maps,
        events: Vec::new(),
        enums: Default::default(),
    }
}

/// This process's tgid, as the programs see it.
pub fn my_pid() -> i32 {
    std::process::id() as i32
}

/// Serialises the tests of one binary that trigger the same event (tests run as threads of
/// one process, and the programs filter on the process id).
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}
