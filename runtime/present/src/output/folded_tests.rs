//! Folded lines from decoded maps, with a fake resolver whose stacks are fixed strings (the
//! flame graph drawn from them is tested in `crate::pictures::flame`).

use super::*;
use sonde_compiler::value::{AggValue, Frame, Stack};
use sonde_lang::types::{AggKind, StackMode, Type};

/// Resolves stack ids 1.. to fixed folded texts (kernel and user differ).
#[derive(Clone)]
struct FakeStacks;

impl Resolver for FakeStacks {
    fn stack(&self, kernel: bool, raw: u64, _limit: u32) -> Option<Vec<Frame>> {
        let folded = match (kernel, raw) {
            (true, 1) => "entry_SYSCALL_64;do_syscall_64;__x64_sys_getppid",
            (true, _) => "",
            (false, 1) => "_start;main;busy",
            (false, 2) => "_start;main;busy",
            (false, _) => "_start;main;idle",
        };
        // Innermost frame first, each `func+off` as resolved stacks are.
        Some(
            folded
                .split(';')
                .filter(|n| !n.is_empty())
                .rev()
                .map(|n| Frame {
                    addr: 0,
                    symbol: Some(format!("{n}+4")),
                    module: None,
                    ..Frame::default()
                })
                .collect(),
        )
    }
}

fn sid(kernel: bool, raw: u64) -> Value {
    Value::StackId {
        kernel,
        mode: StackMode::Bpftrace,
        limit: 127,
        raw,
    }
}

fn count(n: u64) -> Value {
    Value::Agg(AggValue::Count(n))
}

fn comm(s: &str) -> Value {
    Value::Str(s.as_bytes().to_vec())
}

fn dump(entries: Vec<(Value, Value)>) -> MapDump {
    MapDump {
        name: String::new(),
        value_type: Type::Agg(AggKind::Count),
        entries,
    }
}

#[test]
fn comm_then_user_then_kernel_frames_with_equal_lines_summed() {
    // @[kstack, ustack, comm] = count(): user stacks 1 and 2 fold the same (two offsets of
    // one function); a kernel stack missing in user mode (id 9) leaves only the user part.
    let m = dump(vec![
        (
            Value::Tuple(vec![sid(true, 1), sid(false, 1), comm("app")]),
            count(5),
        ),
        (
            Value::Tuple(vec![sid(true, 9), sid(false, 2), comm("app")]),
            count(3),
        ),
        (
            Value::Tuple(vec![sid(true, 9), sid(false, 1), comm("app")]),
            count(4),
        ),
        (
            Value::Tuple(vec![sid(true, 9), sid(false, 3), comm("app")]),
            count(2),
        ),
        (
            Value::Tuple(vec![sid(true, 9), sid(false, 3), comm("zero")]),
            count(0),
        ),
    ]);
    assert_eq!(
        folded_lines(&m, &FakeStacks).unwrap(),
        vec![
            "app;_start;main;busy 7",
            "app;_start;main;busy;entry_SYSCALL_64;do_syscall_64;__x64_sys_getppid 5",
            "app;_start;main;idle 2",
        ]
    );
}

#[test]
fn integer_values_and_resolved_stacks_fold_too() {
    // @[ustack] = sum(...) / plain integers; a Stack already resolved to func+off frames.
    let frame = |sym: Option<&str>, addr| Frame {
        addr,
        symbol: sym.map(String::from),
        module: None,
        ..Frame::default()
    };
    let resolved = Value::Stack(Stack {
        kernel: false,
        mode: StackMode::Bpftrace,
        frames: vec![
            frame(Some("leaf+4"), 0x10),
            frame(None, 0xabc),
            frame(Some("main+30"), 0x30),
        ],
    });
    let m = MapDump {
        name: "t".into(),
        value_type: Type::Int {
            bits: 64,
            signed: true,
        },
        entries: vec![
            (resolved, Value::Int(12)),
            (
                Value::Tuple(vec![Value::Int(42), sid(false, 3)]),
                Value::UInt(1),
            ),
        ],
    };
    assert_eq!(
        folded_lines(&m, &FakeStacks).unwrap(),
        vec!["42;_start;main;idle 1", "main;0xabc;leaf 12"]
    );
}

#[test]
fn maps_without_stacks_or_with_histograms_do_not_fold() {
    let plain = dump(vec![(comm("app"), count(1))]);
    assert_eq!(folded_lines(&plain, &FakeStacks), None);
    let hist = dump(vec![(
        sid(false, 1),
        Value::Agg(AggValue::Hist {
            bits: 0,
            buckets: vec![1],
            sum: 0,
        }),
    )]);
    assert_eq!(folded_lines(&hist, &FakeStacks), None);
    assert_eq!(folded_lines(&dump(Vec::new()), &FakeStacks), None);
}

#[test]
fn printer_folds_stack_maps_and_prints_others_as_text() {
    let mut p = FoldedPrinter::new(Vec::new(), FakeStacks);
    p.printf(b"Sampling...\n").unwrap();
    p.exit_maps(&[
        dump(vec![(
            Value::Tuple(vec![sid(false, 1), comm("app")]),
            count(2),
        )]),
        MapDump {
            name: "n".into(),
            value_type: Type::Agg(AggKind::Count),
            entries: vec![(Value::None, count(3))],
        },
    ])
    .unwrap();
    let out = String::from_utf8(p.text.into_inner()).unwrap();
    assert_eq!(out, "Sampling...\napp;_start;main;busy 2\n@n: 3\n");
}
