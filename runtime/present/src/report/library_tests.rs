//! Each library function, called from rhai on known values.

use super::super::{Post, PostOptions};
use super::*;
use crate::output::{NoResolver, PrintOpts};
use sonde_compiler::value::{AggValue, Value};
use sonde_lang::types::{AggKind, Type};

/// What `code` (the body of `on_end(maps)`) prints with `table` as the maps.
fn run(code: &str, table: Vec<Printed>) -> Result<String, String> {
    let src = format!("fn on_end(maps) {{\n{code}\n}}");
    let mut p = Post::compile(&src, PostOptions::default()).map_err(|d| d.message)?;
    let r = p.on_maps(true, table, &NoResolver);
    let text = p
        .take_output()
        .into_iter()
        .map(|c| match c {
            Chunk::Text(t) => t,
            Chunk::Map(d, _) => format!("<map {}>", d.name),
            Chunk::ExitMaps(d) => format!("<exit maps {}>", d.len()),
        })
        .collect();
    r.map(|()| text).map_err(|d| d.message)
}

fn ok(code: &str) -> String {
    run(code, Vec::new()).unwrap_or_else(|e| panic!("{e}"))
}

/// A `hist()` map of `values`.
fn hist(name: &str, values: &[i64]) -> Printed {
    Printed::new(
        MapDump {
            name: name.into(),
            value_type: Type::Agg(AggKind::Hist { bits: 0 }),
            entries: vec![(
                Value::None,
                Value::Agg(crate::output::testing::hist(values)),
            )],
        },
        PrintOpts::default(),
        false,
    )
}

fn sums(name: &str, entries: &[(&str, i64)]) -> Printed {
    Printed::new(
        MapDump {
            name: name.into(),
            value_type: Type::Agg(AggKind::Sum { signed: true }),
            entries: entries
                .iter()
                .map(|(k, v)| {
                    (
                        Value::Str(k.as_bytes().to_vec()),
                        Value::Agg(AggValue::Sum {
                            value: *v,
                            signed: true,
                        }),
                    )
                })
                .collect(),
        },
        PrintOpts::default(),
        true,
    )
}

#[test]
fn percentile_lies_in_the_bucket_of_its_rank() {
    // 90 values in [1K, 2K), 9 in [64K, 128K), 1 in [1M, 2M).
    let mut values = vec![1500; 90];
    values.extend([100_000; 9]);
    values.push(1_500_000);
    let t = || vec![hist("h", &values)];
    let p = |q: &str| run(&format!("print(percentile(maps[\"@h\"], {q}));"), t()).unwrap();
    let v = |s: String| s.trim().parse::<i64>().unwrap();
    assert!((1024..2048).contains(&v(p("50"))), "{}", p("50"));
    assert!((1024..2048).contains(&v(p("90"))), "{}", p("90"));
    assert!((65536..131072).contains(&v(p("99"))), "{}", p("99"));
    assert!((1 << 20..2 << 20).contains(&v(p("100"))), "{}", p("100"));
    assert!((1024..2048).contains(&v(p("0"))), "{}", p("0"));
    assert!((65536..131072).contains(&v(p("98.5"))), "{}", p("98.5"));
    assert!((1 << 20..2 << 20).contains(&v(p("99.5"))), "{}", p("99.5"));
    // Ranks spread evenly inside a bucket: p50 of 90 values in [1K, 2K) is near its middle.
    assert_eq!(v(p("50")), 1024 + 1024 * 50 / 91);
    // A bucket one value wide holds its value; an open-ended bucket gives its bound.
    assert_eq!(
        run(
            "print(percentile(maps[\"@h\"], 50));",
            vec![hist("h", &[1, 1])]
        )
        .unwrap(),
        "1\n"
    );
    assert_eq!(
        run(
            "print(percentile(maps[\"@h\"], 50));",
            vec![hist("h", &[-5])]
        )
        .unwrap(),
        "-1\n"
    );
    assert_eq!(
        run("print(percentile(maps[\"@h\"], 50));", vec![hist("h", &[])]).unwrap(),
        "\n"
    );
    assert!(ok("print(percentile([], 50));") == "\n");
    let e = run("percentile(maps[\"@h\"], 101);", t()).unwrap_err();
    assert!(e.contains("p must be from 0 to 100"), "{e}");
    let e = ok_err("percentile([1, 2], 50);");
    assert!(e.contains("expects a histogram"), "{e}");
}

#[test]
fn percentile_of_huge_counts_does_not_panic() {
    // A count beyond a u64's is taken as a u64's; the value stays inside its bucket.
    assert_eq!(
        ok("print(percentile([#{lo:0,hi:10,count:1e300}], 50));"),
        "5\n"
    );
    assert_eq!(
        ok("print(percentile([#{lo:0,hi:10,count:1e300}], 100));"),
        "9\n"
    );
    // Several such buckets: their total does not overflow.
    let two = "[#{lo:0,hi:10,count:1e300}, #{lo:10,hi:20,count:1e300}]";
    assert_eq!(ok(&format!("print(percentile({two}, 50));")), "10\n");
    assert_eq!(ok(&format!("print(percentile({two}, 75));")), "15\n");
    // The widest bucket with the largest counts: width times rank is past an i128.
    let wide = format!(
        "print(percentile([#{{lo:{},hi:{},count:1.8e19}}], 100));",
        i64::MIN + 1,
        i64::MAX
    );
    let v: i64 = ok(&wide).trim().parse().unwrap();
    assert!(v > i64::MAX / 2, "{v}");
}

fn ok_err(code: &str) -> String {
    run(code, Vec::new()).expect_err("should fail")
}

#[test]
fn top_and_sort_by_value() {
    let t = || vec![sums("s", &[("a", 5), ("b", -2), ("c", 9), ("d", 5)])];
    assert_eq!(
        run("print(top(maps[\"@s\"], 2));", t()).unwrap(),
        "[#{\"key\": \"c\", \"value\": 9}, #{\"key\": \"a\", \"value\": 5}]\n"
    );
    assert_eq!(
        run("print(top(maps[\"@s\"], 0).len());", t()).unwrap(),
        "0\n"
    );
    assert_eq!(
        run("print(top(maps[\"@s\"], 10).len());", t()).unwrap(),
        "4\n"
    );
    assert_eq!(
        run(
            "for r in sort_by_value(maps[\"@s\"]) { print(r.key); }",
            t()
        )
        .unwrap(),
        "b\na\nd\nc\n"
    );
    // Histograms weigh their total count.
    let h = |name: &str, n: usize| (name.to_string(), vec![7i64; n]);
    let entries: Vec<(Value, Value)> = [h("x", 1), h("y", 3)]
        .into_iter()
        .map(|(k, vals)| {
            (
                Value::Str(k.into_bytes()),
                Value::Agg(crate::output::testing::hist(&vals)),
            )
        })
        .collect();
    let keyed = Printed::new(
        MapDump {
            name: "kh".into(),
            value_type: Type::Agg(AggKind::Hist { bits: 0 }),
            entries,
        },
        PrintOpts::default(),
        true,
    );
    assert_eq!(
        run("print(top(maps[\"@kh\"], 1)[0].key);", vec![keyed]).unwrap(),
        "y\n"
    );
    assert!(ok_err("top(5, 1);").contains("expects a keyed map"));
    assert!(ok_err("top([1], 1);").contains("expects rows #{key, value}"));
}

#[test]
fn table_aligns_columns() {
    let t = || vec![sums("s", &[("bash", 1234), ("sshd", 5)])];
    assert_eq!(
        run("table(maps[\"@s\"], [\"key\", \"value\"]);", t()).unwrap(),
        "key   value\nsshd      5\nbash   1234\n"
    );
    assert_eq!(
        ok("table([[\"a\", 1, 2.5], [\"long name\", 100, ()]], [\"name\", \"n\", \"x\"]);"),
        "name         n    x\na            1  2.5\nlong name  100\n"
    );
    // Without columns: the first row's fields; arrays in cells are joined.
    assert_eq!(ok("table([#{k: [1, 2], v: \"x\"}]);"), "k     v\n1, 2  x\n");
    assert_eq!(ok("table([]);"), "");
    assert!(ok_err("table([], [1]);").contains("column names are strings"));
}

#[test]
fn csv_quotes_what_it_must() {
    let t = || vec![sums("s", &[("a,b", 1), ("say \"hi\"", 2)])];
    assert_eq!(
        run("csv(maps[\"@s\"]);", t()).unwrap(),
        "key,value\n\"a,b\",1\n\"say \"\"hi\"\"\",2\n"
    );
    assert_eq!(
        ok("csv([#{stack: [\"f\", \"g\"], n: 3}], [\"n\", \"stack\"]);"),
        "n,stack\n3,f;g\n"
    );
    assert_eq!(ok("csv([[1, \"x\"]]);"), "1,x\n");
}

#[test]
fn human_units() {
    assert_eq!(
        ok(
            "print(human_bytes(512)); print(human_bytes(1536)); print(human_bytes(3 * 1024 * 1024)); print(human_bytes(1.0e20));"
        ),
        "512 B\n1.5 KiB\n3.0 MiB\n86.7 EiB\n"
    );
    assert_eq!(
        ok(
            "print(human_ns(750)); print(human_ns(1500)); print(human_ns(20000000)); print(human_ns(2250000000));"
        ),
        "750 ns\n1.5 us\n20.0 ms\n2.25 s\n"
    );
}

#[test]
fn padding_and_fixed_digits() {
    assert_eq!(
        ok(
            "print(lpad(42, 5) + \"|\" + rpad(\"ab\", 4) + \"|\" + lpad(\"toolong\", 3) + \"|\" + fixed(2.5, 2) + \"|\" + fixed(3, 1));"
        ),
        "   42|ab  |toolong|2.50|3.0\n"
    );
}

#[test]
fn print_maps_is_the_default_exit_printout() {
    let t = vec![hist("h", &[1]), sums("s", &[]), sums("t", &[("x", 1)])];
    // The empty map goes too: the printers decide (bpftrace 0.26 prints `{}` for an empty
    // avg/stats map in JSON).
    assert_eq!(run("print_maps(maps);", t).unwrap(), "<exit maps 3>");
    assert!(ok_err("print_maps(#{a: 1});").contains("is not a map of this callback"));
}

#[test]
fn every_function_is_documented() {
    // The names `register` gives the engine, read from its source.
    let src = include_str!("library.rs");
    let registered: std::collections::BTreeSet<&str> = src
        .split("register_fn(\"")
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .collect();
    let documented: std::collections::BTreeSet<&str> = FUNCTIONS
        .iter()
        .filter_map(|(sig, _)| sig.split('(').next())
        .collect();
    assert_eq!(registered, documented);
}

#[test]
fn the_reference_lists_the_library_and_the_limits() {
    let doc = include_str!("../../../../docs/reference.md");
    for (sig, text) in FUNCTIONS {
        let row = format!("| `{sig}` | {text} |");
        assert!(doc.contains(&row), "docs/reference.md lacks {row}");
    }
    let rows = [
        format!(
            "| {} | `sonde::post::too_long` |",
            super::super::MAX_OPERATIONS
        ),
        format!(
            "| {} s | `sonde::post::too_long` |",
            super::super::MAX_CALL_TIME.as_secs()
        ),
        format!(
            "| a call still running {} s after the signal is stopped | `sonde::post::interrupted` |",
            super::super::SIGNAL_GRACE.as_secs()
        ),
        format!("| {} bytes (16 MiB) |", super::super::MAX_STRING),
        format!("| array items | {} |", super::super::MAX_ARRAY),
        format!("| object map fields | {} |", super::super::MAX_MAP),
        format!(
            "| nesting of calls | {} levels |",
            super::super::MAX_CALL_LEVELS
        ),
        format!(
            "| nesting of expressions | {} levels |",
            super::super::MAX_EXPR_DEPTH
        ),
        format!(
            "counts {} bytes an entry), kept until the call returns | {} bytes (64 MiB) |",
            super::super::MAP_ENTRY_COST,
            super::super::MAX_OUTPUT
        ),
    ];
    for row in rows {
        assert!(
            doc.contains(&row),
            "docs/reference.md lacks the limit {row}"
        );
    }
}
