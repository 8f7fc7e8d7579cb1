//! Semantic analysis: resolves names against the [`Catalog`], expands attach points through
//! the providers, and type-checks every probe. Reports everything it finds; never panics on
//! user input.
//!
//! The pipeline is plain functions over typed data:
//! 1. [`resolve`]: the `config` block ([`Config`]), the script's C definitions (records,
//!    enums, `#define`s) and every attach point (through its provider).
//! 2. Two passes over the probes ([`probe`], [`expr`], [`call`], [`stmt`]): the first, muted,
//!    learns the map types ([`maps`]) so that a probe may read a map a later probe assigns;
//!    the second reports diagnostics and records the types.
//!
//! A probe body is checked once per distinct [`ProbeContext`](crate::catalog::ProbeContext)
//! of its attach points (a wildcard tracepoint gives several); instances whose type tables are
//! equal share one `Arc`.
//!
//! Error recovery: the checking functions return `Option<Type>`; `None` means "an error was
//! already reported here", and every consumer of a `None` stays silent, so one mistake gives
//! one diagnostic. A variable whose definition failed is *poisoned* (uses are silent).

// `Diagnostic` is the contract's error type everywhere; boxing it would change the contract.
#![allow(clippy::result_large_err)]

mod call;
pub mod constants;
pub mod errors;
mod expr;
pub mod key_names;
mod maps;
mod ops;
mod probe;
mod resolve;
pub use resolve::CONFIG_KEYS;
mod scope;
mod stmt;
mod typeof_;
mod unify;
pub mod widths;

use crate::ast::{ExprId, Program};
use crate::catalog::{Catalog, ResolveOptions, ResolvedAttach, SyscallDispatch};
use crate::diag::Diagnostic;
use crate::kernel::KernelInfo;
use crate::span::Span;
use crate::types::{StackMode, Type};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Options of one check.
#[derive(Clone, Debug, Default)]
pub struct CheckOptions {
    /// Positional parameters (`$1` is `positional[0]`).
    pub positional: Vec<String>,
    /// `--unsafe` was given (allows `system()` and friends).
    pub unsafe_allowed: bool,
    /// Named parameters (`--name=value` after `--`, or a tool's flags): a string-typed
    /// `getopt` is made large enough for its given value.
    pub named: Vec<(String, String)>,
    /// The environment's `BPFTRACE_*` variables (name, value): config variables, which
    /// take precedence over the script's `config` block, as in bpftrace.
    pub env_config: Vec<(String, String)>,
    /// The traced program of `-p PID` (`/proc/PID/exe`) or `-c CMD` (its path), when given
    /// (see [`ResolveOptions::watch_target`]).
    pub watch_target: Option<String>,
    /// A live session's check (`sonde repl`): strings stored in maps (values, keys and their
    /// tuples) take at least `max_strlen` bytes, so that a later entry storing a longer
    /// string into a map keeps the layout of the map already created.
    pub wide_map_strings: bool,
}

/// Types of one probe instance: every expression's type and every scratch variable's type.
///
/// `vars` maps each variable name to the type of its first definition in the probe (with
/// strings widened to the largest string assigned). Two block-scoped variables of the same
/// name in disjoint blocks may have different types; the per-expression types in `exprs`
/// are then the precise ones.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TypeTable {
    /// The type of each expression of the probe (predicate and body). Expressions inside an
    /// error have no entry.
    pub exprs: HashMap<ExprId, Type>,
    /// The type of each scratch variable of the probe (without `$`).
    pub vars: HashMap<String, Type>,
    /// Reads of integer variables and map values whose declared width (bits) is narrower
    /// than the 64 bits they are stored in (`$x = (uint32)v`): what `bswap` and `sizeof` use.
    pub widths: HashMap<ExprId, u8>,
}

/// One concrete attach point of a probe together with the types its body has there.
///
/// Instances of the same probe whose `types` are equal share one `Arc` (and so one program).
#[derive(Clone, Debug)]
pub struct ProbeInstance {
    /// The attach point after wildcard expansion.
    pub attach: ResolvedAttach,
    /// The body's types at this attach point.
    pub types: Arc<TypeTable>,
}

/// A checked probe: `program.probes[index]` with its instances.
#[derive(Clone, Debug)]
pub struct CheckedProbe {
    /// Index into [`Program::probes`].
    pub index: usize,
    /// Concrete attach points, in order.
    pub instances: Vec<ProbeInstance>,
}

/// Key and value types of a map, unified over all probes.
///
/// Integers (also inside key tuples) are 64-bit; strings have the largest size stored.
#[derive(Clone, Debug, PartialEq)]
pub struct MapInfo {
    /// Name without `@` (empty for `@`).
    pub name: String,
    /// Key type (a tuple for multi-key maps); `None` for a map used without keys.
    pub key: Option<Type>,
    /// Value type (`Type::Agg` for aggregations).
    pub value: Type,
    /// First place the map was assigned or used.
    pub span: Span,
    /// What its declaration (`let @m = lruhash(100);`) says, if it has one.
    pub decl: Option<MapDecl>,
}

/// A map's declared kind and size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapDecl {
    /// `lruhash`/`percpulruhash`: the least recently used elements make room for new ones.
    pub lru: bool,
    /// The most elements it holds (instead of `max_map_keys`).
    pub max_entries: u32,
}

/// What `missing_probes` asks for when an attach point cannot be attached.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MissingProbes {
    /// Fail (bpftrace 0.24+ default).
    #[default]
    Error,
    /// Warn and go on.
    Warn,
    /// Go on silently.
    Ignore,
}

/// The settings of the script's `config = { ... }` block, defaults filled in.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Size of strings read by `str()`, `comm`-like values excepted (default 64, bpftrace 0.17;
    /// at most [`crate::limits::MAX_STRLEN`]).
    pub max_strlen: u32,
    /// Print every non-empty map when the program exits (default true).
    pub print_maps_on_exit: bool,
    /// How stacks print (default bpftrace's own format).
    pub stack_mode: StackMode,
    /// User stack frames show their source line and the functions inlined at them, from
    /// DWARF (`show_debug_info`, default true, as bpftrace 0.27 with blazesym).
    pub show_debug_info: bool,
    /// What to do with attach points that fail to attach (default error).
    pub missing_probes: MissingProbes,
    /// Most elements a keyed map holds (default 4096, as bpftrace; at most
    /// [`crate::limits::MAX_MAP_KEYS`]).
    pub max_map_keys: u32,
    /// How syscall tracepoints attach (sonde's own key; default `auto`).
    pub syscall_dispatch: SyscallDispatch,
    /// What a string cut to its size ends with when printed (`str_trunc_trailer`, default
    /// `..` as bpftrace 0.26; empty: nothing).
    pub str_trunc_trailer: Vec<u8>,
    /// The license the programs declare (`license`, default `GPL`).
    pub license: String,
    /// The events ring buffer's size in 4 KiB pages (`perf_rb_pages`; 0, the default: 1 MiB,
    /// 256 pages). bpftrace sizes its per-CPU perf buffers with it; sonde's one ring buffer
    /// takes the next power of two, at most [`crate::limits::MAX_RINGBUF_PAGES`].
    pub perf_rb_pages: u32,
}

/// One value of the `config` record.
#[derive(Clone, Debug, PartialEq)]
pub enum ConfigEntry {
    /// A true/false setting.
    Bool(bool),
    /// A number.
    Int(u64),
    /// A word or text (`stack_mode`, `str_trunc_trailer`).
    Str(Vec<u8>),
}

impl ConfigEntry {
    /// The type of the entry in the `config` record.
    pub fn ty(&self) -> Type {
        match self {
            ConfigEntry::Bool(_) => Type::Bool,
            ConfigEntry::Int(_) => Type::U64,
            ConfigEntry::Str(s) => Type::Str {
                size: u32::try_from(s.len() + 1).unwrap_or(u32::MAX),
            },
        }
    }
}

impl Config {
    /// The `config` record (bpftrace 0.27: `config.max_strlen`): bpftrace's settings in its
    /// order, with this script's values where sonde has the setting and bpftrace's defaults
    /// where it has none.
    pub fn record(&self) -> Vec<(&'static str, ConfigEntry)> {
        use ConfigEntry::{Bool, Int, Str};
        let word = |w: &str| Str(w.as_bytes().to_vec());
        let missing = match self.missing_probes {
            MissingProbes::Error => "error",
            MissingProbes::Warn => "warn",
            MissingProbes::Ignore => "ignore",
        };
        vec![
            ("cpp_demangle", Bool(true)),
            ("lazy_symbolication", Bool(true)),
            ("print_maps_on_exit", Bool(self.print_maps_on_exit)),
            ("show_debug_info", Bool(self.show_debug_info)),
            ("log_size", Int(1_000_000)),
            ("max_bpf_progs", Int(1024)),
            ("max_cat_bytes", Int(10240)),
            ("max_map_keys", Int(u64::from(self.max_map_keys))),
            ("max_probes", Int(1024)),
            ("max_strlen", Int(u64::from(self.max_strlen))),
            ("on_stack_limit", Int(32)),
            ("perf_rb_pages", Int(u64::from(self.perf_rb_pages))),
            ("str_trunc_trailer", Str(self.str_trunc_trailer.clone())),
            ("missing_probes", word(missing)),
            ("stack_mode", word(self.stack_mode.word())),
            ("license", word(&self.license)),
        ]
    }

    /// The type of the `config` record.
    pub fn record_type(&self) -> Type {
        crate::types::record_of(
            self.record()
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.ty()))
                .collect(),
        )
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_strlen: 1024,
            print_maps_on_exit: true,
            stack_mode: StackMode::Bpftrace,
            show_debug_info: true,
            missing_probes: MissingProbes::Error,
            max_map_keys: 4096,
            syscall_dispatch: SyscallDispatch::Auto,
            str_trunc_trailer: b"..".to_vec(),
            license: "GPL".to_string(),
            perf_rb_pages: 0,
        }
    }
}

/// The result of checking a program.
#[derive(Clone, Debug, Default)]
pub struct Checked {
    /// Probes in source order (probes whose attach points all failed to resolve are absent).
    pub probes: Vec<CheckedProbe>,
    /// All maps by name.
    pub maps: BTreeMap<String, MapInfo>,
    /// The `config` block's settings.
    pub config: Config,
    /// The named constants the script can use (`#define`s, its headers'), for the code
    /// generators: read once, here.
    pub constants: constants::Constants,
}

/// Checks `program`. Returns what could be established and all diagnostics (errors and
/// warnings); the program may be compiled only when no diagnostic is an error.
pub fn check(
    program: &Program,
    catalog: &dyn Catalog,
    kernel: &dyn KernelInfo,
    options: &CheckOptions,
) -> (Checked, Vec<Diagnostic>) {
    let mut diags = errors::Diags::default();
    let config = resolve::config(&program.config, &options.env_config, &mut diags);
    let defs = resolve::c_defs(&program.c_defs, kernel, &mut diags);
    let resolve_options = ResolveOptions {
        unsafe_allowed: options.unsafe_allowed,
        syscall_dispatch: config.syscall_dispatch,
        watch_target: options.watch_target.clone(),
    };
    let attaches: Vec<Vec<ResolvedAttach>> = program
        .probes
        .iter()
        .map(|p| {
            resolve::attach_points(
                p,
                catalog,
                kernel,
                &resolve_options,
                config.missing_probes,
                &mut diags,
            )
        })
        .collect();
    let min_str = options.wide_map_strings.then_some(config.max_strlen);
    let mut g = probe::Globals {
        catalog,
        kernel,
        options,
        config,
        defs,
        maps: maps::Maps {
            min_str,
            ..maps::Maps::default()
        },
        diags,
        map_widths: widths::Widths::default(),
        macros: &program.macros,
    };
    g.diags.muted = true;
    probe::run_pass(&mut g, program, &attaches);
    g.maps.next_pass();
    g.diags.muted = false;
    let probes = probe::run_pass(&mut g, program, &attaches);
    let mut maps = g.maps.infos();
    resolve::map_decls(&program.map_decls, &mut maps, &mut g.diags);
    let checked = Checked {
        probes,
        maps,
        config: g.config.clone(),
        constants: std::mem::take(&mut g.defs.constants),
    };
    (checked, g.diags.into_vec())
}
