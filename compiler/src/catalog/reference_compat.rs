//! The reference's list of what sonde still does differently from bpftrace 0.27 (its
//! `docs/language.md` and `docs/stdlib.md` at HEAD), one line each, kept true as they change.

/// Markdown of the differences from bpftrace 0.27.
pub const DIFFERENCES: &str = "
## Differences from bpftrace 0.27

What a bpftrace 0.27 script still meets in sonde (issue 28); everything else is meant to
behave as bpftrace 0.27 does.

- Integer scratch variables and map values are stored in 64 bits: their declared width (the
  widest integer assigned) counts for `bswap` and `sizeof` only; arithmetic is done in 64 bits
  and integer literals are `int64` (bpftrace types `1` as `int8`).
- The `Unnecessary cast` warning is not given for casts of integer literals, variables and map
  values (their 64-bit storage type is not their declared one).
- A `char[N]` member of a struct the script defines is a `string[N+1]` as in bpftrace, but read
  as its N bytes and a NUL (bpftrace reads the byte after it too).
- A variable declared with `let $x;` and read before its first assignment is an error
  (bpftrace 0.27 warns and reads 0).
- Macros are overloaded by their number of parameters only, not by the kinds of their
  parameters (`$a`, `a`, `@m`): two of one name and arity are refused as defined twice.
- `==` on `buf()` values compares their lengths and every byte (bpftrace compares them as C
  strings, from their length field, up to a NUL).
- A cast of an integer variable or map value to an integer array takes the variable's declared
  width when it was assigned a cast integer, else accepts any array of up to 8 bytes (its
  low bytes); `(int8[])$x` of a variable assigned a literal has 8 elements (bpftrace: the
  literal's smallest type).
- `comm(pid)` is refused (`comm` takes no arguments: it needs the `bpf_task_from_pid` kfunc,
  and sonde makes no kfunc calls); `percpu_kaddr()` and `skboutput()` are refused as
  unavailable.
- `debugf()` runs in the kernel engine only (the userspace engine refuses it).
- No floating point: `%g` and float values are refused.
- `len()` of a stack takes `kstack`/`ustack` themselves (`len(kstack)`): one kept in a variable
  or map is refused (sonde stores a stack as its id in the stack map); the userspace engine
  refuses both.
- `str($1 + N)` of a numeric parameter reads memory at that address (bpftrace 0.27: the
  parameter's text from character N); `str($1, n)` of a parameter that is not a number keeps
  n - 1 characters (bpftrace: n).
- `(uint64)ustack` and `(uint64)kstack` give the stack's 8-byte value, its id in the run's
  stack map (a user stack's with the pid in the upper 32 bits): equal stacks of a process,
  equal values (bpftrace refuses the cast).
- `perf_rb_pages` sizes sonde's one events ring buffer (4 KiB pages, rounded up to a power of
  two), not per-CPU perf buffers.
- `show_debug_info` reads the DWARF of user binaries (and their debug files) only: kernel
  frames get no source line or inlined functions, even with a vmlinux that has DWARF; the
  names of inlined functions are not demangled; folded, CSV, pprof and `--post` report
  stacks keep one frame per address (the inlined functions are left out there).
- `getopt(\"n\", 0)` is an `int64` (bpftrace: `uint64` for a default that is not negative): a
  value above `i64::MAX` keeps its bits but `print()` shows it negative.
- `--mode` takes `test` and `bench` only (bpftrace's `codegen`, `compiler-bench` and `format`
  are refused).
- Config keys sonde does not use (`max_probes`, `log_size`, ...) have their values checked but
  no effect, and `config.KEY` reads bpftrace's default for them.
- `str_concat()` gives a string of both arguments' sizes (bpftrace: `string[1024]`).
";
