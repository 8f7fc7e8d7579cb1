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
- Run by the userspace engine (`--engine jit`) in a pid namespace other than the initial
  one, `pid(init)` and `tid(init)` are sonde's ids in its own namespace (the kernel engine
  reads the initial namespace's).
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
- `--mode` takes `test` and `bench` only (bpftrace's `codegen`, `compiler-bench` and `format`
  are refused).
- Config keys sonde does not use (`max_probes`, `log_size`, ...) have their values checked but
  no effect, and `config.KEY` reads bpftrace's default for them.
- `str_concat()` gives a string of both arguments' sizes (bpftrace: `string[1024]`).
- A name in parentheses followed by an operator stays an expression, so that `(pid) * tid`
  multiplies: `(t)-1`, `(t)*p` and `(t)&x` are no casts (bpftrace casts there when the name
  is a type or a macro's type parameter); followed by a value (`(t)x`, `(t)$v`, `(t)(e)`)
  it is a cast.
- `uprobe:BIN:ADDRESS` takes a file offset (bpftrace: a virtual address; the two are equal
  in the executable code of PIEs and shared libraries as linked on Debian, not in a non-PIE
  executable).
- A full map's warning (`Map full; can't update element`, with the place in the script) is
  printed for the first 10 failures of each place, then once `more map updates failed at
  PLACE`; bpftrace prints every failure. The programs send no more warnings than that (a
  full map does not crowd the script's own events out of the ring buffer), and count every
  failure (`N map updates failed because a map was full ...`, JSON's `map_full`,
  `sonde_map_full_drops`). Another error of a map update than a full map (`-E2BIG`) is only
  counted there (bpftrace warns with its errno's text).
";
