//! Uprobes with a reference counter (USDT semaphores), opened directly with
//! `perf_event_open`: aya 0.14's uprobe attach cannot pass the counter's offset. While the
//! returned descriptor is open the kernel keeps the counter in every mapping of the binary
//! incremented, so the program's `*_ENABLED()` checks see a tracer; closing it detaches the
//! probe and decrements the counter.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// `perf_event_attr` up to `config3` (`PERF_ATTR_SIZE_VER8`, 136 bytes).
/// Also used by [`crate::mmap_tracker`].
#[repr(C)]
#[derive(Default)]
pub(crate) struct PerfEventAttr {
    pub(crate) type_: u32,
    pub(crate) size: u32,
    pub(crate) config: u64,
    pub(crate) sample_period: u64,
    pub(crate) sample_type: u64,
    pub(crate) read_format: u64,
    pub(crate) flags: u64,
    pub(crate) wakeup_events: u32,
    pub(crate) bp_type: u32,
    pub(crate) config1: u64,
    pub(crate) config2: u64,
    pub(crate) rest: [u64; 8],
}

/// `PERF_UPROBE_REF_CTR_OFFSET_SHIFT`: the counter's offset goes in the upper half of `config`.
const REF_CTR_SHIFT: u32 = 32;
/// `PERF_EVENT_IOC_SET_BPF`.
const IOC_SET_BPF: libc::c_ulong = 0x4004_2408;
/// `PERF_FLAG_FD_CLOEXEC`.
pub(crate) const FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
/// `PERF_EVENT_IOC_ENABLE`.
const IOC_ENABLE: libc::c_ulong = 0x2400;

fn read_number(path: &str, prefix: &str) -> io::Result<u32> {
    let text = std::fs::read_to_string(path)?;
    text.trim()
        .strip_prefix(prefix)
        .unwrap_or(text.trim())
        .parse()
        .map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("unexpected contents of {path}"),
            )
        })
}

/// Opens a uprobe (a uretprobe when `ret`) at file `offset` of `path` with the reference counter
/// at file offset `ref_ctr`, and attaches program `prog` to it; only in process `pid` when
/// given.
pub fn attach(
    prog: BorrowedFd<'_>,
    path: &str,
    offset: u64,
    ret: bool,
    ref_ctr: u64,
    pid: Option<u32>,
) -> io::Result<OwnedFd> {
    let pmu = read_number("/sys/bus/event_source/devices/uprobe/type", "")?;
    let mut config = ref_ctr << REF_CTR_SHIFT;
    if ret {
        config |= 1
            << read_number(
                "/sys/bus/event_source/devices/uprobe/format/retprobe",
                "config:",
            )?;
    }
    let c_path = std::ffi::CString::new(path)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in path"))?;
    let attr = PerfEventAttr {
        type_: pmu,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config,
        sample_period: 1,
        wakeup_events: 1,
        config1: c_path.as_ptr() as u64,
        config2: offset,
        ..Default::default()
    };
    let (pid, cpu) = match pid {
        Some(p) => (p as libc::pid_t, -1),
        None => (-1, 0),
    };
    // SAFETY: attr is a valid perf_event_attr of the size it declares; c_path outlives the call.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            pid,
            cpu,
            -1,
            FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: perf_event_open returned a fresh descriptor that we now own.
    let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    // SAFETY: ioctls on our own perf event descriptor with the documented arguments.
    unsafe {
        if libc::ioctl(fd.as_raw_fd(), IOC_SET_BPF, prog.as_raw_fd()) != 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::ioctl(fd.as_raw_fd(), IOC_ENABLE, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(fd)
}

#[cfg(test)]
mod tests {
    #[test]
    fn attr_has_the_kernel_layout() {
        assert_eq!(std::mem::size_of::<super::PerfEventAttr>(), 136);
        assert_eq!(std::mem::offset_of!(super::PerfEventAttr, config1), 56);
        assert_eq!(std::mem::offset_of!(super::PerfEventAttr, config2), 64);
    }
}
