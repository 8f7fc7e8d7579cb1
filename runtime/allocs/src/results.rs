//! What one harness run measured, as the harness writes it (one JSON object) and its caller
//! reads it back.

use crate::ops::Call;
use serde_json::{Value, json};

/// One function's latencies.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FnLatency {
    /// The function's name.
    pub name: String,
    /// Calls timed.
    pub count: u64,
    /// Median, in nanoseconds.
    pub p50: u64,
    /// 99th percentile, in nanoseconds.
    pub p99: u64,
}

/// One harness run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Results {
    /// From the start of the replay to its last call, nanoseconds.
    pub wall_ns: u64,
    /// Resident bytes of the harness just before the replay (its own tables).
    pub baseline_rss: u64,
    /// The highest resident set during the replay, less the baseline.
    pub peak_rss: u64,
    /// Anonymous resident bytes at the end, less the baseline.
    pub end_rss: u64,
    /// The most bytes alive at once, as the replay's successful calls made them.
    pub peak_live: u64,
    /// Bytes alive at the end.
    pub end_live: u64,
    /// Calls made per function (by name).
    pub calls: Vec<(String, u64)>,
    /// Allocations that failed in the replay.
    pub failed: u64,
    /// Latencies per function called.
    pub latency: Vec<FnLatency>,
    /// (step, live bytes, anonymous resident bytes less the baseline), in step order.
    pub samples: Vec<(u64, u64, u64)>,
    /// System calls the harness made itself while named for the count (by name).
    pub own_syscalls: Vec<(String, u64)>,
    /// The file `malloc` came from in the harness (the preloaded library, or libc).
    pub malloc_from: String,
}

fn pairs(v: &[(String, u64)]) -> Value {
    Value::Object(v.iter().map(|(k, n)| (k.clone(), json!(n))).collect())
}

fn read_pairs(v: &Value) -> Vec<(String, u64)> {
    v.as_object()
        .map(|o| {
            o.iter()
                .map(|(k, n)| (k.clone(), n.as_u64().unwrap_or(0)))
                .collect()
        })
        .unwrap_or_default()
}

impl Results {
    /// The JSON object the harness writes.
    pub fn to_json(&self) -> String {
        let latency: Vec<Value> = self
            .latency
            .iter()
            .map(|l| json!({"name": l.name, "count": l.count, "p50": l.p50, "p99": l.p99}))
            .collect();
        json!({
            "wall_ns": self.wall_ns,
            "baseline_rss": self.baseline_rss,
            "peak_rss": self.peak_rss,
            "end_rss": self.end_rss,
            "peak_live": self.peak_live,
            "end_live": self.end_live,
            "calls": pairs(&self.calls),
            "failed": self.failed,
            "latency": latency,
            "samples": self.samples,
            "own_syscalls": pairs(&self.own_syscalls),
            "malloc_from": self.malloc_from,
        })
        .to_string()
    }

    /// Reads what [`Results::to_json`] wrote.
    pub fn from_json(text: &str) -> Result<Results, String> {
        let v: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let n = |k: &str| v[k].as_u64().ok_or(format!("no `{k}`"));
        let latency = v["latency"]
            .as_array()
            .ok_or("no `latency`")?
            .iter()
            .map(|l| FnLatency {
                name: l["name"].as_str().unwrap_or("").to_string(),
                count: l["count"].as_u64().unwrap_or(0),
                p50: l["p50"].as_u64().unwrap_or(0),
                p99: l["p99"].as_u64().unwrap_or(0),
            })
            .collect();
        let samples = v["samples"]
            .as_array()
            .ok_or("no `samples`")?
            .iter()
            .filter_map(|s| Some((s[0].as_u64()?, s[1].as_u64()?, s[2].as_u64()?)))
            .collect();
        Ok(Results {
            wall_ns: n("wall_ns")?,
            baseline_rss: n("baseline_rss")?,
            peak_rss: n("peak_rss")?,
            end_rss: n("end_rss")?,
            peak_live: n("peak_live")?,
            end_live: n("end_live")?,
            calls: read_pairs(&v["calls"]),
            failed: n("failed")?,
            latency,
            samples,
            own_syscalls: read_pairs(&v["own_syscalls"]),
            malloc_from: v["malloc_from"].as_str().unwrap_or("").to_string(),
        })
    }

    /// The calls made of `call`.
    pub fn calls_of(&self, call: Call) -> u64 {
        self.calls
            .iter()
            .find(|(k, _)| k == call.name())
            .map_or(0, |c| c.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_read_back_as_written() {
        let r = Results {
            wall_ns: 5,
            peak_rss: 4096,
            calls: vec![("malloc".into(), 3)],
            latency: vec![FnLatency {
                name: "malloc".into(),
                count: 3,
                p50: 20,
                p99: 40,
            }],
            samples: vec![(0, 16, 4096)],
            own_syscalls: vec![("prctl".into(), 2)],
            ..Results::default()
        };
        assert_eq!(Results::from_json(&r.to_json()), Ok(r.clone()));
        assert_eq!(r.calls_of(Call::Malloc), 3);
        assert!(Results::from_json("{}").is_err());
    }
}
