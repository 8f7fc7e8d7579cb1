//! `tseries()` maps as bpftrace 0.26 prints them: the text chart, the JSON rows, and the rows
//! the CSV printer and rhai scripts get.
//!
//! A map's series share one time window: the `num_intervals` intervals ending at the latest
//! interval any of its keys wrote ([`map_last_epoch`]); each key's rows start at its first
//! interval in that window holding a value ([`rows`]). An interval's start is a `CLOCK_TAI`
//! time, which bpftrace shows as wall-clock time: local time in the chart, UTC in JSON.
//!
//! The chart (53 columns between `|`s): a header with the smallest and largest value, a
//! `hh:mm:ss[.ms|.μs|.ns]` axis (the precision follows the interval), one line per interval
//! with a `*` placed linearly between them and the value (`-` for an interval without one),
//! a `.` column at zero when the values have both signs, and the bounds again at the bottom.

use sonde_compiler::catalog::aggs::tseries::{latest_epoch, series_rows};
use sonde_compiler::value::{AggValue, Num, Value};

/// Columns of the plot, the `|` borders included.
const GRAPH_WIDTH: usize = 53;
/// Width the smallest value is padded to in the header and footer.
const PADDING: usize = 21;
const NS_PER_SEC: u64 = 1_000_000_000;

/// One interval of a series.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    /// The interval's start: nanoseconds since the epoch of `CLOCK_TAI`.
    pub ns: u64,
    /// Its value, `None` when nothing was recorded in it.
    pub value: Option<Num>,
}

/// The latest interval of a map's series, over every key (0 when nothing was written).
pub fn map_last_epoch<'a>(values: impl IntoIterator<Item = &'a Value>) -> u64 {
    values
        .into_iter()
        .filter_map(|v| match v {
            Value::Agg(AggValue::Tseries { points, .. }) => Some(latest_epoch(points)),
            _ => None,
        })
        .max()
        .unwrap_or(0)
}

/// The rows of a series whose map's latest interval is `last` (empty for other values).
pub fn rows(value: &AggValue, last: u64) -> Vec<Row> {
    let AggValue::Tseries {
        interval_ns,
        num_intervals,
        signed,
        points,
    } = value
    else {
        return Vec::new();
    };
    series_rows(points, *interval_ns, *num_intervals, last)
        .into_iter()
        .map(|(ns, v)| Row {
            ns,
            value: v.map(|bits| Num::new(bits, *signed)),
        })
        .collect()
}

/// The rows of a series printed on its own (its own latest interval ends the window).
pub fn own_rows(value: &AggValue) -> Vec<Row> {
    match value {
        AggValue::Tseries { points, .. } => rows(value, latest_epoch(points)),
        _ => Vec::new(),
    }
}

/// A value's sort key: no value sorts first, as bpftrace's empty primitive does.
fn key(v: Option<Num>) -> Option<i128> {
    v.map(Num::wide)
}

fn text(v: Option<Num>) -> String {
    v.map_or_else(|| "null".to_string(), |n| n.to_string())
}

/// One less, unless at the type's minimum.
fn dec(v: Option<Num>) -> Option<Num> {
    v.map(|n| match n {
        Num::I(i) => Num::I(i.checked_sub(1).unwrap_or(i)),
        Num::U(u) => Num::U(u.checked_sub(1).unwrap_or(u)),
    })
}

/// One more, unless at the type's maximum.
fn inc(v: Option<Num>) -> Option<Num> {
    v.map(|n| match n {
        Num::I(i) => Num::I(i.checked_add(1).unwrap_or(i)),
        Num::U(u) => Num::U(u.checked_add(1).unwrap_or(u)),
    })
}

/// bpftrace's `p - other` for the chart's positions, in 64 bits (0 when either is empty).
fn distance(p: Option<Num>, other: Option<Num>) -> i64 {
    let o = match other {
        Some(Num::I(o)) => o,
        Some(Num::U(o)) => o as i64,
        None => return 0,
    };
    match p {
        Some(Num::I(v)) => v.wrapping_sub(o),
        Some(Num::U(v)) if o < 0 => (o.wrapping_neg() as u64).wrapping_add(v) as i64,
        Some(Num::U(v)) if v > o as u64 => (v - o as u64) as i64,
        Some(Num::U(v)) => ((o as u64).wrapping_sub(v) as i64).wrapping_neg(),
        None => 0,
    }
}

/// `scale * a / b` in single precision, truncated (as bpftrace computes its offsets).
fn offset(scale: usize, a: i64, b: i64) -> i32 {
    (scale as f32 * a as f32 / b as f32) as i32
}

/// `s` padded with spaces to `width` bytes (`std::setw`, which counts bytes).
fn pad_right(s: &str, width: usize) -> String {
    format!("{s}{}", " ".repeat(width.saturating_sub(s.len())))
}

/// `s` right-aligned in `width` bytes.
fn pad_left(s: &str, width: usize) -> String {
    format!("{}{s}", " ".repeat(width.saturating_sub(s.len())))
}

/// Digits of the fraction of a second the time axis shows for this interval, and their unit.
fn precision(interval_ns: u64) -> (u32, &'static str) {
    if interval_ns >= NS_PER_SEC {
        (0, "")
    } else if interval_ns >= 1_000_000 {
        (3, "ms")
    } else if interval_ns >= 1_000 {
        (6, "μs")
    } else {
        (9, "ns")
    }
}

/// The chart of a series, each line ending in a newline, or `<no data>` (without one) for a
/// series without rows. `hms` formats whole seconds since the epoch as `HH:MM:SS`
/// ([`local_hms`] for the terminal).
pub fn chart(rows: &[Row], hms: &dyn Fn(i64) -> String) -> String {
    let (Some(first), Some(last)) = (rows.first(), rows.last()) else {
        return "<no data>".into();
    };
    let (mut min, mut max) = (first.value, first.value);
    for v in rows.iter().filter_map(|r| r.value) {
        if key(Some(v)) < key(min) {
            min = Some(v);
        }
        if key(Some(v)) > key(max) {
            max = Some(v);
        }
    }
    if key(min) == key(max) {
        // Room on both sides of a flat series, where the type allows.
        (min, max) = (dec(min), inc(max));
    }
    let interval = last.ns.wrapping_sub(first.ns) / (rows.len().max(2) as u64 - 1);
    let (digits, unit) = precision(interval);
    let mut axis = String::from("hh:mm:ss");
    let mut time_size = axis.len();
    if digits > 0 {
        axis = format!("{axis}.{unit}");
        time_size += 1 + digits as usize;
    }
    let bounds = format!(
        "{}{}{}\n",
        " ".repeat(time_size + 1),
        pad_right(&text(min), PADDING),
        pad_left(&text(max), GRAPH_WIDTH - PADDING)
    );
    let mut out = bounds.clone();
    out += &format!(
        "{}|{}|\n",
        pad_right(&axis, time_size + 1),
        "_".repeat(GRAPH_WIDTH - 2)
    );
    let zero = Some(Num::I(0));
    let zero_at = if distance(min, zero) < 0 && distance(zero, max) < 0 {
        offset(GRAPH_WIDTH, distance(min, zero), distance(min, max))
    } else {
        0
    };
    for row in rows {
        let mut line = vec![b' '; GRAPH_WIDTH];
        line[0] = b'|';
        line[GRAPH_WIDTH - 1] = b'|';
        if zero_at > 0 && (zero_at as usize) < GRAPH_WIDTH {
            line[zero_at as usize] = b'.';
        }
        let tail = match row.value {
            Some(v) => {
                let at = if key(min) == key(max) {
                    (GRAPH_WIDTH / 2) as i32
                } else {
                    offset(GRAPH_WIDTH - 1, distance(min, Some(v)), distance(min, max))
                };
                line[at.clamp(0, GRAPH_WIDTH as i32 - 1) as usize] = b'*';
                format!(" {v}")
            }
            None => " -".into(),
        };
        out += &format!(
            "{} {}{tail}\n",
            time_text(row.ns, digits, hms),
            String::from_utf8_lossy(&line)
        );
    }
    out += &format!(
        "{} v{}v\n",
        " ".repeat(time_size),
        "_".repeat(GRAPH_WIDTH - 2)
    );
    out.push_str(&bounds);
    out
}

/// `HH:MM:SS` and `digits` digits of the second's fraction (after a `.`).
fn time_text(ns: u64, digits: u32, hms: &dyn Fn(i64) -> String) -> String {
    let (secs, frac) = ((ns / NS_PER_SEC) as i64, ns % NS_PER_SEC);
    let hms = hms(secs);
    match digits {
        3 => format!("{hms}.{:03}", frac / 1_000_000),
        6 => format!("{hms}.{:06}", frac / 1_000),
        9 => format!("{hms}.{frac:09}"),
        _ => hms,
    }
}

/// Whole seconds since the epoch as local `HH:MM:SS`.
pub fn local_hms(secs: i64) -> String {
    sonde_system::clock::strftime_at("%H:%M:%S", secs, 0)
}

/// Whole seconds since the epoch as UTC `HH:MM:SS`.
pub fn utc_hms(secs: i64) -> String {
    let s = secs.rem_euclid(86_400);
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// Nanoseconds since the epoch as UTC `YYYY-MM-DD HH:MM:SS.nnnnnnnnn` (how bpftrace's JSON
/// writes an interval's start).
pub fn utc_time(ns: u64) -> String {
    let secs = (ns / NS_PER_SEC) as i64;
    // Days to a civil date (Howard Hinnant's algorithm).
    let z = secs.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {}.{:09}",
        utc_hms(secs),
        ns % NS_PER_SEC
    )
}

/// The JSON of a series: `[{"interval_start":"...","value":N},...]`, intervals without a
/// value left out.
pub fn json(rows: &[Row]) -> String {
    let items: Vec<String> = rows
        .iter()
        .filter_map(|r| {
            let v = r.value?;
            Some(format!(
                "{{\"interval_start\":\"{}\",\"value\":{v}}}",
                utc_time(r.ns)
            ))
        })
        .collect();
    format!("[{}]", items.join(","))
}

#[cfg(test)]
#[path = "tseries_tests.rs"]
mod tests;
