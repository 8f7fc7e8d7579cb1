//! Locating (and if needed mounting) tracefs, the kernel's tracing file system.
//!
//! Tracepoint lists and formats, `available_filter_functions` and `kprobe_events` live there.
//! The usual mount point is `/sys/kernel/tracing`; older systems reach it through debugfs at
//! `/sys/kernel/debug/tracing`. On a fresh machine it may not be mounted at all: as root,
//! [`tracefs_root`] mounts it (`mount -t tracefs nodev /sys/kernel/tracing`).

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The mount points tried, in order.
pub const TRACEFS_CANDIDATES: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// True when `dir` looks like a mounted tracefs (it has an `events` directory).
fn is_tracefs(dir: &Path) -> bool {
    dir.join("events").is_dir() || dir.join("available_events").exists()
}

/// The tracefs directory, mounting tracefs at `/sys/kernel/tracing` when it is not mounted.
///
/// The answer (or error) is computed once per process. Errors are full sentences that say
/// what to do (run as root, mount by hand).
pub fn tracefs_root() -> Result<PathBuf, String> {
    static ROOT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    ROOT.get_or_init(find_or_mount).clone()
}

fn find_or_mount() -> Result<PathBuf, String> {
    if let Some(found) = TRACEFS_CANDIDATES
        .iter()
        .map(Path::new)
        .find(|p| is_tracefs(p))
    {
        return Ok(found.to_path_buf());
    }
    let target = TRACEFS_CANDIDATES[0];
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Err(format!(
            "tracefs is not mounted (looked at {}), and mounting it needs root: run sonde as \
             root, or mount it with `mount -t tracefs nodev {target}`",
            TRACEFS_CANDIDATES.join(" and ")
        ));
    }
    mount_tracefs(target)?;
    if is_tracefs(Path::new(target)) {
        Ok(PathBuf::from(target))
    } else {
        Err(format!(
            "mounted tracefs at {target}, but it has no `events` directory"
        ))
    }
}

fn mount_tracefs(target: &str) -> Result<(), String> {
    let c = |s: &str| CString::new(s).map_err(|e| e.to_string());
    let (source, dir, fstype) = (c("nodev")?, c(target)?, c("tracefs")?);
    // SAFETY: all pointers are valid NUL-terminated strings that outlive the call; data is null.
    let rc = unsafe {
        libc::mount(
            source.as_ptr(),
            dir.as_ptr(),
            fstype.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        let err = std::io::Error::last_os_error();
        Err(format!(
            "tracefs is not mounted and `mount -t tracefs nodev {target}` failed: {err}"
        ))
    }
}

/// Reads a file below the tracefs root, with an error text naming the path and the cause
/// (and the need for root when permission is denied).
pub fn read_tracefs_file(relative: &str) -> Result<String, String> {
    let path = tracefs_root()?.join(relative);
    std::fs::read_to_string(&path).map_err(|e| match e.kind() {
        std::io::ErrorKind::PermissionDenied => {
            format!(
                "cannot read {}: permission denied (run sonde as root)",
                path.display()
            )
        }
        _ => format!("cannot read {}: {e}", path.display()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_mounted_tracefs_with_sched_events() {
        let root = tracefs_root().expect("tracefs available on the test machine");
        assert!(TRACEFS_CANDIDATES.iter().any(|c| Path::new(c) == root));
        assert!(root.join("events/sched/sched_switch/format").is_file());
    }

    #[test]
    fn missing_file_error_names_the_path() {
        let err = read_tracefs_file("no_such_file_here").unwrap_err();
        assert!(err.starts_with("cannot read /sys/kernel"), "{err}");
        assert!(err.contains("no_such_file_here"), "{err}");
    }
}
