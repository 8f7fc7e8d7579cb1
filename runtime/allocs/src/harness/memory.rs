//! The harness's own memory, read without allocating: anonymous resident bytes from
//! `/proc/self/statm` (resident − shared) through a file opened before the replay, and the
//! peak resident set (`VmHWM`), reset before the replay through `/proc/self/clear_refs`.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;

/// `/proc/self/statm`, open.
pub struct Statm {
    file: File,
    page: u64,
}

/// The numbers of a `statm` line: fields 2 and 3 (resident, shared), in pages.
fn parse_statm(text: &[u8]) -> Option<(u64, u64)> {
    let mut fields = text
        .split(|b| *b == b' ' || *b == b'\n')
        .filter(|f| !f.is_empty())
        .map(|f| std::str::from_utf8(f).ok()?.parse::<u64>().ok());
    let _size = fields.next()?;
    Some((fields.next()??, fields.next()??))
}

impl Statm {
    /// Opens `/proc/self/statm`.
    pub fn open() -> io::Result<Statm> {
        Ok(Statm {
            file: File::open("/proc/self/statm")?,
            page: unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64,
        })
    }

    /// Anonymous resident bytes now (0 if the file cannot be read).
    pub fn anon(&self) -> u64 {
        let mut buf = [0u8; 128];
        let n = self.file.read_at(&mut buf, 0).unwrap_or(0);
        parse_statm(&buf[..n])
            .map(|(res, shared)| res.saturating_sub(shared) * self.page)
            .unwrap_or(0)
    }
}

/// A `kB` field of `/proc/self/status` (`VmHWM`, `VmRSS`), in bytes.
pub fn status_kb(field: &str) -> Option<u64> {
    let mut text = String::new();
    File::open("/proc/self/status")
        .ok()?
        .read_to_string(&mut text)
        .ok()?;
    let line = text.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line[field.len()..]
        .trim_start_matches(':')
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// Resets the peak resident set (`VmHWM`) to the resident set now; false if the kernel
/// refused.
pub fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statm_and_status_read_this_process() {
        assert_eq!(parse_statm(b"100 40 10 1 0 30 0\n"), Some((40, 10)));
        assert_eq!(parse_statm(b"100 x"), None);
        let s = Statm::open().unwrap();
        assert!(s.anon() > 0);
        assert!(status_kb("VmRSS").unwrap() > 0);
        assert!(status_kb("VmHWM").unwrap() >= status_kb("VmRSS").unwrap() / 2);
    }
}
