//! Program-level resolution: the `config` block, the script's C definitions and the attach
//! points of every probe.

use super::constants::Constants;
use super::errors::{CONFIG_VALUE, Diags, MAP_DECL, UNKNOWN_CONFIG, UNKNOWN_PROVIDER, suggest};
use super::{Config, MissingProbes};
use crate::ast::{BaseType, CDef, CDefKind, ConfigItem, ExprKind, Probe, TypeExpr};
use crate::catalog::{Catalog, ResolveOptions, ResolvedAttach, SyscallDispatch};
use crate::ctypes::{record_from_cdef, record_name};
use crate::diag::Diagnostic;
use crate::kernel::{KernelInfo, RecordKind};
use crate::limits::{MAX_MAP_KEYS, MAX_RINGBUF_PAGES, MAX_STRLEN, too_large};
use crate::span::Span;
use crate::types::{Record, StackMode};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

/// The script's own C definitions.
#[derive(Debug, Default)]
pub(crate) struct Defs {
    /// Records by display name (`struct x`, `union y`).
    pub records: HashMap<String, Arc<Record>>,
    /// Enumerators: name → (enum tag, value).
    pub enums: HashMap<String, (String, i64)>,
    /// Named constants: `#define`s of the script and of the headers it includes.
    pub constants: Constants,
    /// Display names of the script's records whose definition was refused (reported once):
    /// types that name them are errors already, and stay silent.
    pub poisoned: HashSet<String>,
}

impl Defs {
    /// A record by kind and tag: the script's definitions first, then the kernel's BTF.
    pub fn record(
        &self,
        kernel: &dyn KernelInfo,
        kind: RecordKind,
        tag: &str,
    ) -> Option<Arc<Record>> {
        let name = record_name(kind, tag);
        if self.poisoned.contains(&name) {
            return None;
        }
        self.records
            .get(&name)
            .cloned()
            .or_else(|| kernel.record(kind, tag))
    }

    /// True when `ty` names a record whose definition was refused.
    pub fn is_poisoned(&self, ty: &TypeExpr) -> bool {
        let name = match &ty.base {
            BaseType::Struct(tag) => record_name(RecordKind::Struct, tag),
            BaseType::Union(tag) => record_name(RecordKind::Union, tag),
            _ => return false,
        };
        self.poisoned.contains(&name)
    }
}

/// Collects the script's C definitions in order (a struct may use the ones before it).
pub(crate) fn c_defs(defs: &[CDef], kernel: &dyn KernelInfo, diags: &mut Diags) -> Defs {
    let mut out = Defs::default();
    for d in defs {
        match d.kind {
            CDefKind::Struct | CDefKind::Union => {
                let kind = if d.kind == CDefKind::Union {
                    RecordKind::Union
                } else {
                    RecordKind::Struct
                };
                let name = record_name(kind, &d.name);
                if d.fields.iter().any(|f| out.is_poisoned(&f.ty)) {
                    out.poisoned.insert(name);
                    continue;
                }
                let lookup = |k: RecordKind, tag: &str| out.record(kernel, k, tag);
                match record_from_cdef(d, &lookup) {
                    Ok(r) => {
                        out.records.insert(name, Arc::new(r));
                    }
                    Err(e) => {
                        diags.push(e);
                        out.poisoned.insert(name);
                    }
                }
            }
            CDefKind::Enum => {
                for (name, value) in &d.enumerators {
                    out.enums.insert(name.clone(), (d.name.clone(), *value));
                }
            }
            CDefKind::Define | CDefKind::Include => {}
        }
    }
    let (constants, errors) = Constants::of(defs, kernel);
    out.constants = constants;
    for e in errors {
        diags.push(e);
    }
    out
}

/// The map kinds a declaration may name: (name, LRU).
const MAP_DECL_KINDS: [(&str, bool); 4] = [
    ("hash", false),
    ("lruhash", true),
    ("percpuhash", false),
    ("percpulruhash", true),
];

/// Applies the script's map declarations to the maps it uses: each declaration names a known
/// kind and a size within the limit, once per map, for a map the script uses. Whether a
/// map's elements are per CPU follows from its values (aggregations are, others are not),
/// whatever the declaration says.
pub(crate) fn map_decls(
    decls: &[crate::ast::MapDecl],
    maps: &mut BTreeMap<String, super::MapInfo>,
    diags: &mut Diags,
) {
    let mut seen: HashMap<&str, Span> = HashMap::new();
    for d in decls {
        let Some(&(_, lru)) = MAP_DECL_KINDS.iter().find(|(k, _)| *k == d.kind.name) else {
            let mut e = Diagnostic::error(
                MAP_DECL,
                d.kind.span,
                format!("unknown map kind `{}`", d.kind.name),
            )
            .with_label("not a map kind");
            e = match suggest(
                &d.kind.name,
                MAP_DECL_KINDS.iter().map(|k| k.0),
                str::to_string,
            ) {
                Some(h) => e.with_help(h),
                None => e.with_help("map kinds are: hash, lruhash, percpuhash, percpulruhash"),
            };
            diags.push(e);
            continue;
        };
        if d.max_entries == 0 || d.max_entries > u64::from(MAX_MAP_KEYS) {
            diags.push(if d.max_entries == 0 {
                Diagnostic::error(MAP_DECL, d.size_span, "a map holds at least one element")
                    .with_label("0 elements")
                    .with_help("give the most elements the map holds, such as `hash(1024)`")
            } else {
                too_large(
                    d.size_span,
                    "a map's size",
                    d.max_entries,
                    MAX_MAP_KEYS,
                    "elements",
                )
            });
            continue;
        }
        if let Some(first) = seen.insert(d.name.as_str(), d.span) {
            diags.push(
                Diagnostic::error(MAP_DECL, d.span, format!("`@{}` is declared twice", d.name))
                    .with_label("second declaration")
                    .with_secondary(first, "first declared here")
                    .with_help("keep one declaration per map"),
            );
            continue;
        }
        match maps.get_mut(&d.name) {
            Some(info) => {
                info.decl = Some(super::MapDecl {
                    lru,
                    max_entries: d.max_entries as u32,
                })
            }
            None => diags.push(
                Diagnostic::warning(MAP_DECL, d.span, format!("Unused map: @{}", d.name))
                    .with_label("no probe uses this map")
                    .with_help("remove the declaration, or use the map"),
            ),
        }
    }
}

/// Config keys bpftrace knows that sonde accepts without using them.
const OTHER_CONFIG_KEYS: &[&str] = &[
    "cache_user_symbols",
    "cpp_demangle",
    "lazy_symbolication",
    "log_size",
    "max_bpf_progs",
    "max_cat_bytes",
    "max_probes",
    "on_stack_limit",
    "unstable_dw_ustack",
    "unstable_import_statement",
    "unstable_tseries",
    "unstable_typeinfo",
    "use_blazesym",
];

/// Keys of [`OTHER_CONFIG_KEYS`] whose value bpftrace reads as a number.
const INT_CONFIG_KEYS: &[&str] = &[
    "log_size",
    "max_bpf_progs",
    "max_cat_bytes",
    "max_probes",
    "on_stack_limit",
];

/// Keys whose value bpftrace reads as a bool (those of [`OTHER_CONFIG_KEYS`], and
/// `show_debug_info`, whose bad values get the same error).
const BOOL_CONFIG_KEYS: &[&str] = &[
    "cpp_demangle",
    "lazy_symbolication",
    "show_debug_info",
    "use_blazesym",
];

/// A bool as bpftrace reads one: true, false, 1 or 0.
fn is_bool_value(v: &ConfigValue) -> bool {
    match v {
        ConfigValue::Int(n) => *n <= 1,
        ConfigValue::Word(w) => w == "true" || w == "false",
    }
}

/// bpftrace 0.27's renamed config keys: the old name is refused with the new one.
const RENAMED_CONFIG_KEYS: &[(&str, &str)] = &[
    ("strlen", "max_strlen"),
    ("no_cpp_demangle", "cpp_demangle"),
    ("cat_bytes_max", "max_cat_bytes"),
    ("map_keys_max", "max_map_keys"),
];

/// bpftrace's settings that only its environment sets (`BPFTRACE_BTF`).
const ENV_ONLY_CONFIG_KEYS: &[&str] = &["btf", "kernel_build", "kernel_source", "vmlinux"];

/// The licenses bpftrace 0.27 accepts for its programs (`config = { license = "GPL" }`), in
/// the order its error message lists them.
const LICENSES: &[&str] = &[
    "Dual MIT/GPL",
    "Dual BSD/GPL",
    "Dual MPL/GPL",
    "GPL and additional rights",
    "GPL v2",
    "GPL",
];

/// Config keys sonde interprets, with what they do (the reference lists them).
pub const CONFIG_KEYS: &[(&str, &str)] = &[
    (
        "max_strlen",
        "Bytes `str()` and string values hold (default 1024, as bpftrace 0.27)",
    ),
    (
        "max_map_keys",
        "Most elements a keyed map holds (default 4096; `let @a = hash(N)` sizes one map): an update of a new key past it is refused, counted, and warned at its place in the script as bpftrace does (`Map full; can't update element`; each place's first 10 warnings), except in an `lruhash`, which evicts",
    ),
    (
        "perf_rb_pages",
        "4 KiB pages of the events ring buffer (default 256: 1 MiB; rounded up to a power of two, at most 262144): more holds longer bursts of events without losing any",
    ),
    (
        "print_maps_on_exit",
        "Print the maps when the run ends (default true); off, a text run still ends with \
         two newlines, as bpftrace 0.26",
    ),
    (
        "stack_mode",
        "How stacks print: bpftrace (default), perf or raw",
    ),
    (
        "show_debug_info",
        "User stack frames of code with DWARF (in the binary or its debug file) end with \
         `@DIR/FILE:LINE`, and the functions inlined at an address print before it as \
         `[inlined] NAME@DIR/FILE:LINE` (perf mode: `ADDR NAME (inlined)`, no line); default \
         true. `ustack(N)` counts addresses, so it may print more than N lines",
    ),
    (
        "str_trunc_trailer",
        "What a string cut to its size ends with when printed (default `..`; empty: nothing)",
    ),
    (
        "missing_probes",
        "What to do with an attach point that cannot attach: error (default), warn or ignore",
    ),
    (
        "syscall_dispatch",
        "sonde's own: how `tracepoint:syscalls:*` probes attach. auto (default): an attach \
         point matching more than 16 syscalls goes through one raw tracepoint that dispatches \
         on the syscall number (detaches at once; every syscall then runs the dispatcher, \
         ~80 ns), the others each on its own tracepoint (untraced syscalls pay ~40 ns; each \
         takes the kernel ~50 ms to detach); always; never",
    ),
];

/// The value of a config item as an integer, a bool, or a word (identifier or string).
enum ConfigValue {
    Int(u64),
    Word(String),
}

/// Reads the `config = { ... }` block, then the config variables set in the environment
/// (`BPFTRACE_MAX_STRLEN=...`; they win, as in bpftrace). Unknown keys and wrong values are
/// errors, as in bpftrace 0.27 (unknown environment variables are ignored).
pub(crate) fn config(items: &[ConfigItem], env: &[(String, String)], diags: &mut Diags) -> Config {
    let env_items: Vec<ConfigItem> = env
        .iter()
        .filter_map(|(k, v)| {
            let key = k.strip_prefix("BPFTRACE_")?.to_ascii_lowercase();
            let known = CONFIG_KEYS.iter().any(|(known, _)| *known == key)
                || OTHER_CONFIG_KEYS.contains(&key.as_str());
            known.then(|| {
                let at = crate::span::Span::new(0, 0);
                // The trailer is taken as it is, spaces included (bpftrace reads every
                // environment variable as a string).
                let kind = match crate::numbers::parse_uint(v.trim()).ok_or(()) {
                    _ if key == "str_trunc_trailer" => ExprKind::Str(v.as_bytes().to_vec()),
                    Ok(n) => ExprKind::Int(n),
                    Err(_) => ExprKind::Ident(v.trim().to_string()),
                };
                ConfigItem {
                    name: crate::ast::Ident {
                        name: k.clone(),
                        span: at,
                    },
                    value: crate::ast::Expr {
                        id: crate::ast::ExprId(u32::MAX),
                        kind,
                        span: at,
                    },
                }
            })
        })
        .collect();
    let mut c = Config::default();
    for item in items.iter().chain(&env_items) {
        let key = item.name.name.to_ascii_lowercase();
        let key = key.strip_prefix("bpftrace_").unwrap_or(&key).to_string();
        let value = match &item.value.kind {
            ExprKind::Int(v) => ConfigValue::Int(*v),
            ExprKind::Bool(b) => ConfigValue::Int(u64::from(*b)),
            ExprKind::Ident(w) => ConfigValue::Word(w.clone()),
            ExprKind::Str(s) => ConfigValue::Word(String::from_utf8_lossy(s).into_owned()),
            _ => ConfigValue::Word(String::new()),
        };
        let bad = |expected: &str| {
            Diagnostic::error(
                CONFIG_VALUE,
                item.value.span,
                format!("invalid value for config `{}`", item.name.name),
            )
            .with_label(format!("expected {expected}"))
        };
        match (key.as_str(), value) {
            ("max_strlen", ConfigValue::Int(v)) if (1..=u64::from(MAX_STRLEN)).contains(&v) => {
                c.max_strlen = v as u32
            }
            ("max_strlen", ConfigValue::Int(v)) if v > 0 => diags.push(too_large(
                item.value.span,
                "`max_strlen`",
                v,
                MAX_STRLEN,
                "bytes",
            )),
            ("max_strlen", _) => diags.push(bad("a positive integer")),
            ("max_map_keys", ConfigValue::Int(v)) if (1..=u64::from(MAX_MAP_KEYS)).contains(&v) => {
                c.max_map_keys = v as u32
            }
            ("max_map_keys", ConfigValue::Int(v)) if v > 0 => diags.push(too_large(
                item.value.span,
                "`max_map_keys`",
                v,
                MAX_MAP_KEYS,
                "keys",
            )),
            ("max_map_keys", _) => diags.push(bad("a positive integer")),
            ("perf_rb_pages", ConfigValue::Int(v)) if v <= u64::from(MAX_RINGBUF_PAGES) => {
                c.perf_rb_pages = v as u32
            }
            ("perf_rb_pages", ConfigValue::Int(v)) => diags.push(too_large(
                item.value.span,
                "`perf_rb_pages`",
                v,
                MAX_RINGBUF_PAGES,
                "pages",
            )),
            ("perf_rb_pages", _) => diags.push(bad("a number of pages")),
            ("print_maps_on_exit", ConfigValue::Int(v)) if v <= 1 => c.print_maps_on_exit = v == 1,
            ("print_maps_on_exit", ConfigValue::Word(w)) if w == "true" || w == "false" => {
                c.print_maps_on_exit = w == "true"
            }
            ("print_maps_on_exit", _) => diags.push(bad("true or false")),
            ("show_debug_info", v) if is_bool_value(&v) => {
                c.show_debug_info = matches!(v, ConfigValue::Int(1))
                    || matches!(&v, ConfigValue::Word(w) if w == "true")
            }
            ("stack_mode", ConfigValue::Word(w)) if StackMode::from_word(&w).is_some() => {
                c.stack_mode = StackMode::from_word(&w).unwrap_or(StackMode::Bpftrace)
            }
            ("stack_mode", _) => diags.push(bad("bpftrace, perf, raw or build_id")),
            // Any value: a string as written, a number or identifier as its text.
            ("str_trunc_trailer", v) => {
                c.str_trunc_trailer = match (v, &item.value.kind) {
                    (_, ExprKind::Str(s)) => s.clone(),
                    (ConfigValue::Int(n), _) => n.to_string().into_bytes(),
                    (ConfigValue::Word(w), _) => w.into_bytes(),
                }
            }
            ("missing_probes", ConfigValue::Word(w)) if missing_probes(&w).is_some() => {
                c.missing_probes = missing_probes(&w).unwrap_or(MissingProbes::Error)
            }
            ("missing_probes", _) => diags.push(bad("error, warn or ignore")),
            ("syscall_dispatch", ConfigValue::Word(w)) if syscall_dispatch(&w).is_some() => {
                c.syscall_dispatch = syscall_dispatch(&w).unwrap_or_default()
            }
            ("syscall_dispatch", _) => diags.push(bad("auto, always or never")),
            ("license", ConfigValue::Word(w)) if LICENSES.contains(&w.as_str()) => c.license = w,
            ("license", v) => {
                let found = match v {
                    ConfigValue::Int(n) => n.to_string(),
                    ConfigValue::Word(w) => w,
                };
                diags.push(
                    Diagnostic::error(
                        CONFIG_VALUE,
                        item.value.span,
                        format!(
                            "Invalid value for license. Found: {found}. Valid values: {}",
                            LICENSES.join(", ")
                        ),
                    )
                    .with_label("not a license BPF programs may have")
                    .with_help(
                        "read more about BPF programs and licensing: https://docs.kernel.org/bpf/\
                         bpf_licensing.html#using-bpf-programs-in-the-linux-kernel",
                    ),
                )
            }
            (k, ConfigValue::Word(w)) if INT_CONFIG_KEYS.contains(&k) => diags.push(
                Diagnostic::error(
                    CONFIG_VALUE,
                    item.value.span,
                    format!("{}: expecting a number, got {w}", item.name.name),
                )
                .with_label("not a number")
                .with_help(format!("`{k}` takes a number")),
            ),
            (k, v) if BOOL_CONFIG_KEYS.contains(&k) && !is_bool_value(&v) => diags.push(
                Diagnostic::error(
                    CONFIG_VALUE,
                    item.value.span,
                    format!(
                        "{}: Invalid bool value: valid values are true, false, 1 or 0.",
                        item.name.name
                    ),
                )
                .with_label("not a bool"),
            ),
            (k, _) if OTHER_CONFIG_KEYS.contains(&k) => {}
            (k, _) => diags.push(unknown_config(k, &item.name)),
        }
    }
    c
}

/// The error for config key `k` (written `name`), bpftrace 0.27's words first: a renamed key,
/// one only the environment sets, or one it does not know.
fn unknown_config(k: &str, name: &crate::ast::Ident) -> Diagnostic {
    if let Some((_, new)) = RENAMED_CONFIG_KEYS.iter().find(|(old, _)| *old == k) {
        return Diagnostic::error(
            UNKNOWN_CONFIG,
            name.span,
            format!("{}: key has been renamed to '{new}'", name.name),
        )
        .with_label("an old name")
        .with_help(format!("write `{new}`"));
    }
    if ENV_ONLY_CONFIG_KEYS.contains(&k) {
        return Diagnostic::error(
            UNKNOWN_CONFIG,
            name.span,
            format!("{}: can only be set as an environment variable", name.name),
        )
        .with_label("not a config block setting")
        .with_help(format!(
            "set BPFTRACE_{} in the environment",
            k.to_ascii_uppercase()
        ));
    }
    let all = CONFIG_KEYS
        .iter()
        .map(|(k, _)| *k)
        .chain(OTHER_CONFIG_KEYS.iter().copied());
    let d = Diagnostic::error(
        UNKNOWN_CONFIG,
        name.span,
        format!("{}: not a known configuration option", name.name),
    )
    .with_label("unknown config variable");
    match suggest(k, all, str::to_string) {
        Some(h) => d.with_help(h),
        None => d.with_help("the config variables are listed in docs/reference.md, Config"),
    }
}

fn syscall_dispatch(w: &str) -> Option<SyscallDispatch> {
    match w {
        "auto" => Some(SyscallDispatch::Auto),
        "always" => Some(SyscallDispatch::Always),
        "never" => Some(SyscallDispatch::Never),
        _ => None,
    }
}

fn missing_probes(w: &str) -> Option<MissingProbes> {
    match w {
        "error" => Some(MissingProbes::Error),
        "warn" => Some(MissingProbes::Warn),
        "ignore" => Some(MissingProbes::Ignore),
        _ => None,
    }
}

/// Resolves every attach point of `probe` through its provider.
pub(crate) fn attach_points(
    probe: &Probe,
    catalog: &dyn Catalog,
    kernel: &dyn KernelInfo,
    options: &ResolveOptions,
    missing: MissingProbes,
    diags: &mut Diags,
) -> Vec<ResolvedAttach> {
    let mut out = Vec::new();
    for ap in &probe.attach_points {
        let Some(provider) = catalog.provider(&ap.provider) else {
            let providers = catalog.providers();
            let names = providers.iter().flat_map(|p| p.names().iter().copied());
            let mut d = Diagnostic::error(
                UNKNOWN_PROVIDER,
                ap.span,
                format!("unknown probe type `{}`", ap.provider),
            )
            .with_label("no such probe type");
            d = match suggest(&ap.provider, names, str::to_string) {
                Some(h) => d.with_help(h),
                None => d.with_help(format!(
                    "probe types are: {}",
                    providers
                        .iter()
                        .map(|p| p.names()[0])
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            };
            diags.push(d);
            continue;
        };
        match provider.resolve_with(ap, kernel, options) {
            Ok(list) => out.extend(list),
            // A probe that does not exist (in the kernel or the binary) is skipped when the
            // script says so (`config = { missing_probes = warn | ignore }`).
            Err(d) if MISSING_CODES.contains(&d.code) => match missing {
                MissingProbes::Error => diags.push(d),
                MissingProbes::Warn => {
                    let mut w = d;
                    w.severity = crate::diag::Severity::Warning;
                    // bpftrace's words: "No matches for tracepoint X. Skipping."
                    if w.message.starts_with("No matches for") {
                        w.message.push_str(" Skipping.");
                    }
                    w.help = Some("skipped, as `missing_probes = warn` asks".into());
                    diags.push(w);
                }
                MissingProbes::Ignore => {}
            },
            Err(d) => diags.push(d),
        }
    }
    out
}

/// Codes of the attach-point errors that mean "this probe does not exist" (a tracepoint,
/// kernel or binary function, binary or event that is not there), which `missing_probes`
/// governs.
const MISSING_CODES: &[&str] = &[
    "sonde::probe::unknown_tracepoint",
    "sonde::probe::no_match",
    "sonde::probe::unknown_binary",
    "sonde::probe::unknown_function",
    "sonde::probe::unknown_event",
];
