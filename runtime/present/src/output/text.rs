//! bpftrace's text output (0.26 where it differs from 0.17).
//!
//! Maps print as `@name: value` / `@name[k1, k2]: value`, sorted as bpftrace sorts them,
//! with no empty line after them (0.17 left one after `avg` and `stats` maps);
//! an empty map prints nothing (bpftrace 0.26, keyed or not; 0.17 printed an empty line);
//! histograms print `@name[key]:` (0.17: with a trailing space), their chart and an empty
//! line after each key's chart; time series (`tseries()`) print `@name[key]:`, bpftrace 0.26's
//! chart and an empty line.

use super::hist::chart;
use super::printf::escape_buf;
use super::{MapDump, PrintOpts, Printer, Resolver, ordered_entries};
use sonde_compiler::value::{AggValue, Frame, Num, Value};
use sonde_lang::span::Span;
use sonde_lang::types::{AggKind, StackMode, Type};
use std::io::{self, Write};

/// Indentation of stack frames inside map keys.
const KEY_STACK_INDENT: usize = 4;
/// Indentation of stack frames elsewhere (`print(kstack)`, `printf("%s", kstack)`).
const VALUE_STACK_INDENT: usize = 8;

/// The text of a stack exactly as bpftrace prints it: empty for an empty stack, else a newline
/// and one line per frame — indented `func+off` (bpftrace mode; 4 spaces in map keys, 8
/// elsewhere), `\taddr func+off` plus ` (module)` for user frames (perf mode; unresolved user
/// frames show ` ([unknown])`), or the bare hex address (raw mode). Unresolved frames print
/// their address. With DWARF (`show_debug_info`, bpftrace 0.27 with blazesym), a frame in
/// bpftrace mode ends with `@DIR/FILE:LINE`, and the functions inlined at an address come
/// first as `[inlined] name@DIR/FILE:LINE` (perf mode: `\taddr name (inlined)`, no line);
/// raw and build-id modes print one line per address.
pub fn stack_text(frames: &[Frame], mode: StackMode, kernel: bool, in_key: bool) -> String {
    if frames.is_empty() {
        return String::new();
    }
    let pad = " ".repeat(if in_key {
        KEY_STACK_INDENT
    } else {
        VALUE_STACK_INDENT
    });
    let mut s = String::from("\n");
    for f in frames {
        if f.inlined && matches!(mode, StackMode::Raw | StackMode::BuildId) {
            continue;
        }
        let addr = f.addr;
        let sym = f.symbol.clone().unwrap_or_else(|| format!("{addr:#x}"));
        let line = match mode {
            StackMode::Raw => format!("{addr:x}"),
            // bpftrace's `format_build_id_stack`: the id, the offset in at least two digits.
            StackMode::BuildId => match &f.symbol {
                Some(build_id) => format!("{build_id} 0x{addr:02x}"),
                None => format!("{addr:x}"),
            },
            StackMode::Bpftrace => {
                let inlined = if f.inlined { "[inlined] " } else { "" };
                match &f.source {
                    Some(at) => format!("{pad}{inlined}{sym}@{at}"),
                    None => format!("{pad}{inlined}{sym}"),
                }
            }
            StackMode::Perf if f.inlined => format!("\t{addr:x} {sym} (inlined)"),
            StackMode::Perf if kernel => format!("\t{addr:x} {sym}"),
            StackMode::Perf => {
                let module = match (&f.symbol, &f.module) {
                    (Some(_), Some(m)) => m.as_str(),
                    _ => "[unknown]",
                };
                format!("\t{addr:x} {sym} ({module})")
            }
        };
        s.push_str(&line);
        s.push('\n');
    }
    s
}

fn join(items: &[Value], r: &dyn Resolver, in_key: bool, sep: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, v) in items.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(sep.as_bytes());
        }
        out.extend(value_text(v, r, in_key));
    }
    out
}

fn agg_text(a: &AggValue, div: u64) -> String {
    let div = div.max(1);
    match a {
        // Current bpftrace prints a record; 0.17 printed `count N, average A, total T`.
        AggValue::Stats { count, sum, signed } => format!(
            "{{ .count = {count}, .average = {}, .total = {} }}",
            Num::new(*sum, *signed).div_trunc(*count),
            Num::new(*sum, *signed)
        ),
        AggValue::Hist { .. } | AggValue::Lhist { .. } => chart(a, div),
        AggValue::Tseries { .. } => {
            super::tseries::chart(&super::tseries::own_rows(a), &super::tseries::local_hms)
        }
        other => other
            .scalar()
            .map(|n| n.div_trunc(div).to_string())
            .unwrap_or_default(),
    }
}

/// The text of a value as bpftrace prints it in maps, `print()` and `%s`. `in_key` selects
/// the stack indentation used inside map keys.
pub fn value_text(v: &Value, r: &dyn Resolver, in_key: bool) -> Vec<u8> {
    match v {
        Value::None => Vec::new(),
        // Current bpftrace prints bools by name (0.17 printed 0 and 1).
        Value::Bool(b) => b.to_string().into_bytes(),
        Value::Int(i) => i.to_string().into_bytes(),
        Value::UInt(u) => u.to_string().into_bytes(),
        // Current bpftrace prints pointers in hex (0.17 printed them in decimal).
        Value::Ptr(u) => format!("0x{u:x}").into_bytes(),
        Value::Str(s) => s.clone(),
        Value::Buf(b) => escape_buf(b),
        Value::Tuple(items) => {
            let mut out = b"(".to_vec();
            out.extend(join(items, r, in_key, ", "));
            out.push(b')');
            out
        }
        Value::Array(items) => {
            let mut out = b"[".to_vec();
            out.extend(join(items, r, in_key, ","));
            out.push(b']');
            out
        }
        Value::Record { fields, .. } => {
            let mut out = b"{ ".to_vec();
            for (i, (name, fv)) in fields.iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(b", ");
                }
                out.extend_from_slice(format!(".{name} = ").as_bytes());
                out.extend(value_text(fv, r, in_key));
            }
            out.extend_from_slice(b" }");
            out
        }
        // Current bpftrace prints an enum value as its enumerator when it has one.
        Value::Enum { name, value } => r
            .enum_variant(name, *value)
            .unwrap_or_else(|| value.to_string())
            .into_bytes(),
        Value::StackId {
            kernel,
            mode,
            limit,
            raw,
        } => {
            let frames = r.stack(*kernel, *raw, *limit).unwrap_or_default();
            stack_text(&frames, *mode, *kernel, in_key).into_bytes()
        }
        Value::Stack(s) => stack_text(&s.frames, s.mode, s.kernel, in_key).into_bytes(),
        Value::Symbol {
            kernel,
            addr,
            pid,
            name,
        } => name
            .clone()
            .or_else(|| {
                if *kernel {
                    r.symbol(true, *addr)
                } else {
                    r.user_symbol(*pid, *addr)
                }
            })
            .unwrap_or_else(|| format!("0x{addr:x}"))
            .into_bytes(),
        Value::Inet(ip) => ip.to_string().into_bytes(),
        Value::MacAddr(m) => m.map(|b| format!("{b:02X}")).join(":").into_bytes(),
        Value::Timestamp { tag, nsecs } => r
            .timestamp(*tag, *nsecs)
            .unwrap_or_else(|| nsecs.to_string())
            .into_bytes(),
        Value::Username(uid) => r
            .username(*uid)
            .unwrap_or_else(|| uid.to_string())
            .into_bytes(),
        // An id no hierarchy has prints empty, as bpftrace prints it.
        Value::CgroupPath { id, filter } => match filter {
            Some(f) => r.cgroup_path_in(*id, f),
            None => r.cgroup_path(*id),
        }
        .unwrap_or_default()
        .into_bytes(),
        Value::Text(t) => t.clone().into_bytes(),
        Value::Agg(a) => agg_text(a, 1).into_bytes(),
    }
}

/// The `@name[key]` prefix of a map line; a tuple key prints as `k1, k2`.
pub fn map_entry_name(name: &str, key: &Value, r: &dyn Resolver) -> Vec<u8> {
    let mut out = format!("@{name}").into_bytes();
    match key {
        Value::None => {}
        Value::Tuple(items) => {
            out.push(b'[');
            out.extend(join(items, r, true, ", "));
            out.push(b']');
        }
        k => {
            out.push(b'[');
            out.extend(value_text(k, r, true));
            out.push(b']');
        }
    }
    out
}

/// bpftrace's human-readable output.
pub struct TextPrinter<W: Write, R: Resolver> {
    out: W,
    resolver: R,
    /// Formats the whole seconds of `tseries()` times (local `HH:MM:SS`).
    hms: fn(i64) -> String,
    /// `errorf`/`warnf` messages and `-k` helper errors go to the output itself rather than
    /// stderr (a `--test` test's captured output).
    logs_inline: bool,
}

impl<W: Write, R: Resolver> TextPrinter<W, R> {
    /// A printer writing to `out`, resolving names with `resolver`.
    pub fn new(out: W, resolver: R) -> Self {
        TextPrinter {
            out,
            resolver,
            hms: super::tseries::local_hms,
            logs_inline: false,
        }
    }

    /// The printer writing `errorf`/`warnf` messages and `-k` helper errors to its output, in
    /// the words it would use on stderr.
    pub fn with_logs_inline(mut self) -> Self {
        self.logs_inline = true;
        self
    }

    /// The printer with `tseries()` times shown in UTC rather than local time (tests).
    pub fn with_utc_times(mut self) -> Self {
        self.hms = super::tseries::utc_hms;
        self
    }

    /// A `tseries()` map as bpftrace 0.26 prints it: `@name[key]:`, the chart, an empty
    /// line, for each key in the order of their bytes (`print()`'s top and div do not apply).
    fn tseries_map(&mut self, map: &MapDump) -> io::Result<()> {
        let entries = ordered_entries(map, 0);
        let last = super::tseries::map_last_epoch(entries.iter().map(|(_, v)| v));
        for (key, value) in &entries {
            let mut text = map_entry_name(&map.name, key, &self.resolver);
            text.extend_from_slice(b":\n");
            if let Value::Agg(a) = value {
                let rows = super::tseries::rows(a, last);
                text.extend(super::tseries::chart(&rows, &self.hms).into_bytes());
            }
            text.push(b'\n');
            self.out.write_all(&text)?;
        }
        Ok(())
    }

    /// The underlying writer.
    pub fn into_inner(self) -> W {
        self.out
    }
}

impl<W: Write, R: Resolver> Printer for TextPrinter<W, R> {
    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    fn printf(&mut self, text: &[u8]) -> io::Result<()> {
        self.out.write_all(text)
    }

    fn log(&mut self, error: bool, text: &str, span: Span) -> io::Result<()> {
        if !self.logs_inline {
            sonde_system::warnings::log(error, text, span);
        } else if error || !sonde_system::warnings::silenced() {
            let place = sonde_system::warnings::place(span);
            writeln!(
                self.out,
                "{}",
                sonde_system::warnings::log_text(&place, error, text)
            )?;
        }
        Ok(())
    }

    fn helper_error(&mut self, helper: &str, retcode: i64, span: Span) -> io::Result<()> {
        if !self.logs_inline {
            sonde_system::warnings::helper_error(helper, retcode, span);
        } else if !sonde_system::warnings::silenced() {
            let place = sonde_system::warnings::place(span);
            let text = sonde_system::warnings::helper_error_text(&place, helper, retcode);
            writeln!(self.out, "{text}")?;
        }
        Ok(())
    }

    fn time(&mut self, text: &[u8]) -> io::Result<()> {
        self.out.write_all(text)
    }

    fn value(&mut self, value: &Value) -> io::Result<()> {
        let text = value_text(value, &self.resolver, false);
        self.out.write_all(&text)?;
        self.out.write_all(b"\n")
    }

    fn map(&mut self, map: &MapDump, opts: PrintOpts) -> io::Result<()> {
        if map.entries.is_empty() {
            return Ok(());
        }
        let kind = match &map.value_type {
            Type::Agg(k) => Some(k),
            _ => None,
        };
        let is_stats = matches!(kind, Some(AggKind::Stats { .. }));
        let opts = if is_stats { PrintOpts::default() } else { opts };
        if matches!(kind, Some(AggKind::Tseries { .. })) {
            return self.tseries_map(map);
        }
        let hist = matches!(kind, Some(AggKind::Hist { .. } | AggKind::Lhist { .. }));
        let entries = ordered_entries(map, opts.top);
        for (key, value) in &entries {
            let mut line = map_entry_name(&map.name, key, &self.resolver);
            // A histogram starts on the next line after `@h:` (current bpftrace; 0.17 left
            // a space after the colon).
            line.extend_from_slice(if hist { b":\n" } else { b": " });
            match value {
                Value::Agg(a) => line.extend(agg_text(a, opts.div).into_bytes()),
                Value::Int(_) | Value::UInt(_) if opts.div > 1 => {
                    let n = match value {
                        Value::Int(i) => Num::I(*i),
                        Value::UInt(u) => Num::U(*u),
                        _ => unreachable!("matched above"),
                    };
                    line.extend(n.div_trunc(opts.div).to_string().into_bytes());
                }
                other => line.extend(value_text(other, &self.resolver, false)),
            }
            line.push(b'\n');
            self.out.write_all(&line)?;
        }
        Ok(())
    }

    fn exit_maps_start(&mut self) -> io::Result<()> {
        self.out.write_all(b"\n\n")
    }
}

#[cfg(test)]
#[path = "text_tests.rs"]
mod tests;
