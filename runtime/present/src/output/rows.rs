//! Event rows: the output of an event tool (`sonde tool execsnoop -f csv`), whose every line
//! is one event, as one CSV row or one JSON record per line with the tool's columns.
//!
//! [`RowsPrinter`] wraps a printer and joins the `printf` and `time` events that make up one
//! line (up to the one ending with a newline) into the fields of one row: a `time()` is one
//! field, its text; a `printf` is one field per argument, except that a printf whose
//! arguments print as one word (`%d.%03d`: `1.059`) is that word, and a printf without
//! arguments is its text, if any (` ...`). The first line names the columns (the tool's
//! header); a line with more fields than columns has the extra ones joined, with spaces,
//! into the last column (execsnoop's ARGS). The inner printer prints the columns
//! ([`Printer::columns`]) and the rows ([`Printer::row`]); everything else passes through.

use super::{Counts, MapDump, PrintOpts, Printer};
use sonde_compiler::value::Value;
use sonde_lang::Span;
use std::io;

/// A printer that prints lines as rows (see the module doc).
pub struct RowsPrinter<'a> {
    inner: Box<dyn Printer + 'a>,
    text: Vec<u8>,
    fields: Vec<Value>,
    columns: Option<Vec<String>>,
}

impl<'a> RowsPrinter<'a> {
    /// Rows printed by `inner`.
    pub fn new(inner: Box<dyn Printer + 'a>) -> RowsPrinter<'a> {
        RowsPrinter {
            inner,
            text: Vec::new(),
            fields: Vec::new(),
            columns: None,
        }
    }

    /// Adds an event's text and arguments to the line; prints the row at its newline.
    fn add(&mut self, text: &[u8], args: &[Value]) -> io::Result<()> {
        self.text.extend_from_slice(text);
        let word = text.trim_ascii();
        if args.is_empty() || (args.len() > 1 && !word.iter().any(u8::is_ascii_whitespace)) {
            if !word.is_empty() {
                self.fields.push(Value::Str(word.to_vec()));
            }
        } else {
            self.fields.extend_from_slice(args);
        }
        if text.ends_with(b"\n") {
            self.end_line()?;
        }
        Ok(())
    }

    /// Prints the line gathered so far, if any: the columns if it is the first, else a row.
    fn end_line(&mut self) -> io::Result<()> {
        if self.text.is_empty() {
            return Ok(());
        }
        let text = std::mem::take(&mut self.text);
        let mut fields = std::mem::take(&mut self.fields);
        let Some(columns) = &self.columns else {
            let names: Vec<String> = fields.iter().map(name).collect();
            self.inner.columns(&names, &text)?;
            self.columns = Some(names);
            return Ok(());
        };
        if !columns.is_empty() && fields.len() > columns.len() {
            let rest: Vec<String> = fields
                .split_off(columns.len() - 1)
                .iter()
                .map(name)
                .collect();
            fields.push(Value::Str(rest.join(" ").into_bytes()));
        }
        self.inner.row(columns, &fields, &text)
    }
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

    /// execsnoop's events for a header and one exec (`-t`), printed by `make`'s printer.
    fn execsnoop(p: &mut dyn Printer) {
        p.printf_event(b"TIME(s)  ", &[s("TIME(s)")]).unwrap();
        p.printf_event(
            b"PCOMM PID RET ARGS\n",
            &[s("PCOMM"), s("PID"), s("RET"), s("ARGS")],
        )
        .unwrap();
        p.printf_event(b"50.051   ", &[Value::Int(50), Value::Int(51)])
            .unwrap();
        p.printf_event(b"true 42 0 ", &[s("true"), Value::Int(42), Value::Int(0)])
            .unwrap();
        p.printf_event(b"/bin/true ", &[s("/bin/true")]).unwrap();
        p.printf_event(b"a,b ", &[s("a,b")]).unwrap();
        p.printf(b" ...").unwrap();
        p.printf(b"\n").unwrap();
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
            "TIME(s),PCOMM,PID,RET,ARGS\n50.051,true,42,0,\"/bin/true a,b ...\"\n"
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
             \"PID\": 42, \"RET\": 0, \"ARGS\": \"/bin/true a,b ...\"}}\n"
        );
    }
}
