//! The reference's list of what sonde still does differently from bpftrace 0.27 (its
//! `docs/language.md` and `docs/stdlib.md` at HEAD), one line each, kept true as they change.

/// Markdown of the differences from bpftrace 0.27.
pub const DIFFERENCES: &str = "
## Differences from bpftrace 0.27

What a bpftrace 0.27 script still meets in sonde (issue 28); everything else is meant to
behave as bpftrace 0.27 does.

- Integer scratch variables and map values are stored in 64 bits: their declared width (the
  widest integer assigned, an integer literal counting as its smallest signed type, as in
  bpftrace) counts for `bswap`, `sizeof` and casts to integer arrays only; arithmetic is done
  in 64 bits, and an expression other than a literal, a variable or a map read is 64 bits wide
  (`sizeof(1 + 1)` is 8; bpftrace: 1).
- The `Unnecessary cast` warning is not given for casts of integer variables and map values
  (their 64-bit storage type is not their declared one); a literal's (`(int8)1`) is given.
- A `char[N]` member of a struct the script defines is a `string[N+1]` as in bpftrace, but read
  as its N bytes and a NUL (bpftrace reads the byte after it too).
- A variable declared with `let $x;` and read before its first assignment reads 0 with
  bpftrace's warning, as an integer: a string or other value assigned afterwards is a type
  mismatch (bpftrace types the variable by that assignment and reads its zero value).
- A macro's `$x` parameter takes any expression where bpftrace requires a variable (when no
  overload of the macro takes the arguments exactly, sonde uses the closest with as many
  parameters; bpftrace refuses the call).
- `==` on `buf()` values compares their lengths and every byte (bpftrace compares them as C
  strings, from their length field, up to a NUL).
- A cast to an integer array of a variable or map value 64 bits wide accepts an array of up
  to 8 bytes (its low bytes); bpftrace requires the 8.
- `comm(pid)` (the `bpf_task_from_pid` kfunc) is a `string[16]` (bpftrace: `string[64]`).
  Where the kernel forbids kfuncs (BEGIN, END, uprobe, usdt) it is refused as in bpftrace,
  but when the program is built, with a diagnostic; sonde also refuses it in rawtracepoint
  probes (raw tracepoint programs here; bpftrace's are BTF tracing programs, which this
  kernel lacks) and in syscall tracepoints it dispatches by syscall number (a wildcard over
  more than 16 syscalls, or `syscall_dispatch = always`: raw tracepoint programs).
- `percpu_kaddr()` is refused when the kernel's `/proc/kallsyms` does not list the variable
  (a kernel without CONFIG_KALLSYMS_ALL, where the verifier cannot resolve its typed ksym);
  `skboutput()` is refused as unavailable.
- `debugf()` runs in the kernel engine only (the userspace engine refuses it).
- `len()` of a stack takes `kstack`/`ustack` themselves (`len(kstack)`): one kept in a variable
  or map is refused (sonde stores a stack as its id in the stack map); the userspace engine
  refuses both.
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
- A macro's type parameter (`typeof(...)` given) is used as a type where it stands alone
  (`sizeof(t)`, `(t)x`), not with a suffix (`sizeof(t[2])`, `(t*)x` are parse errors).
- A user macro of a builtin's name (`macro cpu(x)`) takes every call of that name: `cpu()`
  is then a wrong number of arguments (bpftrace keeps its builtins as standard-library
  macros of another signature).
- `uprobe:BIN:ADDRESS` is not checked against the binary's functions (bpftrace: `Could not
  resolve address`); `rawtracepoint:MODULE:name` does not check the module.
- A full map is one summary line at the end (`N map updates failed because a map was full
  ...`; bpftrace warns `Map full; can't update element` per failure).
";
