//! The tools' rhai reports on known maps: the layouts the Rust reports they replaced printed
//! (glibc memusage's, `ltrace -c`'s), and the percentile lines of `-e`.

use crate::tools::find;
use sonde_compiler::value::{AggValue, Value};
use sonde_lang::types::{AggKind, Type};
use sonde_present::output::{MapDump, NoResolver, PrintOpts};
use sonde_present::report::{Chunk, Post, PostOptions, Printed};

/// What the report of tool `tool` prints at exit for `maps`.
fn report(text: &str, maps: Vec<MapDump>) -> String {
    let mut post = Post::compile(text, PostOptions::default()).unwrap_or_else(|d| panic!("{d:?}"));
    let table = maps
        .into_iter()
        .map(|m| {
            let keyed = m.entries.first().is_some_and(|(k, _)| *k != Value::None);
            Printed::new(m, PrintOpts::default(), keyed)
        })
        .collect();
    post.on_maps(true, table, &NoResolver)
        .unwrap_or_else(|d| panic!("{d:?}"));
    post.take_output()
        .into_iter()
        .map(|c| match c {
            Chunk::Text(t) => t,
            Chunk::Map(d, _) => format!("<map {}>\n", d.name),
            Chunk::ExitMaps(_) => "<exit maps>\n".to_string(),
        })
        .collect()
}

fn memusage(maps: Vec<MapDump>) -> String {
    report(
        find("memusage").unwrap().report.as_ref().unwrap().text,
        maps,
    )
}

/// The histogram lines of memusage's report.
fn histogram(maps: Vec<MapDump>) -> String {
    let r = memusage(maps);
    r.split_once("Histogram for block sizes:\n")
        .unwrap()
        .1
        .to_string()
}

fn count_map(name: &str, entries: Vec<(Value, u64)>) -> MapDump {
    MapDump {
        name: name.into(),
        value_type: Type::Agg(AggKind::Count),
        entries: entries
            .into_iter()
            .map(|(k, n)| (k, Value::Agg(AggValue::Count(n))))
            .collect(),
    }
}

#[test]
fn memusage_histogram_lines_as_glibc_prints_them() {
    // glibc memusage on 7 requests: 16-31 x1, 32-47 x4, 992-1007 x1, large x1 (colours
    // removed); plus a bucket too small to get a percent.
    let maps = vec![
        count_map(
            "sizes",
            vec![
                (Value::UInt(62), 1),
                (Value::UInt(1), 1),
                (Value::UInt(2), 4),
                (Value::UInt(3), 0),
            ],
        ),
        count_map("large", vec![(Value::None, 1)]),
        count_map("requests", vec![(Value::None, 7)]),
    ];
    assert_eq!(
        histogram(maps),
        "   16-31              1  14% ============\n\
         \x20  32-47              4  57% ==================================================\n\
         \x20 992-1007            1  14% ============\n\
         \x20  large              1  14% ============\n"
    );
}

#[test]
fn memusage_whole_report_of_the_test_program() {
    // glibc memusage 2.36 on tests/targets/tools_work.c `alloc` (colours removed), but
    // with sonde's stack peak.
    let one = |name: &str, n: u64| count_map(name, vec![(Value::None, n)]);
    let sum = |name: &str, n: i64| MapDump {
        name: name.into(),
        value_type: Type::Agg(AggKind::Sum { signed: false }),
        entries: vec![(
            Value::None,
            Value::Agg(AggValue::Sum {
                value: n,
                signed: false,
            }),
        )],
    };
    let maps = vec![
        sum("heap_total", 75364),
        MapDump {
            name: "heap_peak".into(),
            value_type: Type::Agg(AggKind::Max { signed: true }),
            entries: vec![(
                Value::None,
                Value::Agg(AggValue::Max {
                    value: Some(70000),
                    signed: true,
                }),
            )],
        },
        one("malloc_calls", 5),
        sum("malloc_mem", 71204),
        one("realloc_calls", 2),
        sum("realloc_mem", 3960),
        one("realloc_nomove", 2),
        one("realloc_dec", 1),
        one("calloc_calls", 1),
        sum("calloc_mem", 200),
        one("free_calls", 6),
        sum("free_mem", 71394),
        count_map("sizes", vec![(Value::UInt(2), 1), (Value::UInt(62), 1)]),
        one("requests", 2),
        // An unsigned sum past i64::MAX prints exactly.
        sum("malloc_failed", -1),
    ];
    assert_eq!(
        memusage(maps),
        "\nMemory usage summary: heap total: 75364, heap peak: 70000, stack peak: 0\n\
         \x20        total calls   total memory   failed calls\n\
         \x20malloc|          5          71204   18446744073709551615\n\
         realloc|          2           3960              0  (nomove:2, dec:1, free:0)\n\
         \x20calloc|          1            200              0\n\
         \x20  free|          6          71394\n\
         Histogram for block sizes:\n\
         \x20  32-47              1  50% ==================================================\n\
         \x20 992-1007            1  50% ==================================================\n"
    );
}

#[test]
fn memusage_tiny_shares_and_no_requests() {
    let maps = vec![
        count_map("sizes", vec![(Value::Int(0), 1), (Value::Int(4095), 200)]),
        count_map("requests", vec![(Value::None, 201)]),
    ];
    assert_eq!(
        histogram(maps),
        "    0-15              1  <1% \n65520-65535         200  99% ==================================================\n"
    );
    assert_eq!(histogram(vec![]), "");
}

#[test]
fn ltrace_table_sorted_by_time_with_a_total() {
    let map = |name: &str, entries: &[(&str, u64)]| MapDump {
        name: name.into(),
        value_type: Type::Agg(AggKind::Count),
        entries: entries
            .iter()
            .map(|(k, v)| {
                (
                    Value::Str(k.as_bytes().to_vec()),
                    Value::Agg(AggValue::Count(*v)),
                )
            })
            .collect(),
    };
    let maps = || {
        vec![
            map("calls", &[("strlen", 10), ("malloc", 2), ("free", 0)]),
            map("ns", &[("strlen", 20_000), ("malloc", 60_000), ("free", 5)]),
        ]
    };
    let text = find("ltrace").unwrap().report.as_ref().unwrap().text;
    // Without -c (no `@summary`), the calls were printed as they returned: no table.
    assert_eq!(report(text, maps()), "");
    let mut with_summary = maps();
    with_summary.push(count_map("summary", vec![(Value::None, 1)]));
    assert_eq!(
        report(text, with_summary),
        "% time     seconds  usecs/call     calls      function\n\
         ------ ----------- ----------- --------- --------------------\n \
         75.00    0.000060          30         2 malloc\n \
         25.00    0.000020           2        10 strlen\n\
         ------ ----------- ----------- --------- --------------------\n\
         100.00    0.000080                    12 total\n"
    );
}

/// A `hist()` value of `values`.
fn hist(values: &[i64]) -> Value {
    let mut b = vec![0u64; sonde_compiler::catalog::aggs::hist_buckets(0)];
    for v in values {
        b[sonde_compiler::catalog::aggs::hist_bucket(*v, 0)] += 1;
    }
    Value::Agg(AggValue::Hist {
        bits: 0,
        buckets: b,
        sum: 0,
    })
}

/// What a report prints for the maps of one interval's `print()`s (the tool run without
/// flags: its `params()` empty, as the tool runner appends them).
fn interval(text: &str, maps: Vec<MapDump>) -> String {
    let text = format!("{text}\nfn params() {{ #{{}} }}\n");
    let mut post = Post::compile(&text, PostOptions::default()).unwrap_or_else(|d| panic!("{d:?}"));
    let table = maps
        .into_iter()
        .map(|m| {
            let keyed = m.entries.first().is_some_and(|(k, _)| *k != Value::None);
            Printed::new(m, PrintOpts::default(), keyed)
        })
        .collect();
    post.on_maps(false, table, &NoResolver)
        .unwrap_or_else(|d| panic!("{d:?}"));
    post.take_output()
        .into_iter()
        .map(|c| match c {
            Chunk::Text(t) => t,
            other => panic!("{other:?}"),
        })
        .collect()
}

#[test]
fn runqlat_prints_bccs_log2_histograms() {
    let ty = Type::Agg(AggKind::Hist { bits: 0 });
    let maps = vec![
        MapDump {
            name: "usecs".into(),
            value_type: ty.clone(),
            entries: vec![(Value::None, hist(&[0, 1, 1, 5, 9, 12]))],
        },
        MapDump {
            name: "pid_usecs".into(),
            value_type: ty,
            entries: vec![(
                Value::Tuple(vec![Value::Int(42), Value::Str(b"bash".to_vec())]),
                hist(&[2]),
            )],
        },
    ];
    let r = find("runqlat").unwrap();
    let plain = interval(r.report.as_ref().unwrap().text, maps.clone());
    // bcc's slots: 0 and 1 in the first, then 2^N to 2^(N+1) - 1; 40 stars for the largest.
    let expected = [
        "",
        "pid = 42 bash",
        "     usecs               : count    distribution",
        "         0 -> 1          : 0        |                                        |",
        "         2 -> 3          : 1        |****************************************|",
        "     usecs               : count    distribution",
        "         0 -> 1          : 3        |****************************************|",
        "         2 -> 3          : 0        |                                        |",
        "         4 -> 7          : 1        |*************                           |",
        "         8 -> 15         : 2        |**************************              |",
    ];
    assert_eq!(plain.lines().collect::<Vec<_>>(), expected, "{plain}");
    let ext = interval(r.extended.as_ref().unwrap().text, maps);
    let lines: Vec<&str> = ext.lines().collect();
    assert_eq!(lines.len(), expected.len() + 2, "{ext}");
    assert!(lines[5].starts_with("p50 = "), "{ext}");
    assert!(lines[11].starts_with("p50 = "), "{ext}");
}

#[test]
fn biolatency_prints_bccs_disk_and_flags_lines() {
    let ty = Type::Agg(AggKind::Hist { bits: 0 });
    let map = |name: &str, key: Value| MapDump {
        name: name.into(),
        value_type: ty.clone(),
        entries: vec![(key, hist(&[3]))],
    };
    let r = find("biolatency").unwrap();
    let text = r.report.as_ref().unwrap().text;
    let lines = |m: MapDump| -> Vec<String> {
        interval(text, vec![m])
            .lines()
            .take(2)
            .map(String::from)
            .collect()
    };
    let head = "     usecs               : count    distribution".to_string();
    assert_eq!(
        lines(map("bio_usecs", Value::None)),
        ["".to_string(), head.clone()]
    );
    let vda = || Value::Str(b"vda".to_vec());
    assert_eq!(lines(map("disk_usecs", vda())), ["", "disk = vda\t"]);
    // REQ_SYNC (bit 11) | REQ_IDLE (bit 15) | REQ_OP_WRITE (1); REQ_RAHEAD | REQ_OP_READ.
    assert_eq!(
        lines(map("flags_usecs", Value::Int(0x8801))),
        ["flags = Idle-Sync-Write".to_string(), head]
    );
    assert_eq!(
        lines(map(
            "diskflags_usecs",
            Value::Tuple(vec![vda(), Value::Int(1 << 19)])
        )),
        ["", "disk = vda\tflags = ReadAhead-Read"]
    );
    // -e: the percentiles under each histogram.
    let ext = interval(
        r.extended.as_ref().unwrap().text,
        vec![map("bio_usecs", Value::None)],
    );
    assert_eq!(
        ext.lines().last(),
        Some("p50 = 3, p90 = 3, p99 = 3"),
        "{ext}"
    );
}
