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

/// The capabilities a run keeps once its probes are attached ([`drop_after_attach`]): map
/// and ring buffer access by the descriptors it holds need none; symbols need kallsyms'
/// addresses (CAP_SYSLOG), other users' binaries and process maps (CAP_DAC_READ_SEARCH,
/// CAP_SYS_PTRACE); END runs through BPF_PROG_TEST_RUN (CAP_BPF, CAP_PERFMON).
pub const KEPT_AFTER_ATTACH: &[u32] = &[2, 19, 34, CAP_PERFMON, CAP_BPF];

/// Drops every capability but [`KEPT_AFTER_ATTACH`] from this process (effective,
/// permitted and inheritable sets) and forbids gaining new ones (`no_new_privs`): what a
/// long-running agent does once its probes are attached. A process without those
/// capabilities keeps what it has.
pub fn drop_after_attach() -> Result<(), String> {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    let mut header = Header {
        version: VERSION_3,
        pid: 0,
    };
    let mut data = [Data::default(); 2];
    // SAFETY: capget with a v3 header and two data words, as the ABI says.
    let r = unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) };
    if r != 0 {
        return Err(format!("capget: {}", std::io::Error::last_os_error()));
    }
    let keep: u64 = KEPT_AFTER_ATTACH.iter().fold(0, |m, c| m | 1 << c);
    for (i, d) in data.iter_mut().enumerate() {
        let k = (keep >> (32 * i)) as u32;
        d.effective &= k;
        d.permitted &= k;
        d.inheritable = 0;
    }
    // SAFETY: as above; lowering our own sets needs no privilege.
    let r = unsafe { libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) };
    if r != 0 {
        return Err(format!("capset: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: prctl with constant arguments.
    unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) };
    Ok(())
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
