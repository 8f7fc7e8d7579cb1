//! The object-like `#define`s of installed system headers (Debian's `linux-libc-dev` and
//! `libc6-dev`), for scripts that `#include` them: `AF_INET` from `<sys/socket.h>` reaches
//! `bits/socket.h` through its `#include`s.
//!
//! Headers are scanned, not preprocessed: every `#define NAME value` line is taken (the first
//! definition of a name wins), whatever `#if` surrounds it, except where the `#if` depends
//! only on the target, read as x86-64 Linux (`header_conditions`: `<asm/unistd.h>` gives
//! x86-64's syscall numbers, not i386's), and `#include`s are followed in
//! the include directories (bounded in depth, files and bytes: a bound reached is an error
//! naming it). Function-like macros are skipped.
//!
//! Where a script's header is looked up follows the compiler (and bpftrace, which runs
//! clang): `"p.h"` beside the script, then in the working directory, then as `<p.h>`; `<p.h>`
//! in the `-I` directories, then the system's; an absolute path as it is. A header that is
//! not found is an error, except a kernel header (`<linux/...>`, `<net/...>`, ...): the
//! kernel's types come from BTF, and the constants tools take from kernel headers from
//! sonde's table, so a kernel header need not be installed.

use sonde_lang::kernel::HeaderError;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Where `<...>` headers are looked up, in the compiler's order.
const INCLUDE_DIRS: [&str; 3] = [
    "/usr/local/include",
    "/usr/include/x86_64-linux-gnu",
    "/usr/include",
];
/// Deepest `#include` chain followed.
const MAX_DEPTH: usize = 16;
/// Most header files read for one `#include`.
const MAX_FILES: usize = 256;
/// Most header bytes read for one `#include`.
const MAX_BYTES: usize = 8 << 20;

/// The top directories of the kernel's own headers: one of these that is not installed is
/// no error (BTF has the kernel's types; sonde's table its constants).
const KERNEL_DIRS: [&str; 8] = [
    "linux/",
    "net/",
    "asm/",
    "asm-generic/",
    "uapi/",
    "trace/",
    "scsi/",
    "sound/",
];

/// The `#define`s of the header of `#include INCLUDE` (`<sys/socket.h>`, `"p.h"`, as
/// written) and of the headers it includes, `(name, value)`. `<...>` headers are looked up
/// in `extra_dirs` first (`-I DIR`), then in the system's; `"..."` ones first in
/// `script_dir` (the script's directory), then in the working directory. An error says
/// which header was not found, or which bound the headers reached.
pub fn header_defines(
    include: &str,
    extra_dirs: &[PathBuf],
    script_dir: Option<&Path>,
) -> Result<Vec<(String, String)>, HeaderError> {
    let mut scan = Scan {
        extra_dirs,
        ..Scan::default()
    };
    let (name, quoted) = match include.strip_prefix('"') {
        Some(n) => (n.trim_end_matches('"'), true),
        None => (include.trim_matches(['<', '>']), false),
    };
    let path = if name.starts_with('/') {
        Path::new(name).is_file().then(|| PathBuf::from(name))
    } else if quoted {
        // The script's own header: beside it, in the working directory (`..` allowed, as
        // the script's author wrote it), then where `<...>` headers are.
        script_dir
            .into_iter()
            .chain([Path::new("")])
            .map(|d| d.join(name))
            .find(|p| p.is_file())
            .or_else(|| scan.find(name, None))
    } else {
        scan.find(name, None)
    };
    let Some(path) = path else {
        if KERNEL_DIRS.iter().any(|d| name.starts_with(d)) {
            return Ok(Vec::new());
        }
        let looked = if name.starts_with('/') {
            String::new()
        } else {
            let mut dirs: Vec<String> = Vec::new();
            if quoted {
                if let Some(d) = script_dir {
                    dirs.push(format!("{} (the script's directory)", d.display()));
                }
                dirs.push("the working directory".into());
            }
            dirs.extend(extra_dirs.iter().map(|d| d.display().to_string()));
            dirs.extend(INCLUDE_DIRS.iter().map(|d| d.to_string()));
            format!(" (looked in {})", dirs.join(", "))
        };
        return Err(HeaderError::NotFound(format!(
            "header file `{name}` not found{looked}"
        )));
    };
    scan.file(&path, 0);
    match scan.cut {
        Some(why) => Err(HeaderError::Unread(why)),
        None => Ok(scan.out),
    }
}

#[derive(Default)]
struct Scan<'a> {
    extra_dirs: &'a [PathBuf],
    out: Vec<(String, String)>,
    names: HashSet<String>,
    seen: HashSet<PathBuf>,
    bytes: usize,
    /// The bound the scan reached, said as an error.
    cut: Option<String>,
}

impl Scan<'_> {
    fn file(&mut self, path: &Path, depth: usize) {
        if self.cut.is_some() || self.seen.contains(path) {
            return;
        }
        let shown = path.display();
        if depth > MAX_DEPTH {
            self.cut = Some(format!(
                "headers include each other more than {MAX_DEPTH} levels deep (at {shown}); \
                 sonde reads no deeper"
            ));
            return;
        }
        if self.seen.len() >= MAX_FILES {
            self.cut = Some(format!(
                "the header includes more than {MAX_FILES} files (the next one is {shown}); \
                 sonde reads no more"
            ));
            return;
        }
        self.seen.insert(path.into());
        let left = (MAX_BYTES - self.bytes) as u64;
        let bytes = match crate::user_files::read(path, left, crate::user_files::Pipes::Refuse) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                self.cut = Some(format!(
                    "the headers pass the {} sonde reads for one #include (at {shown})",
                    crate::user_files::size_text(MAX_BYTES as u64)
                ));
                return;
            }
            Err(e) => {
                self.cut = Some(format!("cannot read header {shown}: {e}"));
                return;
            }
        };
        self.bytes += bytes.len();
        let text = String::from_utf8_lossy(&bytes);
        let text = text.replace("\\\n", " ");
        let mut conditions = super::header_conditions::Conditions::default();
        for line in text.lines() {
            let Some(body) = line.trim_start().strip_prefix('#') else {
                continue;
            };
            let body = body.trim_start();
            if conditions.directive(body) || !conditions.reading() {
                continue;
            }
            if let Some(def) = body.strip_prefix("define") {
                self.define(def);
            } else if let Some(inc) = body.strip_prefix("include") {
                let inc = inc.trim();
                let (name, local) = if let Some(n) = inc.strip_prefix('<') {
                    (n.split('>').next().unwrap_or(""), None)
                } else if let Some(n) = inc.strip_prefix('"') {
                    (n.split('"').next().unwrap_or(""), path.parent())
                } else {
                    continue;
                };
                if let Some(next) = self.find(name, local) {
                    self.file(&next, depth + 1);
                }
            }
        }
    }

    fn define(&mut self, def: &str) {
        if !def.starts_with([' ', '\t']) {
            return;
        }
        let def = def.trim_start();
        let end = def
            .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .unwrap_or(def.len());
        let (name, value) = def.split_at(end);
        if name.is_empty() || value.starts_with('(') || self.names.contains(name) {
            return;
        }
        let value = match value.find("/*").into_iter().chain(value.find("//")).min() {
            Some(cut) => &value[..cut],
            None => value,
        };
        self.names.insert(name.to_string());
        self.out.push((name.to_string(), value.trim().to_string()));
    }

    /// The path of header `name`: next to the including file for `"..."`, else in the
    /// `-I` directories, then the system's. Names that climb out (`..`) or are absolute are
    /// not looked up.
    fn find(&self, name: &str, local: Option<&Path>) -> Option<PathBuf> {
        if name.is_empty() || name.starts_with('/') || name.split('/').any(|p| p == "..") {
            return None;
        }
        local
            .into_iter()
            .chain(self.extra_dirs.iter().map(PathBuf::as_path))
            .chain(INCLUDE_DIRS.iter().map(Path::new))
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_are_scanned_through_includes() {
        let dir = std::env::temp_dir().join(format!("sonde-headers-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(
            dir.join("top.h"),
            "#include \"sub/inner.h\"\n#define A B /* alias */\n#define F(x) x\n#define LONG 1 + \\\n 2\n#include \"top.h\"\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("sub/inner.h"),
            "#  define B 2\n#define A 99\n#defineX 1\n",
        )
        .unwrap();
        let mut scan = Scan::default();
        scan.file(&dir.join("top.h"), 0);
        // -I DIR: `<sub/inner.h>` is found there.
        let extra = [dir.clone()];
        assert_eq!(
            header_defines("<sub/inner.h>", &extra, None).unwrap()[0].0,
            "B"
        );
        assert_eq!(
            scan.out,
            [
                ("B".to_string(), "2".to_string()),
                ("A".to_string(), "99".to_string()),
                ("LONG".to_string(), "1 +   2".to_string()),
            ]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn system_socket_header_gives_af_inet_when_installed() {
        if Scan::default().find("sys/socket.h", None).is_none() {
            eprintln!("skipped: <sys/socket.h> is not installed");
            return;
        }
        let defs = header_defines("<sys/socket.h>", &[], None).unwrap();
        let get = |n: &str| defs.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
        assert_eq!(get("AF_INET").as_deref(), Some("PF_INET"));
        assert_eq!(get("PF_INET").as_deref(), Some("2"));
        assert!(matches!(
            header_defines("<../etc/passwd>", &[], None),
            Err(HeaderError::NotFound(_))
        ));
        let e = header_defines("<no/such/header.h>", &[], None).unwrap_err();
        assert_eq!(
            e,
            HeaderError::NotFound(
                "header file `no/such/header.h` not found (looked in /usr/local/include, \
                 /usr/include/x86_64-linux-gnu, /usr/include)"
                    .into()
            )
        );
        // A kernel header that is not installed: BTF has its types.
        assert_eq!(
            header_defines("<linux/no-such.h>", &[], None),
            Ok(Vec::new())
        );
    }

    #[test]
    fn syscall_numbers_are_x86_64s_when_installed() {
        for header in ["<asm/unistd.h>", "<sys/syscall.h>", "<syscall.h>"] {
            let Ok(defs) = header_defines(header, &[], None) else {
                eprintln!("skipped: {header} is not installed");
                continue;
            };
            let get = |n: &str| defs.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
            assert_eq!(get("__NR_read").as_deref(), Some("0"), "{header}");
            assert_eq!(get("__NR_openat").as_deref(), Some("257"), "{header}");
        }
    }

    #[test]
    fn quoted_headers_are_found_beside_the_script_and_by_absolute_path() {
        let dir = std::env::temp_dir().join(format!("sonde-quoted-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("p.h"), "#define P 7\n").unwrap();
        let want = Ok(vec![("P".to_string(), "7".to_string())]);
        assert_eq!(header_defines("\"p.h\"", &[], Some(&dir)), want);
        let abs = format!("\"{}\"", dir.join("p.h").display());
        assert_eq!(header_defines(&abs, &[], None), want);
        let abs = format!("<{}>", dir.join("p.h").display());
        assert_eq!(header_defines(&abs, &[], None), want);
        let e = header_defines("\"missing.h\"", &[], Some(&dir)).unwrap_err();
        let HeaderError::NotFound(text) = e else {
            panic!("{e:?}")
        };
        assert!(
            text.starts_with(&format!(
                "header file `missing.h` not found (looked in {} (the script's directory), \
                 the working directory, ",
                dir.display()
            )),
            "{text}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_byte_budget_is_an_error_naming_it() {
        let dir = std::env::temp_dir().join(format!("sonde-budget-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut big = "#define FIRST 1\n".to_string();
        big.push_str(&"// filler\n".repeat((MAX_BYTES / 10) + 10));
        big.push_str("#define LAST 2\n");
        std::fs::write(dir.join("big.h"), &big).unwrap();
        let e = header_defines("\"big.h\"", &[], Some(&dir)).unwrap_err();
        assert_eq!(
            e,
            HeaderError::Unread(format!(
                "the headers pass the 8 MiB sonde reads for one #include (at {})",
                dir.join("big.h").display()
            ))
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
