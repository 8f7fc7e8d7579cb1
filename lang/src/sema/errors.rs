//! The stable codes of every diagnostic the checker emits, and the collector that
//! de-duplicates them.
//!
//! A probe body is checked once per distinct probe context (and, to learn map types used
//! before their assignment, twice); a mistake must still be reported once, so diagnostics are
//! keyed by code and primary span.

use crate::diag::Diagnostic;
use crate::span::Span;
use std::collections::HashSet;

/// No provider has this name or alias.
pub const UNKNOWN_PROVIDER: &str = "sonde::sema::unknown_provider";
/// An identifier is no builtin, enum constant nor `#define`.
pub const UNKNOWN_IDENT: &str = "sonde::sema::unknown_ident";
/// A record has no field of that name.
pub const UNKNOWN_FIELD: &str = "sonde::sema::unknown_field";
/// `/` or `%` on a signed and an unsigned operand (a warning, as bpftrace gives).
pub const SIGNED_DIVISION: &str = "sonde::sema::signed_division";
/// A record `(a = 1, a = 2)` naming one field twice.
pub const DUPLICATE_FIELD: &str = "sonde::sema::duplicate_field";
/// No function has this name.
pub const UNKNOWN_FUNCTION: &str = "sonde::sema::unknown_function";
/// A builtin is not available in this probe type.
pub const BUILTIN_UNAVAILABLE: &str = "sonde::sema::builtin_unavailable";
/// A scratch variable gets a value of another type than its first one.
pub const TYPE_MISMATCH: &str = "sonde::sema::type_mismatch";
/// A scratch variable is used before it is defined.
pub const UNDEFINED_VARIABLE: &str = "sonde::sema::undefined_variable";
/// `let` of a variable that is already visible.
pub const REDEFINED_VARIABLE: &str = "sonde::sema::redefined_variable";
/// A map is assigned inside `typeof(...)`, which is never evaluated (bpftrace refuses it too).
pub const TYPEOF_MAP_ASSIGN: &str = "sonde::sema::typeof_map_assign";
/// A map is read but never assigned anywhere.
pub const UNDEFINED_MAP: &str = "sonde::sema::undefined_map";
/// A map's values have incompatible types in two places.
pub const MAP_TYPE_MISMATCH: &str = "sonde::sema::map_type_mismatch";
/// A map's keys have incompatible types (or keys in one place and none in another).
pub const MAP_KEY_MISMATCH: &str = "sonde::sema::map_key_mismatch";
/// An aggregation call outside `@m = agg(...)`.
pub const AGG_POSITION: &str = "sonde::sema::agg_position";
/// A map holding `hist`/`lhist`/`stats` used as a plain value.
pub const AGG_VALUE: &str = "sonde::sema::agg_value";
/// `unroll(N)` with N not a constant in 1..=100.
pub const UNROLL_COUNT: &str = "sonde::sema::unroll_count";
/// `break`/`continue` outside a loop.
pub const BREAK_OUTSIDE_LOOP: &str = "sonde::sema::break_outside_loop";
/// `return EXPR;` with a value that is not an integer.
pub const RETURN_TYPE: &str = "sonde::sema::return_type";
/// A function without a value used as a value.
pub const VOID_VALUE: &str = "sonde::sema::void_value";
/// A function that needs `--unsafe`.
pub const UNSAFE_FUNCTION: &str = "sonde::sema::unsafe_function";
/// An unknown key in the `config` block (a warning).
pub const UNKNOWN_CONFIG: &str = "sonde::sema::unknown_config";
/// A config key with a value of the wrong kind.
pub const CONFIG_VALUE: &str = "sonde::sema::config_value";
/// A map declaration (`let @m = hash(N);`) bpftrace would refuse.
pub const MAP_DECL: &str = "sonde::sema::map_decl";
/// An operator applied to operands it does not accept.
pub const OPERAND_TYPE: &str = "sonde::sema::operand_type";
/// A condition (`if`, `while`, `?:`, predicate) that is no integer, bool or pointer.
pub const CONDITION_TYPE: &str = "sonde::sema::condition_type";
/// `.field` / `->field` on something that has no fields.
pub const FIELD_ACCESS: &str = "sonde::sema::field_access";
/// `t.N` on a non-tuple, or N out of range.
pub const TUPLE_INDEX: &str = "sonde::sema::tuple_index";
/// `x[i]` on something that is no array or pointer.
pub const INDEX_BASE: &str = "sonde::sema::index_base";
/// A cast between types that do not convert.
pub const INVALID_CAST: &str = "sonde::sema::invalid_cast";
/// A variable declared with `let $x;` read before its first assignment (a warning, as
/// bpftrace 0.27; the read gives 0).
pub const USED_BEFORE_ASSIGNED: &str = "sonde::sema::used_before_assigned";
/// A variable declared with `let $x;` and never assigned (a warning, as bpftrace 0.27).
pub const NEVER_ASSIGNED: &str = "sonde::sema::never_assigned";
/// A cast to the type the value already has (a warning, as bpftrace 0.27).
pub const UNNECESSARY_CAST: &str = "sonde::sema::unnecessary_cast";
/// `*` on a non-pointer or a `void *`, `&` on a non-lvalue.
pub const DEREF: &str = "sonde::sema::deref";
/// Assignment to something that is no map or scratch variable.
pub const ASSIGN_TARGET: &str = "sonde::sema::assign_target";
/// A builtin variable called with arguments.
pub const ARITY: &str = "sonde::sema::arity";
/// `for ($kv : @m)` over something that is no keyed map.
pub const FOR_MAP: &str = "sonde::sema::for_map";
/// A struct or union that neither the script nor the kernel's BTF defines.
pub const UNKNOWN_RECORD: &str = "sonde::sema::unknown_record";
/// `a[N]` with a constant `N` outside an array's bounds.
pub const INDEX_BOUNDS: &str = "sonde::sema::index_bounds";
/// A shift by a constant amount outside 0..=63 (a warning: every bit is shifted out).
pub const SHIFT_AMOUNT: &str = "sonde::sema::shift_amount";
/// A statement after `return`, `break`, `continue` or `exit()` in its block (a warning).
pub const UNREACHABLE: &str = "sonde::sema::unreachable";
/// A string literal plus an integer past its end (bpftrace's warning: always empty).
pub const FOLDED_STRING: &str = "sonde::sema::folded_string";
/// A stack mode that does not apply (a warning: `build_id` for a kernel stack).
pub const STACK_MODE: &str = "sonde::sema::stack_mode";
/// A function argument of the wrong kind (here: an out-parameter that is not a `$variable`).
pub const ARG_TYPE: &str = "sonde::sema::arg_type";

/// Collects diagnostics, dropping repeats (same code and primary span) and, while muted,
/// everything (the first map-discovery pass).
#[derive(Debug, Default)]
pub(crate) struct Diags {
    list: Vec<Diagnostic>,
    seen: HashSet<(&'static str, Span)>,
    /// When true, diagnostics are discarded.
    pub muted: bool,
}

impl Diags {
    /// Records `d` unless muted or already reported.
    pub fn push(&mut self, d: Diagnostic) {
        if !self.muted && self.seen.insert((d.code, d.span)) {
            self.list.push(d);
        }
    }

    /// All collected diagnostics, in report order.
    pub fn into_vec(self) -> Vec<Diagnostic> {
        self.list
    }
}

/// `did you mean ...?` help text for `name` among `candidates`, formatted with `fmt`.
pub(crate) fn suggest<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    fmt: impl Fn(&str) -> String,
) -> Option<String> {
    crate::diag::did_you_mean(name, candidates).map(|c| format!("did you mean `{}`?", fmt(c)))
}
