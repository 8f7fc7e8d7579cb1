//! The kernel helper functions sonde's programs call, with their `bpf_func_id` numbers
//! (checked against `enum bpf_func_id` in this kernel's BTF: `emit_tests`).

macro_rules! helpers {
    ($($(#[$doc:meta])* $variant:ident = $id:literal => $name:literal,)*) => {
        /// Kernel helper functions sonde calls, with their `bpf_func_id` numbers.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(i32)]
        pub enum Helper {
            $($(#[$doc])* $variant = $id,)*
        }

        impl Helper {
            /// Every helper of this enum.
            pub const ALL: &'static [Helper] = &[$(Helper::$variant,)*];

            /// The kernel's name (`bpf_map_lookup_elem`).
            pub fn name(self) -> &'static str {
                match self {
                    $(Helper::$variant => $name,)*
                }
            }

            /// The helper with this id, if sonde knows it.
            pub fn from_id(id: i32) -> Option<Helper> {
                match id {
                    $($id => Some(Helper::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

helpers! {
    /// `void *bpf_map_lookup_elem(map, key)`: value pointer or NULL.
    MapLookupElem = 1 => "bpf_map_lookup_elem",
    /// `long bpf_map_update_elem(map, key, value, flags)`.
    MapUpdateElem = 2 => "bpf_map_update_elem",
    /// `long bpf_map_delete_elem(map, key)`.
    MapDeleteElem = 3 => "bpf_map_delete_elem",
    /// `long bpf_probe_read(dst, size, unsafe_ptr)` (legacy).
    ProbeRead = 4 => "bpf_probe_read",
    /// `u64 bpf_ktime_get_ns()`: monotonic time.
    KtimeGetNs = 5 => "bpf_ktime_get_ns",
    /// `long bpf_trace_printk(fmt, fmt_size, ...)`.
    TracePrintk = 6 => "bpf_trace_printk",
    /// `u32 bpf_get_prandom_u32()`.
    GetPrandomU32 = 7 => "bpf_get_prandom_u32",
    /// `long bpf_tail_call(ctx, prog_array_map, index)`: jumps to another program, or
    /// returns when the slot is empty.
    TailCall = 12 => "bpf_tail_call",
    /// `u32 bpf_get_smp_processor_id()`.
    GetSmpProcessorId = 8 => "bpf_get_smp_processor_id",
    /// `u64 bpf_get_current_pid_tgid()`: tgid << 32 | pid.
    GetCurrentPidTgid = 14 => "bpf_get_current_pid_tgid",
    /// `u64 bpf_get_current_uid_gid()`: gid << 32 | uid.
    GetCurrentUidGid = 15 => "bpf_get_current_uid_gid",
    /// `long bpf_get_current_comm(buf, size)`.
    GetCurrentComm = 16 => "bpf_get_current_comm",
    /// `long bpf_perf_event_output(ctx, map, flags, data, size)`.
    PerfEventOutput = 25 => "bpf_perf_event_output",
    /// `long bpf_get_stackid(ctx, map, flags)`.
    GetStackid = 27 => "bpf_get_stackid",
    /// `long bpf_get_stack(ctx, buf, size, flags)`: the stack's frames into `buf`, the
    /// number of bytes written.
    GetStack = 67 => "bpf_get_stack",
    /// `u64 bpf_get_current_task()`.
    GetCurrentTask = 35 => "bpf_get_current_task",
    /// `long bpf_probe_read_str(dst, size, unsafe_ptr)` (legacy).
    ProbeReadStr = 45 => "bpf_probe_read_str",
    /// `u64 bpf_get_current_cgroup_id()`.
    GetCurrentCgroupId = 80 => "bpf_get_current_cgroup_id",
    /// `u64 bpf_get_current_ancestor_cgroup_id(int ancestor_level)`.
    GetCurrentAncestorCgroupId = 123 => "bpf_get_current_ancestor_cgroup_id",
    /// `long bpf_probe_write_user(dst, src, len)`.
    ProbeWriteUser = 36 => "bpf_probe_write_user",
    /// `long bpf_get_numa_node_id()`.
    GetNumaNodeId = 42 => "bpf_get_numa_node_id",
    /// `long bpf_override_return(regs, rc)` (kprobes on error-injectable functions).
    OverrideReturn = 58 => "bpf_override_return",
    /// `long bpf_send_signal(sig)`.
    SendSignal = 109 => "bpf_send_signal",
    /// `long bpf_send_signal_thread(sig)`.
    SendSignalThread = 117 => "bpf_send_signal_thread",
    /// `long bpf_probe_read_user(dst, size, unsafe_ptr)`.
    ProbeReadUser = 112 => "bpf_probe_read_user",
    /// `long bpf_probe_read_kernel(dst, size, unsafe_ptr)`.
    ProbeReadKernel = 113 => "bpf_probe_read_kernel",
    /// `long bpf_probe_read_user_str(dst, size, unsafe_ptr)`.
    ProbeReadUserStr = 114 => "bpf_probe_read_user_str",
    /// `long bpf_probe_read_kernel_str(dst, size, unsafe_ptr)`.
    ProbeReadKernelStr = 115 => "bpf_probe_read_kernel_str",
    /// `u64 bpf_jiffies64()`.
    Jiffies64 = 118 => "bpf_jiffies64",
    /// `long bpf_get_ns_current_pid_tgid(dev, ino, nsdata, size)`.
    GetNsCurrentPidTgid = 120 => "bpf_get_ns_current_pid_tgid",
    /// `u64 bpf_ktime_get_boot_ns()`: boot time, including suspend.
    KtimeGetBootNs = 125 => "bpf_ktime_get_boot_ns",
    /// `long bpf_seq_printf(seq, fmt, fmt_size, data, data_len)`: formats into an iterator's
    /// output.
    SeqPrintf = 126 => "bpf_seq_printf",
    /// `long bpf_ringbuf_output(ringbuf, data, size, flags)`.
    RingbufOutput = 130 => "bpf_ringbuf_output",
    /// `void *bpf_ringbuf_reserve(ringbuf, size, flags)`: record pointer or NULL.
    RingbufReserve = 131 => "bpf_ringbuf_reserve",
    /// `void bpf_ringbuf_submit(data, flags)`.
    RingbufSubmit = 132 => "bpf_ringbuf_submit",
    /// `void bpf_ringbuf_discard(data, flags)`.
    RingbufDiscard = 133 => "bpf_ringbuf_discard",
    /// `struct task_struct *bpf_get_current_task_btf()`.
    GetCurrentTaskBtf = 158 => "bpf_get_current_task_btf",
    /// `long bpf_d_path(path, buf, sz)`: the name of a `struct path`.
    DPath = 147 => "bpf_d_path",
    /// Calls a callback for every element of a map.
    ForEachMapElem = 164 => "bpf_for_each_map_elem",
    /// `u64 bpf_get_func_ip(ctx)`: the probed function's address (a uprobe's: its run-time
    /// address in the process).
    GetFuncIp = 173 => "bpf_get_func_ip",
    /// Calls a callback a given number of times.
    Loop = 181 => "bpf_loop",
    /// Looks up the value of one CPU in a per-CPU map.
    MapLookupPercpuElem = 195 => "bpf_map_lookup_percpu_elem",
    /// `u64 bpf_ktime_get_tai_ns()`.
    KtimeGetTaiNs = 208 => "bpf_ktime_get_tai_ns",
    /// `void *bpf_per_cpu_ptr(const void *percpu_ptr, u32 cpu)`: a per-CPU variable (a
    /// typed ksym) of that CPU, or NULL when there is no such CPU.
    PerCpuPtr = 153 => "bpf_per_cpu_ptr",
    /// `void *bpf_this_cpu_ptr(const void *percpu_ptr)`: a per-CPU variable of this CPU.
    ThisCpuPtr = 154 => "bpf_this_cpu_ptr",
}
