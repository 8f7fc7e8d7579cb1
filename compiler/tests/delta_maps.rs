//! The maps `delta` creates, through the whole pure pipeline (parse → check → compile) with
//! the real catalog, for both engines: one LRU hash per key type, of `max_map_keys` entries.

use sonde_compiler::catalog::SondeCatalog;
use sonde_compiler::compile::{Engine, compile_for};
use sonde_compiler::options::CompileOptions;
use sonde_compiler::program::{MapKind, MapRole};
use sonde_lang::ast::Program;
use sonde_lang::sema::{CheckOptions, Checked, check};
use sonde_lang::syntax::parse;
use sonde_lang::testing::FixtureKernel;

fn checked(src: &str) -> (Program, Checked) {
    let program = parse(src).unwrap_or_else(|d| panic!("{src}: {d:#?}"));
    let (checked, diags) = check(
        &program,
        &SondeCatalog,
        &FixtureKernel,
        &CheckOptions::default(),
    );
    let errors: Vec<_> = diags.iter().filter(|d| d.is_error()).collect();
    assert!(errors.is_empty(), "{src}: {errors:#?}");
    (program, checked)
}

/// A script, the engine it is compiled for, and the delta maps it has (key size and
/// elements, in creation order).
type MapCase = (&'static str, Engine, &'static [(u32, u32)]);

const MAPS: &[MapCase] = &[
    // The card's line: the probe's index and the thread id.
    (
        "kprobe:vfs_read { @[comm] = hist(delta) }",
        Engine::Bpf,
        &[(16, 4096)],
    ),
    (
        "config = { max_map_keys = 64 } tracepoint:syscalls:sys_enter_openat { @[args.dfd] = hist(delta(args.dfd)); @s = stats(delta(str(args.filename))); @t = stats(delta(args.flags)); }",
        Engine::Bpf,
        &[(16, 64), (72, 64)],
    ),
    (
        "input { @[field(1)] = hist(delta(field(1))); @t = stats(delta); }",
        Engine::Jit,
        &[(16, 4096), (72, 4096)],
    ),
    (
        "BEGIN { @a = stats(delta((pid, comm))); } END { @b = stats(delta((pid, comm))); }",
        Engine::Bpf,
        &[(32, 4096)],
    ),
    ("BEGIN { $delta = 1; @delta = $delta; }", Engine::Bpf, &[]),
    (
        "#define delta 5\nBEGIN { @x = delta; @y = delta(); }",
        Engine::Jit,
        &[],
    ),
    (
        "macro delta(x) { x + 1 }\nBEGIN { @x = delta(2); }",
        Engine::Bpf,
        &[],
    ),
];

#[test]
fn delta_maps_are_lru_hashes_of_max_map_keys() {
    for (src, engine, want) in MAPS {
        let (program, checked) = checked(src);
        let opts = CompileOptions {
            ncpus: 2,
            ..Default::default()
        };
        let compiled = compile_for(&program, &checked, &FixtureKernel, &opts, *engine)
            .unwrap_or_else(|d| panic!("{src}: {d:#?}"));
        let have: Vec<(u32, u32)> = compiled
            .script
            .maps
            .iter()
            .filter(|m| m.role == MapRole::Delta)
            .inspect(|m| assert_eq!((m.kind, m.value_size), (MapKind::LruHash, 16), "{src}"))
            .map(|m| (m.key_size, m.max_entries))
            .collect();
        assert_eq!(have, *want, "{src}");
    }
}
