//! The terminal heatmap (`--term-heatmap`): at each interval, the last [`COLUMNS`]
//! intervals of the busiest histogram drawn with one coloured block per cell (24-bit ANSI
//! colours on the heatmap's ramp), highest bucket on top, with the bucket labels on the
//! left. Drawn only when standard output is a terminal.

use super::heatmap::Grid;
use super::scale::cell_colour;

/// How many intervals the terminal heatmap shows.
pub const COLUMNS: usize = 60;

/// The block a non-empty cell is drawn with.
const BLOCK: char = '█';

/// `grid` as text with ANSI colours, one line per bucket (highest first), then a line
/// with the colour scale's range.
pub fn render(grid: &Grid) -> String {
    let width = grid
        .rows
        .iter()
        .map(|r| r.chars().count())
        .max()
        .unwrap_or(0);
    let max = grid.max();
    let mut out = format!(
        "{}: last {} interval{} (cells up to {max} events)\n",
        grid.title,
        grid.counts.len(),
        if grid.counts.len() == 1 { "" } else { "s" }
    );
    for r in (0..grid.rows.len()).rev() {
        out += &format!("{:>width$} │", grid.rows[r]);
        for column in &grid.counts {
            match cell_colour(column[r], max) {
                Some(c) => out += &format!("\x1b[38;2;{};{};{}m{BLOCK}\x1b[0m", c.0, c.1, c.2),
                None => out.push(' '),
            }
        }
        out.push('\n');
    }
    if grid.rows.is_empty() {
        out += "(no events)\n";
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_bucket_highest_first() {
        let grid = Grid {
            title: "@usecs".into(),
            y_label: "@usecs".into(),
            times: vec![(0.0, 1.0), (1.0, 2.0)],
            rows: vec!["[4, 8)".into(), "[8, 16)".into()],
            counts: vec![vec![2, 0], vec![0, 1]],
        };
        let text = render(&grid);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "@usecs: last 2 intervals (cells up to 2 events)");
        assert!(
            lines[1].starts_with("[8, 16) │ \x1b[38;2;"),
            "{:?}",
            lines[1]
        );
        assert!(
            lines[2].starts_with(" [4, 8) │\x1b[38;2;"),
            "{:?}",
            lines[2]
        );
        assert!(lines[2].ends_with("\x1b[0m "), "{:?}", lines[2]);
        assert_eq!(text.matches(BLOCK).count(), 2);
    }
}
