//! Run-time warnings on stderr ("WARNING: skipping ...", as bpftrace words its warnings), which `--no-warnings` silences
//! as it silences the checker's warnings. Counters of lost data are not warnings: they are
//! always reported.
//!
//! Warnings about a place in the script (a failed helper call under `-k`) name it as
//! bpftrace does: `NAME:LINE:COL-END: WARNING: message`, the source line, and `~` under the
//! construct. The script is registered once with [`set_script`].

use sonde_lang::span::Span;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

static SILENCED: AtomicBool = AtomicBool::new(false);

/// The script being run: its display name and its text.
static SCRIPT: Mutex<Option<(String, String)>> = Mutex::new(None);

/// Silences (or restores) warnings for the rest of the process.
pub fn silence(silenced: bool) {
    SILENCED.store(silenced, Ordering::Relaxed);
}

/// True when warnings are silenced.
pub fn silenced() -> bool {
    SILENCED.load(Ordering::Relaxed)
}

/// Prints `WARNING: {message}` on stderr unless warnings are silenced.
pub fn warn(message: &str) {
    if !silenced() {
        eprintln!("WARNING: {message}");
    }
}

/// Registers the script whose places run-time warnings name (`name` as diagnostics show it:
/// the file, `-e` or `stdin`; a `-e` program is `stdin` in these lines, as bpftrace names
/// it: `stdin:1:9-62: ERROR: ...`).
pub fn set_script(name: &str, source: &str) {
    let name = if name == "-e" { "stdin" } else { name };
    if let Ok(mut s) = SCRIPT.lock() {
        *s = Some((name.to_string(), source.to_string()));
    }
}

/// A place in the script, for messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    /// The script's name.
    pub file: String,
    /// 1-based line of the span's start.
    pub line: usize,
    /// 1-based column (in characters) of the span's start.
    pub col: usize,
    /// 1-based column just after the span on its first line.
    pub end_col: usize,
    /// 1-based line of the span's end, when it ends on another line.
    pub end_line: Option<usize>,
    /// The text of the span's first line.
    pub text: String,
}

/// Where `span` is in `source` (a script named `file`).
pub fn place_in(file: &str, source: &str, span: Span) -> Place {
    let start = floor_char(source, span.start.min(source.len()));
    let end = floor_char(source, span.end.clamp(start, source.len()));
    let line_start = source[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = source[start..]
        .find('\n')
        .map_or(source.len(), |i| start + i);
    let line = source[..start].matches('\n').count() + 1;
    let last_line = source[..end].matches('\n').count() + 1;
    let col = source[line_start..start].chars().count() + 1;
    let end_on_line = end.min(line_end);
    let end_col = col + source[start..end_on_line].chars().count().max(1);
    Place {
        file: file.to_string(),
        line,
        col,
        end_col,
        end_line: (last_line > line).then_some(last_line),
        text: source[line_start..line_end].to_string(),
    }
}

/// The largest char boundary of `s` at or before `i`.
fn floor_char(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Where `span` is in the registered script (line 1, column 1 of an unnamed script when none
/// was registered).
pub fn place(span: Span) -> Place {
    match SCRIPT.lock().ok().as_deref().and_then(Option::as_ref) {
        Some((name, source)) => place_in(name, source, span),
        None => place_in("", "", span),
    }
}

/// The C library's text for errno `errno` ("Bad address" for 14).
pub fn errno_text(errno: i64) -> String {
    let code = i32::try_from(errno.unsigned_abs()).unwrap_or(i32::MAX);
    crate::user_files::os_reason(&std::io::Error::from_raw_os_error(code))
}

/// Where `place` is, as bpftrace names it: `FILE:LINE:COL-END`, or `FILE:LINE-END` for a
/// place over several lines.
pub fn place_text(place: &Place) -> String {
    match place.end_line {
        Some(end) => format!("{}:{}-{}", place.file, place.line, end),
        None => format!(
            "{}:{}:{}-{}",
            place.file, place.line, place.col, place.end_col
        ),
    }
}

/// bpftrace's warning for a place: `FILE:LINE:COL-END: WARNING: message`, the line, and `~`
/// under the span.
pub fn located_warning(place: &Place, message: &str) -> String {
    let at = place_text(place);
    let pad: String = place
        .text
        .chars()
        .take(place.col - 1)
        .map(|c| if c == '\t' { '\t' } else { ' ' })
        .collect();
    let marks = "~".repeat(place.end_col.saturating_sub(place.col).max(1));
    format!("{at}: WARNING: {message}\n{}\n{pad}{marks}", place.text)
}

/// bpftrace's message for a map update refused because the map is full.
pub const MAP_FULL: &str = "Map full; can't update element. Try increasing max_map_keys config or manually setting the max entries in a map declaration e.g. `let @a = hash(5000)`";

/// The warning text for helper `helper` failing with `retcode` at `place`, as bpftrace 0.27
/// words it: the error, then `Additional Info - helper: NAME, retcode: N`.
pub fn helper_error_text(place: &Place, helper: &str, retcode: i64) -> String {
    let what = match helper {
        "map_lookup_elem" => "Can't lookup map element because it does not exist.".to_string(),
        "map_update_elem" if retcode == -7 => MAP_FULL.to_string(),
        _ => errno_text(retcode),
    };
    located_warning(
        place,
        &format!("{what}\nAdditional Info - helper: {helper}, retcode: {retcode}"),
    )
}

/// Warns on stderr that helper `helper` failed with `retcode` at `span` (unless warnings are
/// silenced).
pub fn helper_error(helper: &str, retcode: i64, span: Span) {
    if !silenced() {
        eprintln!("{}", helper_error_text(&place(span), helper, retcode));
    }
}

/// bpftrace's `errorf`/`warnf` line: `FILE:LINE:COL-END: ERROR: text` (`WARNING` for
/// `warnf`), without the source line (it is the call itself).
pub fn log_text(place: &Place, error: bool, text: &str) -> String {
    let at = place_text(place);
    let level = if error { "ERROR" } else { "WARNING" };
    format!("{at}: {level}: {text}")
}

/// Prints an `errorf` (always) or `warnf` (unless warnings are silenced) message on stderr.
pub fn log(error: bool, text: &str, span: Span) {
    if error || !silenced() {
        eprintln!("{}", log_text(&place(span), error, text));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_and_bpftraces_warning_format() {
        let src = "BEGIN {\n  printf(\"%s\", str(arg0));\n}";
        let start = src.find("str(").unwrap();
        let p = place_in("-e", src, Span::new(start, start + 9));
        assert_eq!((p.line, p.col, p.end_col, p.end_line), (2, 16, 25, None));
        assert_eq!(
            helper_error_text(&p, "probe_read_user_str", -14),
            "-e:2:16-25: WARNING: Bad address\n\
             Additional Info - helper: probe_read_user_str, retcode: -14\n  \
             printf(\"%s\", str(arg0));\n               ~~~~~~~~~"
        );
        assert!(helper_error_text(&p, "map_lookup_elem", 0).starts_with(
            "-e:2:16-25: WARNING: Can't lookup map element because it does not exist.\n\
                 Additional Info - helper: map_lookup_elem, retcode: 0\n"
        ));
        assert_eq!(
            helper_error_text(&p, "map_update_elem", -7)
                .lines()
                .take(2)
                .collect::<Vec<_>>(),
            [
                format!("-e:2:16-25: WARNING: {MAP_FULL}").as_str(),
                "Additional Info - helper: map_update_elem, retcode: -7"
            ]
        );
        let whole = place_in("x.bt", src, Span::new(0, src.len()));
        assert_eq!(whole.end_line, Some(3));
        assert!(located_warning(&whole, "m").starts_with("x.bt:1-3: WARNING: m\nBEGIN {\n"));
        let past = place_in("x", "ab", Span::new(9, 12));
        assert_eq!((past.line, past.col), (1, 3));
    }

    #[test]
    fn errorf_and_warnf_lines() {
        let src = "begin { errorf(\"bad %d\", 1); }";
        let p = place_in("stdin", src, Span::new(8, 26));
        assert_eq!(log_text(&p, true, "bad 1"), "stdin:1:9-27: ERROR: bad 1");
        assert_eq!(log_text(&p, false, "x"), "stdin:1:9-27: WARNING: x");
    }

    #[test]
    fn errno_texts() {
        assert_eq!(errno_text(-14), "Bad address");
        assert_eq!(errno_text(-2), "No such file or directory");
    }
}
