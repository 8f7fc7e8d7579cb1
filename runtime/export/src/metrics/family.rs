//! What a scrape exports, before encoding: metric families of labelled samples.

use super::buckets::Buckets;
use prometheus_client::metrics::MetricType;

/// One sample's value.
#[derive(Clone, Debug, PartialEq)]
pub enum Sample {
    /// A counter's total.
    Counter(f64),
    /// A gauge's value.
    Gauge(f64),
    /// A histogram: its buckets and the sum of the values it counted.
    Histogram {
        /// The sum of every value counted.
        sum: f64,
        /// Its buckets.
        buckets: Buckets,
    },
}

/// A labelled sample.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// `(name, value)` pairs.
    pub labels: Vec<(String, String)>,
    /// The value.
    pub sample: Sample,
}

/// A metric family: one name, one type, its series.
#[derive(Clone, Debug, PartialEq)]
pub struct Family {
    /// The family's name (a counter's `_total` is added by the encoder).
    pub name: String,
    /// Its help text.
    pub help: String,
    /// Counter, gauge or histogram.
    pub kind: MetricType,
    /// Its series.
    pub series: Vec<Series>,
}

impl Family {
    /// An empty family.
    pub fn new(name: String, help: String, kind: MetricType) -> Self {
        Family {
            name,
            help,
            kind,
            series: Vec::new(),
        }
    }

    /// Adds a sample.
    pub fn push(&mut self, labels: Vec<(String, String)>, sample: Sample) {
        self.series.push(Series { labels, sample });
    }
}
