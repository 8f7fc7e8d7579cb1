//! The module tree of one crate: which file holds which module, found by following
//! `mod NAME;` declarations from the crate root the way rustc does.
//!
//! File rules: `mod x;` in a crate root or `mod.rs` is `x.rs` or `x/mod.rs` beside it; in
//! any other file `FILE.rs` it is looked up in the directory `FILE/`. `#[path = "p"]` is
//! relative to the declaring file's directory, and a file loaded through `#[path]` looks up
//! its own children beside itself (like a `mod.rs`). Inline `mod x { ... }` blocks belong to
//! their file, and a `mod y;` inside them is looked up in a subdirectory `x/`.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};

use super::strip::strip;
use super::tokens::{Kind, Token, matching_back, tokenize};

/// A module path below the crate root (`["output", "json"]`); empty for the root.
pub type ModPath = Vec<String>;

/// One crate's files and modules.
#[derive(Debug, Default)]
pub struct ModuleTree {
    /// The crate's files, the root first, each with its original text.
    pub files: Vec<(PathBuf, String)>,
    /// Every module (file or inline) and the index in `files` of the file that holds it.
    pub modules: BTreeMap<ModPath, usize>,
    /// `mod` declarations whose file was not found: `"FILE: mod NAME (tried ...)"`.
    pub missing: Vec<String>,
}

/// A `mod` found in a file.
#[derive(Debug, PartialEq, Eq)]
struct ModDecl {
    /// The inline modules (`mod a { mod b { ... } }`) the declaration sits in.
    inline: Vec<String>,
    /// The module's name.
    name: String,
    /// The `#[path = "..."]` attribute's value, if any.
    path: Option<String>,
    /// Whether it is an inline `mod NAME { ... }` (else `mod NAME;`, a file).
    is_inline: bool,
}

impl ModuleTree {
    /// Follows the `mod` declarations from the crate root file `root`, reading files with
    /// `read` (which returns `None` for a file that does not exist).
    pub fn load(root: &Path, read: &dyn Fn(&Path) -> Option<String>) -> ModuleTree {
        let mut tree = ModuleTree::default();
        let Some(text) = read(root) else {
            tree.missing
                .push(format!("crate root {} not found", root.display()));
            return tree;
        };
        let mut queue = VecDeque::from([(Vec::new(), root.to_path_buf(), text, true)]);
        while let Some((module, file, text, owns_dir)) = queue.pop_front() {
            if tree.files.iter().any(|(f, _)| *f == file) {
                continue; // Two declarations of one file: keep the first module.
            }
            let index = tree.files.len();
            tree.modules.insert(module.clone(), index);
            let here = file.parent().unwrap_or(Path::new("")).to_path_buf();
            let children = if owns_dir {
                here.clone()
            } else {
                here.join(file.file_stem().unwrap_or_default())
            };
            for decl in declarations(&text) {
                let mut path = module.clone();
                path.extend(decl.inline.iter().cloned());
                path.push(decl.name.clone());
                if decl.is_inline {
                    tree.modules.insert(path, index);
                    continue;
                }
                let inline_dir = decl.inline.iter().fold(children.clone(), |d, m| d.join(m));
                let candidates = match &decl.path {
                    Some(p) if decl.inline.is_empty() => vec![here.join(p)],
                    Some(p) => vec![inline_dir.join(p)],
                    None => vec![
                        inline_dir.join(format!("{}.rs", decl.name)),
                        inline_dir.join(&decl.name).join("mod.rs"),
                    ],
                };
                let found = candidates.iter().find_map(|c| read(c).map(|t| (c, t)));
                match found {
                    Some((c, t)) => {
                        let owns = decl.path.is_some() || c.ends_with("mod.rs");
                        queue.push_back((path, c.clone(), t, owns));
                    }
                    None => tree.missing.push(format!(
                        "{}: mod {} (tried {})",
                        file.display(),
                        decl.name,
                        candidates
                            .iter()
                            .map(|c| c.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )),
                }
            }
            tree.files.push((file, text));
        }
        tree
    }

    /// The file index of the deepest module named by the leading `segments` of a path from
    /// the crate root (`["output", "json", "write"]` is `output/json.rs` when `write` is an
    /// item of that module).
    pub fn resolve(&self, segments: &[String]) -> usize {
        let mut best = self.modules[&Vec::new()];
        let mut path = Vec::new();
        for segment in segments {
            path.push(segment.clone());
            match self.modules.get(&path) {
                Some(&file) => best = file,
                None => break,
            }
        }
        best
    }
}

/// The `mod` declarations and inline modules of one file's text.
fn declarations(text: &str) -> Vec<ModDecl> {
    let stripped = strip(text);
    let tokens = tokenize(&stripped);
    let mut decls = Vec::new();
    // One entry per open `{`: the inline module it opens, if it does.
    let mut braces: Vec<Option<String>> = Vec::new();
    let mut k = 0;
    while k < tokens.len() {
        let token = &tokens[k];
        if token.is("{") {
            braces.push(None);
        } else if token.is("}") {
            braces.pop();
        } else if token.is("mod")
            && tokens.get(k + 1).is_some_and(|t| t.kind == Kind::Word)
            && tokens.get(k + 2).is_some_and(|t| t.is(";") || t.is("{"))
        {
            let name = tokens[k + 1].text.trim_start_matches("r#").to_string();
            let is_inline = tokens[k + 2].is("{");
            decls.push(ModDecl {
                inline: braces.iter().flatten().cloned().collect(),
                name: name.clone(),
                path: path_attribute(&tokens, k, text),
                is_inline,
            });
            if is_inline {
                braces.push(Some(name));
                k += 3;
                continue;
            }
        }
        k += 1;
    }
    decls
}

/// The value of a `#[path = "..."]` among the attributes before the `mod` at token `k`
/// (skipping a visibility such as `pub(crate)`), read from the original `text`.
fn path_attribute(tokens: &[Token], k: usize, text: &str) -> Option<String> {
    let mut end = k.checked_sub(1)?;
    if tokens[end].is(")") {
        end = matching_back(tokens, end)?.checked_sub(1)?;
    }
    if tokens[end].is("pub") {
        end = end.checked_sub(1)?;
    }
    let mut found = None;
    while tokens[end].is("]") {
        let open = matching_back(tokens, end)?;
        if open == 0 || !tokens[open - 1].is("#") {
            break;
        }
        let attr = &tokens[open + 1..end];
        if let [name, eq, value] = attr
            && name.is("path")
            && eq.is("=")
            && value.kind == Kind::Str
        {
            let literal = &text[value.pos..value.pos + value.text.len()];
            found = Some(literal.trim_matches('"').to_string());
        }
        match (open - 1).checked_sub(1) {
            Some(before) => end = before,
            None => break,
        }
    }
    found
}

/// Module trees of small in-memory crates.
#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Loads a tree from in-memory `files` rooted at `src/lib.rs`.
    pub fn tree_of(files: &[(&str, &str)]) -> ModuleTree {
        let map: HashMap<PathBuf, String> = files
            .iter()
            .map(|(p, t)| (PathBuf::from(p), t.to_string()))
            .collect();
        ModuleTree::load(Path::new("src/lib.rs"), &|p| map.get(p).cloned())
    }

    /// The file of each module, as `"a::b=src/a/b.rs"` strings.
    fn layout(tree: &ModuleTree) -> Vec<String> {
        tree.modules
            .iter()
            .map(|(m, &f)| format!("{}={}", m.join("::"), tree.files[f].0.display()))
            .collect()
    }

    /// `mod x;` finds `x.rs`, `x/mod.rs` and, from `a.rs`, `a/x.rs`; commented and
    /// quoted `mod`s do not count.
    #[test]
    fn files_beside_roots_and_in_stem_directories() {
        let tree = tree_of(&[
            ("src/lib.rs", "pub mod a;\nmod b;\n// mod fake;\n"),
            ("src/a.rs", "pub(crate) mod c;"),
            ("src/a/c.rs", ""),
            ("src/b/mod.rs", "#[cfg(test)]\nmod tests;"),
            ("src/b/tests.rs", "let s = \"mod nope;\";"),
        ]);
        assert!(tree.missing.is_empty(), "{:?}", tree.missing);
        assert_eq!(
            layout(&tree),
            [
                "=src/lib.rs",
                "a=src/a.rs",
                "a::c=src/a/c.rs",
                "b=src/b/mod.rs",
                "b::tests=src/b/tests.rs"
            ]
        );
    }

    /// `#[path]` is relative to the declaring file, and inline modules map to their file.
    #[test]
    fn path_attributes_and_inline_modules() {
        let tree = tree_of(&[
            (
                "src/lib.rs",
                "mod session;\nmod inner { pub mod deep { } mod file; }",
            ),
            (
                "src/session.rs",
                "#[cfg(test)]\n#[path = \"session_post.rs\"]\npub(crate) mod post;",
            ),
            ("src/session_post.rs", "mod helper;"),
            ("src/helper.rs", ""),
            ("src/inner/file.rs", ""),
        ]);
        assert!(tree.missing.is_empty(), "{:?}", tree.missing);
        assert_eq!(
            layout(&tree),
            [
                "=src/lib.rs",
                "inner=src/lib.rs",
                "inner::deep=src/lib.rs",
                "inner::file=src/inner/file.rs",
                "session=src/session.rs",
                "session::post=src/session_post.rs",
                "session::post::helper=src/helper.rs",
            ]
        );
        let segments: Vec<String> = ["session", "post", "EventKind"].map(String::from).to_vec();
        assert_eq!(
            tree.files[tree.resolve(&segments)].0,
            Path::new("src/session_post.rs")
        );
        assert_eq!(tree.resolve(&["nothing".to_string()]), 0);
    }

    /// A declaration without a file is reported with the places tried.
    #[test]
    fn missing_files_are_reported() {
        let tree = tree_of(&[("src/lib.rs", "mod gone;")]);
        assert_eq!(
            tree.missing,
            ["src/lib.rs: mod gone (tried src/gone.rs, src/gone/mod.rs)"]
        );
    }
}
