//! The language reference generated from the registries (`docs/reference.md`), so that the
//! documentation lists exactly what the catalog defines.

use super::SondeCatalog;
use sonde_lang::catalog::Catalog;
use std::fmt::Write;

/// Markdown listing every probe type, builtin and function with its doc line.
pub fn markdown() -> String {
    let cat = SondeCatalog;
    let mut s = String::from(
        "# sonde language reference\n\nGenerated from the registries in `compiler/src/catalog/` \
         (`SONDE_BLESS=1 cargo test -p sonde-compiler reference` rewrites it).\n\n## Probe types\n\n\
         | attach point | aliases | description |\n|---|---|---|\n",
    );
    for p in cat.providers() {
        let aliases = p.names()[1..]
            .iter()
            .map(|a| format!("`{a}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let _ = writeln!(
            s,
            "| `{}` | {} | {} |",
            p.usage().replace('|', "\\|"),
            aliases,
            p.doc()
        );
    }
    s += "\n## Builtins\n\n| name | description |\n|---|---|\n";
    for b in cat.builtins() {
        let _ = writeln!(s, "| `{}` | {} |", b.name(), b.doc());
    }
    s += "\n## Functions and aggregations\n\n| signature | description |\n|---|---|\n";
    for f in cat.functions() {
        let _ = writeln!(
            s,
            "| `{}` | {} |",
            f.signature().replace('|', "\\|"),
            f.doc().replace('|', "\\|")
        );
    }
    s += ENGINES;
    s
}

/// How scripts are run: the two engines, and what each accepts.
const ENGINES: &str = "
## Engines

A script runs in one of two engines, chosen from its probes (`compile::engine_of`):

- **bpf** (the default, as bpftrace): kernel probes, compiled to eBPF and run in the kernel;
  needs root.
- **jit**: userspace probes (`input`, `replay`), compiled to native code with cranelift and
  run in sonde's own process; needs no root. BEGIN, END and interval probes run in either
  engine: with the script's other probes, or under `--engine jit` when they are all it has.

A script with both kernel and userspace probes is refused (`sonde::engine::mixed`): record the
kernel half (`sonde record -o FILE SCRIPT`) and run the userspace half on the recording
(`sonde replay FILE SCRIPT`). In a userspace probe, whatever reads kernel state (`kstack`,
`ustack`, `curtask`, `cgroup`, kernel or process memory through `str()`, `args` of pointers,
...) is a diagnostic on its span (`sonde::jit::kernel_only`), reported by `--check` too.
`pid`, `tid`, `uid`, `comm` and `cpu` are sonde's own in userspace probes; `nsecs` is the
recorded time in `replay` probes.

`input` splits lines into fields like awk: on runs of blanks by default, or on `-F SEP` (a tab
for `\\t`, otherwise the literal text: awk would take a multi-character separator as a
regular expression). `field(N)` and `line` are strings of `max_strlen` and 256 bytes; longer
values are truncated. `num()` reads a leading decimal number like awk (sign, fraction,
exponent), times the scale, toward zero. `input` probes that only aggregate into maps (no
printing, no `nr`, no reading of aggregations) run on every CPU with per-CPU map slots, as the
kernel runs them; others run on one thread, in input order.

`sonde replay FILE` prints a recording again, byte for byte, in text or `-f json`; its format
is in `docs/record-format.md`.
";

#[cfg(test)]
mod tests {
    /// docs/reference.md is what the registries say (rewrite with SONDE_BLESS=1).
    #[test]
    fn reference_doc_matches_the_registries() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/reference.md");
        let want = super::markdown();
        if std::env::var_os("SONDE_BLESS").is_some() {
            std::fs::write(&path, &want).unwrap();
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == want,
            "docs/reference.md is out of date: run SONDE_BLESS=1 cargo test -p sonde-compiler reference"
        );
    }
}
