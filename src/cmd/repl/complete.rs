//! The REPL's line-editor helper: Tab completion and multi-line input.
//!
//! Completion reads the registries and kernel information the compiler uses: probe types
//! from the provider registry, tracepoints and uprobe functions from the same listing as
//! `sonde -l`, builtins and functions from their registries, tracepoint fields (`args.`) from
//! the tracepoint's format, kernel struct fields (`curtask->`, through pointer fields) from
//! BTF, map names from the session. An entry stays open while its braces,
//! brackets or parentheses are not closed (a probe's closing brace ends it
//! whatever is left open inside).

use std::sync::{Arc, Mutex};

use rustyline::completion::{Completer, FilenameCompleter, Pair};
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::Validator;
use rustyline::{Context, Helper};
use sonde_compiler::catalog::SondeCatalog;
use sonde_lang::catalog::Catalog;
use sonde_lang::kernel::KernelInfo;
use sonde_system::kernel_info::SystemKernel;

/// The commands, for completion and `:help`: name, arguments, what it does.
pub const COMMANDS: [(&str, &str, &str); 17] = [
    (":help", "", "this list"),
    (":list", "", "the probes attached, with their entry ids"),
    (
        ":detach",
        "N|all",
        "detach entry N's probes (or every probe)",
    ),
    (":print", "@map [TOP]", "print a map (its TOP entries)"),
    (":clear", "@map", "remove every entry of a map"),
    (":maps", "", "the maps with their types"),
    (
        ":script",
        "",
        "the script so far (the entries still attached)",
    ),
    (":save", "FILE", "write the script so far to FILE"),
    (":load", "FILE", "enter FILE's text as one entry"),
    (":format", "text|json", "how output is printed from now on"),
    (
        ":set",
        "$N VALUE",
        "set positional parameter $N for later entries",
    ),
    (":params", "", "the positional parameters"),
    (
        ":run",
        "CMD",
        "start CMD (its pid is `cpid` in later entries)",
    ),
    (
        ":watch",
        "@map [SECS]",
        "redraw a map every SECS seconds (default 1) until a key is pressed",
    ),
    (
        ":top",
        "@map [N]",
        "the N largest entries of a map (default 10)",
    ),
    (":quit", "", "detach everything, run END and print the maps"),
    (":q", "", "same as :quit"),
];

/// The helper given to the line editor.
pub struct ReplHelper {
    /// `@name` of every map in the session, refreshed after each entry.
    pub maps: Arc<Mutex<Vec<String>>>,
    /// The lines of an entry left open, before the line being typed.
    pub pending: String,
    kernel: SystemKernel,
    files: FilenameCompleter,
}

impl ReplHelper {
    /// A helper completing map names from `maps`.
    pub fn new(maps: Arc<Mutex<Vec<String>>>) -> ReplHelper {
        ReplHelper {
            maps,
            pending: String::new(),
            kernel: SystemKernel::new(),
            files: FilenameCompleter::new(),
        }
    }

    fn map_names(&self, prefix: &str) -> Vec<String> {
        let maps = self.maps.lock().map(|m| m.clone()).unwrap_or_default();
        maps.into_iter().filter(|m| m.starts_with(prefix)).collect()
    }

    /// Completions of an attach point being typed (`word`, up to the cursor).
    fn attach_points(&self, word: &str) -> Vec<String> {
        if !word.contains(':') {
            let mut out: Vec<String> = SondeCatalog
                .providers()
                .iter()
                .flat_map(|p| p.names().iter())
                .filter(|n| n.starts_with(word))
                .map(|n| {
                    if matches!(*n, "BEGIN" | "END") {
                        n.to_string()
                    } else {
                        format!("{n}:")
                    }
                })
                .collect();
            out.sort();
            out.dedup();
            return out;
        }
        // A user-space binary being typed is a file name, not a glob over $PATH (which `-l`
        // would search: far too slow for a key press).
        let (head, rest) = word.split_once(':').unwrap_or((word, ""));
        if matches!(head, "uprobe" | "u" | "uretprobe" | "ur" | "usdt" | "U") && !rest.contains(':')
        {
            return Vec::new();
        }
        let pattern = format!("{word}*");
        let Ok(names) = sonde_drivers::list::list_probes(&self.kernel, Some(&pattern), false)
        else {
            return Vec::new();
        };
        // One field at a time: `tracepoint:sch` completes to `tracepoint:sched:`.
        let mut out: Vec<String> = names
            .iter()
            .filter_map(|n| {
                // Listed names spell the provider in full; the word may use an alias.
                let tail = n.split_once(':')?.1;
                let typed_tail = word.split_once(':')?.1;
                let rest = tail.strip_prefix(typed_tail)?;
                let head = &word[..word.len() - typed_tail.len()];
                Some(match rest.find(':') {
                    Some(i) => format!("{head}{typed_tail}{}", &rest[..=i]),
                    None => format!("{head}{tail}"),
                })
            })
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Completions of a word in a probe's body: `args.` fields of the probe's tracepoint,
    /// maps, builtins and functions.
    fn body_words(&self, word: &str, probe_head: &str) -> Vec<String> {
        if let Some(field) = word.strip_prefix("args.") {
            return self
                .tracepoint_fields(probe_head)
                .into_iter()
                .filter(|f| f.starts_with(field))
                .map(|f| format!("args.{f}"))
                .collect();
        }
        if word.starts_with('@') {
            return self.map_names(word);
        }
        if let Some((path, field)) = word.rsplit_once("->") {
            return self
                .pointee_fields(path)
                .into_iter()
                .filter(|f| f.starts_with(field))
                .map(|f| format!("{path}->{f}"))
                .collect();
        }
        let mut out: Vec<String> = SondeCatalog
            .builtins()
            .iter()
            .map(|b| b.name().to_string())
            .chain(
                SondeCatalog
                    .functions()
                    .iter()
                    .map(|f| format!("{}(", f.name())),
            )
            .filter(|n| n.starts_with(word))
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// The fields of the kernel struct `path` points to: `curtask` (a `struct task_struct *`),
    /// then through pointer fields (`curtask->parent->real_parent`), from BTF.
    fn pointee_fields(&self, path: &str) -> Vec<String> {
        use sonde_lang::kernel::RecordKind;
        use sonde_lang::types::Type;
        let mut parts = path.split("->");
        if parts.next() != Some("curtask") {
            return Vec::new();
        }
        let mut record = self.kernel.record(RecordKind::Struct, "task_struct");
        for name in parts {
            let Some(field) = record.as_ref().and_then(|r| r.field(name)) else {
                return Vec::new();
            };
            let Type::Ptr { pointee, .. } = &field.ty else {
                return Vec::new();
            };
            let Type::Record(r) = pointee.as_ref() else {
                return Vec::new();
            };
            record = match sonde_lang::ctypes::record_ref(r) {
                Some((kind, tag)) if sonde_lang::ctypes::is_opaque(r) => {
                    self.kernel.record(kind, tag)
                }
                _ => Some(r.clone()),
            };
        }
        record.map_or_else(Vec::new, |r| {
            r.fields.iter().map(|f| f.name.clone()).collect()
        })
    }

    /// The field names of the tracepoint a probe head (`tracepoint:cat:name /pred/`)
    /// attaches to.
    fn tracepoint_fields(&self, head: &str) -> Vec<String> {
        let ap = head.split_whitespace().next().unwrap_or("");
        let ap = ap.split(',').next().unwrap_or("");
        let mut parts = ap.split(':');
        let provider = parts.next().unwrap_or("");
        if !matches!(provider, "tracepoint" | "t") {
            return Vec::new();
        }
        let (Some(cat), Some(name)) = (parts.next(), parts.next()) else {
            return Vec::new();
        };
        self.kernel
            .tracepoint_format(cat, name)
            .unwrap_or_default()
            .into_iter()
            .map(|f| f.name)
            .filter(|n| !n.starts_with("common_"))
            .collect()
    }
}

/// Where the word before `pos` starts.
fn word_start(line: &str, pos: usize, extra: &[char]) -> usize {
    line[..pos]
        .char_indices()
        .rev()
        .find(|(_, c)| !(c.is_alphanumeric() || *c == '_' || extra.contains(c)))
        .map_or(0, |(i, c)| i + c.len_utf8())
}

/// How `text` nests braces, brackets and parentheses at its end (strings, character
/// literals and comments skipped).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Nesting {
    /// The openers still open, with their offsets, outermost first.
    open: Vec<(u8, usize)>,
    /// Where the latest `}` that closed a brace is.
    last_close: Option<usize>,
}

impl Nesting {
    /// How many openers are still open.
    pub fn depth(&self) -> usize {
        self.open.len()
    }

    /// Where the outermost `{` still open is (the body of the probe being typed).
    pub fn body_at(&self) -> Option<usize> {
        self.open.iter().find(|o| o.0 == b'{').map(|o| o.1)
    }

    /// True when the entry needs more lines: a brace is still open, or a parenthesis or
    /// bracket that no later closing brace ended. A `}` closes its `{` with whatever was
    /// left open inside it, so `BEGIN { @x = count( }` is complete (and the parser reports
    /// the missing `)`).
    pub fn is_open(&self) -> bool {
        match self.open.last() {
            None => false,
            Some(_) if self.body_at().is_some() => true,
            Some(&(_, at)) => self.last_close.is_none_or(|c| c < at),
        }
    }

    /// Closes the innermost `opener` still open (with what is open inside it); a closer
    /// without an opener (or one past an open brace, for `)` and `]`) changes nothing.
    fn close(&mut self, opener: u8, at: usize) {
        let found = self.open.iter().rposition(|o| o.0 == opener);
        let inside_brace = self.open.iter().rposition(|o| o.0 == b'{');
        let Some(i) = found else {
            return;
        };
        if opener != b'{' && inside_brace.is_some_and(|b| b > i) {
            return;
        }
        self.open.truncate(i);
        if opener == b'{' {
            self.last_close = Some(at);
        }
    }
}

/// How `text` nests at its end (see [`Nesting`]).
pub fn nesting(text: &str) -> Nesting {
    let b = text.as_bytes();
    let mut n = Nesting::default();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' | b'\'' => {
                let q = b[i];
                i += 1;
                while i < b.len() && b[i] != q {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 1;
            }
            c @ (b'{' | b'(' | b'[') => n.open.push((c, i)),
            b'}' => n.close(b'{', i),
            b')' => n.close(b'(', i),
            b']' => n.close(b'[', i),
            _ => {}
        }
        i += 1;
    }
    n
}

impl Completer for ReplHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let before = &line[..pos];
        let pairs = |v: Vec<String>| {
            v.into_iter()
                .map(|s| Pair {
                    display: s.clone(),
                    replacement: s,
                })
                .collect()
        };
        if let Some(cmd) = before.trim_start().strip_prefix(':') {
            let Some((name, _)) = cmd.split_once(' ') else {
                let start = word_start(line, pos, &[]).saturating_sub(1);
                let found: Vec<String> = COMMANDS
                    .iter()
                    .map(|c| c.0.to_string())
                    .filter(|c| c.starts_with(&before[start..]))
                    .collect();
                return Ok((start, pairs(found)));
            };
            return match name {
                "load" | "save" => self.files.complete(line, pos, ctx),
                "print" | "clear" | "watch" | "top" => {
                    let start = word_start(line, pos, &['@']);
                    Ok((start, pairs(self.map_names(&before[start..]))))
                }
                _ => Ok((pos, Vec::new())),
            };
        }
        // The lines of the entry entered so far come before this one.
        let context = if self.pending.is_empty() {
            before.to_string()
        } else {
            format!("{}\n{before}", self.pending)
        };
        let nested = nesting(&context);
        if nested.depth() == 0 {
            let start = word_start(line, pos, &[':', '/', '.', '-', '*']);
            return Ok((start, pairs(self.attach_points(&before[start..]))));
        }
        let start = word_start(line, pos, &['@', '$', '.', '-', '>']);
        // The probe's head: from the end of the previous probe to its `{`.
        let head = nested.body_at().map_or("", |o| {
            let h = &context[..o];
            let from = h.rfind('}').map_or(0, |i| i + 1);
            h[from..].trim()
        });
        Ok((start, pairs(self.body_words(&before[start..], head))))
    }
}

/// Every line is taken as typed: an entry left open continues on the next line, read with
/// the continuation prompt (see [`entry_is_open`]).
impl Validator for ReplHelper {}

/// True when `text` (the lines of an entry so far) needs more lines: see [`Nesting::is_open`];
/// a command (`:…`) never does.
pub fn entry_is_open(text: &str) -> bool {
    !text.trim_start().starts_with(':') && nesting(text).is_open()
}

impl Hinter for ReplHelper {
    type Hint = String;
}

impl Highlighter for ReplHelper {}

impl Helper for ReplHelper {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_skips_strings_and_comments() {
        assert_eq!(nesting("BEGIN { printf(\"}\"); ").depth(), 1);
        assert_eq!(nesting("BEGIN { } // {").depth(), 0);
        assert_eq!(nesting("BEGIN { /* } */").depth(), 1);
        assert_eq!(nesting("t:a:b { @x[1] = '}'; }").depth(), 0);
        assert_eq!(nesting("i:s:1 { if (x) {").depth(), 2);
        assert_eq!(nesting("BEGIN {").body_at(), Some(6));
        assert_eq!(nesting("BEGIN { @x = count(").body_at(), Some(6));
    }

    #[test]
    fn a_closing_brace_ends_an_entry_with_a_parenthesis_left_open() {
        // The probe's `}` closes it: the parser then reports the `(`.
        assert!(!entry_is_open("BEGIN { @x = count( }"));
        assert!(!entry_is_open("BEGIN { @x[1 = 2; }"));
        assert!(!entry_is_open("t:a:b /(pid == 1/ { @x = 1; }"));
        // Still open: a brace, or a parenthesis no brace has closed since.
        assert!(entry_is_open("BEGIN { @x = count( "));
        assert!(entry_is_open("BEGIN { if (x) { @x = count( }"));
        assert!(!entry_is_open("BEGIN { if (x) { @x = count( }\n}"));
        assert!(entry_is_open("macro f(a,"));
        assert!(entry_is_open("BEGIN { }\nmacro f(a,"));
        assert!(entry_is_open("BEGIN {\n@x = 1;"));
        // A stray closer changes nothing; commands are never open.
        assert!(!entry_is_open("BEGIN { ) }"));
        assert!(!entry_is_open(":print @x"));
        assert!(!entry_is_open("BEGIN { @x = 1; }"));
    }

    #[test]
    fn words_start_after_separators() {
        assert_eq!(word_start("BEGIN { @x = cou", 16, &['@']), 13);
        assert_eq!(word_start("tracepoint:sch", 14, &[':']), 0);
        assert_eq!(word_start("a, t:sy", 7, &[':']), 3);
    }

    #[test]
    fn probe_types_and_builtins_complete_from_the_registries() {
        let h = ReplHelper::new(Arc::new(Mutex::new(vec!["@count".into(), "@lat".into()])));
        let types = h.attach_points("trace");
        assert!(types.contains(&"tracepoint:".to_string()), "{types:?}");
        let words = h.body_words("com", "");
        assert!(words.contains(&"comm".to_string()), "{words:?}");
        let funcs = h.body_words("coun", "");
        assert!(funcs.contains(&"count(".to_string()), "{funcs:?}");
        assert_eq!(h.body_words("@c", ""), vec!["@count".to_string()]);
        // Functions of a named binary complete; a binary being typed is not globbed.
        let bash = h.attach_points("uprobe:/bin/bash:readl");
        assert!(
            bash.contains(&"uprobe:/bin/bash:readline".to_string()),
            "{bash:?}"
        );
        assert!(h.attach_points("uprobe:/bin/ba").is_empty());
        // Kernel struct fields from BTF, through pointers.
        let task = h.body_words("curtask->real_pa", "");
        assert!(
            task.contains(&"curtask->real_parent".to_string()),
            "{task:?}"
        );
        let parent = h.body_words("curtask->real_parent->tg", "");
        assert!(
            parent.contains(&"curtask->real_parent->tgid".to_string()),
            "{parent:?}"
        );
    }
}
