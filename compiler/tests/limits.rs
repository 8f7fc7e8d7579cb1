//! The limits the compiler enforces (docs/reference.md, Limits), through the whole pure
//! pipeline (parse → check → compile) with the real catalog, for both engines: what a script
//! builds in a probe must fit the per-CPU scratch space, and `unroll` must not multiply code
//! without bound. Each case is refused quickly with one diagnostic, or compiles. The maps
//! `delta` creates are sized by `max_map_keys`, the events ring buffer by `perf_rb_pages`; a
//! stack casts to its 64-bit id.

mod common;

use common::compiled;
use sonde_compiler::compile::Engine;
use sonde_compiler::ir::{AluOp, Function, Inst, Operand, Width};
use sonde_compiler::program::{MapKind, MapRole};
use std::time::{Duration, Instant};

/// Compiles `src` for `engine`: the code of the first error (check or compile), if any.
fn first_error(src: &str, engine: Engine) -> Option<&'static str> {
    compiled(src, engine).err()
}

const TOO_LARGE: Option<&str> = Some("sonde::codegen::too_large");

/// (script, the first error's code in both engines).
const CASES: &[(&str, Option<&str>)] = &[
    // A string of 20000 bytes, and the printf event that copies it: 40008 bytes of scratch.
    (
        r#"BEGIN { let $s: string[20000]; printf("%s\n", $s); }"#,
        TOO_LARGE,
    ),
    (
        r#"BEGIN { let $s: string[16000]; printf("%s\n", $s); }"#,
        None,
    ),
    (
        r#"config = { max_strlen = 32768 } BEGIN { $s = str("x"); printf("%s\n", $s); }"#,
        None,
    ),
    // Event buffers share one scratch area: three printf events of 10008 bytes need 10008,
    // not 30024, besides the string's own 10000.
    (
        r#"BEGIN { let $s: string[10000]; printf("%s\n", $s); printf("%s\n", $s); printf("%s\n", $s); }"#,
        None,
    ),
    // 100^4 copies of the body: stopped at the instruction limit, not after 10^8.
    (
        "BEGIN { $i = 0; unroll(100) { unroll(100) { unroll(100) { unroll(100) { $i++; } } } } }",
        TOO_LARGE,
    ),
    (
        "BEGIN { $i = 0; unroll(100) { unroll(100) { $i++; } } }",
        None,
    ),
    // Shifts by constants out of range compile (to 0) in both engines.
    (
        "BEGIN { $a = 5; @x = 1 << 64; @y = $a >> -1; $a <<= 100; @z = $a; }",
        None,
    ),
];

#[test]
fn probes_beyond_the_limits_are_refused_quickly_in_both_engines() {
    for &(src, want) in CASES {
        for engine in [Engine::Bpf, Engine::Jit] {
            let t = Instant::now();
            let got = first_error(src, engine);
            assert_eq!(got, want, "{engine:?}: {src}");
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "{engine:?} took {:?}: {src}",
                t.elapsed()
            );
        }
    }
}

/// A constant shift amount reaches the BPF encoder modulo 64 (the verifier refuses an
/// immediate outside 0..64), as the JIT takes it.
#[test]
fn constant_shift_amounts_are_encoded_modulo_64() {
    for (op, code) in [
        (AluOp::Shl, 0x67u8),
        (AluOp::LShr, 0x77),
        (AluOp::AShr, 0xc7),
    ] {
        let mut f = Function::new("shift");
        let ctx = f.vreg();
        f.params = vec![ctx];
        f.ctx = Some(ctx);
        let (a, d) = (f.vreg(), f.vreg());
        let span = Default::default();
        f.push(
            Inst::Load {
                dst: a,
                base: ctx,
                offset: 0,
                width: Width::W64,
            },
            span,
        );
        f.push(
            Inst::Alu {
                op,
                dst: d,
                lhs: a,
                rhs: Operand::Imm(65),
            },
            span,
        );
        f.push(
            Inst::Return {
                value: Operand::Reg(d),
            },
            span,
        );
        let e = sonde_compiler::codegen::emit::emit(&f).unwrap();
        let shifts: Vec<i32> = e
            .insns
            .iter()
            .filter(|i| i.code == code)
            .map(|i| i.imm)
            .collect();
        assert_eq!(shifts, [1], "{op:?}: {:?}", e.insns);
    }
}

// The maps `delta` creates: one LRU hash per key type, of `max_map_keys` entries.

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
        &[(16, 64), (1032, 64)],
    ),
    (
        "input { @[field(1)] = hist(delta(field(1))); @t = stats(delta); }",
        Engine::Jit,
        &[(16, 4096), (1032, 4096)],
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
        let compiled = compiled(src, *engine).unwrap_or_else(|d| panic!("{src}: {d}"));
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

#[test]
fn perf_rb_pages_sizes_the_events_ring_buffer() {
    let ring = |src: &str| {
        compiled(src, Engine::Bpf)
            .unwrap_or_else(|d| panic!("{src}: {d}"))
            .script
            .maps
            .iter()
            .find(|m| m.kind == MapKind::RingBuf)
            .map(|m| m.max_entries)
    };
    let event = r#"tracepoint:syscalls:sys_enter_openat { printf("%d\n", pid); }"#;
    assert_eq!(ring(event), Some(1 << 20));
    // Pages of 4 KiB, rounded up to the power of two the kernel requires.
    assert_eq!(
        ring(&format!("config = {{ perf_rb_pages = 16384 }} {event}")),
        Some(64 << 20)
    );
    assert_eq!(
        ring(&format!("config = {{ perf_rb_pages = 300 }} {event}")),
        Some(2 << 20)
    );
    assert_eq!(
        first_error(
            &format!("config = {{ perf_rb_pages = 262145 }} {event}"),
            Engine::Bpf
        ),
        Some("sonde::sema::too_large")
    );
}

#[test]
fn a_stack_casts_to_its_64_bit_id() {
    let probe = |body: &str| format!("tracepoint:syscalls:sys_enter_openat {{ {body} }}");
    assert_eq!(
        first_error(&probe("@[(uint64)ustack] = count();"), Engine::Bpf),
        None
    );
    assert_eq!(
        first_error(&probe("@[(uint64)kstack] = count();"), Engine::Bpf),
        None
    );
    assert_eq!(
        first_error(&probe("@[(uint32)ustack] = count();"), Engine::Bpf),
        Some("sonde::sema::invalid_cast")
    );
}
