//! Builders for function type-rule tests: a call with typed argument expressions.

use sonde_lang::ast::{Expr, ExprId, ExprKind, Ident};
use sonde_lang::catalog::{CallCheck, CallPosition, Function, MapArg, ProbeContext};
use sonde_lang::diag::Diagnostic;
use sonde_lang::span::Span;
use sonde_lang::types::Type;

/// One argument: its expression kind and checked type.
pub type Arg = (ExprKind, Type);

/// A string literal argument.
pub fn lit(s: &str) -> Arg {
    (
        ExprKind::Str(s.as_bytes().to_vec()),
        Type::Str {
            size: s.len() as u32 + 1,
        },
    )
}

/// An integer literal argument.
pub fn int(v: u64) -> Arg {
    (ExprKind::Int(v), Type::U64)
}

/// A non-constant value of type `ty` (a scratch variable).
pub fn val(ty: Type) -> Arg {
    (ExprKind::Var("v".into()), ty)
}

/// A map argument `@name[keys]` whose value type is `uint64`.
pub fn map(name: &str, keys: usize) -> Arg {
    let keys = (0..keys)
        .map(|i| expr(ExprKind::Int(i as u64), Span::new(90, 91)))
        .collect();
    (
        ExprKind::Map {
            name: name.into(),
            keys,
        },
        Type::U64,
    )
}

/// A whole map argument `@name` used without keys anywhere (`@x = 1`).
pub fn scalar_map(name: &str) -> Arg {
    (
        ExprKind::Map {
            name: name.into(),
            keys: Vec::new(),
        },
        Type::I64,
    )
}

/// The map facts the checker would pass for argument `kind` (keyed maps have `uint64` keys,
/// `scalar_map`s have none).
fn map_arg(kind: &ExprKind, ty: &Type) -> Option<MapArg> {
    match kind {
        ExprKind::Map { name, keys } if keys.is_empty() => Some(MapArg {
            name: name.clone(),
            key: (*ty == Type::U64).then_some(Type::U64),
            value: ty.clone(),
        }),
        _ => None,
    }
}

/// A bare identifier argument (`perf` in `kstack(perf)`).
pub fn ident(name: &str) -> Arg {
    (ExprKind::Ident(name.into()), Type::Void)
}

fn expr(kind: ExprKind, span: Span) -> Expr {
    Expr {
        id: ExprId(0),
        kind,
        span,
    }
}

/// The span given to argument `i`: `10*(i+1) .. 10*(i+1)+5`.
pub fn arg_span(i: usize) -> Span {
    Span::new(10 * (i + 1), 10 * (i + 1) + 5)
}

/// Checks `f` called with `args` in a probe with context `ctx`.
pub fn check_in(f: &dyn Function, ctx: &ProbeContext, args: Vec<Arg>) -> Result<Type, Diagnostic> {
    check_on(f, ctx, &sonde_lang::kernel::NoKernel, args)
}

/// Checks `f` called with `args` in a probe with context `ctx`, on `kernel`'s facts.
pub fn check_on(
    f: &dyn Function,
    ctx: &ProbeContext,
    kernel: &dyn sonde_lang::kernel::KernelInfo,
    args: Vec<Arg>,
) -> Result<Type, Diagnostic> {
    let name = Ident {
        name: f.name().into(),
        span: Span::new(0, f.name().len()),
    };
    let (exprs, types): (Vec<Expr>, Vec<Type>) = args
        .into_iter()
        .enumerate()
        .map(|(i, (k, t))| (expr(k, arg_span(i)), t))
        .unzip();
    let map_args: Vec<Option<MapArg>> = exprs
        .iter()
        .zip(&types)
        .map(|(e, t)| map_arg(&e.kind, t))
        .collect();
    let call = CallCheck {
        name: &name,
        args: &exprs,
        arg_types: &types,
        span: Span::new(0, 100),
        position: CallPosition::Statement,
        ctx,
        positional: &[],
        map_args: &map_args,
        max_strlen: 64,
        named: &[],
        kernel,
        stack_mode: sonde_lang::types::StackMode::Bpftrace,
        warnings: &Default::default(),
    };
    f.check(&call)
}

/// Checks `f` called with `args` in a `kprobe` context (6 argument registers).
pub fn check(f: &dyn Function, args: Vec<Arg>) -> Result<Type, Diagnostic> {
    let ctx = ProbeContext {
        arg_regs: 6,
        func: Some("f".into()),
        ..ProbeContext::bare("kprobe")
    };
    check_in(f, &ctx, args)
}
