//! A run's maps as Prometheus metrics.
//!
//! Every user map becomes a family `sonde_<script>_<map>`; its keys become labels named
//! after the key expressions. `count()` and `sum()` are counters, kept monotonic across
//! `clear()` and `zero()` ([`monotonic`]); `avg()` a histogram of one `+Inf` bucket (its
//! `_sum` and `_count`); `stats()` the same and a gauge `<name>_avg`; `min()`, `max()` and
//! integer values gauges; `hist()` a histogram with the integer bounds of its log2 buckets
//! and native schema-0 buckets ([`buckets`]); `lhist()` its linear bounds. Maps keyed by
//! stacks are profiles, not metrics (see `pprof`); strings, records and time series are not
//! exported. At most `max_series` series per map go out; how many more there were is the
//! gauge `sonde_series_dropped`.

pub mod buckets;
pub mod encode;
pub mod family;
pub mod merge;
pub mod monotonic;
pub mod names;

pub use encode::{Format, encode};
pub use family::{Family, Sample, Series};

use monotonic::Monotonic;
use prometheus_client::metrics::MetricType;
use sonde_compiler::value::{AggValue, Value};
use sonde_present::output::text::value_text;
use sonde_present::output::{MapDump, Resolver};
use std::collections::HashMap;

/// What the metrics of a run are named after and how many there may be.
#[derive(Clone, Debug)]
pub struct ExportOptions {
    /// The script's name (its file's stem), in every metric's name.
    pub script: String,
    /// The most series one map exports per scrape.
    pub max_series: usize,
    /// For each map (name without `@`), the names its key expressions go by, in order.
    pub key_names: HashMap<String, Vec<String>>,
}

/// The run's own figures, exported beside its maps.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RunStats {
    /// Probes attached.
    pub probes: u64,
    /// Events the run has handled (printf, print, ...).
    pub events: u64,
    /// Events lost because the ring buffer was full.
    pub lost_events: u64,
    /// Map updates dropped because a map was full.
    pub map_full: u64,
    /// How long the previous scrape took, in seconds.
    pub last_scrape_seconds: f64,
    /// Profiles `--push-folded` could not push (queue full, server errors).
    pub pushes_dropped: u64,
}

/// The metrics of one run, scrape after scrape.
#[derive(Debug)]
pub struct Exporter {
    opts: ExportOptions,
    monotonic: Monotonic,
    /// Series the cap left out of the last scrape, per map.
    dropped: HashMap<String, u64>,
}

/// A map value's counters, as the monotonic store keeps them.
fn counters(v: &AggValue) -> Option<Vec<u64>> {
    Some(match v {
        AggValue::Count(c) => vec![*c],
        AggValue::Sum { value, .. } => vec![*value as u64],
        AggValue::Avg { sum, count, .. } | AggValue::Stats { sum, count, .. } => {
            vec![*sum as u64, *count]
        }
        AggValue::Hist { buckets, sum, .. } | AggValue::Lhist { buckets, sum, .. } => {
            let mut v = buckets.clone();
            v.push(*sum as u64);
            v
        }
        AggValue::Min { .. } | AggValue::Max { .. } | AggValue::Tseries { .. } => return None,
    })
}

/// True when a key holds a stack (such maps are profiles).
fn has_stack(v: &Value) -> bool {
    match v {
        Value::Stack(_) | Value::StackId { .. } => true,
        Value::Tuple(items) => items.iter().any(has_stack),
        _ => false,
    }
}

/// A key's elements.
fn key_parts(k: &Value) -> Vec<&Value> {
    match k {
        Value::None => Vec::new(),
        Value::Tuple(items) => items.iter().collect(),
        k => vec![k],
    }
}

/// A signed or unsigned total as a float.
fn num(bits: u64, signed: bool) -> f64 {
    if signed {
        bits as i64 as f64
    } else {
        bits as f64
    }
}

impl Exporter {
    /// An exporter for one run.
    pub fn new(opts: ExportOptions) -> Self {
        let cap = opts.max_series.saturating_mul(4).max(1024);
        Exporter {
            opts,
            monotonic: Monotonic::new(cap),
            dropped: HashMap::new(),
        }
    }

    /// The label values of a map entry's key.
    fn label_values(key: &Value, r: &dyn Resolver) -> Vec<String> {
        key_parts(key)
            .into_iter()
            .map(|p| String::from_utf8_lossy(&value_text(p, r, true)).into_owned())
            .collect()
    }

    /// A map is about to be cleared or zeroed: its counters so far are kept.
    pub fn before_reset(&mut self, dump: &MapDump, r: &dyn Resolver) {
        for (k, v) in &dump.entries {
            if let Value::Agg(a) = v
                && let Some(raw) = counters(a)
            {
                let labels = Self::label_values(k, r);
                self.monotonic.before_reset(&dump.name, &labels, &raw);
            }
        }
    }

    /// The names of map `@map`'s key expressions, as given.
    pub fn key_names(&self, map: &str) -> Vec<String> {
        self.opts.key_names.get(map).cloned().unwrap_or_default()
    }

    /// The most series one map exports.
    pub fn max_series(&self) -> usize {
        self.opts.max_series
    }

    /// The families of one scrape: every exportable map (each with how many entries it
    /// holds in all: a map read up to [`Exporter::max_series`] entries has more), then the
    /// run's own figures.
    pub fn families(
        &mut self,
        dumps: &[(MapDump, usize)],
        r: &dyn Resolver,
        stats: &RunStats,
    ) -> Vec<Family> {
        let mut out = Vec::new();
        self.dropped.clear();
        for (d, total) in dumps {
            self.map_families(d, *total, r, &mut out);
        }
        self.monotonic.end_scrape();
        out.extend(self.own_families(stats));
        out
    }

    /// The families of one map (none for a profile or a map of strings).
    fn map_families(&mut self, d: &MapDump, total: usize, r: &dyn Resolver, out: &mut Vec<Family>) {
        if d.entries.iter().any(|(k, _)| has_stack(k)) {
            return;
        }
        let name = names::metric_name(&self.opts.script, &d.name);
        let help = format!("@{} of {}", d.name, self.opts.script);
        let given = self
            .opts
            .key_names
            .get(&d.name)
            .cloned()
            .unwrap_or_default();
        let mut main: Option<Family> = None;
        let mut avg = Family::new(
            format!("{name}_avg"),
            format!("average of {help}"),
            MetricType::Gauge,
        );
        // The cap applies before any label is made: a map of a million keys costs the
        // labels of `max_series` of them (the first in the map's own order, which stays the
        // same while its keys do), then those are sorted.
        let kept = d.entries.len().min(self.opts.max_series);
        let total = total.max(d.entries.len());
        if total > kept {
            *self.dropped.entry(d.name.clone()).or_default() += (total - kept) as u64;
        }
        let mut entries: Vec<(Vec<String>, &Value)> = d.entries[..kept]
            .iter()
            .map(|(k, v)| (Self::label_values(k, r), v))
            .collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        for (values, v) in entries {
            let label_names = names::label_names(&given, values.len());
            let labels: Vec<(String, String)> = label_names
                .into_iter()
                .zip(values.iter().cloned())
                .collect();
            let Some((kind, sample)) = self.sample(&d.name, &values, v) else {
                continue;
            };
            let fam = main.get_or_insert_with(|| Family::new(name.clone(), help.clone(), kind));
            if fam.kind != kind {
                continue;
            }
            if let Value::Agg(AggValue::Stats { sum, count, signed }) = v
                && *count > 0
            {
                avg.push(
                    labels.clone(),
                    Sample::Gauge(num(*sum as u64, *signed) / *count as f64),
                );
            }
            fam.push(labels, sample);
        }
        out.extend(main);
        if !avg.series.is_empty() {
            out.push(avg);
        }
    }

    /// One entry's sample and its family's type; `None` for a value metrics do not carry.
    fn sample(&mut self, map: &str, labels: &[String], v: &Value) -> Option<(MetricType, Sample)> {
        let a = match v {
            Value::Int(i) => return Some((MetricType::Gauge, Sample::Gauge(*i as f64))),
            Value::UInt(u) => return Some((MetricType::Gauge, Sample::Gauge(*u as f64))),
            Value::Bool(b) => {
                return Some((MetricType::Gauge, Sample::Gauge(f64::from(u8::from(*b)))));
            }
            Value::Agg(a) => a,
            _ => return None,
        };
        if let AggValue::Min { value, signed } | AggValue::Max { value, signed } = a {
            let v = (*value)?;
            return Some((MetricType::Gauge, Sample::Gauge(num(v as u64, *signed))));
        }
        let raw = counters(a)?;
        let total = self.monotonic.apply(map, labels, &raw);
        Some(match a {
            AggValue::Count(_) => (MetricType::Counter, Sample::Counter(total[0] as f64)),
            AggValue::Sum { signed, .. } => {
                (MetricType::Counter, Sample::Counter(num(total[0], *signed)))
            }
            AggValue::Avg { signed, .. } | AggValue::Stats { signed, .. } => {
                let buckets = buckets::Buckets {
                    classic: vec![(f64::INFINITY, total[1])],
                    count: total[1],
                    native: None,
                };
                let sum = num(total[0], *signed);
                (MetricType::Histogram, Sample::Histogram { sum, buckets })
            }
            AggValue::Hist { bits, .. } => {
                let (counts, sum) = total.split_at(total.len() - 1);
                let buckets = buckets::log2(counts, *bits);
                let sum = sum[0] as i64 as f64;
                (MetricType::Histogram, Sample::Histogram { sum, buckets })
            }
            AggValue::Lhist { min, max, step, .. } => {
                let (counts, sum) = total.split_at(total.len() - 1);
                let buckets = buckets::linear(counts, *min, *max, *step);
                let sum = sum[0] as i64 as f64;
                (MetricType::Histogram, Sample::Histogram { sum, buckets })
            }
            AggValue::Min { .. } | AggValue::Max { .. } | AggValue::Tseries { .. } => return None,
        })
    }

    /// The run's own families: probes, events, losses, the series the cap dropped and the
    /// last scrape's duration, labelled with the script.
    fn own_families(&self, s: &RunStats) -> Vec<Family> {
        let script = vec![("script".to_string(), self.opts.script.clone())];
        let one = |name: &str, help: &str, kind, sample| {
            let mut f = Family::new(name.to_string(), help.to_string(), kind);
            f.push(script.clone(), sample);
            f
        };
        let mut dropped = Family::new(
            "sonde_series_dropped".into(),
            "series of a map the last scrape left out: beyond the cap on series per map (--metrics-max-series)".into(),
            MetricType::Gauge,
        );
        let mut maps: Vec<_> = self.dropped.iter().collect();
        maps.sort();
        for (map, n) in maps {
            let labels = vec![script[0].clone(), ("map".to_string(), format!("@{map}"))];
            dropped.push(labels, Sample::Gauge(*n as f64));
        }
        vec![
            one(
                "sonde_probes_attached",
                "probes attached",
                MetricType::Gauge,
                Sample::Gauge(s.probes as f64),
            ),
            one(
                "sonde_events",
                "events the run handled",
                MetricType::Counter,
                Sample::Counter(s.events as f64),
            ),
            one(
                "sonde_lost_events",
                "events lost because the ring buffer was full",
                MetricType::Counter,
                Sample::Counter(s.lost_events as f64),
            ),
            one(
                "sonde_map_full_drops",
                "map updates dropped because the map was full",
                MetricType::Counter,
                Sample::Counter(s.map_full as f64),
            ),
            one(
                "sonde_scrape_duration_seconds",
                "how long the previous scrape took",
                MetricType::Gauge,
                Sample::Gauge(s.last_scrape_seconds),
            ),
            dropped,
        ]
    }
}

#[cfg(test)]
mod tests;
