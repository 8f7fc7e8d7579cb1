//! Thin wrappers over the `bpf()` system call for what aya 0.14 does not expose with
//! runtime-sized keys and values: map element access by file descriptor and
//! `BPF_PROG_TEST_RUN`; and for what it does not offer at all: uprobe-multi programs and
//! links.
//!
//! Attribute layouts follow `union bpf_attr` in the kernel's `include/uapi/linux/bpf.h`.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

const BPF_MAP_LOOKUP_ELEM: libc::c_long = 1;
const BPF_MAP_UPDATE_ELEM: libc::c_long = 2;
const BPF_MAP_DELETE_ELEM: libc::c_long = 3;
const BPF_MAP_GET_NEXT_KEY: libc::c_long = 4;
/// `BPF_MAP_CREATE`.
pub(crate) const BPF_MAP_CREATE: libc::c_long = 0;
/// `BPF_PROG_LOAD`.
pub(crate) const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_PROG_TEST_RUN: libc::c_long = 10;
/// `BPF_LINK_CREATE`.
pub(crate) const BPF_LINK_CREATE: libc::c_long = 28;
/// `BPF_PROG_TYPE_KPROBE`: uprobes are kprobe-type programs.
const BPF_PROG_TYPE_KPROBE: u32 = 2;
/// `BPF_TRACE_UPROBE_MULTI`.
const BPF_TRACE_UPROBE_MULTI: u32 = 48;
/// `BPF_F_UPROBE_MULTI_RETURN`: a uretprobe.
const BPF_F_UPROBE_MULTI_RETURN: u32 = 1;

/// `BPF_OBJ_GET`.
const BPF_OBJ_GET: libc::c_long = 7;

/// The `obj_pin` member of `union bpf_attr` (BPF_OBJ_GET reads `pathname` and `file_flags`).
#[repr(C)]
#[derive(Default)]
struct ObjAttr {
    pathname: u64,
    bpf_fd: u32,
    file_flags: u32,
}

/// `BPF_OBJ_PIN`.
const BPF_OBJ_PIN: libc::c_long = 6;

/// Pins the BPF object `fd` at `path` in a bpffs.
pub fn obj_pin(fd: BorrowedFd<'_>, path: &std::path::Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let mut attr = ObjAttr {
        pathname: c.as_ptr() as u64,
        bpf_fd: fd.as_raw_fd() as u32,
        file_flags: 0,
    };
    // SAFETY: `attr` is BPF_OBJ_PIN's layout; `pathname` points at a NUL-terminated string
    // that outlives the call.
    unsafe { sys_bpf(BPF_OBJ_PIN, &mut attr)? };
    Ok(())
}

/// Opens the BPF object pinned at `path` in a bpffs (a new descriptor of it).
pub fn obj_get(path: &std::path::Path) -> io::Result<OwnedFd> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let mut attr = ObjAttr {
        pathname: c.as_ptr() as u64,
        ..ObjAttr::default()
    };
    // SAFETY: `attr` is BPF_OBJ_GET's layout; `pathname` points at a NUL-terminated string
    // that outlives the call.
    unsafe { sys_bpf_fd(BPF_OBJ_GET, &mut attr) }
}

/// `BPF_ANY`: create or update.
pub const BPF_ANY: u64 = 0;
/// `BPF_NOEXIST`: create only.
pub const BPF_NOEXIST: u64 = 1;
/// `BPF_EXIST`: update only.
pub const BPF_EXIST: u64 = 2;

/// `struct { u32 map_fd; u64 key; u64 value_or_next_key; u64 flags; }` (aligned_u64).
#[repr(C)]
#[derive(Default)]
struct MapElemAttr {
    map_fd: u32,
    _pad: u32,
    key: u64,
    value: u64,
    flags: u64,
}

/// The `test` member of `union bpf_attr`.
#[repr(C)]
#[derive(Default)]
struct TestRunAttr {
    prog_fd: u32,
    retval: u32,
    data_size_in: u32,
    data_size_out: u32,
    data_in: u64,
    data_out: u64,
    repeat: u32,
    duration: u32,
    ctx_size_in: u32,
    ctx_size_out: u32,
    ctx_in: u64,
    ctx_out: u64,
    flags: u32,
    cpu: u32,
    batch_size: u32,
    _pad: u32,
}

/// `BPF_MAP_CREATE` attributes up to `map_name`.
#[repr(C)]
#[derive(Default)]
struct MapCreateAttr {
    map_type: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    map_flags: u32,
    inner_map_fd: u32,
    numa_node: u32,
    map_name: [u8; 16],
}

/// Creates a map of the kernel's `map_type` (no flags, no name).
pub(crate) fn map_create(
    map_type: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
) -> io::Result<OwnedFd> {
    let mut attr = MapCreateAttr {
        map_type,
        key_size,
        value_size,
        max_entries,
        ..MapCreateAttr::default()
    };
    // SAFETY: a plain attribute struct without pointers.
    unsafe { sys_bpf_fd(BPF_MAP_CREATE, &mut attr) }
}

/// The `BPF_PROG_LOAD` members of `union bpf_attr`, up to `attach_prog_fd` (the zeroed
/// tail is accepted by every kernel that knows the members before it).
#[repr(C)]
#[derive(Default)]
pub(crate) struct ProgLoadAttr {
    pub prog_type: u32,
    pub insn_cnt: u32,
    pub insns: u64,
    pub license: u64,
    pub log_level: u32,
    pub log_size: u32,
    pub log_buf: u64,
    pub kern_version: u32,
    pub prog_flags: u32,
    pub prog_name: [u8; 16],
    pub prog_ifindex: u32,
    pub expected_attach_type: u32,
    pub prog_btf_fd: u32,
    pub func_info_rec_size: u32,
    pub func_info: u64,
    pub func_info_cnt: u32,
    pub line_info_rec_size: u32,
    pub line_info: u64,
    pub line_info_cnt: u32,
    pub attach_btf_id: u32,
    pub attach_prog_fd: u32,
    pub _pad: u32,
}

/// The `link_create` member of `union bpf_attr` with its `uprobe_multi` part.
#[repr(C)]
#[derive(Default)]
struct UprobeMultiLinkAttr {
    prog_fd: u32,
    target_fd: u32,
    attach_type: u32,
    flags: u32,
    path: u64,
    offsets: u64,
    ref_ctr_offsets: u64,
    cookies: u64,
    cnt: u32,
    multi_flags: u32,
    pid: u32,
    _pad: u32,
}

/// Loads `insns` (encoded instructions, map references already resolved to fds) as a
/// GPL uprobe program for uprobe-multi links, named `name` (cut to 15 bytes).
pub fn prog_load_uprobe_multi(insns: &[u8], name: &str) -> io::Result<OwnedFd> {
    let license = c"GPL";
    let mut attr = ProgLoadAttr {
        prog_type: BPF_PROG_TYPE_KPROBE,
        insn_cnt: u32::try_from(insns.len() / 8).map_err(|_| io::ErrorKind::InvalidInput)?,
        insns: insns.as_ptr() as u64,
        license: license.as_ptr() as u64,
        expected_attach_type: BPF_TRACE_UPROBE_MULTI,
        ..ProgLoadAttr::default()
    };
    for (d, s) in attr.prog_name.iter_mut().zip(name.bytes().take(15)) {
        *d = s;
    }
    // SAFETY: insns and license outlive the call; the log is off (no buffer).
    unsafe { sys_bpf_fd(BPF_PROG_LOAD, &mut attr) }
}

/// Attaches uprobe-multi program `prog` at file offset `offset` of `path` (its return when
/// `ret`), for process `pid` only when given.
pub fn link_create_uprobe_multi(
    prog: BorrowedFd<'_>,
    path: &CStr,
    offset: u64,
    ret: bool,
    pid: Option<u32>,
) -> io::Result<OwnedFd> {
    let offsets = [offset];
    let mut attr = UprobeMultiLinkAttr {
        prog_fd: prog.as_raw_fd() as u32,
        attach_type: BPF_TRACE_UPROBE_MULTI,
        path: path.as_ptr() as u64,
        offsets: offsets.as_ptr() as u64,
        cnt: 1,
        multi_flags: if ret { BPF_F_UPROBE_MULTI_RETURN } else { 0 },
        pid: pid.unwrap_or(0),
        ..UprobeMultiLinkAttr::default()
    };
    // SAFETY: path and offsets outlive the call and hold `cnt` entries.
    unsafe { sys_bpf_fd(BPF_LINK_CREATE, &mut attr) }
}

/// [`sys_bpf`] of a command that creates an object: its new file descriptor.
///
/// # Safety
/// As [`sys_bpf`].
pub(crate) unsafe fn sys_bpf_fd<T>(cmd: libc::c_long, attr: &mut T) -> io::Result<OwnedFd> {
    // SAFETY: forwarded to the caller's contract.
    let fd = unsafe { sys_bpf(cmd, attr)? };
    // SAFETY: the kernel returned a new file descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Calls `bpf(cmd, attr, size_of(attr))`.
///
/// # Safety
/// `attr` must be the attribute struct `cmd` expects, and every pointer in it must be valid
/// for the sizes the kernel will read or write.
unsafe fn sys_bpf<T>(cmd: libc::c_long, attr: &mut T) -> io::Result<libc::c_long> {
    // SAFETY: forwarded to the caller's contract.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            attr as *mut T as *mut libc::c_void,
            size_of::<T>(),
        )
    };
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn map_elem(fd: BorrowedFd<'_>, key: Option<&[u8]>, value: u64, flags: u64) -> MapElemAttr {
    MapElemAttr {
        map_fd: fd.as_raw_fd() as u32,
        key: key.map_or(0, |k| k.as_ptr() as u64),
        value,
        flags,
        ..MapElemAttr::default()
    }
}

/// Looks `key` up; on success the value is copied into `value`, which must be exactly the
/// map's value buffer size (for per-CPU maps: value size rounded up to 8 × possible CPUs).
/// Returns `Ok(false)` when the key is absent.
pub fn map_lookup(fd: BorrowedFd<'_>, key: &[u8], value: &mut [u8]) -> io::Result<bool> {
    let mut attr = map_elem(fd, Some(key), value.as_mut_ptr() as u64, 0);
    // SAFETY: key and value are live buffers of the map's key and value buffer sizes
    // (checked by the callers in `maps`).
    match unsafe { sys_bpf(BPF_MAP_LOOKUP_ELEM, &mut attr) } {
        Ok(_) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Creates or updates `key` with `value` (`flags`: [`BPF_ANY`], [`BPF_NOEXIST`],
/// [`BPF_EXIST`]).
pub fn map_update(fd: BorrowedFd<'_>, key: &[u8], value: &[u8], flags: u64) -> io::Result<()> {
    let mut attr = map_elem(fd, Some(key), value.as_ptr() as u64, flags);
    // SAFETY: as in `map_lookup`; the kernel only reads both buffers.
    unsafe { sys_bpf(BPF_MAP_UPDATE_ELEM, &mut attr) }.map(drop)
}

/// Deletes `key`; `Ok(false)` when it was absent.
pub fn map_delete(fd: BorrowedFd<'_>, key: &[u8]) -> io::Result<bool> {
    let mut attr = map_elem(fd, Some(key), 0, 0);
    // SAFETY: key is a live buffer of the map's key size.
    match unsafe { sys_bpf(BPF_MAP_DELETE_ELEM, &mut attr) } {
        Ok(_) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Writes the key following `key` (the first key when `None`) into `next`; `Ok(false)` at
/// the end of the map.
pub fn map_next_key(fd: BorrowedFd<'_>, key: Option<&[u8]>, next: &mut [u8]) -> io::Result<bool> {
    let mut attr = map_elem(fd, key, next.as_mut_ptr() as u64, 0);
    // SAFETY: key (if any) and next are live buffers of the map's key size.
    match unsafe { sys_bpf(BPF_MAP_GET_NEXT_KEY, &mut attr) } {
        Ok(_) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Runs a loaded program once with `BPF_PROG_TEST_RUN`, on the calling CPU and in the
/// calling task's context, with `ctx` as its context (for raw tracepoints: the u64
/// arguments, at most 12). Returns the program's return value.
pub fn prog_test_run(fd: BorrowedFd<'_>, ctx: &[u64]) -> io::Result<u32> {
    let mut attr = TestRunAttr {
        prog_fd: fd.as_raw_fd() as u32,
        ctx_size_in: size_of_val(ctx) as u32,
        ctx_in: if ctx.is_empty() {
            0
        } else {
            ctx.as_ptr() as u64
        },
        ..TestRunAttr::default()
    };
    // SAFETY: ctx is a live buffer of ctx_size_in bytes; no output buffers are given.
    unsafe { sys_bpf(BPF_PROG_TEST_RUN, &mut attr) }?;
    Ok(attr.retval)
}

/// Runs a loaded program `repeat` times with `BPF_PROG_TEST_RUN` on `data` as its packet
/// (XDP: at least an Ethernet header's 14 bytes). Returns the last run's return value and
/// the mean duration of a run in nanoseconds, as the kernel measures it.
pub fn prog_test_run_repeat(
    fd: BorrowedFd<'_>,
    data: &[u8],
    repeat: u32,
) -> io::Result<(u32, u32)> {
    let mut attr = TestRunAttr {
        prog_fd: fd.as_raw_fd() as u32,
        data_size_in: data.len() as u32,
        data_in: data.as_ptr() as u64,
        repeat,
        ..TestRunAttr::default()
    };
    // SAFETY: data is a live buffer of data_size_in bytes; no output buffers are given.
    unsafe { sys_bpf(BPF_PROG_TEST_RUN, &mut attr) }?;
    Ok((attr.retval, attr.duration))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attribute_layouts_match_the_kernel() {
        assert_eq!(size_of::<MapElemAttr>(), 32);
        assert_eq!(std::mem::offset_of!(MapElemAttr, key), 8);
        assert_eq!(std::mem::offset_of!(MapElemAttr, flags), 24);
        assert_eq!(std::mem::offset_of!(TestRunAttr, data_in), 16);
        assert_eq!(std::mem::offset_of!(TestRunAttr, repeat), 32);
        assert_eq!(std::mem::offset_of!(TestRunAttr, ctx_size_in), 40);
        assert_eq!(std::mem::offset_of!(TestRunAttr, ctx_in), 48);
        assert_eq!(std::mem::offset_of!(TestRunAttr, flags), 64);
        assert_eq!(std::mem::offset_of!(TestRunAttr, batch_size), 72);
    }

    #[test]
    fn bad_fd_is_an_error_not_a_crash() {
        // SAFETY: fd 1_000_000 is not open in the test process; the kernel rejects it.
        let fd = unsafe { BorrowedFd::borrow_raw(1_000_000) };
        let err = map_lookup(fd, &[0; 4], &mut [0; 8]).unwrap_err();
        // EBADF as root; unprivileged callers may be refused first with EPERM.
        assert!(
            matches!(err.raw_os_error(), Some(libc::EBADF | libc::EPERM)),
            "{err}"
        );
    }
}

/// `BPF_OBJ_GET_INFO_BY_FD`.
const BPF_OBJ_GET_INFO_BY_FD: libc::c_long = 15;

/// The `info` member of `union bpf_attr`.
#[repr(C)]
#[derive(Default)]
struct InfoAttr {
    bpf_fd: u32,
    info_len: u32,
    info: u64,
}

/// The offset of `recursion_misses` in `struct bpf_prog_info` (Linux 5.12 and later).
const RECURSION_MISSES_AT: usize = 208;

/// How many times the kernel skipped program `fd` because a BPF program was already running
/// on that CPU (`bpf_prog_info.recursion_misses`; 0 on kernels without the field).
pub fn recursion_misses(fd: BorrowedFd<'_>) -> io::Result<u64> {
    let mut info = [0u8; 256];
    let mut attr = InfoAttr {
        bpf_fd: fd.as_raw_fd() as u32,
        info_len: info.len() as u32,
        info: info.as_mut_ptr() as u64,
    };
    // SAFETY: `attr` is the info attribute; `info` is writable for the length given.
    unsafe { sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &mut attr)? };
    let end = RECURSION_MISSES_AT + 8;
    if (attr.info_len as usize) < end {
        return Ok(0);
    }
    Ok(u64::from_ne_bytes(
        info[RECURSION_MISSES_AT..end].try_into().expect("8 bytes"),
    ))
}
