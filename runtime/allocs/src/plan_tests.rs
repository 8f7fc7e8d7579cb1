use super::*;
use crate::ops::Op;

fn op(call: Call, tid: u32, size: u64, ptr: u64, result: u64) -> Op {
    Op {
        call,
        tid,
        time_ns: 0,
        size,
        align: 0,
        ptr,
        result,
        stack: 0,
    }
}

fn plan(ops: Vec<Op>) -> Plan {
    let ops = ops
        .into_iter()
        .enumerate()
        .map(|(i, o)| Op {
            time_ns: 1000 + i as u64,
            ..o
        })
        .collect();
    Plan::new(&Recording {
        ops,
        ..Recording::default()
    })
}

fn calls(p: &Plan, c: Call) -> u64 {
    p.calls[c.code() as usize]
}

#[test]
fn a_free_of_a_block_from_before_the_recording_is_counted_apart() {
    let p = plan(vec![
        op(Call::Free, 1, 0, 0x500, 0),
        op(Call::Malloc, 1, 100, 0, 0x10),
        op(Call::Free, 1, 0, 0x10, 0),
        op(Call::Free, 1, 0, 0, 0),
    ]);
    assert_eq!(p.pre_attach, 1);
    assert_eq!(p.steps.len(), 3);
    assert_eq!((calls(&p, Call::Malloc), calls(&p, Call::Free)), (1, 2));
    assert_eq!(p.live, vec![100, 0, 0]);
    assert_eq!((p.peak_live, p.end_live), (100, 0));
    // free(NULL) is made, on no slot.
    assert_eq!((p.steps[2].slot, p.steps[2].old), (NO_SLOT, NO_SLOT));
    assert_eq!(p.times, vec![1001, 1002, 1003]);
}

#[test]
fn a_realloc_chain_moves_its_block_from_slot_to_slot() {
    let p = plan(vec![
        op(Call::Realloc, 1, 10, 0, 0x10),
        op(Call::Realloc, 1, 20, 0x10, 0x10),
        op(Call::Realloc, 1, 5000, 0x10, 0x90),
        op(Call::Realloc, 1, 0, 0x90, 0),
    ]);
    assert_eq!(p.slots, 3);
    let slots: Vec<(u32, u32)> = p.steps.iter().map(|s| (s.slot, s.old)).collect();
    assert_eq!(slots, vec![(0, NO_SLOT), (1, 0), (2, 1), (NO_SLOT, 2)]);
    assert_eq!(p.steps[3].flags & REALLOC_FREE, REALLOC_FREE);
    assert_eq!(p.live, vec![10, 20, 5000, 0]);
    assert_eq!(calls(&p, Call::Realloc), 4);
    // A realloc of a block from before the recording is a new block.
    let p = plan(vec![
        op(Call::Realloc, 1, 64, 0x777, 0x20),
        op(Call::Free, 1, 0, 0x20, 0),
    ]);
    assert_eq!((p.pre_attach, p.steps.len(), p.peak_live), (1, 2, 64));
    assert_eq!(p.steps[0].old, NO_SLOT);
}

#[test]
fn failed_calls_are_counted_and_not_replayed() {
    let p = plan(vec![
        op(Call::Malloc, 1, 1 << 50, 0, 0),
        op(Call::Malloc, 1, 8, 0, 0x10),
        op(Call::Realloc, 1, 1 << 50, 0x10, 0),
        op(Call::Calloc, 1, 1 << 50, 0, 0),
        op(Call::Free, 1, 0, 0x10, 0),
    ]);
    assert_eq!(p.failed, 3);
    assert_eq!(p.total_calls(), 2);
    // The block the failed realloc kept is the one freed.
    assert_eq!(p.steps[1].old, 0);
    assert_eq!(p.peak_live, 8);
}

#[test]
fn a_block_freed_by_another_thread_keeps_its_slot() {
    let p = plan(vec![
        op(Call::Malloc, 7, 40, 0, 0x10),
        op(Call::Malloc, 9, 60, 0, 0x20),
        op(Call::Free, 9, 0, 0x10, 0),
        op(Call::Free, 7, 0, 0x20, 0),
    ]);
    assert_eq!(p.threads, vec![7, 9]);
    let t0: Vec<(u64, u32, u32)> = p.thread_steps(0).map(|s| (s.seq, s.slot, s.old)).collect();
    let t1: Vec<(u64, u32, u32)> = p.thread_steps(1).map(|s| (s.seq, s.slot, s.old)).collect();
    assert_eq!(t0, vec![(0, 0, NO_SLOT), (3, NO_SLOT, 1)]);
    assert_eq!(t1, vec![(1, 1, NO_SLOT), (2, NO_SLOT, 0)]);
    assert_eq!(p.live, vec![40, 100, 60, 0]);
    // The program's main thread (tid = pid) is thread 0, whenever it first calls.
    let mut rec = Recording {
        ops: vec![
            op(Call::Malloc, 9, 8, 0, 0x10),
            op(Call::Malloc, 7, 8, 0, 0x20),
        ],
        pid: Some(7),
        ..Recording::default()
    };
    assert_eq!(Plan::new(&rec).threads, vec![7, 9]);
    rec.pid = Some(3);
    assert_eq!(Plan::new(&rec).threads, vec![9, 7]);
}

#[test]
fn an_address_handed_out_twice_frees_the_first_block() {
    let p = plan(vec![
        op(Call::Malloc, 1, 40, 0, 0x10),
        op(Call::Malloc, 1, 50, 0, 0x10),
        op(Call::Free, 1, 0, 0x10, 0),
    ]);
    assert_eq!(p.missed_frees, 1);
    assert_eq!(p.steps[1].flags & IMPLICIT, IMPLICIT);
    assert_eq!(p.total_calls(), 3);
    assert_eq!(p.live, vec![40, 0, 50, 0]);
}

#[test]
fn samples_cover_the_peak_and_the_end() {
    let mut ops = Vec::new();
    for i in 0..5000u64 {
        ops.push(op(Call::Malloc, 1, 16, 0, 0x1000 + i * 16));
    }
    for i in 0..5000u64 {
        ops.push(op(Call::Free, 1, 0, 0x1000 + i * 16, 0));
    }
    let p = plan(ops);
    let sampled: Vec<usize> = (0..p.steps.len())
        .filter(|&i| p.steps[i].flags & SAMPLE != 0)
        .collect();
    assert!(sampled.contains(&4999) && sampled.contains(&9999));
    assert!(
        sampled.len() <= 2002 && sampled.len() >= 1000,
        "{}",
        sampled.len()
    );
    assert_eq!(p.peak_live, 80000);
}
