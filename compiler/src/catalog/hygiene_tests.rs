//! Registry hygiene, run as tests: names are unique and exactly matched, every entry is
//! documented, and every entry file has tests of its own.

use super::{SondeCatalog, aggs, builtins, functions, providers};
use sonde_lang::catalog::Catalog;
use std::collections::BTreeSet;

/// Names that are both a builtin (the bare form, `kstack`) and a function (the call form with
/// arguments, `kstack(perf, 10)`). The checker resolves a call with arguments to the function.
const BUILTIN_AND_FUNCTION: &[&str] = &[
    "comm",
    "delta",
    "kstack",
    "leader_comm",
    "leader_tid",
    "nsecs",
    "pcomm",
    "pid",
    "ppid",
    "tid",
    "ustack",
];

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[test]
fn provider_names_and_aliases_do_not_collide() {
    let mut seen = BTreeSet::new();
    for p in providers::ALL {
        assert!(!p.names().is_empty(), "a provider has no name");
        for name in p.names() {
            assert!(
                is_identifier(name),
                "provider name `{name}` is not an identifier"
            );
            assert!(seen.insert(*name), "provider name `{name}` is used twice");
        }
        assert!(
            !p.doc().trim().is_empty(),
            "provider `{}` has no doc",
            p.names()[0]
        );
        assert!(
            p.usage().starts_with(p.names()[0]),
            "usage of `{}` does not start with its name",
            p.names()[0]
        );
    }
}

#[test]
fn builtin_and_function_names_are_unique() {
    let mut builtin_names = BTreeSet::new();
    for b in builtins::ALL {
        assert!(
            is_identifier(b.name()),
            "builtin `{}` is not an identifier",
            b.name()
        );
        assert!(
            builtin_names.insert(b.name()),
            "builtin `{}` is defined twice",
            b.name()
        );
        assert!(
            !b.doc().trim().is_empty(),
            "builtin `{}` has no doc",
            b.name()
        );
    }
    let mut function_names = BTreeSet::new();
    for f in functions::ALL.iter().chain(aggs::ALL.iter()) {
        assert!(
            is_identifier(f.name()),
            "function `{}` is not an identifier",
            f.name()
        );
        assert!(
            function_names.insert(f.name()),
            "function `{}` is defined twice",
            f.name()
        );
        assert!(
            !f.doc().trim().is_empty(),
            "function `{}` has no doc",
            f.name()
        );
        assert!(
            f.signature().starts_with(f.name()),
            "signature of `{}` does not start with its name",
            f.name()
        );
    }
    let both: Vec<&str> = builtin_names
        .intersection(&function_names)
        .copied()
        .collect();
    assert_eq!(
        both, BUILTIN_AND_FUNCTION,
        "names that are both builtins and functions"
    );
}

#[test]
fn catalog_lookups_are_exact() {
    let c = SondeCatalog;
    assert_eq!(c.provider("t").map(|p| p.names()[0]), Some("tracepoint"));
    assert_eq!(c.provider("kfunc").map(|p| p.names()[0]), Some("fentry"));
    assert_eq!(c.provider("begin").map(|p| p.names()[0]), Some("BEGIN"));
    assert!(
        c.provider("trace").is_none(),
        "providers must not match by prefix"
    );
    assert!(c.provider("Tracepoint").is_none());
    assert_eq!(c.builtin("arg3").map(|b| b.name()), Some("arg3"));
    assert_eq!(c.function("printf").map(|f| f.name()), Some("printf"));
    assert_eq!(
        c.provider_backend("ur").map(|p| p.names()[0]),
        Some("uretprobe")
    );
    assert_eq!(c.builtin_backend("comm").map(|b| b.name()), Some("comm"));
    assert_eq!(
        c.function_backend("strftime").map(|f| f.name()),
        Some("strftime")
    );
}

/// Every entry file holds at least one test (helpers and fixtures excepted).
#[test]
fn every_entry_file_has_tests() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/catalog");
    let skip = ["mod.rs", "fixture.rs", "testutil.rs", "perf_table.rs"];
    for dir in ["providers", "builtins", "functions"] {
        let entries = std::fs::read_dir(root.join(dir)).expect("registry directory");
        for entry in entries {
            let path = entry.expect("directory entry").path();
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_string();
            if !name.ends_with(".rs") || skip.contains(&name.as_str()) {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("readable source");
            assert!(text.contains("#[test]"), "{dir}/{name} has no test");
        }
    }
}
