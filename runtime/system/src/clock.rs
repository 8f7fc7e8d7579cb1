//! Clocks as the BPF helpers see them, and their times as local wall-clock text.

use sonde_present::output::time::strftime_at;

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

/// Formats the current local time with a strftime format (`%f` = microseconds, as bpftrace).
pub fn strftime_now(fmt: &str) -> String {
    strftime_wall_ns(fmt, now_ns(libc::CLOCK_REALTIME))
}

/// Formats a `bpf_ktime_get_boot_ns()` timestamp as local wall-clock time.
pub fn strftime_boot_ns(fmt: &str, boot_ns: u64) -> String {
    let boot_now = now_ns(libc::CLOCK_BOOTTIME);
    let wall = now_ns(libc::CLOCK_REALTIME) - (boot_now - i128::from(boot_ns));
    strftime_wall_ns(fmt, wall)
}

/// Formats wall-clock nanoseconds since the epoch.
fn strftime_wall_ns(fmt: &str, wall: i128) -> String {
    strftime_at(
        fmt,
        (wall / 1_000_000_000) as i64,
        (wall % 1_000_000_000) as u64,
    )
}
