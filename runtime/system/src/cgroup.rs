//! Cgroup ids → paths, for printing `cgroup_path()` values: every mounted cgroup hierarchy
//! (the cgroup2 one named `unified`, v1 ones by their mount directory) is searched for a
//! directory whose inode number is the id, as bpftrace does. `cgroup_path(id, filter)` prints
//! only the hierarchies whose name matches the filter (a recording's text is filtered by
//! the printers: `output::cgroup_paths`).

use sonde_lang::glob::wildcard_match;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The mounted cgroup hierarchies as (name, mount point): cgroup2 ones first (named
/// `unified`), then v1 ones sorted by name.
fn hierarchies() -> Vec<(String, String)> {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    let (mut v2, mut v1) = (Vec::new(), Vec::new());
    for line in mounts.lines() {
        let mut words = line.split_whitespace();
        let (Some(kind), Some(dir)) = (words.next(), words.next()) else {
            continue;
        };
        if !Path::new(dir).is_dir() {
            continue;
        }
        match kind {
            "cgroup2" => v2.push(("unified".to_string(), dir.to_string())),
            "cgroup" => {
                let name = Path::new(dir)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned());
                v1.push((name.unwrap_or_default(), dir.to_string()));
            }
            _ => {}
        }
    }
    v1.sort();
    v2.extend(v1);
    v2
}

/// The path (from the hierarchy's root, `/` for the root) of the directory of inode `id`
/// under `root`.
fn path_in(root: &Path, id: u64) -> Option<String> {
    if std::fs::metadata(root).ok()?.ino() == id {
        return Some("/".to_string());
    }
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
                continue;
            };
            if !meta.is_dir() {
                continue;
            }
            if meta.ino() == id {
                let rel = entry
                    .path()
                    .strip_prefix(root)
                    .ok()?
                    .to_string_lossy()
                    .into_owned();
                return Some(format!("/{rel}"));
            }
            pending.push(entry.path());
        }
    }
    None
}

/// `(name, path)` for each hierarchy holding cgroup `id` whose name matches wildcard
/// `filter` (all of them for `None`), in [`hierarchies`] order.
fn entries(id: u64, filter: Option<&str>) -> Vec<(String, String)> {
    hierarchies()
        .into_iter()
        .filter(|(name, _)| filter.is_none_or(|f| wildcard_match(f, name)))
        .filter_map(|(name, root)| path_in(Path::new(&root), id).map(|p| (name, p)))
        .collect()
}

/// `name:path` for each entry, joined with `,` (bpftrace's text of a `cgroup_path()` value).
fn join(entries: &[(String, String)]) -> String {
    entries
        .iter()
        .map(|(name, path)| format!("{name}:{path}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// `name:path` for each hierarchy holding cgroup `id`, joined with `,` (bpftrace's text of a
/// `cgroup_path()` value); `None` when no hierarchy holds it.
pub fn cgroup_paths(id: u64) -> Option<String> {
    let found = entries(id, None);
    (!found.is_empty()).then(|| join(&found))
}

/// [`cgroup_paths`] in the hierarchies whose name matches wildcard `filter`
/// (`cgroup_path(id, "unified")`); empty when none of them holds it, as bpftrace prints it.
pub fn cgroup_paths_in(id: u64, filter: &str) -> Option<String> {
    Some(join(&entries(id, Some(filter))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_joined_name_colon_path() {
        assert_eq!(
            join(&[("a".into(), "/".into()), ("b".into(), "/c".into())]),
            "a:/,b:/c"
        );
    }

    #[test]
    fn the_root_of_a_directory_is_slash_and_subdirectories_are_found() {
        let root = std::env::temp_dir().join(format!("sonde-cgroup-{}", std::process::id()));
        let sub = root.join("a/b");
        std::fs::create_dir_all(&sub).unwrap();
        let ino = |p: &Path| std::fs::metadata(p).unwrap().ino();
        assert_eq!(path_in(&root, ino(&root)).as_deref(), Some("/"));
        assert_eq!(path_in(&root, ino(&sub)).as_deref(), Some("/a/b"));
        assert_eq!(path_in(&root, u64::MAX), None);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
