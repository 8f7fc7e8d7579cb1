//! A recording turned into what the harness runs: every block's life (from the call that
//! hands it out to the one that frees or reallocates it) is a slot of a table; each thread's
//! steps are listed in the order they took effect, each with its place in the global order;
//! what cannot be replayed (frees of blocks allocated before the recording started, failed
//! calls) is counted apart.
//!
//! [`crate::planfile::write`] writes the binary form the harness maps into memory,
//! so that the replay reads it without allocating.

use crate::ops::{Call, Recording};
use std::collections::HashMap;

/// A step's flag: sample the resident memory after it.
pub const SAMPLE: u8 = 1;
/// A step's flag: a `free` the recording did not show, made because the block's address was
/// handed out again (not timed, not counted as a call).
pub const IMPLICIT: u8 = 2;
/// A step's flag: `realloc(p, 0)` that freed `p` (made as `free(p)`: allocators differ on
/// what `realloc(p, 0)` returns), timed and counted as a `realloc`.
pub const REALLOC_FREE: u8 = 4;

/// No slot (`free(NULL)`, `realloc(NULL, n)`).
pub const NO_SLOT: u32 = u32::MAX;

/// One call the harness makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct Step {
    /// Its place in the global order of the steps (0, 1, ...).
    pub seq: u64,
    /// Bytes asked for.
    pub size: u64,
    /// The alignment asked for (the memalign family).
    pub align: u64,
    /// The slot of the block the call hands out, or [`NO_SLOT`].
    pub slot: u32,
    /// The slot of the block the call frees or reallocates, or [`NO_SLOT`].
    pub old: u32,
    /// [`Call::code`].
    pub call: u8,
    /// [`SAMPLE`], [`IMPLICIT`], [`REALLOC_FREE`].
    pub flags: u8,
    /// The thread's index in [`Plan::threads`].
    pub thread: u16,
    /// Padding to 40 bytes.
    pub pad: u32,
}

/// What a replay runs, and what it leaves out.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    /// The recorded thread ids, in order of their first call.
    pub threads: Vec<u32>,
    /// Every step in the global order.
    pub steps: Vec<Step>,
    /// The number of slots (block lives).
    pub slots: u32,
    /// The recorded time of each step (nanoseconds), for the chart's axis.
    pub times: Vec<u64>,
    /// Bytes alive after each step, as the recorded program had them.
    pub live: Vec<u64>,
    /// Calls replayed, per function (indexed by [`Call::code`]).
    pub calls: [u64; 12],
    /// `free`s and `realloc`s of blocks allocated before the recording started: not replayed
    /// as such (a `realloc` of one is made as `realloc(NULL, n)`).
    pub pre_attach: u64,
    /// Calls that failed in the recorded program (result 0): not replayed.
    pub failed: u64,
    /// Blocks handed out at an address still alive (a `free` the recording missed): freed
    /// before (an [`IMPLICIT`] step).
    pub missed_frees: u64,
    /// Blocks alive at the end.
    pub end_live: u64,
    /// The most bytes alive at once.
    pub peak_live: u64,
}

/// A step of `call` (its `seq` and `thread` are filled in when it is pushed).
fn step(call: Call, size: u64, align: u64, slot: u32, old: u32, flags: u8) -> Step {
    Step {
        seq: 0,
        size,
        align,
        slot,
        old,
        call: call.code(),
        flags,
        thread: 0,
        pad: 0,
    }
}

/// How many samples of resident memory a replay takes, about.
const SAMPLES: usize = 2000;

/// The builder's state: the blocks alive, by address.
struct Builder {
    plan: Plan,
    live_blocks: HashMap<u64, (u32, u64)>,
    thread_index: HashMap<u32, u16>,
    live: u64,
}

impl Builder {
    fn thread(&mut self, tid: u32) -> u16 {
        let next = self.plan.threads.len() as u16;
        *self.thread_index.entry(tid).or_insert_with(|| {
            self.plan.threads.push(tid);
            next
        })
    }

    /// Adds the step `s` (its `seq` and `thread` filled in) made by thread `tid` at `time`.
    fn push(&mut self, tid: u32, time: u64, s: Step) {
        let thread = self.thread(tid);
        let seq = self.plan.steps.len() as u64;
        self.plan.steps.push(Step { seq, thread, ..s });
        if s.flags & IMPLICIT == 0 {
            self.plan.calls[s.call as usize] += 1;
        }
        self.plan.times.push(time);
        self.plan.live.push(self.live);
        self.plan.peak_live = self.plan.peak_live.max(self.live);
    }

    /// A new block at `addr` of `size` bytes: its slot (an old block still there is freed first).
    fn give(&mut self, addr: u64, size: u64, tid: u32, time: u64) -> u32 {
        if let Some((old, old_size)) = self.live_blocks.remove(&addr) {
            self.plan.missed_frees += 1;
            self.live -= old_size;
            self.push(tid, time, step(Call::Free, 0, 0, NO_SLOT, old, IMPLICIT));
        }
        let slot = self.plan.slots;
        self.plan.slots += 1;
        self.live_blocks.insert(addr, (slot, size));
        self.live += size;
        slot
    }

    /// The block at `addr`, taken out of the live ones.
    fn take(&mut self, addr: u64) -> Option<u32> {
        let (slot, size) = self.live_blocks.remove(&addr)?;
        self.live -= size;
        Some(slot)
    }
}

impl Plan {
    /// The plan of a recording.
    pub fn new(rec: &Recording) -> Plan {
        let mut b = Builder {
            plan: Plan::default(),
            live_blocks: HashMap::new(),
            thread_index: HashMap::new(),
            live: 0,
        };
        // The program's main thread first: the harness runs thread 0 on its own main thread.
        if let Some(pid) = rec.pid.filter(|p| rec.ops.iter().any(|o| o.tid == *p)) {
            b.thread(pid);
        }
        for op in rec.ops.iter().filter(|o| o.call.replayed()) {
            let (tid, t) = (op.tid, op.time_ns);
            match op.call {
                Call::Free if op.ptr == 0 => {
                    b.push(tid, t, step(Call::Free, 0, 0, NO_SLOT, NO_SLOT, 0))
                }
                Call::Free => match b.take(op.ptr) {
                    Some(old) => b.push(tid, t, step(Call::Free, 0, 0, NO_SLOT, old, 0)),
                    None => b.plan.pre_attach += 1,
                },
                Call::Realloc => b.realloc(op),
                _ if op.result == 0 => b.plan.failed += 1,
                call => {
                    let slot = b.give(op.result, op.size, tid, t);
                    b.push(tid, t, step(call, op.size, op.align, slot, NO_SLOT, 0));
                }
            }
        }
        let mut plan = b.plan;
        plan.end_live = b.live;
        plan.mark_samples();
        plan
    }

    /// Marks the steps after which the harness samples memory: every n-th, the one that
    /// reaches the peak of live bytes, and the last.
    fn mark_samples(&mut self) {
        let n = self.steps.len();
        let every = n.div_ceil(SAMPLES).max(1);
        let peak = self.live.iter().position(|&l| l == self.peak_live);
        for (i, s) in self.steps.iter_mut().enumerate() {
            if i % every == every - 1 || Some(i) == peak || i + 1 == n {
                s.flags |= SAMPLE;
            }
        }
    }

    /// The steps of thread `index`, in order.
    pub fn thread_steps(&self, index: u16) -> impl Iterator<Item = &Step> {
        self.steps.iter().filter(move |s| s.thread == index)
    }

    /// The number of calls the replay makes (implicit frees left out).
    pub fn total_calls(&self) -> u64 {
        self.calls.iter().sum()
    }
}

impl Builder {
    fn realloc(&mut self, op: &crate::ops::Op) {
        let (tid, t) = (op.tid, op.time_ns);
        if op.ptr != 0 && !self.live_blocks.contains_key(&op.ptr) {
            // A block from before the recording: its new self is a new block.
            self.plan.pre_attach += 1;
            if op.result != 0 {
                let slot = self.give(op.result, op.size, tid, t);
                self.push(tid, t, step(Call::Realloc, op.size, 0, slot, NO_SLOT, 0));
            }
            return;
        }
        if op.result == 0 && !(op.size == 0 && op.ptr != 0) {
            // Failed: the old block stays.
            self.plan.failed += 1;
            return;
        }
        let old = if op.ptr == 0 { None } else { self.take(op.ptr) };
        let old = old.unwrap_or(NO_SLOT);
        if op.result == 0 {
            self.push(
                tid,
                t,
                step(Call::Realloc, 0, 0, NO_SLOT, old, REALLOC_FREE),
            );
            return;
        }
        let slot = self.give(op.result, op.size, tid, t);
        self.push(tid, t, step(Call::Realloc, op.size, 0, slot, old, 0));
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
