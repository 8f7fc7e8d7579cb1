//! Line charts of values over time (`--chart FILE.svg`; `sonde tool memusage --chart`
//! draws heap and stack use as glibc's memusagestat does).
//!
//! A chart is drawn from printf events whose arguments are all integers: the first is a
//! timestamp in nanoseconds (`nsecs`), each other one a series, named after the word just
//! before its conversion in the format (`heap=%d` names `heap`; otherwise `value N`).
//! Values are drawn as steps (a value holds until the next event changes it), thinned to
//! at most a few points per pixel column with each column's lowest and highest value kept,
//! so that a peak of a million-event run still shows.

use super::scale;
use super::svgdoc::{Anchor, Doc};
use sonde_lang::format::{FmtPiece, parse_format};

/// The colours of the series, in order: red and green first, as memusagestat draws heap and
/// stack.
const COLOURS: [&str; 6] = [
    "#d62728", "#2ca02c", "#1f77b4", "#9467bd", "#ff7f0e", "#8c564b",
];

/// One line of a chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// The name the legend shows.
    pub name: String,
    /// (seconds from the first event, value) points in time order.
    pub points: Vec<(f64, f64)>,
}

/// A chart ready to draw.
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    /// The title drawn above the chart.
    pub title: String,
    /// The y axis label.
    pub y_label: String,
    /// Whether values are bytes (axis labels in KiB, MiB).
    pub bytes: bool,
    /// The lines.
    pub series: Vec<Series>,
}

/// The names of a printf format's conversions after the first: the word that ends the
/// literal text just before each (`heap=%d` gives `heap`), or `value N`.
pub fn series_names(format: &str) -> Vec<String> {
    let Ok(pieces) = parse_format(format) else {
        return Vec::new();
    };
    let mut names = Vec::new();
    let mut before = String::new();
    for p in pieces {
        match p {
            FmtPiece::Lit(t) => before = t,
            FmtPiece::Spec(_) => {
                let word: String = before
                    .trim_end_matches(['=', ':', ' '])
                    .rsplit(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .next()
                    .unwrap_or("")
                    .to_string();
                names.push(word);
                before.clear();
            }
        }
    }
    names
        .into_iter()
        .enumerate()
        .skip(1)
        .map(|(i, w)| {
            if w.is_empty() {
                format!("value {i}")
            } else {
                w
            }
        })
        .collect()
}

impl Chart {
    /// A chart of `rows` (timestamp in nanoseconds, then one value per series named
    /// `names`), times measured from the first row.
    pub fn new(title: &str, y_label: &str, names: &[String], rows: &[(u64, Vec<i64>)]) -> Chart {
        let t0 = rows.iter().map(|r| r.0).min().unwrap_or(0);
        let series = names
            .iter()
            .enumerate()
            .map(|(i, name)| Series {
                name: name.clone(),
                points: rows
                    .iter()
                    .filter_map(|(t, v)| Some(((t - t0) as f64 / 1e9, *v.get(i)? as f64)))
                    .collect(),
            })
            .collect();
        Chart {
            title: title.to_string(),
            y_label: y_label.to_string(),
            bytes: y_label == "bytes",
            series,
        }
    }
}

/// `points` (in time order) thinned for a plot `columns` pixels wide over `x_max`: in each
/// pixel column, the first, lowest, highest and last points, in time order.
pub fn thin(points: &[(f64, f64)], x_max: f64, columns: usize) -> Vec<(f64, f64)> {
    if points.len() <= columns * 4 || x_max <= 0.0 {
        return points.to_vec();
    }
    let col = |x: f64| ((x / x_max) * columns as f64) as usize;
    let mut out = Vec::new();
    let mut start = 0;
    while start < points.len() {
        let c = col(points[start].0);
        let end = points[start..]
            .iter()
            .position(|p| col(p.0) != c)
            .map_or(points.len(), |n| start + n);
        let run = &points[start..end];
        let lo = run
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.1.total_cmp(&b.1.1))
            .map_or(0, |(i, _)| i);
        let hi = run
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.1.total_cmp(&b.1.1))
            .map_or(0, |(i, _)| i);
        let mut keep = vec![0, lo, hi, run.len() - 1];
        keep.sort_unstable();
        keep.dedup();
        out.extend(keep.into_iter().map(|i| run[i]));
        start = end;
    }
    out
}

/// Margins around the plot (pixels).
const LEFT: f64 = 90.0;
const TOP: f64 = 70.0;
const BOTTOM: f64 = 60.0;
const RIGHT: f64 = 90.0;
const PLOT_W: f64 = 860.0;
const PLOT_H: f64 = 380.0;

/// A y axis: from `base` to `top` in steps of `step` (round numbers, 0 included).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct YAxis {
    /// The lowest value (0, or a negative multiple of `step`).
    pub base: f64,
    /// The highest value (a multiple of `step`, above `base`).
    pub top: f64,
    /// The spacing of the ticks.
    pub step: f64,
}

impl YAxis {
    /// The axis for values from `min` to `max`, about five ticks; with `bytes`, the ticks
    /// are round in KiB, MiB or GiB.
    pub fn new(min: f64, max: f64, bytes: bool) -> YAxis {
        let (min, max) = (min.min(0.0), max.max(0.0));
        let mut unit = 1.0;
        while bytes && (max - min) / unit >= 1024.0 {
            unit *= 1024.0;
        }
        let step = scale::nice_step((max - min) / unit / 5.0) * unit;
        let base = -(step * (-min / step).ceil());
        let top = (step * (max / step).ceil()).max(base + step);
        YAxis { base, top, step }
    }

    /// The tick values, from `base` to `top`.
    pub fn ticks(&self) -> Vec<f64> {
        let n = ((self.top - self.base) / self.step).round() as usize;
        (0..=n).map(|i| self.base + i as f64 * self.step).collect()
    }

    /// The y pixel of `v`.
    fn pixel(&self, v: f64) -> f64 {
        TOP + PLOT_H - (v - self.base) / (self.top - self.base) * PLOT_H
    }
}

/// The axis each series is drawn against: all on one, unless the first series' range and
/// the others' differ by more than ten times (heap in megabytes, stack in kilobytes): then
/// the others get a second axis, on the right, as memusagestat draws the stack.
pub fn axes(series: &[Series], bytes: bool) -> (Vec<YAxis>, Vec<usize>) {
    let range = |s: &[Series]| {
        let all = s.iter().flat_map(|s| &s.points).map(|p| p.1);
        (all.clone().fold(0.0, f64::min), all.fold(0.0, f64::max))
    };
    if series.len() >= 2 {
        let (first, rest) = (range(&series[..1]), range(&series[1..]));
        let (a, b) = (first.1 - first.0, rest.1 - rest.0);
        if a > 0.0 && b > 0.0 && (a / b > 10.0 || b / a > 10.0) {
            let mut which = vec![1; series.len()];
            which[0] = 0;
            return (
                vec![
                    YAxis::new(first.0, first.1, bytes),
                    YAxis::new(rest.0, rest.1, bytes),
                ],
                which,
            );
        }
    }
    let (lo, hi) = range(series);
    (vec![YAxis::new(lo, hi, bytes)], vec![0; series.len()])
}

/// Draws `chart` as an SVG document.
pub fn render(chart: &Chart) -> Doc {
    let width = LEFT + PLOT_W + RIGHT;
    let height = TOP + PLOT_H + BOTTOM;
    let mut doc = Doc::new(width, height);
    doc.title(width / 2.0, 28.0, &chart.title);
    let x_max = chart
        .series
        .iter()
        .flat_map(|s| &s.points)
        .map(|p| p.0)
        .fold(0.0, f64::max);
    let count: usize = chart.series.first().map_or(0, |s| s.points.len());
    doc.subtitle(
        width / 2.0,
        48.0,
        &format!(
            "{count} sample{} over {} s",
            if count == 1 { "" } else { "s" },
            scale::seconds(x_max, 0.01)
        ),
    );
    let x_ticks = scale::nice_ticks(x_max, 8);
    let x_top = *x_ticks.last().unwrap_or(&1.0);
    let px = |x: f64| LEFT + x / x_top * PLOT_W;
    let (y_axes, which) = axes(&chart.series, chart.bytes);
    let value = |v: f64| {
        if chart.bytes {
            scale::bytes(v)
        } else {
            format!("{v}")
        }
    };
    doc.rect(LEFT, TOP, PLOT_W, PLOT_H, "#fafafa", None);
    let x_step = x_ticks.get(1).copied().unwrap_or(1.0);
    for &t in &x_ticks {
        doc.line(px(t), TOP, px(t), TOP + PLOT_H, "#e0e0e0", 1.0);
        doc.tick(px(t), TOP + PLOT_H, 5.0);
        let label = scale::seconds(t, x_step);
        doc.label(px(t), TOP + PLOT_H + 18.0, &label, Anchor::Middle);
    }
    for (a, axis) in y_axes.iter().enumerate() {
        for v in axis.ticks() {
            let y = axis.pixel(v);
            if a == 0 {
                doc.line(LEFT, y, LEFT + PLOT_W, y, "#e0e0e0", 1.0);
                doc.label(LEFT - 6.0, y + 4.0, &value(v), Anchor::End);
            } else {
                let label = value(v);
                doc.coloured_label(LEFT + PLOT_W + 6.0, y + 4.0, &label, COLOURS[1]);
            }
        }
    }
    let bottom = TOP + PLOT_H;
    doc.line(LEFT, bottom, LEFT + PLOT_W, bottom, "#333333", 1.0);
    doc.line(LEFT, TOP, LEFT, bottom, "#333333", 1.0);
    if y_axes.len() > 1 {
        let right = LEFT + PLOT_W;
        doc.line(right, TOP, right, bottom, COLOURS[1], 1.0);
    }
    // The legend's background, so that the lines under it do not cross its text.
    let legend_h = 16.0 * chart.series.len() as f64 + 8.0;
    let mut legend = Vec::new();
    for (i, s) in chart.series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let axis = y_axes[which[i]];
        let mut steps: Vec<(f64, f64)> = Vec::with_capacity(s.points.len() * 2);
        for &(x, y) in &thin(&s.points, x_top, PLOT_W as usize) {
            if let Some(&(_, prev)) = steps.last() {
                steps.push((px(x), prev));
            }
            steps.push((px(x), axis.pixel(y)));
        }
        let peak = s.points.iter().map(|p| p.1).fold(f64::MIN, f64::max);
        let last = s.points.last().map_or(0.0, |p| p.1);
        let shown = |v: f64| {
            if chart.bytes {
                format!("{v:.0} bytes")
            } else {
                format!("{v}")
            }
        };
        let tooltip = format!("{}: peak {}, last {}", s.name, shown(peak), shown(last));
        doc.polyline(&steps, colour, &tooltip);
        let side = match (y_axes.len(), which[i]) {
            (1, _) => "",
            (_, 0) => ", left axis",
            _ => ", right axis",
        };
        legend.push((colour, format!("{} (peak {}{side})", s.name, shown(peak))));
    }
    // The legend, top left inside the plot.
    doc.panel(LEFT + 6.0, TOP + 4.0, 300.0, legend_h);
    for (i, (colour, text)) in legend.iter().enumerate() {
        let ly = TOP + 16.0 + i as f64 * 16.0;
        doc.line(LEFT + 12.0, ly - 4.0, LEFT + 32.0, ly - 4.0, colour, 3.0);
        doc.label(LEFT + 38.0, ly, text, Anchor::Start);
    }
    doc.axis_label(LEFT + PLOT_W / 2.0, height - 14.0, "time (s)", false);
    doc.axis_label(18.0, TOP + PLOT_H / 2.0, &chart.y_label, true);
    doc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_are_named_by_the_format() {
        assert_eq!(
            series_names("%d heap=%d stack=%d\n"),
            vec!["heap".to_string(), "stack".to_string()]
        );
        assert_eq!(series_names("%lld %d, %d\n"), vec!["value 1", "value 2"]);
        assert_eq!(series_names("t %d rss: %lu\n"), vec!["rss"]);
    }

    #[test]
    fn rows_become_series_from_the_first_time() {
        let c = Chart::new(
            "m",
            "bytes",
            &["heap".into(), "stack".into()],
            &[(2_000_000_000, vec![10, 1]), (3_500_000_000, vec![30, 2])],
        );
        assert_eq!(c.series[0].points, vec![(0.0, 10.0), (1.5, 30.0)]);
        assert_eq!(c.series[1].points, vec![(0.0, 1.0), (1.5, 2.0)]);
        assert!(c.bytes);
    }

    #[test]
    fn series_of_different_magnitudes_get_two_axes() {
        let s = |name: &str, peak: f64| Series {
            name: name.into(),
            points: vec![(0.0, 0.0), (1.0, peak)],
        };
        let (axes1, which) = axes(&[s("heap", 70000.0), s("stack", 128.0)], false);
        assert_eq!(which, vec![0, 1]);
        assert_eq!(
            axes1[0],
            YAxis {
                base: 0.0,
                top: 80000.0,
                step: 20000.0
            }
        );
        assert_eq!(axes1[1].top, 150.0);
        // In bytes, steps are round in KiB: 20 KiB up to 80 KiB.
        let (axes1, _) = axes(&[s("heap", 70000.0), s("stack", 128.0)], true);
        assert_eq!((axes1[0].step, axes1[0].top), (20480.0, 81920.0));
        let (axes2, which) = axes(&[s("a", 100.0), s("b", 50.0)], false);
        assert_eq!((axes2.len(), which), (1, vec![0, 0]));
        let neg = YAxis::new(-15.0, 30.0, false);
        assert_eq!(neg.ticks(), vec![-20.0, -10.0, 0.0, 10.0, 20.0, 30.0]);
    }

    #[test]
    fn thinning_keeps_each_columns_extremes() {
        let points: Vec<(f64, f64)> = (0..1000)
            .map(|i| (f64::from(i) / 1000.0, if i == 503 { 99.0 } else { 1.0 }))
            .collect();
        let thinned = thin(&points, 1.0, 10);
        assert!(thinned.len() <= 40, "{}", thinned.len());
        assert!(thinned.contains(&(0.503, 99.0)));
        assert_eq!(thinned.first(), points.first());
        assert_eq!(thinned.last(), points.last());
        assert_eq!(thin(&points[..5], 1.0, 10), points[..5].to_vec());
    }

    #[test]
    fn drawing_has_a_line_and_a_legend_per_series() {
        let c = Chart::new(
            "Memory usage",
            "bytes",
            &["heap".into(), "stack".into()],
            &[(0, vec![0, 0]), (1_000_000_000, vec![70000, 128])],
        );
        let svg = render(&c).to_string().replace('\n', "");
        assert_eq!(svg.matches("class=\"series\"").count(), 2);
        assert!(
            svg.contains(">heap (peak 70000 bytes, left axis)</text>"),
            "{svg}"
        );
        assert!(svg.contains(">Memory usage</text>"));
    }
}
