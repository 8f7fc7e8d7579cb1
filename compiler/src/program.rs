//! The compiler's output: an ELF object plus everything the runtime needs to attach its
//! programs, read its maps and decode its events. This is the contract between
//! `sonde-compiler` and the runtime crates (`sonde-kernel`, `sonde-session`, ...).

use sonde_lang::span::Span;
use sonde_lang::types::Type;

/// A compiled script, ready to load.
#[derive(Clone, Debug, Default)]
pub struct CompiledScript {
    /// The ELF object (programs, legacy `maps` section, `license`), loadable by aya.
    pub elf: Vec<u8>,
    /// Programs in the ELF, one per attach target group.
    pub programs: Vec<ProgramSpec>,
    /// Maps in the ELF.
    pub maps: Vec<MapSpec>,
    /// Ring-buffer event kinds; an event's first 8 bytes are its index in this list.
    pub events: Vec<EventSpec>,
    /// Enumerators of the enums whose values the program prints (by tag).
    pub enums: crate::enums::EnumTable,
}

impl CompiledScript {
    /// Keeps the attach targets whose name `keep` accepts (`--probe-filter`), BEGIN and END
    /// always, and a probe's syscall dispatcher while one of its slots stays. Returns the
    /// number of attach targets left.
    pub fn keep_probes(&mut self, keep: impl Fn(&str) -> bool) -> usize {
        for p in &mut self.programs {
            p.attach.retain(|t| match t.spec {
                AttachSpec::Begin | AttachSpec::End | AttachSpec::SyscallDispatch { .. } => true,
                _ => keep(&t.name),
            });
        }
        let with_slots: std::collections::HashSet<usize> = self
            .programs
            .iter()
            .filter(|p| {
                p.attach
                    .iter()
                    .any(|t| matches!(t.spec, AttachSpec::SyscallSlot { .. }))
            })
            .map(|p| p.probe_index)
            .collect();
        for p in &mut self.programs {
            let index = p.probe_index;
            p.attach.retain(|t| {
                !matches!(t.spec, AttachSpec::SyscallDispatch { .. }) || with_slots.contains(&index)
            });
        }
        self.programs.iter().map(|p| p.attach.len()).sum()
    }
}

/// One BPF program and where to attach it.
#[derive(Clone, Debug)]
pub struct ProgramSpec {
    /// Symbol name in the ELF (mangled, `[A-Za-z0-9_]`, at most 15 chars).
    pub symbol: String,
    /// ELF section name (its prefix selects the program type for aya).
    pub section: String,
    /// Where to attach; one program may be attached at several targets.
    pub attach: Vec<AttachTarget>,
    /// Index of the probe in the source program.
    pub probe_index: usize,
    /// Span of the probe's first attach point (for attach errors).
    pub span: Span,
    /// Per instruction: the source span that generated it (for verifier errors).
    pub insn_spans: Vec<Span>,
}

/// One attach of a program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttachTarget {
    /// The kernel mechanism and its parameters.
    pub spec: AttachSpec,
    /// Canonical probe name (for messages).
    pub name: String,
    /// Span of the attach point in the source.
    pub span: Span,
}

/// Kernel attach mechanisms (not providers: `profile`, `interval` and `software` are all
/// `PerfEvent`). Matched exhaustively by the runtime.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AttachSpec {
    /// Run once before anything else (BEGIN).
    Begin,
    /// Run once after all other probes are detached (END).
    End,
    /// A tracefs tracepoint.
    Tracepoint {
        /// Category (`syscalls`).
        category: String,
        /// Event name (`sys_enter_openat`).
        name: String,
    },
    /// A raw tracepoint.
    RawTracepoint {
        /// Tracepoint name (`sched_switch`).
        name: String,
    },
    /// A perf event sampled by period or frequency.
    PerfEvent {
        /// Event type and config.
        event: PerfEventKind,
        /// Sampling.
        sample: PerfSample,
        /// On every online CPU (profile, software) or on one CPU only (interval).
        all_cpus: bool,
    },
    /// A uprobe or uretprobe.
    Uprobe {
        /// Resolved binary path.
        path: String,
        /// Function symbol, if attached by name.
        symbol: Option<String>,
        /// Offset from the symbol (or absolute file offset when no symbol).
        offset: u64,
        /// uretprobe when true.
        ret: bool,
        /// File offset of a USDT semaphore the kernel increments while the probe is attached
        /// (so the program runs the probe's code), 0 when none.
        ref_ctr_offset: u64,
    },
    /// A kprobe or kretprobe (cannot attach on kernels without kprobe support).
    Kprobe {
        /// Kernel function.
        function: String,
        /// Offset into it.
        offset: u64,
        /// kretprobe when true.
        ret: bool,
    },
    /// fentry/fexit (BPF trampolines).
    Fentry {
        /// Kernel function.
        function: String,
        /// fexit when true.
        ret: bool,
    },
    /// A BPF iterator (`iter:task`): attaching creates its link; after BEGIN the runtime
    /// reads it once (the program runs for each object) or pins it in bpffs instead.
    Iter {
        /// The iterator (`task`, `task_file`, ...): the kernel's `bpf_iter_<name>`.
        name: String,
        /// Where to pin the link instead of running it: an absolute path in bpffs.
        pin: Option<String>,
    },
    /// A syscall tracepoint reached through its probe's dispatcher (see
    /// `catalog::providers::syscall_dispatch`): attaching puts the program in slot `nr` of
    /// the table [`syscall_table_symbol`] names.
    SyscallSlot {
        /// The tracepoint (`sys_enter_openat`).
        name: String,
        /// The syscall number: the slot.
        nr: u32,
        /// `sys_exit_*` when true.
        exit: bool,
    },
    /// The dispatcher of one probe's syscall tracepoints: a raw tracepoint on `sys_enter`
    /// (`sys_exit` when `exit`) that tail-calls the program in the slot of the syscall.
    /// Not a probe of its own: "Attached N probes" counts the slots.
    SyscallDispatch {
        /// On `sys_exit` when true.
        exit: bool,
    },
    /// `self:signal:NAME`: not attached; run with `BPF_PROG_TEST_RUN` in sonde's own task
    /// each time sonde receives `signal` (bpftrace's `self` probes).
    Signal {
        /// The signal number (`SIGUSR1` = 10).
        signal: i32,
    },
    /// `watchpoint:ADDR:LEN:MODE`: a hardware breakpoint (`PERF_TYPE_BREAKPOINT`) on the
    /// threads of the `-p`/`-c` process, or on every CPU for a kernel address.
    Watchpoint {
        /// The watched address.
        addr: u64,
        /// The watched length in bytes (1, 2, 4 or 8).
        len: u8,
        /// The access that fires it, letters sorted: `w`, `rw` or `x`.
        mode: String,
    },
    /// `test:NAME` (`--test`) or `bench:NAME` (`--bench`): not attached; an XDP program run
    /// with `BPF_PROG_TEST_RUN` (the only tracing-free program type whose test runs repeat
    /// and report their duration), ignored by other runs.
    SelfTest {
        /// The test's or benchmark's name.
        name: String,
        /// A benchmark when true.
        bench: bool,
    },
    /// Userspace engine: each line of standard input (`None`) or of a file.
    Input {
        /// The file, or `None` for standard input.
        path: Option<String>,
    },
    /// Userspace engine: each recorded printf event of kind `event`.
    Replay {
        /// Index of the event kind in the recording.
        event: u32,
    },
}

impl AttachSpec {
    /// The ELF section prefix that selects the program type for this mechanism (the loader
    /// reads the part before the first `/`). BEGIN and END are raw tracepoint programs, run
    /// once with `BPF_PROG_TEST_RUN`.
    pub fn section(&self) -> &'static str {
        match self {
            AttachSpec::Begin
            | AttachSpec::End
            | AttachSpec::RawTracepoint { .. }
            | AttachSpec::SyscallSlot { .. }
            | AttachSpec::SyscallDispatch { .. }
            | AttachSpec::Signal { .. } => "raw_tp",
            AttachSpec::Tracepoint { .. } => "tracepoint",
            AttachSpec::PerfEvent { .. } | AttachSpec::Watchpoint { .. } => "perf_event",
            AttachSpec::SelfTest { .. } => "xdp",
            AttachSpec::Uprobe { ret: false, .. } => "uprobe",
            AttachSpec::Uprobe { ret: true, .. } => "uretprobe",
            AttachSpec::Kprobe { ret: false, .. } => "kprobe",
            AttachSpec::Kprobe { ret: true, .. } => "kretprobe",
            AttachSpec::Fentry { ret: false, .. } => "fentry",
            AttachSpec::Fentry { ret: true, .. } => "fexit",
            AttachSpec::Iter { .. } => "iter",
            AttachSpec::Input { .. } | AttachSpec::Replay { .. } => "userspace",
        }
    }
}

/// Which perf event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PerfEventKind {
    /// `PERF_TYPE_SOFTWARE` with this config (`PERF_COUNT_SW_*`).
    Software(u64),
    /// `PERF_TYPE_HARDWARE` with this config (`PERF_COUNT_HW_*`).
    Hardware(u64),
}

/// How often a perf event fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PerfSample {
    /// Every N events (for cpu-clock: every N nanoseconds).
    Period(u64),
    /// N times per second.
    Frequency(u64),
}

/// The BPF map types sonde uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapKind {
    /// `BPF_MAP_TYPE_HASH`
    Hash,
    /// `BPF_MAP_TYPE_PERCPU_HASH`
    PerCpuHash,
    /// `BPF_MAP_TYPE_ARRAY`
    Array,
    /// `BPF_MAP_TYPE_PERCPU_ARRAY`
    PerCpuArray,
    /// `BPF_MAP_TYPE_RINGBUF`
    RingBuf,
    /// `BPF_MAP_TYPE_STACK_TRACE`
    StackTrace,
    /// `BPF_MAP_TYPE_STACK_TRACE` with `BPF_F_STACK_BUILD_ID`: each frame a 32-byte
    /// `struct bpf_stack_build_id` (status, build id, offset or address) instead of an address
    BuildIdStackTrace,
    /// `BPF_MAP_TYPE_PROG_ARRAY` (tail-call targets)
    ProgArray,
    /// `BPF_MAP_TYPE_LRU_HASH` (a map declared `lruhash`)
    LruHash,
    /// `BPF_MAP_TYPE_LRU_PERCPU_HASH` (an aggregation map declared `lruhash` or
    /// `percpulruhash`)
    LruPerCpuHash,
}

impl MapKind {
    /// The kernel's `bpf_map_type` number.
    pub fn kernel_type(self) -> u32 {
        match self {
            MapKind::Hash => 1,
            MapKind::Array => 2,
            MapKind::PerCpuHash => 5,
            MapKind::PerCpuArray => 6,
            MapKind::ProgArray => 3,
            MapKind::LruHash => 9,
            MapKind::LruPerCpuHash => 10,
            MapKind::StackTrace | MapKind::BuildIdStackTrace => 7,
            MapKind::RingBuf => 27,
        }
    }

    /// The map's creation flags (`map_flags`).
    pub fn flags(self) -> u32 {
        match self {
            // BPF_F_STACK_BUILD_ID
            MapKind::BuildIdStackTrace => 1 << 5,
            _ => 0,
        }
    }

    /// True for per-CPU maps (a lookup from userspace returns one value per possible CPU).
    pub fn per_cpu(self) -> bool {
        matches!(
            self,
            MapKind::PerCpuHash | MapKind::PerCpuArray | MapKind::LruPerCpuHash
        )
    }
}

/// What a map holds, from the runtime's point of view.
#[derive(Clone, Debug, PartialEq)]
pub enum MapRole {
    /// A user map `@name`: printed at exit.
    User {
        /// Name without `@`.
        name: String,
        /// Key type (`None` for `@x` without keys; the BPF key is then a u32/u64 zero).
        key: Option<Type>,
        /// Value type (`Type::Agg` for aggregations).
        value: Type,
    },
    /// The ring buffer carrying events to userspace.
    Events,
    /// Per-CPU scratch space for large values (strings, tuples, keys).
    Scratch,
    /// Stack traces referenced by `kstack`/`ustack` ids.
    Stacks {
        /// Kernel stacks when true.
        kernel: bool,
    },
    /// Stack traces referenced by `ustack(build_id)` ids (a [`MapKind::BuildIdStackTrace`]).
    BuildIdStacks,
    /// Counters of dropped updates and lost events, indexed by [`Counter`].
    Counters,
    /// The programs of one probe's syscall tracepoints, by syscall number
    /// ([`AttachSpec::SyscallSlot`]).
    SyscallTable,
    /// The clocks of `delta` (per thread) or `delta(KEY)` (per key): keyed by the probe's
    /// index and the thread id or key, the last firing time and the delta measured then; an
    /// LRU hash of `max_map_keys` elements (`catalog::builtins::delta`).
    Delta,
}

/// The ELF symbol of the table of probe `probe_index`'s `sys_enter_*` (or, when `exit`,
/// `sys_exit_*`) programs: where the runtime puts each [`AttachSpec::SyscallSlot`] program.
pub fn syscall_table_symbol(probe_index: usize, exit: bool) -> String {
    format!("syst{probe_index}{}", if exit { "x" } else { "e" })
}

impl EventSpec {
    /// This event without the place in the script it names (`Log`'s and `HelperError`'s
    /// span): what its records are, whatever text comes before it in the script (a live
    /// session's definitions come first).
    pub fn unplaced(&self) -> EventSpec {
        let mut e = self.clone();
        if let EventSpec::Log { span, .. } | EventSpec::HelperError { span, .. } = &mut e {
            *span = Span::default();
        }
        e
    }
}

/// The helper a map-full [`EventSpec::HelperError`] names (`-E2BIG`), as bpftrace names it.
pub const MAP_UPDATE_HELPER: &str = "map_update_elem";

/// How many map-full warnings each place of a script prints (bpftrace prints every one; a
/// busy probe on a full map would print thousands a second): the count of failed updates
/// keeps the total (docs/reference.md says 10 where it names this). A program sends one
/// more, which says that the place's warnings stop, and no others: a full map does not
/// fill the ring buffer with warnings, which would crowd out the script's own events.
pub const MAP_FULL_WARNINGS_PER_PLACE: u64 = 10;

/// Places of a script whose map-full warnings its programs count, each in a word of the
/// counters map's value after the exit word ([`MAP_FULL_PLACES_OFFSET`]); further places
/// share the last word (their warnings stop together).
pub const MAP_FULL_PLACES: u32 = 128;
const _: () = assert!(MAP_FULL_PLACES.is_power_of_two());

/// The byte offset, in the counters map's value, of the first map-full place's word.
pub const MAP_FULL_PLACES_OFFSET: i32 = COUNTERS_BYTES as i32;

/// The bytes of the counters map's value before the zeros large aggregations are inserted
/// from: the counters, the exit word and the map-full places.
pub const COUNTERS_AREA_BYTES: u32 = COUNTERS_BYTES + 8 * MAP_FULL_PLACES;

/// The flags of a warning's event (`BPF_RB_NO_WAKEUP`: the reader, which polls at least
/// every 100 ms, is not woken for it). The userspace engine's parallel workers may send
/// such events (their other events would be out of order), which it handles after them.
pub const WARNING_OUTPUT_FLAGS: i64 = 1;

/// Indices into the counters map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counter {
    /// Events that did not fit in the ring buffer.
    LostEvents = 0,
    /// Map updates that failed because the map was full.
    MapFull = 1,
    /// Ranges with run-time bounds cut to the `bpf_loop` limit
    /// ([`sonde_lang::limits::MAX_LOOP_ITERATIONS`]).
    LoopTruncated = 2,
    /// Stacks the stack map could not store (its bucket held another stack): their keys
    /// print as an empty stack.
    StackDropped = 3,
}

impl Counter {
    /// Every counter, in the order of their values.
    pub const ALL: [Counter; 4] = [
        Counter::LostEvents,
        Counter::MapFull,
        Counter::LoopTruncated,
        Counter::StackDropped,
    ];

    /// The byte offset of this counter's `u64` in the counters map's only value.
    pub fn offset(self) -> i32 {
        8 * self as i32
    }

    /// Every counter's value in the counters map's value `value` (0 for one it is too short
    /// to hold), in the order of [`Counter::ALL`].
    pub fn decode_all(value: &[u8]) -> [u64; 4] {
        Counter::ALL.map(|c| {
            let at = c.offset() as usize;
            value
                .get(at..at + 8)
                .and_then(|b| b.try_into().ok())
                .map_or(0, u64::from_le_bytes)
        })
    }
}

/// The byte offset, in the counters map's value, of the word `exit()` sets: every probe but
/// END returns at once when it is set, so that nothing runs between `exit()` and the end of
/// the run (an interval probe would fire again while sonde is stopping).
pub const EXITED_OFFSET: i32 = 8 * Counter::ALL.len() as i32;

/// The bytes of the counters map's value that the counters and the exit word take; zeros
/// for large aggregations follow.
pub const COUNTERS_BYTES: u32 = 8 * (Counter::ALL.len() as u32 + 1);

/// The ELF section, and so the map name, of the error counters: aya makes a `.bss` section a
/// one-element array map whose value programs address directly.
pub const COUNTERS_SECTION: &str = ".bss";

/// One map of the ELF object.
#[derive(Clone, Debug, PartialEq)]
pub struct MapSpec {
    /// Symbol name in the ELF (mangled).
    pub symbol: String,
    /// Kernel map type.
    pub kind: MapKind,
    /// Key size in bytes.
    pub key_size: u32,
    /// Value size in bytes (per CPU for per-CPU maps).
    pub value_size: u32,
    /// Maximum number of entries (bytes for a ring buffer).
    pub max_entries: u32,
    /// What it holds.
    pub role: MapRole,
}

/// An asynchronous action sent through the ring buffer; the event's payload follows an
/// 8-byte header holding the index of its `EventSpec`.
#[derive(Clone, Debug, PartialEq)]
pub enum EventSpec {
    /// `printf(fmt, args...)`: payload = args laid out as a tuple of `args`.
    Printf {
        /// The format string (escapes decoded).
        format: String,
        /// Argument types, laid out with `tuple_layout`.
        args: Vec<Type>,
    },
    /// `print(value)`: payload = the value.
    PrintValue {
        /// Its type.
        ty: Type,
    },
    /// `print(@map[, top[, div]])`: no payload.
    PrintMap {
        /// Map name.
        map: String,
        /// Print only the top N entries (0 = all).
        top: u64,
        /// Divide values by this (1 = none).
        div: u64,
    },
    /// `clear(@map)`.
    ClearMap {
        /// Map name.
        map: String,
    },
    /// `zero(@map)`.
    ZeroMap {
        /// Map name.
        map: String,
    },
    /// `time(fmt)`: print the current wall-clock time.
    Time {
        /// strftime format.
        format: String,
    },
    /// `cat(fmt, args...)`: print a file's contents.
    Cat {
        /// Path format.
        format: String,
        /// Argument types.
        args: Vec<Type>,
    },
    /// `system(fmt, args...)`: run a shell command (needs `--unsafe`).
    System {
        /// Command format.
        format: String,
        /// Argument types.
        args: Vec<Type>,
    },
    /// `join(array[, sep])`: payload = the array of strings.
    Join {
        /// Separator.
        sep: String,
        /// Number of elements.
        count: u32,
        /// Size of each string.
        elem_size: u32,
    },
    /// `exit([code])`: payload = i64 code.
    Exit,
    /// `errorf(fmt, args...)` / `warnf(fmt, args...)`: a message on stderr naming the place of
    /// the call (`FILE:LINE:COL-END: ERROR: text`); payload = args laid out as a tuple.
    Log {
        /// True for `errorf`, false for `warnf` (which `--no-warnings` silences).
        error: bool,
        /// The format string (escapes decoded).
        format: String,
        /// Argument types, laid out with `tuple_layout`.
        args: Vec<Type>,
        /// The call.
        span: Span,
    },
    /// A helper call failed (`-k`; and, without `-k`, a map update refused because the map
    /// is full: helper [`MAP_UPDATE_HELPER`]): payload = the helper's i64 return value (a
    /// negative errno).
    HelperError {
        /// The helper's name without `bpf_` (`probe_read_kernel`), as bpftrace names it.
        helper: String,
        /// The construct whose helper call failed.
        span: Span,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unplaced_event_keeps_what_it_is_without_its_place() {
        let at = |start| EventSpec::HelperError {
            helper: MAP_UPDATE_HELPER.into(),
            span: Span::new(start, start + 9),
        };
        assert_eq!(at(3).unplaced(), at(30).unplaced());
        let other = EventSpec::HelperError {
            helper: "probe_read".into(),
            span: Span::new(3, 12),
        };
        assert_ne!(at(3).unplaced(), other.unplaced());
        assert_eq!(EventSpec::Exit.unplaced(), EventSpec::Exit);
    }
}
