//! The REPL's line-editor helper: Tab completion and multi-line input.
//!
//! Completion reads the registries and kernel information the compiler uses: probe types
//! from the provider registry, tracepoints and uprobe functions from the same listing as
//! `sonde -l`, builtins and functions from their registries, tracepoint fields (`args.`) from
//! the tracepoint's format, kernel struct fields (`curtask->`, through pointer fields) from
//! BTF, map names from the session. An entry stays open while its braces,
//! brackets or parentheses are not closed.

use std::sync::{Arc, Mutex};

use rustyline::completion::{Completer, FilenameCompleter, Pair};
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
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
    kernel: SystemKernel,
    files: FilenameCompleter,
}

impl ReplHelper {
    /// A helper completing map names from `maps`.
    pub fn new(maps: Arc<Mutex<Vec<String>>>) -> ReplHelper {
        ReplHelper {
            maps,
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

/// How deeply `text` nests braces, brackets and parentheses at its end (strings, character
/// literals and comments skipped), and where its last still-open `{` at depth 0 is.
pub fn nesting(text: &str) -> (i32, Option<usize>) {
    let b = text.as_bytes();
    let (mut depth, mut i, mut open_at) = (0i32, 0, None);
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
            b'{' | b'(' | b'[' => {
                if depth == 0 && b[i] == b'{' {
                    open_at = Some(i);
                }
                depth += 1;
            }
            b'}' | b')' | b']' => {
                depth -= 1;
                if depth == 0 {
                    open_at = None;
                }
            }
            _ => {}
        }
        i += 1;
    }
    (depth, open_at)
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
        let (depth, open_at) = nesting(before);
        if depth <= 0 {
            let start = word_start(line, pos, &[':', '/', '.', '-', '*']);
            return Ok((start, pairs(self.attach_points(&before[start..]))));
        }
        let start = word_start(line, pos, &['@', '$', '.', '-', '>']);
        // The probe's head: from the end of the previous probe to its `{`.
        let head = open_at.map_or("", |o| {
            let h = &before[..o];
            let from = h.rfind('}').map_or(0, |i| i + 1);
            h[from..].trim()
        });
        Ok((start, pairs(self.body_words(&before[start..], head))))
    }
}

impl Validator for ReplHelper {
    fn validate(&self, ctx: &mut ValidationContext<'_>) -> rustyline::Result<ValidationResult> {
        let input = ctx.input();
        if input.trim_start().starts_with(':') {
            return Ok(ValidationResult::Valid(None));
        }
        Ok(if nesting(input).0 > 0 {
            ValidationResult::Incomplete
        } else {
            ValidationResult::Valid(None)
        })
    }
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
        assert_eq!(nesting("BEGIN { printf(\"}\"); ").0, 1);
        assert_eq!(nesting("BEGIN { } // {").0, 0);
        assert_eq!(nesting("BEGIN { /* } */").0, 1);
        assert_eq!(nesting("t:a:b { @x[1] = '}'; }").0, 0);
        assert_eq!(nesting("i:s:1 { if (x) {").0, 2);
        assert_eq!(nesting("BEGIN {").1, Some(6));
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
