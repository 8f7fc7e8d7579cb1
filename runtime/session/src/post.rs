//! The post-processing script's side of a session ([`crate::report`]): events go to its
//! `on_event`, runs of `print(@map)` events to `on_interval`, the maps at exit to `on_end`,
//! and what the script prints goes through the session's printer, in order with the rest.
//! Without a script (or without the callback), everything prints as sonde prints it; so
//! does everything after the script fails (its error shown first), the maps at exit too.

use super::{Output, Stop};
use sonde_compiler::program::{EventSpec, MapRole};
use sonde_compiler::value::Value;
use sonde_lang::diag::Diagnostic;
use sonde_present::output::text::value_text;
use sonde_present::output::{MapDump, PrintOpts};
use sonde_present::report::{Chunk, Post, Printed, Verdict};
use std::io;

/// An event that prints text, as `on_event` sees it (`e.kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// `printf()`.
    Printf,
    /// `print(value)`.
    Value,
    /// `join()`.
    Join,
    /// `time()`.
    Time,
    /// `cat()`.
    Cat,
    /// `system()`.
    System,
}

impl EventKind {
    /// The name `on_event` sees.
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Printf => "printf",
            EventKind::Value => "print",
            EventKind::Join => "join",
            EventKind::Time => "time",
            EventKind::Cat => "cat",
            EventKind::System => "system",
        }
    }
}

impl Output<'_> {
    /// Post-processes the run with `post`, and prints what its top-level statements printed.
    /// The script's lookups of maps (`maps["@name"]`) are checked against the tracing
    /// script's maps first: an error here comes before the run.
    pub fn set_post(&mut self, mut post: Post) -> Result<(), Diagnostic> {
        let names: Vec<&str> = self
            .script
            .maps
            .iter()
            .filter_map(|m| match &m.role {
                MapRole::User { name, .. } => Some(name.as_str()),
                _ => None,
            })
            .collect();
        post.check_maps(&names)?;
        let out = post.take_output();
        self.post = Some(post);
        self.write_chunks(out);
        Ok(())
    }

    /// True once the post-processing script failed (the run then exits with 1 at least).
    pub fn post_has_failed(&self) -> bool {
        self.post_failed
    }

    /// True once nothing more may be printed: a write failed.
    pub(super) fn silenced(&self) -> bool {
        self.closed()
    }

    /// Prints an event of `kind` (its text, and its arguments: printf's, or the value of
    /// `print`): through `on_event` when the script defines it, else as sonde prints it.
    pub(super) fn emit(
        &mut self,
        kind: EventKind,
        id: usize,
        text: Vec<u8>,
        args: Vec<Value>,
    ) -> io::Result<()> {
        self.end_tick();
        if self.silenced() {
            return Ok(());
        }
        if let Some(post) = self.post.as_mut().filter(|p| p.has_on_event()) {
            let format = match self.script.events.get(id) {
                Some(EventSpec::Printf { format, .. }) => Some(format.as_str()),
                _ => None,
            };
            let resolver = self.resolver.as_ref();
            let shown = match (kind, args.first()) {
                (EventKind::Value, Some(v)) => {
                    let mut t = value_text(v, resolver, false);
                    t.push(b'\n');
                    t
                }
                _ => text.clone(),
            };
            let verdict = post.on_event(kind.name(), &shown, &args, format, resolver);
            let out = post.take_output();
            self.write_chunks(out);
            match verdict {
                Ok(Verdict::Default) => {}
                Ok(Verdict::Replace(t)) => return self.printer.printf(t.as_bytes()),
                Ok(Verdict::Drop) => return Ok(()),
                // The event prints as sonde prints it, after the error.
                Err(d) => self.post_failed(d),
            }
        }
        match (kind, args.first()) {
            (EventKind::Printf, _) => self.printer.printf_event(&text, &args),
            (EventKind::Value, Some(v)) => self.printer.value(v),
            (EventKind::Time, _) => self.printer.time(&text),
            (EventKind::Cat, _) => self.printer.cat(&text),
            (EventKind::System, _) => self.printer.syscall(&text),
            (EventKind::Join, _) => self.printer.join(text.strip_suffix(b"\n").unwrap_or(&text)),
            _ => self.printer.printf(&text),
        }
    }

    /// Prints the map of a `print(@map)` event, or keeps it for `on_interval` when the
    /// script defines it.
    /// The pictures (`--heatmap`) see the maps of the tick too.
    pub(super) fn print_map(&mut self, dump: MapDump, opts: PrintOpts) -> io::Result<()> {
        let to_post = self.post.as_ref().is_some_and(Post::has_on_interval);
        if !to_post {
            self.printer.map(&dump, opts)?;
        }
        if to_post || self.pictures.is_some() {
            let keyed = self.keyed(&dump.name);
            self.tick.push(Printed::new(dump, opts, keyed));
        }
        Ok(())
    }

    /// True when user map `name` has keys.
    fn keyed(&self, name: &str) -> bool {
        matches!(
            self.user_map(name).map(|s| &s.role),
            Some(MapRole::User { key: Some(_), .. })
        )
    }

    /// Ends a run of `print(@map)` events: the pictures and `on_interval` get their maps.
    pub fn end_tick(&mut self) {
        if !self.tick.is_empty() {
            let table = std::mem::take(&mut self.tick);
            let term = self.pictures.as_mut().and_then(|p| p.tick(&table));
            if let Some(text) = term.filter(|_| !self.silenced()) {
                let r = self.printer.printf(text.as_bytes());
                self.wrote(r);
            }
            if !self.silenced() && self.post.as_ref().is_some_and(Post::has_on_interval) {
                self.call_maps(false, table);
            }
        }
    }

    /// The maps at exit (`dumps`, empty ones included): `on_end` gets them all when the
    /// script defines it; otherwise they print when `print_maps` (the script's
    /// `print_maps_on_exit`) says so, and only the two newlines that end a text output
    /// when it does not (bpftrace 0.26 writes them either way).
    /// When `on_end` fails, the maps print as they would without it, after its error.
    pub fn end(&mut self, dumps: &[MapDump], print_maps: bool) {
        self.end_tick();
        let lost = self.reported.lost_events;
        if let Some(post) = self.post.as_mut() {
            post.set_lost_events(lost);
        }
        if self.post.as_ref().is_some_and(Post::has_on_end) {
            if self.silenced() {
                return;
            }
            let table = dumps
                .iter()
                .map(|d| Printed::new(d.clone(), PrintOpts::default(), self.keyed(&d.name)))
                .collect();
            self.call_maps(true, table);
            if self.post.is_some() {
                return;
            }
        }
        self.print_exit_maps(if print_maps { dumps } else { &[] });
    }

    /// Calls `on_end` (`end`) or `on_interval` with `table`, and prints what it printed.
    fn call_maps(&mut self, end: bool, table: Vec<Printed>) {
        let Some(post) = self.post.as_mut() else {
            return;
        };
        let r = post.on_maps(end, table, self.resolver.as_ref());
        let out = post.take_output();
        self.write_chunks(out);
        if let Err(d) = r {
            self.post_failed(d);
        }
    }

    /// Prints what the script printed.
    fn write_chunks(&mut self, chunks: Vec<Chunk>) {
        for c in chunks {
            if self.closed() {
                return;
            }
            let r = match &c {
                Chunk::Text(t) => self.printer.printf(t.as_bytes()),
                Chunk::Map(d, opts) => self.printer.map(d, *opts),
                Chunk::ExitMaps(d) => self.printer.exit_maps(d),
            };
            self.wrote(r);
        }
    }

    /// Takes note of the script's error: the run stops, and the script is set aside, so
    /// that what is left (the maps at exit among it) prints as sonde prints it. The error is
    /// shown at once, after what was printed before it, when the script has a reporter;
    /// otherwise [`Output::finish`] returns it. Either way the run exits with 1 at least.
    fn post_failed(&mut self, d: Diagnostic) {
        if let Some(post) = self.post.take() {
            let r = self.printer.flush();
            self.wrote(r);
            if !post.report(&d) {
                self.post_failure = Some(d);
            }
            self.post_failed = true;
        }
        if self.stop.is_none() {
            self.stop = Some(Stop::Interrupted);
        }
    }
}
