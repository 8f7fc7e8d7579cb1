//! The allocators a replay runs against: `glibc` (no preload), Debian's jemalloc and
//! tcmalloc found where their packages install them, or any shared library by path (loaded
//! with `LD_PRELOAD`).

use std::path::{Path, PathBuf};

/// One allocator to replay against.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Allocator {
    /// The name reports show: `glibc`, `jemalloc`, `tcmalloc`, or a library's file name.
    pub name: String,
    /// The library preloaded; `None` for glibc's own allocator.
    pub preload: Option<PathBuf>,
}

/// The allocators known by name: (name, library file, Debian package).
const KNOWN: [(&str, &str, &str); 2] = [
    ("jemalloc", "libjemalloc.so.2", "libjemalloc2"),
    (
        "tcmalloc",
        "libtcmalloc_minimal.so.4",
        "libtcmalloc-minimal4",
    ),
];

/// Where libraries are looked for, in order.
const DIRS: [&str; 5] = [
    "/usr/lib/x86_64-linux-gnu",
    "/lib/x86_64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/lib",
];

/// Whether `path` is a regular file that starts as an ELF file does.
fn is_elf(path: &Path) -> Result<(), String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if !meta.is_file() {
        return Err(format!("{} is not a file", path.display()));
    }
    let mut magic = [0u8; 4];
    let read = std::fs::File::open(path).and_then(|mut f| {
        use std::io::Read;
        f.read_exact(&mut magic)
    });
    match read {
        Ok(()) if &magic == b"\x7fELF" => Ok(()),
        Ok(()) => Err(format!(
            "{} is not a shared library (no ELF header at offset 0)",
            path.display()
        )),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// One allocator of `--allocator`'s list.
pub fn find(spec: &str) -> Result<Allocator, String> {
    find_in(spec, &DIRS)
}

/// [`find`], looking for the known libraries in `dirs`.
fn find_in(spec: &str, dirs: &[&str]) -> Result<Allocator, String> {
    if spec == "glibc" {
        return Ok(Allocator {
            name: "glibc".into(),
            preload: None,
        });
    }
    if let Some((name, file, package)) = KNOWN.iter().find(|k| k.0 == spec) {
        return dirs
            .iter()
            .map(|d| Path::new(d).join(file))
            .find(|p| p.is_file())
            .map(|p| Allocator {
                name: name.to_string(),
                preload: Some(p),
            })
            .ok_or(format!(
                "allocator {name}: {file} is not installed (looked in {}): install Debian's \
                 package {package} (apt-get install {package}), or give the library's path",
                dirs.join(", ")
            ));
    }
    if spec.contains('/') || spec.ends_with(".so") || spec.contains(".so.") {
        let path = Path::new(spec);
        is_elf(path).map_err(|e| format!("allocator {spec}: {e}"))?;
        let name = path
            .file_name()
            .map_or(spec.to_string(), |n| n.to_string_lossy().into_owned());
        return Ok(Allocator {
            name,
            preload: Some(path.to_path_buf()),
        });
    }
    Err(format!(
        "unknown allocator `{spec}`: glibc, jemalloc, tcmalloc, or the path of a shared library"
    ))
}

/// The allocators of a comma-separated list, each once.
pub fn parse_list(list: &str) -> Result<Vec<Allocator>, String> {
    let mut out: Vec<Allocator> = Vec::new();
    for spec in list.split(',').map(str::trim) {
        if spec.is_empty() {
            return Err(format!("--allocator `{list}`: an empty name in the list"));
        }
        let a = find(spec)?;
        if out.iter().any(|o| o.name == a.name) {
            return Err(format!("--allocator `{list}`: {} is named twice", a.name));
        }
        out.push(a);
    }
    if out.len() > 5 {
        return Err(format!(
            "--allocator `{list}`: at most 5 allocators (the chart has 6 colours)"
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocators_are_found_or_refused_by_name() {
        assert_eq!(find("glibc").unwrap().preload, None);
        let err = find("hoard").unwrap_err();
        assert!(err.starts_with("unknown allocator `hoard`"), "{err}");
        let err = find("/nonexistent/libx.so").unwrap_err();
        assert!(err.contains("/nonexistent/libx.so"), "{err}");
        let err = find("/etc/hostname.so").unwrap_err();
        assert!(err.contains("/etc/hostname.so"), "{err}");
        assert!(
            parse_list("glibc,glibc")
                .unwrap_err()
                .contains("named twice")
        );
        assert!(parse_list("glibc,").unwrap_err().contains("empty name"));
        // A library that is not installed names its Debian package.
        let err = find_in("tcmalloc", &["/nonexistent"]).unwrap_err();
        assert_eq!(
            err,
            "allocator tcmalloc: libtcmalloc_minimal.so.4 is not installed (looked in \
             /nonexistent): install Debian's package libtcmalloc-minimal4 (apt-get install \
             libtcmalloc-minimal4), or give the library's path"
        );
        let dir = std::env::temp_dir();
        let dirs = [dir.to_str().unwrap()];
        let lib = dir.join("libjemalloc.so.2");
        if !lib.exists() {
            assert!(
                find_in("jemalloc", &dirs)
                    .unwrap_err()
                    .contains("libjemalloc2")
            );
        }
    }
}
