//! The drawing primitives the charts are made of (titles, labels, cells, lines, legends),
//! built as SVG elements with the `svg` crate, so that no picture writes markup by hand and
//! every text is escaped.

use std::path::Path;
use svg::Document;
use svg::node::element::{
    Definitions, Group, Line, LinearGradient, Polyline, Rectangle, Stop, Text, Title,
};

/// The font every picture uses (the one inferno's flame graphs use).
const FONT: &str = "Verdana, DejaVu Sans, sans-serif";

/// Horizontal alignment of a label at its point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchor {
    /// The text starts at the point.
    Start,
    /// The text is centred on the point.
    Middle,
    /// The text ends at the point.
    End,
}

impl Anchor {
    fn css(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

/// An SVG picture being drawn.
pub struct Doc {
    doc: Document,
    gradients: usize,
}

impl Doc {
    /// An empty picture of `width` × `height` pixels on a white background.
    pub fn new(width: f64, height: f64) -> Doc {
        let doc = Document::new()
            .set("width", width)
            .set("height", height)
            .set("viewBox", (0, 0, width, height))
            .set("font-family", FONT)
            .add(
                Rectangle::new()
                    .set("width", "100%")
                    .set("height", "100%")
                    .set("fill", "#ffffff"),
            );
        Doc { doc, gradients: 0 }
    }

    fn add(&mut self, node: impl Into<Box<dyn svg::Node>>) {
        let doc = std::mem::replace(&mut self.doc, Document::new());
        self.doc = doc.add(node);
    }

    fn text(x: f64, y: f64, size: f64, anchor: Anchor, content: &str) -> Text {
        Text::new(content)
            .set("x", x)
            .set("y", y)
            .set("font-size", size)
            .set("text-anchor", anchor.css())
    }

    /// The picture's title, centred on `x`, and the document's `<title>`.
    pub fn title(&mut self, x: f64, y: f64, title: &str) {
        self.add(Title::new(title));
        self.add(
            Self::text(x, y, 17.0, Anchor::Middle, title)
                .set("font-weight", "bold")
                .set("class", "title"),
        );
    }

    /// A line of smaller grey text under the title.
    pub fn subtitle(&mut self, x: f64, y: f64, text: &str) {
        self.add(Self::text(x, y, 12.0, Anchor::Middle, text).set("fill", "#555555"));
    }

    /// A label (axis values, legends).
    pub fn label(&mut self, x: f64, y: f64, text: &str, anchor: Anchor) {
        self.add(Self::text(x, y, 11.0, anchor, text));
    }

    /// A label in `colour` (the values of a series' own axis), starting at the point.
    pub fn coloured_label(&mut self, x: f64, y: f64, text: &str, colour: &str) {
        self.add(Self::text(x, y, 11.0, Anchor::Start, text).set("fill", colour));
    }

    /// An axis's name, horizontal or (`vertical`) reading upwards, centred on the point.
    pub fn axis_label(&mut self, x: f64, y: f64, text: &str, vertical: bool) {
        let mut t = Self::text(x, y, 13.0, Anchor::Middle, text).set("class", "axis-label");
        if vertical {
            t = t.set("transform", format!("rotate(-90 {x} {y})"));
        }
        self.add(t);
    }

    /// A filled rectangle, with a tooltip when `tooltip` is given.
    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, tooltip: Option<&str>) {
        let mut r = Rectangle::new()
            .set("x", x)
            .set("y", y)
            .set("width", w)
            .set("height", h)
            .set("fill", fill);
        if let Some(t) = tooltip {
            r = r.add(Title::new(t));
        }
        self.add(r);
    }

    /// A white, slightly transparent panel with a thin border (behind a legend).
    pub fn panel(&mut self, x: f64, y: f64, w: f64, h: f64) {
        self.add(
            Rectangle::new()
                .set("x", x)
                .set("y", y)
                .set("width", w)
                .set("height", h)
                .set("fill", "#ffffff")
                .set("fill-opacity", 0.85)
                .set("stroke", "#cccccc"),
        );
    }

    /// A heatmap cell: a rectangle of class `cell` with its tooltip.
    pub fn cell(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, tooltip: &str) {
        self.add(
            Rectangle::new()
                .set("class", "cell")
                .set("x", x)
                .set("y", y)
                .set("width", w)
                .set("height", h)
                .set("fill", fill)
                .add(Title::new(tooltip)),
        );
    }

    /// A short vertical tick mark of `len` pixels down from (`x`, `y`).
    pub fn tick(&mut self, x: f64, y: f64, len: f64) {
        self.line(x, y, x, y + len, "#333333", 1.0);
    }

    /// A straight line.
    pub fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, stroke: &str, width: f64) {
        self.add(
            Line::new()
                .set("x1", x1)
                .set("y1", y1)
                .set("x2", x2)
                .set("y2", y2)
                .set("stroke", stroke)
                .set("stroke-width", width),
        );
    }

    /// A line through `points`, of class `series`, with a tooltip.
    pub fn polyline(&mut self, points: &[(f64, f64)], stroke: &str, tooltip: &str) {
        let pts: Vec<String> = points
            .iter()
            .map(|(x, y)| format!("{x:.1},{y:.1}"))
            .collect();
        self.add(
            Group::new()
                .set("class", "series")
                .add(Title::new(tooltip))
                .add(
                    Polyline::new()
                        .set("points", pts.join(" "))
                        .set("fill", "none")
                        .set("stroke", stroke)
                        .set("stroke-width", 2)
                        .set("stroke-linejoin", "round"),
                ),
        );
    }

    /// A horizontal bar filled with a gradient through `stops` (offset 0 to 1, colour).
    pub fn gradient_bar(&mut self, x: f64, y: f64, w: f64, h: f64, stops: &[(f64, String)]) {
        self.gradients += 1;
        let id = format!("ramp{}", self.gradients);
        let mut g = LinearGradient::new().set("id", id.clone());
        for (offset, colour) in stops {
            g = g.add(
                Stop::new()
                    .set("offset", format!("{:.0}%", offset * 100.0))
                    .set("stop-color", colour.as_str()),
            );
        }
        self.add(Definitions::new().add(g));
        self.rect(x, y, w, h, &format!("url(#{id})"), None);
    }

    /// Writes the picture to `path`.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        std::fs::write(path, self.to_string())
    }
}

impl std::fmt::Display for Doc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.doc.fmt(f)
    }
}
