//! BPF iterators (`iter:` probes). Attaching one creates its link ([`link_create`]; with
//! `-p PID` a task iterator walks that process only, as in bpftrace); after BEGIN, the run
//! reads it once (`iterate::run`): the kernel runs the program for each object as the read asks for output,
//! and what its `printf`s formatted into the iterator's seq_file is the text read, printed
//! line by line as it comes. Or, for `iter:NAME:PIN`, it pins the link in bpffs
//! instead (`Program pinned to PATH`), where each read of the file runs the iteration again
//! after sonde has exited.

#![allow(clippy::result_large_err)] // Diagnostic is the project-wide error type.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use aya::programs::ProgramError;
use sonde_compiler::program::{AttachSpec, AttachTarget, CompiledScript, ProgramSpec};
use sonde_lang::diag::Diagnostic;

use crate::link::LinkId;
use crate::load::Loaded;
use crate::syscall::{BPF_LINK_CREATE, sys_bpf_fd};

/// `BPF_ITER_CREATE`.
const BPF_ITER_CREATE: libc::c_long = 33;
/// `BPF_TRACE_ITER`.
const BPF_TRACE_ITER: u32 = 28;

/// Code of an iterator that cannot be read or pinned.
pub const ITER_FAILED: &str = "sonde::runtime::iter";

/// The `link_create` member of `union bpf_attr` with its iterator fields.
#[repr(C)]
#[derive(Default)]
struct LinkCreateAttr {
    prog_fd: u32,
    target_fd: u32,
    attach_type: u32,
    flags: u32,
    iter_info: u64,
    iter_info_len: u32,
    pad: u32,
}

/// `union bpf_iter_link_info`, its `task` member: `{ tid, pid, pid_fd }`.
#[repr(C)]
#[derive(Default)]
struct TaskLinkInfo {
    tid: u32,
    pid: u32,
    pid_fd: u32,
    pad: u32,
}

/// The `iter_create` member of `union bpf_attr`.
#[repr(C)]
struct IterCreateAttr {
    link_fd: u32,
    flags: u32,
}

/// True for the iterators whose link can be limited to one process (`-p PID`).
pub fn takes_pid(name: &str) -> bool {
    matches!(name, "task" | "task_file" | "task_vma")
}

/// Creates the link of iterator program `prog` (iterator `name`), over process `pid` only
/// when given and the iterator walks tasks.
pub fn link_create(prog: BorrowedFd<'_>, name: &str, pid: Option<u32>) -> io::Result<OwnedFd> {
    let info = TaskLinkInfo {
        pid: pid.unwrap_or(0),
        ..TaskLinkInfo::default()
    };
    let limited = pid.is_some() && takes_pid(name);
    let mut attr = LinkCreateAttr {
        prog_fd: prog.as_raw_fd() as u32,
        attach_type: BPF_TRACE_ITER,
        iter_info: if limited {
            &info as *const TaskLinkInfo as u64
        } else {
            0
        },
        iter_info_len: if limited {
            size_of::<TaskLinkInfo>() as u32
        } else {
            0
        },
        ..LinkCreateAttr::default()
    };
    // SAFETY: `attr` is BPF_LINK_CREATE's layout; `info` outlives the call.
    unsafe { sys_bpf_fd(BPF_LINK_CREATE, &mut attr) }
}

/// Creates the link of loaded iterator program `p` (see [`link_create`]): only the link;
/// [`run`] reads or pins it after BEGIN.
pub fn attach(
    p: &aya::programs::Iter,
    name: &str,
    pid: Option<u32>,
) -> Result<OwnedFd, ProgramError> {
    let fd = p.fd()?;
    link_create(fd.as_fd(), name, pid).map_err(|io_error| {
        aya::sys::SyscallError {
            call: "bpf_link_create",
            io_error,
        }
        .into()
    })
}

/// The diagnostic of an iterator link the kernel refused: most likely an iterator that walks
/// the objects of one target (a map's elements, a cgroup's tasks), which sonde, like
/// bpftrace, does not give it.
pub fn attach_error(target: &AttachTarget, name: &str, e: &ProgramError) -> Diagnostic {
    let cause = crate::errors::error_chain(e);
    let help = if takes_pid(name) {
        "this is a sonde bug; please report it with the script".to_string()
    } else {
        format!(
            "the `{name}` iterator may need a target to walk (a map, a cgroup), which sonde does not give it, as bpftrace does not; iterators over all their objects work (`task`, `task_file`, `task_vma`, `bpf_map`, `bpf_prog`, `ksym`, `tcp`, ...)"
        )
    };
    Diagnostic::error(
        "sonde::attach::failed",
        target.span,
        format!("cannot attach {}: {cause}", target.name),
    )
    .with_label("this iterator")
    .with_help(help)
}

/// Opens a new iteration of iterator link `link`: reading the file runs it.
pub fn iter_create(link: BorrowedFd<'_>) -> io::Result<File> {
    let mut attr = IterCreateAttr {
        link_fd: link.as_raw_fd() as u32,
        flags: 0,
    };
    // SAFETY: `attr` is BPF_ITER_CREATE's layout.
    let fd = unsafe { sys_bpf_fd(BPF_ITER_CREATE, &mut attr)? };
    Ok(File::from(fd))
}

/// The iterator target of `p`, if it is an iterator program.
fn iterator_target(p: &ProgramSpec) -> Option<&AttachTarget> {
    p.attach
        .iter()
        .find(|t| matches!(t.spec, AttachSpec::Iter { .. }))
}

/// The script's iterator, if it has one: its attach target and its link.
pub fn find(loaded: &Loaded) -> Option<(&AttachTarget, BorrowedFd<'_>)> {
    let (symbol, target) = loaded
        .programs
        .iter()
        .find_map(|p| Some((&p.symbol, iterator_target(p)?)))?;
    let fd = loaded.links.iter().find_map(|l| match &l.id {
        LinkId::Owned(fd) if &l.symbol == symbol => Some(fd.as_fd()),
        _ => None,
    })?;
    Some((target, fd))
}

/// The first program of `script` attached by an iterator probe, if any (for the modes that
/// cannot run one: `sonde record`, `sonde repl`).
pub fn iterator_program(script: &CompiledScript) -> Option<&ProgramSpec> {
    script
        .programs
        .iter()
        .find(|p| iterator_target(p).is_some())
}

/// True when the script has an iterator probe.
pub fn has_iterator(loaded: &Loaded) -> bool {
    loaded.programs.iter().any(|p| iterator_target(p).is_some())
}

/// Cuts a byte stream into lines (each with its `\n`), keeping an unfinished one for later.
#[derive(Debug, Default)]
pub struct Lines {
    partial: Vec<u8>,
}

impl Lines {
    /// Adds `bytes`, handing every line they complete to `line`.
    pub fn push(&mut self, mut bytes: &[u8], line: &mut dyn FnMut(&[u8])) {
        while let Some(i) = bytes.iter().position(|&b| b == b'\n') {
            let (head, rest) = bytes.split_at(i + 1);
            if self.partial.is_empty() {
                line(head);
            } else {
                self.partial.extend_from_slice(head);
                line(&std::mem::take(&mut self.partial));
            }
            bytes = rest;
        }
        self.partial.extend_from_slice(bytes);
    }

    /// Hands the unfinished line, if any, to `line`.
    pub fn finish(&mut self, line: &mut dyn FnMut(&[u8])) {
        if !self.partial.is_empty() {
            line(&std::mem::take(&mut self.partial));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_across_reads() {
        let mut got: Vec<String> = Vec::new();
        let mut l = Lines::default();
        let mut take = |b: &[u8]| got.push(String::from_utf8_lossy(b).into_owned());
        l.push(b"a 1\nb", &mut take);
        l.push(b" 2\nc 3\n\nd", &mut take);
        l.finish(&mut take);
        assert_eq!(got, ["a 1\n", "b 2\n", "c 3\n", "\n", "d"]);
    }

    #[test]
    fn task_iterators_take_a_pid() {
        assert!(takes_pid("task") && takes_pid("task_file") && takes_pid("task_vma"));
        assert!(!takes_pid("bpf_map"));
    }
}
