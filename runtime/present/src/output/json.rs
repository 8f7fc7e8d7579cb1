//! bpftrace's `-f json` output (0.26's messages): one JSON object per line,
//! `{"type": T, "data": D}`.
//!
//! Types: `attached_probes` and `lost_events` (with a `count` beside `data`, as bpftrace
//! 0.26 writes them), `printf`, `time`, `cat`, `join`, `syscall` (`system()`'s output),
//! `value`, `map` (counts, sums, min/max and plain values), `hist` (hist and lhist: bucket
//! lists of `{"min", "max", "count"}`), `stats` (avg as a number, stats as `{"count",
//! "average", "total"}`), `tseries` (lists of `{"interval_start", "value"}`, the start in UTC)
//! and `helper_error` (`-k`: `msg`, `helper`, `retcode`, `filename`,
//! `line`, `col` instead of `data`). sonde's own counters have their own types:
//! `map_full`, `loops_cut`, `stacks_dropped`, `lost_address_maps`, `probes_skipped`,
//! `address_maps_dropped`.
//! Keys print as strings, multi-key maps joined with `,`; tuples and bucket lists are arrays
//! without spaces. Empty maps print nothing, and nothing separates the maps printed at exit
//! (bpftrace 0.17 wrote two blank lines there). Unlike bpftrace 0.17, non-ASCII bytes are not
//! mangled: valid UTF-8 passes through and other bytes are escaped as `\u00NN`, so the output
//! is always valid JSON.

use super::hist::{buckets, trimmed};
use super::text::value_text;
use super::{MapDump, PrintOpts, Printer, Resolver, ordered_entries};
use sonde_compiler::catalog::aggs::Bucket;
use sonde_compiler::value::{AggValue, Num, Value};
use sonde_lang::span::Span;
use sonde_lang::types::{AggKind, Type};
use std::io::{self, Write};

/// A JSON string literal for `bytes` (bpftrace's escapes: `\"`, `\\`, `\n`, `\r`, `\t`,
/// other control characters as `\u00NN`).
pub fn json_string(bytes: &[u8]) -> String {
    let mut out = String::from("\"");
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\u{:04x}", b));
        }
    }
    out.push('"');
    out
}

fn num(n: Num, div: u64) -> String {
    n.div_trunc(div.max(1)).to_string()
}

/// The JSON of a value (numbers, strings, arrays for tuples and arrays, objects for
/// records).
pub fn json_value(v: &Value, r: &dyn Resolver) -> String {
    match v {
        Value::None => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::UInt(u) | Value::Ptr(u) => u.to_string(),
        Value::Enum { value, .. } => value.to_string(),
        Value::Tuple(items) | Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(|i| json_value(i, r)).collect();
            format!("[{}]", parts.join(","))
        }
        Value::Record { fields, .. } => {
            let parts: Vec<String> = fields
                .iter()
                .map(|(k, fv)| format!("{}: {}", json_string(k.as_bytes()), json_value(fv, r)))
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
        Value::Agg(a) => agg_json(a, 1),
        other => json_string(&value_text(other, r, false)),
    }
}

fn hist_json(a: &AggValue, div: u64) -> String {
    let all = buckets(a).unwrap_or_default();
    let parts: Vec<String> = trimmed(&all)
        .iter()
        .map(|(b, c)| {
            let c = c / div.max(1);
            match b {
                Bucket::Below(x) => format!("{{\"max\": {}, \"count\": {c}}}", x - 1),
                Bucket::Range { lo, hi } => {
                    format!("{{\"min\": {lo}, \"max\": {}, \"count\": {c}}}", hi - 1)
                }
                Bucket::Above(x) => format!("{{\"min\": {x}, \"count\": {c}}}"),
            }
        })
        .collect();
    format!("[{}]", parts.join(","))
}

fn agg_json(a: &AggValue, div: u64) -> String {
    match a {
        AggValue::Hist { .. } | AggValue::Lhist { .. } => hist_json(a, div),
        AggValue::Tseries { .. } => super::tseries::json(&super::tseries::own_rows(a)),
        AggValue::Stats { count, sum, signed } => format!(
            "{{\"count\": {count}, \"average\": {}, \"total\": {}}}",
            Num::new(*sum, *signed).div_trunc(*count),
            Num::new(*sum, *signed)
        ),
        other => other
            .scalar()
            .map(|n| num(n, div))
            .unwrap_or_else(|| "0".into()),
    }
}

fn key_json(key: &Value, r: &dyn Resolver) -> String {
    let text = match key {
        Value::Tuple(items) => {
            let parts: Vec<Vec<u8>> = items.iter().map(|i| value_text(i, r, true)).collect();
            parts.join(&b","[..])
        }
        k => value_text(k, r, true),
    };
    json_string(&text)
}

/// The JSON event type of a map with values of type `ty`.
fn map_type(ty: &Type) -> &'static str {
    match ty {
        Type::Agg(AggKind::Hist { .. } | AggKind::Lhist { .. }) => "hist",
        Type::Agg(AggKind::Avg { .. } | AggKind::Stats { .. }) => "stats",
        Type::Agg(AggKind::Tseries { .. }) => "tseries",
        _ => "map",
    }
}

/// NDJSON output as `bpftrace -f json`.
pub struct JsonPrinter<W: Write, R: Resolver> {
    out: W,
    resolver: R,
}

impl<W: Write, R: Resolver> JsonPrinter<W, R> {
    /// A printer writing to `out`, resolving names with `resolver`.
    pub fn new(out: W, resolver: R) -> Self {
        JsonPrinter { out, resolver }
    }

    /// The underlying writer.
    pub fn into_inner(self) -> W {
        self.out
    }

    fn event(&mut self, ty: &str, data: &str) -> io::Result<()> {
        writeln!(self.out, "{{\"type\": \"{ty}\", \"data\": {data}}}")
    }
}

impl<W: Write, R: Resolver> Printer for JsonPrinter<W, R> {
    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    fn attached(&mut self, probes: usize) -> io::Result<()> {
        writeln!(
            self.out,
            "{{\"type\": \"attached_probes\", \"count\": {probes}, \"data\": {{\"probes\": {probes}}}}}"
        )
    }

    fn counts(&mut self, new: crate::output::Counts, max_entries: u32) -> io::Result<()> {
        // bpftrace's record for lost events; sonde's own for the other counters.
        if new.lost_events > 0 {
            let n = new.lost_events;
            writeln!(
                self.out,
                "{{\"type\": \"lost_events\", \"count\": {n}, \"data\": {{\"events\": {n}}}}}"
            )?;
        }
        if new.map_full > 0 {
            let data = format!(
                "{{\"updates\": {}, \"max_entries\": {max_entries}}}",
                new.map_full
            );
            self.event("map_full", &data)?;
        }
        if new.loops_cut > 0 {
            let data = format!(
                "{{\"loops\": {}, \"limit\": {}}}",
                new.loops_cut,
                sonde_lang::limits::MAX_LOOP_ITERATIONS
            );
            self.event("loops_cut", &data)?;
        }
        if new.stacks_dropped > 0 {
            let data = format!("{{\"stacks\": {}}}", new.stacks_dropped);
            self.event("stacks_dropped", &data)?;
        }
        if new.maps_lost > 0 {
            let data = format!("{{\"records\": {}}}", new.maps_lost);
            self.event("lost_address_maps", &data)?;
        }
        if new.probes_skipped > 0 {
            let data = format!("{{\"firings\": {}}}", new.probes_skipped);
            self.event("probes_skipped", &data)?;
        }
        if new.maps_evicted > 0 {
            let data = format!(
                "{{\"processes\": {}, \"limit\": {}}}",
                new.maps_evicted,
                sonde_system::symbols::procmaps::MAX_EXITED_KEPT
            );
            self.event("address_maps_dropped", &data)?;
        }
        Ok(())
    }

    fn printf(&mut self, text: &[u8]) -> io::Result<()> {
        self.event("printf", &json_string(text))
    }

    fn self_test(&mut self, _: &[u8], record_type: &str, json: &str) -> io::Result<()> {
        self.event(record_type, json)
    }

    fn time(&mut self, text: &[u8]) -> io::Result<()> {
        self.event("time", &json_string(text))
    }

    fn columns(&mut self, _: &[String], _: &[u8]) -> io::Result<()> {
        Ok(())
    }

    fn row(&mut self, columns: &[String], fields: &[Value], _: &[u8]) -> io::Result<()> {
        let items: Vec<String> = fields
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let name = columns
                    .get(i)
                    .cloned()
                    .unwrap_or_else(|| format!("field{}", i + 1));
                format!(
                    "{}: {}",
                    json_string(name.as_bytes()),
                    json_value(v, &self.resolver)
                )
            })
            .collect();
        self.event("row", &format!("{{{}}}", items.join(", ")))
    }

    fn cat(&mut self, text: &[u8]) -> io::Result<()> {
        self.event("cat", &json_string(text))
    }

    fn join(&mut self, text: &[u8]) -> io::Result<()> {
        self.event("join", &json_string(text))
    }

    fn syscall(&mut self, text: &[u8]) -> io::Result<()> {
        self.event("syscall", &json_string(text))
    }

    fn helper_error(&mut self, helper: &str, retcode: i64, span: Span) -> io::Result<()> {
        let place = sonde_system::warnings::place(span);
        writeln!(
            self.out,
            "{{\"type\": \"helper_error\", \"msg\": {}, \"helper\": {}, \"retcode\": {retcode}, \"filename\": {}, \"line\": {}, \"col\": {}}}",
            json_string(sonde_system::warnings::errno_text(retcode).as_bytes()),
            json_string(helper.as_bytes()),
            json_string(place.file.as_bytes()),
            place.line,
            place.col
        )
    }

    fn log(&mut self, error: bool, text: &str, span: Span) -> io::Result<()> {
        if !error && sonde_system::warnings::silenced() {
            return Ok(());
        }
        let place = sonde_system::warnings::place(span);
        writeln!(
            self.out,
            "{{\"type\": \"{}\", \"msg\": {}, \"filename\": {}, \"line\": {}, \"col\": {}}}",
            if error { "errorf" } else { "warnf" },
            json_string(text.as_bytes()),
            json_string(place.file.as_bytes()),
            place.line,
            place.col
        )
    }

    fn value(&mut self, value: &Value) -> io::Result<()> {
        let data = json_value(value, &self.resolver);
        self.event("value", &data)
    }

    fn map(&mut self, map: &MapDump, opts: PrintOpts) -> io::Result<()> {
        let opts = if matches!(
            map.value_type,
            Type::Agg(AggKind::Stats { .. } | AggKind::Tseries { .. })
        ) {
            PrintOpts::default()
        } else {
            opts
        };
        let entries = ordered_entries(map, opts.top);
        if entries.is_empty() {
            // bpftrace 0.26 prints nothing for an empty map, except an `avg`/`stats` one,
            // whose value is an empty object.
            if matches!(
                map.value_type,
                Type::Agg(AggKind::Avg { .. } | AggKind::Stats { .. })
            ) {
                let data = format!(
                    "{{{}: {{}}}}",
                    json_string(format!("@{}", map.name).as_bytes())
                );
                return self.event("stats", &data);
            }
            return Ok(());
        }
        // A map's time series share its latest interval.
        let last = super::tseries::map_last_epoch(entries.iter().map(|(_, v)| v));
        let val = |v: &Value| match v {
            Value::Agg(a @ AggValue::Tseries { .. }) => {
                super::tseries::json(&super::tseries::rows(a, last))
            }
            Value::Agg(a) => agg_json(a, opts.div),
            Value::Int(i) if opts.div > 1 => num(Num::I(*i), opts.div),
            Value::UInt(u) if opts.div > 1 => num(Num::U(*u), opts.div),
            other => json_value(other, &self.resolver),
        };
        let body = match entries.as_slice() {
            [(Value::None, v)] => val(v),
            _ => {
                let parts: Vec<String> = entries
                    .iter()
                    .map(|(k, v)| format!("{}: {}", key_json(k, &self.resolver), val(v)))
                    .collect();
                format!("{{{}}}", parts.join(", "))
            }
        };
        let data = format!(
            "{{{}: {body}}}",
            json_string(format!("@{}", map.name).as_bytes())
        );
        self.event(map_type(&map.value_type), &data)
    }

    /// Nothing: bpftrace 0.26 separates the maps printed at exit from the messages before
    /// them only in text output.
    fn exit_maps_start(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
#[path = "json_tests.rs"]
mod tests;
