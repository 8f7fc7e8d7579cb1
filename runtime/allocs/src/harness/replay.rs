//! One replay thread: its steps, each call made through the allocator the process was
//! started with and timed alone, in the recorded order (each step waits for the global
//! sequence to reach it) or free-running (a step waits only for the block it frees).

use super::latency::Latency;
use super::memory::Statm;
use crate::ops::Call;
use crate::plan::{IMPLICIT, NO_SLOT, REALLOC_FREE, SAMPLE, Step};
use crate::planfile::Mapped;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

unsafe extern "C" {
    fn memalign(align: usize, size: usize) -> *mut libc::c_void;
    fn valloc(size: usize) -> *mut libc::c_void;
}

/// A slot whose allocation failed in the replay.
const FAILED: usize = 1;

/// What every thread shares: the plan, the slot table, the counters.
pub struct Shared<'a> {
    /// The plan.
    pub plan: &'a Mapped,
    /// Each block's address (0: not handed out yet; [`FAILED`]).
    pub slots: &'a [AtomicUsize],
    /// Each block's size.
    pub sizes: &'a [u64],
    /// The next step of the global order (recorded order only).
    pub next: AtomicU64,
    /// Bytes alive.
    pub live: AtomicU64,
    /// The most bytes alive.
    pub peak_live: AtomicU64,
    /// Whether steps wait for the global order.
    pub ordered: bool,
    /// Whether each page of each block is written.
    pub touch: bool,
    /// Resident memory.
    pub statm: &'a Statm,
}

/// What one thread measured.
#[derive(Default)]
pub struct Measured {
    /// Latencies per function (by [`Call::code`]).
    pub latency: Vec<Latency>,
    /// Calls made per function.
    pub calls: [u64; 12],
    /// Allocations that failed in the replay.
    pub failed: u64,
    /// (step, live bytes, anonymous resident bytes) after each sampled step.
    pub samples: Vec<(u64, u64, u64)>,
    /// The harness's own system calls: `sched_yield` while waiting, `pread64` of samples.
    pub yields: u64,
}

impl Measured {
    /// Room for `samples` samples, made before the replay.
    pub fn new(samples: usize) -> Measured {
        Measured {
            latency: vec![Latency::default(); 12],
            samples: Vec::with_capacity(samples),
            ..Measured::default()
        }
    }
}

/// Spins, then yields, until `ready` holds.
#[inline]
fn wait(m: &mut Measured, ready: impl Fn() -> bool) {
    let mut spins = 0u32;
    while !ready() {
        spins += 1;
        if spins < 200 {
            std::hint::spin_loop();
        } else {
            m.yields += 1;
            unsafe { libc::sched_yield() };
        }
    }
}

/// Writes a byte in each page of `size` bytes at `p`.
fn touch(p: *mut u8, size: u64) {
    let mut off = 0;
    while off < size {
        unsafe { p.add(off as usize).write_volatile(1) };
        off += 4096;
    }
    if size > 0 {
        unsafe { p.add(size as usize - 1).write_volatile(1) };
    }
}

/// Makes the call of `s` on the block `old` (null if none); its result and its duration.
#[inline]
fn call(s: &Step, old: *mut libc::c_void) -> (*mut libc::c_void, u64) {
    let size = s.size as usize;
    let align = (s.align as usize).max(std::mem::size_of::<usize>());
    let start = Instant::now();
    let p = unsafe {
        match Call::from_code(u64::from(s.call)) {
            Some(Call::Malloc) => libc::malloc(size),
            Some(Call::Calloc) => libc::calloc(1, size),
            Some(Call::Realloc) if s.flags & REALLOC_FREE != 0 => {
                libc::free(old);
                std::ptr::null_mut()
            }
            Some(Call::Realloc) => libc::realloc(old, size),
            Some(Call::PosixMemalign) => {
                let mut p = std::ptr::null_mut();
                if libc::posix_memalign(&mut p, align.next_power_of_two(), size) != 0 {
                    p = std::ptr::null_mut();
                }
                p
            }
            Some(Call::AlignedAlloc) => libc::aligned_alloc(align.next_power_of_two(), size),
            Some(Call::Memalign) => memalign(align.next_power_of_two(), size),
            Some(Call::Valloc) => valloc(size),
            _ => {
                libc::free(old);
                std::ptr::null_mut()
            }
        }
    };
    (p, start.elapsed().as_nanos() as u64)
}

/// Runs thread `t`'s steps.
pub fn run(sh: &Shared, t: usize, m: &mut Measured) {
    for s in sh.plan.thread(t) {
        if sh.ordered {
            wait(m, || sh.next.load(Ordering::Acquire) == s.seq);
        } else if s.old != NO_SLOT {
            let slot = &sh.slots[s.old as usize];
            wait(m, || slot.load(Ordering::Acquire) != 0);
        }
        step(sh, s, m);
        if sh.ordered {
            sh.next.store(s.seq + 1, Ordering::Release);
        }
    }
}

/// One step: the call, its block's slot, the live bytes, a sample.
#[inline]
fn step(sh: &Shared, s: &Step, m: &mut Measured) {
    let mut old = std::ptr::null_mut();
    let mut freed = 0;
    if s.old != NO_SLOT {
        let p = sh.slots[s.old as usize].load(Ordering::Acquire);
        if p != FAILED {
            old = p as *mut libc::c_void;
            freed = sh.sizes[s.old as usize];
        }
    }
    let (p, ns) = call(s, old);
    if s.flags & IMPLICIT == 0 {
        m.latency[s.call as usize].record(ns);
        m.calls[s.call as usize] += 1;
    }
    let mut live = if freed > 0 {
        sh.live.fetch_sub(freed, Ordering::Relaxed) - freed
    } else {
        sh.live.load(Ordering::Relaxed)
    };
    if s.slot != NO_SLOT {
        if p.is_null() {
            m.failed += 1;
            sh.slots[s.slot as usize].store(FAILED, Ordering::Release);
        } else {
            if sh.touch {
                touch(p as *mut u8, s.size);
            }
            sh.slots[s.slot as usize].store(p as usize, Ordering::Release);
            live = sh.live.fetch_add(s.size, Ordering::Relaxed) + s.size;
            sh.peak_live.fetch_max(live, Ordering::Relaxed);
        }
    }
    if s.flags & SAMPLE != 0 && m.samples.len() < m.samples.capacity() {
        m.samples.push((s.seq, live, sh.statm.anon()));
    }
}
