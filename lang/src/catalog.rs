//! Contracts of the open registries: probe providers, builtin variables and functions
//! (aggregations included).
//!
//! `lang` defines only the contracts (names, docs, type rules). The concrete entries live in
//! `sonde-compiler`'s `catalog`, where each entry also carries its BPF lowering, so that adding
//! a probe type or a function is one file plus one registry line. The checker receives the
//! registry as a `&dyn Catalog`; lang's own tests use a small fake catalog.

use crate::ast::{AttachPoint, Expr, Ident};
use crate::diag::Diagnostic;
use crate::kernel::KernelInfo;
use crate::span::Span;
use crate::types::{Record, Type};
use std::sync::Arc;

/// What a probe body may use, as established by its provider for one concrete attach point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeContext {
    /// Canonical provider name (`tracepoint`, `uprobe`, `BEGIN`, ...).
    pub provider: &'static str,
    /// The type of `args`, when the probe has them.
    pub args: Option<Arc<Record>>,
    /// How many `argN` registers are readable (0 = `arg0` is an error).
    pub arg_regs: u8,
    /// The type of `retval` in return probes.
    pub retval: Option<Type>,
    /// True when the probe fires in user context of one process (uprobes): pointers default
    /// to user space and `ustack` is meaningful.
    pub user: bool,
    /// The value of the `func` builtin, when the probe has one.
    pub func: Option<String>,
    /// USDT probes: the note's argument specification (`-4@%edi 8@-16(%rbp)`), from which
    /// `argN` are read instead of the calling-convention registers.
    pub usdt_args: Option<String>,
    /// Uprobes on a function: the function whose debug info types `args`
    /// ([`KernelInfo::function_params`], read only when the probe uses `args`).
    pub debug_function: Option<DebugFunction>,
    /// Uprobes and USDT probes: the probed binary, whose symbols `uaddr()` looks up.
    pub binary: Option<String>,
    /// The type of the `ctx` builtin, when the probe has a typed context (an iterator's
    /// `struct bpf_iter__task`, whose fields the body reads as `ctx.task`).
    pub ctx: Option<Type>,
}

impl ProbeContext {
    /// A context with nothing available, for `provider`.
    pub fn bare(provider: &'static str) -> Self {
        ProbeContext {
            provider,
            args: None,
            arg_regs: 0,
            retval: None,
            user: false,
            func: None,
            usdt_args: None,
            debug_function: None,
            binary: None,
            ctx: None,
        }
    }
}

/// A uprobe's function, whose parameters in the binary's debug info make `args`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DebugFunction {
    /// The binary (resolved path).
    pub path: String,
    /// The function.
    pub func: String,
    /// True when the attach point names the function; false for one a wildcard matched,
    /// whose `args` are empty when the debug info does not describe it (as in bpftrace:
    /// `uprobe:BIN:* { print(args) }` also probes the C runtime's functions).
    pub named: bool,
}

/// One concrete attach point after wildcard expansion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedAttach {
    /// Canonical full probe name (`tracepoint:syscalls:sys_enter_openat`), the `probe` builtin.
    pub name: String,
    /// Canonical parts after the provider (`syscalls`, `sys_enter_openat`).
    pub parts: Vec<String>,
    /// Span of the attach point it came from.
    pub span: Span,
    /// What the body may use.
    pub ctx: ProbeContext,
}

/// A probe type (`tracepoint`, `uprobe`, `profile`, ...).
pub trait Provider: Sync {
    /// Canonical name first, then aliases (`["tracepoint", "t"]`). Matched exactly, never by prefix.
    fn names(&self) -> &'static [&'static str];
    /// The attach point syntax (`tracepoint:category:name`).
    fn usage(&self) -> &'static str;
    /// One-line description.
    fn doc(&self) -> &'static str;
    /// Validates an attach point and expands its wildcards into concrete attach points.
    ///
    /// A provider implements this or [`Provider::resolve_with`] (each defaults to the
    /// other): this one when the script's options do not matter to it.
    fn resolve(
        &self,
        ap: &AttachPoint,
        kernel: &dyn KernelInfo,
    ) -> Result<Vec<ResolvedAttach>, Diagnostic> {
        self.resolve_with(ap, kernel, &ResolveOptions::default())
    }
    /// [`Provider::resolve`] under the script's options (see [`ResolveOptions`]). The checker
    /// calls this one.
    fn resolve_with(
        &self,
        ap: &AttachPoint,
        kernel: &dyn KernelInfo,
        options: &ResolveOptions,
    ) -> Result<Vec<ResolvedAttach>, Diagnostic> {
        let _ = options;
        self.resolve(ap, kernel)
    }
}

/// The script's options that change how attach points resolve.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResolveOptions {
    /// `--unsafe`: a provider may accept attach points it otherwise refuses as dangerous (a
    /// uprobe offset inside an instruction).
    pub unsafe_allowed: bool,
    /// How syscall tracepoints attach (`config = { syscall_dispatch = ... }`).
    pub syscall_dispatch: SyscallDispatch,
    /// The traced program of `-p PID` (`/proc/PID/exe`) or `-c CMD` (its path): watchpoints
    /// watch its addresses, and bpftrace names them after it.
    pub watch_target: Option<String>,
}

/// How `tracepoint:syscalls:*` probes attach: each on its own tracepoint (a perf event, which
/// untraced syscalls do not pay for but which takes the kernel ~50 ms to detach), or through
/// one raw tracepoint per probe dispatching on the syscall number (detaches at once; every
/// syscall of the system then runs the dispatcher).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SyscallDispatch {
    /// Dispatch the attach points that match more than [`SyscallDispatch::AUTO_MIN`] syscall
    /// tracepoints (the default).
    #[default]
    Auto,
    /// Dispatch every syscall tracepoint.
    Always,
    /// Never dispatch.
    Never,
}

impl SyscallDispatch {
    /// Above this many syscall tracepoints in one attach point, `Auto` dispatches them
    /// (detaching 16 perf events takes the kernel about a second).
    pub const AUTO_MIN: usize = 16;

    /// Whether an attach point matching `matches` syscall tracepoints is dispatched.
    pub fn dispatches(self, matches: usize) -> bool {
        match self {
            SyscallDispatch::Auto => matches > Self::AUTO_MIN,
            SyscallDispatch::Always => true,
            SyscallDispatch::Never => false,
        }
    }
}

/// The builtin a name refers to: bpftrace's `__builtin_pid` spelling is `pid`.
pub fn builtin_name(name: &str) -> &str {
    name.strip_prefix("__builtin_").unwrap_or(name)
}

/// A builtin variable (`pid`, `comm`, `args`, `retval`, ...). `x` and `x()` are equivalent.
pub trait Builtin: Sync {
    /// The name.
    fn name(&self) -> &'static str;
    /// One-line description.
    fn doc(&self) -> &'static str;
    /// Its type in a probe with context `ctx`, or a diagnostic (at `span`) when not available there.
    fn check(&self, ctx: &ProbeContext, span: Span) -> Result<Type, Diagnostic>;
    /// [`Builtin::check`] with the kernel's and binaries' facts at hand (a uprobe's `args`
    /// are typed from the binary's debug info). The checker calls this one.
    fn check_in(
        &self,
        ctx: &ProbeContext,
        kernel: &dyn KernelInfo,
        span: Span,
    ) -> Result<Type, Diagnostic> {
        let _ = kernel;
        self.check(ctx, span)
    }
    /// True for a sonde extension whose name a script may have defined itself before sonde
    /// had it: an enumerator or a `#define` of the script with this name keeps its meaning
    /// (bpftrace's own builtins win over them).
    fn yields_to_definitions(&self) -> bool {
        false
    }
}

/// Where a call appears; aggregations are valid only as the value of a map assignment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallPosition {
    /// As a statement of its own (`printf(...);`).
    Statement,
    /// As the right-hand side of `@map[...] = call(...)`.
    MapAssign,
    /// Anywhere else inside an expression.
    Value,
}

/// Everything a function's type rule may look at.
pub struct CallCheck<'a> {
    /// The function name as written.
    pub name: &'a Ident,
    /// The argument expressions (to read literals such as format strings).
    pub args: &'a [Expr],
    /// The checked type of each argument (a `Type` argument gets the type it names).
    pub arg_types: &'a [Type],
    /// The whole call.
    pub span: Span,
    /// Where the call appears.
    pub position: CallPosition,
    /// The probe context.
    pub ctx: &'a ProbeContext,
    /// Positional parameters given on the command line.
    pub positional: &'a [String],
    /// For each argument that is a whole map (`print(@m)`, `delete(@m, k)`, `clear(@m)`):
    /// the map's key and value types; `None` for ordinary arguments. The matching
    /// `arg_types` entry holds the map's value type (`Type::Agg` for aggregations).
    pub map_args: &'a [Option<MapArg>],
    /// The `max_strlen` config value (size of strings made by `str()` and friends).
    pub max_strlen: u32,
    /// Named parameters given on the command line (`--name=value`), for `getopt`.
    pub named: &'a [(String, String)],
    /// Facts about the kernel and the probed binaries (`uaddr()` types its pointer by the
    /// size of the symbol).
    pub kernel: &'a dyn KernelInfo,
    /// The `stack_mode` config value: the mode of `kstack(N)`/`ustack(N)` without one.
    pub stack_mode: crate::types::StackMode,
    /// Warnings the type rule gives about a call it accepts (reported with the checker's).
    pub warnings: &'a std::cell::RefCell<Vec<crate::diag::Diagnostic>>,
}

/// A whole map passed as a function argument.
#[derive(Clone, Debug, PartialEq)]
pub struct MapArg {
    /// Map name without `@`.
    pub name: String,
    /// Key type (a tuple for multi-key maps), `None` for a map used without keys.
    pub key: Option<Type>,
    /// Value type, unified over the program.
    pub value: Type,
}

impl CallCheck<'_> {
    /// The value of argument `i` if it is a compile-time integer (literal, negated literal or
    /// numeric positional parameter).
    pub fn const_int(&self, i: usize) -> Option<i64> {
        const_int(self.args.get(i)?, self.positional)
    }

    /// The bytes of argument `i` if it is a string known when compiling ([`literal_bytes`]).
    pub fn const_str(&self, i: usize) -> Option<Vec<u8>> {
        literal_bytes(self.args.get(i)?, self.positional)
    }

    /// A diagnostic for a wrong argument count, pointing at the call.
    pub fn arity_error(&self, signature: &str) -> Diagnostic {
        Diagnostic::error(
            "sonde::sema::arity",
            self.span,
            format!("wrong number of arguments to `{}`", self.name.name),
        )
        .with_label(format!("{} given", self.args.len()))
        .with_help(format!("the signature is `{signature}`"))
    }
}

/// A compile-time integer: a literal, a numeric positional parameter, or integer arithmetic
/// (`+ - * / % << >> & | ^`, unary `-`) over them that does not overflow.
pub fn const_int(e: &Expr, positional: &[String]) -> Option<i64> {
    use crate::ast::{BinOp, ExprKind, UnOp};
    match &e.kind {
        ExprKind::Int(v) => i64::try_from(*v).ok(),
        ExprKind::Unary {
            op: UnOp::Neg,
            expr,
        } => const_int(expr, positional)?.checked_neg(),
        ExprKind::Positional(n) => {
            let text = positional.get((*n as usize).checked_sub(1)?)?;
            match crate::numbers::parse_positional(text)? {
                (v, false) => Some(v),
                (_, true) => None,
            }
        }
        ExprKind::Binary { op, lhs, rhs } => {
            let (a, b) = (const_int(lhs, positional)?, const_int(rhs, positional)?);
            match op {
                BinOp::Add => a.checked_add(b),
                BinOp::Sub => a.checked_sub(b),
                BinOp::Mul => a.checked_mul(b),
                BinOp::Div => a.checked_div(b),
                BinOp::Mod => a.checked_rem(b),
                BinOp::Shl => a.checked_shl(u32::try_from(b).ok()?),
                BinOp::Shr => a.checked_shr(u32::try_from(b).ok()?),
                BinOp::BitAnd => Some(a & b),
                BinOp::BitOr => Some(a | b),
                BinOp::BitXor => Some(a ^ b),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The bytes of a string argument known when compiling, where a function wants a literal: a
/// literal, a positional parameter (its text, a number or not), `str()` of one (bpftrace folds
/// them into literals), or literals folded (`"a" + "b"`, `$1 + 2`).
pub fn literal_bytes(e: &Expr, positional: &[String]) -> Option<Vec<u8>> {
    use crate::ast::ExprKind;
    let mut e = e;
    while let ExprKind::Call { name, args } = &e.kind
        && name.name == "str"
        && args.len() == 1
    {
        e = &args[0];
    }
    match &e.kind {
        ExprKind::Positional(n) => positional
            .get((*n as usize).checked_sub(1)?)
            .map(|s| s.as_bytes().to_vec()),
        _ => const_string(e, positional),
    }
}

/// A compile-time string, as bpftrace 0.27 folds literals: a string literal, a positional
/// parameter that is not a number, a string plus an integer (`"hello" + 2` is `"llo"`,
/// `""` past its end) and two strings added (`"ab" + "cd"` is `"abcd"`).
pub fn const_string(e: &Expr, positional: &[String]) -> Option<Vec<u8>> {
    use crate::ast::{BinOp, ExprKind};
    match &e.kind {
        ExprKind::Str(s) => Some(s.clone()),
        ExprKind::Positional(n) => {
            let text = positional.get((*n as usize).checked_sub(1)?)?;
            match crate::numbers::parse_positional(text) {
                Some(_) => None,
                None if text.is_empty() => None,
                None => Some(text.as_bytes().to_vec()),
            }
        }
        ExprKind::Binary {
            op: BinOp::Add,
            lhs,
            rhs,
        } => {
            let (l, r) = (const_string(lhs, positional), const_string(rhs, positional));
            match (l, r) {
                (Some(mut a), Some(b)) => {
                    a.extend_from_slice(&b);
                    Some(a)
                }
                (Some(s), None) => skip_chars(s, const_int(rhs, positional)?),
                (None, Some(s)) => skip_chars(s, const_int(lhs, positional)?),
                (None, None) => None,
            }
        }
        _ => None,
    }
}

/// `s` from character `k` (bpftrace's pointer arithmetic on a literal): empty past its end.
fn skip_chars(s: Vec<u8>, k: i64) -> Option<Vec<u8>> {
    let k = usize::try_from(k).ok()?;
    Some(s.get(k..).map(<[u8]>::to_vec).unwrap_or_default())
}

/// A named function (`printf`, `str`, `count`, `hist`, ...).
pub trait Function: Sync {
    /// The name.
    fn name(&self) -> &'static str;
    /// The signature for docs and help texts (`lhist(n, min, max, step)`).
    fn signature(&self) -> &'static str;
    /// One-line description.
    fn doc(&self) -> &'static str;
    /// The type rule: the result type, or a diagnostic pointing at the offending argument.
    fn check(&self, call: &CallCheck<'_>) -> Result<Type, Diagnostic>;
    /// True for functions that need `--unsafe` (`system`, `signal`, ...). The checker reports
    /// `sonde::sema::unsafe_function` itself when the flag is missing.
    fn is_unsafe(&self) -> bool {
        false
    }
    /// Indices of arguments that are words rather than values and must not be checked as
    /// expressions: `offsetof(struct x, a.b)`'s field path, `kstack(perf, 10)`'s mode. The
    /// checker passes `Type::Void` for them in `arg_types`; the rule reads the expressions.
    fn unchecked_args(&self) -> &'static [usize] {
        &[]
    }
    /// Indices of out-parameters: arguments that must be a scratch variable (`$v`), which the
    /// call writes rather than reads (`find(@m, key, $v)`). The checker does not read them
    /// (the variable may be declared by `let $v;` or not at all) and passes `Type::Void` for
    /// them in `arg_types`; after the type rule it assigns [`Function::out_type`] to each,
    /// as `$v = value` would.
    fn out_args(&self) -> &'static [usize] {
        &[]
    }
    /// The type the call writes into out-parameter `index` (see [`Function::out_args`]);
    /// `None` writes nothing (the rule has reported why).
    fn out_type(&self, call: &CallCheck<'_>, index: usize) -> Option<Type> {
        let _ = (call, index);
        None
    }
}

/// The registries the checker resolves names against.
pub trait Catalog: Sync {
    /// All probe providers.
    fn providers(&self) -> Vec<&dyn Provider>;
    /// All builtin variables.
    fn builtins(&self) -> Vec<&dyn Builtin>;
    /// All functions (aggregations included).
    fn functions(&self) -> Vec<&dyn Function>;

    /// The provider with this name or alias.
    fn provider(&self, name: &str) -> Option<&dyn Provider> {
        self.providers()
            .into_iter()
            .find(|p| p.names().contains(&name))
    }
    /// The builtin variable with this name.
    fn builtin(&self, name: &str) -> Option<&dyn Builtin> {
        let name = builtin_name(name);
        self.builtins().into_iter().find(|b| b.name() == name)
    }
    /// The function with this name.
    fn function(&self, name: &str) -> Option<&dyn Function> {
        self.functions().into_iter().find(|f| f.name() == name)
    }
}
