//! Clocks as the BPF helpers see them.

/// The time of clock `id` (`CLOCK_REALTIME`, `CLOCK_BOOTTIME`, ...) in nanoseconds.
pub fn now_ns(id: libc::clockid_t) -> i128 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec to fill.
    unsafe { libc::clock_gettime(id, &mut ts) };
    i128::from(ts.tv_sec) * 1_000_000_000 + i128::from(ts.tv_nsec)
}

/// `CLOCK_BOOTTIME` in nanoseconds: the clock of `bpf_ktime_get_boot_ns()` (sonde's `nsecs`).
pub fn boot_ns() -> u64 {
    now_ns(libc::CLOCK_BOOTTIME) as u64
}

/// `CLOCK_TAI - CLOCK_BOOTTIME` in nanoseconds: added to `bpf_ktime_get_boot_ns()`, it gives
/// bpftrace's `sw_tai` clock, which `tseries()` reads.
pub fn tai_offset_ns() -> u64 {
    (now_ns(libc::CLOCK_TAI) - now_ns(libc::CLOCK_BOOTTIME)).max(0) as u64
}
