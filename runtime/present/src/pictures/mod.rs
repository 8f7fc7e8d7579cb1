//! Pictures: every image sonde draws is made here, from what a run prints.
//!
//! - [`heatmap`]: latency heatmaps (`--heatmap FILE.svg`), from the `hist()`/`lhist()` maps
//!   a script prints every interval (one column per print) or from printf events of
//!   (time, latency);
//! - [`term`]: the same heatmap in the terminal (`--term-heatmap`), redrawn each interval;
//! - [`chart`]: line charts of values over time (`--chart FILE.svg`, memusage's memory
//!   chart), from printf events of (time, values...);
//! - [`flame`]: flame graphs (`--flamegraph`) and differential flame graphs (`sonde
//!   flamediff`), drawn by inferno;
//! - [`svgdoc`] and [`scale`]: the SVG primitives (on the `svg` crate) and the colours,
//!   ticks and number forms the charts share.
//!
//! During a run, the session (`sonde_session::Output`) hands a [`Pictures`] the maps of
//! each run of `print(@map)` events (the same tick the post-processing script's
//! `on_interval` sees) and the arguments of each printf event; at the end of the run
//! [`Pictures::finish`] draws the files, and says on stderr where each was written. What a
//! picture needs is checked against the script before it runs ([`Pictures::new`]): a
//! heatmap of a script without a histogram is a diagnostic, not an empty file; so is a file
//! that cannot be written ([`check_destination`]).

pub mod chart;
pub mod flame;
pub mod heatmap;
pub mod scale;
pub mod svgdoc;
pub mod term;

use crate::report::Printed;
use heatmap::Column;
use sonde_compiler::program::{CompiledScript, EventSpec, MapRole};
use sonde_compiler::value::{AggValue, Value};
use sonde_lang::diag::Diagnostic;
use sonde_lang::span::Span;
use sonde_lang::types::{AggKind, Type};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The pictures a run draws, from the command line.
#[derive(Clone, Debug, Default)]
pub struct PictureOptions {
    /// `--heatmap FILE`: a latency heatmap SVG.
    pub heatmap: Option<PathBuf>,
    /// `--term-heatmap`: a heatmap of the last intervals on the terminal, at each interval.
    pub heatmap_term: bool,
    /// `--chart FILE`: a line chart SVG of printf'd values over time.
    pub chart: Option<PathBuf>,
    /// The pictures' title (a tool sets its name); a default names what is drawn.
    pub title: Option<String>,
}

impl PictureOptions {
    /// True when no picture is asked for.
    pub fn is_empty(&self) -> bool {
        self.heatmap.is_none() && !self.heatmap_term && self.chart.is_none()
    }
}

/// The interval columns of one histogram map.
struct MapColumns {
    name: String,
    columns: Vec<Column>,
}

/// What a run's pictures are drawn from, collected as it prints.
pub struct Pictures {
    opts: PictureOptions,
    start: Instant,
    /// Columns of every histogram map printed during the run.
    maps: Vec<MapColumns>,
    /// (time, latency) pairs of printf events of two integers, for the heatmap.
    points: Vec<(u64, i64)>,
    /// The format of the printf events charted, and their rows.
    chart_format: Option<String>,
    /// The names string arguments gave the series (`%s=%d`), from the first event.
    chart_names: Vec<Option<String>>,
    chart_rows: Vec<(u64, Vec<i64>)>,
    /// Whether standard output is a terminal (`--term-heatmap` draws only there).
    terminal: bool,
}

/// The error for a picture the script cannot feed.
fn unfit(code: &'static str, message: String, help: &str) -> Diagnostic {
    Diagnostic::error(code, Span::default(), message).with_help(help.to_string())
}

const HEATMAP_HELP: &str = "a heatmap needs a hist() or lhist() map printed and cleared every interval (`interval:s:1 { print(@h); clear(@h); }`), or printf events of two integers, a time in nanoseconds and a latency (`printf(\"%d %d\\n\", nsecs, $lat)`)";
const CHART_HELP: &str = "a chart needs printf events of integers: a time in nanoseconds, then the values, named in the format (`printf(\"%d heap=%d\\n\", nsecs, @heap)`)";

/// True for a histogram aggregation (`hist`, `lhist`).
fn is_hist(ty: &Type) -> bool {
    matches!(ty, Type::Agg(AggKind::Hist { .. } | AggKind::Lhist { .. }))
}

/// The integers of a printf event's arguments, or `None` when one is not an integer.
/// Whether printf arguments of these kinds (`Some(true)` an integer, `Some(false)` a
/// string, `None` else) can be charted: a time first, then series, each integer perhaps
/// after a string that names it (`%s=%d`).
fn chartable(kinds: impl Iterator<Item = Option<bool>>) -> bool {
    let (mut ints, mut named) = (0, false);
    for k in kinds {
        match k {
            Some(true) => (ints, named) = (ints + 1, false),
            Some(false) if ints > 0 && !named => named = true,
            _ => return false,
        }
    }
    ints >= 2 && !named
}

/// A charted printf's integers, and the name each series after the first is given by the
/// string argument before it, if any.
fn named_integers(values: &[Value]) -> Option<(Vec<i64>, Vec<Option<String>>)> {
    let kinds = values.iter().map(|v| match v {
        Value::Int(_) | Value::UInt(_) => Some(true),
        Value::Str(_) => Some(false),
        _ => None,
    });
    if !chartable(kinds) {
        return None;
    }
    let (mut ints, mut names, mut name) = (Vec::new(), Vec::new(), None);
    for v in values {
        match v {
            Value::Str(b) => name = Some(String::from_utf8_lossy(b).into_owned()),
            v => {
                ints.extend(integers(std::slice::from_ref(v)));
                names.push(name.take());
            }
        }
    }
    Some((ints.concat(), names.split_off(1)))
}

fn integers(values: &[Value]) -> Option<Vec<i64>> {
    values
        .iter()
        .map(|v| match v {
            Value::Int(i) => Some(*i),
            Value::UInt(u) => Some(*u as i64),
            _ => None,
        })
        .collect()
}

impl Pictures {
    /// The collector for the pictures `opts` asks of `script`; `None` when it asks for none.
    /// A picture the script cannot draw is an error: a heatmap needs a histogram map that
    /// is printed or a printf of two integers, a chart a printf of two or more integers.
    pub fn new(
        opts: PictureOptions,
        script: &CompiledScript,
    ) -> Result<Option<Pictures>, Diagnostic> {
        if opts.is_empty() {
            return Ok(None);
        }
        for (flag, path) in [("--heatmap", &opts.heatmap), ("--chart", &opts.chart)] {
            if let Some(path) = path {
                check_destination(flag, path)?;
            }
        }
        let printfs = || {
            script.events.iter().filter_map(|e| match e {
                EventSpec::Printf { args, .. } => Some(args),
                _ => None,
            })
        };
        let printed_hist = script.events.iter().any(|e| match e {
            EventSpec::PrintMap { map, .. } => script.maps.iter().any(|m| {
                matches!(&m.role, MapRole::User { name, value, .. } if name == map && is_hist(value))
            }),
            _ => false,
        });
        let pairs = printfs().any(|a| a.len() == 2 && a.iter().all(Type::is_integer));
        if (opts.heatmap.is_some() || opts.heatmap_term) && !printed_hist && !pairs {
            return Err(unfit(
                "sonde::pictures::heatmap",
                "--heatmap: this script prints no histogram and no (time, latency) event to draw"
                    .into(),
                HEATMAP_HELP,
            ));
        }
        let series = printfs().any(|a| {
            chartable(a.iter().map(|t| match t {
                t if t.is_integer() => Some(true),
                Type::Str { .. } => Some(false),
                _ => None,
            }))
        });
        if opts.chart.is_some() && !series {
            return Err(unfit(
                "sonde::pictures::chart",
                "--chart: this script prints no event of numbers to draw".into(),
                CHART_HELP,
            ));
        }
        let terminal = std::io::IsTerminal::is_terminal(&std::io::stdout());
        if opts.heatmap_term && !terminal {
            eprintln!(
                "sonde: warning: --term-heatmap draws only when standard output is a terminal"
            );
        }
        Ok(Some(Pictures {
            terminal,
            opts,
            start: Instant::now(),
            maps: Vec::new(),
            points: Vec::new(),
            chart_format: None,
            chart_names: Vec::new(),
            chart_rows: Vec::new(),
        }))
    }

    /// Takes the maps of one run of `print(@map)` events: each histogram map adds a column
    /// (its entries' histograms summed) ending now. Returns the terminal heatmap to print,
    /// when one is asked for and standard output is a terminal.
    pub fn tick(&mut self, table: &[Printed]) -> Option<String> {
        let now = self.start.elapsed().as_secs_f64();
        for p in table.iter().filter(|p| is_hist(&p.dump.value_type)) {
            let value = merged(p.dump.entries.iter().map(|(_, v)| v));
            let i = match self.maps.iter().position(|m| m.name == p.dump.name) {
                Some(i) => i,
                None => {
                    self.maps.push(MapColumns {
                        name: p.dump.name.clone(),
                        columns: Vec::new(),
                    });
                    self.maps.len() - 1
                }
            };
            let columns = &mut self.maps[i].columns;
            let start = columns.last().map_or(0.0, |c| c.end);
            // An empty map prints as nothing: its column is empty, in the layout of the
            // map's other columns when it has some.
            let value = value.or_else(|| columns.last().map(|c| emptied(&c.value)));
            if let Some(value) = value {
                columns.push(Column {
                    start,
                    end: now.max(start),
                    value,
                });
            }
        }
        if !(self.opts.heatmap_term && self.terminal) {
            return None;
        }
        let m = self.busiest()?;
        let from = m.columns.len().saturating_sub(term::COLUMNS);
        let grid = heatmap::Grid::new(
            &format!("@{}", m.name),
            &format!("@{}", m.name),
            &m.columns[from..],
        );
        Some(term::render(&grid))
    }

    /// Takes the arguments of a printf event with format `format`.
    pub fn printf(&mut self, format: &str, values: &[Value]) {
        if let Some(ints) = integers(values)
            && self.opts.heatmap.is_some()
            && ints.len() == 2
        {
            self.points.push((ints[0] as u64, ints[1]));
        }
        let Some((ints, names)) = named_integers(values) else {
            return;
        };
        if self.opts.chart.is_some() {
            if self.chart_format.is_none() {
                self.chart_format = Some(format.to_string());
                self.chart_names = names;
            }
            if self.chart_format.as_deref() == Some(format) {
                self.chart_rows.push((ints[0] as u64, ints[1..].to_vec()));
            }
        }
    }

    /// The histogram map with the most events.
    fn busiest(&self) -> Option<&MapColumns> {
        let total =
            |m: &MapColumns| -> u64 { m.columns.iter().filter_map(|c| c.value.hist_total()).sum() };
        self.maps
            .iter()
            .filter(|m| !m.columns.is_empty())
            .reduce(|a, b| if total(b) > total(a) { b } else { a })
    }

    /// Draws the pictures into their files.
    pub fn finish(self) -> Result<(), Diagnostic> {
        if let Some(path) = &self.opts.heatmap {
            self.write_heatmap(path)?;
        }
        if let Some(path) = &self.opts.chart {
            self.write_chart(path)?;
        }
        Ok(())
    }

    fn write_heatmap(&self, path: &Path) -> Result<(), Diagnostic> {
        let (name, columns) = match self.busiest() {
            Some(m) => (format!("@{}", m.name), m.columns.clone()),
            None if !self.points.is_empty() => {
                ("latency".to_string(), heatmap::bin_points(&self.points))
            }
            None => {
                return Err(unfit(
                    "sonde::pictures::heatmap",
                    format!(
                        "nothing to draw in {}: no histogram was printed during the run and no (time, latency) event came",
                        path.display()
                    ),
                    HEATMAP_HELP,
                ));
            }
        };
        let title = match &self.opts.title {
            Some(t) => format!("Latency heatmap of {name}: {t}"),
            None => format!("Latency heatmap: {name}"),
        };
        let grid = heatmap::Grid::new(&title, &name, &columns);
        save(&heatmap::render(&grid), path)?;
        eprintln!("heatmap written to {}", path.display());
        Ok(())
    }

    fn write_chart(&self, path: &Path) -> Result<(), Diagnostic> {
        let Some(format) = &self.chart_format else {
            return Err(unfit(
                "sonde::pictures::chart",
                format!(
                    "nothing to draw in {}: no event of numbers came",
                    path.display()
                ),
                CHART_HELP,
            ));
        };
        // Series named by a string argument (`%s=%d`) keep it; the others are named after
        // the word before their conversion.
        let words = chart::series_names(format);
        let mut words = words.iter().filter(|w| !w.starts_with("value "));
        let names: Vec<String> = self
            .chart_names
            .iter()
            .enumerate()
            .map(|(i, n)| match n {
                Some(n) => n.clone(),
                None => words.next().cloned().unwrap_or(format!("value {}", i + 1)),
            })
            .collect();
        let bytes = names
            .iter()
            .any(|n| n == "heap" || n == "stack" || n.ends_with("bytes"));
        let what = if bytes {
            "Memory use over time"
        } else {
            "Values over time"
        };
        let title = match &self.opts.title {
            Some(t) => format!("{what}: {t}"),
            None => what.to_string(),
        };
        let c = chart::Chart::new(
            &title,
            if bytes { "bytes" } else { "value" },
            &names,
            &self.chart_rows,
        );
        save(&chart::render(&c), path)?;
        eprintln!("chart written to {}", path.display());
        Ok(())
    }
}

/// Checks, before the run, that the picture of option `flag` can be written to `path`: it
/// is not a directory, its directory exists, and a file can be opened there for writing
/// (one made for the test is removed; an existing one is left as it is).
pub fn check_destination(flag: &str, path: &Path) -> Result<(), Diagnostic> {
    let fail = |why: String| {
        unfit(
            "sonde::pictures::write",
            format!("{flag}: cannot write {}: {why}", path.display()),
            "the picture is written at the end of the run: give a path in a writable directory",
        )
    };
    if path.is_dir() {
        return Err(fail("it is a directory".into()));
    }
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.is_dir() {
        return Err(fail(format!("{} is not a directory", dir.display())));
    }
    if path.exists() {
        std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| fail(e.to_string()))?;
    } else {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| fail(e.to_string()))?;
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

/// Writes `doc` to `path`; a failure is a diagnostic.
fn save(doc: &svgdoc::Doc, path: &Path) -> Result<(), Diagnostic> {
    doc.save(path).map_err(|e| {
        unfit(
            "sonde::pictures::write",
            format!("cannot write {}: {e}", path.display()),
            "check that the directory exists and is writable",
        )
    })
}

/// The histograms of `values` summed bucket by bucket (a map's keys in one column);
/// `None` when there are none. Histograms laid out differently from the first are left out.
fn merged<'a>(values: impl Iterator<Item = &'a Value>) -> Option<AggValue> {
    let mut sum: Option<AggValue> = None;
    for v in values {
        let Value::Agg(a @ (AggValue::Hist { .. } | AggValue::Lhist { .. })) = v else {
            continue;
        };
        match (&mut sum, a) {
            (None, a) => sum = Some(a.clone()),
            (
                Some(AggValue::Hist {
                    bits,
                    buckets,
                    sum: total,
                }),
                AggValue::Hist {
                    bits: b2,
                    buckets: more,
                    sum: s2,
                },
            ) if bits == b2 && buckets.len() == more.len() => {
                buckets.iter_mut().zip(more).for_each(|(x, y)| *x += y);
                *total = total.wrapping_add(*s2);
            }
            (
                Some(AggValue::Lhist {
                    min,
                    max,
                    step,
                    buckets,
                    sum: total,
                }),
                AggValue::Lhist {
                    min: m2,
                    max: x2,
                    step: s2,
                    buckets: more,
                    sum: more_sum,
                },
            ) if (*min, *max, *step) == (*m2, *x2, *s2) && buckets.len() == more.len() => {
                buckets.iter_mut().zip(more).for_each(|(x, y)| *x += y);
                *total = total.wrapping_add(*more_sum);
            }
            _ => {}
        }
    }
    sum
}

/// `value` with every count zero.
fn emptied(value: &AggValue) -> AggValue {
    let mut v = value.clone();
    if let AggValue::Hist { buckets, .. } | AggValue::Lhist { buckets, .. } = &mut v {
        buckets.iter_mut().for_each(|b| *b = 0);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(counts: &[(usize, u64)]) -> Value {
        let mut buckets = vec![0; 65];
        for (i, c) in counts {
            buckets[*i] = *c;
        }
        Value::Agg(AggValue::Hist {
            bits: 0,
            buckets,
            sum: 0,
        })
    }

    #[test]
    fn keys_of_a_map_merge_into_one_column() {
        let a = hist(&[(3, 2)]);
        let b = hist(&[(3, 1), (5, 4)]);
        let m = merged([&a, &b, &Value::Int(3)].into_iter()).unwrap();
        assert_eq!(m.hist_total(), Some(7));
        assert_eq!(merged(std::iter::empty()), None);
        assert_eq!(emptied(&m).hist_total(), Some(0));
    }

    #[test]
    fn destinations_are_checked_before_the_run() {
        let dir = std::env::temp_dir().join(format!("sonde-dest-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let new = dir.join("new.svg");
        check_destination("--chart", &new).unwrap();
        assert!(!new.exists(), "the test file is removed");
        let old = dir.join("old.svg");
        std::fs::write(&old, "kept").unwrap();
        check_destination("--chart", &old).unwrap();
        assert_eq!(std::fs::read_to_string(&old).unwrap(), "kept");
        let d = check_destination("--heatmap", &dir).unwrap_err();
        assert_eq!(d.code, "sonde::pictures::write");
        assert!(d.message.contains("it is a directory"), "{}", d.message);
        let d = check_destination("--heatmap", &dir.join("no/x.svg")).unwrap_err();
        assert!(
            d.message.starts_with("--heatmap: cannot write ")
                && d.message.contains("is not a directory"),
            "{}",
            d.message
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn printf_integers() {
        assert_eq!(
            integers(&[Value::Int(-1), Value::UInt(2)]),
            Some(vec![-1, 2])
        );
        assert_eq!(integers(&[Value::Int(1), Value::Str(b"x".to_vec())]), None);
    }

    #[test]
    fn a_string_before_a_series_names_it() {
        let s = |t: &str| Value::Str(t.as_bytes().to_vec());
        assert_eq!(
            named_integers(&[Value::Int(5), Value::Int(1), s("glibc"), Value::Int(2)]),
            Some((vec![5, 1, 2], vec![None, Some("glibc".into())]))
        );
        // A string that names nothing, or a time that is a string, is no chart.
        assert_eq!(
            named_integers(&[Value::Int(5), Value::Int(1), s("x")]),
            None
        );
        assert_eq!(
            named_integers(&[s("x"), Value::Int(1), Value::Int(2)]),
            None
        );
        assert_eq!(
            named_integers(&[Value::Int(5), s("a"), s("b"), Value::Int(2)]),
            None
        );
    }
}
