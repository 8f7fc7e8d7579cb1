//! The script a REPL session has built: its entries, and the compilation of a new one as
//! part of the whole.
//!
//! An entry is split where its first probe starts: what comes before (config, macros,
//! `#define`s, structs, map declarations) joins the session's definitions, which come first
//! in the whole script; the probes join the session's probes, after those of earlier
//! entries. Entries are never taken out of the script (a detached entry keeps its text), so
//! maps and events keep their numbers; `:script` and `:save` show the entries still
//! attached.

use sonde_compiler::catalog::SondeCatalog;
use sonde_compiler::compile::compile;
use sonde_compiler::options::CompileOptions;
use sonde_compiler::program::CompiledScript;
use sonde_lang::diag::Diagnostic;
use sonde_lang::sema::{CheckOptions, MissingProbes, check};
use sonde_lang::span::Span;
use sonde_system::kernel_info::SystemKernel;

/// One accepted entry.
#[derive(Clone, Debug)]
pub struct Entry {
    /// Its id (`:detach N`).
    pub id: usize,
    /// Its definitions (text before its first probe), if any.
    pub defs: String,
    /// Its probes' text, if any.
    pub probes: String,
}

/// A new entry, compiled as part of the whole script and not yet committed.
pub struct Prepared {
    /// The entry.
    pub entry: Entry,
    /// The whole script with the entry.
    pub compiled: CompiledScript,
    /// The whole script's text, which the spans of `compiled` are in.
    pub text: String,
    /// The indices (in the whole script) of the entry's probes.
    pub probes: Vec<usize>,
    /// The entry's warnings, located in the entry's text.
    pub warnings: Vec<Diagnostic>,
    /// `config = { missing_probes = ... }`.
    pub missing: MissingProbes,
    /// `config = { print_maps_on_exit = ... }`.
    pub print_maps_on_exit: bool,
    /// `config = { str_trunc_trailer = ... }`.
    pub str_trunc_trailer: Vec<u8>,
    /// `config = { show_debug_info = ... }`.
    pub show_debug_info: bool,
}

/// The session's script and what compiling it depends on.
pub struct Script {
    entries: Vec<Entry>,
    next_id: usize,
    /// `$1`, `$2`, ... (`:set`).
    pub positional: Vec<String>,
    /// The pid of the latest `:run` child (`cpid`).
    pub cpid: Option<u32>,
    /// `--unsafe`.
    pub unsafe_allowed: bool,
    start_ns: u64,
    kernel: SystemKernel,
}

/// Where the new entry's two parts sit in the whole script's text.
struct Placement {
    /// (start in the whole text, length, start in the entry's text) of each part.
    parts: Vec<(usize, usize, usize)>,
}

impl Placement {
    /// `span` (in the whole text) in the entry's text, if it lies in the entry.
    fn rebase(&self, span: Span) -> Option<Span> {
        self.parts.iter().find_map(|&(at, len, from)| {
            (span.start >= at && span.end <= at + len)
                .then(|| Span::new(span.start - at + from, span.end - at + from))
        })
    }

    /// `d` located in the entry's text, or `None` when it is about another entry.
    fn rebase_diag(&self, d: &Diagnostic) -> Option<Diagnostic> {
        if d.span == Span::default() {
            return Some(d.clone());
        }
        let mut d = d.clone();
        d.span = self.rebase(d.span)?;
        d.secondary = d
            .secondary
            .iter()
            .filter_map(|(s, l)| Some((self.rebase(*s)?, l.clone())))
            .collect();
        Some(d)
    }
}

impl Script {
    /// An empty script.
    pub fn new(unsafe_allowed: bool) -> Script {
        Script {
            entries: Vec::new(),
            next_id: 1,
            positional: Vec::new(),
            cpid: None,
            unsafe_allowed,
            start_ns: sonde_system::clock::boot_ns(),
            kernel: SystemKernel::new(),
        }
    }

    /// The whole text: every definition, then every entry's probes; with the offsets of
    /// `extra`'s two parts when it is appended.
    fn whole(&self, extra: Option<&Entry>) -> (String, Vec<usize>) {
        let mut text = String::new();
        let mut at = Vec::new();
        for e in self.entries.iter().chain(extra) {
            if !e.defs.trim().is_empty() {
                if extra.is_some_and(|x| std::ptr::eq(x, e)) {
                    at.push(text.len());
                }
                text += &e.defs;
                text.push('\n');
            }
        }
        for e in self.entries.iter().chain(extra) {
            if !e.probes.trim().is_empty() {
                if extra.is_some_and(|x| std::ptr::eq(x, e)) {
                    at.push(text.len());
                }
                text += &e.probes;
                text.push('\n');
            }
        }
        (text, at)
    }

    /// The whole text of the entries committed so far.
    pub fn committed_text(&self) -> String {
        self.whole(None).0
    }

    /// The whole text with `entry` appended (where diagnostics of its load are located).
    pub fn whole_with(&self, entry: &Entry) -> String {
        self.whole(Some(entry)).0
    }

    /// Compiles `text` as the next entry. Errors: the diagnostics and the text they are
    /// located in (the entry's own, or the whole script's for a conflict with an earlier
    /// entry).
    pub fn prepare(&self, text: &str) -> Result<Prepared, (Vec<Diagnostic>, String)> {
        let alone = sonde_lang::syntax::parse(text).map_err(|d| (d, text.to_string()))?;
        if !alone.imports.is_empty() {
            let span = alone.imports[0].1;
            return Err((
                vec![
                    Diagnostic::error(
                        "sonde::repl::import",
                        span,
                        "`import` is not available in the REPL",
                    )
                    .with_help("load the file's text with `:load FILE`"),
                ],
                text.to_string(),
            ));
        }
        let split = alone.probes.first().map_or(text.len(), |p| p.span.start);
        // The comment lines right before the first probe stay with it.
        let entry = Entry {
            id: self.next_id,
            defs: text[..split].to_string(),
            probes: text[split..].to_string(),
        };
        let (whole, at) = self.whole(Some(&entry));
        let mut parts = Vec::new();
        let mut offsets = at.into_iter();
        if !entry.defs.trim().is_empty() {
            parts.push((offsets.next().unwrap_or(0), entry.defs.len(), 0));
        }
        if !entry.probes.trim().is_empty() {
            parts.push((offsets.next().unwrap_or(0), entry.probes.len(), split));
        }
        let place = Placement { parts };
        let fail = |diags: Vec<Diagnostic>| -> (Vec<Diagnostic>, String) {
            let errors: Vec<&Diagnostic> = diags.iter().filter(|d| d.is_error()).collect();
            let rebased: Option<Vec<Diagnostic>> =
                errors.iter().map(|d| place.rebase_diag(d)).collect();
            match rebased {
                Some(d) if !d.is_empty() => (d, text.to_string()),
                _ => (diags, whole.clone()),
            }
        };
        let mut program = sonde_lang::syntax::parse(&whole).map_err(fail)?;
        let diags = sonde_compiler::catalog::functions::attach_params::expand_attach_points(
            &mut program,
            &self.positional,
            &[],
        );
        if !diags.is_empty() {
            return Err(fail(diags));
        }
        let options = CheckOptions {
            positional: self.positional.clone(),
            unsafe_allowed: self.unsafe_allowed,
            named: Vec::new(),
            env_config: std::env::vars()
                .filter(|(k, _)| k.starts_with("BPFTRACE_"))
                .collect(),
            watch_target: None,
            // A later entry may store a longer string in a map created already.
            wide_map_strings: true,
        };
        let (checked, diags) = check(&program, &SondeCatalog, &self.kernel, &options);
        if diags.iter().any(Diagnostic::is_error) {
            return Err(fail(diags));
        }
        let warnings = diags.iter().filter_map(|d| place.rebase_diag(d)).collect();
        let body_start = place
            .parts
            .iter()
            .find(|p| p.2 == split && !entry.probes.trim().is_empty())
            .map(|p| p.0);
        let probes: Vec<usize> = program
            .probes
            .iter()
            .enumerate()
            .filter(|(_, p)| body_start.is_some_and(|b| p.span.start >= b))
            .map(|(i, _)| i)
            .collect();
        if let Some(userspace) = crate::engine::userspace_point(&program) {
            return Err(fail(vec![
                Diagnostic::error(
                    "sonde::repl::userspace",
                    userspace.span,
                    "`input` and `replay` probes do not join a kernel session",
                )
                .with_label("a userspace probe")
                .with_help(
                    "enter them on their own: an entry of userspace probes only runs at once in the userspace engine",
                ),
            ]));
        }
        let copts = CompileOptions {
            positional: self.positional.clone(),
            filter_pid: None,
            exclude_pid: Some(std::process::id()),
            cpid: self.cpid,
            ncpus: sonde_system::cpus::online_cpus().map_or(1, |c| c.len() as u32),
            start_ns: self.start_ns,
            named: Vec::new(),
            helper_errors: false,
            tai_offset_ns: sonde_system::clock::tai_offset_ns(),
            tseries_clock_map: None,
        };
        let compiled = compile(&program, &checked, &self.kernel, &copts).map_err(fail)?;
        Ok(Prepared {
            entry,
            compiled: compiled.script,
            text: whole,
            probes,
            warnings,
            missing: checked.config.missing_probes,
            print_maps_on_exit: checked.config.print_maps_on_exit,
            str_trunc_trailer: checked.config.str_trunc_trailer.clone(),
            show_debug_info: checked.config.show_debug_info,
        })
    }

    /// Makes a prepared entry part of the script; returns its id.
    pub fn commit(&mut self, entry: Entry) -> usize {
        let id = entry.id;
        self.entries.push(entry);
        self.next_id = id + 1;
        id
    }

    /// The text of the definitions and of the entries whose ids are in `attached`, as a
    /// script file (`:script`, `:save`).
    pub fn text(&self, attached: &[usize]) -> String {
        let mut s = String::new();
        for e in &self.entries {
            if !e.defs.trim().is_empty() {
                s += e.defs.trim_end();
                s.push('\n');
            }
        }
        for e in self.entries.iter().filter(|e| attached.contains(&e.id)) {
            if !e.probes.trim().is_empty() {
                s += e.probes.trim_end();
                s.push('\n');
            }
        }
        s
    }
}
