//! The file graph of one crate (file A → file B when A names a `crate::` path into B's
//! module) and the report of its circles.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::graph::components;
use super::modtree::ModuleTree;
use super::paths::crate_paths;
use super::strip::strip;
use super::tokens::{Lines, tokenize};

/// Where a file names another: the line and the path (`crate::a::b`).
pub type Site = (usize, String);

/// One crate's file graph.
pub struct FileGraph<'t> {
    /// The module tree it was built from.
    pub tree: &'t ModuleTree,
    /// Each edge (from file, to file) with the places that make it.
    pub edges: BTreeMap<(usize, usize), Vec<Site>>,
}

impl<'t> FileGraph<'t> {
    /// Scans every file of `tree` for `crate::` paths.
    pub fn build(tree: &'t ModuleTree) -> FileGraph<'t> {
        let mut edges: BTreeMap<(usize, usize), Vec<Site>> = BTreeMap::new();
        for (from, (_, text)) in tree.files.iter().enumerate() {
            let stripped = strip(text);
            let lines = Lines::new(&stripped);
            for path in crate_paths(&tokenize(&stripped)) {
                let to = tree.resolve(&path.segments);
                if to != from {
                    let shown =
                        std::iter::once("crate").chain(path.segments.iter().map(String::as_str));
                    let site = (lines.line(path.pos), shown.collect::<Vec<_>>().join("::"));
                    edges.entry((from, to)).or_default().push(site);
                }
            }
        }
        FileGraph { tree, edges }
    }

    /// The circles (strongly connected components of more than one file), largest first,
    /// each in file name order.
    pub fn circles(&self) -> Vec<Vec<usize>> {
        let mut adjacency = vec![Vec::new(); self.tree.files.len()];
        for &(from, to) in self.edges.keys() {
            adjacency[from].push(to);
        }
        let mut circles: Vec<Vec<usize>> = components(&adjacency)
            .into_iter()
            .filter(|c| c.len() > 1)
            .collect();
        for circle in &mut circles {
            circle.sort_by(|&a, &b| self.tree.files[a].0.cmp(&self.tree.files[b].0));
        }
        circles.sort_by_key(|c| std::cmp::Reverse(c.len()));
        circles
    }

    /// The display name of file `index`.
    fn name(&self, index: usize) -> String {
        self.tree.files[index].0.display().to_string()
    }

    /// Describes one circle for someone who has to break it: its files, and every edge
    /// between them with the lines that make it.
    pub fn describe(&self, circle: &[usize]) -> String {
        let mut text = format!("a circle of {} files:\n", circle.len());
        for &file in circle {
            let out = self
                .edges
                .keys()
                .filter(|(f, t)| *f == file && circle.contains(t))
                .count();
            let into = self
                .edges
                .keys()
                .filter(|(f, t)| *t == file && circle.contains(f))
                .count();
            let _ = writeln!(
                text,
                "    {} (uses {out} of them, used by {into})",
                self.name(file)
            );
        }
        text.push_str("  its edges (file → file: line path, ...):\n");
        let mut inside: Vec<(&(usize, usize), &Vec<Site>)> = self
            .edges
            .iter()
            .filter(|((f, t), _)| circle.contains(f) && circle.contains(t))
            .collect();
        inside.sort_by_key(|((f, t), _)| (&self.tree.files[*f].0, &self.tree.files[*t].0));
        for ((from, to), sites) in inside {
            let shown: Vec<String> = sites
                .iter()
                .take(3)
                .map(|(line, path)| format!("{line} {path}"))
                .collect();
            let more = if sites.len() > 3 {
                format!(", +{} more", sites.len() - 3)
            } else {
                String::new()
            };
            let _ = writeln!(
                text,
                "    {} → {}: {}{more}",
                self.name(*from),
                self.name(*to),
                shown.join(", ")
            );
        }
        text
    }
}

/// File graphs of small in-memory crates.
#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::path::{Path, PathBuf};

    /// The graph's circles as file names, for a crate of in-memory `files`.
    fn circles_of(files: &[(&str, &str)]) -> (Vec<Vec<String>>, String) {
        let map: HashMap<PathBuf, String> = files
            .iter()
            .map(|(p, t)| (PathBuf::from(p), t.to_string()))
            .collect();
        let tree = ModuleTree::load(Path::new("src/lib.rs"), &|p| map.get(p).cloned());
        let graph = FileGraph::build(&tree);
        let circles = graph.circles();
        let described = circles
            .iter()
            .map(|c| graph.describe(c))
            .collect::<Vec<_>>()
            .join("\n");
        let names = circles
            .iter()
            .map(|c| c.iter().map(|&f| graph.name(f)).collect())
            .collect();
        (names, described)
    }

    /// A circle of 4 files is found, and its report names the edges and their lines.
    #[test]
    fn four_files_in_a_circle_are_found_and_described() {
        let (circles, text) = circles_of(&[
            ("src/lib.rs", "mod a; mod b; mod c; mod d;"),
            ("src/a.rs", "use crate::{b::B, lib_item};"),
            ("src/b.rs", "fn f() { crate::c::C::new() }"),
            ("src/c.rs", "pub use crate::d::{self, D};"),
            ("src/d.rs", "// crate::x\nfn g() {\n    crate::a::A;\n}"),
        ]);
        assert_eq!(circles, [["src/a.rs", "src/b.rs", "src/c.rs", "src/d.rs"]]);
        assert!(text.contains("a circle of 4 files"), "{text}");
        assert!(
            text.contains("src/d.rs → src/a.rs: 3 crate::a::A"),
            "{text}"
        );
        assert!(
            text.contains("src/c.rs → src/d.rs: 1 crate::d, 1 crate::d::D"),
            "{text}"
        );
        assert!(
            !text.contains("→ src/lib.rs"),
            "lib.rs is outside the circle: {text}"
        );
    }

    /// A circle of 3 files is found (and allowed by the caller); `super::`/`self::` paths
    /// make no edges.
    #[test]
    fn three_files_and_relative_paths() {
        let (circles, _) = circles_of(&[
            ("src/lib.rs", "mod a; mod b; mod c;"),
            (
                "src/a.rs",
                "use crate::b::B; mod inner { use super::super::c::C; }",
            ),
            ("src/b.rs", "use crate::c::C;"),
            ("src/c.rs", "use crate::a::A; use self::x; use super::b;"),
        ]);
        assert_eq!(circles, [["src/a.rs", "src/b.rs", "src/c.rs"]]);
    }

    /// Paths into inline modules and to items resolve to the file that holds them.
    #[test]
    fn inline_modules_and_items_resolve_to_their_file() {
        let (circles, _) = circles_of(&[
            (
                "src/lib.rs",
                "mod a; pub mod util { pub fn f() {} }\nfn g() { crate::a::h() }",
            ),
            ("src/a.rs", "pub fn h() { crate::util::f() }"),
        ]);
        assert_eq!(circles, [["src/a.rs", "src/lib.rs"]]);
    }
}
