//! Mapping the files that hold a binary's DWARF (the binary itself, a separate debug file
//! that `debug_search` finds, a supplementary or split DWARF file) and reading their sections.
//!
//! Files are mapped, not read: a debug file can be hundreds of megabytes, of which one unit
//! is parsed. Compressed sections (`SHF_COMPRESSED` or `.zdebug_*`, zlib) are inflated one
//! section at a time, within [`MAX_SECTION`] bytes.

use object::{Object, ObjectSection};
use std::borrow::Cow;
use std::path::Path;

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
        // Only a regular file (a FIFO would block the open; a device is no ELF file).
        let file = crate::user_files::open(path, crate::user_files::Pipes::Refuse)
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
