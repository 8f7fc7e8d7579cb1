//! The report library registered in the rhai engine: percentiles, top-N, sorting, aligned
//! tables, CSV, human-readable sizes and durations, the padding that tables of numbers need,
//! and sonde's own printers (`print_map`, `print_maps`), which print through the run's
//! printer. Files and processes (`read_file`, `write_file`, `system`) only with `--unsafe`.
//!
//! Every function reports bad input as a rhai error (which becomes a diagnostic at the call);
//! none panics.

use super::convert::{Printed, Tag, untag};
use super::{Chunk, Shared};
use crate::output::MapDump;
use rhai::{Array, Dynamic, Engine, EvalAltResult, FLOAT, INT, Map};
use std::cell::RefCell;
use std::cmp::Ordering;
use std::rc::Rc;

/// A rhai function's result.
type Res<T> = Result<T, Box<EvalAltResult>>;

/// The library's functions with their one-line docs, as docs/reference.md lists them.
pub const FUNCTIONS: &[(&str, &str)] = &[
    (
        "percentile(hist, p)",
        "The value below which `p` percent of a histogram's counts fall (`p` from 0 to 100: 99 for p99): a number inside the bucket that holds that rank, interpolated by rank; `()` for an empty histogram",
    ),
    (
        "top(map, n)",
        "The `n` rows of a keyed map with the largest values, largest first (histograms weigh their total count, `avg`/`stats` their average)",
    ),
    (
        "sort_by_value(map)",
        "The rows of a keyed map sorted by value, smallest first",
    ),
    (
        "table(rows, columns)",
        "Prints `rows` (object maps, or arrays) as aligned columns under a header: `columns` names the fields shown (of array rows: the headers, in order); numbers align right. `table(rows)` shows every field of the first row",
    ),
    (
        "csv(rows, columns)",
        "Prints `rows` as CSV (RFC 4180) under a header of `columns` (`csv(rows)`: the first row's fields); arrays in a cell are joined with `;`",
    ),
    (
        "human_bytes(n)",
        "`n` bytes in binary units: `512 B`, `1.5 KiB`, `3.0 MiB`",
    ),
    (
        "human_ns(n)",
        "`n` nanoseconds in the largest unit under which it is at least 1: `750 ns`, `1.5 us`, `20.0 ms`, `2.25 s`",
    ),
    (
        "print_log2_hist(h, unit)",
        "Prints a histogram as bcc's tools print it (libbpf-tools' `print_log2_hist`): a `UNIT : count distribution` header, then a `low -> high : count` line with a bar of stars per power-of-two slot from 0 to the last non-empty one (nothing for an empty histogram)",
    ),
    (
        "log2_slots(h)",
        "A histogram's power-of-two slots as bcc's tools count them: an array of `#{\"interval-start\", \"interval-end\", count}` from slot 0 (0 and 1) to the last non-empty one, as bcc's `-j` prints them",
    ),
    (
        "now(fmt)",
        "The wall-clock time now, formatted with a strftime format (`now(\"%H:%M:%S\")`)",
    ),
    (
        "print_map(m)",
        "Prints a map of `maps` exactly as sonde prints it (with the `top`/`div` of the `print()` that printed it); rows taken out of a map (`top(m, 5)`, `m.filter(...)`) print as that map with only those rows",
    ),
    (
        "print_maps(maps)",
        "Prints the maps of `maps` as sonde does at exit (two newlines in text output, then the maps by name; an empty map prints nothing, but for an empty `avg`/`stats` map JSON has `{}`, as bpftrace 0.26): the default `on_end`",
    ),
    (
        "lpad(x, width)",
        "`x` as text, padded with spaces on the left to `width` characters (numbers in columns)",
    ),
    (
        "rpad(x, width)",
        "`x` as text, padded with spaces on the right to `width` characters",
    ),
    (
        "fixed(x, digits)",
        "The number `x` with `digits` digits after the point (`fixed(2.5, 2)` is `2.50`)",
    ),
    (
        "read_file(path)",
        "The text of a file (only with `--unsafe`)",
    ),
    (
        "write_file(path, text)",
        "Writes `text` to a file, replacing it (only with `--unsafe`)",
    ),
    (
        "system(cmd)",
        "Runs `cmd` with `/bin/sh -c` and returns what it wrote on standard output (only with `--unsafe`)",
    ),
    (
        "lost_events()",
        "Events the kernel could not hand over (its ring buffer full) in the run so far: what sonde reports as `Lost N events`",
    ),
];

/// Registers the library in `engine`; output goes to `shared`'s chunks.
pub fn register(engine: &mut Engine, shared: &Rc<RefCell<Shared>>) {
    let s = shared.clone();
    engine.on_print(move |text| s.borrow_mut().text(&format!("{text}\n")));
    engine.on_debug(|text, _, pos| match (pos.line(), pos.position()) {
        (Some(l), Some(c)) => eprintln!("sonde: rhai debug at {l}:{c}: {text}"),
        _ => eprintln!("sonde: rhai debug: {text}"),
    });
    engine.register_fn("percentile", |h: Array, p: INT| percentile(&h, p as FLOAT));
    let s = shared.clone();
    engine.register_fn("lost_events", move || s.borrow().lost_events as INT);
    engine.register_fn("percentile", |h: Array, p: FLOAT| percentile(&h, p));
    engine.register_fn("top", |m: Dynamic, n: INT| top(m, n));
    engine.register_fn("sort_by_value", sort_by_value);
    let s = shared.clone();
    engine.register_fn("table", move |rows: Array, cols: Array| -> Res<()> {
        match table(&rows, Some(&cols))? {
            Some(t) => s.borrow_mut().text(&t),
            None => s.borrow_mut().overflowed = true,
        }
        Ok(())
    });
    let s = shared.clone();
    engine.register_fn("table", move |rows: Array| -> Res<()> {
        match table(&rows, None)? {
            Some(t) => s.borrow_mut().text(&t),
            None => s.borrow_mut().overflowed = true,
        }
        Ok(())
    });
    let s = shared.clone();
    engine.register_fn("csv", move |rows: Array, cols: Array| -> Res<()> {
        match csv(&rows, Some(&cols))? {
            Some(t) => s.borrow_mut().text(&t),
            None => s.borrow_mut().overflowed = true,
        }
        Ok(())
    });
    let s = shared.clone();
    engine.register_fn("csv", move |rows: Array| -> Res<()> {
        match csv(&rows, None)? {
            Some(t) => s.borrow_mut().text(&t),
            None => s.borrow_mut().overflowed = true,
        }
        Ok(())
    });
    engine.register_fn("human_bytes", |n: INT| human_bytes(n as FLOAT));
    engine.register_fn("human_bytes", human_bytes);
    engine.register_fn("human_ns", |n: INT| human_ns(n as FLOAT));
    engine.register_fn("human_ns", human_ns);
    engine.register_fn("lpad", |x: Dynamic, w: INT| pad(&x, w, true));
    engine.register_fn("rpad", |x: Dynamic, w: INT| pad(&x, w, false));
    engine.register_fn("fixed", |x: FLOAT, d: INT| fixed(x, d));
    engine.register_fn("fixed", |x: INT, d: INT| fixed(x as FLOAT, d));
    let s = shared.clone();
    engine.register_fn("print_log2_hist", move |h: Array, unit: &str| -> Res<()> {
        let text = super::log2::layout(&log2_buckets(&h)?, unit);
        s.borrow_mut().text(&text);
        Ok(())
    });
    engine.register_fn("log2_slots", |h: Array| -> Res<Array> {
        let slots = super::log2::slots(&log2_buckets(&h)?);
        Ok(slots
            .into_iter()
            .map(|(low, high, count)| {
                let mut m = rhai::Map::new();
                m.insert("interval-start".into(), Dynamic::from_int(low as INT));
                m.insert("interval-end".into(), Dynamic::from_int(high as INT));
                m.insert("count".into(), Dynamic::from_int(count as INT));
                Dynamic::from_map(m)
            })
            .collect())
    });
    engine.register_fn("now", |fmt: &str| sonde_system::clock::strftime_now(fmt));
    let s = shared.clone();
    engine.register_fn("print_map", move |m: Dynamic| -> Res<()> {
        let chunk = select(&s.borrow().table, &m)?;
        if let Some(c) = chunk {
            s.borrow_mut().push(c);
        }
        Ok(())
    });
    let s = shared.clone();
    engine.register_fn("print_maps", move |maps: Map| -> Res<()> {
        let c = exit_maps(&s.borrow().table, &maps)?;
        s.borrow_mut().push(c);
        Ok(())
    });
    register_unsafe(engine, shared);
}

/// `read_file`, `write_file` and `system`, which refuse to run without `--unsafe`.
fn register_unsafe(engine: &mut Engine, shared: &Rc<RefCell<Shared>>) {
    fn allowed(s: &Rc<RefCell<Shared>>, what: &str) -> Res<()> {
        if s.borrow().unsafe_allowed {
            Ok(())
        } else {
            Err(format!("{what} needs --unsafe: a post-processing script has no file or process access without it").into())
        }
    }
    let s = shared.clone();
    engine.register_fn("read_file", move |path: &str| -> Res<String> {
        allowed(&s, "read_file")?;
        let file =
            std::fs::File::open(path).map_err(|e| format!("read_file: cannot read {path}: {e}"))?;
        let bytes = read_bounded(file)
            .map_err(|e| format!("read_file: cannot read {path}: {e}"))?
            .ok_or_else(too_long_string)?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    });
    let s = shared.clone();
    engine.register_fn("write_file", move |path: &str, text: &str| -> Res<()> {
        allowed(&s, "write_file")?;
        std::fs::write(path, text)
            .map_err(|e| format!("write_file: cannot write {path}: {e}").into())
    });
    let s = shared.clone();
    engine.register_fn("system", move |cmd: &str| -> Res<String> {
        allowed(&s, "system")?;
        system(cmd)
    });
}

/// The error of a string past [`super::MAX_STRING`]: rhai's own, a system error (at the
/// callback, as rhai places those), which the diagnostic turns into the limit's words.
fn too_long_string() -> Box<EvalAltResult> {
    EvalAltResult::ErrorDataTooLarge("Length of string".into(), rhai::Position::NONE).into()
}

/// At most [`super::MAX_STRING`] bytes of `from`; `None` when it has more.
fn read_bounded(from: impl std::io::Read) -> std::io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    from.take(super::MAX_STRING as u64 + 1)
        .read_to_end(&mut bytes)?;
    Ok((bytes.len() <= super::MAX_STRING).then_some(bytes))
}

/// `system(cmd)`: what `/bin/sh -c cmd` writes on standard output, at most a string's
/// worth (a command that writes more is killed).
fn system(cmd: &str) -> Res<String> {
    let mut child = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(cmd)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .map_err(|e| format!("system: cannot run {cmd}: {e}"))?;
    let out = child.stdout.take().map(read_bounded).transpose();
    let out = match out {
        Ok(Some(Some(bytes))) => Ok(bytes),
        Ok(None) => Ok(Vec::new()),
        Ok(Some(None)) => {
            let _ = child.kill();
            Err(too_long_string())
        }
        Err(e) => Err(format!("system: cannot read the output of {cmd}: {e}").into()),
    };
    let _ = child.wait();
    out.map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// A number of a rhai value (`INT`, `FLOAT` or `Decimal`).
fn number(d: &Dynamic) -> Option<FLOAT> {
    if let Ok(i) = d.as_int() {
        return Some(i as FLOAT);
    }
    if let Ok(f) = d.as_float() {
        return Some(f);
    }
    d.clone()
        .try_cast::<rust_decimal::Decimal>()
        .and_then(|x| x.to_string().parse().ok())
}

/// A field of an object map.
fn field(m: &Dynamic, name: &str) -> Option<Dynamic> {
    m.read_lock::<Map>().and_then(|m| m.get(name).cloned())
}

/// `percentile(hist, p)`.
/// A histogram's buckets (`#{lo, hi, count}`) for [`super::log2::layout`].
fn log2_buckets(h: &Array) -> Res<Vec<super::log2::Bucket>> {
    h.iter()
        .map(|b| {
            let count = field(b, "count").and_then(|c| c.as_int().ok());
            match count {
                Some(count) => Ok(super::log2::Bucket {
                    lo: field(b, "lo").and_then(|v| v.as_int().ok()),
                    count: count.max(0) as u64,
                }),
                None => Err(format!(
                    "print_log2_hist: expects a histogram (an array of #{{lo, hi, count}}), found {b}"
                )
                .into()),
            }
        })
        .collect()
}

fn percentile(h: &Array, p: FLOAT) -> Res<Dynamic> {
    if !(0.0..=100.0).contains(&p) {
        return Err(format!("percentile: p must be from 0 to 100 (99 for p99), not {p}").into());
    }
    let mut buckets = Vec::with_capacity(h.len());
    for b in h {
        let bad = || -> Box<EvalAltResult> {
            format!("percentile: expects a histogram (an array of #{{lo, hi, count}}), found {b}")
                .into()
        };
        let count = field(b, "count")
            .as_ref()
            .and_then(number)
            .ok_or_else(bad)?;
        let bound = |name| field(b, name).and_then(|v| v.as_int().ok());
        // A count is at most a u64's (as the kernel's are; a float cast saturates): the
        // total of any array's counts fits a u128.
        buckets.push((bound("lo"), bound("hi"), u128::from(count.max(0.0) as u64)));
    }
    let total: u128 = buckets.iter().map(|b| b.2).sum();
    if total == 0 {
        return Ok(Dynamic::UNIT);
    }
    let rank = ((p / 100.0 * total as FLOAT).ceil() as u128).clamp(1, total);
    let mut before = 0u128;
    for (lo, hi, count) in buckets {
        if count == 0 || before + count < rank {
            before += count;
            continue;
        }
        // The rank's place among the bucket's counts, spread evenly inside it.
        let k = rank - before;
        return Ok(match (lo, hi) {
            (Some(lo), Some(hi)) => Dynamic::from_int(spread(lo, hi, k, count)),
            (None, Some(hi)) => Dynamic::from_int(hi.saturating_sub(1)),
            (Some(lo), None) => Dynamic::from_int(lo),
            (None, None) => Dynamic::UNIT,
        });
    }
    Ok(Dynamic::UNIT)
}

/// The `k`th of `count` values spread evenly inside bucket `[lo, hi)`. Counts are at most a
/// u64's; when width times rank does not fit an i128, the place is reckoned in floats.
fn spread(lo: INT, hi: INT, k: u128, count: u128) -> INT {
    let width = i128::from(hi) - i128::from(lo);
    let (k, n) = (k as i128, count as i128 + 1);
    let offset = width.checked_mul(k).map_or_else(
        || (width as FLOAT * (k as FLOAT / n as FLOAT)) as i128,
        |w| w / n,
    );
    let v = i128::from(lo) + offset;
    v.clamp(i128::from(lo.min(hi)), i128::from(lo.max(hi))) as INT
}

/// What a map value sorts by.
fn weight(v: &Dynamic) -> Option<FLOAT> {
    if let Some(n) = number(v) {
        return Some(n);
    }
    if let Some(avg) = field(v, "average") {
        return number(&avg);
    }
    let a = v.read_lock::<Array>()?;
    Some(
        a.iter()
            .filter_map(|b| field(b, "count"))
            .filter_map(|c| number(&c))
            .sum(),
    )
}

/// Compares two rows by value (numbers numerically, other values by their text).
fn by_value(a: &Dynamic, b: &Dynamic) -> Ordering {
    let (va, vb) = (
        field(a, "value").unwrap_or_default(),
        field(b, "value").unwrap_or_default(),
    );
    match (weight(&va), weight(&vb)) {
        (Some(x), Some(y)) => x.total_cmp(&y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => va.to_string().cmp(&vb.to_string()),
    }
}

/// The rows of a keyed map, checked, with the map's tag.
fn rows(m: Dynamic, what: &str) -> Res<(Array, Tag)> {
    let tag = m.tag();
    let type_name = m.type_name();
    let rows = m.try_cast::<Array>().ok_or_else(|| {
        format!("{what}: expects a keyed map (an array of #{{key, value}}), found {type_name}")
    })?;
    if let Some(bad) = rows.iter().find(|r| field(r, "value").is_none()) {
        return Err(format!("{what}: expects rows #{{key, value}}, found {bad}").into());
    }
    Ok((rows, tag))
}

fn tagged(rows: Array, tag: Tag) -> Dynamic {
    let mut d: Dynamic = rows.into();
    d.set_tag(tag);
    d
}

/// `top(map, n)`.
fn top(m: Dynamic, n: INT) -> Res<Dynamic> {
    let (mut rows, tag) = rows(m, "top")?;
    rows.sort_by(|a, b| by_value(b, a));
    rows.truncate(usize::try_from(n).unwrap_or(0));
    Ok(tagged(rows, tag))
}

/// `sort_by_value(map)`.
fn sort_by_value(m: Dynamic) -> Res<Dynamic> {
    let (mut rows, tag) = rows(m, "sort_by_value")?;
    rows.sort_by(by_value);
    Ok(tagged(rows, tag))
}

/// The text of a cell; arrays are joined with `sep`.
fn cell(d: &Dynamic, sep: &str) -> String {
    if d.is_unit() {
        return String::new();
    }
    if let Some(a) = d.read_lock::<Array>() {
        return a.iter().map(|x| cell(x, sep)).collect::<Vec<_>>().join(sep);
    }
    d.to_string()
}

fn is_number(d: &Dynamic) -> bool {
    d.is_int() || d.is_float() || d.is::<rust_decimal::Decimal>()
}

/// The column names of `rows`: `columns` as strings, or the first row's fields.
fn columns(rows: &Array, cols: Option<&Array>, what: &str) -> Res<Vec<String>> {
    match cols {
        Some(cols) => cols
            .iter()
            .map(|c| {
                c.clone()
                    .into_string()
                    .map_err(|t| format!("{what}: column names are strings, found {t}").into())
            })
            .collect(),
        None => Ok(rows
            .first()
            .and_then(|r| {
                r.read_lock::<Map>()
                    .map(|m| m.keys().map(|k| k.to_string()).collect())
            })
            .unwrap_or_default()),
    }
}

/// The cells of `row` under `cols`: fields of an object map, items of an array, or the value
/// itself in the first column.
fn cells(row: &Dynamic, cols: &[String]) -> Vec<Dynamic> {
    if let Some(m) = row.read_lock::<Map>() {
        return cols
            .iter()
            .map(|c| m.get(c.as_str()).cloned().unwrap_or_default())
            .collect();
    }
    if let Some(a) = row.read_lock::<Array>() {
        return a.clone();
    }
    vec![row.clone()]
}

/// `table(rows, columns)`: the aligned text; `None` when it would be longer than a call may
/// print.
fn table(rows: &Array, cols: Option<&Array>) -> Res<Option<String>> {
    let cols = columns(rows, cols, "table")?;
    let body: Vec<Vec<Dynamic>> = rows.iter().map(|r| cells(r, &cols)).collect();
    let n = body.iter().map(Vec::len).max().unwrap_or(0).max(cols.len());
    let text = |row: &[Dynamic], i: usize| row.get(i).map(|d| cell(d, ", ")).unwrap_or_default();
    let mut width = vec![0usize; n];
    let mut right = vec![true; n];
    for (i, c) in cols.iter().enumerate() {
        width[i] = c.chars().count();
    }
    for row in &body {
        for i in 0..n {
            width[i] = width[i].max(text(row, i).chars().count());
            if row.get(i).is_some_and(|d| !d.is_unit() && !is_number(d)) {
                right[i] = false;
            }
        }
    }
    // Every line is as wide as the columns and their gaps at most: never built past what a
    // call may print.
    let line_len = width.iter().map(|w| w + 2).sum::<usize>() + 1;
    if line_len.saturating_mul(body.len() + 1) > super::MAX_OUTPUT {
        return Ok(None);
    }
    let line = |items: Vec<String>| {
        let mut l = String::new();
        for (i, t) in items.iter().enumerate() {
            if i > 0 {
                l.push_str("  ");
            }
            let pad = " ".repeat(width[i].saturating_sub(t.chars().count()));
            if right[i] {
                l.push_str(&pad);
                l.push_str(t);
            } else {
                l.push_str(t);
                if i + 1 < items.len() {
                    l.push_str(&pad);
                }
            }
        }
        l.truncate(l.trim_end().len());
        l + "\n"
    };
    let mut out = String::new();
    if !cols.is_empty() {
        out += &line(
            (0..n)
                .map(|i| cols.get(i).cloned().unwrap_or_default())
                .collect(),
        );
    }
    for row in &body {
        out += &line((0..n).map(|i| text(row, i)).collect());
    }
    Ok(Some(out))
}

/// One CSV field, quoted when it must be.
fn csv_field(t: &str) -> String {
    if t.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", t.replace('"', "\"\""))
    } else {
        t.to_string()
    }
}

/// `csv(rows, columns)`: the CSV text; `None` when it would be longer than a call may print.
fn csv(rows: &Array, cols: Option<&Array>) -> Res<Option<String>> {
    let cols = columns(rows, cols, "csv")?;
    let line = |items: Vec<String>| {
        items
            .iter()
            .map(|t| csv_field(t))
            .collect::<Vec<_>>()
            .join(",")
            + "\n"
    };
    let mut out = String::new();
    if !cols.is_empty() {
        out += &line(cols.clone());
    }
    for r in rows {
        out += &line(cells(r, &cols).iter().map(|d| cell(d, ";")).collect());
        if out.len() > super::MAX_OUTPUT {
            return Ok(None);
        }
    }
    Ok(Some(out))
}

/// `human_bytes(n)`.
fn human_bytes(n: FLOAT) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if n.abs() < 1024.0 {
        return format!("{n} B");
    }
    let mut v = n;
    let mut i = 0;
    while v.abs() >= 1024.0 && i < UNITS.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    format!("{v:.1} {}", UNITS[i])
}

/// `human_ns(n)`.
fn human_ns(n: FLOAT) -> String {
    let a = n.abs();
    if a < 1e3 {
        format!("{n} ns")
    } else if a < 1e6 {
        format!("{:.1} us", n / 1e3)
    } else if a < 1e9 {
        format!("{:.1} ms", n / 1e6)
    } else {
        format!("{:.2} s", n / 1e9)
    }
}

/// `lpad(x, width)` and `rpad(x, width)`: a width past the longest string a script may
/// build is refused before anything is allocated.
fn pad(x: &Dynamic, width: INT, left: bool) -> Res<String> {
    let width = usize::try_from(width).unwrap_or(0);
    if width > super::MAX_STRING {
        return Err(too_long_string());
    }
    let t = cell(x, ", ");
    let fill = " ".repeat(width.saturating_sub(t.chars().count()));
    Ok(if left {
        fill + t.as_str()
    } else {
        t + fill.as_str()
    })
}

/// `fixed(x, digits)`.
fn fixed(x: FLOAT, digits: INT) -> String {
    format!("{x:.*}", usize::try_from(digits).unwrap_or(0).min(30))
}

/// What `print_map(m)` prints: the map (or the rows of it) that `m` came from.
fn select(table: &[Printed], m: &Dynamic) -> Res<Option<Chunk>> {
    let lookup = |map: usize| -> Res<&Printed> {
        table.get(map).ok_or_else(|| {
            "print_map: this map is from an earlier callback; print maps in the callback that received them".into()
        })
    };
    let whole = |p: &Printed, entries| {
        Chunk::Map(
            MapDump {
                entries,
                ..p.dump.clone()
            },
            p.opts,
        )
    };
    match untag(m.tag()) {
        Some((map, None)) if !lookup(map)?.keyed => {
            let p = lookup(map)?;
            return Ok(Some(whole(p, p.dump.entries.clone())));
        }
        Some((map, Some(row))) if m.is_map() => {
            let p = lookup(map)?;
            let e = p.dump.entries.get(row).cloned().into_iter().collect();
            return Ok(Some(whole(p, e)));
        }
        _ => {}
    }
    let Some(rows) = m.read_lock::<Array>() else {
        return Err(format!(
            "print_map: expects a map of `maps` (or rows of one), found {}",
            m.type_name()
        )
        .into());
    };
    let mut from: Option<usize> = untag(m.tag()).map(|(map, _)| map);
    let mut picked = Vec::with_capacity(rows.len());
    for r in rows.iter() {
        let Some((map, Some(row))) = untag(r.tag()) else {
            return Err(format!("print_map: {r} is not a row of a map of `maps`").into());
        };
        if from.is_some_and(|f| f != map) {
            return Err("print_map: these rows come from different maps".into());
        }
        from = Some(map);
        picked.push(row);
    }
    let Some(map) = from else {
        return Ok(None);
    };
    let p = lookup(map)?;
    let entries = picked
        .into_iter()
        .filter_map(|i| p.dump.entries.get(i).cloned())
        .collect();
    Ok(Some(whole(p, entries)))
}

/// What `print_maps(maps)` prints: the maps of `maps`, as at exit (the printers leave out
/// empty ones, as bpftrace 0.26 does).
fn exit_maps(table: &[Printed], maps: &Map) -> Res<Chunk> {
    let mut dumps = Vec::new();
    for (name, v) in maps {
        match untag(v.tag()).and_then(|(m, _)| table.get(m)) {
            Some(p) => dumps.push(p.dump.clone()),
            None => {
                return Err(
                    format!("print_maps: {name} is not a map of this callback's `maps`").into(),
                );
            }
        }
    }
    Ok(Chunk::ExitMaps(dumps))
}

#[cfg(test)]
#[path = "library_tests.rs"]
mod tests;
