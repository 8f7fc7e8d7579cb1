//! The compiler driver: checked program → IR → BPF → ELF and the runtime's specs.

use crate::catalog::SondeCatalog;
use crate::catalog::providers::syscall_dispatch;
use crate::codegen::emit::{Emitted, emit};
use crate::elf::{ElfProgram, write_elf};
use crate::lower::maps::MapTable;
use crate::lower::{Lowered, ProbeTarget, ScriptCx, lower_probe};
use crate::options::CompileOptions;
use crate::program::{AttachTarget, CompiledScript, ProgramSpec};
use sonde_lang::ast::Program;
use sonde_lang::diag::Diagnostic;
use sonde_lang::kernel::KernelInfo;
use sonde_lang::sema::{Checked, ProbeInstance};
use std::sync::Arc;

/// A compiled script plus its intermediate stages, for `--dump`.
#[derive(Clone, Debug, Default)]
pub struct Compiled {
    /// What the runtime loads.
    pub script: CompiledScript,
    /// IR of each program and its callbacks (same order as `script.programs`; the syscall
    /// dispatchers the compiler adds at the end of `script.programs` have none).
    pub ir: Vec<Lowered>,
    /// Emitted BPF of each program: the program first, then its callbacks.
    pub bpf: Vec<Vec<Emitted>>,
}

/// Compiles a checked program to eBPF (the kernel engine).
pub fn compile(
    program: &Program,
    checked: &Checked,
    kernel: &dyn KernelInfo,
    options: &CompileOptions,
) -> Result<Compiled, Vec<Diagnostic>> {
    compile_for(program, checked, kernel, options, Engine::Bpf)
}

/// Compiles a checked program for `engine`: for [`Engine::Jit`], the IR of every program and
/// the runtime's specs, without BPF or ELF (the runtime JIT-compiles the IR), after checking
/// that no program reads kernel state.
pub fn compile_for(
    program: &Program,
    checked: &Checked,
    kernel: &dyn KernelInfo,
    options: &CompileOptions,
    engine: Engine,
) -> Result<Compiled, Vec<Diagnostic>> {
    let mut maps = MapTable::new(&checked.maps, checked.config.max_map_keys);
    maps.ringbuf_bytes = crate::lower::maps::ringbuf_bytes(checked.config.perf_rb_pages);
    let mut events = Vec::new();
    let script = ScriptCx {
        program,
        options,
        kernel,
        constants: &checked.constants,
        max_strlen: checked.config.max_strlen,
        config: &checked.config,
    };
    let mut out = Compiled::default();
    out.script.enums = crate::enums::enum_table(program, checked, kernel);
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
                layout: provider.context_layout(&first.attach),
                name: &symbol,
            };
            match lower_probe(&script, &target, &mut maps, &mut events) {
                Ok(lowered) if engine == Engine::Jit => {
                    errors.extend(crate::jit::kernel_only_uses(std::slice::from_ref(&lowered)));
                    out.script.programs.push(ProgramSpec {
                        symbol: symbol.clone(),
                        section: String::new(),
                        attach: group
                            .iter()
                            .map(|i| AttachTarget {
                                spec: provider.attach_spec(&i.attach),
                                name: i.attach.name.clone(),
                                span: i.attach.span,
                            })
                            .collect(),
                        probe_index: cp.index,
                        span: first.attach.span,
                        insn_spans: Vec::new(),
                    });
                    out.ir.push(lowered);
                }
                Ok(lowered) => {
                    match kfunc_allowed(&lowered, provider.attach_spec(&first.attach).section())
                        .and_then(|()| emit_all(&lowered))
                    {
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
                                section: match provider.attach_spec(&first.attach).section() {
                                    // aya reads what follows `xdp/` as an XDP attach type: XDP
                                    // programs (tests, benchmarks) share the `xdp` section.
                                    "xdp" => "xdp".to_string(),
                                    s => format!("{s}/{symbol}"),
                                },
                                attach,
                                probe_index: cp.index,
                                span: first.attach.span,
                                insn_spans: link_order(&emitted)
                                    .into_iter()
                                    .flat_map(|i| emitted[i].spans.iter().copied())
                                    .collect(),
                            });
                            out.ir.push(lowered);
                            out.bpf.push(emitted);
                        }
                        Err(d) => errors.push(d),
                    }
                }
                Err(d) => errors.push(d),
            }
        }
    }
    errors.extend(crate::catalog::providers::test_bench::duplicate_names(
        out.script
            .programs
            .iter()
            .flat_map(|p| &p.attach)
            .map(|t| (&t.spec, t.span)),
    ));
    if !errors.is_empty() {
        // One body expanded into many programs (a wildcard's groups) fails once.
        let mut seen = Vec::new();
        errors.retain(|d| {
            let key = (d.code, d.span, d.message.clone());
            let first = !seen.contains(&key);
            seen.push(key);
            first
        });
        return Err(errors);
    }
    crate::gfp::add_bits(&mut out.script.enums, &events, kernel);
    // Internal maps that the runtime always reads.
    maps.counters_map();
    if engine == Engine::Jit {
        out.script.maps = maps.specs;
        out.script.events = events;
        return Ok(out);
    }
    // Syscall tracepoints: a table and a dispatcher per probe, attached after its slots.
    let first_table = maps.specs.len() as u32;
    let dispatch = syscall_dispatch::add_dispatchers(&out.script.programs, first_table);
    maps.specs.extend(dispatch.maps);
    for (spec, code) in dispatch.programs {
        out.script.programs.push(spec);
        out.bpf.push(vec![code]);
    }
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

/// The order in which the loader lays out a program's functions (`emitted[0]` the program,
/// `emitted[k + 1]` its callback `k`): aya appends each callee where the code first
/// references it, depth first, so a verifier message's instruction maps to the right span.
fn link_order(emitted: &[Emitted]) -> Vec<usize> {
    fn visit(emitted: &[Emitted], i: usize, seen: &mut Vec<bool>, out: &mut Vec<usize>) {
        seen[i] = true;
        out.push(i);
        let mut refs = emitted[i].func_relocs.clone();
        refs.sort_by_key(|&(at, _)| at);
        for (_, cb) in refs {
            let j = cb as usize + 1;
            if j < emitted.len() && !seen[j] {
                visit(emitted, j, seen, out);
            }
        }
    }
    let mut seen = vec![false; emitted.len()];
    let mut out = Vec::with_capacity(emitted.len());
    if !emitted.is_empty() {
        visit(emitted, 0, &mut seen, &mut out);
    }
    // Functions nothing references are not loaded; their spans go last, as before.
    out.extend((0..emitted.len()).filter(|&i| !seen[i]));
    out
}

/// The two engines that run sonde programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// eBPF in the kernel (bpftrace's engine; the default).
    Bpf,
    /// Native code JIT-compiled with cranelift, run in-process (userspace probes).
    Jit,
}

/// The engine that runs a checked script. Userspace probes (`input`, `replay`) need the JIT
/// engine and kernel probes the BPF engine; a script with both is refused. Probes that either
/// engine runs (`BEGIN`, `END`, `interval`) go with the others; a script made only of those
/// runs on `requested`, else on BPF, as bpftrace would.
pub fn engine_of(checked: &Checked, requested: Option<Engine>) -> Result<Engine, Diagnostic> {
    crate::catalog::providers::iter::check_alone(checked)?;
    let mut kernel_probe = None;
    let mut user_probe = None;
    for cp in &checked.probes {
        for i in &cp.instances {
            let Some(p) = SondeCatalog.provider_backend(i.attach.ctx.provider) else {
                continue;
            };
            if p.userspace() {
                user_probe.get_or_insert(i.attach.span);
            } else if !p.either_engine() {
                kernel_probe.get_or_insert(i.attach.span);
            }
        }
    }
    let help = "userspace probes (`input`, `replay`) run in sonde's own process and kernel probes in the kernel; run them as two scripts (`sonde record` then `sonde replay FILE SCRIPT` feeds kernel events to a userspace script)";
    match (kernel_probe, user_probe, requested) {
        (Some(k), Some(u), _) => Err(Diagnostic::error(
            "sonde::engine::mixed",
            u,
            "a script cannot mix userspace probes with kernel probes",
        )
        .with_label("this probe runs in userspace")
        .with_secondary(k, "this one runs in the kernel")
        .with_help(help)),
        (Some(k), None, Some(Engine::Jit)) => Err(Diagnostic::error(
            "sonde::engine::kernel_probe",
            k,
            "`--engine jit` cannot run kernel probes",
        )
        .with_label("this probe needs the kernel")
        .with_help("the JIT engine runs BEGIN, END, interval, input and replay probes; drop `--engine jit` to run this script in the kernel")),
        (None, Some(u), Some(Engine::Bpf)) => Err(Diagnostic::error(
            "sonde::engine::userspace_probe",
            u,
            "`--engine bpf` cannot run userspace probes",
        )
        .with_label("this probe runs in userspace")
        .with_help("drop `--engine bpf`: input and replay probes run in the JIT engine, without root")),
        (Some(_), None, _) => Ok(Engine::Bpf),
        (None, Some(_), _) => Ok(Engine::Jit),
        (None, None, r) => Ok(r.unwrap_or(Engine::Bpf)),
    }
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

/// Refuses a probe whose code calls a kfunc the kernel does not let programs of its type
/// (`section`, as `AttachSpec::section` names it) call: on the span of the first such call
/// that can run (code `sonde::compile::kfunc_program_type`), instead of the verifier's
/// "calling kernel function ... is not allowed".
fn kfunc_allowed(lowered: &Lowered, section: &str) -> Result<(), Diagnostic> {
    for f in std::iter::once(&lowered.main).chain(&lowered.callbacks) {
        let mut live = f.clone();
        crate::ir::cfg::remove_dead_code(&mut live);
        for (inst, span) in &live.insts {
            let crate::ir::Inst::Call {
                func: crate::ir::Intrinsic::Kfunc(k),
                ..
            } = inst
            else {
                continue;
            };
            if k.func.allowed_in(section) {
                continue;
            }
            let kind = match section {
                "raw_tp" => "raw tracepoint",
                "uprobe" | "uretprobe" | "kprobe" | "kretprobe" => "kprobe",
                other => other,
            };
            return Err(Diagnostic::error(
                "sonde::compile::kfunc_program_type",
                *span,
                format!(
                    "the kernel does not let this probe call the `{}` kfunc (it runs as a {kind} program)",
                    k.func.name()
                ),
            )
            .with_label(format!("calls `{}`", k.func.name()))
            .with_help(format!(
                "kfuncs may be called from {} probes; BEGIN, END, rawtracepoint, uprobe and usdt probes run as raw tracepoint or kprobe programs, and so do syscall tracepoints dispatched by syscall number (a wildcard over more than 16 syscalls, or `config = {{ syscall_dispatch = always }}`)",
                crate::bpf::kfuncs::Kfunc::allowed_probes()
            )));
        }
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn function(refs: &[(usize, u32)]) -> Emitted {
        Emitted {
            func_relocs: refs.to_vec(),
            ..Default::default()
        }
    }

    /// Nested loops: the program references the outer body (callback 1), which references
    /// the inner one (callback 0); aya lays them out program, outer, inner.
    #[test]
    fn functions_are_ordered_as_the_loader_links_them() {
        let nested = [function(&[(7, 1)]), function(&[]), function(&[(3, 0)])];
        assert_eq!(link_order(&nested), vec![0, 2, 1]);
        // Two references in the program: in the order of their instructions.
        let two = [function(&[(9, 0), (4, 1)]), function(&[]), function(&[])];
        assert_eq!(link_order(&two), vec![0, 2, 1]);
        assert_eq!(link_order(&[function(&[])]), vec![0]);
    }
}
