//! The repository as the checks see it: its Rust files (those git tracks) and its crates
//! (the root package and the `[workspace] members`), each with its directory and manifest.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::cargo::{package_name, workspace_members};

/// One crate of the workspace.
#[derive(Debug)]
pub struct Crate {
    /// Its package name (`sonde-lang`).
    pub name: String,
    /// Its directory relative to the repository (empty for the root package).
    pub dir: PathBuf,
    /// The text of its `Cargo.toml`.
    pub manifest: String,
}

impl Crate {
    /// The name Rust code uses for it (`sonde_lang`).
    pub fn rust_name(&self) -> String {
        self.name.replace('-', "_")
    }

    /// Its crate root relative to the repository: `src/lib.rs`, else `src/main.rs`.
    pub fn root_file(&self, repo: &Path) -> PathBuf {
        let lib = self.dir.join("src/lib.rs");
        if repo.join(&lib).is_file() {
            lib
        } else {
            self.dir.join("src/main.rs")
        }
    }
}

/// The repository's workspace: its crates, the root package first.
pub fn crates(repo: &Path) -> Vec<Crate> {
    let read =
        |dir: &Path| fs::read_to_string(repo.join(dir).join("Cargo.toml")).unwrap_or_default();
    let root = read(Path::new(""));
    let mut crates = vec![Crate {
        name: package_name(&root).unwrap_or_else(|| "(root package)".to_string()),
        dir: PathBuf::new(),
        manifest: root.clone(),
    }];
    for member in workspace_members(&root) {
        let dir = PathBuf::from(&member);
        let manifest = read(&dir);
        let name = package_name(&manifest)
            .unwrap_or_else(|| format!("(no package name in {member}/Cargo.toml)"));
        crates.push(Crate {
            name,
            dir,
            manifest,
        });
    }
    crates
}

/// Which crate a repository file belongs to: the member whose directory holds it, else the
/// root package (index 0).
pub fn owner(crates: &[Crate], file: &Path) -> usize {
    crates
        .iter()
        .enumerate()
        .skip(1)
        .find(|(_, c)| file.starts_with(&c.dir))
        .map_or(0, |(i, _)| i)
}

/// Every `*.rs` file git tracks (that still exists), relative to the repository; without
/// git, every `*.rs` file below it except in `target/` and hidden directories.
pub fn rust_files(repo: &Path) -> Vec<PathBuf> {
    let listed = Command::new("git")
        .args(["ls-files", "-z", "--", "*.rs"])
        .current_dir(repo)
        .output();
    let mut files: Vec<PathBuf> = match listed {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout)
            .split('\0')
            .filter(|f| !f.is_empty())
            .map(PathBuf::from)
            .filter(|f| repo.join(f).is_file())
            .collect(),
        _ => {
            let mut found = Vec::new();
            walk(repo, Path::new(""), &mut found);
            found
        }
    };
    files.sort();
    files
}

/// Adds the `*.rs` files below `repo/dir` to `out`, skipping `target/` and hidden entries.
fn walk(repo: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(repo.join(dir)) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = dir.join(&name);
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if name.starts_with('.') || (is_dir && name == "target") {
            continue;
        }
        if is_dir {
            walk(repo, &path, out);
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// Crate ownership of files and the directory walk.
#[cfg(test)]
mod tests {
    use super::*;

    /// Files belong to the member whose directory holds them, else the root package.
    #[test]
    fn files_belong_to_the_innermost_member() {
        let crate_at = |name: &str, dir: &str| Crate {
            name: name.into(),
            dir: dir.into(),
            manifest: String::new(),
        };
        let crates = [
            crate_at("sonde", ""),
            crate_at("sonde-lang", "lang"),
            crate_at("sonde-x", "x"),
        ];
        assert_eq!(owner(&crates, Path::new("lang/src/lib.rs")), 1);
        assert_eq!(owner(&crates, Path::new("language/src/lib.rs")), 0);
        assert_eq!(owner(&crates, Path::new("src/main.rs")), 0);
        assert_eq!(crates[1].rust_name(), "sonde_lang");
    }

    /// The walk without git skips `target/` and hidden directories.
    #[test]
    fn walking_skips_target() {
        let repo = std::env::temp_dir().join(format!("shape-walk-{}", std::process::id()));
        for dir in ["src", "target/debug", ".git"] {
            fs::create_dir_all(repo.join(dir)).unwrap();
        }
        for file in ["src/a.rs", "src/b.txt", "target/debug/c.rs", ".git/d.rs"] {
            fs::write(repo.join(file), "").unwrap();
        }
        let mut found = Vec::new();
        walk(&repo, Path::new(""), &mut found);
        fs::remove_dir_all(&repo).unwrap();
        assert_eq!(found, [PathBuf::from("src/a.rs")]);
    }
}
