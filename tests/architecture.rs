//! The shape of the code, measured from its sources as text, so that it cannot drift:
//!
//! 1. inside a crate, no circle of more than `MAX_CIRCLE` files (file A → file B when A
//!    names a `crate::` path into B's module);
//! 2. crates depend one way, as `LAYERS` declares;
//! 3. no Rust source file over `MAX_FILE_LINES` lines;
//! 4. no function over `MAX_FN_LINES` lines below `DRIVER_DIRS`.
//!
//! Each check is one test that prints a summary when it passes and, when it fails, says
//! what is wrong where and what to do. The analysis lives in `tests/shape/`.

mod shape;

use std::fs;
use std::path::{Path, PathBuf};

use shape::cargo::{dependencies, reaches, table_problems};
use shape::circles::FileGraph;
use shape::fns::{functions, is_test_file};
use shape::modtree::ModuleTree;
use shape::paths::crate_uses;
use shape::strip::strip;
use shape::tokens::{Lines, tokenize};
use shape::workspace::{Crate, crates, owner, rust_files};

/// Each workspace crate (package name) with the sonde crates right below it. A crate may
/// depend on those and on everything they may depend on (in `[dependencies]`,
/// `[dev-dependencies]`, `[build-dependencies]` or in code), and on nothing else: the
/// engine, the session and the printers never reach the kernel crate, and neither the
/// kernel crate nor what the machine is knows how anything prints. The table must stay free
/// of circles.
const LAYERS: &[(&str, &[&str])] = &[
    ("sonde-grammar", &[]),
    ("sonde-lang", &["sonde-grammar"]),
    ("sonde-compiler", &["sonde-lang"]),
    ("sonde-system", &["sonde-compiler"]),
    ("sonde-kernel", &["sonde-system"]),
    ("sonde-present", &["sonde-system"]),
    ("sonde-export", &["sonde-present"]),
    ("sonde-session", &["sonde-export"]),
    ("sonde-engine", &["sonde-session"]),
    ("sonde-agent", &["sonde-export"]),
    ("sonde-allocs", &[]),
    (
        "sonde-drivers",
        &[
            "sonde-kernel",
            "sonde-engine",
            "sonde-agent",
            "sonde-allocs",
        ],
    ),
    ("sonde", &["sonde-drivers"]),
];

/// The directories (relative to the repository) whose functions must stay short: the
/// drivers (the binary, the run loops, the REPL's live session, record and replay, the
/// userspace engine and the session they share), which should call into the library crates
/// rather than do the work.
const DRIVER_DIRS: &[&str] = &[
    "src",
    "runtime/drivers/src",
    "runtime/engine/src",
    "runtime/session/src",
];

/// The largest circle of files allowed inside a crate.
const MAX_CIRCLE: usize = 3;
/// The most lines a Rust source file may have.
const MAX_FILE_LINES: usize = 800;
/// The most lines a function below `DRIVER_DIRS` may have.
const MAX_FN_LINES: usize = 120;

/// The repository's root directory.
fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Reads a repository file, `None` when it does not exist.
fn read(path: &Path) -> Option<String> {
    fs::read_to_string(repo().join(path)).ok()
}

/// Fails the test with `problems` (one per line) under `title`, or prints `summary`.
fn verdict(title: &str, problems: &[String], summary: &str) {
    if problems.is_empty() {
        println!("{summary}");
    } else {
        panic!("\n{title}\n\n{}\n\n({summary})\n", problems.join("\n"));
    }
}

/// Check 1: inside each crate, no circle of more than `MAX_CIRCLE` files.
#[test]
fn no_circle_of_more_than_three_files_in_a_crate() {
    let mut problems = Vec::new();
    let mut summary = Vec::new();
    for krate in crates(&repo()) {
        let tree = ModuleTree::load(&krate.root_file(&repo()), &read);
        let graph = FileGraph::build(&tree);
        let circles = graph.circles();
        let largest = circles.first().map_or(1, Vec::len);
        let sizes: Vec<String> = circles.iter().map(|c| c.len().to_string()).collect();
        let all = if sizes.len() > 1 {
            format!(" (circles: {})", sizes.join(", "))
        } else {
            String::new()
        };
        summary.push(format!(
            "{}: {} files, {} edges, largest circle {largest}{all}",
            krate.name,
            tree.files.len(),
            graph.edges.len()
        ));
        for missing in &tree.missing {
            problems.push(format!(
                "{}: a module's file was not found: {missing}",
                krate.name
            ));
        }
        for circle in circles.iter().filter(|c| c.len() > MAX_CIRCLE) {
            problems.push(format!("{}: {}", krate.name, graph.describe(circle)));
        }
    }
    verdict(
        &format!(
            "Files of one crate form circles of more than {MAX_CIRCLE} (each file reaches every other one through \
             `crate::` paths). Break each circle: move what the files share down into a module that uses none of \
             them, or turn an edge around (pass a value, a closure or a trait instead of naming the module), then \
             check the edges listed below again."
        ),
        &problems,
        &summary.join("\n"),
    );
}

/// The sonde crates `krate` uses, with where: its manifest's dependency tables and the
/// `sonde_xxx::` paths in its files (its own name left out).
fn used_crates(krate: &Crate, all: &[Crate], files: &[PathBuf]) -> Vec<(String, String)> {
    let mut used: Vec<(String, String)> = dependencies(&krate.manifest, "sonde-")
        .into_iter()
        .map(|(table, name)| {
            (
                name,
                format!("{} [{table}]", krate.dir.join("Cargo.toml").display()),
            )
        })
        .collect();
    let rust_names: Vec<String> = all.iter().map(Crate::rust_name).collect();
    let names: Vec<&str> = rust_names.iter().map(String::as_str).collect();
    for file in files {
        let text = read(file).unwrap_or_default();
        let stripped = strip(&text);
        let lines = Lines::new(&stripped);
        for (rust_name, pos) in crate_uses(&tokenize(&stripped), &names) {
            let name = &all[names.iter().position(|n| *n == rust_name).unwrap_or(0)].name;
            used.push((
                name.clone(),
                format!("{}:{}", file.display(), lines.line(pos)),
            ));
        }
    }
    used.retain(|(name, _)| *name != krate.name);
    used
}

/// Check 2: each crate uses only the sonde crates its `LAYERS` row allows, and the table
/// is one-way.
#[test]
fn crates_depend_one_way_as_layers_declares() {
    let all = crates(&repo());
    let names: Vec<String> = all.iter().map(|c| c.name.clone()).collect();
    let mut problems = table_problems(LAYERS, &names);
    let files = rust_files(&repo());
    let mut summary = Vec::new();
    for (index, krate) in all.iter().enumerate() {
        let own: Vec<PathBuf> = files
            .iter()
            .filter(|f| owner(&all, f) == index)
            .cloned()
            .collect();
        let used = used_crates(krate, &all, &own);
        let allowed: Vec<&str> = names
            .iter()
            .map(String::as_str)
            .filter(|other| reaches(LAYERS, &krate.name, other))
            .collect();
        let mut used_names: Vec<&str> = used.iter().map(|(n, _)| n.as_str()).collect();
        used_names.sort_unstable();
        used_names.dedup();
        for dep in used_names.iter().filter(|d| !allowed.contains(*d)) {
            let places: Vec<&str> = used
                .iter()
                .filter(|(n, _)| n == dep)
                .map(|(_, w)| w.as_str())
                .collect();
            let shown = places
                .iter()
                .take(5)
                .copied()
                .collect::<Vec<_>>()
                .join(", ");
            let more = if places.len() > 5 {
                format!(" and {} more", places.len() - 5)
            } else {
                String::new()
            };
            let name = &krate.name;
            let allowed = if allowed.is_empty() {
                "none".to_string()
            } else {
                allowed.join(", ")
            };
            let fix = if reaches(LAYERS, dep, name) {
                format!(
                    "{dep} is above {name} in LAYERS (it may use {name}), so this use has to go: move the code \
                     it needs into {name} or below, or have {dep} pass it in"
                )
            } else {
                format!(
                    "Move that code into a crate {name} may use ({allowed}), or, if the layering really \
                     changed, let {name}'s row in LAYERS (tests/architecture.rs) reach \"{dep}\""
                )
            };
            problems.push(format!(
                "{name} uses {dep}, which LAYERS does not allow ({shown}{more}).\n  {fix}.\n"
            ));
        }
        let uses = if used_names.is_empty() {
            "nothing".to_string()
        } else {
            used_names.join(", ")
        };
        summary.push(format!("{} uses {uses}", krate.name));
    }
    verdict(
        "Crates do not depend one way as LAYERS declares:",
        &problems,
        &summary.join("; "),
    );
}

/// Check 3: no tracked Rust file is longer than `MAX_FILE_LINES` lines.
#[test]
fn no_source_file_over_800_lines() {
    let files = rust_files(&repo());
    let mut counted: Vec<(usize, &PathBuf)> = files
        .iter()
        .map(|f| (read(f).unwrap_or_default().lines().count(), f))
        .collect();
    counted.sort_by(|a, b| b.cmp(a));
    let problems: Vec<String> = counted
        .iter()
        .take_while(|(lines, _)| *lines > MAX_FILE_LINES)
        .map(|(lines, f)| format!("  {} has {lines} lines", f.display()))
        .collect();
    let title = format!(
        "{} Rust files are longer than {MAX_FILE_LINES} lines. Split each along a seam (a group of functions \
         with their own types), or move its tests out into a `#[cfg(test)] #[path = \"NAME_tests.rs\"] mod tests;`:",
        problems.len()
    );
    let largest = counted.first().map_or(0, |(lines, _)| *lines);
    let summary = format!("{} Rust files, the longest {largest} lines", files.len());
    verdict(&title, &problems, &summary);
}

/// Check 4: no function below `DRIVER_DIRS` is longer than `MAX_FN_LINES` lines.
#[test]
fn no_function_over_120_lines_in_the_drivers() {
    let files = rust_files(&repo());
    let mut long = Vec::new();
    let mut count = 0;
    for file in files
        .iter()
        .filter(|f| DRIVER_DIRS.iter().any(|d| f.starts_with(d)))
    {
        if file
            .file_name()
            .is_some_and(|n| is_test_file(&n.to_string_lossy()))
        {
            continue;
        }
        for function in functions(&read(file).unwrap_or_default()) {
            count += 1;
            if function.lines > MAX_FN_LINES {
                long.push((
                    function.lines,
                    format!("{}:{} fn {}", file.display(), function.line, function.name),
                ));
            }
        }
    }
    long.sort_by(|a, b| b.cmp(a));
    let problems: Vec<String> = long
        .iter()
        .map(|(lines, place)| format!("  {place}: {lines} lines"))
        .collect();
    let title = format!(
        "{} functions below {DRIVER_DIRS:?} are longer than {MAX_FN_LINES} lines (from `fn` to its closing \
         brace, `#[cfg(test)]` code and *_tests.rs files left out). Cut each into named steps, or move the work \
         into a library crate and keep the driver to calling it:",
        long.len()
    );
    let longest = long.first().map_or(String::new(), |(lines, place)| {
        format!(", the longest {place} at {lines} lines")
    });
    let summary = format!(
        "{count} functions below {DRIVER_DIRS:?}, {} over {MAX_FN_LINES} lines{longest}",
        long.len()
    );
    verdict(&title, &problems, &summary);
}
