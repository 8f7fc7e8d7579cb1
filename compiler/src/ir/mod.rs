//! sonde's backend-neutral intermediate representation.
//!
//! A function is a flat list of instructions over 64-bit virtual registers, with labels and
//! conditional branches, explicit memory accesses and calls to [`Intrinsic`]s. Every
//! instruction carries the source span it came from. Nothing here is BPF-specific: the BPF
//! emitter maps intrinsics to helper calls, the userspace engine maps them to Rust functions.

pub mod cfg;
mod print;
mod verify;

pub use print::{SourceLines, print_function};
pub use verify::verify;

use sonde_lang::span::Span;

/// A virtual register holding a 64-bit value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VReg(pub u32);

/// A jump target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Label(pub u32);

/// A stack slot of the function's frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Slot(pub u32);

/// Index of a map in the script's map list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MapRef(pub u32);

/// A register or an immediate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operand {
    /// A virtual register.
    Reg(VReg),
    /// A constant.
    Imm(i64),
}

/// Width of a memory access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Width {
    /// 1 byte
    W8,
    /// 2 bytes
    W16,
    /// 4 bytes
    W32,
    /// 8 bytes
    W64,
}

impl Width {
    /// Size in bytes.
    pub fn bytes(self) -> u32 {
        match self {
            Width::W8 => 1,
            Width::W16 => 2,
            Width::W32 => 4,
            Width::W64 => 8,
        }
    }

    /// The width of an integer of `bytes` bytes (1, 2, 4 or 8).
    pub fn from_bytes(bytes: u32) -> Width {
        match bytes {
            1 => Width::W8,
            2 => Width::W16,
            4 => Width::W32,
            _ => Width::W64,
        }
    }
}

/// 64-bit arithmetic and bitwise operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AluOp {
    /// wrapping add
    Add,
    /// wrapping subtract
    Sub,
    /// wrapping multiply
    Mul,
    /// unsigned divide (x / 0 = 0)
    UDiv,
    /// signed divide
    SDiv,
    /// unsigned remainder
    UMod,
    /// signed remainder
    SMod,
    /// bitwise and
    And,
    /// bitwise or
    Or,
    /// bitwise xor
    Xor,
    /// shift left
    Shl,
    /// logical shift right
    LShr,
    /// arithmetic shift right
    AShr,
}

/// Branch conditions (64-bit compares).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cond {
    /// ==
    Eq,
    /// !=
    Ne,
    /// unsigned >
    UGt,
    /// unsigned >=
    UGe,
    /// unsigned <
    ULt,
    /// unsigned <=
    ULe,
    /// signed >
    SGt,
    /// signed >=
    SGe,
    /// signed <
    SLt,
    /// signed <=
    SLe,
    /// (lhs & rhs) != 0
    Set,
}

impl Cond {
    /// The condition that holds exactly when `self` does not.
    pub fn negate(self) -> Cond {
        use Cond::*;
        match self {
            Eq => Ne,
            Ne => Eq,
            UGt => ULe,
            UGe => ULt,
            ULt => UGe,
            ULe => UGt,
            SGt => SLe,
            SGe => SLt,
            SLt => SGe,
            SLe => SGt,
            Set => Eq, // only used with care: Set has no single negation; see lowering
        }
    }
}

/// Operations provided by the execution environment (BPF helpers in the kernel).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Intrinsic {
    /// (map, key*) -> value* or 0
    MapLookup,
    /// (map, key*, value*, flags) -> 0 or -errno
    MapUpdate,
    /// (map, key*) -> 0 or -errno
    MapDelete,
    /// (dst*, size, src) -> 0 or -errno, kernel memory
    ProbeReadKernel,
    /// (dst*, size, src) -> 0 or -errno, user memory
    ProbeReadUser,
    /// (dst*, size, src) -> length incl. NUL or -errno, kernel memory
    ProbeReadKernelStr,
    /// (dst*, size, src) -> length incl. NUL or -errno, user memory
    ProbeReadUserStr,
    /// (dst*, size, src) -> 0 or -errno, kernel or user memory (decided by the address)
    ProbeRead,
    /// (dst*, size, src) -> length incl. NUL or -errno, kernel or user memory
    ProbeReadStr,
    /// () -> monotonic ns
    KtimeGetNs,
    /// () -> boot-time ns (includes suspend)
    KtimeGetBootNs,
    /// () -> tgid << 32 | pid
    GetPidTgid,
    /// (pid namespace dev, inode, dst*, size) -> 0 or -errno; `dst` gets the current task's
    /// thread id then process id (two u32) as seen from that pid namespace
    GetNsPidTgid,
    /// () -> gid << 32 | uid
    GetUidGid,
    /// (dst*, size) -> 0
    GetCurrentComm,
    /// () -> cpu number
    GetCpu,
    /// () -> random u32
    Random,
    /// () -> task_struct *
    GetCurrentTask,
    /// () -> cgroup v2 id
    GetCgroupId,
    /// (level) -> cgroup v2 id of the current task's cgroup's ancestor at that level (0:
    /// the root), or 0 when the task's cgroup is not that deep
    GetAncestorCgroupId,
    /// (ringbuf map, data*, size, flags) -> 0 or -errno
    RingbufOutput,
    /// (ctx, stack map, flags) -> stack id or -errno
    GetStackId,
    /// () -> jiffies
    Jiffies,
    /// (map, callback, callback ctx*, flags) -> number of elements visited
    ForEachMapElem,
    /// (count, callback, callback ctx*, flags) -> number of iterations run
    Loop,
    /// (map, key*, cpu) -> value* of that CPU or 0 (per-CPU maps)
    MapLookupPercpu,
    /// (dst*, size) -> bytes copied: the current input record (a line, or a replayed event's
    /// text) as a NUL-padded string. Userspace engine only.
    InputLine,
    /// (dst*, size, n) -> bytes copied: field `n` (1-based) of the current input record as a
    /// NUL-padded string; an absent field is empty. Userspace engine only.
    InputField,
    /// () -> the number of fields of the current input record (awk's NF). Userspace only.
    InputFieldCount,
    /// () -> the number of records read so far, this one included (awk's NR). Userspace only.
    InputRecordNumber,
    /// (str*, size, scale) -> the leading decimal number of a string times `scale` (the
    /// fraction kept to the scale's precision), 0 when there is none. Userspace only.
    ParseNum,
    /// (n, scale) -> `ParseNum` of field `n` of the current input record, read in place
    /// (however long the field). Userspace only.
    InputFieldNum,
    /// () -> id of the NUMA node of the current CPU
    NumaNodeId,
    /// () -> CLOCK_TAI ns
    KtimeGetTaiNs,
    /// (sig) -> 0 or -errno: signals the current process
    SendSignal,
    /// (sig) -> 0 or -errno: signals the current thread
    SendSignalThread,
    /// (ctx, rc) -> 0: makes the probed kernel function return rc (kprobes)
    OverrideReturn,
    /// (dst, src*, len) -> 0 or -errno: writes the current task's user memory
    ProbeWriteUser,
    /// (ctx) -> the probed function's address (a uprobe's run-time address)
    GetFuncIp,
    /// (seq_file*, fmt*, fmt size, u64 args*, args size) -> 0 or -errno: formats into an
    /// iterator's output (the kernel's `bpf_seq_printf`; iterator programs only)
    SeqPrintf,
    /// (struct path*, dst*, size) -> length incl. NUL or -errno: the path's name (the
    /// kernel's `bpf_d_path`; iterator and fentry programs only)
    DPath,
    /// (ctx, buf*, size, flags) -> bytes of frames written or -errno: the current stack's
    /// frames (`bpf_get_stack`, for `len(kstack)`)
    GetStack,
    /// (fmt*, fmt size, a1, a2, a3) -> bytes written or -errno: formats into the kernel's
    /// trace buffer (`bpf_trace_printk`, for `debugf`; unused arguments are 0)
    TracePrintk,
    /// (dst*, size, src*) -> 0: copies `size` bytes between the program's own buffers (the
    /// kernel's `bpf_probe_read_kernel`, one call instead of a load and a store per word;
    /// `memcpy` in userspace)
    MemCopy,
    /// A kernel function called by its BTF id (`bpf_task_from_pid`, `bpf_task_release`):
    /// arguments and result as its prototype says. Kernel only.
    Kfunc(crate::bpf::kfuncs::KfuncCall),
    /// () -> the address of this CPU's copy of the per-CPU kernel variable whose BTF id
    /// this is (`bpf_this_cpu_ptr` on a typed ksym). Kernel only.
    ThisCpuPtr(u32),
    /// (cpu) -> the address of that CPU's copy of the per-CPU kernel variable whose BTF id
    /// this is, or 0 when there is no such CPU (`bpf_per_cpu_ptr` on a typed ksym). Kernel
    /// only.
    PerCpuPtr(u32),
}

impl Intrinsic {
    /// Every intrinsic that names no kernel object, in declaration order (the
    /// [`Intrinsic::Kfunc`] calls, which carry a BTF id, are not listed: no host provides
    /// them).
    pub const ALL: &'static [Intrinsic] = &[
        Intrinsic::MapLookup,
        Intrinsic::MapUpdate,
        Intrinsic::MapDelete,
        Intrinsic::ProbeReadKernel,
        Intrinsic::ProbeReadUser,
        Intrinsic::ProbeReadKernelStr,
        Intrinsic::ProbeReadUserStr,
        Intrinsic::ProbeRead,
        Intrinsic::ProbeReadStr,
        Intrinsic::KtimeGetNs,
        Intrinsic::KtimeGetBootNs,
        Intrinsic::GetPidTgid,
        Intrinsic::GetNsPidTgid,
        Intrinsic::GetUidGid,
        Intrinsic::GetCurrentComm,
        Intrinsic::GetCpu,
        Intrinsic::Random,
        Intrinsic::GetCurrentTask,
        Intrinsic::GetCgroupId,
        Intrinsic::GetAncestorCgroupId,
        Intrinsic::RingbufOutput,
        Intrinsic::GetStackId,
        Intrinsic::Jiffies,
        Intrinsic::ForEachMapElem,
        Intrinsic::Loop,
        Intrinsic::MapLookupPercpu,
        Intrinsic::InputLine,
        Intrinsic::InputField,
        Intrinsic::InputFieldCount,
        Intrinsic::InputRecordNumber,
        Intrinsic::ParseNum,
        Intrinsic::InputFieldNum,
        Intrinsic::NumaNodeId,
        Intrinsic::KtimeGetTaiNs,
        Intrinsic::SendSignal,
        Intrinsic::SendSignalThread,
        Intrinsic::OverrideReturn,
        Intrinsic::ProbeWriteUser,
        Intrinsic::GetFuncIp,
        Intrinsic::SeqPrintf,
        Intrinsic::DPath,
        Intrinsic::TracePrintk,
        Intrinsic::GetStack,
        Intrinsic::MemCopy,
    ];

    /// The name under which a userspace host provides this intrinsic (the JIT imports it by
    /// this name; the runtime registers its function under the same name).
    pub fn host_name(self) -> &'static str {
        match self {
            Intrinsic::MapLookup => "sonde_map_lookup",
            Intrinsic::MapUpdate => "sonde_map_update",
            Intrinsic::MapDelete => "sonde_map_delete",
            Intrinsic::ProbeReadKernel => "sonde_probe_read_kernel",
            Intrinsic::ProbeReadUser => "sonde_probe_read_user",
            Intrinsic::ProbeReadKernelStr => "sonde_probe_read_kernel_str",
            Intrinsic::ProbeReadUserStr => "sonde_probe_read_user_str",
            Intrinsic::ProbeRead => "sonde_probe_read",
            Intrinsic::ProbeReadStr => "sonde_probe_read_str",
            Intrinsic::KtimeGetNs => "sonde_ktime_get_ns",
            Intrinsic::KtimeGetBootNs => "sonde_ktime_get_boot_ns",
            Intrinsic::GetPidTgid => "sonde_get_pid_tgid",
            Intrinsic::GetNsPidTgid => "sonde_get_ns_pid_tgid",
            Intrinsic::GetUidGid => "sonde_get_uid_gid",
            Intrinsic::GetCurrentComm => "sonde_get_current_comm",
            Intrinsic::GetCpu => "sonde_get_cpu",
            Intrinsic::Random => "sonde_random",
            Intrinsic::GetCurrentTask => "sonde_get_current_task",
            Intrinsic::GetCgroupId => "sonde_get_cgroup_id",
            Intrinsic::GetAncestorCgroupId => "sonde_get_ancestor_cgroup_id",
            Intrinsic::RingbufOutput => "sonde_ringbuf_output",
            Intrinsic::GetStackId => "sonde_get_stack_id",
            Intrinsic::Jiffies => "sonde_jiffies",
            Intrinsic::ForEachMapElem => "sonde_for_each_map_elem",
            Intrinsic::Loop => "sonde_loop",
            Intrinsic::MapLookupPercpu => "sonde_map_lookup_percpu",
            Intrinsic::InputLine => "sonde_input_line",
            Intrinsic::InputField => "sonde_input_field",
            Intrinsic::InputFieldCount => "sonde_input_field_count",
            Intrinsic::InputRecordNumber => "sonde_input_record_number",
            Intrinsic::ParseNum => "sonde_parse_num",
            Intrinsic::InputFieldNum => "sonde_input_field_num",
            Intrinsic::NumaNodeId => "sonde_numa_node_id",
            Intrinsic::KtimeGetTaiNs => "sonde_ktime_get_tai_ns",
            Intrinsic::SendSignal => "sonde_send_signal",
            Intrinsic::SendSignalThread => "sonde_send_signal_thread",
            Intrinsic::OverrideReturn => "sonde_override_return",
            Intrinsic::ProbeWriteUser => "sonde_probe_write_user",
            Intrinsic::GetFuncIp => "sonde_get_func_ip",
            Intrinsic::SeqPrintf => "sonde_seq_printf",
            Intrinsic::DPath => "sonde_d_path",
            Intrinsic::TracePrintk => "sonde_trace_printk",
            Intrinsic::GetStack => "sonde_get_stack",
            Intrinsic::MemCopy => "sonde_mem_copy",
            Intrinsic::Kfunc(k) => match k.func {
                crate::bpf::kfuncs::Kfunc::TaskFromPid => "sonde_bpf_task_from_pid",
                crate::bpf::kfuncs::Kfunc::TaskRelease => "sonde_bpf_task_release",
            },
            Intrinsic::ThisCpuPtr(_) => "sonde_this_cpu_ptr",
            Intrinsic::PerCpuPtr(_) => "sonde_per_cpu_ptr",
        }
    }

    /// Number of arguments the intrinsic takes.
    pub fn arity(self) -> usize {
        match self {
            Intrinsic::KtimeGetNs
            | Intrinsic::KtimeGetBootNs
            | Intrinsic::GetPidTgid
            | Intrinsic::GetUidGid
            | Intrinsic::GetCpu
            | Intrinsic::Random
            | Intrinsic::GetCurrentTask
            | Intrinsic::GetCgroupId
            | Intrinsic::Jiffies
            | Intrinsic::InputFieldCount
            | Intrinsic::InputRecordNumber
            | Intrinsic::NumaNodeId
            | Intrinsic::KtimeGetTaiNs
            | Intrinsic::ThisCpuPtr(_) => 0,
            Intrinsic::SendSignal
            | Intrinsic::SendSignalThread
            | Intrinsic::GetFuncIp
            | Intrinsic::GetAncestorCgroupId
            | Intrinsic::PerCpuPtr(_) => 1,
            Intrinsic::MapLookup
            | Intrinsic::MapDelete
            | Intrinsic::GetCurrentComm
            | Intrinsic::InputLine
            | Intrinsic::InputFieldNum
            | Intrinsic::OverrideReturn => 2,
            Intrinsic::ProbeReadKernel
            | Intrinsic::ProbeReadUser
            | Intrinsic::ProbeReadKernelStr
            | Intrinsic::ProbeReadUserStr
            | Intrinsic::ProbeRead
            | Intrinsic::ProbeReadStr
            | Intrinsic::GetStackId
            | Intrinsic::MapLookupPercpu
            | Intrinsic::InputField
            | Intrinsic::ParseNum
            | Intrinsic::ProbeWriteUser
            | Intrinsic::DPath
            | Intrinsic::MemCopy => 3,
            Intrinsic::MapUpdate
            | Intrinsic::RingbufOutput
            | Intrinsic::ForEachMapElem
            | Intrinsic::Loop
            | Intrinsic::GetStack
            | Intrinsic::GetNsPidTgid => 4,
            Intrinsic::SeqPrintf | Intrinsic::TracePrintk => 5,
            Intrinsic::Kfunc(k) => k.func.arity(),
        }
    }

    /// True for intrinsics that only the userspace engine provides (reading input records).
    pub fn userspace_only(self) -> bool {
        matches!(
            self,
            Intrinsic::InputLine
                | Intrinsic::InputField
                | Intrinsic::InputFieldCount
                | Intrinsic::InputRecordNumber
                | Intrinsic::ParseNum
                | Intrinsic::InputFieldNum
        )
    }

    /// True for intrinsics that read kernel state and have no meaning in userspace (other
    /// processes' memory, the current task, cgroups, stack maps). Plain memory reads
    /// (`ProbeRead`, `ProbeReadKernel`) are not: in the userspace engine they read sonde's own
    /// memory (the addresses `&$x` and `&@m` give), failing safely elsewhere.
    pub fn kernel_only(self) -> bool {
        matches!(
            self,
            Intrinsic::ProbeReadUser
                | Intrinsic::ProbeReadKernelStr
                | Intrinsic::ProbeReadUserStr
                | Intrinsic::ProbeReadStr
                | Intrinsic::GetCurrentTask
                | Intrinsic::GetCgroupId
                | Intrinsic::GetAncestorCgroupId
                | Intrinsic::GetStackId
                | Intrinsic::NumaNodeId
                | Intrinsic::SendSignal
                | Intrinsic::SendSignalThread
                | Intrinsic::OverrideReturn
                | Intrinsic::ProbeWriteUser
                | Intrinsic::GetFuncIp
                | Intrinsic::SeqPrintf
                | Intrinsic::DPath
                | Intrinsic::TracePrintk
                | Intrinsic::GetStack
                | Intrinsic::Kfunc(_)
                | Intrinsic::ThisCpuPtr(_)
                | Intrinsic::PerCpuPtr(_)
        )
    }
}

/// One IR instruction.
#[derive(Clone, Debug, PartialEq)]
pub enum Inst {
    /// `dst = src`
    Mov {
        /// Destination.
        dst: VReg,
        /// Source.
        src: Operand,
    },
    /// `dst = lhs op rhs`
    Alu {
        /// Operation.
        op: AluOp,
        /// Destination.
        dst: VReg,
        /// Left operand.
        lhs: VReg,
        /// Right operand.
        rhs: Operand,
    },
    /// `dst = -src`
    Neg {
        /// Destination.
        dst: VReg,
        /// Source.
        src: VReg,
    },
    /// `dst = *(width *)(base + offset)`, zero-extended.
    Load {
        /// Destination.
        dst: VReg,
        /// Base pointer (context, map value, stack or scratch memory).
        base: VReg,
        /// Byte offset.
        offset: i32,
        /// Access width.
        width: Width,
    },
    /// `*(width *)(base + offset) = src`
    Store {
        /// Base pointer.
        base: VReg,
        /// Byte offset.
        offset: i32,
        /// Value stored.
        src: Operand,
        /// Access width.
        width: Width,
    },
    /// `*(u64 *)(base + offset) += src`, atomically.
    AtomicAdd {
        /// Base pointer.
        base: VReg,
        /// Byte offset.
        offset: i32,
        /// Addend.
        src: VReg,
    },
    /// `dst = address of slot + offset`
    SlotAddr {
        /// Destination.
        dst: VReg,
        /// The slot.
        slot: Slot,
    },
    /// `dst = handle of map`
    MapHandle {
        /// Destination.
        dst: VReg,
        /// The map.
        map: MapRef,
    },
    /// `dst = address of the only value of map`, a one-element array map placed in a data
    /// section (in BPF, one `ld_imm64` the loader turns into the value's address: no lookup).
    MapValue {
        /// Destination.
        dst: VReg,
        /// The map.
        map: MapRef,
    },
    /// `dst = address of callback function `func`` (an index into the program's callbacks).
    FuncAddr {
        /// Destination.
        dst: VReg,
        /// Index of the callback in the program's callback list.
        func: u32,
    },
    /// `dst = intrinsic(args...)`
    Call {
        /// Destination of the result, if used.
        dst: Option<VReg>,
        /// What is called.
        func: Intrinsic,
        /// Arguments (at most 5).
        args: Vec<Operand>,
    },
    /// `dst = callback func(args...)`: a direct call of one of the program's functions (a
    /// BPF-to-BPF call; in userspace, a call of the compiled function).
    CallFunc {
        /// Destination of the result, if used.
        dst: Option<VReg>,
        /// Index of the function in the program's callback list.
        func: u32,
        /// Arguments (at most 5), the callee's parameters in order.
        args: Vec<Operand>,
    },
    /// Defines a jump target.
    Label(Label),
    /// Unconditional jump.
    Jump(Label),
    /// `if lhs cond rhs goto target`
    Branch {
        /// Condition.
        cond: Cond,
        /// Left operand.
        lhs: VReg,
        /// Right operand.
        rhs: Operand,
        /// Target when the condition holds; otherwise fall through.
        target: Label,
    },
    /// Return from the function with a value.
    Return {
        /// The value returned.
        value: Operand,
    },
}

/// A stack slot: size and alignment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotInfo {
    /// Size in bytes.
    pub size: u32,
}

/// One function (one BPF program).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Function {
    /// Name (for dumps).
    pub name: String,
    /// Registers holding the function's arguments on entry (r1, r2, ... in order).
    pub params: Vec<VReg>,
    /// The register holding the probe's context pointer (the first parameter of a program; a
    /// value loaded from the callback context in a callback).
    pub ctx: Option<VReg>,
    /// Instructions with their source spans.
    pub insts: Vec<(Inst, Span)>,
    /// Stack slots.
    pub slots: Vec<SlotInfo>,
    /// Number of virtual registers.
    pub vregs: u32,
    /// Number of labels.
    pub labels: u32,
}

impl Function {
    /// A new empty function.
    pub fn new(name: impl Into<String>) -> Self {
        Function {
            name: name.into(),
            ..Default::default()
        }
    }

    /// A fresh virtual register.
    pub fn vreg(&mut self) -> VReg {
        self.vregs += 1;
        VReg(self.vregs - 1)
    }

    /// A fresh label.
    pub fn label(&mut self) -> Label {
        self.labels += 1;
        Label(self.labels - 1)
    }

    /// A new stack slot of `size` bytes (rounded up to 8).
    pub fn slot(&mut self, size: u32) -> Slot {
        self.slots.push(SlotInfo {
            size: size.div_ceil(8) * 8,
        });
        Slot(self.slots.len() as u32 - 1)
    }

    /// Appends an instruction.
    pub fn push(&mut self, inst: Inst, span: Span) {
        self.insts.push((inst, span));
    }
}

impl Inst {
    /// Registers read by this instruction.
    pub fn uses(&self) -> Vec<VReg> {
        let op = |o: &Operand| match o {
            Operand::Reg(r) => Some(*r),
            Operand::Imm(_) => None,
        };
        match self {
            Inst::Mov { src, .. } => op(src).into_iter().collect(),
            Inst::Alu { lhs, rhs, .. } => std::iter::once(*lhs).chain(op(rhs)).collect(),
            Inst::Neg { src, .. } => vec![*src],
            Inst::Load { base, .. } => vec![*base],
            Inst::Store { base, src, .. } => std::iter::once(*base).chain(op(src)).collect(),
            Inst::AtomicAdd { base, src, .. } => vec![*base, *src],
            Inst::SlotAddr { .. }
            | Inst::MapHandle { .. }
            | Inst::MapValue { .. }
            | Inst::FuncAddr { .. } => vec![],
            Inst::Call { args, .. } | Inst::CallFunc { args, .. } => {
                args.iter().filter_map(op).collect()
            }
            Inst::Label(_) | Inst::Jump(_) => vec![],
            Inst::Branch { lhs, rhs, .. } => std::iter::once(*lhs).chain(op(rhs)).collect(),
            Inst::Return { value } => op(value).into_iter().collect(),
        }
    }

    /// The register written by this instruction, if any.
    pub fn def(&self) -> Option<VReg> {
        match self {
            Inst::Mov { dst, .. }
            | Inst::Alu { dst, .. }
            | Inst::Neg { dst, .. }
            | Inst::Load { dst, .. }
            | Inst::SlotAddr { dst, .. }
            | Inst::FuncAddr { dst, .. }
            | Inst::MapHandle { dst, .. }
            | Inst::MapValue { dst, .. } => Some(*dst),
            Inst::Call { dst, .. } | Inst::CallFunc { dst, .. } => *dst,
            _ => None,
        }
    }
}
