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
| `-p`, `--pid PID` | Trace process PID: uprobes and USDT probes attach to it, other probes filter on it; the run ends when it exits. User-space attach points resolve in it, as in bpftrace 0.26: `uprobe:FUNC` is in its executable, `uprobe:*:FUNC`, `usdt:*:NAME`, `usdt::PROVIDER:NAME` and `usdt:NAME` search every object it maps (named `/proc/PID/root/PATH`), a library name is looked up among its libraries first, and paths resolve through its mount namespace when it has its own. A value that is no pid gets bpftrace's message (`Failed to parse pid: invalid integer: a1111`, `... invalid trailing bytes: 111a1`, `Pid out of range: 5000000`). |
| `-o`, `--output FILE` | Write the output to FILE instead of stdout (errors and warnings stay on stderr). |
| `-f FORMAT` | `text` (the default), `json` (below), `folded` (maps keyed by stacks as folded lines) or `csv`. Another value: `Invalid output format "x"; valid formats: ...`. |
| `-B MODE` | Output buffering of stdout and of `-o FILE`: `line` (written at each newline), `full` (when the buffer is full, and at exit) or `none` (each message at once). Without `-B`, output is written after each batch of events (a burst costs one write; nothing waits behind an idle loop). Another value: `-B must be either 'line', 'full', or 'none'.` |
| `-q`, `--quiet` | No "Attached N probes" line (nor JSON `attached_probes` message). |
| `-v`, `--verbose` | More detail: raw verifier logs; arguments with `-l`. |
| `-k`, `--warnings` | Report at run time a failed probe read (`str()`, `buf()`, `join()`, a dereference or a field of a pointer) and a read of a map element that does not exist, with the place in the script: a warning on stderr as bpftrace words it (`-e:1:37-48: WARNING: Bad address` / `Additional Info - helper: probe_read, retcode: -14`, the line, `~` under the expression), or a `helper_error` message with `-f json`. Without `-k` they read as zeros silently. `-kk` and `-k` with `--no-warnings` are usage errors, as in bpftrace 0.26. |
| `--no-warnings` | No warnings: the checker's and the run's (counts of lost data are still reported). |
| `--unsafe` | Allow `system()` (and file and process access in `--post` scripts). |
| `-I DIR`, `--include FILE` | Search DIR for `#include`d headers first; add `#include "FILE"` to the script. Both repeatable. `#include "p.h"` looks beside the script, then in the working directory, then as `<p.h>`; `#include <p.h>` in the `-I` directories, then `/usr/local/include` and `/usr/include`; an absolute path is read as it is. A header not found is an error (`sonde::parse::include`), as in bpftrace, except a kernel header (`<linux/...>`, `<net/...>`, `<asm/...>`, ...) or one whose constants sonde's table has: BTF has the kernel's types. Only a header's object-like `#define`s are used. |
| `--debuginfo DIR[:DIR]` | Search DIR for the separate DWARF debug files of uprobe binaries (`args`, `-lv`, `uprobe:BIN@FILE:LINE`) and of the files user stacks run in (their frames' source lines, `show_debug_info`) before the defaults, the binary's directory, its `.debug` and `/usr/lib/debug`, as bpftrace 0.26 (libdwfl) searches: by build id (`DIR/.build-id/xx/yyyy.debug`, absolute DIRs), then by the `.gnu_debuglink` name (or `BINARY.debug`) in DIR, a relative DIR being relative to the binary's directory; a file must have the binary's build id, or the debuglink's CRC (`-DIR` skips that check). Repeatable. Files the debuginfod client already fetched are found in its cache; sonde itself downloads nothing. Split DWARF (`.dwo` files next to the binary or in its compilation directory, a `BINARY.dwp` package; stack frames read `.dwo` files only) and dwz supplementary files (`.gnu_debugaltlink`) are read too. |
| `-l`, `--list [PATTERN \| FILE]` | List probes: tracepoints, `rawtracepoint:vmlinux:NAME`, BPF iterators (`iter:NAME`), software and hardware events, kprobes when the kernel has them, the functions of a binary (`uprobe:/bin/bash:read*`; `uretprobe:` lists the same places, without arguments under `-v`), its USDT probes (`usdt:PATH:*`), of binaries matching a glob (`uprobe:./app*:*`; `uprobe:*:FUNC` searches $PATH and the working directory). Several patterns are separated by commas. `struct NAME`, `union NAME`, `enum NAME` (wildcards allowed) list kernel types, with `-v` their definitions (after `vmlinux: `, as bpftrace 0.27 names where they come from). With `-p PID`, also the uprobes and USDT probes of the objects the process maps (`uprobe:*:malloc`, `usdt:*`), named `/proc/PID/root/PATH` as bpftrace 0.26 lists them. With `-e` or a script FILE, the probes the program attaches, wildcards expanded (BEGIN and END attach nowhere; timers show no period). With `-v`, the arguments of tracepoints and raw tracepoints, the `ctx` fields of iterators, and of uprobes from the binary's DWARF (`    int argc`; bpftrace's warning when it has none). A pattern that looks like a file that does not exist is searched, with bpftrace's warning. |
| `--info` | The system, how sonde was built, and what the kernel supports of what sonde uses, found by loading small programs, creating maps and links: helpers, the instruction limit, BTF, map types, probe types (`uprobe_multi`, `kprobe_multi`, `kprobe_session`, `fentry`, `iter`, ...). |
| `--usdt-file-activation` | Activate USDT semaphores in every process that maps the binary. sonde always does so without `-p`/`-c` (the kernel's reference counter raises the semaphore in every mapping of the file, shared libraries included, also of processes started later), as bpftrace 0.26 does (the option is a no-op there too); it is accepted for compatibility. |
| `--dry-run` | Compile, load and attach, then exit. |
| `--test` | Run the script's `test:NAME` probes once each, in order, instead of attaching anything (BEGIN runs before them, END after; no "Attached" line, no maps at exit), and print bpftrace 0.26's gtest-style report: `[ RUN      ] NAME`, then `[       OK ] NAME (D UNIT)` or the test's output and `[  FAILED  ] NAME (D UNIT)`, then the summary (`[==========] N tests ran.`, `[  PASSED  ] N tests.`, the failed ones listed), coloured as bpftrace colours it. A test fails when it returns non-zero (`return 1;`), calls `exit()` with a non-zero code or `errorf()` (or a helper fails under `-k`, or a map update finds its map full: bpftrace's run-time errors); its output, with its `errorf`/`warnf` messages, `-k` helper errors and map-full warnings, is shown only then. `(D UNIT)` is what bpftrace prints: the unit of the run's duration and that unit's size in ns (`(1 ns)`, `(1000 μs)`), not the duration. Exit 1 when a test failed. With `-f json`, one `test_result` message per test. Each test is an XDP program run with `BPF_PROG_TEST_RUN`, as in bpftrace: only helpers XDP may call work there (maps, output, time, `rand`, `cpu`). |
| `--bench` | Run the script's `bench:NAME` probes instead of attaching anything: each runs 1, then 1000, 100000... times (bpftrace's growth) until its runs take 1 ms in all, and a table row gives the kernel's mean ns per run and the number of runs (`Benchmark`, `Time(ns)`, `Iterations` columns, as bpftrace 0.26 prints them; `benchmark_result` messages with `-f json`). What a benchmark prints is discarded. One that returns non-zero (`return 1;`) is skipped: no row (the header comes with the first benchmark's row, so a skipped first benchmark leaves it out, as in bpftrace 0.26). One that calls `errorf()` or `exit()` with a non-zero code, or whose map update finds its map full, fails the run (`ERROR: Benchmark 'NAME' failed.`, exit 1). |
| `--mode MODE` | bpftrace 0.27's developer modes: `--mode test` is `--test`, `--mode bench` is `--bench`; its `codegen`, `compiler-bench` and `format` are refused (`--dump ir`, `--dump bpf` print the generated code), any other word with bpftrace's message. |
| `--probe-filter REGEX` | Only attach and run the probes whose name matches the regular expression (`tracepoint:syscalls:sys_enter_openat`, `test:NAME` under `--test`); BEGIN and END are not affected. A run left with no probe fails (`ERROR: Attachment failed for all probes.`); a bad expression is `Invalid --probe-filter regex`. Both engines filter (`input`, `interval:ms:10`). |
| `-V`, `--version` | Print the version. |
| `-b`, `--btf` | Accepted, no effect (as in bpftrace: BTF is used whenever the kernel has it). |
| `-d`, `--dump STAGE` | sonde's: print `ast`, `types`, `ir` or `bpf` and exit (bpftrace's `-d` takes LLVM's stages). |
| `--check` | sonde's: parse and type-check against this kernel; load nothing. |
| `--engine ENGINE` | sonde's: `bpf` or `jit` (see Engines). |
| `-F SEP` | sonde's: the field separator of `input` lines. |
| `--flamegraph FILE` | sonde's: at exit, draw the maps keyed by stacks as a flame graph SVG. |
| `--heatmap FILE` | sonde's: draw a latency heatmap SVG (see Pictures). |
| `--term-heatmap` | sonde's: at each interval, draw the heatmap of the last 60 intervals on the terminal, when standard output is one (see Pictures). |
| `--chart FILE` | sonde's: draw a line chart SVG of printf'd values over time (see Pictures). |
| `--post FILE`, `-P`, `--post-eval RHAI` | sonde's: post-process the output with a rhai script (see Post-processing). |
| `--metrics ADDR` | sonde's: serve the maps while the script runs, on ADDR (`127.0.0.1:9435`; `:0` picks a port, announced on stderr): see Metrics and profiles. An address in use is an error before anything is traced. |
| `--metrics-file PATH` | sonde's: write the metrics to PATH every `--metrics-interval` and at exit (a temporary file renamed over it), for node_exporter's textfile collector. |
| `--push-folded URL` | sonde's: every `--metrics-interval`, push what each map keyed by stacks counted in it to Pyroscope (`URL/ingest`, folded format; `http://` only). |
| `--metrics-interval SECONDS` | sonde's: how often `--metrics-file` is written and `--push-folded` pushes (15). |
| `--metrics-max-series N` | sonde's: the most series one map exports per scrape (10000). |
| `--metrics-name NAME` | sonde's: the script's name in metric names (default: its file's stem, `e` for `-e`). |

sonde's own process is left out of uprobes, uretprobes and USDT probes: a probe on `malloc` that prints never sees the allocations sonde makes to print (bpftrace's would, without end). A tool's `-p PID` or `-c CMD` (`sonde tool NAME`) places its uprobes in that process only, so that other programs run the library untouched; a script's uprobes are placed in every process that maps the binary, as bpftrace's are, and its predicates filter.

Commands (the first word; `sonde --help` lists them): `sonde tools`, `sonde tool NAME [FLAGS]`
(a tool's values are checked: `-p PID` names a live process that fits a pid, `-i`, `-d` and
`-F` take positive integers, ports fit 16 bits), `sonde record -o FILE`, `sonde replay FILE`,
`sonde flamediff`, `sonde repl`, `sonde serve` (the metrics agent, `--scripts DIR` and
`--listen ADDR`: Metrics and profiles), `sonde man [COMMAND]` (the man page of sonde or of a
command, roff, on stdout) and
`sonde completions bash|zsh|fish|elvish|powershell` (the completion script); the man page
and completions are generated from the same definitions as `--help` (README, Build).

A script file is UTF-8 text: invalid bytes are refused with the bytes named and pointed at
(`sonde::parse::encoding`); a leading byte order mark is skipped; a non-ASCII character
outside strings and comments is named in the syntax error with its code point (`a
non-breaking space (U+00A0)`).

Parameters: positional ones (`$1`, `str($1)`) before or after `--`; named ones (`--name=value`,
or `--flag` for `true`; read with `getopt()`) only after `--`: before it, they are unknown
options (a usage error), as in bpftrace. `sonde -e 'PROG' p1 -- --aa=20 --bb p2` has `$1` = p1,
`$2` = p2 and the named parameters `aa` and `bb`. A positional parameter whose text is a
number (hex, octal, binary, `1e6`, `5ms` as bpftrace reads them) is that number; other text
is a string literal, which `+` folds as bpftrace 0.27 does (`$1 + 2`: from its third
character); inside `str()` every parameter is its text (`str($1)` of `0x10` is `"0x10"`).

bpftrace options sonde does not have (`--no-feature`, `--traceable-functions`, `--dwarf-pid`,
`--emit-elf`, `--emit-llvm`, `--verify-llvm-ir`, `--aot`, `--fmt`) are usage errors.

`return;` leaves the probe; `return EXPR;` (bpftrace 0.26) leaves it and makes EXPR, an
integer (`sonde::sema::return_type` otherwise, bools included), the program's return value.
Every other way out of a probe returns 0. The value matters to `--test` (a test that returns
non-zero fails) and `--bench` (a benchmark that returns non-zero is skipped); elsewhere it
is what the kernel makes of a program's return value (nothing, for most probe types; fentry
and fexit programs must return 0, or the verifier refuses them). `return` in a macro is
refused (`sonde::parse::macro_return`), as in bpftrace.

`self:signal:SIGUSR1` probes run in sonde's own task (`pid` and `comm` are sonde's), between
two batches of events, each time sonde receives `SIGUSR1` (signals that arrive together run
them once); sonde catches `SIGUSR1` in every run, as bpftrace does, so without such a probe
it does nothing. `sonde -l 'self:*'` lists them.

`watchpoint:ADDR:LEN:MODE` probes are hardware breakpoints (the kernel's `breakpoint` PMU, four
debug registers per CPU on x86-64): `MODE` is `w`, `rw` or `x` (letters in any order; x86-64
has no read-only breakpoint), `LEN` 1, 2, 4 or 8 (an `x` breakpoint covers one instruction).
With `-p PID` or `-c CMD`, `ADDR` is an address of that process (a breakpoint on each of its
threads, inherited by threads created later; `-c` watches the child from before its `exec`,
whose clearing of `.bss` counts as writes) and the probe is named after it
(`watchpoint:/proc/PID/exe:ADDR:LEN:MODE`, the address in decimal, as bpftrace names it);
without, a kernel address watched on every CPU (a user address is refused:
`sonde::attach::watchpoint`; a kernel without kprobes refuses `x` in kernel code). bpftrace
0.26 removed `watchpoint:FUNC+argN`, `asyncwatchpoint` and, with them, what `unwatch()` did;
sonde refuses all three.

## Metrics and profiles (`--metrics`, `sonde serve`)

A running script's maps, served over HTTP by `--metrics ADDR` (either engine):

| path | what |
|---|---|
| `GET /metrics` | Every map as Prometheus metrics, in the format the `Accept` header prefers: Prometheus text 0.0.4 (the default), OpenMetrics, or the delimited protobuf of `io.prometheus.client.MetricFamily` (the one with native histograms). |
| `GET /maps` | Every map as JSON: `{"maps": [{"name": "@x", "entries": [{"key": ..., "value": ...}]}]}`, keys and values as `-f json` prints them. |
| `GET /debug/pprof/MAP` | A map keyed by stacks (`@cpu[kstack, ustack, comm] = count()`) as a gzipped pprof profile: kernel frames then user frames, leaf first, symbolized; the key's other parts as labels; `count()` as `samples/count` (with `profile:hz:N`, also `cpu/nanoseconds`), `sum()` as `value/count`. `?seconds=N` (1..300): what the map counted in the next N seconds. A map without a stack in its key: 400, naming it; no such map: 404. |
| `GET /-/healthy` | 200 while the script runs. |

Metric names are `sonde_<script>_<map>` (`sonde_<script>` for `@`); keys become labels named
after the key expressions (`comm`, `args.rwbs` → `args_rwbs`, `str(args.filename)` →
`args_filename`, `$x` → `x`; `key0`, `key1`... for an expression that is not a name), label
values as `print` shows them (invalid UTF-8 replaced). By value:

| value | metric |
|---|---|
| `count()`, `sum()` | counter (`_total`), kept monotonic across `clear()` and `zero()` (the values a map held when cleared are kept as an offset) |
| `hist()` | histogram: a bucket per log2 bucket with its largest integer as `le` (0, 1, 3, 7, 15, ...; negative values in `le="-1"` when there are some), up to the last bucket holding a value, then `+Inf`; `_sum` is the sum of the values, kept by the program beside the buckets; `_count`. In the protobuf format also a native histogram (schema 0: each bucket goes to the power of two of its largest integer) |
| `lhist()` | histogram with its linear bounds (`min - 1`, `min + step - 1`, ...) |
| `avg()` | histogram of one `+Inf` bucket: its `_sum` and `_count` |
| `stats()` | the same, and a gauge `<name>_avg` |
| `min()`, `max()`, integers, booleans | gauge |
| strings, records, stacks, `tseries()` | not exported (stacks: `/debug/pprof`) |

At most `--metrics-max-series` series per map go out (the first in the map's own order);
`sonde_series_dropped{script,map}` says how many more the map had at the last scrape, and
a map of a million keys costs a scrape the values of the kept ones only. The run's own
figures, labelled `script`: `sonde_probes_attached`, `sonde_events_total`,
`sonde_lost_events_total`, `sonde_map_full_drops_total`, `sonde_pushes_dropped_total`,
`sonde_scrape_duration_seconds` (of the previous scrape). Scrapes are answered by the run
loop between two batches of events (at most 100 ms later); a request waits 10 s for it (a
profile 60 s, for its first symbolization), at most 16 at once. Once its probes are
attached, a run with `--metrics` keeps only the capabilities CAP_BPF, CAP_PERFMON,
CAP_SYSLOG, CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH, and sets `no_new_privs`.

`sonde serve --scripts DIR [--listen ADDR] [--metrics-max-series N]` runs every `*.sd` file
of DIR as one agent (ADDR defaults to `127.0.0.1:9435`), each script in a sonde process of
its own (`--metrics 127.0.0.1:0`), killed with the agent. It serves `/metrics` (every
script's exposition merged: a family the scripts share appears once, with each script's
series; `sonde_serve_script_up{script}` is 1 for a script serving, 0 for one starting or
failed), `/maps` (`{"SCRIPT": maps}`), `/scripts` (each script's state, address, exit code
and last error lines), `/debug/pprof/SCRIPT/MAP` and `/-/healthy`. A script that fails is
reported (its diagnostics on stderr, prefixed `[SCRIPT]`, and in `/scripts`) and restarted
when its file changes; a file added, changed or removed is started, restarted or stopped
within a second; SIGHUP restarts every script; SIGINT and SIGTERM end the agent and its
scripts. `deploy/` has a systemd unit and a Kubernetes DaemonSet (scripts in a ConfigMap).

## Live sessions (`sonde repl`)

`sonde repl [-f text|json] [--unsafe]` (as root) starts a live tracing session. Each entry is
checked and compiled with everything entered before it, and its probes attach at once under
an id (`[3] attached 1 probe in 4 ms: ...`); a BEGIN probe runs when entered. Maps live across
entries: a probe entered later reads and updates the same `@maps`. Any sequence of entries
that would make a valid script works: types unify across entries as they do in a script
(strings stored in maps take `max_strlen` bytes from the start, so a longer string entered
later fits); an entry that would change a map's layout all the same (a longer
`max_strlen`, another `max_map_keys`) is refused. An entry stays open, its next lines read
with the `  ...> ` prompt, until its braces, brackets and parentheses close; a probe's
closing brace ends it whatever is still open inside (`BEGIN { @x = count( }` shows the
syntax error), and Ctrl-C drops it. A bad entry is shown with the same
diagnostics as a script and changes nothing that is attached. An entry whose probes are all
`input` or `replay` probes runs at once in the userspace engine, with the session's
definitions, parameters and format (`input:/var/log/app.log { @[field(1)] = count(); }`; a
plain `input` reads the terminal until Ctrl-D): it prints its own maps at its end and keeps
nothing; an entry mixing them with kernel probes is refused. Ctrl-C clears the line being typed or stops `:watch`;
Ctrl-D or `:quit` detaches everything, runs the END probes of the entries still attached
and prints the maps (as a script's exit does; `print_maps_on_exit = false` turns it off), and
`exit()` in a probe does the same. Tab completes commands, probe types, tracepoints and
uprobe functions (`uprobe:/bin/bash:rea`, from the same listing as `-l`), builtins,
functions, `args.` fields of the probe's tracepoint, kernel struct fields through `curtask->`
(from BTF, following pointer fields) and map names. History is kept in
`$SONDE_HISTORY`, else `~/.sonde_history`.

| command | what it does |
|---|---|
| `:help` | the commands |
| `:list` | the entries whose probes are attached, with their ids |
| `:detach N`, `:detach all` | detach entry N's probes (unload its programs), or all |
| `:print @m [N]`, `:top @m [N]` | print a map as `print(@m, N)` does (`:top`: the 10 largest by default) |
| `:clear @m` | remove every entry of a map |
| `:maps` | the maps with their types |
| `:script` | the script so far: definitions and the entries still attached |
| `:save FILE`, `:load FILE` | write the script so far; enter a file's text as one entry |
| `:format text\|json` | how output is printed from now on |
| `:set $N VALUE`, `:params` | set a positional parameter for later entries; list them |
| `:run CMD` | start CMD as `-c` does; later entries see its pid as `cpid`; its exit is reported; it is killed when the session ends |
| `:watch @m [SECS]` | redraw the map in place every SECS seconds (default 1; keyed maps: the 20 largest entries) until a key is pressed |
| `:quit`, `:q` | end the session |

The shared maps are pinned in a bpffs of the session's own, mounted nowhere (created with
`fsopen`/`fsmount`; this takes `CAP_SYS_ADMIN`): nothing is written under `/sys/fs/bpf`, no
other process can see or plant anything there, and it goes with the process, so a session
that is killed (even with `SIGKILL`, even while an entry loads) leaves nothing behind.

## Pictures

sonde draws its pictures itself (`runtime/present/src/pictures/`), as SVG files that any browser opens;
hovering over a cell, a frame or a line shows its numbers.

- `--heatmap FILE`: a latency heatmap, time on x, latency buckets on y, each cell coloured by
  its count (light yellow for one event to dark red for the fullest cell). Its columns are
  the snapshots of a `hist()` or `lhist()` map printed (and cleared) during the run, one per
  run of `print()` events (`interval:s:1 { print(@us); clear(@us); }`); the keys of a keyed
  map are summed; with several histogram maps, the one with the most events is drawn. Rows
  are its buckets (log2 or linear) from the lowest to the highest that holds an event. A
  script without such a map draws the printf events of two integers instead, a time in
  nanoseconds and a latency (`printf("%d %d\n", nsecs, $lat)`): they are binned in `hist()`'s
  log2 buckets, in columns of 1, 2 or 5 times a power of ten (1 ms to 1 h) chosen to keep at
  most 100 columns. A cell's tooltip gives its time range, bucket, count and its share of the
  column and of all events. A script that prints neither is refused before it runs
  (`sonde::pictures::heatmap`). `sonde tool biolatency`, `runqlat` and `funclatency` take
  `--heatmap FILE` (printing their histogram every second unless an interval is given).
- `--chart FILE`: a line chart of printf events whose arguments are all integers: the first a
  time in nanoseconds, each other a line named by the word before its conversion
  (`printf("%d heap=%d stack=%d\n", nsecs, $heap, $stack)`), or by a string argument just
  before it (`printf("%d %s=%d\n", nsecs, $name, $v)`: the first event's string names the
  line). Values hold until the next event
  (steps); a series ten times smaller than the first gets its own axis, on the right. Names
  `heap`, `stack` or ending in `bytes` make the axis bytes (KiB, MiB). `sonde tool memusage
  --chart FILE` draws heap and stack use over time, as glibc's memusagestat, for `-c` or `-p`;
  `sonde tool allocreplay --chart FILE` live bytes and each allocator's RSS.
- `--flamegraph FILE` and `sonde flamediff BEFORE.folded AFTER.folded -o DIFF.svg
  [--normalize] [--negate] [--title TEXT]`: flame graphs by inferno. `flamediff` draws AFTER's
  stacks coloured by the change from BEFORE (red grew, blue shrank; `--normalize` scales BEFORE
  to AFTER's total first); the folded files are what `-f folded` writes (`frame;frame count`
  lines), checked line by line.
- `--term-heatmap`: the heatmap of the last 60 intervals, redrawn after each run of `print()`
  events, with 24-bit coloured blocks, when standard output is a terminal.

Where a picture goes (`--heatmap`, `--chart`, `--flamegraph`) is checked before the run: a
directory, a missing directory or one that cannot be written is an error then
(`sonde::pictures::write`), not after the run. Each picture written is announced on standard
error: `heatmap written to FILE`, `chart written to FILE`, `flame graph written to FILE`,
`differential flame graph written to FILE`.

## JSON output

`-f json` writes one JSON object a line (NDJSON), bpftrace 0.26's messages,
`{"type": TYPE, "data": DATA}`:

| type | data |
|---|---|
| `attached_probes` | `{"probes": N}`, with `"count": N` beside `data` |
| `printf` | the formatted text |
| `time` | the formatted time |
| `row` | a line of an event tool (`sonde tool execsnoop`, `opensnoop`): `{"COLUMN": VALUE, ...}`, keyed by the columns its header line names (the header itself is no record) |
| `cat` | the file's contents |
| `join` | the joined strings, without a newline |
| `syscall` | what `system()`'s command wrote on its stdout |
| `value` | `print(value)`: numbers, strings, arrays for tuples and arrays, objects for records |
| `map` | `{"@name": VALUE}`, or `{"@name": {"key": VALUE, ...}}`; multi-key keys joined with `,` |
| `hist` | `hist()` and `lhist()` maps: lists of `{"min": A, "max": B, "count": N}` |
| `stats` | `stats()` maps (`{"count", "average", "total"}`) and `avg()` maps; an empty one is `{"@name": {}}` (other empty maps print nothing), as bpftrace 0.26 |
| `tseries` | `tseries()` maps: lists of `{"interval_start": "YYYY-MM-DD HH:MM:SS.NNNNNNNNN", "value": N}` (UTC), intervals without a value left out |
| `lost_events` | `{"events": N}`, with `"count": N` beside `data` |
| `helper_error` | `-k`, and a map update refused because the map is full (`"helper": "map_update_elem"`, `"retcode": -7`; each place's first 10): no `data`, but `"msg"` (the error's text, as bpftrace: `Argument list too long` for a full map), `"helper"`, `"retcode"`, `"filename"`, `"line"`, `"col"` |

sonde's own counters have their own types: `map_full` (`{"updates", "max_entries"}`),
`loops_cut` (`{"loops", "limit"}`), `stacks_dropped` (`{"stacks"}`), `lost_address_maps`
(`{"records"}`), `address_maps_dropped` (`{"processes", "limit"}`). Nothing separates the
messages from the maps printed at exit (bpftrace 0.17 wrote two empty lines there). Warnings
and errors that are not about the script's data (attach warnings, usage errors) stay text on
stderr, as in bpftrace.

## Shipped tools

`sonde tools` lists them, `sonde tool NAME -h` shows a tool's flags (its header in
`stdlib/NAME.sd`). A tool's short letters win over sonde's global options, which keep their
long forms (`--output`, `--format`, `--quiet`, `--post`); every tool also takes libbpf-tools'
`-V`/`--version`, `--usage` and `-v`/`--verbose`. A flag's value is checked by the
kind its placeholder names: `PID`/`TID` a process id (1 to 4194304), `INTERVAL`, `COUNT`,
`DURATION`, `TOP`, `SAMPLE_RATE` and `SECONDS` a positive integer, `ERRNO` a number or a name (`ENOENT`), `FILTER` ltrace's `SYMBOL@LIBRARY`, `PROTOTYPES` a file of ltrace's prototypes,
`CG` a cgroup v2 directory, `DISK` a disk /sys/block lists, `PATH` an existing file, `PORTS`
one to four ports separated by commas; anything else is a usage error. A flag whose
one attach point per value; `-tt` gives a counted flag twice. A tool's report reads the
tool's flags through `params()` (an object map of their texts, with `format`: the `-f`
given, `text` by default).

| tool | what it prints | flags | as |
|---|---|---|---|
| `allocrecord` | nothing per call: a process's malloc, calloc, realloc, free, posix_memalign, aligned_alloc, memalign and valloc calls (mmap, munmap, brk for context) with thread, time, sizes, blocks and stack id, recorded to FILE (`sonde record`'s format, read by `sonde_drivers::allocs`); at the end one summary line (report `stdlib/allocrecord.rhai`) | `-c CMD -p PID -o FILE [duration]` | the recording half of heaptrack; allocreplay replays it |
| `allocreplay` | a recording's calls replayed against several allocators (glibc, jemalloc, tcmalloc, any `.so` by LD_PRELOAD) in a harness process, side by side: wall time, ns per call (p50/p99), peak and end RSS, RSS / live bytes, the allocator's memory system calls (report `stdlib/allocreplay.rhai`; its lines come from a producer, `PRODUCER:` in its header) | `-a LIST --threads-free --touch --chart RECORDING` | |
| `bashreadline` | each command line a bash reads (readline's return): TIME PID COMMAND, as libbpf-tools' | `-s PATH` | libbpf-tools' bashreadline |
| `biolatency` | block I/O latency histogram | `-T -m -Q -D -F -e -j -d DISK -c CG --extended --heatmap [interval [count]]` | libbpf-tools' biolatency (`-e`, `-j`: bcc's average line and JSON lines) |
| `biosnoop` | each block I/O request: TIME(s) COMM PID DISK T SECTOR BYTES (QUE(ms)) LAT(ms), as libbpf-tools' | `-d DISK -c CG -Q [duration]` | libbpf-tools' biosnoop |
| `biotop` | block I/O by process, direction and disk every interval: loadavg, then PID COMM D MAJ MIN DISK I/O Kbytes AVGms, busiest first, printed as libbpf-tools' (report `stdlib/biotop.rhai`) | `-C -r ROWS -s SORT [interval [count]]` | libbpf-tools' biotop |
| `bitesize` | block I/O size histograms (Kbytes) per process name, printed as libbpf-tools' | `-T -c COMM -d DISK [interval [count]]` | libbpf-tools' bitesize |
| `capable` | each capability check: TIME UID PID COMM CAP NAME AUDIT (`-x`: TID, INSETID), as libbpf-tools'; a kprobe on `cap_capable`, refused at attach where the kernel has no kprobes (no tracepoint sees capability checks) | `-p PID -c CG -K -U -x -u TYPE` | libbpf-tools' capable |
| `cpudist` | on-CPU (`-O` off-CPU) time histograms, total, per process (`-P`) or thread (`-L`), printed as libbpf-tools' (report `stdlib/log2hist.rhai`) | `-O -T -m -P -L -p PID -c CG [interval [count]]` | libbpf-tools' cpudist |
| `execsnoop` | each exec() with its arguments and result | `-T -t -x -u UID -q -n NAME -l LINE -U -P PPID -c CG --max-args` | libbpf-tools' execsnoop |
| `exitsnoop` | each process (`-T` thread) exit: PCOMM PID PPID TID AGE(s) EXIT_CODE, as libbpf-tools' | `-t -x -p PID -T -c CG` | libbpf-tools' exitsnoop |
| `funclatency` | a user function's latency histogram (`c:FUNC`: libc's, bcc's short library names; `-F`: one per function; `-r`: functions by regular expression) | `-u -m -F -r -T -p PID -c CG --cmd CMD -d SECONDS -i SECONDS` | bcc's funclatency (libbpf-tools' histogram) |
| `gethostlatency` | host name lookups' latency | `-p PID -c CMD` | bcc's gethostlatency |
| `hardirqs` | time in (or, `-C`, count of) each hardware interrupt handler, printed as libbpf-tools' | `-T -N -C -d -c CG [interval [times]]` | libbpf-tools' hardirqs |
| `killsnoop` | `sigsnoop -k` (as libbpf-tools' killsnoop, the same program) | `-x -k -n -p PID -s SIGNAL` | libbpf-tools' killsnoop |
| `ltrace` | each library call with its arguments and result (`-c`: counted and timed), as ltrace prints them: by default the program's own calls of the functions it imports (`-e PATTERN` narrows them), with `-x` every call of the functions named; libraries loaded by dlopen() after the start included | `-c -e EXPR... -x FILTER... -p PID -t/-tt/-ttt -T -F PROTOTYPES --duration SECONDS [command]` | ltrace 0.7.3 (`-e` symbol patterns; `-x SYMBOL@LIBRARY`; `-F`: ltrace.conf's simple types) |
| `memleak` | outstanding allocations by stack, of a process (`-p`, `-c`: libc's allocators, every interval and at its exit) or of the kernel (kmem tracepoints), printed as bcc's (report `stdlib/memleak.rhai`) | `-p PID -c COMMAND -t -a -o OLDER -s SAMPLE_RATE -T TOP -z MIN_SIZE -Z MAX_SIZE -O OBJ --combined-only --wa-missing-free --percpu --sort KEY [interval [count]]` | bcc's memleak |
| `memusage` | glibc's memusage report | `-c CMD -p PID --chart` | glibc's memusage |
| `offcputime` | off-CPU time by stack | `-p PID -t TID -u -k -c CMD -U -K -m MIN_US -M MAX_US --state STATE -f --flamegraph [duration]` | bcc's offcputime |
| `opensnoop` | each openat() and its result | `-T -U -x -p PID -t TID -u UID -d DURATION -n NAME -e` | libbpf-tools' opensnoop |
| `profile` | sampled kernel and user stacks (`-c`: every COUNT ns of cpu-clock, bcc's sample period; `-f -d -a`: bcc's delimited and annotated folded lines, report `stdlib/profile.rhai`) | `-F HZ -c COUNT -p PID -L TID --cmd CMD -U -K -I -C CPU -f -d -a --flamegraph [duration]` | bcc's profile |
| `runqlat` | run-queue latency histogram | `-T -m --pidnss -L -P -p PID -c CG --extended --heatmap [interval [count]]` | libbpf-tools' runqlat |
| `runqlen` | run-queue length sampled (`-f` Hz), linear histograms (`-C` per CPU) or occupancy (`-O`), printed as libbpf-tools' (report `stdlib/runqlen.rhai`) | `-C -O -T -f FREQUENCY [interval [count]]` | libbpf-tools' runqlen |
| `runqslower` | each run-queue wait over `min_us` (10000 us): TIME COMM TID LAT(us), as libbpf-tools' | `-p PID -t TID -P [min_us]` | libbpf-tools' runqslower |
| `sigsnoop` | each signal generated (`-k`: sent by kill(), tkill(), tgkill()): TIME PID COMM SIG TPID RESULT, as libbpf-tools' | `-x -k -n -p PID -s SIGNAL` | libbpf-tools' sigsnoop |
| `softirqs` | time in each softirq vector (total, or histograms with `-d`), printed as libbpf-tools' | `-T -N -d [interval [count]]` | libbpf-tools' softirqs |
| `statsnoop` | each stat(), lstat(), fstatat(), statx(), statfs(): PID COMM RET ERR PATH, as libbpf-tools' | `-t -x -p PID` | libbpf-tools' statsnoop |
| `syncsnoop` | each sync(), fsync(), fdatasync(), syncfs(), sync_file_range(), msync(): TIME(s) COMM CALL, as bcc's |  | bcc's syncsnoop |
| `syscount` | system calls counted by name or process, with latency | `-L -m -P -x -e ERRNO -p PID -c CG -T TOP -i INTERVAL -d DURATION -l` | libbpf-tools' syscount |
| `tcpaccept` | each accepted TCP connection: PID COMM IP RADDR RPORT LADDR LPORT, as bcc's (from the accept syscalls' exit; its `--cgroupmap`/`--mntnsmap` are not supported) | `-T -t -p PID -P PORTS -4 -6` | bcc's tcpaccept |
| `tcpconnect` | each established connect(): PID COMM IP SADDR DADDR DPORT (`-c`: counts per address pair and port), as libbpf-tools' (from the `sock:inet_sock_set_state` tracepoint; its `-C`/`-M` maps are not supported) | `-c -s -t -U -p PID -u UID -P PORTS` | libbpf-tools' tcpconnect |
| `tcplife` | TCP sessions when they close (`-w`: wide address columns, as libbpf-tools'; `-s`: comma-separated values, as bcc's) | `-T -t -w -s -4 -6 -p PID -L PORT -D PORT` | bcc's tcplife |
| `tcpretrans` | each TCP retransmit: TIME PID IP LADDR:LPORT T> RADDR:RPORT STATE (`-c`: counts per flow), as bcc's, on `tcp:tcp_retransmit_skb` (its `-l` and `-s` are not supported) | `-c -4 -6` | bcc's tcpretrans |
| `tcpstates` | each TCP state change: SKADDR PID COMM LADDR LPORT RADDR RPORT OLDSTATE -> NEWSTATE MS, as libbpf-tools' | `-4 -6 -T -w -L PORTS -D PORTS` | libbpf-tools' tcpstates |
| `tcptop` | TCP throughput by connection every interval: loadavg, then PID COMM LADDR RADDR RX_KB TX_KB, busiest first, printed as libbpf-tools' (report `stdlib/tcptop.rhai`), from the `sock:sock_send_length`/`sock_recv_length` tracepoints | `-4 -6 -c CG -C -p PID -r ROWS -s SORT -S [interval [count]]` | libbpf-tools' tcptop |
"#;
