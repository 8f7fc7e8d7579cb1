//! The search path for separate debug files, with the rules of elfutils' libdwfl, which
//! bpftrace 0.26 uses: `--debuginfo DIR[:DIR]` puts directories before the default
//! `:.debug:/usr/lib/debug`.
//!
//! - By build id first: `DIR/.build-id/xx/yyyy.debug` under each absolute directory of the
//!   path, then in the debuginfod client's cache (files a `debuginfod-find` already fetched:
//!   sonde downloads nothing).
//! - Then by name: the `.gnu_debuglink` file name, or `BINARY.debug` when there is none. An
//!   empty entry is the binary's directory; a relative one (`.debug`) a subdirectory of it;
//!   an absolute one is searched for the binary's directory under it (`/usr/lib/debug/usr/bin`,
//!   then with one leading component less at a time), then the file directly in it.
//! - A candidate is taken when it has DWARF and, when the binary has a build id, the same build
//!   id; without one, when its CRC-32 is the debuglink's (an entry prefixed `-` skips that
//!   check, `+` asks for it).
//! - Supplementary files (`.gnu_debugaltlink`, dwz) are found by their build id, then by
//!   the name the link records (relative to the debug file), then by that file name in each
//!   directory of the path and its `.dwz` subdirectory; their build id must match.

use super::debug_file::{Mapped, crc32, has_dwarf};
use object::Object;
use std::path::{Path, PathBuf};

/// libdwfl's default path: the binary's directory, its `.debug`, and `/usr/lib/debug`.
pub const DEFAULT_PATH: &str = ":.debug:/usr/lib/debug";

/// One directory of the search path.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Entry {
    /// As written, without its `+`/`-` prefix.
    dir: String,
    /// Whether a file found by debuglink name must have the debuglink's CRC.
    check_crc: bool,
}

/// Where separate debug files are searched.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DebugPath {
    entries: Vec<Entry>,
}

impl Default for DebugPath {
    fn default() -> Self {
        DebugPath::parse(DEFAULT_PATH)
    }
}

impl DebugPath {
    /// A `:`-separated path as libdwfl reads it (a leading `+`/`-` sets the CRC check of
    /// every entry; one on an entry sets its own).
    pub fn parse(text: &str) -> DebugPath {
        let (default_check, text) = match text.as_bytes().first() {
            Some(b'+') => (true, &text[1..]),
            Some(b'-') => (false, &text[1..]),
            _ => (true, text),
        };
        let entries = text
            .split(':')
            .map(|e| match e.as_bytes().first() {
                Some(b'+') => Entry {
                    dir: e[1..].to_string(),
                    check_crc: true,
                },
                Some(b'-') => Entry {
                    dir: e[1..].to_string(),
                    check_crc: false,
                },
                _ => Entry {
                    dir: e.to_string(),
                    check_crc: default_check,
                },
            })
            .collect();
        DebugPath { entries }
    }

    /// The path of `--debuginfo DIR[:DIR]` options: each option's directories, then the
    /// default ones, as bpftrace builds it.
    pub fn with_dirs(options: &[String]) -> DebugPath {
        let mut text: String = options.iter().map(|o| format!("{o}:")).collect();
        text.push_str(DEFAULT_PATH);
        DebugPath::parse(&text)
    }

    /// The default path with `global` in place of `/usr/lib/debug` (tests).
    pub fn rooted(global: &Path) -> DebugPath {
        DebugPath::parse(&format!(":.debug:{}", global.display()))
    }

    /// The absolute directories of the path, in order, without duplicates.
    fn absolute(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for e in &self.entries {
            if e.dir.starts_with('/') && !out.contains(&e.dir.as_str()) {
                out.push(&e.dir);
            }
        }
        out
    }
}

/// The build-id path of a debug file: `DIR/.build-id/xx/yyyy.debug`.
pub fn build_id_path(debug_dir: &Path, id: &[u8]) -> Option<PathBuf> {
    let (first, rest) = id.split_first()?;
    if rest.is_empty() {
        return None;
    }
    Some(
        debug_dir
            .join(".build-id")
            .join(format!("{first:02x}"))
            .join(format!("{}.debug", hex(rest))),
    )
}

/// `bytes` in lower-case hex.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The debuginfod client's cache entry for build id `id` (`$DEBUGINFOD_CACHE_PATH`, else
/// `$XDG_CACHE_HOME/debuginfod_client`, else `~/.cache/debuginfod_client`).
fn debuginfod_cached(id: &[u8]) -> Option<PathBuf> {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let root = env("DEBUGINFOD_CACHE_PATH")
        .or_else(|| env("XDG_CACHE_HOME").map(|d| d.join("debuginfod_client")))
        .or_else(|| env("HOME").map(|h| h.join(".cache/debuginfod_client")))?;
    Some(root.join(hex(id)).join("debuginfo"))
}

/// What a debug file must match to be taken.
#[derive(Clone, Copy)]
enum Want<'a> {
    /// This build id.
    BuildId(&'a [u8]),
    /// This CRC-32 of the whole file (a debuglink's).
    Crc(u32),
    /// Nothing beyond having DWARF.
    Any,
}

/// True when the file at `path` has DWARF and matches `want`.
fn matches(path: &Path, want: Want<'_>) -> bool {
    let Ok(map) = Mapped::open(path) else {
        return false;
    };
    let Ok(file) = object::File::parse(map.bytes()) else {
        return false;
    };
    has_dwarf(&file)
        && match want {
            Want::BuildId(id) => file.build_id().ok().flatten() == Some(id),
            Want::Crc(crc) => crc32(0, map.bytes()) == crc,
            Want::Any => true,
        }
}

/// Where a file named `link` may be for the binary in directory `dir` (absolute, or `None`
/// for a relative binary name) under path entry `entry`, in libdwfl's order.
fn candidates(entry: &str, dir: Option<&Path>, link: &str, try_base: Option<&str>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut push = |base: PathBuf| {
        out.push(base.join(link));
        if let Some(b) = try_base {
            out.push(base.join(b));
        }
    };
    if entry.is_empty() {
        out.push(dir.map_or_else(|| PathBuf::from(link), |d| d.join(link)));
    } else if entry.starts_with('/') {
        // The binary's directory under it, one leading component less at a time, then
        // the directory itself.
        let Some(dir) = dir.filter(|d| d.is_absolute()) else {
            return out;
        };
        let parts: Vec<_> = dir.components().skip(1).collect();
        for i in 0..parts.len() {
            let sub: PathBuf = parts[i..].iter().collect();
            push(Path::new(entry).join(sub));
        }
        push(PathBuf::from(entry));
    } else {
        push(dir.map_or_else(|| PathBuf::from(entry), |d| d.join(entry)));
    }
    out
}

/// Finds the separate debug file of the binary at `path` (parsed as `file`, which has no
/// DWARF of its own): `Ok(file)` or `Err(places searched)`.
pub fn find_debug_file(
    path: &Path,
    file: &object::File<'_>,
    search: &DebugPath,
) -> Result<PathBuf, Vec<String>> {
    let mut searched = Vec::new();
    let build_id = file.build_id().ok().flatten().filter(|id| id.len() > 1);
    if let Some(id) = build_id {
        for dir in search.absolute() {
            if let Some(c) = build_id_path(Path::new(dir), id) {
                if matches(&c, Want::BuildId(id)) {
                    return Ok(c);
                }
                searched.push(c.display().to_string());
            }
        }
    }
    let debuglink = file
        .gnu_debuglink()
        .ok()
        .flatten()
        .and_then(|(l, crc)| Some((std::str::from_utf8(l).ok()?.to_string(), crc)))
        .filter(|(l, _)| !l.contains('/'));
    let base = path.file_name().map(|b| b.to_string_lossy().into_owned());
    let (link, crc, invented) = match (debuglink, &base) {
        (Some((l, crc)), _) => (l, crc, false),
        (None, Some(b)) => (format!("{b}.debug"), 0, true),
        (None, None) => return Err(searched),
    };
    let main = std::fs::canonicalize(path).ok();
    let mut names = vec![path.to_path_buf()];
    if let Some(canon) = &main
        && canon != path
    {
        names.push(canon.clone());
    }
    for name in names {
        let dir = name.parent().map(Path::to_path_buf);
        let dir = dir.as_deref().filter(|d| !d.as_os_str().is_empty());
        for entry in &search.entries {
            let try_base = (invented && !entry.dir.is_empty())
                .then_some(base.as_deref())
                .flatten();
            for c in candidates(&entry.dir, dir, &link, try_base) {
                let want = match build_id {
                    Some(id) => Want::BuildId(id),
                    None if entry.check_crc && crc != 0 => Want::Crc(crc),
                    None => Want::Any,
                };
                // The binary itself, by another name, is not its own debug file.
                let same = main.is_some() && std::fs::canonicalize(&c).ok() == main;
                if !same && c.is_file() && matches(&c, want) {
                    return Ok(c);
                }
                let shown = c.display().to_string();
                if !same && !searched.contains(&shown) {
                    searched.push(shown);
                }
            }
        }
    }
    if let Some(c) = build_id.and_then(debuginfod_cached) {
        if matches(&c, Want::BuildId(build_id.unwrap_or_default())) {
            return Ok(c);
        }
        searched.push(c.display().to_string());
    }
    Err(searched)
}

/// Finds the supplementary DWARF file (`.gnu_debugaltlink`: `name`, build id `id`) of the
/// debug file at `debug`: `Ok(file)` or `Err(places searched)`.
pub fn find_alt_file(
    debug: &Path,
    name: &str,
    id: &[u8],
    search: &DebugPath,
) -> Result<PathBuf, Vec<String>> {
    let mut places = Vec::new();
    for dir in search.absolute() {
        places.extend(build_id_path(Path::new(dir), id));
    }
    let dir = debug.parent().unwrap_or(Path::new(""));
    places.push(dir.join(name));
    let base = Path::new(name).file_name().unwrap_or_default();
    for e in &search.entries {
        let root = if e.dir.is_empty() {
            dir.to_path_buf()
        } else if e.dir.starts_with('/') {
            PathBuf::from(&e.dir)
        } else {
            continue;
        };
        places.push(root.join(base));
        places.push(root.join(".dwz").join(base));
    }
    places.extend(debuginfod_cached(id));
    let mut searched: Vec<String> = Vec::new();
    for p in places {
        if matches(&p, Want::BuildId(id)) {
            return Ok(p);
        }
        let shown = p.display().to_string();
        if !searched.contains(&shown) {
            searched.push(shown);
        }
    }
    Err(searched)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_parse_as_libdwfl_reads_them() {
        let p = DebugPath::with_dirs(&["/a:rel".into(), "-/b".into()]);
        let dirs: Vec<(&str, bool)> = p
            .entries
            .iter()
            .map(|e| (e.dir.as_str(), e.check_crc))
            .collect();
        assert_eq!(
            dirs,
            [
                ("/a", true),
                ("rel", true),
                ("/b", false),
                ("", true),
                (".debug", true),
                ("/usr/lib/debug", true),
            ]
        );
        assert_eq!(p.absolute(), ["/a", "/b", "/usr/lib/debug"]);
        let p = DebugPath::parse("-:/x");
        assert!(p.entries.iter().all(|e| !e.check_crc));
    }

    #[test]
    fn build_id_paths_split_the_first_byte() {
        let p = build_id_path(Path::new("/usr/lib/debug"), &[0xab, 0x01, 0xff]).unwrap();
        assert_eq!(p, Path::new("/usr/lib/debug/.build-id/ab/01ff.debug"));
        assert_eq!(build_id_path(Path::new("/d"), &[0xab]), None);
        assert_eq!(build_id_path(Path::new("/d"), &[]), None);
    }

    #[test]
    fn candidates_follow_libdwfl() {
        let dir = Some(Path::new("/opt/app/bin"));
        let c = |e: &str, base: Option<&str>| candidates(e, dir, "x.debug", base);
        assert_eq!(c("", None), [PathBuf::from("/opt/app/bin/x.debug")]);
        assert_eq!(
            c(".debug", None),
            [PathBuf::from("/opt/app/bin/.debug/x.debug")]
        );
        assert_eq!(
            c("/usr/lib/debug", None),
            [
                PathBuf::from("/usr/lib/debug/opt/app/bin/x.debug"),
                PathBuf::from("/usr/lib/debug/app/bin/x.debug"),
                PathBuf::from("/usr/lib/debug/bin/x.debug"),
                PathBuf::from("/usr/lib/debug/x.debug"),
            ]
        );
        // An invented name (`BINARY.debug`) also tries the binary's own name, away from
        // its directory.
        assert_eq!(
            c("../dbg", Some("x")),
            [
                PathBuf::from("/opt/app/bin/../dbg/x.debug"),
                PathBuf::from("/opt/app/bin/../dbg/x"),
            ]
        );
        // An absolute entry says nothing for a relative binary name.
        assert!(candidates("/usr/lib/debug", None, "x.debug", None).is_empty());
    }
}
