//! `--dump types` and `--dump bpf` renderings.

use sonde_compiler::compile::Compiled;
use sonde_lang::sema::Checked;
use std::fmt::Write;

/// Maps with their key and value types, and each probe's concrete attach points.
pub fn types(checked: &Checked) -> String {
    let mut out = String::new();
    for (name, m) in &checked.maps {
        let key = m.key.as_ref().map(|k| format!("[{k}]")).unwrap_or_default();
        let _ = writeln!(out, "@{name}{key}: {}", m.value);
    }
    for p in &checked.probes {
        for i in &p.instances {
            let _ = writeln!(out, "probe {}: {}", p.index, i.attach.name);
            let mut vars: Vec<_> = i.types.vars.iter().collect();
            vars.sort_by(|a, b| a.0.cmp(b.0));
            for (v, t) in vars {
                let _ = writeln!(out, "  ${v}: {t}");
            }
        }
    }
    out
}

/// The eBPF instructions of every program, in verifier syntax, with source lines.
pub fn bpf(compiled: &Compiled, src: &str) -> String {
    let mut out = String::new();
    let lines = sonde_compiler::ir::SourceLines::new(src);
    for (spec, emitted) in compiled.script.programs.iter().zip(&compiled.bpf) {
        for (i, e) in emitted.iter().enumerate() {
            let name = if i == 0 {
                spec.symbol.clone()
            } else {
                format!("{} callback {}", spec.symbol, i - 1)
            };
            let _ = writeln!(
                out,
                "{name} ({}), {} instructions, {} bytes of stack:",
                spec.section,
                e.insns.len(),
                e.stack
            );
            let text = sonde_compiler::bpf::disasm::disassemble(&e.insns);
            let mut last_line = None;
            let mut idx = 0usize;
            for line in text {
                let span = e.spans.get(idx).copied().unwrap_or_default();
                let l = lines.line(span.start);
                if last_line != Some(l) {
                    last_line = Some(l);
                    let _ = writeln!(out, "  ; {l}: {}", lines.text(l).trim());
                }
                let _ = writeln!(out, "  {line}");
                idx += if e.insns.get(idx).is_some_and(|i| i.is_ld_imm64()) {
                    2
                } else {
                    1
                };
            }
        }
        out.push('\n');
    }
    out
}
