use super::super::testutil::{Arg, check};
use super::*;
use sonde_lang::ast::ExprKind;
use sonde_lang::catalog::CallPosition;

fn kind(interval_ns: u64, num_intervals: u32, agg: TseriesAgg, signed: bool) -> Type {
    Type::Agg(AggKind::Tseries {
        interval_ns,
        num_intervals,
        agg,
        signed,
    })
}

/// Runs the type rule on `tseries(1, 100, 5, agg)` with `agg` of type `agg_ty`.
fn check_agg(agg: ExprKind, agg_ty: Type) -> Result<Type, Diagnostic> {
    check(
        &Tseries,
        &[
            Arg::Lit(1),
            Arg::Lit(100),
            Arg::Lit(5),
            Arg::Expr(agg, agg_ty),
        ],
        CallPosition::MapAssign,
    )
}

#[test]
fn type_rule_takes_constants_and_the_value_sign() {
    let t = check(
        &Tseries,
        &[Arg::Of(Type::I64), Arg::Lit(100_000_000), Arg::Lit(20)],
        CallPosition::MapAssign,
    );
    assert_eq!(t, Ok(kind(100_000_000, 20, TseriesAgg::Last, true)));
    let t = check(
        &Tseries,
        &[Arg::Of(Type::U32), Arg::Lit(1), Arg::Lit(1)],
        CallPosition::MapAssign,
    );
    assert_eq!(t, Ok(kind(1, 1, TseriesAgg::Last, false)));
    let t = check_agg(ExprKind::Str(b"min".to_vec()), Type::Str { size: 4 });
    assert_eq!(t, Ok(kind(100, 5, TseriesAgg::Min, true)));
}

#[test]
fn bad_arguments_are_reported_on_their_span_with_bpftraces_words() {
    let err = |args: &[Arg]| check(&Tseries, args, CallPosition::MapAssign).unwrap_err();
    let e = err(&[Arg::Of(Type::Str { size: 8 }), Arg::Lit(1), Arg::Lit(1)]);
    assert_eq!((e.code, e.span.start), (ARG, 10));
    assert!(
        e.message.contains("only supports integer arguments"),
        "{e:?}"
    );
    let e = err(&[Arg::Lit(1), Arg::Of(Type::I64), Arg::Lit(1)]);
    assert_eq!(e.span.start, 20);
    assert_eq!(
        e.message,
        "tseries: invalid interval_ns value (must be non-negative literal)"
    );
    let e = err(&[Arg::Lit(1), Arg::Lit(-1), Arg::Lit(1)]);
    assert_eq!(
        e.message,
        "tseries: invalid interval_ns value (must be non-negative literal)"
    );
    let e = err(&[Arg::Lit(1), Arg::Lit(0), Arg::Lit(10)]);
    assert_eq!(e.message, "tseries() interval_ns must be >= 1 (0 provided)");
    let e = err(&[Arg::Lit(1), Arg::Lit(5), Arg::Lit(0)]);
    assert_eq!(
        (e.message.as_str(), e.span.start),
        ("tseries() num_intervals must be >= 1 (0 provided)", 30)
    );
    let e = err(&[Arg::Lit(1), Arg::Lit(5), Arg::Of(Type::I64)]);
    assert_eq!(
        e.message,
        "tseries: invalid num_intervals value (must be non-negative literal)"
    );
    let e = err(&[Arg::Lit(1), Arg::Lit(5), Arg::Lit(1_000_001)]);
    assert_eq!(
        e.message,
        "tseries() num_intervals must be < 1000000 (1000001 provided)"
    );
    let e = err(&[
        Arg::Lit(1),
        Arg::Lit(5),
        Arg::Lit(i64::from(MAX_INTERVALS) + 1),
    ]);
    assert_eq!(e.code, sonde_lang::limits::TOO_LARGE);
    let e = err(&[Arg::Lit(1), Arg::Lit(5)]);
    assert_eq!(e.code, "sonde::sema::arity");
    let e = check(
        &Tseries,
        &[Arg::Lit(1), Arg::Lit(5), Arg::Lit(5)],
        CallPosition::Value,
    )
    .unwrap_err();
    assert_eq!(e.code, "sonde::sema::agg_position");
}

#[test]
fn the_aggregation_is_a_known_string_literal() {
    let e = check_agg(ExprKind::Str(b"stats".to_vec()), Type::Str { size: 6 }).unwrap_err();
    assert_eq!(
        (e.message.as_str(), e.span.start),
        (
            "tseries() expects one of the following aggregation functions: avg, max, min, sum (\"stats\" provided)",
            40
        )
    );
    let e = check_agg(ExprKind::Int(3), Type::I64).unwrap_err();
    assert!(
        e.message.starts_with("tseries() expects a string literal"),
        "{e:?}"
    );
}

/// One CPU's ring: `(slot, value, meta, epoch)` written (stamped `epoch + 1`), the rest zero.
fn ring(n: usize, slots: &[(usize, i64, u64, u64)]) -> Vec<u8> {
    let mut b = vec![0u8; n * SLOT_SIZE as usize];
    for &(i, v, m, e) in slots {
        let o = i * SLOT_SIZE as usize;
        b[o..o + 8].copy_from_slice(&v.to_le_bytes());
        b[o + 8..o + 16].copy_from_slice(&m.to_le_bytes());
        b[o + 16..o + 24].copy_from_slice(&(e + 1).to_le_bytes());
    }
    b
}

fn points(kind: &Type, cpus: &[Vec<u8>]) -> Vec<(u64, i64)> {
    let Type::Agg(k) = kind else { panic!() };
    let refs: Vec<&[u8]> = cpus.iter().map(Vec::as_slice).collect();
    match merge(&refs, k) {
        AggValue::Tseries { points, .. } => points,
        other => panic!("{other:?}"),
    }
}

#[test]
fn cpus_merge_per_epoch_and_the_latest_epoch_wins() {
    // Slot 0: CPU 0 wrote epoch 10 (stale), CPU 1 epoch 12; slot 1: both epoch 11.
    let a = ring(2, &[(0, 5, 100, 10), (1, -3, 7, 11)]);
    let b = ring(2, &[(0, 6, 200, 12), (1, 9, 8, 11)]);
    let last = kind(1, 2, TseriesAgg::Last, true);
    assert_eq!(points(&last, &[a.clone(), b.clone()]), [(12, 6), (11, 9)]);
    let sum = kind(1, 2, TseriesAgg::Sum, true);
    assert_eq!(points(&sum, &[a.clone(), b.clone()]), [(12, 6), (11, 6)]);
    let min = kind(1, 2, TseriesAgg::Min, true);
    assert_eq!(points(&min, &[a.clone(), b.clone()])[1], (11, -3));
    let max = kind(1, 2, TseriesAgg::Max, true);
    assert_eq!(points(&max, &[a.clone(), b.clone()])[1], (11, 9));
    // Unsigned: -3 is the largest.
    let umax = kind(1, 2, TseriesAgg::Max, false);
    assert_eq!(points(&umax, &[a, b])[1], (11, -3));
    // avg: (sum 10 over 4 values) = 2 and (-7 over 2) = -3 (truncated towards zero).
    let avg = kind(1, 2, TseriesAgg::Avg, true);
    let a = ring(2, &[(0, 4, 2, 3), (1, -7, 2, 4)]);
    let b = ring(2, &[(0, 6, 2, 3)]);
    assert_eq!(points(&avg, &[a, b]), [(3, 2), (4, -3)]);
    // Slots never written have no point; one written in epoch 0 reads as bpftrace reads it.
    assert_eq!(points(&avg, &[ring(2, &[])]), []);
    assert_eq!(points(&last, &[ring(2, &[(1, 7, 1, 0)])]), [(0, 0)]);
}

#[test]
fn rows_cover_the_maps_window_from_the_first_value() {
    // Slots hold epochs 101..=105 except 103; the map's latest epoch is 106.
    let pts = vec![(105, 5), (101, 1), (102, 2), (104, 4)];
    let rows = series_rows(&pts, 10, 5, 106);
    assert_eq!(
        rows,
        [
            (1020, Some(2)),
            (1030, None),
            (1040, Some(4)),
            (1050, Some(5)),
            (1060, None)
        ]
    );
    // A series with nothing in the window shows the last interval, empty.
    assert_eq!(series_rows(&pts, 10, 2, 200), [(2000, None)]);
    // A zeroed series whose map's latest epoch is 0 shows nothing.
    assert_eq!(series_rows(&[], 10, 2, 0), []);
    assert_eq!(series_rows(&[(0, 0)], 10, 2, 0), []);
    assert_eq!(latest_epoch(&pts), 105);
}
