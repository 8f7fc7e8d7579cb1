//! Clocks as the BPF helpers see them, and their times as local wall-clock text.

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

/// `strftime(fmt)` of local time `secs` (plus `%f`: microseconds of `nsec`).
pub fn strftime_at(fmt: &str, secs: i64, nsec: u64) -> String {
    let fmt = fmt.replace("%f", &format!("{:06}", nsec / 1000));
    let Ok(cfmt) = std::ffi::CString::new(fmt) else {
        return String::new();
    };
    // SAFETY: tm is plain data filled by localtime_r; buf is large enough and strftime
    // writes at most buf.len() bytes.
    unsafe {
        let t: libc::time_t = secs;
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&t, &mut tm);
        let mut buf = vec![0u8; 512];
        let n = libc::strftime(buf.as_mut_ptr().cast(), buf.len(), cfmt.as_ptr(), &tm);
        buf.truncate(n);
        String::from_utf8_lossy(&buf).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_fixed_time_and_microseconds() {
        // SAFETY: setting TZ for this test process only.
        unsafe { std::env::set_var("TZ", "UTC") };
        assert_eq!(
            strftime_at("%Y-%m-%d %H:%M:%S.%f", 0, 123_456_000),
            "1970-01-01 00:00:00.123456"
        );
    }
}
