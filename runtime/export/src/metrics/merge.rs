//! Expositions of several scripts merged into one (`sonde serve`): each script's run
//! exports its own families, and the families every run has (`sonde_probes_attached`, ...)
//! must appear once, with every script's series. Text is merged by family block; the
//! protobuf form by `MetricFamily` name.

use super::Format;
use prometheus_client::encoding::prometheus_protobuf::prometheus_data_model::MetricFamily;
use prost::Message;

/// The families of `bodies` (each an exposition in `format`) as one exposition.
pub fn merge(bodies: &[Vec<u8>], format: Format) -> Vec<u8> {
    match format {
        Format::Protobuf => merge_protobuf(bodies),
        Format::Text | Format::OpenMetrics => merge_text(bodies, format == Format::OpenMetrics),
    }
}

/// Text expositions merged: a family's `# HELP`/`# TYPE`/`# UNIT` lines once, then the
/// samples of every body, families in order of first appearance; OpenMetrics' `# EOF` once
/// at the end.
fn merge_text(bodies: &[Vec<u8>], openmetrics: bool) -> Vec<u8> {
    let mut order: Vec<String> = Vec::new();
    let mut blocks: std::collections::HashMap<String, (Vec<String>, Vec<String>)> =
        Default::default();
    for body in bodies {
        let text = String::from_utf8_lossy(body);
        let mut current = String::new();
        for line in text.lines() {
            if line == "# EOF" || line.is_empty() {
                continue;
            }
            if let Some(rest) = line.strip_prefix("# ") {
                let mut parts = rest.splitn(3, ' ');
                let (_, name) = (parts.next(), parts.next().unwrap_or(""));
                current = name.to_string();
                let e = blocks.entry(current.clone()).or_insert_with(|| {
                    order.push(current.clone());
                    Default::default()
                });
                if !e.0.iter().any(|l| l == line) {
                    e.0.push(line.to_string());
                }
                continue;
            }
            let e = blocks.entry(current.clone()).or_insert_with(|| {
                order.push(current.clone());
                Default::default()
            });
            e.1.push(line.to_string());
        }
    }
    let mut out = String::new();
    for name in &order {
        let (head, samples) = &blocks[name];
        for l in head.iter().chain(samples) {
            out.push_str(l);
            out.push('\n');
        }
    }
    if openmetrics {
        out.push_str("# EOF\n");
    }
    out.into_bytes()
}

/// Delimited `MetricFamily` messages merged by name (a body that does not decode is left
/// out from where it stops decoding).
fn merge_protobuf(bodies: &[Vec<u8>]) -> Vec<u8> {
    let mut families: Vec<MetricFamily> = Vec::new();
    for body in bodies {
        let mut buf = body.as_slice();
        while !buf.is_empty() {
            let Ok(f) = MetricFamily::decode_length_delimited(&mut buf) else {
                break;
            };
            match families.iter_mut().find(|g| g.name == f.name) {
                Some(g) => g.metric.extend(f.metric),
                None => families.push(f),
            }
        }
    }
    let mut out = Vec::new();
    for f in families {
        // Writing to a Vec cannot fail.
        let _ = f.encode_length_delimited(&mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{Family, Sample, encode};
    use prometheus_client::metrics::MetricType;

    fn body(script: &str, format: Format) -> Vec<u8> {
        let mut own = Family::new("sonde_events".into(), "events".into(), MetricType::Counter);
        own.push(vec![("script".into(), script.into())], Sample::Counter(2.0));
        let mut map = Family::new(format!("sonde_{script}_c"), "c".into(), MetricType::Gauge);
        map.push(vec![], Sample::Gauge(1.0));
        encode(vec![map, own], format).unwrap()
    }

    #[test]
    fn shared_families_appear_once_in_text() {
        for format in [Format::Text, Format::OpenMetrics] {
            let merged = merge(&[body("a", format), body("b", format)], format);
            let t = String::from_utf8(merged).unwrap();
            assert_eq!(t.matches("# TYPE sonde_events").count(), 1, "{t}");
            assert!(
                t.contains("script=\"a\"") && t.contains("script=\"b\""),
                "{t}"
            );
            assert!(t.contains("sonde_a_c") && t.contains("sonde_b_c"), "{t}");
            assert_eq!(
                t.matches("# EOF").count(),
                usize::from(format == Format::OpenMetrics)
            );
        }
    }

    #[test]
    fn shared_families_appear_once_in_protobuf() {
        let merged = merge(
            &[body("a", Format::Protobuf), body("b", Format::Protobuf)],
            Format::Protobuf,
        );
        let mut buf = merged.as_slice();
        let mut names = Vec::new();
        while !buf.is_empty() {
            let f = MetricFamily::decode_length_delimited(&mut buf).unwrap();
            if f.name == "sonde_events_total" || f.name == "sonde_events" {
                assert_eq!(f.metric.len(), 2);
            }
            names.push(f.name);
        }
        assert_eq!(names.len(), 3, "{names:?}");
    }
}
