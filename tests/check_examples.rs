//! Every example script passes `sonde --check` on this machine, every invalid fixture fails
//! it with exit code 1 and a diagnostic (never a panic), and every one-liner passes.
//!
//! Examples that need positional parameters say so in a header line
//! `// check-args: ARG...`; those words are passed after the script for the check.

mod common;

use common::{Output, repo_root, run_sonde};
use std::path::{Path, PathBuf};

/// The `*.sd` files of a directory, sorted.
fn scripts_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "sd"))
        .collect();
    files.sort();
    files
}

/// The positional parameters an example declares with `// check-args:`.
fn check_args(text: &str) -> Vec<String> {
    text.lines()
        .take_while(|l| l.starts_with("//") || l.starts_with("#!") || l.trim().is_empty())
        .find_map(|l| l.strip_prefix("// check-args:"))
        .map(|rest| rest.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

fn describe(what: &str, out: &Output) -> String {
    format!(
        "{what}: exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.code, out.stdout, out.stderr
    )
}

#[test]
fn every_example_passes_check() {
    let files = scripts_in(&repo_root().join("examples"));
    assert!(
        files.len() >= 45,
        "expected at least 45 examples, found {}",
        files.len()
    );
    let mut failures = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let extra = check_args(&text);
        let mut args = vec!["--check".to_string(), file.to_str().unwrap().to_string()];
        args.extend(extra);
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run_sonde(&argv);
        if out.code != Some(0) || out.stderr.contains("panicked") {
            failures.push(describe(&file.display().to_string(), &out));
        }
    }
    assert!(
        failures.is_empty(),
        "{} example(s) failed --check:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_example_has_a_header_comment() {
    for file in scripts_in(&repo_root().join("examples")) {
        let text = std::fs::read_to_string(&file).unwrap();
        let header: Vec<&str> = text
            .lines()
            .take_while(|l| l.starts_with("//") || l.starts_with("#!"))
            .collect();
        assert!(
            header.len() >= 3,
            "{}: header comment too short",
            file.display()
        );
        let joined = header.join("\n").to_lowercase();
        assert!(
            joined.contains("probes:"),
            "{}: header must name its probes",
            file.display()
        );
        assert!(
            joined.contains("example output"),
            "{}: header must show example output",
            file.display()
        );
    }
}

#[test]
fn every_invalid_fixture_fails_check_with_a_diagnostic() {
    let files = scripts_in(&repo_root().join("tests/fixtures/invalid"));
    assert!(
        files.len() >= 15,
        "expected at least 15 invalid fixtures, found {}",
        files.len()
    );
    let mut failures = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        assert!(
            text.starts_with("// error: "),
            "{}: first line must be `// error: ...`",
            file.display()
        );
        let out = run_sonde(&["--check", file.to_str().unwrap()]);
        if out.code != Some(1) || out.stderr.trim().is_empty() || out.stderr.contains("panicked") {
            failures.push(describe(&file.display().to_string(), &out));
        }
    }
    assert!(
        failures.is_empty(),
        "{} fixture(s) misbehaved:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The one-liners: each non-comment line is a program for `sonde -e`, with a `#` comment
/// line above it.
fn one_liners() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(repo_root().join("examples/one-liners.txt")).unwrap();
    let mut out = Vec::new();
    let mut comment = None;
    for line in text.lines() {
        if let Some(c) = line.strip_prefix('#') {
            comment = Some(c.trim().to_string());
        } else if !line.trim().is_empty() {
            let c = comment
                .take()
                .unwrap_or_else(|| panic!("one-liner without a comment line: {line}"));
            out.push((c, line.to_string()));
        }
    }
    out
}

#[test]
fn every_one_liner_passes_check() {
    let liners = one_liners();
    assert!(
        liners.len() >= 40,
        "expected at least 40 one-liners, found {}",
        liners.len()
    );
    let mut failures = Vec::new();
    for (comment, prog) in &liners {
        let out = run_sonde(&["--check", "-e", prog]);
        if out.code != Some(0) || out.stderr.contains("panicked") {
            failures.push(describe(&format!("{comment}: {prog}"), &out));
        }
    }
    assert!(
        failures.is_empty(),
        "{} one-liner(s) failed --check:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Every example and one-liner compiles, passes the kernel's verifier and attaches
/// (`--dry-run`): checking alone would not catch a program the kernel rejects.
#[test]
fn every_example_and_one_liner_loads_and_attaches() {
    if common::skip_unless_root("every_example_and_one_liner_loads_and_attaches") {
        return;
    }
    let mut failures = Vec::new();
    for file in scripts_in(&repo_root().join("examples")) {
        let text = std::fs::read_to_string(&file).unwrap();
        let mut args = vec![
            "--dry-run".to_string(),
            "-q".to_string(),
            file.to_str().unwrap().to_string(),
        ];
        args.extend(check_args(&text));
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run_sonde(&argv);
        if out.code != Some(0) {
            failures.push(describe(&file.display().to_string(), &out));
        }
    }
    for (comment, prog) in one_liners() {
        let out = run_sonde(&["--dry-run", "-q", "-e", &prog]);
        if out.code != Some(0) {
            failures.push(describe(&format!("{comment}: {prog}"), &out));
        }
    }
    assert!(
        failures.is_empty(),
        "{} script(s) failed to load:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
