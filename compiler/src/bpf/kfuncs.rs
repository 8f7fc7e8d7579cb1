//! The kernel functions (kfuncs) sonde's programs call by their id in the kernel's BTF
//! (`call` with `src_reg = BPF_PSEUDO_KFUNC_CALL`), and the program types whose verifier
//! lets them be called; kernel variables are named the same way (typed ksyms,
//! [`PSEUDO_BTF_ID`]).
//!
//! Checked on Linux 6.18 by loading small programs: `bpf_task_from_pid` and
//! `bpf_task_release` load in tracepoint and perf_event programs (the kernel's "tracing"
//! kfunc hook) and are refused in kprobe (uprobe) and raw tracepoint programs with
//! "calling kernel function bpf_task_from_pid is not allowed".

/// `src_reg` of a `call` of a kfunc (`BPF_PSEUDO_KFUNC_CALL`).
pub const PSEUDO_KFUNC_CALL: u8 = 2;

/// `src_reg` of an `ld_imm64` of a kernel variable by its BTF id (`BPF_PSEUDO_BTF_ID`: a
/// typed ksym; the verifier puts the variable's address there, found by its name in
/// kallsyms).
pub const PSEUDO_BTF_ID: u8 = 3;

/// A kfunc sonde calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kfunc {
    /// `struct task_struct *bpf_task_from_pid(s32 pid)`: the task of this pid with a
    /// reference taken, or NULL. The verifier requires the NULL check and the reference
    /// released (`bpf_task_release`) on every path.
    TaskFromPid,
    /// `void bpf_task_release(struct task_struct *p)`: drops a task's reference.
    TaskRelease,
}

/// The ELF sections (program types) whose programs may call sonde's kfuncs: the kernel
/// registers them for tracing, tracepoint, perf_event and XDP programs (iterators and
/// fentry/fexit are tracing programs).
const ALLOWED_SECTIONS: &[&str] = &["tracepoint", "perf_event", "xdp", "iter", "fentry", "fexit"];

impl Kfunc {
    /// The kernel's name, which its BTF id is found by.
    pub fn name(self) -> &'static str {
        match self {
            Kfunc::TaskFromPid => "bpf_task_from_pid",
            Kfunc::TaskRelease => "bpf_task_release",
        }
    }

    /// Number of arguments.
    pub fn arity(self) -> usize {
        1
    }

    /// Whether a program of ELF section kind `section` (`tracepoint`, `raw_tp`, as
    /// `AttachSpec::section` names them) may call this kfunc.
    pub fn allowed_in(self, section: &str) -> bool {
        ALLOWED_SECTIONS.contains(&section)
    }

    /// The probe types whose programs may call kfuncs, for diagnostics.
    pub fn allowed_probes() -> &'static str {
        "tracepoint (one not dispatched by syscall number), profile, interval, software, hardware, watchpoint and iter"
    }
}

/// A kfunc call as the IR holds it: the function and its id in the running kernel's BTF,
/// found when the program was built (`KernelInfo::kernel_btf_id`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KfuncCall {
    /// The function.
    pub func: Kfunc,
    /// Its `BTF_KIND_FUNC` id in `/sys/kernel/btf/vmlinux`.
    pub btf_id: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_types() {
        assert!(Kfunc::TaskFromPid.allowed_in("tracepoint"));
        assert!(Kfunc::TaskRelease.allowed_in("perf_event"));
        assert!(!Kfunc::TaskFromPid.allowed_in("raw_tp"));
        assert!(!Kfunc::TaskFromPid.allowed_in("uprobe"));
        assert!(!Kfunc::TaskFromPid.allowed_in("kprobe"));
    }
}
