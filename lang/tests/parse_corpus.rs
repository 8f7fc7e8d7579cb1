//! Data-driven parser tests over `grammar/corpus/`.
//!
//! - `accept/NAME.bt` must parse, and its AST dump must equal `accept/NAME.ast`. Run with
//!   `SONDE_BLESS=1` to (re)write the `.ast` golden files after checking the change by eye.
//! - `reject/NAME.bt` must fail to parse. Its first line is `// error: <code> @ <line>:<col>`,
//!   naming the code of the first diagnostic and where its primary span starts.

use sonde_lang::span::line_col;
use sonde_lang::syntax::{dump, parse};
use std::fs;
use std::path::{Path, PathBuf};

/// The `.bt` files of one corpus directory, sorted.
fn snippets(kind: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../grammar/corpus")
        .join(kind);
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "bt"))
        .collect();
    files.sort();
    files
}

#[test]
fn accepted_snippets_match_their_goldens() {
    let bless = std::env::var_os("SONDE_BLESS").is_some();
    let files = snippets("accept");
    assert!(files.len() >= 60, "only {} accepted snippets", files.len());
    let mut failures = Vec::new();
    for path in files {
        let src = fs::read_to_string(&path).unwrap();
        let program = match parse(&src) {
            Ok(p) => p,
            Err(d) => {
                failures.push(format!("{}: rejected: {:?}", path.display(), d));
                continue;
            }
        };
        let text = dump(&program);
        let golden = path.with_extension("ast");
        if bless {
            fs::write(&golden, &text).unwrap();
        } else {
            match fs::read_to_string(&golden) {
                Ok(expected) if expected == text => {}
                Ok(_) => failures.push(format!(
                    "{}: dump differs from golden (SONDE_BLESS=1 rewrites)",
                    path.display()
                )),
                Err(_) => failures.push(format!(
                    "{}: no golden file (run with SONDE_BLESS=1)",
                    path.display()
                )),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn rejected_snippets_report_the_expected_error() {
    let files = snippets("reject");
    assert!(files.len() >= 25, "only {} rejected snippets", files.len());
    let mut failures = Vec::new();
    for path in files {
        let src = fs::read_to_string(&path).unwrap();
        let header = src.lines().next().unwrap_or("");
        let spec = header
            .strip_prefix("// error: ")
            .unwrap_or_else(|| panic!("{}: bad header", path.display()));
        let (code, pos) = spec.split_once(" @ ").unwrap();
        let (line, col) = pos.split_once(':').unwrap();
        let expected = (
            line.parse::<usize>().unwrap(),
            col.parse::<usize>().unwrap(),
        );
        match parse(&src) {
            Ok(_) => failures.push(format!("{}: accepted", path.display())),
            Err(diags) => {
                let first = &diags[0];
                let got = line_col(&src, first.span.start);
                if first.code != code || got != expected {
                    failures.push(format!(
                        "{}: expected {code} @ {}:{}, got {} @ {}:{} ({})",
                        path.display(),
                        expected.0,
                        expected.1,
                        first.code,
                        got.0,
                        got.1,
                        first.message
                    ));
                }
                for d in &diags {
                    assert!(
                        !d.message.is_empty() && !d.label.is_empty() && d.help.is_some(),
                        "{d:?}"
                    );
                    assert!(
                        !d.message.contains("Rule::") && !d.message.contains("_stmt"),
                        "{}",
                        d.message
                    );
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn literal_errors_are_reported_together() {
    let src = "BEGIN { @a = 08; @b = 99999999999999999999; printf(\"\\q\"); }";
    let diags = parse(src).unwrap_err();
    let codes: Vec<&str> = diags.iter().map(|d| d.code).collect();
    assert_eq!(
        codes,
        [
            "sonde::parse::bad_integer",
            "sonde::parse::integer_overflow",
            "sonde::parse::bad_escape"
        ]
    );
    assert_eq!(&src[diags[2].span.start..diags[2].span.end], "\\q");
}

#[test]
fn expression_ids_are_unique_and_sequential() {
    let p = parse("BEGIN { @x[pid] = 1 + 2 * 3; } END /$1/ { printf(\"%d\", @x[1]); }").unwrap();
    let text = format!("{p:?}");
    let mut ids: Vec<u32> = text
        .split("ExprId(")
        .skip(1)
        .map(|s| s[..s.find(')').unwrap()].trim().parse().unwrap())
        .collect();
    ids.sort();
    let n = ids.len() as u32;
    assert_eq!(ids, (0..n).collect::<Vec<_>>());
    assert_eq!(n, 12);
}

#[test]
fn deep_but_allowed_nesting_parses() {
    let depth = 200;
    let src = format!(
        "BEGIN {{ @x = {}1{}; }}",
        "(".repeat(depth),
        ")".repeat(depth)
    );
    assert!(parse(&src).is_ok());
    let blocks = format!("BEGIN {{ {}{} }}", "if (1) { ".repeat(60), "}".repeat(60));
    assert!(parse(&blocks).is_ok(), "{:?}", parse(&blocks).err());
}
