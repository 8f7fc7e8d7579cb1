//! A small fixture [`KernelInfo`] for the provider tests: a few tracepoints with formats,
//! raw tracepoints, optional kernel functions and two binaries (libc with one pair of aliases).

use sonde_lang::ast::AttachPoint;
use sonde_lang::kernel::{KernelInfo, RecordKind, TracepointField};
use sonde_lang::span::Span;
use sonde_lang::types::Record;
use std::sync::Arc;

/// The resolved path of `libc` in the fixture.
pub const LIBC: &str = "/lib/x86_64-linux-gnu/libc.so.6";

/// A fixture kernel; `kprobes` decides whether `kernel_functions()` is `Some`.
pub struct Fixture {
    /// Whether the kernel supports kprobes.
    pub kprobes: bool,
}

fn field(name: &str, c_type: &str, offset: u32, size: u32, signed: bool) -> TracepointField {
    TracepointField::new(name, c_type, offset, size, signed)
}

fn common() -> Vec<TracepointField> {
    vec![
        field("common_type", "unsigned short", 0, 2, false),
        field("common_flags", "unsigned char", 2, 1, false),
        field("common_preempt_count", "unsigned char", 3, 1, false),
        field("common_pid", "int", 4, 4, true),
    ]
}

impl KernelInfo for Fixture {
    fn tracepoints(&self) -> Vec<(String, String)> {
        [
            ("syscalls", "sys_enter_openat"),
            ("syscalls", "sys_enter_read"),
            ("syscalls", "sys_exit_read"),
            ("sched", "sched_switch"),
            ("sched", "sched_process_exec"),
        ]
        .iter()
        .map(|(c, n)| (c.to_string(), n.to_string()))
        .collect()
    }

    fn tracepoint_format(&self, category: &str, name: &str) -> Option<Vec<TracepointField>> {
        let mut f = common();
        match (category, name) {
            ("syscalls", "sys_enter_openat") => {
                f.push(field("__syscall_nr", "int", 8, 4, true));
                f.push(field("dfd", "int", 16, 8, true));
                f.push(field("filename", "const char *", 24, 8, false));
                f.push(field("flags", "int", 32, 8, true));
                f.push(field("mode", "umode_t", 40, 8, false));
            }
            ("syscalls", "sys_enter_read") => {
                f.push(field("__syscall_nr", "int", 8, 4, true));
                f.push(field("fd", "unsigned int", 16, 8, false));
                f.push(field("buf", "char *", 24, 8, false));
                f.push(field("count", "size_t", 32, 8, false));
            }
            ("syscalls", "sys_exit_read") => {
                f.push(field("__syscall_nr", "int", 8, 4, true));
                f.push(field("ret", "long", 16, 8, true));
            }
            ("sched", "sched_switch") => {
                f.push(field("prev_comm", "char[16]", 8, 16, false));
                f.push(field("prev_pid", "pid_t", 24, 4, true));
                f.push(field("next_comm", "char[16]", 40, 16, false));
                f.push(field("next_pid", "pid_t", 56, 4, true));
            }
            ("sched", "sched_process_exec") => {
                f.push(field("filename", "__data_loc char[]", 8, 4, false));
                f.push(field("pid", "pid_t", 12, 4, true));
            }
            _ => return None,
        }
        Some(f)
    }

    fn raw_tracepoints(&self) -> Vec<String> {
        ["sched_switch", "sys_enter", "sys_exit"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    fn kernel_functions(&self) -> Option<Vec<String>> {
        self.kprobes.then(|| {
            ["vfs_read", "vfs_write", "vfs_open", "do_sys_openat2"]
                .iter()
                .map(|s| s.to_string())
                .collect()
        })
    }

    fn record(&self, _: RecordKind, _: &str) -> Option<Arc<Record>> {
        None
    }

    fn enum_value(&self, _: &str) -> Option<(String, i64)> {
        None
    }

    fn resolve_binary(&self, target: &str) -> Option<String> {
        match target {
            "libc" | LIBC => Some(LIBC.into()),
            "/bin/bash" => Some("/bin/bash".into()),
            "/bin/broken" => Some("/bin/broken".into()),
            _ => None,
        }
    }

    fn elf_functions(&self, path: &str) -> Result<Vec<String>, String> {
        let names: &[&str] = match path {
            LIBC => &[
                "malloc",
                "__libc_malloc",
                "free",
                "getpid",
                "getaddrinfo",
                "gethostbyname",
            ],
            "/bin/bash" => &["readline", "main", "rl_getc"],
            _ => return Err(format!("{path}: not an ELF file")),
        };
        Ok(names.iter().map(|s| s.to_string()).collect())
    }

    fn elf_function_groups(&self, path: &str) -> Result<Vec<Vec<String>>, String> {
        // `malloc` and `__libc_malloc` are one place (aliases), as in glibc.
        Ok(self
            .elf_functions(path)?
            .into_iter()
            .filter(|n| n != "__libc_malloc")
            .map(|n| match n.as_str() {
                "malloc" => vec![n, "__libc_malloc".to_string()],
                _ => vec![n],
            })
            .collect())
    }

    fn elf_function_code(&self, path: &str, name: &str) -> Option<Vec<u8>> {
        // push rbp; mov rbp, rsp; sub rsp, 0x10; ret: boundaries at 0, 1, 4, 8.
        (path == "/bin/bash" && name == "main")
            .then(|| vec![0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x10, 0xc3])
    }
}

/// An attach point parsed the simple way (split on `:`), spanning `0..raw.len()`.
pub fn ap(raw: &str) -> AttachPoint {
    let mut it = raw.split(':');
    let provider = it.next().unwrap_or_default().to_string();
    AttachPoint {
        raw: raw.into(),
        provider,
        parts: it.map(String::from).collect(),
        span: Span::new(0, raw.len()),
    }
}
