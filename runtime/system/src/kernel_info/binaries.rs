//! Resolving uprobe targets (`/bin/bash`, `./prog`, `bash`, `libc`, `libc.so.6`) to files,
//! the way the dynamic linker and the shell would.
//!
//! Library names are looked up in `/etc/ld.so.cache` (the "glibc-ld.so.cache1.1" format,
//! alone or after the old "ld.so-1.7.0" table), then in the usual library directories.
//! Program names are searched in `$PATH`.

use std::path::Path;

/// Directories searched for libraries missing from the cache.
pub const LIBRARY_DIRS: [&str; 5] = [
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/lib64",
    "/usr/lib64",
    "/usr/lib",
];

const OLD_MAGIC: &[u8] = b"ld.so-1.7.0";
const NEW_MAGIC: &[u8] = b"glibc-ld.so.cache1.1";
/// `FLAG_ELF_LIBC6 | FLAG_X8664_LIB64`: a 64-bit x86 library.
const FLAG_X86_64_LIBC6: i32 = 0x0303;

/// One `(soname, path, flags)` entry of the linker cache.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheEntry {
    /// The library's file name (`libc.so.6`).
    pub name: String,
    /// Its path (`/lib/x86_64-linux-gnu/libc.so.6`).
    pub path: String,
    /// The cache flags (architecture and ABI).
    pub flags: i32,
}

fn u32_at(data: &[u8], at: usize) -> Option<u32> {
    data.get(at..at + 4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

fn c_str(data: &[u8], at: usize) -> Option<String> {
    let s = data.get(at..)?;
    let end = s.iter().position(|&b| b == 0)?;
    std::str::from_utf8(&s[..end]).ok().map(str::to_string)
}

/// Parses the contents of `/etc/ld.so.cache` (entries of the new format; an empty list when
/// the data is in no known format).
pub fn parse_ld_cache(data: &[u8]) -> Vec<CacheEntry> {
    let mut start = 0usize;
    if data.starts_with(OLD_MAGIC) {
        // Old header: magic (11 bytes, padded to 12), nlibs, then 12-byte entries.
        let Some(n) = u32_at(data, 12) else {
            return Vec::new();
        };
        start = (16 + n as usize * 12).next_multiple_of(8);
    }
    let Some(new) = data.get(start..) else {
        return Vec::new();
    };
    if !new.starts_with(NEW_MAGIC) {
        return Vec::new();
    }
    // New header: magic (20), nlibs, len_strings, flags + padding, extension offset,
    // 3 unused words = 48 bytes; entries are 24 bytes: flags, key, value, osversion, hwcap.
    let nlibs = u32_at(new, 20).unwrap_or(0) as usize;
    let mut out = Vec::with_capacity(nlibs.min(1 << 16));
    for i in 0..nlibs {
        let at = 48 + i * 24;
        let (Some(flags), Some(key), Some(value)) =
            (u32_at(new, at), u32_at(new, at + 4), u32_at(new, at + 8))
        else {
            break;
        };
        // String offsets are relative to the start of the new-format header.
        if let (Some(name), Some(path)) = (c_str(new, key as usize), c_str(new, value as usize)) {
            out.push(CacheEntry {
                name,
                path,
                flags: flags as i32,
            });
        }
    }
    out
}

/// True when `target` names a library rather than a program (`libc`, `libssl.so.3`).
fn looks_like_library(target: &str) -> bool {
    target.starts_with("lib") || target.contains(".so")
}

/// Whether a cache entry or file name `name` is the library `target` (`libc` matches
/// `libc.so.6`; `libc.so.6` matches only itself).
pub(crate) fn library_matches(name: &str, target: &str) -> bool {
    name == target || (!target.contains(".so") && name.starts_with(&format!("{target}.so")))
}

/// Finds library `target` in the linker cache entries, preferring x86-64 entries.
pub fn find_in_cache(entries: &[CacheEntry], target: &str) -> Option<String> {
    let all: Vec<&CacheEntry> = entries
        .iter()
        .filter(|e| library_matches(&e.name, target))
        .collect();
    all.iter()
        .find(|e| e.flags & FLAG_X86_64_LIBC6 == FLAG_X86_64_LIBC6 && Path::new(&e.path).exists())
        .or_else(|| all.iter().find(|e| Path::new(&e.path).exists()))
        .map(|e| e.path.clone())
}

fn find_in_dirs(target: &str) -> Option<String> {
    for dir in LIBRARY_DIRS {
        let Ok(rd) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut names: Vec<String> = rd
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| library_matches(n, target))
            .collect();
        // Prefer the shortest (least versioned) name, as a soname link usually is.
        names.sort_by_key(|n| (n.len(), n.clone()));
        if let Some(n) = names.first() {
            return Some(format!("{dir}/{n}"));
        }
    }
    None
}

fn find_in_path(target: &str) -> Option<String> {
    let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into());
    path.split(':')
        .filter(|d| !d.is_empty())
        .map(|d| format!("{d}/{target}"))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file()))
}

fn find_library(target: &str) -> Option<String> {
    let cache = std::fs::read("/etc/ld.so.cache")
        .map(|d| parse_ld_cache(&d))
        .unwrap_or_default();
    find_in_cache(&cache, target).or_else(|| find_in_dirs(target))
}

/// Resolves a uprobe target to a file path: paths (containing `/`) are returned as written
/// when they exist; library names through the linker cache and library directories;
/// other names through `$PATH` (then as a library).
pub fn resolve_binary(target: &str) -> Option<String> {
    if target.is_empty() {
        return None;
    }
    if target.contains('/') {
        return Path::new(target).exists().then(|| target.to_string());
    }
    if looks_like_library(target) {
        find_library(target).or_else(|| find_in_path(target))
    } else {
        find_in_path(target).or_else(|| find_library(target))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put32(v: &mut Vec<u8>, x: u32) {
        v.extend_from_slice(&x.to_le_bytes());
    }

    /// Builds a new-format cache with the given `(flags, name, path)` entries.
    fn fake_cache(entries: &[(i32, &str, &str)]) -> Vec<u8> {
        let mut strings = Vec::new();
        let strings_at = 48 + entries.len() * 24;
        let mut v = NEW_MAGIC.to_vec();
        put32(&mut v, entries.len() as u32);
        put32(&mut v, 0);
        v.extend_from_slice(&[0; 20]);
        for (flags, name, path) in entries {
            let key = strings_at + strings.len();
            strings.extend_from_slice(name.as_bytes());
            strings.push(0);
            let value = strings_at + strings.len();
            strings.extend_from_slice(path.as_bytes());
            strings.push(0);
            put32(&mut v, *flags as u32);
            put32(&mut v, key as u32);
            put32(&mut v, value as u32);
            put32(&mut v, 0);
            v.extend_from_slice(&[0; 8]);
        }
        v.extend_from_slice(&strings);
        v
    }

    #[test]
    fn parses_new_format_entries() {
        let data = fake_cache(&[
            (0x0303, "libz.so.1", "/x/libz.so.1"),
            (3, "libc.so.6", "/y/c"),
        ]);
        let entries = parse_ld_cache(&data);
        assert_eq!(
            entries,
            vec![
                CacheEntry {
                    name: "libz.so.1".into(),
                    path: "/x/libz.so.1".into(),
                    flags: 0x0303
                },
                CacheEntry {
                    name: "libc.so.6".into(),
                    path: "/y/c".into(),
                    flags: 3
                },
            ]
        );
        assert!(parse_ld_cache(b"garbage").is_empty());
    }

    #[test]
    fn library_names_match_like_the_linker() {
        assert!(library_matches("libc.so.6", "libc"));
        assert!(library_matches("libc.so.6", "libc.so.6"));
        assert!(!library_matches("libcap.so.2", "libc"));
        assert!(!library_matches("libc.so.6", "libc.so.7"));
    }

    #[test]
    fn resolves_system_libc_and_programs() {
        let libc = resolve_binary("libc").expect("libc resolves");
        assert!(libc.ends_with("/libc.so.6"), "{libc}");
        assert_eq!(resolve_binary("libc.so.6"), Some(libc));
        let real = parse_ld_cache(&std::fs::read("/etc/ld.so.cache").unwrap());
        assert!(real.iter().any(|e| e.name == "libc.so.6"));
        let bash = resolve_binary("bash").expect("bash in PATH");
        assert!(bash.ends_with("/bash"), "{bash}");
        assert_eq!(resolve_binary("/bin/bash").as_deref(), Some("/bin/bash"));
        assert_eq!(resolve_binary("/no/such/bin"), None);
        assert_eq!(resolve_binary("no_such_program_xyz"), None);
    }
}
