use super::*;

/// `HH:MM:SS.ms`-spaced rows from `start_ms` (milliseconds since the epoch, UTC).
fn rows_from(start_ms: u64, step_ms: u64, values: &[Option<i64>]) -> Vec<Row> {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| Row {
            ns: (start_ms + i as u64 * step_ms) * 1_000_000,
            value: v.map(Num::I),
        })
        .collect()
}

fn ms(h: u64, m: u64, s: u64, ms: u64) -> u64 {
    ((h * 60 + m) * 60 + s) * 1000 + ms
}

/// bpftrace 0.26's docs/stdlib.md, tseries example one (`"min"` of `rand % 10`).
const DOC_ONE: &str = r"             0                                                   2
hh:mm:ss.ms  |___________________________________________________|
10:41:46.700 *                                                   | 0
10:41:46.800 *                                                   | 0
10:41:46.900 |                         *                         | 1
10:41:47.000 |                                                   * 2
10:41:47.100 |                         *                         | 1
10:41:47.200 *                                                   | 0
10:41:47.300 |                         *                         | 1
10:41:47.400 *                                                   | 0
10:41:47.500 |                         *                         | 1
10:41:47.600 *                                                   | 0
10:41:47.700 |                                                   * 2
10:41:47.800 *                                                   | 0
10:41:47.900 *                                                   | 0
10:41:48.000 |                         *                         | 1
10:41:48.100 |                         *                         | 1
10:41:48.200 |                         *                         | 1
10:41:48.300 *                                                   | 0
10:41:48.400 |                                                   * 2
10:41:48.500 |                         *                         | 1
10:41:48.600 |                         *                         | 1
             v___________________________________________________v
             0                                                   2
";

/// bpftrace 0.26's docs/stdlib.md, tseries example two (the zigzag).
const DOC_TWO: &str = include_str!("../../../../tests/fixtures/tseries_zigzag.txt");

#[test]
fn charts_match_bpftraces_documented_output() {
    let one = [0, 0, 1, 2, 1, 0, 1, 0, 1, 0, 2, 0, 0, 1, 1, 1, 0, 2, 1, 1].map(Some);
    let rows = rows_from(ms(10, 41, 46, 700), 100, &one);
    assert_eq!(chart(&rows, &utc_hms), DOC_ONE);
    let two = [
        -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 4, 3, 2, 1, 0, -1, -2, -3, -4,
    ]
    .map(Some);
    let rows = rows_from(ms(10, 39, 49, 300), 100, &two);
    assert_eq!(chart(&rows, &utc_hms), DOC_TWO);
}

#[test]
fn empty_intervals_print_a_dash_and_keep_their_time() {
    // bpftrace's tests/bpftrace.cpp print_tseries_map: 2..5 then an empty interval.
    let rows = rows_from(
        ms(0, 0, 22, 612),
        1,
        &[Some(2), Some(3), Some(4), Some(5), None],
    );
    let want = "             2                                                   5
hh:mm:ss.ms  |___________________________________________________|
00:00:22.612 *                                                   | 2
00:00:22.613 |                *                                  | 3
00:00:22.614 |                                 *                 | 4
00:00:22.615 |                                                   * 5
00:00:22.616 |                                                   | -
             v___________________________________________________v
             2                                                   5
";
    assert_eq!(chart(&rows, &utc_hms), want);
}

#[test]
fn flat_series_get_room_on_both_sides() {
    let rows = rows_from(0, 1000, &[Some(7), Some(7)]);
    let want = "         6                                                   8
hh:mm:ss |___________________________________________________|
00:00:00 |                         *                         | 7
00:00:01 |                         *                         | 7
         v___________________________________________________v
         6                                                   8
";
    assert_eq!(chart(&rows, &utc_hms), want);
    // Unsigned zero cannot go lower; a single row shows nanoseconds.
    let rows = [Row {
        ns: 5,
        value: Some(Num::U(0)),
    }];
    let want = "                   0                                                   1
hh:mm:ss.ns        |___________________________________________________|
00:00:00.000000005 *                                                   | 0
                   v___________________________________________________v
                   0                                                   1
";
    assert_eq!(chart(&rows, &utc_hms), want);
}

#[test]
fn negative_values_mark_zero_and_microseconds_pad_by_bytes() {
    let rows: Vec<Row> = [-100i64, 50, 300]
        .iter()
        .enumerate()
        .map(|(i, v)| Row {
            ns: 3_000_000_000 + i as u64 * 10_000,
            value: Some(Num::I(*v)),
        })
        .collect();
    // bpftrace pads "hh:mm:ss.μs" to 16 bytes: μ takes two.
    let want = "                -100                                              300
hh:mm:ss.μs    |___________________________________________________|
00:00:03.000000 *            .                                      | -100
00:00:03.000010 |            .     *                                | 50
00:00:03.000020 |            .                                      * 300
                v___________________________________________________v
                -100                                              300
";
    assert_eq!(chart(&rows, &utc_hms), want);
}

#[test]
fn series_without_rows_or_values() {
    assert_eq!(chart(&[], &utc_hms), "<no data>");
    // A key with nothing in its map's window shows one empty interval, bounds `null`.
    let rows = [Row {
        ns: 2_000_000_000,
        value: None,
    }];
    let want = "                   null                                             null
hh:mm:ss.ns        |___________________________________________________|
00:00:02.000000000 |                                                   | -
                   v___________________________________________________v
                   null                                             null
";
    assert_eq!(chart(&rows, &utc_hms), want);
}

#[test]
fn json_rows_skip_empty_intervals_and_print_utc() {
    let rows = rows_from(500, 100, &[Some(9), None, Some(-1)]);
    assert_eq!(
        json(&rows),
        r#"[{"interval_start":"1970-01-01 00:00:00.500000000","value":9},{"interval_start":"1970-01-01 00:00:00.700000000","value":-1}]"#
    );
    assert_eq!(json(&[]), "[]");
    assert_eq!(
        utc_time(1_736_937_706_700_000_000),
        "2025-01-15 10:41:46.700000000"
    );
    assert_eq!(
        utc_time(951_782_400_000_000_001),
        "2000-02-29 00:00:00.000000001"
    );
}

#[test]
fn rows_share_their_maps_window() {
    let ts = |points: Vec<(u64, i64)>| {
        Value::Agg(AggValue::Tseries {
            interval_ns: 100,
            num_intervals: 3,
            signed: false,
            points,
        })
    };
    let a = ts(vec![(10, 1), (11, 2)]);
    let b = ts(vec![(12, 3)]);
    let last = map_last_epoch([&a, &b]);
    assert_eq!(last, 12);
    let Value::Agg(a) = a else { unreachable!() };
    assert_eq!(
        rows(&a, last),
        [
            Row {
                ns: 1000,
                value: Some(Num::U(1))
            },
            Row {
                ns: 1100,
                value: Some(Num::U(2))
            },
            Row {
                ns: 1200,
                value: None
            }
        ]
    );
    assert_eq!(own_rows(&a).len(), 2);
}

#[test]
fn printers_frame_each_key_and_share_the_window() {
    use crate::output::{JsonPrinter, MapDump, NoResolver, PrintOpts, Printer, TextPrinter};
    use sonde_lang::types::{AggKind, TseriesAgg, Type};
    let ts = |points: Vec<(u64, i64)>| {
        Value::Agg(AggValue::Tseries {
            interval_ns: 1_000_000_000,
            num_intervals: 2,
            signed: true,
            points,
        })
    };
    let map = MapDump {
        name: "a".into(),
        value_type: Type::Agg(AggKind::Tseries {
            interval_ns: 1_000_000_000,
            num_intervals: 2,
            agg: TseriesAgg::Last,
            signed: true,
        }),
        // Printed in the order of their bytes: "b" holds nothing in the window.
        entries: vec![
            (Value::Str(b"x".to_vec()), ts(vec![(3, -1), (4, 1)])),
            (Value::Str(b"b".to_vec()), ts(vec![(1, 5)])),
            (Value::Str(b"z".to_vec()), ts(vec![])),
        ],
    };
    let mut p = TextPrinter::new(Vec::new(), NoResolver).with_utc_times();
    p.map(&map, PrintOpts { top: 1, div: 2 }).unwrap();
    let text = String::from_utf8(p.into_inner()).unwrap();
    let want = "@a[b]:
                   null                                             null
hh:mm:ss.ns        |___________________________________________________|
00:00:04.000000000 |                                                   | -
                   v___________________________________________________v
                   null                                             null

@a[x]:
         -1                                                  1
hh:mm:ss |___________________________________________________|
00:00:03 *                         .                         | -1
00:00:04 |                         .                         * 1
         v___________________________________________________v
         -1                                                  1

@a[z]:
                   null                                             null
hh:mm:ss.ns        |___________________________________________________|
00:00:04.000000000 |                                                   | -
                   v___________________________________________________v
                   null                                             null

";
    assert_eq!(text, want);
    let mut p = JsonPrinter::new(Vec::new(), NoResolver);
    p.map(&map, PrintOpts::default()).unwrap();
    let json = String::from_utf8(p.into_inner()).unwrap();
    assert_eq!(
        json,
        "{\"type\": \"tseries\", \"data\": {\"@a\": {\"b\": [], \"x\": [{\"interval_start\":\"1970-01-01 00:00:03.000000000\",\"value\":-1},{\"interval_start\":\"1970-01-01 00:00:04.000000000\",\"value\":1}], \"z\": []}}}\n"
    );
}
