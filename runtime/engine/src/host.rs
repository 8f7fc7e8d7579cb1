//! The host functions JIT-compiled probes call, registered by intrinsic name
//! ([`Intrinsic::host_name`]). They reach the engine's state through a thread-local pointer
//! that is set while a probe runs ([`Host::enter`]).
//!
//! Intrinsics that read kernel state (kernel or other processes' memory, the current task,
//! cgroups, stack maps) have no host function: the compiler refuses them in userspace probes.

use super::input::{Record, parse_num, write_str};
use super::store::HostMaps;
use sonde_compiler::ir::Intrinsic;
use std::cell::Cell;

/// The state host functions work on.
pub struct Host {
    /// The script's maps.
    pub maps: HostMaps,
    /// Event records queued by the probe that runs (u32 length, then the record), handled
    /// once it returns, as the kernel's ring buffer is read after the program ran.
    pub events: Vec<u8>,
    /// The ring buffer's size: the queued records may take at most this many bytes less one
    /// in the kernel's layout; further events are lost.
    pub events_cap: usize,
    /// Bytes the records in `events` would take in the kernel's ring buffer (an 8-byte header
    /// each, 8-byte aligned); meaningful only while `events` is not empty.
    events_reserved: usize,
    /// The current input record.
    pub record: Record,
    /// A fixed `CLOCK_BOOTTIME` (replayed events carry their recorded time), if any.
    pub clock: Option<u64>,
    /// sonde's own command name, NUL padded.
    pub comm: [u8; 16],
    /// sonde's pid and tid.
    pub pid_tgid: u64,
    /// sonde's uid and gid.
    pub uid_gid: u64,
    rng: u64,
}

thread_local! {
    static CURRENT: Cell<*mut Host> = const { Cell::new(std::ptr::null_mut()) };
}

impl Host {
    /// Host state for a script with these maps.
    pub fn new(maps: HostMaps, record: Record, events_cap: usize) -> Self {
        let mut comm = [0u8; 16];
        if let Ok(c) = std::fs::read("/proc/self/comm") {
            let c = c.strip_suffix(b"\n").unwrap_or(&c);
            let n = c.len().min(15);
            comm[..n].copy_from_slice(&c[..n]);
        }
        // SAFETY: these calls only read the calling process's ids.
        let (pid, tid, uid, gid) = unsafe {
            (
                libc::getpid() as u64,
                libc::gettid() as u64,
                libc::getuid() as u64,
                libc::getgid() as u64,
            )
        };
        Host {
            maps,
            events: Vec::with_capacity(1 << 16),
            events_cap,
            events_reserved: 0,
            record,
            clock: None,
            comm,
            pid_tgid: pid << 32 | tid,
            uid_gid: gid << 32 | uid,
            rng: 0x9e37_79b9_7f4a_7c15 ^ sonde_system::clock::boot_ns(),
        }
    }

    /// Runs `f` with this host current, so that the host functions reach it.
    pub fn enter<T>(&mut self, f: impl FnOnce() -> T) -> T {
        let prev = CURRENT.with(|c| c.replace(self as *mut Host));
        let r = f();
        CURRENT.with(|c| c.set(prev));
        r
    }
}

/// The host current on this thread (null outside [`Host::enter`]).
pub fn current() -> *mut Host {
    CURRENT.with(Cell::get)
}

/// The host that is current (a probe is running).
///
/// # Safety
/// Only called from host functions, which JIT code calls inside [`Host::enter`].
unsafe fn host<'a>() -> &'a mut Host {
    let p = current();
    assert!(!p.is_null(), "a host function ran outside Host::enter");
    // SAFETY: `enter` set the pointer from a live `&mut Host` for the duration of the call,
    // and nothing else uses that host while JIT code runs.
    unsafe { &mut *p }
}

extern "C" fn map_lookup(map: i64, key: i64) -> i64 {
    // SAFETY: JIT code passes a key buffer of the map's key size.
    unsafe { host().maps.lookup(map, key as *const u8) as i64 }
}

extern "C" fn map_lookup_percpu(map: i64, key: i64, cpu: i64) -> i64 {
    if cpu != 0 {
        return 0;
    }
    map_lookup(map, key)
}

extern "C" fn map_update(map: i64, key: i64, value: i64, flags: i64) -> i64 {
    // SAFETY: JIT code passes key and value buffers of the map's sizes.
    unsafe {
        host()
            .maps
            .update(map, key as *const u8, value as *const u8, flags as u64)
    }
}

extern "C" fn map_delete(map: i64, key: i64) -> i64 {
    // SAFETY: JIT code passes a key buffer of the map's key size.
    unsafe { host().maps.delete(map, key as *const u8) }
}

extern "C" fn ktime_get_ns() -> i64 {
    sonde_system::clock::now_ns(libc::CLOCK_MONOTONIC) as i64
}

extern "C" fn ktime_get_tai_ns() -> i64 {
    sonde_system::clock::now_ns(libc::CLOCK_TAI) as i64
}

extern "C" fn ktime_get_boot_ns() -> i64 {
    // SAFETY: called by JIT code inside `enter`.
    match unsafe { host() }.clock {
        Some(t) => t as i64,
        None => sonde_system::clock::boot_ns() as i64,
    }
}

extern "C" fn get_pid_tgid() -> i64 {
    // SAFETY: called by JIT code inside `enter`.
    unsafe { host() }.pid_tgid as i64
}

/// `bpf_get_ns_current_pid_tgid`: the engine's pid and tid are already those of sonde's
/// own pid namespace (`getpid()`).
extern "C" fn get_ns_pid_tgid(_dev: i64, _ino: i64, dst: i64, size: i64) -> i64 {
    if size < 8 {
        return -22;
    }
    // SAFETY: called by JIT code inside `enter`.
    let t = unsafe { host() }.pid_tgid;
    let bytes = [(t as u32).to_le_bytes(), ((t >> 32) as u32).to_le_bytes()].concat();
    // SAFETY: the JIT code passes a buffer of `size` (at least 8) bytes.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst as *mut u8, 8) };
    0
}

extern "C" fn get_uid_gid() -> i64 {
    // SAFETY: called by JIT code inside `enter`.
    unsafe { host() }.uid_gid as i64
}

extern "C" fn get_current_comm(dst: i64, size: i64) -> i64 {
    // SAFETY: called by JIT code inside `enter`, with a buffer of `size` bytes.
    unsafe {
        let h = host();
        let end = h.comm.iter().position(|&b| b == 0).unwrap_or(16);
        write_str(dst as *mut u8, size.max(0) as usize, &h.comm[..end]);
    }
    0
}

extern "C" fn get_cpu() -> i64 {
    0
}

extern "C" fn random() -> i64 {
    // SAFETY: called by JIT code inside `enter`.
    let h = unsafe { host() };
    // xorshift64
    let mut x = h.rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    h.rng = x;
    (x & 0xffff_ffff) as i64
}

extern "C" fn jiffies() -> i64 {
    // One jiffy per millisecond (a HZ=1000 kernel's count since boot).
    (sonde_system::clock::now_ns(libc::CLOCK_MONOTONIC) / 1_000_000) as i64
}

extern "C" fn ringbuf_output(_map: i64, data: i64, size: i64, _flags: i64) -> i64 {
    // SAFETY: called by JIT code inside `enter`, with `size` readable bytes at `data`.
    unsafe {
        let h = host();
        let size = size.max(0) as usize;
        // Fail exactly when the kernel's bpf_ringbuf_output would, with nothing consumed yet:
        // when the reserved bytes would reach the buffer's size.
        if h.events.is_empty() {
            h.events_reserved = 0;
        }
        let reserved = h.events_reserved + (size + 8).next_multiple_of(8);
        if reserved >= h.events_cap {
            return -11; // -EAGAIN, as the kernel: counted as a lost event by the program
        }
        h.events_reserved = reserved;
        h.events.extend_from_slice(&(size as u32).to_le_bytes());
        h.events
            .extend_from_slice(std::slice::from_raw_parts(data as *const u8, size));
    }
    0
}

/// A loop body or map-iteration callback compiled by the JIT.
type Callback4 = unsafe extern "C" fn(i64, i64, i64, i64) -> i64;
/// A `bpf_loop` body.
type Callback2 = unsafe extern "C" fn(i64, i64) -> i64;

extern "C" fn for_each_map_elem(map: i64, callback: i64, ctx: i64, _flags: i64) -> i64 {
    // SAFETY: JIT code passes the address of a callback compiled with 4 parameters.
    let cb: Callback4 = unsafe { std::mem::transmute::<usize, Callback4>(callback as usize) };
    // SAFETY: called by JIT code inside `enter`.
    let keys = unsafe { host() }.maps.keys(map);
    let mut n = 0;
    for k in keys {
        // SAFETY: the key came from the map, so it has the map's key size.
        let v = unsafe { host().maps.lookup(map, k.as_ptr()) };
        if v.is_null() {
            continue;
        }
        n += 1;
        // SAFETY: the callback reads the key and value it is given, as the kernel's does.
        if unsafe { cb(map, k.as_ptr() as i64, v as i64, ctx) } != 0 {
            break;
        }
    }
    n
}

/// The kernel's limit on `bpf_loop` iterations.
const MAX_LOOPS: i64 = 1 << 23;

extern "C" fn bpf_loop(count: i64, callback: i64, ctx: i64, _flags: i64) -> i64 {
    // The kernel's helper takes the count as a `u32`: the upper half of the register is
    // ignored.
    let count = i64::from(count as u32);
    if count > MAX_LOOPS {
        return -7; // -E2BIG, as the kernel
    }
    // SAFETY: JIT code passes the address of a callback compiled with 2 parameters.
    let cb: Callback2 = unsafe { std::mem::transmute::<usize, Callback2>(callback as usize) };
    for i in 0..count {
        // SAFETY: the callback is JIT code of the running script.
        if unsafe { cb(i, ctx) } != 0 {
            return i + 1;
        }
    }
    count
}

/// `probe_read`/`probe_read_kernel` in the userspace engine: pointers there are into sonde's
/// own memory (`&$x`, `&@m`), read with `process_vm_readv` on this process so that a bad
/// address fails (zero-filling `dst`, as the kernel's helper does) instead of crashing.
extern "C" fn mem_copy(dst: i64, size: i64, src: i64) -> i64 {
    // SAFETY: the compiler copies between buffers it owns, each of `size` bytes; they may
    // overlap only if equal (`copy` semantics).
    unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, size.max(0) as usize) };
    0
}

extern "C" fn probe_read_self(dst: i64, size: i64, src: i64) -> i64 {
    let size = size.max(0) as usize;
    if src == 0 {
        // The compiler's way of zeroing a buffer (a read that fails): no system call.
        // SAFETY: `dst` has `size` writable bytes (the JIT's own buffer).
        unsafe { std::ptr::write_bytes(dst as *mut u8, 0, size) };
        return -i64::from(libc::EFAULT);
    }
    let local = libc::iovec {
        iov_base: dst as *mut libc::c_void,
        iov_len: size,
    };
    let remote = libc::iovec {
        iov_base: src as *mut libc::c_void,
        iov_len: size,
    };
    // SAFETY: `dst` has `size` writable bytes (the JIT's own buffer); the kernel checks `src`.
    let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    if n >= 0 && n as usize == size {
        return 0;
    }
    // SAFETY: as above.
    unsafe { std::ptr::write_bytes(dst as *mut u8, 0, size) };
    -i64::from(libc::EFAULT)
}

extern "C" fn input_line(dst: i64, size: i64) -> i64 {
    // SAFETY: called by JIT code inside `enter`, with a buffer of `size` bytes.
    unsafe {
        let h = host();
        write_str(dst as *mut u8, size.max(0) as usize, h.record.line()) as i64
    }
}

extern "C" fn input_field(dst: i64, size: i64, n: i64) -> i64 {
    // SAFETY: called by JIT code inside `enter`, with a buffer of `size` bytes.
    unsafe {
        let h = host();
        let f = h.record.field(n);
        write_str(dst as *mut u8, size.max(0) as usize, f) as i64
    }
}

extern "C" fn input_field_count() -> i64 {
    // SAFETY: called by JIT code inside `enter`.
    unsafe { host() }.record.nf() as i64
}

extern "C" fn input_record_number() -> i64 {
    // SAFETY: called by JIT code inside `enter`.
    unsafe { host() }.record.nr as i64
}

extern "C" fn parse_num_host(s: i64, size: i64, scale: i64) -> i64 {
    if s == 0 {
        return 0;
    }
    // SAFETY: JIT code passes a string buffer of `size` bytes.
    let bytes = unsafe { std::slice::from_raw_parts(s as *const u8, size.max(0) as usize) };
    parse_num(bytes, scale)
}

extern "C" fn input_field_num(n: i64, scale: i64) -> i64 {
    // SAFETY: called by JIT code inside `enter`.
    let h = unsafe { host() };
    parse_num(h.record.field(n), scale)
}

/// The address of the host function for `i`, or `None` for intrinsics that only the kernel
/// provides.
fn address(i: Intrinsic) -> Option<*const u8> {
    let p = match i {
        Intrinsic::MapLookup => map_lookup as *const u8,
        Intrinsic::MapUpdate => map_update as *const u8,
        Intrinsic::MapDelete => map_delete as *const u8,
        Intrinsic::MapLookupPercpu => map_lookup_percpu as *const u8,
        Intrinsic::KtimeGetNs => ktime_get_ns as *const u8,
        Intrinsic::KtimeGetBootNs => ktime_get_boot_ns as *const u8,
        Intrinsic::GetPidTgid => get_pid_tgid as *const u8,
        Intrinsic::GetNsPidTgid => get_ns_pid_tgid as *const u8,
        Intrinsic::GetUidGid => get_uid_gid as *const u8,
        Intrinsic::GetCurrentComm => get_current_comm as *const u8,
        Intrinsic::GetCpu => get_cpu as *const u8,
        Intrinsic::Random => random as *const u8,
        Intrinsic::Jiffies => jiffies as *const u8,
        Intrinsic::RingbufOutput => ringbuf_output as *const u8,
        Intrinsic::ForEachMapElem => for_each_map_elem as *const u8,
        Intrinsic::Loop => bpf_loop as *const u8,
        Intrinsic::InputLine => input_line as *const u8,
        Intrinsic::InputField => input_field as *const u8,
        Intrinsic::InputFieldCount => input_field_count as *const u8,
        Intrinsic::InputRecordNumber => input_record_number as *const u8,
        Intrinsic::ParseNum => parse_num_host as *const u8,
        Intrinsic::InputFieldNum => input_field_num as *const u8,
        Intrinsic::KtimeGetTaiNs => ktime_get_tai_ns as *const u8,
        Intrinsic::ProbeReadKernel | Intrinsic::ProbeRead => probe_read_self as *const u8,
        Intrinsic::MemCopy => mem_copy as *const u8,
        Intrinsic::ProbeReadUser
        | Intrinsic::ProbeReadKernelStr
        | Intrinsic::ProbeReadUserStr
        | Intrinsic::ProbeReadStr
        | Intrinsic::GetCurrentTask
        | Intrinsic::GetCgroupId
        | Intrinsic::GetAncestorCgroupId
        | Intrinsic::GetStackId
        | Intrinsic::NumaNodeId
        | Intrinsic::SendSignal
        | Intrinsic::SendSignalThread
        | Intrinsic::OverrideReturn
        | Intrinsic::ProbeWriteUser
        | Intrinsic::GetFuncIp
        | Intrinsic::SeqPrintf
        | Intrinsic::DPath
        | Intrinsic::TracePrintk
        | Intrinsic::GetStack
        | Intrinsic::Kfunc(_)
        | Intrinsic::ThisCpuPtr(_)
        | Intrinsic::PerCpuPtr(_) => return None,
    };
    Some(p)
}

/// The host functions, by name, for the JIT.
pub fn symbols() -> Vec<(&'static str, *const u8)> {
    Intrinsic::ALL
        .iter()
        .filter_map(|&i| Some((i.host_name(), address(i)?)))
        .collect()
}
