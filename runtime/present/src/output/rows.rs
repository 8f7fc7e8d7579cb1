//! Event rows: the output of an event tool (`sonde tool execsnoop -f csv`), whose every line
//! is one event, as one CSV row or one JSON record per line with the tool's columns.
//!
//! [`RowsPrinter`] wraps a printer and joins the `printf` and `time` events that make up one
//! line (up to the one ending with a newline) into the fields of one row. Each argument of a
//! `printf` is found in the printed text (a string as its bytes, an integer as its decimal
//! digits): arguments printed with nothing but non-space characters between them are one
//! field, their text (`%d.%03d`: `1.059`); an argument alone is a field of its value; an
//! argument that prints as nothing or as spaces only is no field (a separator or an empty
//! optional column). A `time()` and a `printf` without arguments are one field, their text,
//! if any. The first line whose fields are all string arguments names the columns (the
//! tool's header); a line before it (a banner) is printed as it is. The last column is the rest
//! of the line after the field before it (execsnoop's ARGS, exitsnoop's `signal 9 (Killed)`),
//! its field's own value when it is all that rest. The inner printer prints the
//! columns ([`Printer::columns`]) and the rows ([`Printer::row`]); everything else passes
//! through.

use super::{Counts, MapDump, PrintOpts, Printer};
use sonde_compiler::value::Value;
use sonde_lang::Span;
use std::io;

/// One argument (or argument-less text) of a line, with where it printed in the line's text.
struct Piece {
    value: Value,
    /// Its bytes in the line's text, when found there.
    at: Option<(usize, usize)>,
    /// True for a string argument (a column's name, in the header).
    named: bool,
}

/// A printer that prints lines as rows (see the module doc).
pub struct RowsPrinter<'a> {
    inner: Box<dyn Printer + 'a>,
    text: Vec<u8>,
    pieces: Vec<Piece>,
    columns: Option<Vec<String>>,
}

impl<'a> RowsPrinter<'a> {
    /// Rows printed by `inner`.
    pub fn new(inner: Box<dyn Printer + 'a>) -> RowsPrinter<'a> {
        RowsPrinter {
            inner,
            text: Vec::new(),
            pieces: Vec::new(),
            columns: None,
        }
    }

    /// Adds an event's text and arguments to the line; prints the row at its newline.
    fn add(&mut self, text: &[u8], args: &[Value]) -> io::Result<()> {
        let base = self.text.len();
        self.text.extend_from_slice(text);
        if args.is_empty() {
            let start = text.iter().position(|b| !b.is_ascii_whitespace());
            let end = text.iter().rposition(|b| !b.is_ascii_whitespace());
            if let (Some(start), Some(end)) = (start, end) {
                self.pieces.push(Piece {
                    value: Value::Str(text[start..=end].to_vec()),
                    at: Some((base + start, base + end + 1)),
                    named: false,
                });
            }
        }
        let mut cursor = 0;
        for arg in args {
            let printed = match arg {
                Value::Str(b) => Some(b.clone()),
                Value::Int(n) => Some(n.to_string().into_bytes()),
                Value::UInt(n) => Some(n.to_string().into_bytes()),
                _ => None,
            };
            if printed.as_ref().is_some_and(|p| p.trim_ascii().is_empty()) {
                continue;
            }
            let digits = !matches!(arg, Value::Str(_));
            let found = printed.and_then(|p| {
                let start = cursor + find(&text[cursor..], &p)?;
                let mut end = start + p.len();
                // A number's leading zeros (`%03d`) and whatever digits follow are its own.
                let mut start = start;
                while digits && start > cursor && text[start - 1].is_ascii_digit() {
                    start -= 1;
                }
                while digits && end < text.len() && text[end].is_ascii_digit() {
                    end += 1;
                }
                Some((start, end))
            });
            let at = found.map(|(start, end)| {
                cursor = end;
                (base + start, base + end)
            });
            self.pieces.push(Piece {
                value: arg.clone(),
                at,
                named: matches!(arg, Value::Str(_)),
            });
        }
        if text.ends_with(b"\n") {
            self.end_line()?;
        }
        Ok(())
    }

    /// The line's fields: its pieces, those printed next to each other (no space between)
    /// joined into one field of their text; with where each field printed, when known.
    fn fields(&mut self) -> Vec<Piece> {
        let mut fields: Vec<Piece> = Vec::new();
        for piece in std::mem::take(&mut self.pieces) {
            if let (Some(last), Some((start, end))) = (fields.last_mut(), piece.at)
                && let Some((first, prev_end)) = last.at
                && prev_end <= start
                && !self.text[prev_end..start]
                    .iter()
                    .any(u8::is_ascii_whitespace)
            {
                last.value = Value::Str(self.text[first..end].to_vec());
                last.at = Some((first, end));
                last.named &= piece.named;
                continue;
            }
            fields.push(piece);
        }
        fields
    }

    /// Prints the line gathered so far, if any: the columns if it is the first, else a row.
    fn end_line(&mut self) -> io::Result<()> {
        if self.text.is_empty() {
            return Ok(());
        }
        let mut fields = self.fields();
        let text = std::mem::take(&mut self.text);
        if self.columns.is_none() && fields.iter().any(|f| !f.named) {
            // A banner before the header (`Tracing ... higher than 10000 us`): as printed.
            return self.inner.printf(&text);
        }
        let Some(columns) = &self.columns else {
            let names: Vec<String> = fields.iter().map(|f| name(&f.value)).collect();
            self.inner.columns(&names, &text)?;
            self.columns = Some(names);
            return Ok(());
        };
        let n = columns.len();
        if n > 0 && fields.len() + 1 >= n {
            // The last column: the rest of the line after the field before it (its own
            // value when that is all the rest is).
            let rest_from = match n {
                1 => Some(0),
                _ => fields[n - 2].at.map(|(_, end)| end),
            };
            let last = match rest_from {
                Some(from) => text[from..].trim_ascii().to_vec(),
                None => {
                    let rest: Vec<String> =
                        fields[n - 1..].iter().map(|f| name(&f.value)).collect();
                    rest.join(" ").into_bytes()
                }
            };
            let whole = fields.len() == n && name(&fields[n - 1].value).as_bytes() == last;
            if !whole {
                fields.truncate(n - 1);
                fields.push(Piece {
                    value: Value::Str(last),
                    at: None,
                    named: false,
                });
            }
        }
        let values: Vec<Value> = fields.into_iter().map(|f| f.value).collect();
        self.inner.row(columns, &values, &text)
    }
}

/// Where `needle` first occurs in `haystack`.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The text of a field.
fn name(v: &Value) -> String {
    match v {
        Value::Str(b) => String::from_utf8_lossy(b).into_owned(),
        Value::Int(n) => n.to_string(),
        other => format!("{other:?}"),
    }
}

impl Printer for RowsPrinter<'_> {
    fn attached(&mut self, probes: usize) -> io::Result<()> {
        self.inner.attached(probes)
    }
    fn counts(&mut self, new: Counts, max_entries: u32) -> io::Result<()> {
        self.inner.counts(new, max_entries)
    }
    fn printf(&mut self, text: &[u8]) -> io::Result<()> {
        self.add(text, &[])
    }
    fn printf_event(&mut self, text: &[u8], args: &[Value]) -> io::Result<()> {
        self.add(text, args)
    }
    fn time(&mut self, text: &[u8]) -> io::Result<()> {
        self.add(text, &[])
    }
    fn cat(&mut self, text: &[u8]) -> io::Result<()> {
        self.end_line()?;
        self.inner.cat(text)
    }
    fn join(&mut self, text: &[u8]) -> io::Result<()> {
        self.end_line()?;
        self.inner.join(text)
    }
    fn syscall(&mut self, text: &[u8]) -> io::Result<()> {
        self.end_line()?;
        self.inner.syscall(text)
    }
    fn helper_error(&mut self, helper: &str, retcode: i64, span: Span) -> io::Result<()> {
        self.inner.helper_error(helper, retcode, span)
    }
    fn log(&mut self, error: bool, text: &str, span: Span) -> io::Result<()> {
        self.inner.log(error, text, span)
    }
    fn self_test(&mut self, text: &[u8], record_type: &str, json: &str) -> io::Result<()> {
        self.inner.self_test(text, record_type, json)
    }
    fn value(&mut self, value: &Value) -> io::Result<()> {
        self.end_line()?;
        self.inner.value(value)
    }
    fn map(&mut self, map: &MapDump, opts: PrintOpts) -> io::Result<()> {
        self.end_line()?;
        self.inner.map(map, opts)
    }
    fn exit_maps_start(&mut self) -> io::Result<()> {
        self.end_line()?;
        self.inner.exit_maps_start()
    }
    fn exit_maps(&mut self, maps: &[MapDump]) -> io::Result<()> {
        self.end_line()?;
        self.inner.exit_maps(maps)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::NoResolver;
    use crate::output::{CsvPrinter, JsonPrinter};

    fn s(t: &str) -> Value {
        Value::Str(t.as_bytes().to_vec())
    }

    /// execsnoop's events for a header and one exec (`-t`, 2 arguments and ` ...`), printed
    /// by `make`'s printer: the exec's line is one printf, whose empty strings (the columns
    /// of flags not given) and spaces (the separators) are no fields.
    fn execsnoop(p: &mut dyn Printer) {
        p.printf_event(b"TIME(s)  ", &[s("TIME(s)")]).unwrap();
        p.printf_event(
            b"PCOMM PID RET ARGS\n",
            &[s("PCOMM"), s("PID"), s("RET"), s("ARGS")],
        )
        .unwrap();
        let args = [
            s(""),
            Value::Int(50),
            Value::Int(51),
            s("   "),
            s("true"),
            Value::Int(42),
            Value::Int(0),
            s(""),
            s("/bin/true"),
            s(" "),
            s("a,b"),
            s(" "),
            s(" ..."),
        ];
        p.printf_event(b"50.051   true 42 0 /bin/true a,b  ...\n", &args)
            .unwrap();
        p.flush().unwrap();
    }

    #[test]
    fn csv_rows_have_the_tools_columns() {
        let mut out = Vec::new();
        {
            let mut p = RowsPrinter::new(Box::new(CsvPrinter::new(&mut out, NoResolver)));
            execsnoop(&mut p);
        }
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "TIME(s),PCOMM,PID,RET,ARGS\n50.051,true,42,0,\"/bin/true a,b  ...\"\n"
        );
    }

    #[test]
    fn json_records_are_keyed_by_the_tools_columns() {
        let mut out = Vec::new();
        {
            let mut p = RowsPrinter::new(Box::new(JsonPrinter::new(&mut out, NoResolver)));
            execsnoop(&mut p);
        }
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"type\": \"row\", \"data\": {\"TIME(s)\": \"50.051\", \"PCOMM\": \"true\", \
             \"PID\": 42, \"RET\": 0, \"ARGS\": \"/bin/true a,b  ...\"}}\n"
        );
    }

    /// exitsnoop's line: `signal %d (%s)` is the last column, words and all, though only
    /// its arguments are fields; a quoted argument list is one field.
    #[test]
    fn the_last_column_is_the_rest_of_the_line() {
        let mut out = Vec::new();
        {
            let mut p = RowsPrinter::new(Box::new(CsvPrinter::new(&mut out, NoResolver)));
            p.printf_event(b"PID AGE EXIT\n", &[s("PID"), s("AGE"), s("EXIT")])
                .unwrap();
            p.printf_event(
                b"7 1.05    signal 9 (Killed)\n",
                &[
                    Value::Int(7),
                    Value::Int(1),
                    Value::Int(5),
                    s("   "),
                    Value::Int(9),
                    s("Killed"),
                ],
            )
            .unwrap();
            p.printf_event(
                b"8 0.00    0\n",
                &[Value::Int(8), Value::Int(0), Value::Int(0), s("   ")],
            )
            .unwrap();
            p.printf_event(
                b"9 0.00    code 3\n",
                &[
                    Value::Int(9),
                    Value::Int(0),
                    Value::Int(0),
                    s("   "),
                    Value::Int(3),
                ],
            )
            .unwrap();
            p.flush().unwrap();
        }
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "PID,AGE,EXIT\n7,1.05,signal 9 (Killed)\n8,0.00,0\n9,0.00,code 3\n"
        );
    }

    /// runqslower's banner comes before its header: printed as it is, not as the columns.
    #[test]
    fn a_banner_before_the_header_is_text() {
        let mut out = Vec::new();
        {
            let mut p = RowsPrinter::new(Box::new(CsvPrinter::new(&mut out, NoResolver)));
            p.printf_event(b"Tracing higher than 10000 us\n", &[Value::Int(10000)])
                .unwrap();
            p.printf_event(b"COMM TID\n", &[s("COMM"), s("TID")])
                .unwrap();
            p.printf_event(b"cc 7\n", &[s("cc"), Value::Int(7)])
                .unwrap();
            p.flush().unwrap();
        }
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "Tracing higher than 10000 us\nCOMM,TID\ncc,7\n"
        );
    }
}
