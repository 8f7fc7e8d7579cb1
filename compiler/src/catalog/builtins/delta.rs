//! `delta`: the nanoseconds since this probe last fired in the current thread, and its keyed
//! form `delta(KEY)` (the function, in `functions/time.rs`), since this probe last fired for
//! that key. A sonde extension: bpftrace and DTrace users write `@ts[tid] = nsecs` in one probe
//! and `nsecs - @ts[tid]` in another (and forget the `delete`).
//!
//! The clocks live in hidden LRU hashes of `max_map_keys` elements ([`MapTable::delta_map`]),
//! one per key type, keyed by the probe's index followed by the thread id or the key, holding
//! the last firing time (`nsecs`: boot time; the recorded time in `replay` probes) and the
//! delta measured then. A busy machine cannot fill them: the least recently used clocks are
//! dropped, and a key whose clock was dropped starts again as a first firing.
//!
//! - A firing's time is taken once, at the start of the probe (after its predicate, or before
//!   it when the predicate uses `delta`); `delta` is measured there too, so a firing that a
//!   predicate without `delta` rejects leaves the thread's clock running. `delta(KEY)` is
//!   measured where it is evaluated, against the firing's time: evaluated again in the same
//!   firing for the same key, it gives the same value.
//! - The first firing (no clock yet) gives 0, and an aggregation whose arguments read it
//!   (`@h = hist(delta)`, `@s = stats(delta(k) / 1000)`) skips its update: the first firing
//!   per key contributes nothing. A value first stored elsewhere (`$d = delta`) is a plain 0.
//!
//! [`MapTable::delta_map`]: crate::lower::maps::MapTable::delta_map

use crate::catalog::BuiltinBackend;
use crate::ir::{AluOp, Cond, Inst, Intrinsic, Operand, VReg, Width};
use crate::lower::cx::VarHome;
use crate::lower::cx::{LowerCx, Val};
use crate::lower::maps;
use sonde_lang::ast::{Block, Expr, ExprKind, Probe, Program, StmtKind};
use sonde_lang::catalog::{Builtin, ProbeContext};
use sonde_lang::diag::Diagnostic;
use sonde_lang::sema::constants::Constants;
use sonde_lang::span::Span;
use sonde_lang::types::Type;

/// The scratch variable holding this firing's time (a name no script can write).
const NOW_VAR: &str = " delta now";
/// The scratch variable holding this firing's `delta`.
const VALUE_VAR: &str = " delta";
/// The scratch variable that is 1 when this firing is the thread's first.
const FIRST_VAR: &str = " delta first";
/// The value's second word when its clock was started by its first firing (no delta yet).
const NO_DELTA: i64 = -1;

/// `delta`: nanoseconds since this probe last fired in the current thread (0 the first time).
pub struct Delta;

impl Builtin for Delta {
    fn name(&self) -> &'static str {
        "delta"
    }
    fn doc(&self) -> &'static str {
        "Nanoseconds since this probe last fired in the current thread; 0 the first time, which an aggregation reading it skips (sonde extension)"
    }
    fn check(&self, _: &ProbeContext, _: Span) -> Result<Type, Diagnostic> {
        Ok(Type::U64)
    }
    fn yields_to_definitions(&self) -> bool {
        true
    }
}

impl BuiltinBackend for Delta {
    fn lower(&self, cx: &mut LowerCx<'_>, _: &Type, _: Span) -> Result<Val, Diagnostic> {
        let (value, first) = match (cx.vars.get(VALUE_VAR), cx.vars.get(FIRST_VAR)) {
            (Some(VarHome::Reg(v)), Some(VarHome::Reg(f))) => (*v, *f),
            // `uses` found it and `start` measured it: only code it does not walk gets here.
            _ => {
                let now = firing_time(cx);
                measure_thread(cx, now)
            }
        };
        Ok(Val::Int(consume(cx, value, first)))
    }
}

/// Where a probe reads `delta` or calls `delta(KEY)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Uses {
    /// Its predicate reads either form.
    pub in_predicate: bool,
    /// Its body reads either form.
    pub in_body: bool,
    /// The predicate or the body reads the per-thread `delta`.
    pub thread: bool,
}

impl Uses {
    /// Whether the firing time is taken before the predicate (else after it, if at all).
    pub fn before_predicate(&self) -> bool {
        self.in_predicate
    }

    /// Whether the probe uses `delta` at all.
    pub fn any(&self) -> bool {
        self.in_predicate || self.in_body
    }
}

/// Which forms of `delta` `probe` of `program` reads, and where (a `#define` or enumerator of
/// the script named `delta` is not the builtin).
pub fn uses(program: &Program, constants: &Constants, probe: &Probe) -> Uses {
    let bare = |name: &str| {
        sonde_lang::catalog::builtin_name(name) == "delta"
            && crate::catalog::builtin_of(program, constants, name).is_some()
    };
    let pred = probe.predicate.as_ref();
    let any_in_pred = pred.is_some_and(|e| expr_reads(e, &bare, true));
    let bare_in_pred = pred.is_some_and(|e| expr_reads(e, &bare, false));
    Uses {
        in_predicate: any_in_pred,
        in_body: block_reads(&probe.body, &bare, true),
        thread: bare_in_pred || block_reads(&probe.body, &bare, false),
    }
}

fn block_reads(b: &Block, bare: &dyn Fn(&str) -> bool, keyed: bool) -> bool {
    let e = |x: &Expr| expr_reads(x, bare, keyed);
    let blk = |x: &Block| block_reads(x, bare, keyed);
    b.stmts.iter().any(|s| match &s.kind {
        StmtKind::Expr(x) => e(x),
        StmtKind::Assign { target, value, .. } => e(target) || e(value),
        StmtKind::Let { value, .. } => value.as_ref().is_some_and(e),
        StmtKind::If { cond, then, else_ } => {
            e(cond) || blk(then) || else_.as_ref().is_some_and(blk)
        }
        StmtKind::Unroll { count: c, body } | StmtKind::While { cond: c, body } => {
            e(c) || blk(body)
        }
        StmtKind::ForMap { map, body, .. } => e(map) || blk(body),
        StmtKind::ForRange {
            start, end, body, ..
        } => e(start) || e(end) || blk(body),
        StmtKind::Return(value) => value.as_ref().is_some_and(e),
        StmtKind::Break | StmtKind::Continue => false,
    })
}

/// Whether `e` reads the builtin `delta` (`bare` tells a name that is it), or, when `keyed`,
/// calls `delta(KEY)`.
fn expr_reads(e: &Expr, bare: &dyn Fn(&str) -> bool, keyed: bool) -> bool {
    match &e.kind {
        ExprKind::Ident(name) if bare(name) => true,
        ExprKind::Call { name, args } if args.is_empty() && bare(&name.name) => true,
        ExprKind::Call { name, args } if keyed && !args.is_empty() && name.name == "delta" => true,
        _ => e.children().into_iter().any(|c| expr_reads(c, bare, keyed)),
    }
}

/// At the start of a probe that uses `delta` (`uses`): takes the firing's time, and measures
/// the per-thread `delta` if the probe reads it, into hidden scratch variables that every use
/// (loop bodies included) reads.
pub fn start(cx: &mut LowerCx<'_>, uses: Uses) {
    let now = cx.call(Intrinsic::KtimeGetBootNs, vec![]);
    cx.vars.insert(NOW_VAR.into(), VarHome::Reg(now));
    if uses.thread {
        let (value, first) = measure_thread(cx, now);
        cx.vars.insert(VALUE_VAR.into(), VarHome::Reg(value));
        cx.vars.insert(FIRST_VAR.into(), VarHome::Reg(first));
    }
}

/// The firing's time, as `start` took it (or now, for code `uses` does not walk).
fn firing_time(cx: &mut LowerCx<'_>) -> VReg {
    match cx.vars.get(NOW_VAR) {
        Some(VarHome::Reg(r)) => *r,
        _ => cx.call(Intrinsic::KtimeGetBootNs, vec![]),
    }
}

/// Measures the per-thread `delta` at time `now`.
fn measure_thread(cx: &mut LowerCx<'_>, now: VReg) -> (VReg, VReg) {
    let t = cx.pid_tgid();
    let tid = cx.alu(AluOp::And, t, Operand::Imm(0xffff_ffff));
    measure(cx, None, now, |cx, key| {
        cx.store(key, 8, Operand::Reg(tid), Width::W64);
    })
}

/// `delta(KEY)`: the time since this probe last fired for the key `arg`.
pub fn lower_keyed(cx: &mut LowerCx<'_>, arg: &Expr) -> Result<Val, Diagnostic> {
    let from = cx.type_of(arg);
    let key_ty = key_type(&from);
    let v = cx.lower_expr(arg)?;
    let v = cx.materialize(v, &from);
    let now = firing_time(cx);
    let (value, first) = measure(cx, Some(&key_ty), now, |cx, key| {
        maps::write_converted(cx, v, &from, &key_ty, key, 8);
    });
    Ok(Val::Int(consume(cx, value, first)))
}

/// The type a key of type `ty` is stored as: integers, pointers and other scalars as a
/// `uint64` (so `delta(pid)` and `delta(pid + 0)` share clocks), other values as they are.
pub fn key_type(ty: &Type) -> Type {
    if crate::lower::cx::is_scalar(ty) {
        Type::U64
    } else {
        ty.clone()
    }
}

/// A measured delta as its reader sees it: inside an aggregation's arguments, a first firing
/// skips the update.
fn consume(cx: &mut LowerCx<'_>, value: VReg, first: VReg) -> VReg {
    if let Some(skip) = cx.skip_aggregation() {
        cx.branch(Cond::Ne, first, Operand::Imm(0), skip);
    }
    value
}

/// Reads and restarts, at the firing's time `now`, the clock of (this probe, the key
/// `write_key` puts at offset 8 of the key buffer) in the map for `key` (`None`: per thread).
/// Returns the nanoseconds since the clock's previous firing (0 the first time, or when the
/// clock went backwards) and a flag that is 1 on the first firing.
///
/// The map's value is the clock's last firing time and the delta measured then
/// ([`NO_DELTA`] on a first firing): a second measure in the same firing (`now` equal to the
/// last time) gives the same result instead of 0.
fn measure(
    cx: &mut LowerCx<'_>,
    key: Option<&Type>,
    now: VReg,
    write_key: impl FnOnce(&mut LowerCx<'_>, VReg),
) -> (VReg, VReg) {
    let map = cx.maps.delta_map(key);
    let key_size = cx.maps.spec(map).key_size;
    let buf = cx.alloc_zeroed(key_size);
    cx.store(buf, 0, Operand::Imm(cx.probe_index as i64), Width::W64);
    write_key(cx, buf);
    let value = cx.imm(0);
    let first = cx.imm(1);
    let p = maps::lookup(cx, map, buf);
    let (insert, again, done) = (cx.label(), cx.label(), cx.label());
    cx.branch(Cond::Eq, p, Operand::Imm(0), insert);
    let last = cx.load(p, 0, Width::W64);
    cx.branch(Cond::Eq, last, Operand::Reg(now), again);
    // A later firing: the time since the last one (0 if the clock went backwards).
    cx.emit(Inst::Mov {
        dst: first,
        src: Operand::Imm(0),
    });
    let backwards = cx.label();
    cx.branch(Cond::UGt, last, Operand::Reg(now), backwards);
    cx.emit(Inst::Alu {
        op: AluOp::Sub,
        dst: value,
        lhs: now,
        rhs: Operand::Reg(last),
    });
    cx.place_label(backwards);
    cx.store(p, 0, Operand::Reg(now), Width::W64);
    cx.store(p, 8, Operand::Reg(value), Width::W64);
    cx.emit(Inst::Jump(done));
    // The same firing measured this clock already: its result again.
    cx.place_label(again);
    let d = cx.load(p, 8, Width::W64);
    cx.branch(Cond::Eq, d, Operand::Imm(NO_DELTA), done);
    cx.emit(Inst::Mov {
        dst: first,
        src: Operand::Imm(0),
    });
    cx.emit(Inst::Mov {
        dst: value,
        src: Operand::Reg(d),
    });
    cx.emit(Inst::Jump(done));
    // The first firing: start the clock.
    cx.place_label(insert);
    let stamp = cx.alloc(16);
    cx.store(stamp, 0, Operand::Reg(now), Width::W64);
    cx.store(stamp, 8, Operand::Imm(NO_DELTA), Width::W64);
    cx.insert(map, buf, stamp);
    cx.place_label(done);
    (value, first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_is_u64_everywhere_and_yields_to_definitions() {
        for provider in ["tracepoint", "BEGIN", "input", "replay"] {
            let t = Delta.check(&ProbeContext::bare(provider), Span::default());
            assert_eq!(t.unwrap(), Type::U64, "{provider}");
        }
        assert!(Delta.yields_to_definitions());
        assert!(!super::super::time::Nsecs.yields_to_definitions());
        assert!(Delta.doc().contains("sonde extension"));
    }

    #[test]
    fn keys_are_stored_as_u64_or_as_they_are() {
        let cases = [
            (Type::U32, Type::U64),
            (Type::I32, Type::U64),
            (Type::Bool, Type::U64),
            (Type::Str { size: 16 }, Type::Str { size: 16 }),
            (
                Type::Tuple(vec![Type::U32, Type::Str { size: 8 }]),
                Type::Tuple(vec![Type::U32, Type::Str { size: 8 }]),
            ),
        ];
        for (ty, want) in cases {
            assert_eq!(key_type(&ty), want, "{ty}");
        }
    }

    use sonde_lang::sema::{CheckOptions, Checked, check};
    use sonde_lang::testing::FixtureKernel;

    fn checked(src: &str) -> (Program, Checked) {
        let program = sonde_lang::syntax::parse(src).unwrap_or_else(|d| panic!("{src}: {d:#?}"));
        let opts = CheckOptions::default();
        let (checked, diags) = check(
            &program,
            &crate::catalog::SondeCatalog,
            &FixtureKernel,
            &opts,
        );
        let errors: Vec<_> = diags.iter().filter(|d| d.is_error()).collect();
        assert!(errors.is_empty(), "{src}: {errors:#?}");
        (program, checked)
    }

    /// (script, where it uses `delta`: in the predicate, in the body, the per-thread form).
    const USES: &[(&str, (bool, bool, bool))] = &[
        ("BEGIN { @h = hist(delta); }", (false, true, true)),
        ("BEGIN { @h = hist(delta()); }", (false, true, true)),
        ("BEGIN { @h = hist(__builtin_delta); }", (false, true, true)),
        ("BEGIN { @h = hist(delta(pid)); }", (false, true, false)),
        ("BEGIN /delta > 5/ { @c = count(); }", (true, false, true)),
        (
            "BEGIN /delta(cpu) > 5/ { @c = stats(delta); }",
            (true, true, true),
        ),
        (
            "BEGIN { if (pid > 1) { for ($i : 0..3) { @s = sum(delta); } } }",
            (false, true, true),
        ),
        (
            "BEGIN { $delta = 1; @delta = $delta; @c = count(); }",
            (false, false, false),
        ),
        (
            "#define delta 5\nBEGIN { @x = delta; }",
            (false, false, false),
        ),
        (
            "enum e { delta = 3 };\nBEGIN { @x = delta; }",
            (false, false, false),
        ),
        (
            "macro delta(x) { x + 1 }\nBEGIN { @x = delta(2); }",
            (false, false, false),
        ),
    ];

    #[test]
    fn uses_finds_each_form_where_it_is() {
        for (src, (p, b, t)) in USES {
            let (program, checked) = checked(src);
            let want = Uses {
                in_predicate: *p,
                in_body: *b,
                thread: *t,
            };
            assert_eq!(
                uses(&program, &checked.constants, &program.probes[0]),
                want,
                "{src}"
            );
        }
    }

    #[test]
    fn a_script_that_defines_delta_keeps_its_meaning() {
        let cases = [
            ("#define delta 5\nBEGIN { @x = delta; }", Type::I64),
            ("BEGIN { @x = delta; }", Type::U64),
            (
                "BEGIN { $delta = \"s\"; @x = $delta; }",
                Type::Str { size: 2 },
            ),
            (
                "BEGIN { @delta = \"s\"; @x = @delta; }",
                Type::Str { size: 2 },
            ),
        ];
        for (src, want) in cases {
            let (_, checked) = checked(src);
            assert_eq!(checked.maps["x"].value, want, "{src}");
        }
        let (_, checked) = checked("enum e { delta = 3 };\nBEGIN { @x = delta; }");
        assert!(matches!(&checked.maps["x"].value, Type::Enum { name, .. } if name == "e"));
    }
}
