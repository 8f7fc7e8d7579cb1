//! How a probe's program context is laid out: the contract between the catalog's providers
//! (`ProviderBackend::context_layout` says it) and the lowering (which reads `argN`, `retval`
//! and `args` through it).

/// How a provider's programs reach `argN`, `retval` and `args` in their context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContextLayout {
    /// No arguments (BEGIN/END, interval, profile, software).
    None,
    /// A tracefs tracepoint: `args` fields live at `ctx + field.offset`.
    TracepointRecord,
    /// A raw tracepoint: `ctx` is an array of u64 arguments.
    RawArgs,
    /// `struct pt_regs` (kprobes, uprobes): `argN` from the x86-64 argument registers,
    /// `retval` from `rax`.
    PtRegs,
    /// A record in memory the program reads directly (userspace engine: `replay`): `args`
    /// fields live at `ctx + field.offset`.
    OwnedRecord,
    /// A syscall tracepoint reached through the `sys_enter`/`sys_exit` raw tracepoint
    /// dispatch: `ctx[0]` points at the task's `struct pt_regs`, and `args` fields live at
    /// `regs + field.offset` in kernel memory (the record's offsets are register offsets).
    SyscallRegs,
    /// A BPF iterator: `ctx` points at the iterator's `struct bpf_iter__<name>`, read with
    /// direct loads; a field that reads 0 (a NULL object: the iteration's last call) ends
    /// the run, as in bpftrace.
    Iterator,
}
