//! A bpffs instance of the process's own, mounted nowhere: where a live session pins the maps
//! its entries share, for aya's loader to find by path.
//!
//! The filesystem is created with the new mount API (`fsopen("bpf")`, `fsconfig` create,
//! `fsmount`) and never attached to any directory: it is reached only through its mount
//! descriptor, held by [`PrivateBpffs`]. Nobody else can see, plant or replace a file in it,
//! and when the descriptor closes (the session ends, or the process is killed, even by
//! `SIGKILL`) the filesystem and every pin in it go with it: nothing outlives the process.
//!
//! Paths in it are given relative to its root, on a thread whose working directory is that
//! root ([`PrivateBpffs::within`]: `unshare(CLONE_FS)` keeps the change to that thread).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// `FSOPEN_CLOEXEC`.
const FSOPEN_CLOEXEC: libc::c_uint = 1;
/// `FSCONFIG_CMD_CREATE`.
const FSCONFIG_CMD_CREATE: libc::c_uint = 6;
/// `FSMOUNT_CLOEXEC`.
const FSMOUNT_CLOEXEC: libc::c_uint = 1;

/// A bpffs instance mounted nowhere, alive while this value is (see the module documentation).
#[derive(Debug)]
pub struct PrivateBpffs {
    /// The detached mount of the filesystem's root.
    root: OwnedFd,
}

fn fd_result(rc: libc::c_long) -> io::Result<OwnedFd> {
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = i32::try_from(rc).map_err(|_| io::Error::from(io::ErrorKind::InvalidData))?;
    // SAFETY: the kernel returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

impl PrivateBpffs {
    /// A new, empty bpffs of this process's own. Errors: the kernel's (`EPERM` without
    /// `CAP_SYS_ADMIN`; `ENOSYS` before Linux 5.2).
    pub fn new() -> io::Result<PrivateBpffs> {
        // SAFETY: the name is a NUL-terminated string; the flags are valid.
        let context =
            fd_result(unsafe { libc::syscall(libc::SYS_fsopen, c"bpf".as_ptr(), FSOPEN_CLOEXEC) })?;
        // SAFETY: FSCONFIG_CMD_CREATE takes no key, value or aux.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_fsconfig,
                context.as_raw_fd(),
                FSCONFIG_CMD_CREATE,
                std::ptr::null::<libc::c_char>(),
                std::ptr::null::<libc::c_void>(),
                0,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `context` is a created filesystem context; no mount attributes.
        let root = fd_result(unsafe {
            libc::syscall(
                libc::SYS_fsmount,
                context.as_raw_fd(),
                FSMOUNT_CLOEXEC,
                0 as libc::c_uint,
            )
        })?;
        Ok(PrivateBpffs { root })
    }

    /// Runs `f` on a thread of its own whose working directory is this filesystem's root, so
    /// that relative paths given to `bpf()` (`BPF_OBJ_PIN`, `BPF_OBJ_GET`) name files in it.
    /// The rest of the process keeps its working directory. Errors: the thread could not
    /// take a private filesystem context or enter the root.
    pub fn within<R: Send>(&self, f: impl FnOnce() -> R + Send) -> io::Result<R> {
        let root = self.root.as_raw_fd();
        std::thread::scope(|scope| {
            scope
                .spawn(move || {
                    // SAFETY: unshare(CLONE_FS) gives this thread its own root and working
                    // directory; fchdir reads a descriptor the caller keeps open.
                    let entered =
                        unsafe { libc::unshare(libc::CLONE_FS) == 0 && libc::fchdir(root) == 0 };
                    if !entered {
                        return Err(io::Error::last_os_error());
                    }
                    Ok(f())
                })
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("the pinning thread panicked")))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;
    use std::path::Path;

    #[test]
    fn pins_live_in_the_private_filesystem_only() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: needs root");
            return;
        }
        let fs = PrivateBpffs::new().expect("a private bpffs");
        // BPF_MAP_TYPE_ARRAY, one u64.
        let map = crate::syscall::map_create(2, 4, 8, 1).expect("a map");
        let name = format!("sonde-private-test-{}", std::process::id());
        let pinned = fs
            .within(|| crate::syscall::obj_pin(map.as_fd(), Path::new(&name)))
            .expect("the thread runs");
        pinned.expect("pinned in the private bpffs");
        // Found there, from another thread entering it.
        let again = fs
            .within(|| crate::syscall::obj_get(Path::new(&name)).is_ok())
            .expect("the thread runs");
        assert!(again);
        // Not in this thread's working directory, nor in the system's bpffs.
        assert!(!Path::new(&name).exists());
        assert!(!Path::new("/sys/fs/bpf").join(&name).exists());
        // Another instance is empty.
        let other = PrivateBpffs::new().expect("a second private bpffs");
        let elsewhere = other
            .within(|| crate::syscall::obj_get(Path::new(&name)).is_ok())
            .expect("the thread runs");
        assert!(!elsewhere);
    }
}
