//! The kernel's BPF iterators, from BTF: an iterator `X` has a context type
//! `struct bpf_iter__X` and a function `bpf_iter_X` (the attach target of its programs),
//! whose parameters after `struct bpf_iter_meta *meta` are the context's fields.

use super::{RawTracepointArg, SystemKernel};
use crate::btf::{Btf, Kind};

/// The suffix of the verifier's variants of iterator contexts
/// (`struct bpf_iter__task__safe_trusted`), which are no iterators.
const SAFE_TRUSTED: &str = "__safe_trusted";

/// The names of the iterators `btf` describes, sorted.
pub fn iterators(btf: &Btf) -> Vec<String> {
    let mut out: Vec<String> = btf
        .iter()
        .filter(|(_, t)| t.kind == Kind::Struct)
        .filter_map(|(_, t)| t.name.strip_prefix("bpf_iter__"))
        .filter(|name| !name.is_empty() && !name.ends_with(SAFE_TRUSTED))
        .filter(|name| btf.func_named(&format!("bpf_iter_{name}")).is_some())
        .map(str::to_string)
        .collect();
    out.sort();
    out.dedup();
    out
}

impl SystemKernel {
    /// The fields of iterator `name`'s context as `bpftrace -lv` lists them: the parameters
    /// of `bpf_iter_<name>` without the leading `meta` (`struct task_struct * task`);
    /// `None` when BTF has no such function.
    pub fn iterator_args(&self, name: &str) -> Option<Vec<RawTracepointArg>> {
        self.func_params_after_first(&format!("bpf_iter_{name}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_lang::kernel::KernelInfo;

    #[test]
    fn this_kernels_iterators() {
        let k = SystemKernel::new();
        if k.btf().is_err() {
            return; // no BTF here
        }
        let names = k.iterators();
        for want in ["task", "task_file", "task_vma", "bpf_map"] {
            assert!(names.iter().any(|n| n == want), "{want} in {names:?}");
        }
        assert!(!names.iter().any(|n| n.ends_with(SAFE_TRUSTED)));
        let args = k.iterator_args("task_file").unwrap();
        let shown: Vec<String> = args
            .iter()
            .map(|a| format!("{} {}", a.c_type, a.name))
            .collect();
        assert_eq!(
            shown,
            ["struct task_struct * task", "u32 fd", "struct file * file"]
        );
        assert!(k.iterator_args("no_such_iterator").is_none());
    }
}
