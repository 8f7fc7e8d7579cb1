//! A fixture kernel: four real tracepoint formats (copied from Linux 6.18's tracefs), one
//! small `struct task_struct`, one enum, one binary, and the BTF ids of two kfuncs and two
//! per-CPU variables.

use crate::kernel::{BtfObject, KernelInfo, RecordKind, TracepointField};
use crate::types::{Field, Record, Type};
use std::sync::Arc;

/// A [`KernelInfo`] backed by fixed data.
#[derive(Clone, Copy, Debug, Default)]
pub struct FixtureKernel;

/// `(category, name, fields as (c_type, name, offset, size, signed))`.
type Format = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str, u32, u32, bool)],
);

const COMMON: [(&str, &str, u32, u32, bool); 4] = [
    ("unsigned short", "common_type", 0, 2, false),
    ("unsigned char", "common_flags", 2, 1, false),
    ("unsigned char", "common_preempt_count", 3, 1, false),
    ("int", "common_pid", 4, 4, true),
];

const FORMATS: &[Format] = &[
    (
        "syscalls",
        "sys_enter_openat",
        &[
            ("int", "__syscall_nr", 8, 4, true),
            ("int", "dfd", 16, 8, false),
            ("const char *", "filename", 24, 8, false),
            ("int", "flags", 32, 8, false),
            ("umode_t", "mode", 40, 8, false),
        ],
    ),
    (
        "syscalls",
        "sys_exit_openat",
        &[
            ("int", "__syscall_nr", 8, 4, true),
            ("long", "ret", 16, 8, true),
        ],
    ),
    (
        "sched",
        "sched_switch",
        &[
            ("char[16]", "prev_comm", 8, 16, false),
            ("pid_t", "prev_pid", 24, 4, true),
            ("int", "prev_prio", 28, 4, true),
            ("long", "prev_state", 32, 8, true),
            ("char[16]", "next_comm", 40, 16, false),
            ("pid_t", "next_pid", 56, 4, true),
            ("int", "next_prio", 60, 4, true),
        ],
    ),
    (
        "block",
        "block_rq_issue",
        &[
            ("dev_t", "dev", 8, 4, false),
            ("sector_t", "sector", 16, 8, false),
            ("unsigned int", "nr_sector", 24, 4, false),
            ("unsigned int", "bytes", 28, 4, false),
            ("unsigned short", "ioprio", 32, 2, false),
            ("char[10]", "rwbs", 34, 10, false),
            ("char[16]", "comm", 44, 16, false),
            ("__data_loc char[]", "cmd", 60, 4, false),
        ],
    ),
];

/// `struct task_struct { int pid; char comm[16]; struct task_struct *parent; }`, whose
/// `parent` points to an opaque `struct task_struct` (see [`crate::ctypes`]).
pub fn task_struct() -> Arc<Record> {
    let parent = Type::Ptr {
        pointee: Box::new(Type::Record(crate::ctypes::opaque_record(
            RecordKind::Struct,
            "task_struct",
        ))),
        space: crate::types::AddrSpace::Kernel,
    };
    let f = |name: &str, offset, ty| Field {
        name: name.into(),
        offset,
        ty,
        bitfield: None,
        data_loc: false,
        nul_room: false,
    };
    Arc::new(Record {
        name: "struct task_struct".into(),
        size: 32,
        fields: vec![
            f("pid", 0, Type::I32),
            f("comm", 4, Type::Str { size: 16 }),
            f("parent", 24, parent),
        ],
        is_union: false,
    })
}

/// The fixture's kernel BTF objects: `(kind, name, id)`.
const BTF_OBJECTS: &[(BtfObject, &str, u32)] = &[
    (BtfObject::Func, "bpf_task_from_pid", 65900),
    (BtfObject::Func, "bpf_task_release", 65910),
    (BtfObject::Var, "runqueues", 10671),
    (BtfObject::Var, "process_counts", 9573),
];

impl KernelInfo for FixtureKernel {
    /// `runqueues` at its per-CPU offset, as a kernel with CONFIG_KALLSYMS_ALL lists it
    /// (`process_counts` is left out: a variable the verifier could not resolve).
    fn kernel_symbol_address(&self, name: &str) -> Option<u64> {
        (name == "runqueues").then_some(0x2c1c0)
    }

    fn kernel_btf_id(&self, kind: BtfObject, name: &str) -> Option<u32> {
        BTF_OBJECTS
            .iter()
            .find(|(k, n, _)| *k == kind && *n == name)
            .map(|(_, _, id)| *id)
    }

    fn tracepoints(&self) -> Vec<(String, String)> {
        FORMATS
            .iter()
            .map(|(c, n, _)| (c.to_string(), n.to_string()))
            .collect()
    }

    fn tracepoint_format(&self, category: &str, name: &str) -> Option<Vec<TracepointField>> {
        let (_, _, fields) = FORMATS
            .iter()
            .find(|(c, n, _)| *c == category && *n == name)?;
        Some(
            COMMON
                .iter()
                .chain(fields.iter())
                .map(|(c_type, name, offset, size, signed)| TracepointField {
                    name: name.to_string(),
                    c_type: c_type.to_string(),
                    offset: *offset,
                    size: *size,
                    signed: *signed,
                })
                .collect(),
        )
    }

    fn raw_tracepoints(&self) -> Vec<String> {
        vec!["sched_switch".into(), "sys_enter".into()]
    }

    fn kernel_functions(&self) -> Option<Vec<String>> {
        Some(vec![
            "vfs_read".into(),
            "vfs_write".into(),
            "do_sys_openat2".into(),
        ])
    }

    fn record(&self, kind: RecordKind, name: &str) -> Option<Arc<Record>> {
        (kind == RecordKind::Struct && name == "task_struct").then(task_struct)
    }

    fn enum_value(&self, name: &str) -> Option<(String, i64)> {
        match name {
            "PIDTYPE_PID" => Some(("pid_type".into(), 0)),
            "PIDTYPE_TGID" => Some(("pid_type".into(), 1)),
            _ => None,
        }
    }

    fn resolve_binary(&self, target: &str) -> Option<String> {
        match target {
            "/bin/bash" | "bash" => Some("/bin/bash".into()),
            _ => None,
        }
    }

    fn elf_functions(&self, path: &str) -> Result<Vec<String>, String> {
        match path {
            "/bin/bash" => Ok(vec!["main".into(), "readline".into()]),
            _ => Err(format!("{path}: no such file")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_have_common_fields() {
        let f = FixtureKernel
            .tracepoint_format("syscalls", "sys_enter_openat")
            .unwrap();
        assert_eq!(f.len(), 9);
        assert_eq!(f[6].name, "filename");
        assert_eq!(FixtureKernel.tracepoints().len(), 4);
        assert!(
            FixtureKernel
                .record(RecordKind::Struct, "task_struct")
                .is_some()
        );
    }
}
