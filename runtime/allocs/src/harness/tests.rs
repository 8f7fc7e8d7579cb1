use super::*;
use crate::ops::{Op, Recording};
use crate::plan::Plan;

/// Two threads: each allocates blocks the other frees, with a realloc chain and a failed
/// call between.
fn recording() -> Recording {
    let mut ops = Vec::new();
    let op = |call, tid, size, ptr, result| Op {
        call,
        tid,
        time_ns: 0,
        size,
        align: 0,
        ptr,
        result,
        stack: 0,
    };
    for i in 0..200u64 {
        let tid = 10 + (i % 2) as u32;
        ops.push(op(Call::Malloc, tid, 1000 + i, 0, 0x10_0000 + i * 0x1000));
    }
    ops.push(op(Call::Malloc, 10, 1 << 50, 0, 0));
    ops.push(op(Call::Realloc, 10, 70_000, 0x10_0000, 0x90_0000));
    ops.push(op(Call::Calloc, 11, 64, 0, 0x91_0000));
    ops.push(op(Call::PosixMemalign, 11, 64, 0, 0x92_0000));
    for i in 1..200u64 {
        let tid = 10 + ((i + 1) % 2) as u32;
        ops.push(op(Call::Free, tid, 0, 0x10_0000 + i * 0x1000, 0));
    }
    ops.push(op(Call::Free, 11, 0, 0x90_0000, 0));
    for (i, o) in ops.iter_mut().enumerate() {
        o.time_ns = i as u64;
        if o.call == Call::PosixMemalign {
            o.align = 64;
        }
    }
    Recording {
        ops,
        ..Recording::default()
    }
}

fn replay(opts: &Options) -> (Plan, Results) {
    let plan = Plan::new(&recording());
    let path = std::env::temp_dir().join(format!(
        "sonde-harness-{}-{}",
        std::process::id(),
        opts.threads_free
    ));
    crate::planfile::write(&plan, &mut File::create(&path).unwrap()).unwrap();
    let r = run(&path, opts).unwrap();
    std::fs::remove_file(&path).unwrap();
    (plan, r)
}

#[test]
fn a_replay_in_recorded_order_makes_the_recorded_calls() {
    let opts = Options {
        touch: true,
        marker: "sonde-test-rp".into(),
        ..Options::default()
    };
    let (plan, r) = replay(&opts);
    assert_eq!(plan.failed, 1);
    for call in [
        Call::Malloc,
        Call::Realloc,
        Call::Calloc,
        Call::Free,
        Call::PosixMemalign,
    ] {
        assert_eq!(
            r.calls_of(call),
            plan.calls[call.code() as usize],
            "{call:?}"
        );
    }
    assert_eq!(r.calls_of(Call::Malloc), 200);
    assert_eq!(r.failed, 0);
    assert_eq!((r.peak_live, r.end_live), (plan.peak_live, plan.end_live));
    assert_eq!(r.end_live, 128);
    // In recorded order, every sample's live bytes are the plan's at that step.
    assert!(!r.samples.is_empty());
    for &(seq, live, _) in &r.samples {
        assert_eq!(live, plan.live[seq as usize], "step {seq}");
    }
    let malloc = r.latency.iter().find(|l| l.name == "malloc").unwrap();
    assert_eq!(malloc.count, 200);
    assert!(malloc.p50 > 0 && malloc.p99 >= malloc.p50);
    assert!(r.wall_ns > 0);
    assert!(r.malloc_from.contains("libc"), "{}", r.malloc_from);
}

#[test]
fn a_free_running_replay_makes_the_same_calls() {
    let opts = Options {
        threads_free: true,
        marker: "sonde-test-fr".into(),
        ..Options::default()
    };
    let (plan, r) = replay(&opts);
    assert_eq!(r.calls.iter().map(|c| c.1).sum::<u64>(), plan.total_calls());
    assert_eq!(r.end_live, plan.end_live);
}
