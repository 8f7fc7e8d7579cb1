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
    s += "\n## Config\n\n`config = { key = value; ... }` at the top of a script. Other keys bpftrace \
          knows are accepted and have no effect; unknown keys are a warning.\n\n\
          | key | meaning |\n|---|---|\n";
    for (key, doc) in sonde_lang::sema::CONFIG_KEYS {
        let _ = writeln!(s, "| `{key}` | {} |", doc.replace('|', "\\|"));
    }
    s += ENGINES;
    s += &limits();
    s
}

/// The limits on what a script declares (the numbers come from the constants that enforce
/// them).
fn limits() -> String {
    use sonde_lang::limits::{MAX_MAP_KEYS, MAX_STRLEN, MAX_VALUE_SIZE};
    use sonde_lang::syntax::macros::{MAX_DEPTH, MAX_EXPANDED_EXPRS, MAX_EXPANSIONS};
    let scratch = crate::lower::cx::MAX_SCRATCH;
    let insts = crate::lower::cx::MAX_FUNCTION_INSTS;
    let pairs = super::functions::string::MAX_CONTAINS_PAIRS;
    let (join_n, join_size) = (
        crate::lower::strings::JOIN_ARGS,
        crate::lower::strings::JOIN_ARG_SIZE,
    );
    let lhist = super::aggs::lhist::MAX_BUCKETS;
    let width = sonde_lang::format::MAX_WIDTH;
    let nesting = sonde_lang::syntax::MAX_NESTING;
    format!(
        "
## Limits

A short script can declare large sizes; each has a limit, checked with arithmetic that cannot
wrap, and a script beyond one is refused with a diagnostic on the size
(`sonde::sema::too_large`, or the code named below). Values too large for the 512-byte BPF
stack live in a per-CPU scratch map, whose value the kernel bounds at 32 KiB
(`PCPU_MIN_UNIT_SIZE`); the userspace engine keeps the same limits.

| what | limit |
|---|---|
| a value: `string[N]`, `char[N]`, `T[N]` (casts, `let`, `sizeof`, struct fields), a tuple, a multi-key map key, a `struct`/`union` the script defines | {MAX_VALUE_SIZE} bytes |
| `max_strlen` (the size of `str()`, and the most `str(p, len)` and `buf(p, len)` read) | {MAX_STRLEN} bytes |
| `max_map_keys` | {MAX_MAP_KEYS} elements |
| a probe's values in scratch space (strings, buffers, tuples and keys; the largest event payload, which its events share) | {scratch} bytes (`sonde::codegen::too_large`) |
| a probe's (or loop body's) instructions, `unroll`s expanded | {insts} (`sonde::codegen::too_large`) |
| `strcontains(h, n)`: size of `h` × size of `n` (the search is unrolled) | {pairs} |
| macro calls nested | {MAX_DEPTH} levels (`sonde::parse::macro_recursion`) |
| macro expansions in a script | {MAX_EXPANSIONS}, into at most {MAX_EXPANDED_EXPRS} expressions (`sonde::parse::macro_expansion`) |
| brackets and `?:` nested | {nesting} (`sonde::parse::too_deep`) |
| `unroll(N)` | 1 to 100 |
| `for ($i : a..b)` iterations (`b - a`; the kernel's `bpf_loop` limit) | 8388608 (`sonde::sema::loop_too_long` for constant bounds; run-time bounds are cut to it, counted, and reported as \"loops cut\" while the script runs) |
| `lhist()` buckets | {lhist} |
| printf width and precision | {width} |
| `join()` | {join_n} elements of {join_elem} bytes each (as bpftrace) |
| `a[N]`, `N` a constant, `a` an array | within the array (`sonde::sema::index_bounds`) |

Records and arrays of the kernel (BTF, tracepoint formats) keep their sizes: they are read
through pointers, field by field.

Shifts: `x << n` and `x >> n` by a constant `n` outside 0 to 63 (a negative one is a huge
unsigned amount) shift every bit out: the result is 0, or the sign for `>>` of a signed value,
with a warning (`sonde::sema::shift_amount`). A run-time amount is taken modulo 64 in both
engines, as the BPF instruction does.
",
        join_elem = join_size - 1,
    )
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
