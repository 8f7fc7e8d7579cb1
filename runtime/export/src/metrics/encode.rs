//! Families encoded in the format a scraper asked for, with prometheus-client's encoders:
//! Prometheus text (0.0.4), OpenMetrics text, or the delimited protobuf of
//! `io.prometheus.client.MetricFamily` (the one that carries native histograms).

use super::family::{Family, Sample};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{
    DescriptorEncoder, MetricEncoder, NativeHistogram, NativeHistogramBuckets, NoLabelSet,
};
use prometheus_client::registry::Registry;

/// An exposition format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `text/plain; version=0.0.4`.
    Text,
    /// `application/openmetrics-text; version=1.0.0`.
    OpenMetrics,
    /// Delimited `io.prometheus.client.MetricFamily` protobuf messages.
    Protobuf,
}

impl Format {
    /// The format an `Accept` header prefers among those sonde speaks (highest `q` first,
    /// the header's order between equals); Prometheus text without one.
    pub fn negotiate(accept: Option<&str>) -> Format {
        let Some(accept) = accept else {
            return Format::Text;
        };
        let mut best: Option<(f64, Format)> = None;
        for item in accept.split(',') {
            let mut parts = item.split(';').map(str::trim);
            let media = parts.next().unwrap_or("").to_ascii_lowercase();
            let params: Vec<&str> = parts.collect();
            let q = params
                .iter()
                .find_map(|p| p.strip_prefix("q="))
                .and_then(|q| q.parse::<f64>().ok())
                .unwrap_or(1.0);
            let format = match media.as_str() {
                "application/vnd.google.protobuf"
                    if params.contains(&"proto=io.prometheus.client.MetricFamily") =>
                {
                    Format::Protobuf
                }
                "application/openmetrics-text" => Format::OpenMetrics,
                "text/plain" | "*/*" | "text/*" => Format::Text,
                _ => continue,
            };
            if q > 0.0 && best.is_none_or(|(b, _)| q > b) {
                best = Some((q, format));
            }
        }
        best.map_or(Format::Text, |(_, f)| f)
    }

    /// The `Content-Type` of a response in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Text => "text/plain; version=0.0.4; charset=utf-8",
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::Protobuf => {
                "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited"
            }
        }
    }
}

/// The families of one scrape, as a prometheus-client collector.
#[derive(Debug)]
struct Snapshot(Vec<Family>);

impl Collector for Snapshot {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for f in &self.0 {
            if f.series.is_empty() {
                continue;
            }
            let mut metric = encoder.encode_descriptor(&f.name, &f.help, None, f.kind)?;
            for s in &f.series {
                let one = metric.encode_family(&s.labels)?;
                encode_sample(one, &s.sample)?;
            }
        }
        Ok(())
    }
}

/// Encodes one sample's value.
fn encode_sample(mut e: MetricEncoder<'_>, sample: &Sample) -> Result<(), std::fmt::Error> {
    match sample {
        Sample::Counter(v) => e.encode_counter::<NoLabelSet, f64, f64>(v, None),
        Sample::Gauge(v) => e.encode_gauge(v),
        Sample::Histogram { sum, buckets } => match &buckets.native {
            Some(n) => e.encode_histogram_with_native::<NoLabelSet>(
                *sum,
                buckets.count,
                &buckets.classic,
                None,
                NativeHistogram {
                    schema: 0,
                    zero_threshold: 0.0,
                    zero_count: n.zero_count,
                    negative: NativeHistogramBuckets {
                        spans: &n.negative_spans,
                        deltas: &n.negative_deltas,
                    },
                    positive: NativeHistogramBuckets {
                        spans: &n.positive_spans,
                        deltas: &n.positive_deltas,
                    },
                    created: None,
                },
            ),
            None => e.encode_histogram::<NoLabelSet>(*sum, buckets.count, &buckets.classic, None),
        },
    }
}

/// Encodes `families` in `format`.
pub fn encode(families: Vec<Family>, format: Format) -> Result<Vec<u8>, String> {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Snapshot(families)));
    match format {
        Format::Text => {
            let mut s = String::new();
            prometheus_client::encoding::prometheus_text::encode(&mut s, &registry)
                .map_err(|e| format!("cannot encode the metrics: {e}"))?;
            Ok(s.into_bytes())
        }
        Format::OpenMetrics => {
            let mut s = String::new();
            prometheus_client::encoding::text::encode(&mut s, &registry)
                .map_err(|e| format!("cannot encode the metrics: {e}"))?;
            Ok(s.into_bytes())
        }
        Format::Protobuf => {
            prometheus_client::encoding::prometheus_protobuf::encode_to_vec(&registry)
                .map_err(|e| format!("cannot encode the metrics: {e:?}"))
        }
    }
}
