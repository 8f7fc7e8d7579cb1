//! The report hook of `sonde tool memusage`: glibc memusage's report, laid out from the maps
//! the script filled (`stdlib/memusage.sd` computes every number in the kernel).
//!
//! The report is glibc's, without its terminal colours: a summary line (heap total, heap
//! peak, stack peak), a table of calls, bytes and failures per function (with realloc's
//! nomove, dec and free counts), and the block-size histogram: one line per 16-byte bucket
//! that has requests (`@sizes[size / 16]`), in ascending size order, then `large` (64 KiB and
//! up). Each histogram line shows the bucket's range, its count, its share of all requests
//! (`@requests`; integer percent, ` <1% ` when it rounds to zero) and a bar of
//! `count * 50 / most` `=` signs, where `most` is the largest count of any line.

use sonde_compiler::value::{Num, Value};
use sonde_runtime::output::MapDump;

/// The count stored in a map value (a `count()` aggregation or an integer).
pub(crate) fn count_of(v: &Value) -> u64 {
    match v {
        Value::Agg(a) => match a.scalar() {
            Some(Num::U(u)) => u,
            Some(Num::I(i)) => u64::try_from(i).unwrap_or(0),
            None => 0,
        },
        Value::Int(i) => u64::try_from(*i).unwrap_or(0),
        Value::UInt(u) => *u,
        _ => 0,
    }
}

/// The value of the key-less map `name`, 0 when it is absent or empty.
fn scalar(maps: &[MapDump], name: &str) -> u64 {
    maps.iter()
        .find(|m| m.name == name)
        .and_then(|m| m.entries.first())
        .map_or(0, |(_, v)| count_of(v))
}

/// `(bucket, count)` of `@sizes`, ascending, without empty buckets.
fn buckets(maps: &[MapDump]) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = maps
        .iter()
        .filter(|m| m.name == "sizes")
        .flat_map(|m| m.entries.iter())
        .filter_map(|(k, v)| {
            let bucket = match k {
                Value::Int(i) => u64::try_from(*i).ok()?,
                Value::UInt(u) => *u,
                _ => return None,
            };
            Some((bucket, count_of(v))).filter(|(_, n)| *n > 0)
        })
        .collect();
    out.sort_unstable();
    out
}

/// The percentage and bar that end a histogram line.
fn share(count: u64, requests: u64, most: u64) -> String {
    let percent = count * 100 / requests.max(1);
    let pct = if percent == 0 {
        " <1% ".to_string()
    } else {
        format!("{percent:3}% ")
    };
    format!("{pct}{}\n", "=".repeat((count * 50 / most.max(1)) as usize))
}

/// glibc memusage's whole report, from the tool's maps after END.
pub fn report(maps: &[MapDump]) -> String {
    let v = |name: &str| scalar(maps, name);
    let mut out = format!(
        "\nMemory usage summary: heap total: {}, heap peak: {}, stack peak: {}\n",
        v("heap_total"),
        v("heap_peak"),
        v("stack_peak")
    );
    out += "         total calls   total memory   failed calls\n";
    for (label, f) in [
        (" malloc", "malloc"),
        ("realloc", "realloc"),
        (" calloc", "calloc"),
    ] {
        out += &format!(
            "{label}|{:11}   {:12}   {:12}",
            v(&format!("{f}_calls")),
            v(&format!("{f}_mem")),
            v(&format!("{f}_failed"))
        );
        if f == "realloc" {
            out += &format!(
                "  (nomove:{}, dec:{}, free:{})",
                v("realloc_nomove"),
                v("realloc_dec"),
                v("realloc_free")
            );
        }
        out.push('\n');
    }
    out += &format!("   free|{:11}   {:12}\n", v("free_calls"), v("free_mem"));
    out += "Histogram for block sizes:\n";
    out += &histogram(maps);
    out
}

/// The histogram's lines, from the tool's maps after END.
fn histogram(maps: &[MapDump]) -> String {
    let requests = scalar(maps, "requests");
    let large = scalar(maps, "large");
    let buckets = buckets(maps);
    let most = buckets
        .iter()
        .map(|(_, n)| *n)
        .max()
        .unwrap_or(0)
        .max(large);
    let mut out = String::new();
    for (b, n) in buckets {
        out += &format!("{:5}-{:<5}{n:12} ", b * 16, b * 16 + 15);
        out += &share(n, requests, most);
    }
    if large > 0 {
        out += &format!("   large   {large:12} ");
        out += &share(large, requests, most);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_compiler::value::AggValue;
    use sonde_lang::types::{AggKind, Type};

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
    fn lines_as_glibc_prints_them() {
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
            histogram(&maps),
            "   16-31              1  14% ============\n\
             \x20  32-47              4  57% ==================================================\n\
             \x20 992-1007            1  14% ============\n\
             \x20  large              1  14% ============\n"
        );
    }

    #[test]
    fn whole_report_of_the_test_program() {
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
        ];
        assert_eq!(
            report(&maps),
            "\nMemory usage summary: heap total: 75364, heap peak: 70000, stack peak: 0\n\
             \x20        total calls   total memory   failed calls\n\
             \x20malloc|          5          71204              0\n\
             realloc|          2           3960              0  (nomove:2, dec:1, free:0)\n\
             \x20calloc|          1            200              0\n\
             \x20  free|          6          71394\n\
             Histogram for block sizes:\n\
             \x20  32-47              1  50% ==================================================\n\
             \x20 992-1007            1  50% ==================================================\n"
        );
    }

    #[test]
    fn tiny_shares_and_no_requests() {
        let maps = vec![
            count_map("sizes", vec![(Value::Int(0), 1), (Value::Int(4095), 200)]),
            count_map("requests", vec![(Value::None, 201)]),
        ];
        assert_eq!(
            histogram(&maps),
            "    0-15              1  <1% \n65520-65535         200  99% ==================================================\n"
        );
        assert_eq!(histogram(&[]), "");
    }
}
