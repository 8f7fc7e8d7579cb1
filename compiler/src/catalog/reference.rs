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
          knows are accepted, their values checked as bpftrace 0.27 checks them, and have no effect \
          (`license` must be one bpftrace 0.27 accepts, GPL \
          among them); unknown keys are an error (`KEY: not a known configuration option`), \
          as in bpftrace 0.27. As in bpftrace, a \
          key may also be set in the environment as `BPFTRACE_KEY` (`BPFTRACE_MAX_STRLEN=128`), \
          which wins over the script's block. A script reads the settings as the record \
          `config` (or `config()`, bpftrace 0.27): `config.max_strlen`, `config.stack_mode`; \
          the keys sonde does not use read as bpftrace's defaults.\n\n\
          | key | meaning |\n|---|---|\n";
    for (key, doc) in sonde_lang::sema::CONFIG_KEYS {
        let _ = writeln!(s, "| `{key}` | {} |", doc.replace('|', "\\|"));
    }
    s += super::reference_compat::DIFFERENCES;
    s += ENGINES;
    s += super::reference_cli::COMMAND_LINE;
    s += POST_PROCESSING;
    s += DELTA;
    s += super::providers::iter::REFERENCE;
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
    let unroll = crate::lower::byte_loops::UNROLL_BYTES;
    let pairs = crate::lower::byte_loops::UNROLL_PAIRS;
    let (join_n, join_size) = (
        crate::lower::strings::JOIN_ARGS,
        crate::lower::strings::JOIN_ARG_SIZE,
    );
    let lhist = super::aggs::lhist::MAX_BUCKETS;
    let tseries = super::aggs::tseries::MAX_INTERVALS;
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
| macro calls nested | {MAX_DEPTH} levels (`sonde::parse::macro_recursion`) |
| a `#define`'s value or an `#if` expression: parentheses and `#define`s within `#define`s | 128 levels (the diagnostic on its use says so) |
| an `#include`d header and the headers it includes | 8 MiB, 256 files, 16 levels of `#include` (`sonde::parse::include` names the bound reached) |
| a script, an imported file, a `--post` report, a REPL `:load` file | 16 MiB; a directory, a device or a FIFO is refused (a script may be a pipe: `<(...)`) |
| a folded profile given to `flamediff` | 1 GiB |
| an ELF file a uprobe or `-l` reads | 4 GiB; anything but a regular file is refused |
| an `input` line | 16 MiB: a longer line is one record of its first 16 MiB, the rest skipped, with a warning |
| macro expansions in a script | {MAX_EXPANSIONS}, into at most {MAX_EXPANDED_EXPRS} expressions (`sonde::parse::macro_expansion`) |
| brackets and `?:` nested | {nesting} (`sonde::parse::too_deep`) |
| `unroll(N)` | 1 to 100 |
| `for ($i : a..b)` iterations (`b - a`; the kernel's `bpf_loop` limit) | 8388608 (`sonde::sema::loop_too_long` for constant bounds; run-time bounds are cut to it, counted, and reported as \"loops cut\" while the script runs) |
| `lhist()` buckets | {lhist} |
| `tseries()` intervals (bpftrace: 1000000; sonde keeps a series in one per-CPU map value) | {tseries} (`sonde::sema::too_large`) |
| printf width and precision | {width} |
| `join()` | {join_n} elements of {join_elem} bytes each (as bpftrace) |
| `a[N]`, `N` a constant, `a` an array | within the array (`sonde::sema::index_bounds`) |

Records and arrays of the kernel (BTF, tracepoint formats) keep their sizes: they are read
through pointers, field by field.

String operations whose code would grow with the strings' size run as loops (`bpf_loop`,
whose body the verifier checks once) beyond {unroll} bytes: `==` and `!=` of strings,
`strncmp()`, `strlen()`, `memcmp()`, `str_concat()`'s first string, and the searches of
`strcontains()` and `strstr()` (beyond {pairs} byte pairs, the haystack's size × the needle's);
each stops at the first NUL or difference, so a long string costs what its characters do,
not its size.

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

A plain `input` probe reads the script's file arguments, one after the other (as awk reads its
operands; `-` is standard input), or standard input when there are none: `sonde -F, -e
'input { ... }' access.csv`. The arguments stay `$1`, `$2`, ... too. `input:PATH` reads PATH
whatever the arguments. A line is one record however long; past 16 MiB the probes see its
first 16 MiB (`line`, fields) and the rest of it is skipped, with a warning.

A recording run flushes what it recorded at least once a second, so a run killed without
warning (SIGKILL) leaves a recording that `replay` reads up to its last whole entry; it then
says `the recording FILE was cut at byte N (after K records)` and exits with 1.

`sonde replay FILE` prints a recording again, byte for byte, in text or `-f json`; its format
is in `docs/record-format.md`.
";

/// What `delta` and `delta(KEY)` measure, and what their first firing does.
const DELTA: &str = "
## delta (sonde extension)

`delta` is the time in nanoseconds since this probe last fired in the current thread, and
`delta(KEY)` since this probe last fired for `KEY`, any value a map key can be (an integer, a
pointer, a string, a tuple: `delta((pid, comm))`). \"This probe\" is the probe block, all its
attach points together: each probe has its own clocks (`delta((probe, tid))` separates attach
points). bpftrace and DTrace have no such builtin: there, `@ts[tid] = nsecs` in one probe and
`nsecs - @ts[tid]` in another.

- A first firing (no clock yet for the thread or the key) gives 0, and an aggregation whose
  arguments read `delta` or `delta(KEY)` skips its update then: `@h = hist(delta)` and
  `@s[k] = stats(delta(k) / 1000)` count nothing for it (no bucket, no count). Elsewhere (a
  `printf`, a predicate, a plain map value, a variable: `$d = delta; @h = hist($d)`) a first
  firing is a plain 0.
- A firing's time is taken once, at the start of the probe: after its predicate, or before it
  when the predicate uses `delta` or `delta(KEY)`. `delta` is measured there, so every use
  reads the same value, and a firing that a predicate without `delta` rejects leaves the
  thread's clock running. `delta(KEY)` is measured where it is evaluated (a branch not taken
  leaves the key's clock running); evaluated again in the same firing for the same key, it
  gives the same value.
- The time is `nsecs`'s: boot time in the kernel and in `input` probes, where
  `delta(field(1))` is the time between lines with the same first field as sonde reads them
  (inter-arrival times, on a live log); the recorded time in `replay` probes.
- The clocks live in hidden LRU hashes of `max_map_keys` elements (one for `delta`, one per
  key type of `delta(KEY)`), keyed by the probe and the thread id or the key: on a busy machine
  the least recently used clocks are dropped (the userspace engine drops any one), and the
  next firing of a dropped clock is a first firing. A key that is used again (a freed
  socket's address) continues its clock.
- A script's own `delta` keeps its meaning: `$delta`, `@delta`, a macro `delta`, an
  enumerator or a `#define` named `delta`.
";

/// Post-processing with rhai (`--post`, `-P`) and `-f csv`: the callbacks, the values they
/// receive, the sandbox and the report library (its rows are `sonde_present::report::FUNCTIONS`,
/// checked by that crate's tests).
const POST_PROCESSING: &str = r#"
## Post-processing (rhai)

`--post FILE` (or `-P 'CODE'` for a one-liner) runs a [rhai](https://rhai.rs/book) script on
what a run prints, in sonde's own process, for any script, in either engine, and on `sonde
replay FILE`. `sonde tool NAME --post FILE` replaces a tool's report: the reports of
`memusage`, `ltrace` and `syscount` are such scripts (`stdlib/memusage.rhai`, ...), and
`biolatency` and `runqlat` print bcc's histograms with `stdlib/histograms.rhai` (with `-e`,
also their p50, p90 and p99); copy one to change it. The
script's top-level statements run once, before the run starts; it defines one or more of:

| callback | called | with, and what it does |
|---|---|---|
| `on_event(e)` | for every `printf`, `print(value)`, `cat`, `join`, `time` and `system` event, as it arrives | `e` is `#{kind, text, args}`: `kind` is `"printf"`, `"print"`, `"cat"`, `"join"`, `"time"` or `"system"`, `text` what sonde would print, `args` printf's arguments (`[value]` for `print`) as rhai values, and `e.format` printf's format string. Its result decides what is printed: a string is printed instead of the event, `true` prints the event as sonde does, anything else (`()`, `false`) prints nothing |
| `on_interval(maps)` | once for each run of consecutive `print(@map)` events (an interval probe's `print(@a); print(@b);`) | `maps` holds the maps those events print, as they were printed (a `clear()` after them changes nothing); they print only through the script (`print_map`) |
| `on_end(maps)` | after END, instead of the default map printout (also with `print_maps_on_exit = false`) | `maps` holds every map, empty ones included; `print_maps(maps)` prints the default printout |

`maps` is an object map keyed by each map's name as written (`maps["@h"]`, `maps["@"]`).
Values keep their types: integers are rhai integers (an unsigned value above 2^63 - 1 is an
exact decimal); strings, symbols, user names, addresses and other named values are strings as
sonde prints them; a stack is an array of its frames (`func+off`, innermost first; in perf
mode, `ustack(perf)`, `#{addr, symbol, object}` maps: `addr` the address's 64 bits as an
integer, `symbol` and `object` `()` when unknown); tuples and arrays
are arrays; records are object maps. `count`, `sum`, `min` and `max` are numbers, `avg`
and `stats` are `#{count, average, total}`, `hist` and `lhist` are arrays of `#{lo, hi,
count}` buckets from the first to the last non-empty one (`lo` inclusive, `hi` exclusive,
`()` for the open end of `(..., 0)` or `[max, ...)`), `tseries` arrays of `#{time, value}`
intervals as they print (`time` the interval's start in nanoseconds since the epoch, `value`
`()` for an interval without one). A map with keys is an array of `#{key, value}` rows in the
order sonde prints them (a tuple key is an array); a map without keys is its value (`()` when
empty, `[]` for an empty histogram or time series).

`this` is an object map that every callback shares: state kept between calls
(`this.n = (this.n ?? 0) + 1`). `print(x)` writes `x` and a newline to the run's output (`-o
FILE` included), in order with everything else (with `-f json`, as a `printf` record);
`debug(x)` writes to standard error.

The script is sandboxed: no file or process access (module imports, `read_file`, `write_file`,
`system`) unless `--unsafe` is given, and no `eval`. Every run of it is bounded; each limit
hit is a diagnostic that names it:

| bound | limit | diagnostic |
|---|---|---|
| operations of one callback call (or of the top-level statements) | 50000000 | `sonde::post::too_long` |
| wall-clock time of one call | 10 s | `sonde::post::too_long` |
| Ctrl-C or SIGTERM | a call still running 1 s after the signal is stopped | `sonde::post::interrupted` |
| string length (`lpad`, `rpad`, `read_file`, `system` check it before allocating) | 16777216 bytes (16 MiB) | `sonde::post::too_large` |
| array items | 16777216 | `sonde::post::too_large` |
| object map fields | 1048576 | `sonde::post::too_large` |
| nesting of calls | 64 levels | `sonde::post::too_large` |
| nesting of expressions | 256 levels | `sonde::post::syntax` |
| output of one call (`print`, `table`, `csv`; `print_map` counts 64 bytes an entry), kept until the call returns | 67108864 bytes (64 MiB) | `sonde::post::too_large` |

Errors are diagnostics on the line and column of the rhai script (`sonde::post::syntax`,
`sonde::post::runtime`; `sonde::post::callback` for a callback with the wrong parameters,
`sonde::post::no_callback`, `sonde::post::read` for a file that cannot be read). What can be
checked comes before anything runs: a syntax error, and a lookup `maps["@name"]` of a map the
tracing script does not have (`sonde::post::no_map`, which names the maps it has); a name
computed at run time is not (`maps[name]` is `()` for a map that is not there). An error
while the script runs is shown when it happens; the run then ends with exit code 1, and what
the script would have printed prints as sonde prints it: the events still to come and the maps
at exit (after an `on_end` that failed, too), so that no data is lost.

The report library, besides rhai's own functions:

| function | description |
|---|---|
| `percentile(hist, p)` | The value below which `p` percent of a histogram's counts fall (`p` from 0 to 100: 99 for p99): a number inside the bucket that holds that rank, interpolated by rank; `()` for an empty histogram |
| `top(map, n)` | The `n` rows of a keyed map with the largest values, largest first (histograms weigh their total count, `avg`/`stats` their average) |
| `sort_by_value(map)` | The rows of a keyed map sorted by value, smallest first |
| `table(rows, columns)` | Prints `rows` (object maps, or arrays) as aligned columns under a header: `columns` names the fields shown (of array rows: the headers, in order); numbers align right. `table(rows)` shows every field of the first row |
| `csv(rows, columns)` | Prints `rows` as CSV (RFC 4180) under a header of `columns` (`csv(rows)`: the first row's fields); arrays in a cell are joined with `;` |
| `human_bytes(n)` | `n` bytes in binary units: `512 B`, `1.5 KiB`, `3.0 MiB` |
| `human_ns(n)` | `n` nanoseconds in the largest unit under which it is at least 1: `750 ns`, `1.5 us`, `20.0 ms`, `2.25 s` |
| `print_log2_hist(h, unit)` | Prints a histogram as bcc's tools print it (libbpf-tools' `print_log2_hist`): a `UNIT : count distribution` header, then a `low -> high : count` line with a bar of stars per power-of-two slot from 0 to the last non-empty one (nothing for an empty histogram) |
| `log2_slots(h)` | A histogram's power-of-two slots as bcc's tools count them: an array of `#{"interval-start", "interval-end", count}` from slot 0 (0 and 1) to the last non-empty one, as bcc's `-j` prints them |
| `now(fmt)` | The wall-clock time now, formatted with a strftime format (`now("%H:%M:%S")`) |
| `print_map(m)` | Prints a map of `maps` exactly as sonde prints it (with the `top`/`div` of the `print()` that printed it); rows taken out of a map (`top(m, 5)`, `m.filter(...)`) print as that map with only those rows |
| `print_maps(maps)` | Prints the maps of `maps` as sonde does at exit (two newlines in text output, then the maps by name; an empty map prints nothing, but for an empty `avg`/`stats` map JSON has `{}`, as bpftrace 0.26): the default `on_end` |
| `lpad(x, width)` | `x` as text, padded with spaces on the left to `width` characters (numbers in columns) |
| `rpad(x, width)` | `x` as text, padded with spaces on the right to `width` characters |
| `fixed(x, digits)` | The number `x` with `digits` digits after the point (`fixed(2.5, 2)` is `2.50`) |
| `read_file(path)` | The text of a file (only with `--unsafe`) |
| `write_file(path, text)` | Writes `text` to a file, replacing it (only with `--unsafe`) |
| `system(cmd)` | Runs `cmd` with `/bin/sh -c` and returns what it wrote on standard output (only with `--unsafe`) |
| `lost_events()` | Events the kernel could not hand over (its ring buffer full) in the run so far: what sonde reports as `Lost N events` |

For example, the p99 of a histogram, under the histogram as sonde prints it:

```
sonde -e 'tracepoint:syscalls:sys_enter_read { @s[tid] = nsecs; }
  tracepoint:syscalls:sys_exit_read /has_key(@s, tid)/ { @us = hist((nsecs - @s[tid]) / 1000); delete(@s, tid); }' \
  -P 'fn on_end(maps) { print_map(maps["@us"]); print(`p99: ${percentile(maps["@us"], 99)} us`); }'
```

`-f csv` prints maps and printf events as CSV (RFC 4180). A map is a table under a header:
`map`, its key (`key`, or `key1`, `key2`, ... for several keys; none without keys) and its
value (`value`; `count`, `average`, `total` for `avg` and `stats`; `lo`, `hi`, `count` for
histograms, one row per bucket); stacks are their frames joined by `;`. A printf event is one
row of its arguments (a printf without arguments, its text); `print(value)` and `time()` are
one row; other text passes through. An event tool (`sonde tool execsnoop`, `opensnoop`) prints
a row per line instead: the header line's columns, then one row per event (each event one
printf: arguments printed with no space between them are one field, `%d.%03d`; arguments
that print as nothing or spaces are none; the last column is the rest of the line, execsnoop's
ARGS or exitsnoop's `signal 15 (Terminated)`). A banner before the header passes through.
"#;

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
