//! Just enough reading of `Cargo.toml` files: the workspace's members, a package's name and
//! the workspace crates it depends on; and the check of those dependencies against a table
//! of allowed layers.

use std::collections::BTreeMap;

use super::graph::components;

/// The TOML table a line opens (`[dependencies]` gives `dependencies`), if it is a header.
fn header(line: &str) -> Option<&str> {
    let line = line.trim();
    let inner = line.strip_prefix('[')?.split(']').next()?;
    Some(inner.trim_matches(['[', ' ']))
}

/// The text of `line` before any `#` comment (quotes are not considered: the keys read
/// here hold no `#`).
fn uncommented(line: &str) -> &str {
    line.split('#').next().unwrap_or("").trim()
}

/// The quoted strings of `[workspace] members = [...]` (the array may span lines).
pub fn workspace_members(manifest: &str) -> Vec<String> {
    let mut table = "";
    let mut collecting = false;
    let mut members = Vec::new();
    for line in manifest.lines() {
        if let Some(h) = header(line) {
            table = h;
            continue;
        }
        let line = uncommented(line);
        if table == "workspace" && line.starts_with("members") {
            collecting = true;
        }
        if collecting {
            let values = line.split_once('[').map_or(line, |(_, rest)| rest);
            members.extend(values.split('"').skip(1).step_by(2).map(str::to_string));
            if line.contains(']') {
                collecting = false;
            }
        }
    }
    members
}

/// The `name` of the manifest's `[package]`.
pub fn package_name(manifest: &str) -> Option<String> {
    let mut table = "";
    for line in manifest.lines() {
        if let Some(h) = header(line) {
            table = h;
        } else if table == "package" {
            let (key, value) = uncommented(line).split_once('=')?;
            if key.trim() == "name" {
                return Some(value.trim().trim_matches('"').to_string());
            }
        }
    }
    None
}

/// The dependencies whose names start with `prefix` in every dependency table
/// (`[dependencies]`, `[dev-dependencies]`, `[build-dependencies]`, target-specific ones,
/// and `[dependencies.NAME]` tables), as `(table, name)`. `[workspace.dependencies]` only
/// declares versions for members to inherit and is not a dependency.
pub fn dependencies(manifest: &str, prefix: &str) -> Vec<(String, String)> {
    let mut table = "";
    let mut out = Vec::new();
    for line in manifest.lines() {
        if let Some(h) = header(line) {
            table = h;
            if let Some((t, name)) = h.rsplit_once('.')
                && t.ends_with("dependencies")
                && !t.starts_with("workspace")
                && name.starts_with(prefix)
            {
                out.push((t.to_string(), name.to_string()));
                table = "";
            }
            continue;
        }
        if !table.ends_with("dependencies") || table.starts_with("workspace") {
            continue;
        }
        let key = uncommented(line)
            .split(['=', '.'])
            .next()
            .unwrap_or("")
            .trim();
        if key.starts_with(prefix) {
            out.push((table.to_string(), key.to_string()));
        }
    }
    out
}

/// The problems with the layer table itself, given the workspace's crates: crates missing
/// from it, rows or allowed names that are no crate, and circles among the rows.
pub fn table_problems(layers: &[(&str, &[&str])], crates: &[String]) -> Vec<String> {
    let mut problems = Vec::new();
    for name in crates {
        if !layers.iter().any(|(row, _)| row == name) {
            problems.push(format!(
                "{name} is a workspace crate but has no row in LAYERS: add (\"{name}\", &[...the sonde crates it may use...]) to LAYERS in tests/architecture.rs"
            ));
        }
    }
    let index: BTreeMap<&str, usize> = layers
        .iter()
        .enumerate()
        .map(|(i, (row, _))| (*row, i))
        .collect();
    let mut adjacency = vec![Vec::new(); layers.len()];
    for (i, (row, allowed)) in layers.iter().enumerate() {
        if !crates.iter().any(|c| c == row) {
            problems.push(format!(
                "LAYERS has a row for {row}, which is not a workspace crate: remove it or fix its name"
            ));
        }
        for dep in *allowed {
            match index.get(dep) {
                Some(&j) => adjacency[i].push(j),
                None => problems.push(format!(
                    "LAYERS lets {row} use {dep}, which has no row of its own: add its row or fix the name"
                )),
            }
        }
    }
    for component in components(&adjacency) {
        let names: Vec<&str> = component.iter().map(|&i| layers[i].0).collect();
        let self_loop = component.len() == 1 && adjacency[component[0]].contains(&component[0]);
        if component.len() > 1 || self_loop {
            problems.push(format!(
                "LAYERS is not one-way: {} may use each other; crates must depend one way",
                names.join(", ")
            ));
        }
    }
    problems
}

/// Whether `LAYERS` lets `from` reach `to` through one or more rows (`from` may use a crate
/// that may use ... `to`).
pub fn reaches(layers: &[(&str, &[&str])], from: &str, to: &str) -> bool {
    let mut seen = vec![from];
    let mut next = vec![from];
    while let Some(name) = next.pop() {
        let allowed = layers
            .iter()
            .filter(|(row, _)| *row == name)
            .flat_map(|(_, a)| a.iter());
        for &dep in allowed {
            if dep == to {
                return true;
            }
            if !seen.contains(&dep) {
                seen.push(dep);
                next.push(dep);
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A root manifest with a multi-line members array, comments and every kind of table.
    const ROOT: &str = "[workspace]\nmembers = [\"grammar\",\n  \"lang\", # the language\n]\n\n\
                        [package]\nname = \"sonde\"\n\n[dependencies]\nsonde-lang.workspace = true\n\
                        clap.workspace = true\n# sonde-fake = 1\n[dev-dependencies]\n\
                        sonde-runtime = { path = \"runtime\" }\n[dependencies.sonde-compiler]\npath = \"c\"\n";

    /// Members, the package name and the `sonde-` dependencies of every table are read.
    #[test]
    fn members_name_and_dependencies() {
        assert_eq!(workspace_members(ROOT), ["grammar", "lang"]);
        assert_eq!(package_name(ROOT).as_deref(), Some("sonde"));
        let deps: Vec<String> = dependencies(ROOT, "sonde-")
            .into_iter()
            .map(|(t, n)| format!("{t}:{n}"))
            .collect();
        assert_eq!(
            deps,
            [
                "dependencies:sonde-lang",
                "dev-dependencies:sonde-runtime",
                "dependencies:sonde-compiler"
            ]
        );
    }

    /// A table missing a crate, naming no crate or going round in a circle is refused.
    #[test]
    fn table_must_cover_the_crates_and_be_one_way() {
        let crates: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        let good: &[(&str, &[&str])] = &[("a", &[]), ("b", &["a"]), ("c", &["a", "b"])];
        assert!(table_problems(good, &crates).is_empty());
        assert!(reaches(good, "c", "a") && reaches(good, "b", "a") && !reaches(good, "a", "c"));
        let bad: &[(&str, &[&str])] = &[("a", &["c"]), ("c", &["a", "z"]), ("x", &[])];
        let problems = table_problems(bad, &crates).join("\n");
        for needle in [
            "b is a workspace crate",
            "row for x",
            "use z",
            "a, c may use each other",
        ] {
            assert!(problems.contains(needle), "{needle} not in:\n{problems}");
        }
    }
}
