//! `tseries(n, interval_ns, num_intervals[, agg])`: a time series of the integer n over the last
//! `num_intervals` intervals of `interval_ns` nanoseconds (bpftrace 0.26).
//!
//! Per CPU: a ring of `num_intervals` [`SLOT_SIZE`]-byte slots `{ value: i64, meta: u64,
//! stamp: u64 }`. An update reads the clock (`bpf_ktime_get_boot_ns()` plus the offset of
//! `CLOCK_TAI` to `CLOCK_BOOTTIME` taken when the script was compiled: bpftrace's `sw_tai`),
//! takes `epoch = now / interval_ns` and writes slot `epoch % num_intervals`, with `stamp =
//! epoch + 1`: 0 marks a slot never written (bpftrace has no element for it), and a write
//! in epoch 0 (a test clock) reads back as bpftrace reads it, epoch 0 with value 0. `meta` is
//! what the aggregation needs: the time of the write for the default (the last value wins
//! across CPUs), the number of values for `avg`, 1 once written for `min`/`max`; `sum` does
//! not use it. A slot written in an earlier epoch is reset before `avg`, `sum`, `min` and
//! `max` add to it.
//!
//! bpftrace keys each interval as its own map element (key + interval number); sonde keeps
//! the ring in one value, so `num_intervals` is bounded by the largest per-CPU map value
//! ([`MAX_INTERVALS`]).

use super::check_call;
use crate::catalog::FunctionBackend;
use crate::ir::{AluOp, Cond, Inst, Intrinsic, Operand, VReg, Width};
use crate::lower::cx::{LowerCall, LowerCx, Val};
use crate::lower::maps::{add_to, agg_update, build_key, load};
use crate::program::MapRole;
use crate::value::{AggValue, Num, read_le};
use sonde_lang::catalog::{CallCheck, Function};
use sonde_lang::diag::Diagnostic;
use sonde_lang::types::{AggKind, TseriesAgg, Type};
use std::collections::BTreeMap;

/// `tseries(n, interval_ns, num_intervals[, agg])`.
pub struct Tseries;

/// Bytes of one interval's slot: `{ value: i64, meta: u64, stamp: u64 }` (`stamp` = epoch + 1,
/// 0 for a slot never written).
pub const SLOT_SIZE: u32 = 24;

/// Most intervals of one series: the ring fills at most one per-CPU map value (32 KiB).
pub const MAX_INTERVALS: u32 = sonde_lang::limits::MAX_VALUE_SIZE / SLOT_SIZE;

/// bpftrace's bound on `num_intervals`.
const BPFTRACE_MAX_INTERVALS: i64 = 1_000_000;

/// Code of the diagnostics on `tseries()` arguments.
const ARG: &str = "sonde::sema::tseries_arg";

/// The aggregation names `tseries()` takes, in the order bpftrace lists them.
const AGGS: &[(&str, TseriesAgg)] = &[
    ("avg", TseriesAgg::Avg),
    ("max", TseriesAgg::Max),
    ("min", TseriesAgg::Min),
    ("sum", TseriesAgg::Sum),
];

impl Function for Tseries {
    fn name(&self) -> &'static str {
        "tseries"
    }
    fn signature(&self) -> &'static str {
        "tseries(n, interval_ns, num_intervals[, \"avg\"|\"max\"|\"min\"|\"sum\"])"
    }
    fn doc(&self) -> &'static str {
        "Time series of the integer n: the last num_intervals intervals of interval_ns (a duration such as 100ms or 1s), each keeping the last value recorded in it, or their avg, max, min or sum."
    }
    fn check(&self, call: &CallCheck<'_>) -> Result<Type, Diagnostic> {
        check_call(call, self.signature(), 3..=4)?;
        let span = |i: usize| call.args.get(i).map_or(call.span, |a| a.span);
        let ty = call.arg_types.first().unwrap_or(&Type::Void);
        if !ty.is_integer() {
            return Err(Diagnostic::error(
                ARG,
                span(0),
                format!("tseries() only supports integer arguments ({ty} provided)"),
            )
            .with_label(format!("this is a {ty}"))
            .with_help(
                "a time series records an integer, for example a count, a size or a latency",
            ));
        }
        let signed = ty.is_signed() || matches!(ty, Type::Enum { .. });
        let interval_ns = positive(call, 1, "interval_ns")?;
        let n = positive(call, 2, "num_intervals")?;
        if n > BPFTRACE_MAX_INTERVALS {
            return Err(Diagnostic::error(
                ARG,
                span(2),
                format!("tseries() num_intervals must be < 1000000 ({n} provided)"),
            )
            .with_label("too many intervals")
            .with_help(format!(
                "sonde keeps at most {MAX_INTERVALS} intervals per series"
            )));
        }
        if n > i64::from(MAX_INTERVALS) {
            return Err(Diagnostic::error(
                sonde_lang::limits::TOO_LARGE,
                span(2),
                "`tseries()` num_intervals is too large",
            )
            .with_label(format!("{n} intervals, the limit is {MAX_INTERVALS}"))
            .with_help(format!(
                "sonde keeps a series in one per-CPU map value (32 KiB, {SLOT_SIZE} bytes an interval): at most {MAX_INTERVALS} intervals (docs/reference.md, Limits)"
            )));
        }
        let agg = if call.args.len() == 4 {
            agg_arg(call)?
        } else {
            TseriesAgg::Last
        };
        Ok(Type::Agg(AggKind::Tseries {
            interval_ns: interval_ns as u64,
            num_intervals: n as u32,
            agg,
            signed,
        }))
    }
}

/// Argument `i` (`interval_ns` or `num_intervals`) as a constant ≥ 1, or bpftrace's error.
fn positive(call: &CallCheck<'_>, i: usize, what: &str) -> Result<i64, Diagnostic> {
    let span = call.args.get(i).map_or(call.span, |a| a.span);
    match call.const_int(i) {
        Some(v) if v >= 1 => Ok(v),
        Some(0) => Err(Diagnostic::error(
            ARG,
            span,
            format!("tseries() {what} must be >= 1 (0 provided)"),
        )
        .with_label("0 given")
        .with_help(tseries_help())),
        _ => Err(Diagnostic::error(
            ARG,
            span,
            format!("tseries: invalid {what} value (must be non-negative literal)"),
        )
        .with_label("not a non-negative constant")
        .with_help(tseries_help())),
    }
}

fn tseries_help() -> &'static str {
    "the call is tseries(value, interval, count[, agg]) with a constant interval such as 100ms or 1s and a constant count of intervals"
}

/// The optional fourth argument: one of [`AGGS`] as a string literal.
fn agg_arg(call: &CallCheck<'_>) -> Result<TseriesAgg, Diagnostic> {
    let span = call.args[3].span;
    let names = AGGS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ");
    let Some(word) = call.const_str(3) else {
        let ty = call.arg_types.get(3).unwrap_or(&Type::Void);
        return Err(Diagnostic::error(
            ARG,
            span,
            format!("tseries() expects a string literal ({ty} provided)"),
        )
        .with_label("not a string literal")
        .with_help(format!(
            "the aggregation is one of {names}, as a string: \"avg\""
        )));
    };
    AGGS.iter()
        .find(|(n, _)| n.as_bytes() == word.as_slice())
        .map(|(_, a)| *a)
        .ok_or_else(|| {
            let given = String::from_utf8_lossy(&word);
            Diagnostic::error(
                ARG,
                span,
                format!(
                    "tseries() expects one of the following aggregation functions: {names} (\"{given}\" provided)"
                ),
            )
            .with_label("unknown aggregation")
            .with_help("leave it out to keep the last value of each interval")
        })
}

impl FunctionBackend for Tseries {
    fn lower(&self, cx: &mut LowerCx<'_>, call: &LowerCall<'_>) -> Result<Val, Diagnostic> {
        let Type::Agg(AggKind::Tseries {
            interval_ns,
            num_intervals,
            agg,
            signed,
        }) = call.ty
        else {
            return Err(cx.unsupported(call.span, "this tseries()"));
        };
        let v = cx.lower_int(&call.args[0])?;
        let now = clock(cx, call)?;
        let interval = i64::try_from(interval_ns).unwrap_or(i64::MAX);
        let epoch = cx.alu(AluOp::UDiv, now, Operand::Imm(interval));
        let last = i64::from(num_intervals.max(1)) - 1;
        let slot = cx.alu(AluOp::UMod, epoch, Operand::Imm(last + 1));
        // The verifier must see the slot inside the value.
        let ok = cx.label();
        cx.branch(Cond::ULe, slot, Operand::Imm(last), ok);
        cx.emit(Inst::Mov {
            dst: slot,
            src: Operand::Imm(last),
        });
        cx.place_label(ok);
        let off = cx.alu(AluOp::Mul, slot, Operand::Imm(SLOT_SIZE.into()));
        let stamp = cx.alu(AluOp::Add, epoch, Operand::Imm(1));
        agg_update(cx, call, &mut |cx, p, _| {
            let q = cx.alu(AluOp::Add, p, Operand::Reg(off));
            if agg == TseriesAgg::Last {
                cx.store(q, 0, Operand::Reg(v), Width::W64);
                cx.store(q, 8, Operand::Reg(now), Width::W64);
            } else {
                // A slot of an earlier epoch starts again.
                let same = cx.label();
                let old = cx.load(q, 16, Width::W64);
                cx.branch(Cond::Eq, old, Operand::Reg(stamp), same);
                cx.store(q, 0, Operand::Imm(0), Width::W64);
                cx.store(q, 8, Operand::Imm(0), Width::W64);
                cx.place_label(same);
                update(cx, q, v, agg, signed);
            }
            cx.store(q, 16, Operand::Reg(stamp), Width::W64);
        })
    }
}

/// Adds `v` to the slot at `q` as `agg` says (not [`TseriesAgg::Last`], which overwrites).
fn update(cx: &mut LowerCx<'_>, q: VReg, v: VReg, agg: TseriesAgg, signed: bool) {
    match agg {
        TseriesAgg::Sum | TseriesAgg::Last => add_to(cx, q, 0, Operand::Reg(v)),
        TseriesAgg::Avg => {
            add_to(cx, q, 0, Operand::Reg(v));
            add_to(cx, q, 8, Operand::Imm(1));
        }
        TseriesAgg::Min | TseriesAgg::Max => {
            let skip = cx.label();
            super::minmax::set_extreme(cx, q, v, agg == TseriesAgg::Min, signed, skip);
            cx.place_label(skip);
        }
    }
}

/// The time of an update in nanoseconds: `CLOCK_BOOTTIME` plus the compile-time offset to
/// `CLOCK_TAI`, or the value of the scalar map `tseries_clock_map` names (bpftrace's
/// `BPFTRACE_DUMMY_TS_MAP`, for deterministic runs).
fn clock(cx: &mut LowerCx<'_>, call: &LowerCall<'_>) -> Result<VReg, Diagnostic> {
    if let Some(name) = cx.options.tseries_clock_map.clone() {
        let bare = name.strip_prefix('@').unwrap_or(&name);
        let map = cx.maps.user(bare).filter(|m| {
            matches!(
                &cx.maps.spec(*m).role,
                MapRole::User {
                    key: None,
                    value: Type::Int { .. },
                    ..
                }
            )
        });
        let Some(map) = map else {
            return Err(Diagnostic::error(
                "sonde::codegen::tseries_clock",
                call.span,
                format!("BPFTRACE_DUMMY_TS_MAP names {name}, which is not a map of integers without keys"),
            )
            .with_label("this tseries() would read its clock there")
            .with_help("set BPFTRACE_DUMMY_TS_MAP to a scalar map of the script holding nanoseconds (`@ts = (uint64)0;`), or unset it"));
        };
        let key = build_key(cx, None, &[]);
        return match load(cx, map, key)? {
            Val::Int(r) => Ok(r),
            _ => Err(cx.unsupported(call.span, "this tseries() clock map")),
        };
    }
    let boot = cx.call(Intrinsic::KtimeGetBootNs, Vec::new());
    Ok(cx.alu(
        AluOp::Add,
        boot,
        Operand::Imm(cx.options.tai_offset_ns as i64),
    ))
}

/// Reduces one slot over the CPUs as bpftrace does: values of the same epoch combine, and
/// the latest epoch wins; epoch 0 does not count. `None` for a slot no CPU wrote, `(0, 0)`
/// for one written only in epoch 0.
fn reduce_slot(per_cpu: &[&[u8]], off: usize, agg: TseriesAgg, signed: bool) -> Option<(u64, i64)> {
    let mut by_epoch: BTreeMap<u64, (i64, u64)> = BTreeMap::new();
    let mut written = false;
    for cpu in per_cpu {
        let (val, meta, stamp) = (
            read_le(cpu, off, 8) as i64,
            read_le(cpu, off + 8, 8),
            read_le(cpu, off + 16, 8),
        );
        written |= stamp != 0;
        let epoch = stamp.saturating_sub(1);
        if epoch == 0 {
            continue;
        }
        let Some(cur) = by_epoch.get_mut(&epoch) else {
            by_epoch.insert(epoch, (val, meta));
            continue;
        };
        let wide = |x: i64| Num::new(x, signed).wide();
        match agg {
            TseriesAgg::Last if meta > cur.1 => *cur = (val, meta),
            TseriesAgg::Last => {}
            TseriesAgg::Avg => *cur = (cur.0.wrapping_add(val), cur.1.wrapping_add(meta)),
            TseriesAgg::Sum => cur.0 = cur.0.wrapping_add(val),
            TseriesAgg::Min if wide(val) < wide(cur.0) => cur.0 = val,
            TseriesAgg::Max if wide(val) > wide(cur.0) => cur.0 = val,
            TseriesAgg::Min | TseriesAgg::Max => {}
        }
    }
    let Some((&epoch, &(val, meta))) = by_epoch.last_key_value() else {
        return written.then_some((0, 0));
    };
    if agg != TseriesAgg::Avg {
        return Some((epoch, val));
    }
    let avg = if signed {
        val.checked_div(meta as i64).unwrap_or(0)
    } else {
        (val as u64).checked_div(meta).unwrap_or(0) as i64
    };
    Some((epoch, avg))
}

/// Reduces every slot of the ring over the CPUs.
pub(super) fn merge(per_cpu: &[&[u8]], kind: &AggKind) -> AggValue {
    let AggKind::Tseries {
        interval_ns,
        num_intervals,
        agg,
        signed,
    } = *kind
    else {
        return AggValue::Count(0);
    };
    let points = (0..num_intervals as usize)
        .filter_map(|i| reduce_slot(per_cpu, i * SLOT_SIZE as usize, agg, signed))
        .collect();
    AggValue::Tseries {
        interval_ns,
        num_intervals,
        signed,
        points,
    }
}

/// The latest epoch of a series' slots (0 when none was written).
pub fn latest_epoch(points: &[(u64, i64)]) -> u64 {
    points.iter().map(|(e, _)| *e).max().unwrap_or(0)
}

/// The rows a series prints when the latest epoch of its whole map is `last`, as bpftrace
/// builds them: the window of `num_intervals` epochs ending at `last`, from the first epoch
/// of the window holding a value (only the last epoch when none does), each with its start
/// in nanoseconds (`epoch * interval_ns`, a `CLOCK_TAI` time) and its value, `None` for an
/// interval without one.
pub fn series_rows(
    points: &[(u64, i64)],
    interval_ns: u64,
    num_intervals: u32,
    last: u64,
) -> Vec<(u64, Option<i64>)> {
    let mut values: BTreeMap<u64, i64> = BTreeMap::new();
    for (e, v) in points {
        values.entry(*e).or_insert(*v);
    }
    let first = last.wrapping_sub(u64::from(num_intervals)).wrapping_add(1);
    if first > last {
        return Vec::new();
    }
    let from = values
        .range(first..)
        .next()
        .map_or(last, |(e, _)| *e)
        .min(last);
    (from..=last)
        .map(|e| (e.wrapping_mul(interval_ns), values.get(&e).copied()))
        .collect()
}

#[cfg(test)]
#[path = "tseries_tests.rs"]
mod tests;
