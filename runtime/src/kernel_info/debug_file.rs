//! Finding and mapping the file that holds a binary's DWARF: the binary itself, or a separate
//! debug file found the way gdb and bpftrace (libdwfl) find them:
//!
//! - by build id: `/usr/lib/debug/.build-id/xx/yyyy.debug` (`xx` the first byte of the
//!   `.note.gnu.build-id`, `yyyy` the rest, in hex);
//! - by `.gnu_debuglink` (a file name and the CRC-32 of that file): next to the binary, in
//!   its `.debug/` subdirectory, then under `/usr/lib/debug` followed by the binary's
//!   directory. A candidate whose CRC differs is skipped, as gdb does.
//!
//! Files are mapped, not read: a debug file can be hundreds of megabytes, of which one unit
//! is parsed. Compressed sections (`SHF_COMPRESSED` or `.zdebug_*`, zlib) are inflated one
//! section at a time, within [`MAX_SECTION`] bytes.

use object::{Object, ObjectSection};
use std::borrow::Cow;
use std::path::{Path, PathBuf};

/// The global debug directory.
pub const DEBUG_DIR: &str = "/usr/lib/debug";
/// The largest section sonde inflates (a compressed section claiming more is refused).
pub const MAX_SECTION: u64 = 1 << 30;

/// A read-only private mapping of a whole file (an empty file maps to an empty slice).
#[derive(Debug)]
pub struct Mapped {
    ptr: *mut libc::c_void,
    len: usize,
}

// SAFETY: the mapping is read-only and owned by this value; sharing `&[u8]` views of it
// between threads is as safe as sharing a `&[u8]`.
unsafe impl Send for Mapped {}
// SAFETY: see `Send`.
unsafe impl Sync for Mapped {}

impl Mapped {
    /// Maps the file at `path`; the error names the file and the reason.
    pub fn open(path: &Path) -> Result<Mapped, String> {
        use std::os::fd::AsRawFd;
        let file = std::fs::File::open(path)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        let len = file
            .metadata()
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?
            .len();
        let len = usize::try_from(len).map_err(|_| format!("{} is too large", path.display()))?;
        if len == 0 {
            return Ok(Mapped {
                ptr: std::ptr::null_mut(),
                len: 0,
            });
        }
        // SAFETY: a fresh private read-only mapping of an open file descriptor; the result
        // is checked against MAP_FAILED before use.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(format!(
                "cannot map {}: {}",
                path.display(),
                std::io::Error::last_os_error()
            ));
        }
        Ok(Mapped { ptr, len })
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: `ptr` is a live mapping of `len` readable bytes until `drop`.
        unsafe { std::slice::from_raw_parts(self.ptr.cast::<u8>(), self.len) }
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        if self.len != 0 {
            // SAFETY: unmapping the mapping made in `open`, once.
            unsafe { libc::munmap(self.ptr, self.len) };
        }
    }
}

/// True when ELF `file` carries DWARF debug info (a `.debug_info` section with contents).
pub fn has_dwarf(file: &object::File<'_>) -> bool {
    [".debug_info", ".zdebug_info"].iter().any(|name| {
        file.section_by_name(name)
            .is_some_and(|s| s.kind() != object::SectionKind::UninitializedData && s.size() > 0)
    })
}

/// The bytes of DWARF section `name` (`.debug_info`) of `file`, inflated when compressed;
/// empty when the file has no such section.
pub fn section_data<'d>(file: &object::File<'d>, name: &str) -> Result<Cow<'d, [u8]>, String> {
    let zname = name.replacen(".debug_", ".zdebug_", 1);
    let Some(section) = file
        .section_by_name(name)
        .or_else(|| file.section_by_name(&zname))
    else {
        return Ok(Cow::Borrowed(&[]));
    };
    if section.kind() == object::SectionKind::UninitializedData {
        return Ok(Cow::Borrowed(&[]));
    }
    let compressed = section
        .compressed_data()
        .map_err(|e| format!("section {name}: {e}"))?;
    match compressed.format {
        object::CompressionFormat::None => Ok(Cow::Borrowed(compressed.data)),
        object::CompressionFormat::Zlib => {
            if compressed.uncompressed_size > MAX_SECTION {
                return Err(format!(
                    "section {name} inflates to {} bytes, more than sonde reads ({MAX_SECTION})",
                    compressed.uncompressed_size
                ));
            }
            let limit = usize::try_from(compressed.uncompressed_size).unwrap_or(0);
            miniz_oxide::inflate::decompress_to_vec_zlib_with_limit(compressed.data, limit)
                .map(Cow::Owned)
                .map_err(|e| format!("section {name}: corrupt zlib data ({:?})", e.status))
        }
        other => Err(format!(
            "section {name} is compressed with {other:?}, which sonde cannot inflate"
        )),
    }
}

/// The CRC-32 (IEEE, as `.gnu_debuglink` records it) of `data`, continuing from `crc`.
pub fn crc32(crc: u32, data: &[u8]) -> u32 {
    let mut c = !crc;
    for &b in data {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0xEDB8_8320
            } else {
                c >> 1
            };
        }
    }
    !c
}

/// The CRC-32 of the file at `path`, read in blocks.
fn file_crc(path: &Path) -> Option<u32> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).ok()?;
    let mut buf = vec![0u8; 1 << 16];
    let mut crc = 0;
    loop {
        let n = f.read(&mut buf).ok()?;
        if n == 0 {
            return Some(crc);
        }
        crc = crc32(crc, &buf[..n]);
    }
}

/// The build-id path of a debug file: `DEBUG_DIR/.build-id/xx/yyyy.debug`.
pub fn build_id_path(debug_dir: &Path, id: &[u8]) -> Option<PathBuf> {
    let (first, rest) = id.split_first()?;
    if rest.is_empty() {
        return None;
    }
    let hex: String = rest.iter().map(|b| format!("{b:02x}")).collect();
    Some(
        debug_dir
            .join(".build-id")
            .join(format!("{first:02x}"))
            .join(format!("{hex}.debug")),
    )
}

/// Where a `.gnu_debuglink` named `link` of the binary at `binary` may be, in search order.
pub fn debuglink_candidates(debug_dir: &Path, binary: &Path, link: &str) -> Vec<PathBuf> {
    let dir = binary
        .parent()
        .map(|d| std::fs::canonicalize(d).unwrap_or_else(|_| d.to_path_buf()))
        .unwrap_or_default();
    let mut out = vec![dir.join(link), dir.join(".debug").join(link)];
    let relative = dir.strip_prefix("/").unwrap_or(&dir);
    out.push(debug_dir.join(relative).join(link));
    out
}

/// Where the DWARF of a binary is.
#[derive(Debug)]
pub enum Located {
    /// In the binary itself.
    Here,
    /// In this separate debug file.
    Separate(PathBuf),
    /// Nowhere: the places searched, for the diagnostic.
    Missing(Vec<String>),
}

/// Finds the file holding the DWARF of the binary at `path`, whose parsed ELF is `file`,
/// searching under `debug_dir` ([`DEBUG_DIR`] outside tests).
pub fn locate(path: &Path, file: &object::File<'_>, debug_dir: &Path) -> Located {
    if has_dwarf(file) {
        return Located::Here;
    }
    let mut searched = Vec::new();
    let usable = |candidate: &Path| -> bool {
        let Ok(map) = Mapped::open(candidate) else {
            return false;
        };
        object::File::parse(map.bytes()).is_ok_and(|f| has_dwarf(&f))
    };
    if let Ok(Some(id)) = file.build_id()
        && let Some(candidate) = build_id_path(debug_dir, id)
    {
        if usable(&candidate) {
            return Located::Separate(candidate);
        }
        searched.push(candidate.display().to_string());
    }
    if let Ok(Some((link, crc))) = file.gnu_debuglink()
        && let Ok(link) = std::str::from_utf8(link)
        && !link.contains('/')
    {
        for candidate in debuglink_candidates(debug_dir, path, link) {
            // The binary itself is not its own debug file (same name, no DWARF).
            let same = std::fs::canonicalize(&candidate).ok() == std::fs::canonicalize(path).ok();
            if !same
                && candidate.is_file()
                && file_crc(&candidate) == Some(crc)
                && usable(&candidate)
            {
                return Located::Separate(candidate);
            }
            searched.push(candidate.display().to_string());
        }
    }
    Located::Missing(searched)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_matches_the_ieee_check_value() {
        assert_eq!(crc32(0, b"123456789"), 0xCBF4_3926);
        // Continued over two blocks, it is the CRC of the whole.
        assert_eq!(crc32(crc32(0, b"1234"), b"56789"), 0xCBF4_3926);
        assert_eq!(crc32(0, b""), 0);
    }

    #[test]
    fn build_id_paths_split_the_first_byte() {
        let p = build_id_path(Path::new("/usr/lib/debug"), &[0xab, 0x01, 0xff]).unwrap();
        assert_eq!(p, Path::new("/usr/lib/debug/.build-id/ab/01ff.debug"));
        assert_eq!(build_id_path(Path::new("/d"), &[0xab]), None);
        assert_eq!(build_id_path(Path::new("/d"), &[]), None);
    }

    #[test]
    fn debuglink_is_searched_next_to_the_binary_then_globally() {
        let c = debuglink_candidates(
            Path::new("/usr/lib/debug"),
            Path::new("/no/such/bin"),
            "b.debug",
        );
        assert_eq!(
            c,
            [
                PathBuf::from("/no/such/b.debug"),
                PathBuf::from("/no/such/.debug/b.debug"),
                PathBuf::from("/usr/lib/debug/no/such/b.debug"),
            ]
        );
    }

    #[test]
    fn a_missing_or_empty_file_is_an_error_or_empty() {
        assert!(
            Mapped::open(Path::new("/no/such/file"))
                .unwrap_err()
                .contains("/no/such/file")
        );
        let dir = std::env::temp_dir().join(format!("sonde-mapped-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = dir.join("empty");
        std::fs::write(&empty, b"").unwrap();
        assert!(Mapped::open(&empty).unwrap().bytes().is_empty());
        std::fs::write(&empty, b"abc").unwrap();
        assert_eq!(Mapped::open(&empty).unwrap().bytes(), b"abc");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
