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
//! `read_file`/`write_file`/`system`) unless `--unsafe` is given; each call (and the
//! top-level statements, run once before the first event) may run at most
//! [`MAX_OPERATIONS`] operations; strings, arrays, object maps and call depth are bounded.
//! What the script prints (`print`, `table`, `csv`, `print_map`) goes to the run's output
//! through its printer, in order with everything else. `this` is an object map that every
//! callback shares: the place to keep state between calls.
//!
//! **Invariant:** errors are [`Diagnostic`]s with a `sonde::post::` code on the span of the
//! rhai script; nothing here panics on a script's behaviour.

mod convert;
mod diag;
mod library;

pub use convert::Printed;
pub use diag::CODE_PREFIX;
pub use library::FUNCTIONS;

use crate::output::{MapDump, PrintOpts, Resolver};
use rhai::{AST, CallFnOptions, Dynamic, Engine, Map, Scope};
use sonde_compiler::value::Value;
use sonde_lang::diag::Diagnostic;
use std::cell::RefCell;
use std::rc::Rc;

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
}

impl Shared {
    /// Appends text to the output.
    fn text(&mut self, t: &str) {
        match self.chunks.last_mut() {
            Some(Chunk::Text(s)) => s.push_str(t),
            _ => self.chunks.push(Chunk::Text(t.to_string())),
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
}

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
        .set_max_expr_depths(MAX_EXPR_DEPTH, MAX_EXPR_DEPTH);
    if !opts.unsafe_allowed {
        e.set_module_resolver(rhai::module_resolvers::DummyModuleResolver::new());
    }
    library::register(&mut e, shared);
    e
}

impl Post {
    /// Compiles the rhai script `source` and runs its top-level statements (their output is
    /// kept for [`Post::take_output`]). Errors are diagnostics on `source`.
    pub fn compile(source: &str, opts: PostOptions) -> Result<Post, Diagnostic> {
        let shared = Rc::new(RefCell::new(Shared {
            chunks: Vec::new(),
            table: Vec::new(),
            unsafe_allowed: opts.unsafe_allowed,
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
        engine
            .run_ast_with_scope(&mut scope, &ast)
            .map_err(|e| diag::runtime_error(source, None, *e))?;
        Ok(Post {
            engine,
            ast,
            scope,
            this: Dynamic::from_map(Map::new()),
            shared,
            source: source.to_string(),
            defined,
        })
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
        std::mem::take(&mut self.shared.borrow_mut().chunks)
    }

    /// Calls callback `name` with `arg`.
    fn call(&mut self, name: &str, arg: Dynamic) -> Result<Dynamic, Diagnostic> {
        let opts = CallFnOptions::new()
            .eval_ast(false)
            .rewind_scope(true)
            .bind_this_ptr(&mut self.this);
        self.engine
            .call_fn_with_options::<Dynamic>(opts, &mut self.scope, &self.ast, name, (arg,))
            .map_err(|e| diag::runtime_error(&self.source, Some(name), *e))
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
