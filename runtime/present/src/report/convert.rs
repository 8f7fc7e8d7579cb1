//! Decoded values → rhai values, and the tags that lead a rhai value back to the map it came
//! from (so that `print_map(m)` prints with sonde's own printer).
//!
//! Shapes (docs/reference.md, Post-processing):
//! - integers are `INT` (`i64`); an unsigned value above `i64::MAX` is a `Decimal`, exact;
//! - strings, symbols, user names, addresses and every other value printed as text are
//!   strings, as sonde prints them; a stack is an array of frame strings (`func+off`, or the
//!   hex address of a frame that did not resolve); tuples and arrays are arrays; records are
//!   object maps of their fields;
//! - `count`, `sum`, `min`, `max` are numbers; `avg` and `stats` are `#{count, average,
//!   total}`; `hist` and `lhist` are arrays of `#{lo, hi, count}` buckets (`lo` inclusive, `hi`
//!   exclusive; `()` for the open end of the first or last bucket), from the first to the last
//!   non-empty bucket, as they print; `tseries` is an array of `#{time, value}` intervals as
//!   they print (`time` the interval's start in nanoseconds since the epoch, `value` `()` for
//!   an interval without a value);
//! - a map with keys is an array of `#{key, value}` rows in the order sonde prints them; a map
//!   without keys is its value (`()` when it is empty, `[]` for an empty histogram).
//!
//! Tags: the value of map `m` of a callback's table carries the tag `(m + 1) << ROW_BITS`, and
//! row `r` of it `(m + 1) << ROW_BITS | (r + 1)`. Rhai keeps a value's tag through copies,
//! so rows picked out of a map (`top`, `filter`) still name their map and entry.

use crate::output::hist::{buckets, trimmed};
use crate::output::text::value_text;
use crate::output::{MapDump, PrintOpts, Resolver};
use rhai::{Array, Dynamic, INT, Map};
use sonde_compiler::catalog::aggs::Bucket;
use sonde_compiler::value::{AggValue, Frame, Num, Value, sort_entries};
use sonde_lang::types::{AggKind, StackMode, Type};

/// A rhai value's tag (`rhai::Tag` on 64-bit targets, which rhai does not export).
pub type Tag = i32;

/// Bits of a tag that number the row of a map (the bits above number the map).
const ROW_BITS: u32 = 20;
/// The most maps a callback's table can tag (11 bits, keeping the tag positive).
const MAX_TAGGED_MAPS: usize = (1 << 11) - 1;
/// The most rows of one map that can be tagged.
const MAX_TAGGED_ROWS: usize = (1 << ROW_BITS) - 1;

/// One map handed to a callback, as sonde would print it.
#[derive(Clone, Debug, PartialEq)]
pub struct Printed {
    /// The map, its entries in print order.
    pub dump: MapDump,
    /// The options of the `print()` that printed it (default at exit).
    pub opts: PrintOpts,
    /// True for a map with keys (its rhai value is an array of rows).
    pub keyed: bool,
}

impl Printed {
    /// `dump` with its entries sorted as sonde prints them.
    pub fn new(mut dump: MapDump, opts: PrintOpts, keyed: bool) -> Printed {
        sort_entries(&mut dump.entries);
        Printed { dump, opts, keyed }
    }
}

/// The tag of map `map` as a whole (0 when there are too many maps to tag).
fn map_tag(map: usize) -> Tag {
    if map >= MAX_TAGGED_MAPS {
        return 0;
    }
    ((map + 1) << ROW_BITS) as Tag
}

/// The tag of row `row` of map `map` (0 when it cannot be tagged).
fn row_tag(map: usize, row: usize) -> Tag {
    if map >= MAX_TAGGED_MAPS || row >= MAX_TAGGED_ROWS {
        return 0;
    }
    (((map + 1) << ROW_BITS) | (row + 1)) as Tag
}

/// What a tag names: the map, and the row (`None` for the whole map). `None` for an
/// untagged value.
pub fn untag(tag: Tag) -> Option<(usize, Option<usize>)> {
    let tag = usize::try_from(tag).ok()?;
    let map = (tag >> ROW_BITS).checked_sub(1)?;
    let row = (tag & MAX_TAGGED_ROWS).checked_sub(1);
    Some((map, row))
}

/// An unsigned number: an `INT` when it fits, else an exact `Decimal`.
pub fn unsigned(u: u64) -> Dynamic {
    match INT::try_from(u) {
        Ok(i) => Dynamic::from_int(i),
        Err(_) => Dynamic::from_decimal(rust_decimal::Decimal::from(u)),
    }
}

fn num(n: Num) -> Dynamic {
    match n {
        Num::I(i) => Dynamic::from_int(i),
        Num::U(u) => unsigned(u),
    }
}

/// Text as a rhai string (bytes that are not UTF-8 become U+FFFD).
fn text(bytes: &[u8]) -> Dynamic {
    String::from_utf8_lossy(bytes).into_owned().into()
}

/// A stack's frames, one per address (functions inlined there are left out): strings
/// (`func+off`, or the address in hex when unresolved), or, for a
/// stack of perf mode (`ustack(perf)`), `#{addr, symbol, object}` maps (`addr` the
/// address's 64 bits as an integer) (`symbol` and `object` (the module's path)
/// `()` when unknown), so that a report can lay frames out as another tool does (memleak's
/// `0x... func+0x18 [prog]`).
fn frames(frames: &[Frame], mode: StackMode) -> Dynamic {
    let optional = |s: &Option<String>| s.clone().map_or(Dynamic::UNIT, Dynamic::from);
    let a: Array = frames
        .iter()
        .filter(|f| !f.inlined)
        .map(|f| match mode {
            StackMode::Perf => {
                let mut m = Map::new();
                // The address's 64 bits (a kernel address reads negative; `to_hex()` prints
                // it as it is).
                m.insert("addr".into(), Dynamic::from_int(f.addr as INT));
                m.insert("symbol".into(), optional(&f.symbol));
                m.insert("object".into(), optional(&f.module));
                Dynamic::from_map(m)
            }
            _ => f
                .symbol
                .clone()
                .unwrap_or_else(|| format!("{:#x}", f.addr))
                .into(),
        })
        .collect();
    a.into()
}

/// The buckets of a histogram as `#{lo, hi, count}` maps.
fn hist(a: &AggValue) -> Dynamic {
    let all = buckets(a).unwrap_or_default();
    let bound = |b: i128| INT::try_from(b).map_or(Dynamic::UNIT, Dynamic::from_int);
    let rows: Array = trimmed(&all)
        .iter()
        .map(|(b, count)| {
            let (lo, hi) = match *b {
                Bucket::Below(x) => (Dynamic::UNIT, bound(x)),
                Bucket::Range { lo, hi } => (bound(lo), bound(hi)),
                Bucket::Above(x) => (bound(x), Dynamic::UNIT),
            };
            let mut m = Map::new();
            m.insert("lo".into(), lo);
            m.insert("hi".into(), hi);
            m.insert("count".into(), unsigned(*count));
            Dynamic::from_map(m)
        })
        .collect();
    rows.into()
}

/// The intervals of a time series as `#{time, value}` maps.
fn series(rows: &[crate::output::tseries::Row]) -> Dynamic {
    let rows: Array = rows
        .iter()
        .map(|row| {
            let mut m = Map::new();
            m.insert("time".into(), unsigned(row.ns));
            m.insert("value".into(), row.value.map_or(Dynamic::UNIT, num));
            Dynamic::from_map(m)
        })
        .collect();
    rows.into()
}

/// A map entry's value; the time series of a map share its latest interval `last`.
fn entry_value(v: &Value, last: u64, r: &dyn Resolver) -> Dynamic {
    match v {
        Value::Agg(a @ AggValue::Tseries { .. }) => series(&crate::output::tseries::rows(a, last)),
        other => value(other, r),
    }
}

/// An aggregation's value.
fn agg(a: &AggValue) -> Dynamic {
    match a {
        AggValue::Hist { .. } | AggValue::Lhist { .. } => hist(a),
        AggValue::Tseries { .. } => series(&crate::output::tseries::own_rows(a)),
        AggValue::Avg { sum, count, signed } | AggValue::Stats { sum, count, signed } => {
            let mut m = Map::new();
            m.insert("count".into(), unsigned(*count));
            m.insert(
                "average".into(),
                num(Num::new(*sum, *signed).div_trunc(*count)),
            );
            m.insert("total".into(), num(Num::new(*sum, *signed)));
            Dynamic::from_map(m)
        }
        other => other.scalar().map_or(Dynamic::UNIT, num),
    }
}

/// A decoded value as a rhai value; names (symbols, stacks, users) come from `r`.
pub fn value(v: &Value, r: &dyn Resolver) -> Dynamic {
    match v {
        Value::None => Dynamic::UNIT,
        Value::Bool(b) => (*b).into(),
        Value::Int(i) => Dynamic::from_int(*i),
        Value::UInt(u) | Value::Ptr(u) => unsigned(*u),
        Value::Enum { value, .. } => Dynamic::from_int(*value),
        Value::Str(s) => text(s),
        Value::Tuple(items) | Value::Array(items) => {
            let a: Array = items.iter().map(|i| value(i, r)).collect();
            a.into()
        }
        Value::Record { fields, .. } => {
            let m: Map = fields
                .iter()
                .map(|(k, f)| (k.as_str().into(), value(f, r)))
                .collect();
            Dynamic::from_map(m)
        }
        Value::StackId {
            kernel,
            limit,
            raw,
            mode,
        } => frames(&r.stack(*kernel, *raw, *limit).unwrap_or_default(), *mode),
        Value::Stack(s) => frames(&s.frames, s.mode),
        Value::Agg(a) => agg(a),
        other => text(&value_text(other, r, false)),
    }
}

/// The value of an empty map without keys: `[]` for a histogram, else `()`.
fn empty(ty: &Type) -> Dynamic {
    match ty {
        Type::Agg(AggKind::Hist { .. } | AggKind::Lhist { .. } | AggKind::Tseries { .. }) => {
            Array::new().into()
        }
        _ => Dynamic::UNIT,
    }
}

/// Map `index` of a callback's table as a rhai value, tagged.
pub fn map_value(index: usize, p: &Printed, r: &dyn Resolver) -> Dynamic {
    let last = crate::output::tseries::map_last_epoch(p.dump.entries.iter().map(|(_, v)| v));
    let mut d = if p.keyed {
        let rows: Array = p
            .dump
            .entries
            .iter()
            .enumerate()
            .map(|(i, (k, v))| {
                let mut m = Map::new();
                m.insert("key".into(), value(k, r));
                m.insert("value".into(), entry_value(v, last, r));
                let mut row = Dynamic::from_map(m);
                row.set_tag(row_tag(index, i));
                row
            })
            .collect();
        rows.into()
    } else {
        match p.dump.entries.first() {
            Some((_, v)) => entry_value(v, last, r),
            None => empty(&p.dump.value_type),
        }
    };
    d.set_tag(map_tag(index));
    d
}

/// The `maps` argument of `on_interval` and `on_end`: every map of `table` by its name as
/// written (`@h`, `@`).
pub fn maps_object(table: &[Printed], r: &dyn Resolver) -> Map {
    table
        .iter()
        .enumerate()
        .map(|(i, p)| (format!("@{}", p.dump.name).into(), map_value(i, p, r)))
        .collect()
}

/// The event object of `on_event`: `#{kind, text, args}` (and `format` for printf).
pub fn event_object(
    kind: &str,
    text_bytes: &[u8],
    args: &[Value],
    format: Option<&str>,
    r: &dyn Resolver,
) -> Map {
    let mut m = Map::new();
    m.insert("kind".into(), kind.into());
    m.insert("text".into(), text(text_bytes));
    let args: Array = args.iter().map(|a| value(a, r)).collect();
    m.insert("args".into(), args.into());
    if let Some(f) = format {
        m.insert("format".into(), f.into());
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::NoResolver;
    use sonde_compiler::value::Stack;

    #[test]
    fn tags_name_a_map_and_a_row() {
        assert_eq!(untag(map_tag(0)), Some((0, None)));
        assert_eq!(untag(row_tag(3, 7)), Some((3, Some(7))));
        assert_eq!(untag(0), None);
        assert_eq!(untag(map_tag(MAX_TAGGED_MAPS)), None);
        assert_eq!(
            untag(row_tag(2046, MAX_TAGGED_ROWS - 1)),
            Some((2046, Some(MAX_TAGGED_ROWS - 1)))
        );
        assert!(row_tag(2046, MAX_TAGGED_ROWS - 1) > 0);
    }

    #[test]
    fn values_keep_their_types() {
        let r = NoResolver;
        assert_eq!(value(&Value::Int(-3), &r).as_int(), Ok(-3));
        assert_eq!(value(&Value::UInt(7), &r).as_int(), Ok(7));
        let big = value(&Value::UInt(u64::MAX), &r);
        assert_eq!(big.to_string(), "18446744073709551615");
        assert_eq!(
            value(&Value::Str(b"bash".to_vec()), &r)
                .into_string()
                .unwrap(),
            "bash"
        );
        let t = value(
            &Value::Tuple(vec![Value::Int(1), Value::Str(b"x".to_vec())]),
            &r,
        );
        assert_eq!(t.to_string(), "[1, \"x\"]");
        let s = Value::Stack(Stack {
            kernel: true,
            mode: StackMode::Bpftrace,
            frames: vec![
                Frame {
                    addr: 0x10,
                    symbol: Some("f+1".into()),
                    module: None,
                    ..Frame::default()
                },
                Frame {
                    addr: 0x20,
                    symbol: None,
                    module: None,
                    ..Frame::default()
                },
            ],
        });
        assert_eq!(value(&s, &r).to_string(), "[\"f+1\", \"0x20\"]");
        // In perf mode, each frame is a map: the address, and the symbol and module when
        // known.
        let Value::Stack(mut perf) = s else {
            unreachable!()
        };
        perf.mode = StackMode::Perf;
        perf.frames[0].module = Some("/bin/prog".into());
        let frames = value(&Value::Stack(perf), &r).into_array().unwrap();
        let first = frames[0].clone().cast::<Map>();
        assert_eq!(first["addr"].as_int(), Ok(0x10));
        assert_eq!(first["symbol"].to_string(), "f+1");
        assert_eq!(first["object"].to_string(), "/bin/prog");
        let second = frames[1].clone().cast::<Map>();
        assert!(second["symbol"].is_unit() && second["object"].is_unit());
        let stats = value(
            &Value::Agg(AggValue::Stats {
                count: 2,
                sum: 7,
                signed: true,
            }),
            &r,
        );
        assert_eq!(
            stats.to_string(),
            "#{\"average\": 3, \"count\": 2, \"total\": 7}"
        );
    }

    #[test]
    fn histograms_are_bucket_lists() {
        let h = AggValue::Lhist {
            min: 0,
            max: 20,
            step: 10,
            buckets: vec![1, 0, 2, 3],
            sum: 0,
        };
        assert_eq!(
            hist(&h).to_string(),
            "[#{\"count\": 1, \"hi\": 0, \"lo\": ()}, #{\"count\": 0, \"hi\": 10, \"lo\": 0}, \
             #{\"count\": 2, \"hi\": 20, \"lo\": 10}, #{\"count\": 3, \"hi\": (), \"lo\": 20}]"
        );
    }

    #[test]
    fn maps_with_and_without_keys() {
        let r = NoResolver;
        let keyed = Printed::new(
            MapDump {
                name: "c".into(),
                value_type: Type::Agg(AggKind::Count),
                entries: vec![
                    (Value::Str(b"b".to_vec()), Value::Agg(AggValue::Count(5))),
                    (Value::Str(b"a".to_vec()), Value::Agg(AggValue::Count(2))),
                ],
            },
            PrintOpts::default(),
            true,
        );
        let empty_hist = Printed::new(
            MapDump {
                name: "h".into(),
                value_type: Type::Agg(AggKind::Hist { bits: 0 }),
                entries: vec![],
            },
            PrintOpts::default(),
            false,
        );
        let maps = maps_object(&[keyed, empty_hist], &r);
        let c = maps.get("@c").unwrap();
        assert_eq!(
            c.to_string(),
            "[#{\"key\": \"a\", \"value\": 2}, #{\"key\": \"b\", \"value\": 5}]"
        );
        assert_eq!(untag(c.tag()), Some((0, None)));
        let rows = c.clone().into_array().unwrap();
        assert_eq!(untag(rows[1].tag()), Some((0, Some(1))));
        let h = maps.get("@h").unwrap();
        assert_eq!(h.to_string(), "[]");
        assert_eq!(untag(h.tag()), Some((1, None)));
    }
}
