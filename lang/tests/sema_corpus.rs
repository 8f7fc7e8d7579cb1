//! The checker never panics: every script of the grammar's accepted corpus is checked with
//! the fake catalog (diagnostics are expected for probe types the fake catalog lacks).

use sonde_lang::sema::{CheckOptions, check};
use sonde_lang::testing::{FakeCatalog, FixtureKernel};

#[test]
fn accepted_corpus_checks_without_panicking() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../grammar/corpus/accept");
    let mut checked = 0;
    for entry in std::fs::read_dir(dir).expect("corpus directory") {
        let path = entry.expect("corpus entry").path();
        let Ok(src) = std::fs::read_to_string(&path) else {
            continue;
        };
        let Ok(program) = sonde_lang::syntax::parse(&src) else {
            continue;
        };
        let options = CheckOptions {
            positional: vec!["1".into(), "x".into()],
            unsafe_allowed: false,
            ..Default::default()
        };
        let (_, diags) = check(&program, &FakeCatalog, &FixtureKernel, &options);
        for d in &diags {
            assert!(
                d.span.end <= src.len(),
                "{}: span out of range in {d:?}",
                path.display()
            );
            assert!(
                d.code.starts_with("sonde::"),
                "{}: bad code {}",
                path.display(),
                d.code
            );
        }
        checked += 1;
    }
    assert!(checked > 0, "no corpus script parsed");
}

/// Prints the diagnostics per corpus file (run with `--ignored --nocapture` to review).
#[test]
#[ignore]
fn show_corpus_diagnostics() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../grammar/corpus/accept");
    for entry in std::fs::read_dir(dir).expect("corpus directory") {
        let path = entry.expect("corpus entry").path();
        let Ok(src) = std::fs::read_to_string(&path) else {
            continue;
        };
        let Ok(program) = sonde_lang::syntax::parse(&src) else {
            continue;
        };
        let (_, diags) = check(
            &program,
            &FakeCatalog,
            &FixtureKernel,
            &CheckOptions::default(),
        );
        for d in diags {
            let text = src.get(d.span.start..d.span.end).unwrap_or("");
            println!("{}: {} `{text}` {}", path.display(), d.code, d.message);
        }
    }
}
