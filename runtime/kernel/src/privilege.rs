//! Whether this process may trace the kernel: root, or the capabilities CAP_BPF and
//! CAP_PERFMON (or CAP_SYS_ADMIN, which holds both), plus read access to tracefs.
//!
//! Without them every kernel facility fails in its own way (tracefs looks unmounted,
//! tracepoints look unknown, `-l` finds nothing): [`missing`] says once what is needed, before
//! any of that happens. Scripts of the userspace engine never ask.

use std::path::Path;

/// Capability numbers (linux/capability.h).
const CAP_SYS_ADMIN: u32 = 21;
const CAP_PERFMON: u32 = 38;
const CAP_BPF: u32 = 39;

/// The help text that goes with [`missing`]'s message.
pub const HELP: &str = "run sonde as root (sudo sonde ...); scripts of `input` or `replay` \
                        probes, and BEGIN/END/interval scripts run with `--engine jit`, need no \
                        privilege";

/// Why this process cannot trace the kernel, or `None` when it can.
pub fn missing() -> Option<String> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    if !root && !has_bpf_capabilities(effective_capabilities()) {
        return Some(
            "tracing the kernel needs root, or the capabilities CAP_BPF and CAP_PERFMON with \
             read access to tracefs (/sys/kernel/tracing), which this user does not have"
                .to_string(),
        );
    }
    if root {
        // Root mounts tracefs when needed; a failure there has its own message.
        return None;
    }
    let no_access = |dir: &Path| {
        format!(
            "tracing the kernel needs read access to tracefs ({}), which this user lacks \
             (CAP_BPF and CAP_PERFMON alone are not enough)",
            dir.display()
        )
    };
    // A mounted tracefs is closed to other users (mode 700): then it only looks unmounted.
    if let Some(closed) = sonde_system::tracefs::TRACEFS_CANDIDATES
        .iter()
        .map(Path::new)
        .find(|d| d.is_dir() && !readable_dir(d))
    {
        return Some(no_access(closed));
    }
    match sonde_system::tracefs::tracefs_root() {
        Ok(dir) if readable_dir(&dir.join("events")) => None,
        Ok(dir) => Some(no_access(&dir)),
        Err(e) => Some(e),
    }
}

/// The effective capability set of this process (`CapEff` in `/proc/self/status`).
fn effective_capabilities() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        })
        .unwrap_or(0)
}

/// True when the capability set `caps` allows loading tracing programs.
fn has_bpf_capabilities(caps: u64) -> bool {
    let has = |c: u32| caps & (1u64 << c) != 0;
    has(CAP_SYS_ADMIN) || (has(CAP_BPF) && has(CAP_PERFMON))
}

/// True when this process may list and enter `dir`.
fn readable_dir(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated path for the duration of the call.
    unsafe { libc::access(c.as_ptr(), libc::R_OK | libc::X_OK) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capability_sets() {
        assert!(!has_bpf_capabilities(0));
        assert!(has_bpf_capabilities(1 << CAP_SYS_ADMIN));
        assert!(!has_bpf_capabilities(1 << CAP_BPF));
        assert!(has_bpf_capabilities((1 << CAP_BPF) | (1 << CAP_PERFMON)));
    }

    #[test]
    fn root_may_trace() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            assert_eq!(missing(), None);
        }
    }
}
