//! A bounded fuzz run of the whole pure pipeline (parse → check → compile) with the real
//! catalog: mutations of the example scripts and of the grammar corpus must never panic, and a
//! rejected input always comes with at least one error diagnostic.

use sonde_compiler::catalog::SondeCatalog;
use sonde_compiler::compile::compile;
use sonde_compiler::options::CompileOptions;
use sonde_lang::sema::{CheckOptions, check};
use sonde_lang::syntax::parse;
use sonde_lang::testing::{FixtureKernel, Rng};
use std::path::Path;

/// Runs the pipeline; panics (failing the test) only through sonde's own panics.
fn pipeline(src: &str) {
    let program = match parse(src) {
        Ok(p) => p,
        Err(d) => {
            assert!(!d.is_empty(), "parse rejected {src:?} without a diagnostic");
            return;
        }
    };
    let options = CheckOptions {
        positional: vec!["1".into(), "x".into()],
        unsafe_allowed: true,
        ..Default::default()
    };
    let (checked, diags) = check(&program, &SondeCatalog, &FixtureKernel, &options);
    if diags.iter().any(|d| d.is_error()) {
        return;
    }
    let copts = CompileOptions {
        positional: options.positional.clone(),
        ncpus: 2,
        ..Default::default()
    };
    if let Err(d) = compile(&program, &checked, &FixtureKernel, &copts) {
        assert!(
            !d.is_empty(),
            "compile rejected {src:?} without a diagnostic"
        );
    }
}

fn seeds() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out = Vec::new();
    for dir in ["examples", "grammar/corpus/accept"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        let mut paths: Vec<_> = entries.flatten().map(|e| e.path()).collect();
        paths.sort();
        for p in paths {
            if matches!(p.extension().and_then(|e| e.to_str()), Some("sd" | "bt")) {
                out.push(std::fs::read_to_string(&p).unwrap_or_default());
            }
        }
    }
    out
}

#[test]
fn seeds_and_their_mutations_never_panic() {
    let seeds = seeds();
    assert!(
        seeds.len() > 50,
        "expected the examples and corpus as seeds"
    );
    let mut rng = Rng(0x5eed_cafe_f00d_1234);
    for seed in &seeds {
        pipeline(seed);
        for _ in 0..20 {
            let mut m = seed.as_bytes().to_vec();
            for _ in 0..1 + rng.below(4) {
                if m.is_empty() {
                    break;
                }
                let i = rng.below(m.len());
                match rng.below(4) {
                    0 => {
                        m.remove(i);
                    }
                    1 => m.insert(i, b"{}()[]/;:\"$@.-*+<>=!&|0x9"[rng.below(25)]),
                    2 => m.truncate(i),
                    _ => m[i] = rng.next_u64() as u8,
                }
            }
            pipeline(&String::from_utf8_lossy(&m));
        }
    }
}
