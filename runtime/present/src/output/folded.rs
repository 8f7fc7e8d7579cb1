//! Folded stacks (`comm;outer;inner 42`, the input format of flame graph tools) and flame
//! graph SVGs drawn from them with `inferno`.
//!
//! A map is *foldable* when its keys hold at least one stack (`kstack`, `ustack`) and its
//! values are single numbers (`count()`, `sum()`, integers). Each entry becomes one line: the
//! key's other parts first (a `comm`, a pid, as text), then its user stacks, then its kernel
//! stacks, each root first, all joined by `;`, then a space and the value. bcc's `profile
//! -f` and `offcputime -f` lay their lines out the same way (process name, user frames,
//! kernel frames). Frames are function names without offsets, so samples at different
//! offsets of a function merge; lines that fold to the same text are summed.
//!
//! [`FoldedPrinter`] is the `-f folded` output: foldable maps print as folded lines, and
//! everything else (printf output, other maps) as bpftrace's text. The flame graph SVG of
//! `--flamegraph FILE` is drawn from these lines by [`crate::pictures::flame`].

use super::text::value_text;
use super::{MapDump, PrintOpts, Printer, Resolver, TextPrinter};
use sonde_compiler::value::{Frame, Num, Value};
use std::collections::BTreeMap;
use std::io::{self, Write};

/// One part of a folded line, with its place in the line.
enum Part {
    /// Plain text (a comm, a number), placed first.
    Text(String),
    /// A user stack, root first, placed after the texts.
    User(String),
    /// A kernel stack, root first, placed last.
    Kernel(String),
}

/// True when a decoded key holds a stack.
fn has_stack(key: &Value) -> bool {
    match key {
        Value::StackId { .. } | Value::Stack(_) => true,
        Value::Tuple(items) => items.iter().any(has_stack),
        _ => false,
    }
}

/// A frame name fit for a folded line: no `;` (the separator) and no newline.
fn clean(name: &str) -> String {
    name.replace([';', '\n'], ":")
}

/// A resolved stack (innermost frame first, symbols `func+off`) as one folded run: function
/// names without offsets, root first, joined by `;`; unresolved frames as `0x` hex. Empty for
/// an empty stack. One name per address: functions inlined there are left out.
pub fn folded_frames(frames: &[Frame]) -> String {
    let names: Vec<String> = frames
        .iter()
        .rev()
        .filter(|f| !f.inlined)
        .map(|f| match &f.symbol {
            Some(sym) => clean(sym.rsplit_once('+').map_or(sym.as_str(), |(n, _)| n)),
            None => format!("{:#x}", f.addr),
        })
        .collect();
    names.join(";")
}

/// The folded form of one key part.
fn part(v: &Value, r: &dyn Resolver) -> Part {
    let (kernel, text) = match v {
        Value::StackId { kernel, raw, .. } => (
            *kernel,
            folded_frames(&r.stack(*kernel, *raw, u32::MAX).unwrap_or_default()),
        ),
        Value::Stack(s) => (s.kernel, folded_frames(&s.frames)),
        other => return Part::Text(clean(&String::from_utf8_lossy(&value_text(other, r, true)))),
    };
    if kernel {
        Part::Kernel(text)
    } else {
        Part::User(text)
    }
}

/// The frames of a key, in folded order, joined by `;` (empty parts left out).
fn folded_key(key: &Value, r: &dyn Resolver) -> String {
    let items: Vec<&Value> = match key {
        Value::Tuple(items) => items.iter().collect(),
        k => vec![k],
    };
    let parts: Vec<Part> = items.into_iter().map(|v| part(v, r)).collect();
    let mut ordered: Vec<&str> = Vec::new();
    for pass in 0..3 {
        for p in &parts {
            match (pass, p) {
                (0, Part::Text(t)) | (1, Part::User(t)) | (2, Part::Kernel(t)) if !t.is_empty() => {
                    ordered.push(t)
                }
                _ => {}
            }
        }
    }
    ordered.join(";")
}

/// The count of a value, when it is a single non-negative number.
fn count_of(v: &Value) -> Option<u64> {
    let n = match v {
        Value::Agg(a) => a.scalar()?,
        Value::Int(i) => Num::I(*i),
        Value::UInt(u) => Num::U(*u),
        _ => return None,
    };
    match n {
        Num::U(u) => Some(u),
        Num::I(i) => u64::try_from(i).ok(),
    }
}

/// The folded lines (`frames count`, sorted by frames, equal frames summed) of a foldable
/// map; `None` when the map is not foldable (no stack in its keys, or values that are not
/// single numbers). Entries with a zero count or no frame at all are left out.
pub fn folded_lines(map: &MapDump, r: &dyn Resolver) -> Option<Vec<String>> {
    let foldable = !map.entries.is_empty()
        && map
            .entries
            .iter()
            .all(|(k, v)| has_stack(k) && count_of(v).is_some());
    if !foldable {
        return None;
    }
    let mut merged: BTreeMap<String, u64> = BTreeMap::new();
    for (key, value) in &map.entries {
        let frames = folded_key(key, r);
        let count = count_of(value).unwrap_or(0);
        if frames.is_empty() || count == 0 {
            continue;
        }
        *merged.entry(frames).or_default() += count;
    }
    Some(
        merged
            .into_iter()
            .map(|(frames, count)| format!("{frames} {count}"))
            .collect(),
    )
}

/// The `-f folded` printer: maps keyed by stacks print as folded lines, everything else as
/// bpftrace's text output. At exit no blank lines precede the maps, so the output of a
/// script that only fills stack maps is a valid folded file.
pub struct FoldedPrinter<W: Write, R: Resolver> {
    text: TextPrinter<W, R>,
    resolver: R,
}

impl<W: Write, R: Resolver + Clone> FoldedPrinter<W, R> {
    /// A printer writing to `out`, resolving names with `resolver`.
    pub fn new(out: W, resolver: R) -> Self {
        FoldedPrinter {
            text: TextPrinter::new(out, resolver.clone()),
            resolver,
        }
    }
}

impl<W: Write, R: Resolver> Printer for FoldedPrinter<W, R> {
    fn printf(&mut self, text: &[u8]) -> io::Result<()> {
        self.text.printf(text)
    }

    fn time(&mut self, text: &[u8]) -> io::Result<()> {
        self.text.time(text)
    }

    fn value(&mut self, value: &Value) -> io::Result<()> {
        self.text.value(value)
    }

    fn map(&mut self, map: &MapDump, opts: PrintOpts) -> io::Result<()> {
        match folded_lines(map, &self.resolver) {
            Some(lines) => {
                let mut text = String::new();
                for l in lines {
                    text.push_str(&l);
                    text.push('\n');
                }
                self.text.printf(text.as_bytes())
            }
            None => self.text.map(map, opts),
        }
    }

    fn exit_maps_start(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.text.flush()
    }
}

#[cfg(test)]
#[path = "folded_tests.rs"]
mod tests;
