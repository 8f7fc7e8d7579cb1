//! The command line and the JSON messages, for the generated reference (`docs/reference.md`).
//! The options are the `sonde` binary's (`src/cli.rs`); a test there checks that every long
//! option `sonde --help` shows is named here.

/// The "Command line" and "JSON output" sections of the reference.
pub(super) const COMMAND_LINE: &str = r#"
## Command line

`sonde [OPTIONS] FILENAME [ARGS]...` or `sonde [OPTIONS] -e 'PROGRAM' [ARGS]...`; `-` as
FILENAME reads the script from stdin. bpftrace's options keep bpftrace's spellings and meanings
(bpftrace 0.26.1's man page); sonde's own options have names bpftrace does not use. Usage
errors exit with 2, script, load and attach errors with 1.

| option | meaning |
|---|---|
| `-e PROGRAM` | The program. Given several times, the last one runs (as in bpftrace), with a warning. |
| `-c`, `--cmd CMD` | Run CMD as a child and trace it; the run ends when it exits. `cpid` is its pid. Not with `-p`. |
| `-p`, `--pid PID` | Trace process PID: uprobes and USDT probes attach to it, other probes filter on it; the run ends when it exits. A value that is no pid gets bpftrace's message (`Failed to parse pid: invalid integer: a1111`, `... invalid trailing bytes: 111a1`, `Pid out of range: 5000000`). |
| `-o`, `--output FILE` | Write the output to FILE instead of stdout (errors and warnings stay on stderr). |
| `-f FORMAT` | `text` (the default), `json` (below), `folded` (maps keyed by stacks as folded lines) or `csv`. Another value: `Invalid output format "x"; valid formats: ...`. |
| `-B MODE` | Output buffering of stdout and of `-o FILE`: `line` (written at each newline), `full` (when the buffer is full, and at exit) or `none` (each message at once). Without `-B`, output is written after each batch of events (a burst costs one write; nothing waits behind an idle loop). Another value: `-B must be either 'line', 'full', or 'none'.` |
| `-q`, `--quiet` | No "Attached N probes" line (nor JSON `attached_probes` message). |
| `-v`, `--verbose` | More detail: raw verifier logs; arguments with `-l`. |
| `-k`, `--warnings` | Report at run time a failed probe read (`str()`, `buf()`, `join()`, a dereference or a field of a pointer) and a read of a map element that does not exist, with the place in the script: a warning on stderr as bpftrace words it (`-e:1:37-48: WARNING: Bad address` / `Additional Info - helper: probe_read, retcode: -14`, the line, `~` under the expression), or a `helper_error` message with `-f json`. Without `-k` they read as zeros silently. `-kk` and `-k` with `--no-warnings` are usage errors, as in bpftrace 0.26. |
| `--no-warnings` | No warnings: the checker's and the run's (counts of lost data are still reported). |
| `--unsafe` | Allow `system()` (and file and process access in `--post` scripts). |
| `-I DIR`, `--include FILE` | Search DIR for `#include`d headers first; add `#include <FILE>` to the script. Both repeatable. |
| `-l`, `--list [PATTERN \| FILE]` | List probes: tracepoints, `rawtracepoint:vmlinux:NAME`, software and hardware events, kprobes when the kernel has them, the functions of a binary (`uprobe:/bin/bash:read*`), its USDT probes (`usdt:PATH:*`). Several patterns are separated by commas. `struct NAME`, `union NAME`, `enum NAME` (wildcards allowed) list kernel types, with `-v` their definitions. With `-p PID`, also the uprobes and USDT probes of the binaries the process maps (`uprobe:*:malloc`). With `-e` or a script FILE, the probes the program attaches, wildcards expanded (BEGIN and END attach nowhere; timers show no period). With `-v`, the arguments of tracepoints and raw tracepoints; uprobes get bpftrace's warning that no DWARF is read. A pattern that looks like a file that does not exist is searched, with bpftrace's warning. |
| `--info` | The system, how sonde was built, and what the kernel supports of what sonde uses, found by loading small programs, creating maps and links: helpers, the instruction limit, BTF, map types, probe types (`uprobe_multi`, `kprobe_multi`, `kprobe_session`, `fentry`, ...). |
| `--usdt-file-activation` | Activate USDT semaphores in every process that maps the binary. sonde always does so without `-p`/`-c` (the kernel's reference counter raises the semaphore in every mapping of the file, also of processes started later), as bpftrace 0.26 does; the option is accepted for compatibility. |
| `--dry-run` | Compile, load and attach, then exit. |
| `-V`, `--version` | Print the version. |
| `-b`, `--btf` | Accepted, no effect (as in bpftrace: BTF is used whenever the kernel has it). |
| `-d`, `--dump STAGE` | sonde's: print `ast`, `types`, `ir` or `bpf` and exit (bpftrace's `-d` takes LLVM's stages). |
| `--check` | sonde's: parse and type-check against this kernel; load nothing. |
| `--engine ENGINE` | sonde's: `bpf` or `jit` (see Engines). |
| `-F SEP` | sonde's: the field separator of `input` lines. |
| `--flamegraph FILE` | sonde's: at exit, draw the maps keyed by stacks as a flame graph SVG. |
| `--post FILE`, `-P`, `--post-eval RHAI` | sonde's: post-process the output with a rhai script (see Post-processing). |

Parameters: positional ones (`$1`, `str($1)`) before or after `--`; named ones (`--name=value`,
or `--flag` for `true`; read with `getopt()`) only after `--`: before it, they are unknown
options (a usage error), as in bpftrace. `sonde -e 'PROG' p1 -- --aa=20 --bb p2` has `$1` = p1,
`$2` = p2 and the named parameters `aa` and `bb`.

bpftrace options sonde does not have (`--no-feature`, `--probe-filter`, `--traceable-functions`,
`--debuginfo`, `--dwarf-pid`, `--emit-elf`, `--emit-llvm`, `--verify-llvm-ir`, `--aot`, `--mode`,
`--test`, `--bench`, `--fmt`) are usage errors.

## JSON output

`-f json` writes one JSON object a line (NDJSON), bpftrace 0.26's messages,
`{"type": TYPE, "data": DATA}`:

| type | data |
|---|---|
| `attached_probes` | `{"probes": N}`, with `"count": N` beside `data` |
| `printf` | the formatted text |
| `time` | the formatted time |
| `cat` | the file's contents |
| `join` | the joined strings, without a newline |
| `syscall` | what `system()`'s command wrote on its stdout |
| `value` | `print(value)`: numbers, strings, arrays for tuples and arrays, objects for records |
| `map` | `{"@name": VALUE}`, or `{"@name": {"key": VALUE, ...}}`; multi-key keys joined with `,` |
| `hist` | `hist()` and `lhist()` maps: lists of `{"min": A, "max": B, "count": N}` |
| `stats` | `stats()` maps (`{"count", "average", "total"}`) and `avg()` maps |
| `lost_events` | `{"events": N}`, with `"count": N` beside `data` |
| `helper_error` | `-k`: no `data`, but `"msg"` (the error), `"helper"`, `"retcode"`, `"filename"`, `"line"`, `"col"` |

sonde's own counters have their own types: `map_full` (`{"updates", "max_entries"}`),
`loops_cut` (`{"loops", "limit"}`), `stacks_dropped` (`{"stacks"}`), `lost_address_maps`
(`{"records"}`), `address_maps_dropped` (`{"processes", "limit"}`). Nothing separates the
messages from the maps printed at exit (bpftrace 0.17 wrote two empty lines there). Warnings
and errors that are not about the script's data (attach warnings, usage errors) stay text on
stderr, as in bpftrace.
"#;
