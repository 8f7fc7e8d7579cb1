//! The options of a compilation: what the command line (and a tool) set that changes the
//! generated code. The driver ([`crate::compile`]) takes them; the lowering reads them.

/// Options that change the generated code.
#[derive(Clone, Debug, Default)]
pub struct CompileOptions {
    /// Positional parameters.
    pub positional: Vec<String>,
    /// `-p PID`: only events of this process reach probe bodies.
    pub filter_pid: Option<u32>,
    /// sonde's own pid: uprobes and USDT probes skip its events, so that sonde never feeds
    /// on its own work (a `uprobe:libc:malloc` that prints would otherwise trace the
    /// allocations its own printing makes, without end).
    pub exclude_pid: Option<u32>,
    /// `-c CMD`: the child's pid (the `cpid` builtin).
    pub cpid: Option<u32>,
    /// Number of online CPUs (the `ncpus` builtin).
    pub ncpus: u32,
    /// `CLOCK_BOOTTIME` in ns when tracing starts (the base of `elapsed`).
    pub start_ns: u64,
    /// Named parameters (`-- --name=value`, or a tool's flags) read by `getopt()`, in the
    /// order given; a bare `--flag` has an empty value.
    pub named: Vec<(String, String)>,
    /// `-k`: a failed probe read sends a [`EventSpec::HelperError`](crate::program::EventSpec)
    /// event, reported at run time with its place in the script.
    pub helper_errors: bool,
    /// `CLOCK_TAI - CLOCK_BOOTTIME` in ns when the script is compiled: `tseries()` adds it to
    /// `bpf_ktime_get_boot_ns()` (bpftrace's `sw_tai` clock), so that its intervals start on
    /// wall-clock multiples of their length.
    pub tai_offset_ns: u64,
    /// bpftrace's `BPFTRACE_DUMMY_TS_MAP`: the name of a scalar map of the script whose value
    /// `tseries()` takes as the time instead of the clock (deterministic tests).
    pub tseries_clock_map: Option<String>,
}
