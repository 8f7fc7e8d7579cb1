//! Attaching `watchpoint:ADDR:LEN:MODE` probes: hardware breakpoints, perf events of type
//! `PERF_TYPE_BREAKPOINT` (the kernel's `breakpoint` PMU, on x86-64 the debug registers,
//! four per CPU) that run the program at each access, as bpftrace 0.26 opens them.
//!
//! With a process (`-p PID`, or the `-c` child), one event per thread of the process,
//! inherited by the threads it creates later; without one, the address is the kernel's and
//! one event per online CPU watches it. A thread or CPU whose event cannot be opened is
//! skipped with a warning, as bpftrace does; only a watchpoint that could be put nowhere is
//! an error ("No more HW registers left" when the debug registers are all taken).

use std::io;

use aya::programs::ProgramError;
use aya::programs::perf_event::{
    BreakpointConfig, PerfBreakpointLength, PerfBreakpointType, PerfEvent, PerfEventConfig,
    PerfEventScope, SamplePolicy,
};
use sonde_compiler::program::{AttachSpec, AttachTarget};
use sonde_lang::diag::Diagnostic;

use crate::link::LinkId;
use sonde_system::cpus::online_cpus;

/// Where x86-64's kernel half of the address space starts: an address below it needs a
/// process to be watched in.
const KERNEL_SPACE: u64 = 0xffff_8000_0000_0000;

/// The perf event configuration of a watchpoint.
fn config(addr: u64, len: u8, mode: &str) -> PerfEventConfig {
    let length = match len {
        1 => PerfBreakpointLength::Len1,
        2 => PerfBreakpointLength::Len2,
        4 => PerfBreakpointLength::Len4,
        _ => PerfBreakpointLength::Len8,
    };
    PerfEventConfig::Breakpoint(match mode {
        // An execution breakpoint covers one instruction (the kernel wants sizeof(long)).
        "x" => BreakpointConfig::Instruction { address: addr },
        "w" => BreakpointConfig::Data {
            r#type: PerfBreakpointType::Write,
            address: addr,
            length,
        },
        _ => BreakpointConfig::Data {
            r#type: PerfBreakpointType::ReadWrite,
            address: addr,
            length,
        },
    })
}

/// The threads of process `pid`.
fn threads(pid: u32) -> io::Result<Vec<u32>> {
    let mut tids: Vec<u32> = std::fs::read_dir(format!("/proc/{pid}/task"))?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    tids.sort_unstable();
    Ok(tids)
}

/// Opens the watchpoint `spec` on the threads of `pid` (or every CPU) with program `p`,
/// pushing each link on `ids`. Errors: a user address without a process
/// (`InvalidInput`), or no event could be opened (the last failure).
pub(crate) fn attach(
    p: &mut PerfEvent,
    spec: &AttachSpec,
    pid: Option<u32>,
    ids: &mut Vec<LinkId>,
) -> Result<(), ProgramError> {
    let AttachSpec::Watchpoint { addr, len, mode } = spec else {
        return Err(ProgramError::UnexpectedProgramType);
    };
    let scopes: Vec<(PerfEventScope, bool, String)> = match pid {
        Some(pid) => threads(pid)
            .map_err(ProgramError::IOError)?
            .into_iter()
            .map(|tid| {
                let scope = PerfEventScope::OneProcess {
                    pid: tid,
                    cpu: None,
                };
                (scope, true, format!("cpu -1 tid {tid}"))
            })
            .collect(),
        None if *addr < KERNEL_SPACE => {
            return Err(ProgramError::IOError(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a user-space address",
            )));
        }
        None => online_cpus()
            .map_err(ProgramError::IOError)?
            .into_iter()
            .map(|cpu| {
                let scope = PerfEventScope::AllProcessesOneCpu { cpu };
                (scope, false, format!("cpu {cpu} tid -1"))
            })
            .collect(),
    };
    let mut last = None;
    for (scope, inherit, what) in scopes {
        match p.attach(
            config(*addr, *len, mode),
            scope,
            SamplePolicy::Period(1),
            inherit,
        ) {
            Ok(id) => ids.push(LinkId::PerfEvent(id)),
            Err(e) => {
                sonde_system::warnings::warn(&format!(
                    "Failed to create a perf event for {what}: {}",
                    cause(&e)
                ));
                last = Some(e);
            }
        }
    }
    match last {
        Some(e) if ids.is_empty() => Err(e),
        _ => Ok(()),
    }
}

/// The OS error under an aya attach error.
fn os_error(e: &ProgramError) -> Option<i32> {
    match e {
        ProgramError::SyscallError(s) => s.io_error.raw_os_error(),
        ProgramError::IOError(io) => io.raw_os_error(),
        _ => None,
    }
}

/// The text of an attach error's cause (`No space left on device (os error 28)`).
fn cause(e: &ProgramError) -> String {
    match e {
        ProgramError::SyscallError(s) => s.io_error.to_string(),
        other => other.to_string(),
    }
}

/// The diagnostic for a watchpoint that could not be put anywhere.
pub(crate) fn attach_error(target: &AttachTarget, e: &ProgramError) -> Diagnostic {
    let addr = match target.spec {
        AttachSpec::Watchpoint { addr, .. } => addr,
        _ => 0,
    };
    let base = |message: String| {
        Diagnostic::error("sonde::attach::watchpoint", target.span, message)
            .with_label("watchpoint")
    };
    match e {
        ProgramError::IOError(io) if io.kind() == io::ErrorKind::InvalidInput => base(format!(
            "cannot watch {addr:#x}: a user-space address needs the process it belongs to"
        ))
        .with_help(
            "give the process with `-p PID` or start it with `-c CMD`; without either, \
             watchpoints watch kernel addresses",
        ),
        _ if os_error(e) == Some(libc::ENOSPC) => base(format!(
            "cannot attach {}: No more HW registers left",
            target.name
        ))
        .with_help(
            "each CPU has four debug registers, shared by every watchpoint and debugger on \
             the machine: watch fewer addresses",
        ),
        _ if os_error(e) == Some(libc::ENOENT) => base(format!(
            "cannot attach {}: this machine has no hardware breakpoints",
            target.name
        ))
        .with_help("the kernel's `breakpoint` PMU is missing (/sys/bus/event_source/devices)"),
        _ if os_error(e) == Some(libc::EINVAL)
            && addr >= KERNEL_SPACE
            && matches!(&target.spec, AttachSpec::Watchpoint { mode, .. } if mode == "x") =>
        {
            base(format!(
                "cannot attach {}: the kernel refuses execution breakpoints in its code here",
                target.name
            ))
            .with_help(
                "Linux allows them only where a kprobe could go, and not at all without kprobe \
                 support; watch data (`w`, `rw`) or trace the function another way",
            )
        }
        _ if os_error(e) == Some(libc::ESRCH) => base(format!(
            "cannot attach {}: the process is gone",
            target.name
        )),
        _ => base(format!("cannot attach {}: {}", target.name, cause(e))).with_help(
            "the address must be aligned to the length, and mapped in the process (or the kernel)",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_lang::span::Span;

    fn target(addr: u64) -> AttachTarget {
        AttachTarget {
            spec: AttachSpec::Watchpoint {
                addr,
                len: 8,
                mode: "w".into(),
            },
            name: format!("watchpoint:{addr}:8:w"),
            span: Span::new(0, 9),
        }
    }

    #[test]
    fn user_addresses_need_a_process() {
        let e = ProgramError::IOError(io::Error::new(io::ErrorKind::InvalidInput, "x"));
        let d = attach_error(&target(0x1000), &e);
        assert_eq!(d.code, "sonde::attach::watchpoint");
        assert_eq!(
            d.message,
            "cannot watch 0x1000: a user-space address needs the process it belongs to"
        );
        let full = ProgramError::SyscallError(aya::sys::SyscallError {
            call: "perf_event_open",
            io_error: io::Error::from_raw_os_error(libc::ENOSPC),
        });
        assert_eq!(
            attach_error(&target(0x1000), &full).message,
            "cannot attach watchpoint:4096:8:w: No more HW registers left"
        );
    }

    #[test]
    fn threads_of_this_process() {
        let me = std::process::id();
        assert!(threads(me).unwrap().contains(&me));
        assert!(threads(u32::MAX).is_err());
    }
}
