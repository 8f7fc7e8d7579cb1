//! Golden tests for the text printer; every expected string was printed by bpftrace 0.17 for
//! the script in the comment above it.

use super::super::{MapDump, NoResolver, PrintOpts, Printer};
use super::*;
use sonde_compiler::value::Stack;

fn s(x: &str) -> Value {
    Value::Str(x.as_bytes().to_vec())
}

fn render(f: impl FnOnce(&mut TextPrinter<Vec<u8>, NoResolver>) -> io::Result<()>) -> String {
    let mut p = TextPrinter::new(Vec::new(), NoResolver);
    f(&mut p).unwrap();
    String::from_utf8(p.into_inner()).unwrap()
}

fn count(n: u64) -> Value {
    Value::Agg(AggValue::Count(n))
}

fn map(name: &str, ty: Type, entries: Vec<(Value, Value)>) -> MapDump {
    MapDump {
        name: name.into(),
        value_type: ty,
        entries,
    }
}

#[test]
fn exit_maps_in_name_order() {
    // BEGIN { @b = count(); @a = count(); @c[5]=count(); @c[3]=count(); @c[3]=count(); exit(); }
    let maps = vec![
        map(
            "b",
            Type::Agg(AggKind::Count),
            vec![(Value::None, count(1))],
        ),
        map(
            "a",
            Type::Agg(AggKind::Count),
            vec![(Value::None, count(1))],
        ),
        map(
            "c",
            Type::Agg(AggKind::Count),
            vec![(Value::Int(3), count(2)), (Value::Int(5), count(1))],
        ),
    ];
    assert_eq!(
        render(|p| p.exit_maps(&maps)),
        "\n\n@a: 1\n@b: 1\n@c[5]: 1\n@c[3]: 2\n"
    );
}

#[test]
fn keys_and_values() {
    // @k2[1,"a b"] = 2; @n[-5] = (uint64)-1; @nest = (1, (2, "x")); @bo = 1==1; @s = "hello"
    let out = render(|p| {
        let tuple_key = Value::Tuple(vec![Value::Int(1), s("a b")]);
        p.map(
            &map("k2", Type::I64, vec![(tuple_key, Value::Int(2))]),
            PrintOpts::default(),
        )?;
        p.map(
            &map(
                "n",
                Type::U64,
                vec![(Value::Int(-5), Value::UInt(u64::MAX))],
            ),
            PrintOpts::default(),
        )?;
        let nest = Value::Tuple(vec![
            Value::Int(1),
            Value::Tuple(vec![Value::Int(2), s("x")]),
        ]);
        p.map(
            &map("nest", Type::Void, vec![(Value::None, nest)]),
            PrintOpts::default(),
        )?;
        p.map(
            &map("bo", Type::Bool, vec![(Value::None, Value::Bool(true))]),
            PrintOpts::default(),
        )?;
        p.map(
            &map("s", Type::Str { size: 64 }, vec![(Value::None, s("hello"))]),
            PrintOpts::default(),
        )
    });
    assert_eq!(
        out,
        "@k2[1, a b]: 2\n@n[-5]: 18446744073709551615\n@nest: (1, (2, x))\n@bo: true\n@s: hello\n"
    );
}

/// bpftrace 0.26 prints no empty line after `avg` and `stats` maps (0.17 did).
#[test]
fn averages_and_stats_are_not_followed_by_a_blank_line() {
    // @ka["x"]=avg(10); @ka["y"]=avg(3); @s=stats(1); @s=stats(2); @s=stats(4)
    let avg = |sum, count| {
        Value::Agg(AggValue::Avg {
            sum,
            count,
            signed: true,
        })
    };
    let out = render(|p| {
        let m = map(
            "ka",
            Type::Agg(AggKind::Avg { signed: true }),
            vec![(s("x"), avg(10, 1)), (s("y"), avg(3, 1))],
        );
        p.map(&m, PrintOpts::default())?;
        let st = Value::Agg(AggValue::Stats {
            count: 3,
            sum: 7,
            signed: true,
        });
        p.map(
            &map(
                "s",
                Type::Agg(AggKind::Stats { signed: true }),
                vec![(Value::None, st)],
            ),
            PrintOpts::default(),
        )
    });
    assert_eq!(
        out,
        "@ka[y]: 3\n@ka[x]: 10\n@s: { .count = 3, .average = 2, .total = 7 }\n"
    );
}

#[test]
fn empty_maps_print_nothing() {
    // bpftrace 0.26 (its src/output/text.cpp prints a map entry by entry; 0.17 printed an
    // empty line): @e[1] = 1; clear(@e); @a[1] = avg(1); clear(@a); @h[1] = hist(1);
    // clear(@h); @s = 1; delete(@s); print() of each.
    let out = render(|p| {
        p.map(&map("s", Type::I64, vec![]), PrintOpts::default())?;
        p.map(&map("e", Type::I64, vec![]), PrintOpts::default())?;
        p.map(
            &map("a", Type::Agg(AggKind::Avg { signed: true }), vec![]),
            PrintOpts::default(),
        )?;
        p.map(
            &map("h", Type::Agg(AggKind::Hist { bits: 0 }), vec![]),
            PrintOpts::default(),
        )
    });
    assert_eq!(out, "");
}

fn hist(values: &[i64]) -> Value {
    Value::Agg(crate::output::testing::hist(values))
}

#[test]
fn keyed_histograms() {
    // @h[3]=hist(3); @h[1]=hist(10); @h[1]=hist(10); @h[1]=hist(100); @h[2]=hist(-1)
    let m = map(
        "h",
        Type::Agg(AggKind::Hist { bits: 0 }),
        vec![
            (Value::Int(1), hist(&[10, 10, 100])),
            (Value::Int(3), hist(&[3])),
            (Value::Int(2), hist(&[-1])),
        ],
    );
    let expected = "\
@h[2]:
(..., 0)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|

@h[3]:
[2, 4)                 1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|

@h[1]:
[8, 16)                2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|
[16, 32)               0 |                                                    |
[32, 64)               0 |                                                    |
[64, 128)              1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |

";
    assert_eq!(render(|p| p.map(&m, PrintOpts::default())), expected);
}

#[test]
fn print_with_top_and_div() {
    // @c[1]=count() x1, @c[2] x2, @c[3] x3; print(@c, 2); print(@c, 0, 2); @s[1]=sum(-7);
    // @s[2]=sum(9); print(@s, 0, 2)
    let ty = Type::Agg(AggKind::Count);
    let m = map(
        "c",
        ty,
        vec![
            (Value::Int(3), count(3)),
            (Value::Int(1), count(1)),
            (Value::Int(2), count(2)),
        ],
    );
    let sum = |v| {
        Value::Agg(AggValue::Sum {
            value: v,
            signed: true,
        })
    };
    let sm = map(
        "s",
        Type::Agg(AggKind::Sum { signed: true }),
        vec![(Value::Int(1), sum(-7)), (Value::Int(2), sum(9))],
    );
    let out = render(|p| {
        p.map(&m, PrintOpts { top: 2, div: 1 })?;
        p.map(&m, PrintOpts { top: 0, div: 2 })?;
        p.map(&sm, PrintOpts { top: 0, div: 2 })
    });
    assert_eq!(
        out,
        "@c[2]: 2\n@c[3]: 3\n@c[1]: 0\n@c[2]: 1\n@c[3]: 1\n@s[1]: -3\n@s[2]: 4\n"
    );
}

#[test]
fn values_and_stacks() {
    // print(5); print("abc"); print((1,"x")); print(ksym(1234))
    let out = render(|p| {
        p.value(&Value::Int(5))?;
        p.value(&s("abc"))?;
        p.value(&Value::Tuple(vec![Value::Int(1), s("x")]))?;
        p.value(&Value::Symbol {
            kernel: true,
            addr: 1234,
            pid: 0,
            name: None,
        })
    });
    assert_eq!(out, "5\nabc\n(1, x)\n0x4d2\n");
    let frame = |sym: &str| Frame {
        addr: 1,
        symbol: Some(sym.into()),
        module: None,
        ..Frame::default()
    };
    let st = Value::Stack(Stack {
        kernel: true,
        mode: StackMode::Bpftrace,
        frames: vec![frame("perf_syscall_enter+397"), frame("do_syscall_64+506")],
    });
    // print(kstack) in a tracepoint, and @s[kstack] = count().
    assert_eq!(
        render(|p| p.value(&st)),
        "\n        perf_syscall_enter+397\n        do_syscall_64+506\n\n"
    );
    let m = map("s", Type::Agg(AggKind::Count), vec![(st, count(36))]);
    assert_eq!(
        render(|p| p.map(&m, PrintOpts::default())),
        "@s[\n    perf_syscall_enter+397\n    do_syscall_64+506\n]: 36\n"
    );
}

/// `cgroup_path()` of an id no hierarchy has prints empty (bpftrace), not the id.
#[test]
fn an_unknown_cgroup_prints_empty() {
    let v = |filter: Option<&str>| Value::CgroupPath {
        id: 12345678,
        filter: filter.map(Into::into),
    };
    assert_eq!(render(|p| p.value(&v(None))), "\n");
    assert_eq!(render(|p| p.value(&v(Some("unified")))), "\n");
}

/// The text output carries no attach line (sonde prints "Attached N probes" on stderr).
#[test]
fn no_attaching_line_in_the_text_output() {
    assert_eq!(render(|p| p.attached(2)), "");
}

#[test]
fn logs_go_to_the_output_only_when_inline() {
    // `errorf` in a `--test` test: its line is part of the captured output.
    let span = Span::new(0, 4);
    let mut p = TextPrinter::new(Vec::new(), NoResolver).with_logs_inline();
    p.log(true, "bad 1", span).unwrap();
    p.printf(b"after\n").unwrap();
    let text = String::from_utf8(p.into_inner()).unwrap();
    let (located, rest) = text.split_once(": ERROR: ").unwrap();
    // (The place names the registered script, which other tests may set.)
    assert!(located.contains(":1:1-"), "{text}");
    assert_eq!(rest, "bad 1\nafter\n");
    // Otherwise it goes to stderr, and the output has nothing of it.
    assert_eq!(render(|p| p.log(true, "bad 1", span)), "");
}
