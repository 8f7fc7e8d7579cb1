//! Clocks as the BPF helpers see them.

/// `CLOCK_BOOTTIME` in nanoseconds: the clock of `bpf_ktime_get_boot_ns()` (sonde's `nsecs`).
pub fn boot_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
