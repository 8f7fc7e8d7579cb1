//! Post-processing in rhai (`--post FILE`, `-P CODE`, a tool's report): a script whose
//! callbacks see the run's output as rhai values and print what they like.
//!
//! - `on_event(e)`: every printf, `print(value)`, `cat`, `join`, `time` and `system` event as
//!   it arrives, as `#{kind, text, args}` (`format` too for printf). Its result decides what
//!   sonde prints: a string is printed instead of the event's text, `true` prints the event
//!   as sonde would, anything else (`()`, `false`) prints nothing.
//! - `on_interval(maps)`: once per run of consecutive `print(@map)` events (an interval
//!   probe's `print(@a); print(@b);`), with the maps those events print; the maps then print
//!   only through the script (`print_map`).
//! - `on_end(maps)`: after END, with every map, instead of the default map printout.
//!
//! The script runs sandboxed: no file or process access (no module imports, no
//! `read_file`/`write_file`/`system`) unless `--unsafe` is given, and no `eval`; each call
//! (and the top-level statements, run once before the first event) may run at most
//! [`MAX_OPERATIONS`] operations for at most [`MAX_CALL_TIME`], print at most
//! [`MAX_OUTPUT`], and ends [`SIGNAL_GRACE`] after Ctrl-C or SIGTERM; strings, arrays,
//! object maps and the depth of calls and expressions are bounded.
//! What the script prints (`print`, `table`, `csv`, `print_map`) goes to the run's output
//! through its printer, in order with everything else. `this` is an object map that every
//! callback shares: the place to keep state between calls.
//!
//! **Invariant:** errors are [`Diagnostic`]s with a `sonde::post::` code on the span of the
//! rhai script; nothing here panics on a script's behaviour.

mod convert;
mod diag;
mod library;
mod limits;
mod log2;
mod names;

pub use convert::Printed;
pub use diag::CODE_PREFIX;
pub use library::FUNCTIONS;

use crate::output::{MapDump, PrintOpts, Resolver};
use rhai::{AST, CallFnOptions, Dynamic, Engine, Map, Scope};
use sonde_compiler::value::Value;
use sonde_lang::diag::Diagnostic;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

/// The most operations one call of the script (or its top-level statements) may run.
pub const MAX_OPERATIONS: u64 = 50_000_000;
/// The largest string the script may build, in bytes.
pub const MAX_STRING: usize = 16 << 20;
/// The most items of an array the script may build.
pub const MAX_ARRAY: usize = 1 << 24;
/// The most fields of an object map the script may build.
pub const MAX_MAP: usize = 1 << 20;
/// The deepest the script's function calls may nest.
pub const MAX_CALL_LEVELS: usize = 64;
/// The deepest the script's expressions may nest.
pub const MAX_EXPR_DEPTH: usize = 256;
/// The longest one call of the script (or its top-level statements) may run.
pub const MAX_CALL_TIME: Duration = Duration::from_secs(10);
/// How long a call may go on after Ctrl-C or SIGTERM (one that a signal merely interrupts
/// ends long before).
pub const SIGNAL_GRACE: Duration = Duration::from_secs(1);
/// The most one call may print, in bytes (a map printed with `print_map` counts
/// [`MAP_ENTRY_COST`] per entry): what it prints is kept until the call returns.
pub const MAX_OUTPUT: usize = 64 << 20;
/// What one entry of a map printed with `print_map`/`print_maps` counts towards [`MAX_OUTPUT`].
pub const MAP_ENTRY_COST: usize = 64;
/// The callbacks a script may define.
pub const CALLBACKS: [&str; 3] = ["on_event", "on_interval", "on_end"];

/// Output of the script, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum Chunk {
    /// Text (`print`, `table`, `csv`).
    Text(String),
    /// `print_map(m)`: a map to print with the run's printer, as `print()` would.
    Map(MapDump, PrintOpts),
    /// `print_maps(maps)`: maps to print as at exit.
    ExitMaps(Vec<MapDump>),
}

/// What the library shares with the script's run.
pub(crate) struct Shared {
    chunks: Vec<Chunk>,
    /// The maps of the callback running now (what `print_map` looks tags up in).
    table: Vec<Printed>,
    unsafe_allowed: bool,
    /// What the output kept counts towards [`MAX_OUTPUT`].
    buffered: usize,
    /// Set when output past [`MAX_OUTPUT`] was dropped: the call stops.
    overflowed: bool,
    /// The running call's clock and signal count.
    watch: limits::Watch,
    /// The run's lost events so far (`lost_events()`).
    lost_events: u64,
}

impl Shared {
    /// Takes `cost` of the output budget; false (and the call stops) past [`MAX_OUTPUT`].
    fn spend(&mut self, cost: usize) -> bool {
        match self.buffered.checked_add(cost) {
            Some(total) if total <= MAX_OUTPUT && !self.overflowed => {
                self.buffered = total;
                true
            }
            _ => {
                self.overflowed = true;
                false
            }
        }
    }

    /// Appends text to the output.
    fn text(&mut self, t: &str) {
        if !self.spend(t.len()) {
            return;
        }
        match self.chunks.last_mut() {
            Some(Chunk::Text(s)) => s.push_str(t),
            _ => self.chunks.push(Chunk::Text(t.to_string())),
        }
    }

    /// Appends a map chunk to the output.
    fn push(&mut self, c: Chunk) {
        let entries = match &c {
            Chunk::Text(t) => return self.text(t),
            Chunk::Map(d, _) => d.entries.len(),
            Chunk::ExitMaps(ds) => ds.iter().map(|d| d.entries.len()).sum(),
        };
        if self.spend(entries.saturating_add(1).saturating_mul(MAP_ENTRY_COST)) {
            self.chunks.push(c);
        }
    }
}

/// Options of a post-processing script.
#[derive(Clone, Copy, Debug, Default)]
pub struct PostOptions {
    /// `--unsafe`: file access (`read_file`, `write_file`, module imports) and `system`.
    pub unsafe_allowed: bool,
}

/// What `on_event` asks sonde to print for an event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The event as sonde prints it (`true`).
    Default,
    /// This text instead (a string).
    Replace(String),
    /// Nothing (anything else).
    Drop,
}

/// A compiled post-processing script and its state between callbacks.
pub struct Post {
    engine: Engine,
    ast: AST,
    scope: Scope<'static>,
    this: Dynamic,
    shared: Rc<RefCell<Shared>>,
    source: String,
    defined: [bool; 3],
    /// Shows a diagnostic of the script at once, with its source (see [`Post::report`]).
    reporter: Option<Reporter>,
}

/// Shows a diagnostic of the script with its source (the binary renders it).
pub type Reporter = Box<dyn Fn(&Diagnostic)>;

impl std::fmt::Debug for Post {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Post")
            .field("defined", &self.defined)
            .finish_non_exhaustive()
    }
}

/// The sandboxed engine with the report library.
fn engine(shared: &Rc<RefCell<Shared>>, opts: PostOptions) -> Engine {
    let mut e = Engine::new();
    e.set_max_operations(MAX_OPERATIONS)
        .set_max_string_size(MAX_STRING)
        .set_max_array_size(MAX_ARRAY)
        .set_max_map_size(MAX_MAP)
        .set_max_call_levels(MAX_CALL_LEVELS)
        // rhai's defaults (64, and 32 in functions) refuse ordinary scripts (interpolated
        // strings in loops in functions); 256 levels parse within the main thread's stack.
        .set_max_expr_depths(MAX_EXPR_DEPTH, MAX_EXPR_DEPTH)
        .on_progress(limits::progress(shared));
    // `eval` parses and runs code in a new frame each time: evaluating itself overflows the
    // stack before any level limit is reached.
    e.disable_symbol("eval");
    if !opts.unsafe_allowed {
        e.set_module_resolver(rhai::module_resolvers::DummyModuleResolver::new());
    }
    library::register(&mut e, shared);
    e
}

impl Post {
    /// Tells the script's `lost_events()` how many events the run lost so far.
    pub fn set_lost_events(&mut self, lost: u64) {
        self.shared.borrow_mut().lost_events = lost;
    }

    /// Compiles the rhai script `source` and runs its top-level statements (their output is
    /// kept for [`Post::take_output`]). Errors are diagnostics on `source`.
    pub fn compile(source: &str, opts: PostOptions) -> Result<Post, Diagnostic> {
        let shared = Rc::new(RefCell::new(Shared {
            chunks: Vec::new(),
            table: Vec::new(),
            unsafe_allowed: opts.unsafe_allowed,
            buffered: 0,
            overflowed: false,
            watch: limits::Watch::new(MAX_CALL_TIME),
            lost_events: 0,
        }));
        let engine = engine(&shared, opts);
        let ast = engine
            .compile(source)
            .map_err(|e| diag::parse_error(source, &e))?;
        let mut defined = [false; 3];
        let mut names = Vec::new();
        for f in ast.iter_functions() {
            names.push(f.name);
            if let Some(i) = CALLBACKS.iter().position(|c| *c == f.name) {
                if f.params.len() != 1 {
                    let at = find_fn(source, f.name);
                    return Err(diag::bad_callback(source, f.name, f.params.len(), at));
                }
                defined[i] = true;
            }
        }
        if defined.iter().all(|d| !d) {
            return Err(diag::no_callback(&names));
        }
        let mut scope = Scope::new();
        shared.borrow_mut().watch.restart();
        let ran = engine.run_ast_with_scope(&mut scope, &ast);
        finished(&shared, ran).map_err(|e| diag::runtime_error(source, None, *e))?;
        Ok(Post {
            engine,
            ast,
            scope,
            this: Dynamic::from_map(Map::new()),
            shared,
            source: source.to_string(),
            defined,
            reporter: None,
        })
    }

    /// Checks the script against the maps of the tracing script (`maps`, names without
    /// `@`), before the run: a lookup `maps["@name"]` of a map that does not exist is an
    /// error that names it and the maps that do.
    pub fn check_maps(&self, maps: &[&str]) -> Result<(), Diagnostic> {
        names::check(&self.ast, &self.source, maps)
    }

    /// Shows this script's diagnostics with `reporter` (which renders them with the script's
    /// source) when [`Post::report`] is called.
    pub fn set_reporter(&mut self, reporter: Reporter) {
        self.reporter = Some(reporter);
    }

    /// Shows `d` now with the reporter; false when there is none (the caller keeps it).
    pub fn report(&self, d: &Diagnostic) -> bool {
        match &self.reporter {
            Some(r) => {
                r(d);
                true
            }
            None => false,
        }
    }

    /// True when the script defines `on_event`.
    pub fn has_on_event(&self) -> bool {
        self.defined[0]
    }

    /// True when the script defines `on_interval`.
    pub fn has_on_interval(&self) -> bool {
        self.defined[1]
    }

    /// True when the script defines `on_end`.
    pub fn has_on_end(&self) -> bool {
        self.defined[2]
    }

    /// What the script printed since the last call, in order.
    pub fn take_output(&mut self) -> Vec<Chunk> {
        let mut s = self.shared.borrow_mut();
        s.buffered = 0;
        s.overflowed = false;
        std::mem::take(&mut s.chunks)
    }

    /// Sets the time limit of each call (tests).
    #[cfg(test)]
    fn set_time_limit(&mut self, limit: Duration) {
        self.shared.borrow_mut().watch.limit = limit;
    }

    /// Calls callback `name` with `arg`.
    fn call(&mut self, name: &str, arg: Dynamic) -> Result<Dynamic, Diagnostic> {
        let opts = CallFnOptions::new()
            .eval_ast(false)
            .rewind_scope(true)
            .bind_this_ptr(&mut self.this);
        self.shared.borrow_mut().watch.restart();
        let r = self.engine.call_fn_with_options::<Dynamic>(
            opts,
            &mut self.scope,
            &self.ast,
            name,
            (arg,),
        );
        finished(&self.shared, r).map_err(|e| diag::runtime_error(&self.source, Some(name), *e))
    }

    /// Calls `on_event` with an event of `kind` (`printf`, `print`, `cat`, `join`, `time`,
    /// `system`), its text and arguments (`format`: printf's format string).
    pub fn on_event(
        &mut self,
        kind: &str,
        text: &[u8],
        args: &[Value],
        format: Option<&str>,
        r: &dyn Resolver,
    ) -> Result<Verdict, Diagnostic> {
        let e = convert::event_object(kind, text, args, format, r);
        let v = self.call("on_event", Dynamic::from_map(e))?;
        Ok(if v.is_string() {
            Verdict::Replace(v.into_string().unwrap_or_default())
        } else if v.as_bool() == Ok(true) {
            Verdict::Default
        } else {
            Verdict::Drop
        })
    }

    /// Calls `on_interval` (`end` false) or `on_end` (`end` true) with the maps of `table`.
    pub fn on_maps(
        &mut self,
        end: bool,
        table: Vec<Printed>,
        r: &dyn Resolver,
    ) -> Result<(), Diagnostic> {
        let maps = convert::maps_object(&table, r);
        self.shared.borrow_mut().table = table;
        let name = if end { "on_end" } else { "on_interval" };
        let result = self.call(name, Dynamic::from_map(maps));
        self.shared.borrow_mut().table.clear();
        result.map(|_| ())
    }
}

/// The result of a call, an error when its output overflowed after its last operation.
fn finished<T>(
    shared: &Rc<RefCell<Shared>>,
    r: Result<T, Box<rhai::EvalAltResult>>,
) -> Result<T, Box<rhai::EvalAltResult>> {
    match r {
        Ok(_) if shared.borrow().overflowed => Err(rhai::EvalAltResult::ErrorTerminated(
            limits::Stopped::Output.into(),
            rhai::Position::NONE,
        )
        .into()),
        r => r,
    }
}

/// Where `fn NAME` is defined in `source` (at NAME), as rhai positions count.
fn find_fn(source: &str, name: &str) -> Option<rhai::Position> {
    let needle = format!("fn {name}");
    source.lines().enumerate().find_map(|(i, l)| {
        let col = l.find(&needle)?;
        let line = u16::try_from(i + 1).ok()?;
        let col = u16::try_from(l[..col].chars().count() + 4).ok()?;
        Some(rhai::Position::new(line, col))
    })
}

#[cfg(test)]
mod tests;
