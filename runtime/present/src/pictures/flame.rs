//! Flame graphs (`--flamegraph FILE`, from the folded lines of the maps keyed by stacks)
//! and differential flame graphs (`sonde flamediff BEFORE.folded AFTER.folded -o
//! DIFF.svg`), both drawn by inferno.
//!
//! A differential flame graph has the shape of the second profile; each frame is coloured
//! by how its samples changed from the first: red where it grew, blue where it shrank, the
//! deeper the colour the larger the change (`--normalize` first scales the first profile
//! to the second's total; `--negate` draws the first profile's shape instead).

use sonde_lang::diag::Diagnostic;
use sonde_lang::span::Span;
use sonde_system::user_files::Pipes;
use std::io::{self, Write};
use std::path::Path;

/// Writes a flame graph SVG of `lines` (folded lines) to `path`, titled `title`.
pub fn write_flamegraph(path: &Path, title: &str, lines: &[String]) -> io::Result<()> {
    let mut svg = Vec::new();
    let mut options = inferno::flamegraph::Options::default();
    options.title = title.to_string();
    inferno::flamegraph::from_lines(&mut options, lines.iter().map(String::as_str), &mut svg)
        .map_err(|e| io::Error::other(format!("flame graph: {e}")))?;
    let mut out = io::BufWriter::new(std::fs::File::create(path)?);
    out.write_all(&svg)?;
    out.flush()
}

/// Options of `sonde flamediff`.
#[derive(Clone, Debug, Default)]
pub struct DiffOptions {
    /// Scale the first profile's counts to the second's total before comparing.
    pub normalize: bool,
    /// Draw the first profile's shape, coloured by what the second lost.
    pub negate: bool,
    /// The title (default `Differential Flame Graph`).
    pub title: Option<String>,
}

/// An error of `sonde flamediff`.
fn error(code: &'static str, message: String, help: &str) -> Diagnostic {
    Diagnostic::error(code, Span::default(), message).with_help(help.to_string())
}

/// Checks that `text` (the contents of `name`) is folded stacks: every non-blank line is
/// frames joined by `;`, a space, and a whole number of samples; at least one such line.
pub fn check_folded(name: &str, text: &str) -> Result<(), Diagnostic> {
    let help = "a folded file has one stack per line: frames from the root joined by `;`, a space and a sample count (`main;work;compute 42`), as `sonde -f folded` writes them";
    let mut lines = 0;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim_end();
        if line.trim().is_empty() {
            continue;
        }
        let ok = line.rsplit_once(' ').is_some_and(|(frames, count)| {
            !frames.trim().is_empty() && count.parse::<u64>().is_ok()
        });
        if !ok {
            let shown: String = line.chars().take(80).collect();
            return Err(error(
                "sonde::flamediff::input",
                format!("{name}:{}: not a folded stack line: `{shown}`", n + 1),
                help,
            ));
        }
        lines += 1;
    }
    if lines == 0 {
        return Err(error(
            "sonde::flamediff::input",
            format!("{name} has no stack lines"),
            help,
        ));
    }
    Ok(())
}

/// Most bytes of a folded profile `flamediff` reads.
pub const MAX_FOLDED: u64 = 1 << 30;

/// Draws the differential flame graph of `before` → `after` (folded files) into `out`.
pub fn flamediff(
    before: &Path,
    after: &Path,
    out: &Path,
    opts: &DiffOptions,
) -> Result<(), Diagnostic> {
    let read = |p: &Path| {
        let text = sonde_system::user_files::read(p, MAX_FOLDED, Pipes::Read).map_err(|e| {
            error(
                "sonde::flamediff::input",
                format!("cannot read {}: {e}", p.display()),
                "give two folded files: the profile before and the profile after",
            )
        })?;
        let text = String::from_utf8_lossy(&text).into_owned();
        check_folded(&p.display().to_string(), &text)?;
        Ok::<String, Diagnostic>(text)
    };
    let (a, b) = (read(before)?, read(after)?);
    let mut diff = Vec::new();
    let dopts = inferno::differential::Options {
        normalize: opts.normalize,
        strip_hex: false,
    };
    inferno::differential::from_readers(dopts, a.as_bytes(), b.as_bytes(), &mut diff).map_err(
        |e| {
            error(
                "sonde::flamediff::input",
                format!("cannot compare the profiles: {e}"),
                "give two folded files",
            )
        },
    )?;
    let mut options = inferno::flamegraph::Options::default();
    options.title = opts
        .title
        .clone()
        .unwrap_or_else(|| "Differential Flame Graph".to_string());
    options.subtitle = Some(format!(
        "{} → {}: red grew, blue shrank",
        before.display(),
        after.display()
    ));
    options.negate_differentials = opts.negate;
    let diff = String::from_utf8_lossy(&diff).into_owned();
    let mut svg = Vec::new();
    inferno::flamegraph::from_lines(&mut options, diff.lines(), &mut svg).map_err(|e| {
        error(
            "sonde::flamediff::draw",
            format!("cannot draw the flame graph: {e}"),
            "check that the folded files hold stacks with sample counts",
        )
    })?;
    std::fs::write(out, svg).map_err(|e| {
        error(
            "sonde::flamediff::write",
            format!("cannot write {}: {e}", out.display()),
            "check that the directory exists and is writable",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folded_files_are_checked_line_by_line() {
        assert!(check_folded("a", "main;f 3\nmain;g 1\n\n").is_ok());
        let e = check_folded("a.folded", "main;f 3\nnot folded\n").unwrap_err();
        assert!(
            e.message.contains("a.folded:2: not a folded stack line"),
            "{}",
            e.message
        );
        let e = check_folded("b", "\n  \n").unwrap_err();
        assert!(e.message.contains("b has no stack lines"));
        assert!(check_folded("c", "main;f x\n").is_err());
    }

    #[test]
    fn a_difference_is_drawn_with_both_profiles_frames() {
        let dir = std::env::temp_dir().join(format!("sonde-flamediff-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b, out) = (dir.join("a"), dir.join("b"), dir.join("d.svg"));
        std::fs::write(&a, "main;slow 90\nmain;fast 10\n").unwrap();
        std::fs::write(&b, "main;slow 10\nmain;fast 90\nmain;new 5\n").unwrap();
        flamediff(&a, &b, &out, &DiffOptions::default()).unwrap();
        let svg = std::fs::read_to_string(&out).unwrap();
        assert!(svg.contains("Differential Flame Graph"));
        for f in ["slow", "fast", "new"] {
            assert!(svg.contains(&format!("<title>{f} (")), "{f} missing");
        }
        let bad = flamediff(&a, &dir.join("missing"), &out, &DiffOptions::default());
        assert!(bad.unwrap_err().message.contains("cannot read"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn flame_graph_svg_names_the_frames() {
        let dir = std::env::temp_dir().join(format!("sonde-folded-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("fg.svg");
        let lines = vec![
            "app;main;busy_function 90".to_string(),
            "app;main;idle_function 10".to_string(),
        ];
        write_flamegraph(&path, "sonde test", &lines).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(svg.starts_with("<?xml"), "{}", &svg[..svg.len().min(200)]);
        assert!(svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("busy_function (90 samples, 90.00%)"), "{svg}");
        assert!(svg.contains("sonde test"));
    }
}
