//! The compiler driver: checked program → IR → BPF → ELF and the runtime's specs.

use crate::catalog::SondeCatalog;
use crate::codegen::emit::{Emitted, emit};
use crate::elf::{ElfProgram, write_elf};
use crate::lower::maps::MapTable;
use crate::lower::{Lowered, ProbeTarget, ScriptCx, lower_probe};
use crate::program::{AttachTarget, CompiledScript, ProgramSpec};
use sonde_lang::ast::Program;
use sonde_lang::diag::Diagnostic;
use sonde_lang::kernel::KernelInfo;
use sonde_lang::sema::{Checked, ProbeInstance};
use std::sync::Arc;

/// Options that change the generated code.
#[derive(Clone, Debug, Default)]
pub struct CompileOptions {
    /// Positional parameters.
    pub positional: Vec<String>,
    /// `-p PID`: only events of this process reach probe bodies.
    pub filter_pid: Option<u32>,
    /// `-c CMD`: the child's pid (the `cpid` builtin).
    pub cpid: Option<u32>,
    /// Number of online CPUs (the `ncpus` builtin).
    pub ncpus: u32,
    /// `CLOCK_BOOTTIME` in ns when tracing starts (the base of `elapsed`).
    pub start_ns: u64,
    /// Named parameters (`-- --name=value`, or a tool's flags) read by `getopt()`, in the
    /// order given; a bare `--flag` has an empty value.
    pub named: Vec<(String, String)>,
}

/// A compiled script plus its intermediate stages, for `--dump`.
#[derive(Clone, Debug, Default)]
pub struct Compiled {
    /// What the runtime loads.
    pub script: CompiledScript,
    /// IR of each program and its callbacks (same order as `script.programs`).
    pub ir: Vec<Lowered>,
    /// Emitted BPF of each program: the program first, then its callbacks.
    pub bpf: Vec<Vec<Emitted>>,
}

/// Compiles a checked program.
pub fn compile(
    program: &Program,
    checked: &Checked,
    kernel: &dyn KernelInfo,
    options: &CompileOptions,
) -> Result<Compiled, Vec<Diagnostic>> {
    let mut maps = MapTable::new(&checked.maps, checked.config.max_map_keys);
    let mut events = Vec::new();
    let script = ScriptCx {
        program,
        options,
        kernel,
    };
    let mut out = Compiled::default();
    let mut errors = Vec::new();
    for cp in &checked.probes {
        for (g, group) in group_instances(&cp.instances).into_iter().enumerate() {
            let first = &group[0];
            let Some(provider) = SondeCatalog.provider_backend(first.attach.ctx.provider) else {
                errors.push(Diagnostic::error(
                    "sonde::codegen::internal",
                    first.attach.span,
                    "unknown provider after checking",
                ));
                continue;
            };
            let symbol = format!("p{}_{}", cp.index, g);
            let target = ProbeTarget {
                probe_index: cp.index,
                attach: &first.attach,
                types: &first.types,
                layout: provider.context_layout(),
                name: &symbol,
            };
            match lower_probe(&script, &target, &mut maps, &mut events) {
                Ok(lowered) => match emit_all(&lowered) {
                    Ok(emitted) => {
                        let attach = group
                            .iter()
                            .map(|i| AttachTarget {
                                spec: provider.attach_spec(&i.attach),
                                name: i.attach.name.clone(),
                                span: i.attach.span,
                            })
                            .collect();
                        out.script.programs.push(ProgramSpec {
                            symbol: symbol.clone(),
                            section: format!(
                                "{}/{symbol}",
                                provider.attach_spec(&first.attach).section()
                            ),
                            attach,
                            probe_index: cp.index,
                            span: first.attach.span,
                            insn_spans: emitted
                                .iter()
                                .flat_map(|e| e.spans.iter().copied())
                                .collect(),
                        });
                        out.ir.push(lowered);
                        out.bpf.push(emitted);
                    }
                    Err(d) => errors.push(d),
                },
                Err(d) => errors.push(d),
            }
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    // Internal maps that the runtime always reads.
    maps.counters_map();
    let mut elf_programs = Vec::new();
    for (p, emitted) in out.script.programs.iter().zip(&out.bpf) {
        for (i, e) in emitted.iter().enumerate() {
            elf_programs.push(ElfProgram {
                symbol: if i == 0 {
                    p.symbol.clone()
                } else {
                    callback_symbol(&p.symbol, i - 1)
                },
                section: p.section.clone(),
                insns: e.insns.clone(),
                map_relocs: e
                    .map_relocs
                    .iter()
                    .map(|(i, m)| (*i, maps.specs[*m as usize].symbol.clone()))
                    .collect(),
                func_relocs: e
                    .func_relocs
                    .iter()
                    .map(|(i, f)| (*i, callback_symbol(&p.symbol, *f as usize)))
                    .collect(),
            });
        }
    }
    out.script.elf = write_elf(&elf_programs, &maps.specs);
    out.script.maps = maps.specs;
    out.script.events = events;
    Ok(out)
}

/// Groups instances whose bodies have identical types (and so identical code).
fn group_instances(instances: &[ProbeInstance]) -> Vec<Vec<&ProbeInstance>> {
    let mut groups: Vec<Vec<&ProbeInstance>> = Vec::new();
    for i in instances {
        match groups
            .iter_mut()
            .find(|g| Arc::ptr_eq(&g[0].types, &i.types) && g[0].attach.ctx == i.attach.ctx)
        {
            Some(g) => g.push(i),
            None => groups.push(vec![i]),
        }
    }
    groups
}

/// Emits a lowered probe: the program, then each callback.
fn emit_all(lowered: &Lowered) -> Result<Vec<Emitted>, Diagnostic> {
    std::iter::once(&lowered.main)
        .chain(&lowered.callbacks)
        .map(emit)
        .collect()
}

/// The ELF symbol of callback `index` of the program `symbol`.
fn callback_symbol(symbol: &str, index: usize) -> String {
    format!("{symbol}c{index}")
}
