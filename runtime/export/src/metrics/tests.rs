//! The exporter on decoded maps: names, labels, types, values, caps, resets.

use super::*;
use sonde_compiler::catalog::aggs::{hist_bucket, hist_buckets};
use sonde_lang::types::{AggKind, Type};
use sonde_present::output::NoResolver;

fn exporter(max_series: usize) -> Exporter {
    Exporter::new(ExportOptions {
        script: "bio".into(),
        max_series,
        key_names: HashMap::from([("io".to_string(), vec!["comm".to_string()])]),
    })
}

fn dump(name: &str, entries: Vec<(Value, Value)>) -> MapDump {
    MapDump {
        name: name.into(),
        value_type: Type::Agg(AggKind::Count),
        entries,
    }
}

fn text(e: &mut Exporter, dumps: &[MapDump]) -> String {
    let dumps: Vec<(MapDump, usize)> = dumps.iter().map(|d| (d.clone(), d.entries.len())).collect();
    let f = e.families(&dumps, &NoResolver, &RunStats::default());
    String::from_utf8(encode(f, Format::Text).unwrap()).unwrap()
}

fn count(key: &[u8], n: u64) -> (Value, Value) {
    (Value::Str(key.to_vec()), Value::Agg(AggValue::Count(n)))
}

#[test]
fn counts_are_counters_labelled_by_key_expression() {
    let mut e = exporter(100);
    let t = text(
        &mut e,
        &[dump("io", vec![count(b"dd", 3), count(b"a\"b\nc\xff", 1)])],
    );
    assert!(t.contains("# TYPE sonde_bio_io_total counter"), "{t}");
    assert!(t.contains("sonde_bio_io_total{comm=\"dd\"} 3.0"), "{t}");
    // Quotes and newlines escaped, invalid UTF-8 replaced.
    assert!(t.contains("comm=\"a\\\"b\\nc\u{fffd}\"} 1.0"), "{t}");
}

#[test]
fn counters_stay_monotonic_across_clear() {
    let mut e = exporter(100);
    text(&mut e, &[dump("io", vec![count(b"dd", 5)])]);
    e.before_reset(&dump("io", vec![count(b"dd", 6)]), &NoResolver);
    let t = text(&mut e, &[dump("io", vec![count(b"dd", 2)])]);
    assert!(t.contains("sonde_bio_io_total{comm=\"dd\"} 8.0"), "{t}");
}

#[test]
fn histograms_have_integer_bounds_and_the_kept_sum() {
    let mut buckets = vec![0; hist_buckets(0)];
    for v in [0i64, 1, 2, 3, 100] {
        buckets[hist_bucket(v, 0)] += 1;
    }
    let h = Value::Agg(AggValue::Hist {
        bits: 0,
        buckets,
        sum: 106,
    });
    let mut e = exporter(100);
    let t = text(&mut e, &[dump("lat", vec![(Value::None, h)])]);
    assert!(t.contains("# TYPE sonde_bio_lat histogram"), "{t}");
    assert!(t.contains("sonde_bio_lat_sum 106.0"), "{t}");
    assert!(t.contains("sonde_bio_lat_count 5"), "{t}");
    assert!(t.contains("sonde_bio_lat_bucket{le=\"0\"} 1"), "{t}");
    assert!(t.contains("sonde_bio_lat_bucket{le=\"3\"} 4"), "{t}");
    assert!(t.contains("sonde_bio_lat_bucket{le=\"127\"} 5"), "{t}");
    assert!(t.contains("sonde_bio_lat_bucket{le=\"+Inf\"} 5"), "{t}");
}

#[test]
fn tuple_keys_name_unknown_elements_by_position_and_stacks_are_not_metrics() {
    let mut e = exporter(100);
    let key = Value::Tuple(vec![Value::UInt(7), Value::Str(b"x".to_vec())]);
    let t = text(
        &mut e,
        &[dump("t", vec![(key, Value::Agg(AggValue::Count(1)))])],
    );
    assert!(
        t.contains("sonde_bio_t_total{key0=\"7\",key1=\"x\"} 1.0"),
        "{t}"
    );
}

#[test]
fn series_beyond_the_cap_are_counted() {
    let mut e = exporter(2);
    let entries = (0..5)
        .map(|i| count(format!("c{i}").as_bytes(), 1))
        .collect();
    let t = text(&mut e, &[dump("io", entries)]);
    assert_eq!(t.matches("sonde_bio_io_total{").count(), 2, "{t}");
    assert!(
        t.contains("sonde_series_dropped{script=\"bio\",map=\"@io\"} 3.0"),
        "{t}"
    );
}

#[test]
fn averages_and_scalars() {
    let mut e = exporter(100);
    let avg = Value::Agg(AggValue::Avg {
        sum: 30,
        count: 3,
        signed: false,
    });
    let t = text(
        &mut e,
        &[
            dump("a", vec![(Value::None, avg)]),
            dump("g", vec![(Value::None, Value::Int(-4))]),
        ],
    );
    assert!(t.contains("sonde_bio_a_sum 30.0"), "{t}");
    assert!(t.contains("sonde_bio_a_count 3"), "{t}");
    assert!(t.contains("# TYPE sonde_bio_g gauge"), "{t}");
    assert!(t.contains("sonde_bio_g -4.0"), "{t}");
}

#[test]
fn accept_headers_choose_the_format() {
    assert_eq!(Format::negotiate(None), Format::Text);
    let prom = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3,*/*;q=0.2";
    assert_eq!(Format::negotiate(Some(prom)), Format::Protobuf);
    let om = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5";
    assert_eq!(Format::negotiate(Some(om)), Format::OpenMetrics);
    assert_eq!(Format::negotiate(Some("image/png")), Format::Text);
}
