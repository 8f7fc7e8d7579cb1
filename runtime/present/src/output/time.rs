//! Local wall-clock time as text (`strftime`), for timestamps and time series.

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
