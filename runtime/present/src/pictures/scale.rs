//! Scales shared by the pictures: the colour ramp of heatmap cells, "nice" axis ticks and
//! the short number forms axis labels use.

/// An RGB colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rgb(pub u8, pub u8, pub u8);

impl Rgb {
    /// The colour as an SVG/CSS value (`#rrggbb`).
    pub fn css(self) -> String {
        format!("#{:02x}{:02x}{:02x}", self.0, self.1, self.2)
    }
}

/// The stops of the heatmap ramp: light yellow for the fewest events through orange to dark
/// red for the most (a yellow-orange-red sequential scale, readable by the colour-blind).
const RAMP: [Rgb; 5] = [
    Rgb(0xff, 0xf3, 0xb0),
    Rgb(0xfe, 0xc4, 0x4f),
    Rgb(0xf9, 0x7b, 0x22),
    Rgb(0xd7, 0x30, 0x1f),
    Rgb(0x7f, 0x00, 0x26),
];

/// The colour of a cell holding `count` events when the fullest cell holds `max`. Counts
/// are placed on the ramp linearly, except that any non-zero count gets at least the
/// ramp's first stop, so that a single event stays visible next to thousands. `None` for
/// an empty cell (drawn as the background).
pub fn cell_colour(count: u64, max: u64) -> Option<Rgb> {
    if count == 0 || max == 0 {
        return None;
    }
    let t = (count.min(max) as f64) / (max as f64);
    Some(ramp(t))
}

/// The ramp's colour at `t` (0 to 1; clamped), interpolated between its stops.
pub fn ramp(t: f64) -> Rgb {
    let t = t.clamp(0.0, 1.0) * (RAMP.len() - 1) as f64;
    let i = (t.floor() as usize).min(RAMP.len() - 2);
    let f = t - i as f64;
    let (a, b) = (RAMP[i], RAMP[i + 1]);
    let mix = |x: u8, y: u8| (f64::from(x) + (f64::from(y) - f64::from(x)) * f).round() as u8;
    Rgb(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Axis ticks from 0 to at least `max`: about `want` of them, spaced by 1, 2 or 5 times a
/// power of ten. The last tick is the first multiple of the spacing at or above `max`.
pub fn nice_ticks(max: f64, want: usize) -> Vec<f64> {
    if max.is_nan() || max <= 0.0 {
        return vec![0.0, 1.0];
    }
    let step = nice_step(max / want.max(1) as f64);
    let n = (max / step).ceil().max(1.0) as usize;
    (0..=n).map(|i| i as f64 * step).collect()
}

/// The smallest of 1, 2 and 5 times a power of ten that is at least `raw`.
pub fn nice_step(raw: f64) -> f64 {
    if raw.is_nan() || raw <= 0.0 {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw * (1.0 - 1e-9))
        .unwrap_or(10.0 * mag)
}

/// A byte count as axis labels show it: `0`, `512`, `64 KiB`, `1.5 MiB`.
pub fn bytes(n: f64) -> String {
    const UNITS: [&str; 5] = ["", " KiB", " MiB", " GiB", " TiB"];
    let mut v = n;
    let mut i = 0;
    while v.abs() >= 1024.0 && i < UNITS.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 || v.fract() == 0.0 {
        format!("{v:.0}{}", UNITS[i])
    } else {
        format!("{v:.1}{}", UNITS[i])
    }
}

/// A time in seconds as axis labels show it: `0`, `1.5`, `120` (no unit: the axis names
/// it), with no more decimals than `step` needs.
pub fn seconds(t: f64, step: f64) -> String {
    let decimals = if step >= 1.0 {
        0
    } else {
        // Less a little: a step of 8.1 - 8.0 is 0.0999..., which needs one decimal.
        (-step.log10() - 1e-6).ceil().clamp(0.0, 9.0) as usize
    };
    format!("{t:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ramp_ends_and_midpoint() {
        assert_eq!(ramp(0.0), RAMP[0]);
        assert_eq!(ramp(1.0), RAMP[4]);
        assert_eq!(ramp(0.5), RAMP[2]);
        assert_eq!(ramp(7.0), RAMP[4]);
        assert_eq!(ramp(-1.0), RAMP[0]);
        assert_eq!(Rgb(255, 0, 16).css(), "#ff0010");
    }

    #[test]
    fn cells_darken_with_their_count() {
        assert_eq!(cell_colour(0, 10), None);
        assert_eq!(cell_colour(3, 0), None);
        assert_eq!(cell_colour(10, 10), Some(RAMP[4]));
        let sum = |c: Rgb| u32::from(c.0) + u32::from(c.1) + u32::from(c.2);
        let mut last = u32::MAX;
        for n in 1..=10 {
            let c = sum(cell_colour(n, 10).unwrap());
            assert!(c < last, "{n} is not darker than {}", n - 1);
            last = c;
        }
    }

    #[test]
    fn ticks_are_round_and_cover_the_maximum() {
        assert_eq!(nice_ticks(10.0, 5), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(nice_ticks(9.3, 5), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(
            nice_ticks(70000.0, 4),
            vec![0.0, 20000.0, 40000.0, 60000.0, 80000.0]
        );
        assert_eq!(nice_ticks(0.0, 5), vec![0.0, 1.0]);
        assert_eq!(nice_step(0.03), 0.05);
        assert_eq!(nice_step(1.0), 1.0);
        assert_eq!(nice_step(101.0), 200.0);
    }

    #[test]
    fn labels() {
        assert_eq!(bytes(0.0), "0");
        assert_eq!(bytes(512.0), "512");
        assert_eq!(bytes(65536.0), "64 KiB");
        assert_eq!(bytes(1536.0 * 1024.0), "1.5 MiB");
        assert_eq!(seconds(1.5, 0.5), "1.5");
        assert_eq!(seconds(2.0, 1.0), "2");
        assert_eq!(seconds(0.25, 0.05), "0.25");
        assert_eq!(seconds(8.1, 8.1 - 8.0), "8.1");
    }
}
