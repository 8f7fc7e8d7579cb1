//! A fake [`Catalog`] with a realistic subset of providers, builtins and functions, for the
//! checker's tests. The real entries (with lowering) live in `sonde-compiler`'s catalog.

use crate::ast::{AttachPoint, ExprKind};
use crate::catalog::{
    Builtin, CallCheck, Catalog, Function, ProbeContext, Provider, ResolvedAttach,
};
use crate::ctypes::{opaque_record, tracepoint_record};
use crate::diag::Diagnostic;
use crate::kernel::{KernelInfo, RecordKind};
use crate::span::Span;
use crate::types::{AddrSpace, AggKind, Type};
use std::sync::Arc;

/// The fake registries.
#[derive(Clone, Copy, Debug, Default)]
pub struct FakeCatalog;

/// What a fake provider does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Special,
    Tracepoint,
    Kprobe { ret: bool },
    Uprobe { ret: bool },
    Timer,
}

/// A fake provider.
struct FakeProvider {
    names: &'static [&'static str],
    usage: &'static str,
    kind: Kind,
}

static PROVIDERS: &[FakeProvider] = &[
    FakeProvider {
        names: &["BEGIN"],
        usage: "BEGIN",
        kind: Kind::Special,
    },
    FakeProvider {
        names: &["END"],
        usage: "END",
        kind: Kind::Special,
    },
    FakeProvider {
        names: &["tracepoint", "t"],
        usage: "tracepoint:category:name",
        kind: Kind::Tracepoint,
    },
    FakeProvider {
        names: &["kprobe", "k"],
        usage: "kprobe:function",
        kind: Kind::Kprobe { ret: false },
    },
    FakeProvider {
        names: &["kretprobe", "kr"],
        usage: "kretprobe:function",
        kind: Kind::Kprobe { ret: true },
    },
    FakeProvider {
        names: &["uprobe", "u"],
        usage: "uprobe:binary:function",
        kind: Kind::Uprobe { ret: false },
    },
    FakeProvider {
        names: &["uretprobe", "ur"],
        usage: "uretprobe:binary:function",
        kind: Kind::Uprobe { ret: true },
    },
    FakeProvider {
        names: &["profile", "p"],
        usage: "profile:hz:N",
        kind: Kind::Timer,
    },
    FakeProvider {
        names: &["interval", "i"],
        usage: "interval:s:N",
        kind: Kind::Timer,
    },
];

pub use crate::glob::wildcard_match as glob;

fn attach_error(ap: &AttachPoint, what: &str, usage: &str) -> Diagnostic {
    Diagnostic::error("sonde::probe::attach_point", ap.span, what.to_string())
        .with_label("invalid attach point")
        .with_help(format!("the syntax is `{usage}`"))
}

impl Provider for FakeProvider {
    fn names(&self) -> &'static [&'static str] {
        self.names
    }
    fn usage(&self) -> &'static str {
        self.usage
    }
    fn doc(&self) -> &'static str {
        "fake provider for tests"
    }
    fn resolve(
        &self,
        ap: &AttachPoint,
        kernel: &dyn KernelInfo,
    ) -> Result<Vec<ResolvedAttach>, Diagnostic> {
        let canon = self.names[0];
        let one = |parts: Vec<String>, ctx: ProbeContext| {
            let name = std::iter::once(canon.to_string()).chain(parts.iter().cloned());
            ResolvedAttach {
                name: name.collect::<Vec<_>>().join(":"),
                parts,
                span: ap.span,
                ctx,
            }
        };
        match self.kind {
            Kind::Special if ap.parts.is_empty() => {
                Ok(vec![one(vec![], ProbeContext::bare(canon))])
            }
            Kind::Special => Err(attach_error(ap, "BEGIN/END take no arguments", self.usage)),
            Kind::Tracepoint => {
                let [cat, name] = ap.parts.as_slice() else {
                    return Err(attach_error(ap, "expected category and name", self.usage));
                };
                let found: Vec<ResolvedAttach> = kernel
                    .tracepoints()
                    .into_iter()
                    .filter(|(c, n)| glob(cat, c) && glob(name, n))
                    .filter_map(|(c, n)| {
                        let fields = kernel.tracepoint_format(&c, &n)?;
                        let args = Arc::new(tracepoint_record(&c, &n, &fields));
                        let ctx = ProbeContext {
                            args: Some(args),
                            ..ProbeContext::bare(canon)
                        };
                        Some(one(vec![c, n], ctx))
                    })
                    .collect();
                if found.is_empty() {
                    return Err(Diagnostic::error(
                        "sonde::probe::not_found",
                        ap.span,
                        format!("no tracepoint matches `{cat}:{name}`"),
                    )
                    .with_label("not found"));
                }
                Ok(found)
            }
            Kind::Kprobe { ret } => {
                let [func] = ap.parts.as_slice() else {
                    return Err(attach_error(ap, "expected a function", self.usage));
                };
                let funcs = kernel.kernel_functions().unwrap_or_default();
                let found: Vec<_> = funcs
                    .into_iter()
                    .filter(|f| glob(func, f))
                    .map(|f| {
                        let ctx = ProbeContext {
                            arg_regs: if ret { 0 } else { 6 },
                            retval: ret.then_some(Type::U64),
                            func: Some(f.clone()),
                            ..ProbeContext::bare(canon)
                        };
                        one(vec![f], ctx)
                    })
                    .collect();
                if found.is_empty() {
                    return Err(attach_error(ap, "no such kernel function", self.usage));
                }
                Ok(found)
            }
            Kind::Uprobe { ret } => {
                let [bin, func] = ap.parts.as_slice() else {
                    return Err(attach_error(
                        ap,
                        "expected a binary and a function",
                        self.usage,
                    ));
                };
                let path = kernel
                    .resolve_binary(bin)
                    .ok_or_else(|| attach_error(ap, "binary not found", self.usage))?;
                let funcs = kernel
                    .elf_functions(&path)
                    .map_err(|e| attach_error(ap, &e, self.usage))?;
                let found: Vec<_> = funcs
                    .into_iter()
                    .filter(|f| glob(func, f))
                    .map(|f| {
                        let ctx = ProbeContext {
                            arg_regs: if ret { 0 } else { 6 },
                            retval: ret.then_some(Type::U64),
                            user: true,
                            func: Some(f.clone()),
                            ..ProbeContext::bare(canon)
                        };
                        one(vec![path.clone(), f], ctx)
                    })
                    .collect();
                if found.is_empty() {
                    return Err(attach_error(ap, "no such function", self.usage));
                }
                Ok(found)
            }
            Kind::Timer => match ap.parts.last().map(|n| n.parse::<u64>()) {
                Some(Ok(_)) if ap.parts.len() <= 2 => {
                    Ok(vec![one(ap.parts.clone(), ProbeContext::bare(canon))])
                }
                _ => Err(attach_error(ap, "expected a rate", self.usage)),
            },
        }
    }
}

/// A fake builtin with its rule.
struct FakeBuiltin {
    name: &'static str,
    rule: fn(&'static str, &ProbeContext, Span) -> Result<Type, Diagnostic>,
}

fn fixed(t: Type) -> Result<Type, Diagnostic> {
    Ok(t)
}

fn unavailable(name: &str, span: Span, help: &str) -> Diagnostic {
    Diagnostic::error(
        "sonde::sema::builtin_unavailable",
        span,
        format!("`{name}` is not available in this probe"),
    )
    .with_label("not available here")
    .with_help(help.to_string())
}

fn arg_n(name: &'static str, ctx: &ProbeContext, span: Span) -> Result<Type, Diagnostic> {
    let n: u8 = name[3..].parse().unwrap_or(u8::MAX);
    if n < ctx.arg_regs {
        return Ok(Type::U64);
    }
    Err(unavailable(
        name,
        span,
        "`argN` exists only in kprobe/uprobe",
    ))
}

static BUILTINS: &[FakeBuiltin] = &[
    FakeBuiltin {
        name: "pid",
        rule: |_, _, _| fixed(Type::U32),
    },
    FakeBuiltin {
        name: "tid",
        rule: |_, _, _| fixed(Type::U32),
    },
    FakeBuiltin {
        name: "comm",
        rule: |_, _, _| fixed(Type::Str { size: 16 }),
    },
    FakeBuiltin {
        name: "nsecs",
        rule: |_, _, _| fixed(Type::U64),
    },
    FakeBuiltin {
        name: "cpu",
        rule: |_, _, _| fixed(Type::U32),
    },
    FakeBuiltin {
        name: "retval",
        rule: |n, ctx, span| {
            ctx.retval.clone().ok_or_else(|| {
                unavailable(n, span, "`retval` exists only in uretprobe/kretprobe/fexit")
            })
        },
    },
    FakeBuiltin {
        name: "args",
        rule: |n, ctx, span| {
            ctx.args.clone().map(Type::Record).ok_or_else(|| {
                unavailable(
                    n,
                    span,
                    "`args` exists only in tracepoint/rawtracepoint/fentry/uprobe",
                )
            })
        },
    },
    FakeBuiltin {
        name: "arg0",
        rule: arg_n,
    },
    FakeBuiltin {
        name: "arg1",
        rule: arg_n,
    },
    FakeBuiltin {
        name: "arg2",
        rule: arg_n,
    },
    FakeBuiltin {
        name: "arg3",
        rule: arg_n,
    },
    FakeBuiltin {
        name: "arg4",
        rule: arg_n,
    },
    FakeBuiltin {
        name: "arg5",
        rule: arg_n,
    },
    FakeBuiltin {
        name: "curtask",
        rule: |_, _, _| {
            fixed(Type::Ptr {
                pointee: Box::new(Type::Record(opaque_record(
                    RecordKind::Struct,
                    "task_struct",
                ))),
                space: AddrSpace::Kernel,
            })
        },
    },
];

impl Builtin for FakeBuiltin {
    fn name(&self) -> &'static str {
        self.name
    }
    fn doc(&self) -> &'static str {
        "fake builtin for tests"
    }
    fn check(&self, ctx: &ProbeContext, span: Span) -> Result<Type, Diagnostic> {
        (self.rule)(self.name, ctx, span)
    }
}

/// A fake function with its rule.
struct FakeFunction {
    name: &'static str,
    signature: &'static str,
    is_unsafe: bool,
    rule: fn(&CallCheck<'_>, &'static str) -> Result<Type, Diagnostic>,
}

/// Checks the argument count is in `min..=max`.
fn arity(c: &CallCheck<'_>, sig: &str, min: usize, max: usize) -> Result<(), Diagnostic> {
    if (min..=max).contains(&c.args.len()) {
        Ok(())
    } else {
        Err(c.arity_error(sig))
    }
}

/// Argument `i` must be an integer.
fn int_arg(c: &CallCheck<'_>, i: usize) -> Result<bool, Diagnostic> {
    match &c.arg_types[i] {
        t if t.is_integer() => Ok(t.is_signed()),
        t => Err(Diagnostic::error(
            "sonde::sema::argument_type",
            c.args[i].span,
            format!("`{}` needs an integer here", c.name.name),
        )
        .with_label(format!("this is {t}"))),
    }
}

/// Argument `i` must be a constant integer.
fn const_arg(c: &CallCheck<'_>, i: usize) -> Result<i64, Diagnostic> {
    c.const_int(i).ok_or_else(|| {
        Diagnostic::error(
            "sonde::sema::argument_type",
            c.args[i].span,
            "expected a constant",
        )
        .with_label("not a constant integer")
    })
}

static FUNCTIONS: &[FakeFunction] = &[
    FakeFunction {
        name: "count",
        signature: "count()",
        is_unsafe: false,
        rule: |c, s| arity(c, s, 0, 0).map(|_| Type::Agg(AggKind::Count)),
    },
    FakeFunction {
        name: "sum",
        signature: "sum(n)",
        is_unsafe: false,
        rule: |c, s| {
            arity(c, s, 1, 1)?;
            Ok(Type::Agg(AggKind::Sum {
                signed: int_arg(c, 0)?,
            }))
        },
    },
    FakeFunction {
        name: "hist",
        signature: "hist(n[, bits])",
        is_unsafe: false,
        rule: |c, s| {
            arity(c, s, 1, 2)?;
            int_arg(c, 0)?;
            let bits = if c.args.len() == 2 {
                const_arg(c, 1)?
            } else {
                0
            };
            Ok(Type::Agg(AggKind::Hist {
                bits: bits.clamp(0, 5) as u8,
            }))
        },
    },
    FakeFunction {
        name: "lhist",
        signature: "lhist(n, min, max, step)",
        is_unsafe: false,
        rule: |c, s| {
            arity(c, s, 4, 4)?;
            int_arg(c, 0)?;
            let (min, max, step) = (const_arg(c, 1)?, const_arg(c, 2)?, const_arg(c, 3)?);
            Ok(Type::Agg(AggKind::Lhist { min, max, step }))
        },
    },
    FakeFunction {
        name: "printf",
        signature: "printf(fmt, ...)",
        is_unsafe: false,
        rule: |c, s| {
            arity(c, s, 1, usize::MAX)?;
            match c.const_str(0) {
                Some(_) => Ok(Type::Void),
                None => Err(Diagnostic::error(
                    "sonde::sema::argument_type",
                    c.args[0].span,
                    "the format must be a string literal",
                )),
            }
        },
    },
    FakeFunction {
        name: "print",
        signature: "print(value)",
        is_unsafe: false,
        rule: |c, s| arity(c, s, 1, 3).map(|_| Type::Void),
    },
    FakeFunction {
        name: "str",
        signature: "str(ptr[, len])",
        is_unsafe: false,
        rule: |c, s| {
            arity(c, s, 1, 2)?;
            if matches!(c.args[0].kind, ExprKind::Positional(_)) {
                let len = c.const_str(0).map_or(0, |b| b.len());
                return Ok(Type::Str {
                    size: len as u32 + 1,
                });
            }
            match &c.arg_types[0] {
                Type::Str { size } => Ok(Type::Str { size: *size }),
                t if t.is_integer() || t.is_ptr() => Ok(Type::Str { size: c.max_strlen }),
                t => Err(Diagnostic::error(
                    "sonde::sema::argument_type",
                    c.args[0].span,
                    "`str` needs a pointer",
                )
                .with_label(format!("this is {t}"))),
            }
        },
    },
    FakeFunction {
        name: "exit",
        signature: "exit([code])",
        is_unsafe: false,
        rule: |c, s| arity(c, s, 0, 1).map(|_| Type::Void),
    },
    FakeFunction {
        name: "delete",
        signature: "delete(@map, key)",
        is_unsafe: false,
        rule: |c, s| {
            arity(c, s, 1, 2)?;
            match c.map_args.first() {
                Some(Some(_)) => Ok(Type::Void),
                _ if matches!(c.args[0].kind, ExprKind::Map { .. }) => Ok(Type::Void),
                _ => Err(Diagnostic::error(
                    "sonde::sema::argument_type",
                    c.args[0].span,
                    "`delete` needs a map",
                )),
            }
        },
    },
    FakeFunction {
        name: "system",
        signature: "system(fmt, ...)",
        is_unsafe: true,
        rule: |c, s| arity(c, s, 1, usize::MAX).map(|_| Type::Void),
    },
];

impl Function for FakeFunction {
    fn name(&self) -> &'static str {
        self.name
    }
    fn signature(&self) -> &'static str {
        self.signature
    }
    fn doc(&self) -> &'static str {
        "fake function for tests"
    }
    fn check(&self, call: &CallCheck<'_>) -> Result<Type, Diagnostic> {
        (self.rule)(call, self.signature)
    }
    fn is_unsafe(&self) -> bool {
        self.is_unsafe
    }
}

impl Catalog for FakeCatalog {
    fn providers(&self) -> Vec<&dyn Provider> {
        PROVIDERS.iter().map(|p| p as &dyn Provider).collect()
    }
    fn builtins(&self) -> Vec<&dyn Builtin> {
        BUILTINS.iter().map(|b| b as &dyn Builtin).collect()
    }
    fn functions(&self) -> Vec<&dyn Function> {
        FUNCTIONS.iter().map(|f| f as &dyn Function).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globbing() {
        assert!(glob("sys_enter_*", "sys_enter_openat"));
        assert!(glob("*", ""));
        assert!(!glob("sys_exit_*", "sys_enter_openat"));
        assert!(glob("vfs_?ead", "vfs_read"));
    }

    #[test]
    fn aliases_resolve() {
        assert_eq!(
            FakeCatalog.provider("t").map(|p| p.names()[0]),
            Some("tracepoint")
        );
        assert!(FakeCatalog.provider("tracepoints").is_none());
        assert!(
            FakeCatalog
                .function("system")
                .is_some_and(|f| f.is_unsafe())
        );
    }
}
