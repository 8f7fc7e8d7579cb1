//! `-f csv`: maps as CSV tables and printf events as CSV rows (RFC 4180: fields with a comma,
//! a quote or a line break are quoted, quotes doubled).
//!
//! - A map prints a header, then one row per entry in print order: `map`, the key (`key`, or
//!   `key1`, `key2`, ... for several keys; none for a map without keys), then the value:
//!   `value` for numbers and other values; `count`, `average`, `total` for `avg` and `stats`;
//!   `lo`, `hi`, `count` for `hist` and `lhist`, one row per bucket as they print (`lo`
//!   inclusive, `hi` exclusive, empty for an open end); `interval_start` (UTC, as in JSON),
//!   `value` for `tseries`, one row per interval holding a value. An empty map prints
//!   nothing.
//! - A printf event is one row of its arguments, as `%s` prints them; a printf without
//!   arguments is one field, its text. `print(value)` is one row (a tuple's items are its
//!   fields); `time()` one field.
//! - Stacks are their frames joined by `;`, innermost first (one per address: functions
//!   inlined there are left out); other values are their text.
//! - Other text (`cat`, `join`, a post-processing script's output) passes through as is; the
//!   exit printout has no leading blank lines.

use super::hist::{buckets, trimmed};
use super::text::value_text;
use super::{MapDump, PrintOpts, Printer, Resolver, ordered_entries};
use sonde_compiler::catalog::aggs::Bucket;
use sonde_compiler::value::{AggValue, Frame, Num, Value};
use sonde_lang::types::{AggKind, Type};
use std::io::{self, Write};

/// A CSV field for `text`, quoted when it must be.
pub fn field(text: &[u8]) -> Vec<u8> {
    if !text
        .iter()
        .any(|b| matches!(b, b',' | b'"' | b'\n' | b'\r'))
    {
        return text.to_vec();
    }
    let mut out = vec![b'"'];
    for &b in text {
        if b == b'"' {
            out.push(b'"');
        }
        out.push(b);
    }
    out.push(b'"');
    out
}

fn frames(frames: &[Frame]) -> Vec<u8> {
    let names: Vec<String> = frames
        .iter()
        .filter(|f| !f.inlined)
        .map(|f| f.symbol.clone().unwrap_or_else(|| format!("{:#x}", f.addr)))
        .collect();
    names.join(";").into_bytes()
}

/// The text of one value in a CSV field.
fn text(v: &Value, r: &dyn Resolver) -> Vec<u8> {
    match v {
        Value::Stack(s) => frames(&s.frames),
        Value::StackId {
            kernel, limit, raw, ..
        } => frames(&r.stack(*kernel, *raw, *limit).unwrap_or_default()),
        other => value_text(other, r, true),
    }
}

/// The fields of a key (none for `Value::None`, one per item of a tuple).
fn key_fields(key: &Value, r: &dyn Resolver) -> Vec<Vec<u8>> {
    match key {
        Value::None => Vec::new(),
        Value::Tuple(items) => items.iter().map(|i| text(i, r)).collect(),
        k => vec![text(k, r)],
    }
}

/// CSV output.
pub struct CsvPrinter<W: Write, R: Resolver> {
    out: W,
    resolver: R,
}

impl<W: Write, R: Resolver> CsvPrinter<W, R> {
    /// A printer writing to `out`, resolving names with `resolver`.
    pub fn new(out: W, resolver: R) -> Self {
        CsvPrinter { out, resolver }
    }

    /// The underlying writer.
    pub fn into_inner(self) -> W {
        self.out
    }

    fn row(&mut self, fields: &[Vec<u8>]) -> io::Result<()> {
        let mut line = Vec::new();
        for (i, f) in fields.iter().enumerate() {
            if i > 0 {
                line.push(b',');
            }
            line.extend(field(f));
        }
        line.push(b'\n');
        self.out.write_all(&line)
    }
}

/// `text` without its trailing newline.
fn chomp(text: &[u8]) -> &[u8] {
    text.strip_suffix(b"\n").unwrap_or(text)
}

impl<W: Write, R: Resolver> Printer for CsvPrinter<W, R> {
    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    fn printf(&mut self, text: &[u8]) -> io::Result<()> {
        self.out.write_all(text)
    }

    fn printf_event(&mut self, text: &[u8], args: &[Value]) -> io::Result<()> {
        if args.is_empty() {
            return self.row(&[chomp(text).to_vec()]);
        }
        let fields: Vec<Vec<u8>> = args.iter().map(|a| text_of(a, &self.resolver)).collect();
        self.row(&fields)
    }

    fn time(&mut self, text: &[u8]) -> io::Result<()> {
        self.row(&[chomp(text).to_vec()])
    }

    fn columns(&mut self, columns: &[String], _: &[u8]) -> io::Result<()> {
        let fields: Vec<Vec<u8>> = columns.iter().map(|c| c.as_bytes().to_vec()).collect();
        CsvPrinter::row(self, &fields)
    }

    fn row(&mut self, _: &[String], fields: &[Value], _: &[u8]) -> io::Result<()> {
        let fields: Vec<Vec<u8>> = fields.iter().map(|a| text_of(a, &self.resolver)).collect();
        CsvPrinter::row(self, &fields)
    }

    fn value(&mut self, value: &Value) -> io::Result<()> {
        let fields = match value {
            Value::Tuple(items) => items.iter().map(|i| text_of(i, &self.resolver)).collect(),
            v => vec![text_of(v, &self.resolver)],
        };
        self.row(&fields)
    }

    fn map(&mut self, map: &MapDump, opts: PrintOpts) -> io::Result<()> {
        let kind = match &map.value_type {
            Type::Agg(k) => Some(k),
            _ => None,
        };
        let is_stats = matches!(kind, Some(AggKind::Stats { .. } | AggKind::Avg { .. }));
        let is_tseries = matches!(kind, Some(AggKind::Tseries { .. }));
        let opts = if is_stats || is_tseries {
            PrintOpts::default()
        } else {
            opts
        };
        let entries = ordered_entries(map, opts.top);
        let Some((first, _)) = entries.first() else {
            return Ok(());
        };
        let mut header = vec![b"map".to_vec()];
        match first {
            Value::None => {}
            Value::Tuple(items) => {
                header.extend((1..=items.len()).map(|i| format!("key{i}").into_bytes()));
            }
            _ => header.push(b"key".to_vec()),
        }
        let hist = matches!(kind, Some(AggKind::Hist { .. } | AggKind::Lhist { .. }));
        let values: &[&str] = if hist {
            &["lo", "hi", "count"]
        } else if is_stats {
            &["count", "average", "total"]
        } else if is_tseries {
            &["interval_start", "value"]
        } else {
            &["value"]
        };
        header.extend(values.iter().map(|v| v.as_bytes().to_vec()));
        self.row(&header)?;
        let name = format!("@{}", map.name).into_bytes();
        let div = opts.div.max(1);
        let last = super::tseries::map_last_epoch(entries.iter().map(|(_, v)| v));
        for (key, value) in &entries {
            let mut start = vec![name.clone()];
            start.extend(key_fields(key, &self.resolver));
            let rows: Vec<Vec<Vec<u8>>> = match value {
                Value::Agg(a @ (AggValue::Hist { .. } | AggValue::Lhist { .. })) => {
                    let all = buckets(a).unwrap_or_default();
                    trimmed(&all)
                        .iter()
                        .map(|(b, c)| {
                            let (lo, hi) = match *b {
                                Bucket::Below(x) => (String::new(), x.to_string()),
                                Bucket::Range { lo, hi } => (lo.to_string(), hi.to_string()),
                                Bucket::Above(x) => (x.to_string(), String::new()),
                            };
                            vec![
                                lo.into_bytes(),
                                hi.into_bytes(),
                                (c / div).to_string().into_bytes(),
                            ]
                        })
                        .collect()
                }
                Value::Agg(a @ AggValue::Tseries { .. }) => super::tseries::rows(a, last)
                    .iter()
                    .filter_map(|r| {
                        let v = r.value?;
                        Some(vec![
                            super::tseries::utc_time(r.ns).into_bytes(),
                            v.to_string().into_bytes(),
                        ])
                    })
                    .collect(),
                Value::Agg(
                    AggValue::Avg { sum, count, signed } | AggValue::Stats { sum, count, signed },
                ) => {
                    let total = Num::new(*sum, *signed);
                    vec![vec![
                        count.to_string().into_bytes(),
                        total.div_trunc(*count).to_string().into_bytes(),
                        total.to_string().into_bytes(),
                    ]]
                }
                Value::Agg(a) => {
                    let n = a
                        .scalar()
                        .map(|n| n.div_trunc(div).to_string())
                        .unwrap_or_default();
                    vec![vec![n.into_bytes()]]
                }
                Value::Int(i) => vec![vec![Num::I(*i).div_trunc(div).to_string().into_bytes()]],
                Value::UInt(u) => vec![vec![Num::U(*u).div_trunc(div).to_string().into_bytes()]],
                other => vec![vec![text(other, &self.resolver)]],
            };
            for r in rows {
                let mut fields = start.clone();
                fields.extend(r);
                self.row(&fields)?;
            }
        }
        Ok(())
    }

    fn exit_maps_start(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The text of a printf argument or printed value.
fn text_of(v: &Value, r: &dyn Resolver) -> Vec<u8> {
    match v {
        Value::Stack(_) | Value::StackId { .. } => text(v, r),
        other => value_text(other, r, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::NoResolver;

    fn printed(f: impl FnOnce(&mut CsvPrinter<Vec<u8>, NoResolver>) -> io::Result<()>) -> String {
        let mut p = CsvPrinter::new(Vec::new(), NoResolver);
        f(&mut p).unwrap();
        String::from_utf8(p.into_inner()).unwrap()
    }

    #[test]
    fn fields_are_quoted_when_they_must_be() {
        assert_eq!(field(b"plain"), b"plain");
        assert_eq!(field(b"a,b"), b"\"a,b\"");
        assert_eq!(field(b"say \"hi\""), b"\"say \"\"hi\"\"\"");
        assert_eq!(field(b"two\nlines"), b"\"two\nlines\"");
    }

    #[test]
    fn maps_are_tables() {
        let counts = MapDump {
            name: "".into(),
            value_type: Type::Agg(AggKind::Count),
            entries: vec![
                (
                    Value::Tuple(vec![Value::Str(b"bash".to_vec()), Value::Int(3)]),
                    Value::Agg(AggValue::Count(10)),
                ),
                (
                    Value::Tuple(vec![Value::Str(b"a,b".to_vec()), Value::Int(1)]),
                    Value::Agg(AggValue::Count(2)),
                ),
            ],
        };
        assert_eq!(
            printed(|p| p.map(&counts, PrintOpts::default())),
            "map,key1,key2,value\n@,\"a,b\",1,2\n@,bash,3,10\n"
        );
        assert_eq!(
            printed(|p| p.map(&counts, PrintOpts { top: 1, div: 2 })),
            "map,key1,key2,value\n@,bash,3,5\n"
        );
        let h = MapDump {
            name: "h".into(),
            value_type: Type::Agg(AggKind::Hist { bits: 0 }),
            entries: vec![(
                Value::None,
                Value::Agg(crate::output::testing::hist(&[-1, 0, 5, 6])),
            )],
        };
        assert_eq!(
            printed(|p| p.map(&h, PrintOpts::default())),
            "map,lo,hi,count\n@h,,0,1\n@h,0,1,1\n@h,1,2,0\n@h,2,4,0\n@h,4,8,2\n"
        );
        let s = MapDump {
            name: "s".into(),
            value_type: Type::Agg(AggKind::Stats { signed: true }),
            entries: vec![(
                Value::Str(b"x".to_vec()),
                Value::Agg(AggValue::Stats {
                    count: 2,
                    sum: 9,
                    signed: true,
                }),
            )],
        };
        assert_eq!(
            printed(|p| p.map(&s, PrintOpts::default())),
            "map,key,count,average,total\n@s,x,2,4,9\n"
        );
        let empty = MapDump {
            entries: vec![],
            ..s
        };
        assert_eq!(printed(|p| p.map(&empty, PrintOpts::default())), "");
    }

    #[test]
    fn printf_events_are_rows_of_their_arguments() {
        assert_eq!(
            printed(|p| p.printf_event(
                b"bash opened /etc/passwd\n",
                &[
                    Value::Str(b"bash".to_vec()),
                    Value::Str(b"/etc/a,b".to_vec()),
                    Value::Int(-2)
                ]
            )),
            "bash,\"/etc/a,b\",-2\n"
        );
        assert_eq!(
            printed(|p| p.printf_event(b"Tracing... Hit Ctrl-C\n", &[])),
            "Tracing... Hit Ctrl-C\n"
        );
        assert_eq!(
            printed(|p| p.printf(b"as is, verbatim\n")),
            "as is, verbatim\n"
        );
        assert_eq!(
            printed(|p| p.value(&Value::Tuple(vec![
                Value::Int(1),
                Value::Str(b"x".to_vec())
            ]))),
            "1,x\n"
        );
        assert_eq!(printed(|p| p.time(b"12:00:01\n")), "12:00:01\n");
    }
}
