//! Latency heatmaps (`--heatmap FILE.svg`): time on x, latency buckets on y, each cell
//! coloured by how many events fell in that bucket in that column.
//!
//! A heatmap is drawn from columns of histograms: the snapshots of a `hist()`/`lhist()`
//! map printed (and cleared) every interval, one column each, or (time, latency) pairs of
//! printf events, binned here into columns of a round width and `hist()`'s log2 buckets
//! ([`bin_points`]). Rows are the histogram's buckets from the lowest to the highest one
//! that holds an event in any column, labelled as sonde prints them (`[8, 16)`). Every
//! non-empty cell is an SVG `<rect>` whose `<title>` (the browser's tooltip) gives its time
//! range, bucket, count, and share of its column and of the whole picture.

use super::scale::{self, cell_colour};
use super::svgdoc::{self, Doc};
use crate::output::hist;
use sonde_compiler::catalog::aggs::{hist_bucket, hist_buckets};
use sonde_compiler::value::AggValue;

/// One column of a heatmap before layout: its time range (seconds from the start) and the
/// histogram of its events.
#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    /// Start of the column, in seconds from the first column.
    pub start: f64,
    /// End of the column, in seconds.
    pub end: f64,
    /// The column's histogram (`AggValue::Hist` or `AggValue::Lhist`).
    pub value: AggValue,
}

/// A heatmap ready to draw: labelled rows and columns of counts.
#[derive(Clone, Debug, PartialEq)]
pub struct Grid {
    /// The title drawn above the picture.
    pub title: String,
    /// The y axis label (what the buckets measure).
    pub y_label: String,
    /// Each column's time range in seconds.
    pub times: Vec<(f64, f64)>,
    /// Row labels, lowest bucket first (`[8, 16)`).
    pub rows: Vec<String>,
    /// `counts[column][row]`.
    pub counts: Vec<Vec<u64>>,
}

impl Grid {
    /// The grid of `columns`: rows are the buckets from the lowest to the highest non-empty
    /// one over all columns (none when every column is empty). Columns whose histogram is
    /// laid out differently from the first one's count as empty.
    pub fn new(title: &str, y_label: &str, columns: &[Column]) -> Grid {
        let layouts: Vec<Vec<(sonde_compiler::catalog::aggs::Bucket, u64)>> = columns
            .iter()
            .map(|c| hist::buckets(&c.value).unwrap_or_default())
            .collect();
        let width = layouts.first().map_or(0, Vec::len);
        let nonzero = |l: &Vec<(_, u64)>| -> Option<(usize, usize)> {
            if l.len() != width {
                return None;
            }
            let first = l.iter().position(|(_, c)| *c != 0)?;
            let last = l.iter().rposition(|(_, c)| *c != 0)?;
            Some((first, last))
        };
        let span = layouts
            .iter()
            .filter_map(nonzero)
            .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)));
        let linear = matches!(
            columns.first().map(|c| &c.value),
            Some(AggValue::Lhist { .. })
        );
        let (rows, counts) = match span {
            None => (Vec::new(), vec![Vec::new(); columns.len()]),
            Some((lo, hi)) => (
                layouts[0][lo..=hi]
                    .iter()
                    .map(|(b, _)| hist::label(*b, linear))
                    .collect(),
                layouts
                    .iter()
                    .map(|l| match l.len() == width {
                        true => l[lo..=hi].iter().map(|(_, c)| *c).collect(),
                        false => vec![0; hi - lo + 1],
                    })
                    .collect(),
            ),
        };
        Grid {
            title: title.to_string(),
            y_label: y_label.to_string(),
            times: columns.iter().map(|c| (c.start, c.end)).collect(),
            rows,
            counts,
        }
    }

    /// The total count of every cell.
    pub fn total(&self) -> u64 {
        self.counts.iter().flatten().sum()
    }

    /// The largest count of a cell.
    pub fn max(&self) -> u64 {
        self.counts.iter().flatten().copied().max().unwrap_or(0)
    }

    /// The tooltip of the cell at `column`, `row`.
    pub fn tooltip(&self, column: usize, row: usize) -> String {
        let count = self.counts[column][row];
        let in_column: u64 = self.counts[column].iter().sum();
        let (start, end) = self.times[column];
        let step = end - start;
        format!(
            "{}–{} s, {} {}: {count} event{}, {} of the column, {} of all",
            scale::seconds(start, step),
            scale::seconds(end, step),
            self.y_label,
            self.rows[row],
            if count == 1 { "" } else { "s" },
            percent(count, in_column),
            percent(count, self.total()),
        )
    }
}

/// `part` as a percentage of `whole`, with one decimal.
fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        return "0%".to_string();
    }
    format!("{:.1}%", part as f64 * 100.0 / whole as f64)
}

/// Column widths (nanoseconds) the printf mode chooses from: 1, 2 and 5 times powers of ten
/// from a millisecond to ten seconds, then whole minutes.
const STEPS_NS: [u64; 18] = [
    1_000_000,
    2_000_000,
    5_000_000,
    10_000_000,
    20_000_000,
    50_000_000,
    100_000_000,
    200_000_000,
    500_000_000,
    1_000_000_000,
    2_000_000_000,
    5_000_000_000,
    10_000_000_000,
    30_000_000_000,
    60_000_000_000,
    300_000_000_000,
    600_000_000_000,
    3_600_000_000_000,
];

/// At most this many columns are binned from (time, latency) points.
pub const MAX_COLUMNS: u64 = 100;

/// The column width for points spanning `span_ns`: the narrowest of [`STEPS_NS`] that
/// keeps the columns within [`MAX_COLUMNS`].
pub fn column_step(span_ns: u64) -> u64 {
    STEPS_NS
        .iter()
        .copied()
        .find(|s| span_ns / s < MAX_COLUMNS)
        .unwrap_or_else(|| span_ns / (MAX_COLUMNS - 1) + 1)
}

/// Bins (time in nanoseconds, latency) points into columns of [`column_step`] width,
/// starting at the first point's time rounded down to that width, each a `hist()` of its
/// latencies (log2 buckets, as `hist(latency)` counts them). Empty columns between points
/// are kept.
pub fn bin_points(points: &[(u64, i64)]) -> Vec<Column> {
    let Some(first) = points.iter().map(|p| p.0).min() else {
        return Vec::new();
    };
    let last = points.iter().map(|p| p.0).max().unwrap_or(first);
    let step = column_step(last - first);
    let origin = first - first % step;
    let n = ((last - origin) / step + 1) as usize;
    let mut columns: Vec<Vec<u64>> = vec![vec![0; hist_buckets(0)]; n];
    for &(t, lat) in points {
        let c = ((t - origin) / step) as usize;
        columns[c][hist_bucket(lat, 0)] += 1;
    }
    let secs = step as f64 / 1e9;
    columns
        .into_iter()
        .enumerate()
        .map(|(i, buckets)| Column {
            start: i as f64 * secs,
            end: (i + 1) as f64 * secs,
            value: AggValue::Hist {
                bits: 0,
                buckets,
                sum: 0,
            },
        })
        .collect()
}

/// Margins around the cells (pixels).
const LEFT: f64 = 110.0;
const TOP: f64 = 78.0;
const BOTTOM: f64 = 64.0;
const RIGHT: f64 = 30.0;

/// Draws `grid` as an SVG document.
pub fn render(grid: &Grid) -> Doc {
    let cols = grid.counts.len().max(1);
    let rows = grid.rows.len().max(1);
    let cw = (900.0 / cols as f64).floor().clamp(3.0, 30.0);
    let ch = (440.0 / rows as f64).floor().clamp(8.0, 24.0);
    let (pw, ph) = (cw * cols as f64, ch * rows as f64);
    let width = (LEFT + pw + RIGHT).max(560.0);
    let height = TOP + ph + BOTTOM;
    let mut doc = Doc::new(width, height);
    doc.title(width / 2.0, 28.0, &grid.title);
    let (total, max) = (grid.total(), grid.max());
    let duration = grid.times.last().map_or(0.0, |t| t.1);
    doc.subtitle(
        width / 2.0,
        48.0,
        &format!(
            "{total} event{} in {} column{} over {} s; hover over a cell for its counts",
            if total == 1 { "" } else { "s" },
            grid.counts.len(),
            if grid.counts.len() == 1 { "" } else { "s" },
            scale::seconds(duration, 0.1),
        ),
    );
    doc.rect(LEFT, TOP, pw, ph, "#f2f2f2", None);
    for (c, column) in grid.counts.iter().enumerate() {
        for (r, &count) in column.iter().enumerate() {
            let Some(colour) = cell_colour(count, max) else {
                continue;
            };
            let x = LEFT + c as f64 * cw;
            let y = TOP + (rows - 1 - r) as f64 * ch;
            doc.cell(x, y, cw, ch, &colour.css(), &grid.tooltip(c, r));
        }
    }
    // Row labels: as many as fit, lowest bucket at the bottom.
    let every = (14.0 / ch).ceil().max(1.0) as usize;
    for (r, label) in grid.rows.iter().enumerate().filter(|(r, _)| r % every == 0) {
        let y = TOP + (rows - r) as f64 * ch - ch / 2.0 + 4.0;
        doc.label(LEFT - 6.0, y, label, svgdoc::Anchor::End);
    }
    // Column labels: the start time of every few columns.
    let step = grid.times.first().map_or(1.0, |t| t.1 - t.0);
    let every = (48.0 / cw).ceil().max(1.0) as usize;
    for (c, (start, _)) in grid
        .times
        .iter()
        .enumerate()
        .filter(|(c, _)| c % every == 0)
    {
        let x = LEFT + c as f64 * cw;
        doc.tick(x, TOP + ph, 5.0);
        doc.label(
            x,
            TOP + ph + 18.0,
            &scale::seconds(*start, step),
            svgdoc::Anchor::Middle,
        );
    }
    doc.axis_label(LEFT + pw / 2.0, height - 14.0, "time (s)", false);
    doc.axis_label(18.0, TOP + ph / 2.0, &grid.y_label, true);
    if grid.rows.is_empty() {
        doc.label(
            LEFT + pw / 2.0,
            TOP + ph / 2.0,
            "no events",
            svgdoc::Anchor::Middle,
        );
    }
    // The colour scale: from one event to the fullest cell.
    let lx = width - RIGHT - 160.0;
    let stops: Vec<(f64, String)> = (0..=4)
        .map(|i| (f64::from(i) / 4.0, scale::ramp(f64::from(i) / 4.0).css()))
        .collect();
    doc.gradient_bar(lx, 58.0, 120.0, 10.0, &stops);
    doc.label(lx - 4.0, 67.0, "1", svgdoc::Anchor::End);
    doc.label(
        lx + 124.0,
        67.0,
        &max.max(1).to_string(),
        svgdoc::Anchor::Start,
    );
    doc
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::output::testing::hist as hist_of;

    fn col(i: usize, values: &[i64]) -> Column {
        Column {
            start: i as f64,
            end: i as f64 + 1.0,
            value: hist_of(values),
        }
    }

    #[test]
    fn rows_span_the_non_empty_buckets_of_every_column() {
        let g = Grid::new("t", "usecs", &[col(0, &[5, 6]), col(1, &[]), col(2, &[40])]);
        assert_eq!(g.rows, vec!["[4, 8)", "[8, 16)", "[16, 32)", "[32, 64)"]);
        assert_eq!(
            g.counts,
            vec![vec![2, 0, 0, 0], vec![0, 0, 0, 0], vec![0, 0, 0, 1]]
        );
        assert_eq!((g.total(), g.max()), (3, 2));
        assert_eq!(
            g.tooltip(0, 0),
            "0–1 s, usecs [4, 8): 2 events, 100.0% of the column, 66.7% of all"
        );
        let empty = Grid::new("t", "usecs", &[col(0, &[])]);
        assert!(empty.rows.is_empty());
        assert_eq!(empty.total(), 0);
    }

    #[test]
    fn linear_buckets_keep_their_ranges() {
        let mut buckets = vec![0; 12];
        buckets[3] = 7;
        let g = Grid::new(
            "t",
            "ms",
            &[Column {
                start: 0.0,
                end: 1.0,
                value: AggValue::Lhist {
                    min: 0,
                    max: 100,
                    step: 10,
                    buckets,
                    sum: 0,
                },
            }],
        );
        assert_eq!(g.rows, vec!["[20, 30)"]);
        assert_eq!(g.counts, vec![vec![7]]);
    }

    #[test]
    fn points_are_binned_by_round_steps() {
        assert_eq!(column_step(0), 1_000_000);
        assert_eq!(column_step(99_000_000), 1_000_000);
        assert_eq!(column_step(100_000_000), 2_000_000);
        assert_eq!(column_step(9_990_000_000), 100_000_000);
        assert_eq!(column_step(10_000_000_000), 200_000_000);
        // Three seconds of points, at 50 ms columns from 1.0 s.
        let points = [
            (1_000_000_000, 3),
            (1_010_000_000, 3),
            (3_999_000_000, 1000),
        ];
        let cols = bin_points(&points);
        assert_eq!(cols.len(), 60);
        assert_eq!(cols[0].start, 0.0);
        assert!((cols[59].end - 3.0).abs() < 1e-9);
        assert_eq!(cols[0].value, hist_of(&[3, 3]));
        assert_eq!(cols[59].value, hist_of(&[1000]));
        assert_eq!(cols[1].value.hist_total(), Some(0));
        assert!(bin_points(&[]).is_empty());
    }

    #[test]
    fn drawing_has_a_rect_and_a_tooltip_per_non_empty_cell() {
        let g = Grid::new("Latency", "usecs", &[col(0, &[5, 6]), col(1, &[40])]);
        // The `svg` crate puts the content of a `<text>` on its own line.
        let svg = render(&g).to_string().replace('\n', "");
        assert_eq!(svg.matches("class=\"cell\"").count(), 2);
        assert!(
            svg.contains("<title>0–1 s, usecs [4, 8): 2 events"),
            "{svg}"
        );
        assert!(svg.contains(">Latency</text>"));
        assert!(svg.contains(">time (s)</text>"));
    }
}
