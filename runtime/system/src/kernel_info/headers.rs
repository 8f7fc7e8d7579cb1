//! The object-like `#define`s of installed system headers (Debian's `linux-libc-dev` and
//! `libc6-dev`), for scripts that `#include` them: `AF_INET` from `<sys/socket.h>` reaches
//! `bits/socket.h` through its `#include`s.
//!
//! Headers are scanned, not preprocessed: every `#define NAME value` line is taken (the first
//! definition of a name wins), whatever `#if` surrounds it, and `#include`s are followed in
//! the include directories (bounded in depth, files and bytes). Function-like macros are
//! skipped.

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

/// The `#define`s of `header` (`sys/socket.h`) and the headers it includes, `(name, value)`;
/// `<...>` headers are looked up in `extra_dirs` first (`-I DIR`), then in the system's.
pub fn header_defines(header: &str, extra_dirs: &[PathBuf]) -> Vec<(String, String)> {
    let mut scan = Scan {
        extra_dirs,
        ..Scan::default()
    };
    if let Some(path) = scan.find(header, None) {
        scan.file(&path, 0);
    }
    scan.out
}

#[derive(Default)]
struct Scan<'a> {
    extra_dirs: &'a [PathBuf],
    out: Vec<(String, String)>,
    names: HashSet<String>,
    seen: HashSet<PathBuf>,
    bytes: usize,
}

impl Scan<'_> {
    fn file(&mut self, path: &Path, depth: usize) {
        if depth > MAX_DEPTH || self.seen.len() >= MAX_FILES || !self.seen.insert(path.into()) {
            return;
        }
        let Ok(text) = std::fs::read_to_string(path) else {
            return;
        };
        self.bytes += text.len();
        if self.bytes > MAX_BYTES {
            return;
        }
        let text = text.replace("\\\n", " ");
        for line in text.lines() {
            let Some(body) = line.trim_start().strip_prefix('#') else {
                continue;
            };
            let body = body.trim_start();
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
        assert_eq!(header_defines("sub/inner.h", &extra)[0].0, "B");
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
        let defs = header_defines("sys/socket.h", &[]);
        let get = |n: &str| defs.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
        assert_eq!(get("AF_INET").as_deref(), Some("PF_INET"));
        assert_eq!(get("PF_INET").as_deref(), Some("2"));
        assert!(header_defines("../etc/passwd", &[]).is_empty());
        assert!(header_defines("no/such/header.h", &[]).is_empty());
    }
}
