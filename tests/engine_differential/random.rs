//! `random_scripts_print_the_same_in_both_engines` runs a few hundred scripts made by the
//! seeded [`crate::generator`] (see there for what they hold and why their output depends on
//! nothing but the script). A generated script must also run in the reference engine with the
//! exit status it asks for; only scripts the kernel engine refuses for its resource limits
//! are counted as skipped, and a few percent at most may be.
//!
//! Knobs: `SONDE_DIFF_SEED` (first seed), `SONDE_DIFF_N` (number of scripts),
//! `SONDE_DIFF_DUMP=DIR` (write every script and its arguments to DIR).

use crate::common::skip_unless_root;
use crate::compare::{compare, report, run_all};
use crate::generator::Gen;
use std::time::Instant;

/// Number of generated scripts (`SONDE_DIFF_N` overrides it).
const SCRIPTS: usize = 300;

/// Every `JSON_EVERY`-th script also runs with `-f json`.
const JSON_EVERY: usize = 6;

/// The exit code `exit(N)` asks for in a generated script (the last `exit` of BEGIN).
fn expected_code(script: &str) -> i32 {
    let Some(i) = script.rfind("exit(") else {
        return 0;
    };
    let rest = &script[i + 5..];
    rest[..rest.find(')').unwrap_or(0)].parse().unwrap_or(0)
}

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn random_scripts_print_the_same_in_both_engines() {
    if skip_unless_root("random_scripts_print_the_same_in_both_engines") {
        return;
    }
    let seed0 = env_num("SONDE_DIFF_SEED", 1);
    let n = env_num("SONDE_DIFF_N", SCRIPTS as u64) as usize;
    let dump = std::env::var_os("SONDE_DIFF_DUMP").map(std::path::PathBuf::from);
    let scripts: Vec<(u64, String, Vec<String>)> = (0..n as u64)
        .map(|k| {
            let seed = seed0 + k;
            let (s, a) = Gen::new(seed).script();
            (seed, s, a)
        })
        .collect();
    if let Some(dir) = &dump {
        std::fs::create_dir_all(dir).unwrap();
        for (seed, s, a) in &scripts {
            std::fs::write(dir.join(format!("{seed}.sd")), s).unwrap();
            std::fs::write(dir.join(format!("{seed}.args")), a.join(" ")).unwrap();
        }
    }
    let start = Instant::now();
    let outcomes = run_all(&scripts, |(seed, script, args)| {
        let code = Some(expected_code(script));
        let mut o = vec![compare(&format!("seed {seed}"), script, &[], args, code)];
        if seed.is_multiple_of(JSON_EVERY as u64) {
            o.push(compare(
                &format!("seed {seed} (-f json)"),
                script,
                &["-f", "json"],
                args,
                code,
            ));
        }
        o
    });
    eprintln!(
        "{n} scripts (seeds {seed0}..{}) in {:.1?}",
        seed0 + n as u64,
        start.elapsed()
    );
    report(outcomes, "generated scripts", n / 20);
}
