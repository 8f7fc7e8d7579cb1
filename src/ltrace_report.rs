//! The `ltrace -c` summary of the ltrace tool: per function, the share of time, total
//! seconds, microseconds per call and calls, sorted by time, from the tool's `@calls` and
//! `@ns` maps (keyed by function name).

use super::memusage_report::count_of;
use sonde_compiler::value::Value;
use sonde_runtime::output::MapDump;
use std::collections::BTreeMap;

/// Per function name: `(calls, nanoseconds)`.
fn per_function(maps: &[MapDump]) -> BTreeMap<String, (u64, u64)> {
    let mut out: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for m in maps {
        for (k, v) in &m.entries {
            let Value::Str(name) = k else { continue };
            let name = String::from_utf8_lossy(name).into_owned();
            let e = out.entry(name).or_default();
            match m.name.as_str() {
                "calls" => e.0 = count_of(v),
                "ns" => e.1 = count_of(v),
                _ => {}
            }
        }
    }
    out
}

/// The `ltrace -c` style table.
pub fn report(maps: &[MapDump]) -> String {
    let funcs = per_function(maps);
    let mut rows: Vec<(&String, &(u64, u64))> = funcs.iter().filter(|(_, (c, _))| *c > 0).collect();
    rows.sort_by(|a, b| b.1.1.cmp(&a.1.1).then(a.0.cmp(b.0)));
    let total_ns: u64 = rows.iter().map(|(_, (_, ns))| ns).sum();
    let total_calls: u64 = rows.iter().map(|(_, (c, _))| c).sum();
    let rule = "------ ----------- ----------- --------- --------------------\n";
    let mut out = String::from("% time     seconds  usecs/call     calls      function\n");
    out += rule;
    for (name, (calls, ns)) in &rows {
        let pct = if total_ns == 0 {
            0.0
        } else {
            *ns as f64 * 100.0 / total_ns as f64
        };
        out += &format!(
            "{pct:6.2} {:11.6} {:11} {calls:9} {name}\n",
            *ns as f64 / 1e9,
            ns / 1000 / calls
        );
    }
    out += rule;
    out += &format!(
        "100.00 {:11.6} {:11} {total_calls:9} total\n",
        total_ns as f64 / 1e9,
        ""
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_compiler::value::AggValue;
    use sonde_lang::types::{AggKind, Type};

    fn map(name: &str, entries: &[(&str, u64)], kind: AggKind) -> MapDump {
        MapDump {
            name: name.into(),
            value_type: Type::Agg(kind),
            entries: entries
                .iter()
                .map(|(k, v)| {
                    (
                        Value::Str(k.as_bytes().to_vec()),
                        Value::Agg(AggValue::Count(*v)),
                    )
                })
                .collect(),
        }
    }

    #[test]
    fn table_sorted_by_time_with_a_total() {
        let maps = [
            map("calls", &[("strlen", 10), ("malloc", 2)], AggKind::Count),
            map(
                "ns",
                &[("strlen", 20_000), ("malloc", 60_000)],
                AggKind::Count,
            ),
        ];
        assert_eq!(
            report(&maps),
            "% time     seconds  usecs/call     calls      function\n\
             ------ ----------- ----------- --------- --------------------\n \
             75.00    0.000060          30         2 malloc\n \
             25.00    0.000020           2        10 strlen\n\
             ------ ----------- ----------- --------- --------------------\n\
             100.00    0.000080                    12 total\n"
        );
    }
}
