//! The harness: the process that replays a plan against the allocator it was started with
//! (`LD_PRELOAD`, or none for glibc's) and measures itself.
//!
//! Everything is set up before the replay starts (the plan mapped, the slot table and the
//! block sizes in memory populated at once, the threads started and waiting, the latency
//! histograms and sample arrays allocated), then the baseline is measured and the peak
//! resident set reset, and the threads are let go together. During the replay each thread
//! carries the `marker` name, so that a probe counting system calls by thread name counts
//! the allocator's calls during the replay only.

pub mod latency;
pub mod memory;
mod replay;

use crate::ops::Call;
use crate::plan::SAMPLE;
use crate::planfile::Mapped;
use crate::results::{FnLatency, Results};
use memory::Statm;
use replay::{Measured, Shared};
use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::Barrier;
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::time::Instant;

/// How a replay runs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Threads run their steps without waiting for the recorded order (only for the blocks
    /// they free).
    pub threads_free: bool,
    /// Each page of each block is written after the call that hands it out.
    pub touch: bool,
    /// The name the replay threads carry during the replay (15 bytes at most).
    pub marker: String,
}

/// The name replay threads carry outside the replay.
const IDLE_NAME: &str = "sonde-harness";

/// An anonymous mapping of `n` values of `T` (zero bytes are a valid `T`), populated now.
struct Table<T> {
    base: *mut T,
    len: usize,
    bytes: usize,
}

impl<T> Table<T> {
    fn new(n: usize) -> io::Result<Table<T>> {
        let bytes = (n * std::mem::size_of::<T>()).max(4096);
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Table {
            base: base as *mut T,
            len: n,
            bytes,
        })
    }

    fn slice(&self) -> &[T] {
        unsafe { std::slice::from_raw_parts(self.base, self.len) }
    }

    fn slice_mut(&mut self) -> &mut [T] {
        unsafe { std::slice::from_raw_parts_mut(self.base, self.len) }
    }
}

impl<T> Drop for Table<T> {
    fn drop(&mut self) {
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.bytes) };
    }
}

/// Names the calling thread `name` (truncated to 15 bytes).
fn set_name(name: &str) {
    let mut buf = [0u8; 16];
    let n = name.len().min(15);
    buf[..n].copy_from_slice(&name.as_bytes()[..n]);
    unsafe { libc::prctl(libc::PR_SET_NAME, buf.as_ptr() as libc::c_ulong, 0, 0, 0) };
}

/// The calling thread's name.
fn get_name() -> String {
    let mut buf = [0u8; 16];
    unsafe {
        libc::prctl(
            libc::PR_GET_NAME,
            buf.as_mut_ptr() as libc::c_ulong,
            0,
            0,
            0,
        )
    };
    let n = buf.iter().position(|&b| b == 0).unwrap_or(15);
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// Replays the plan file at `path` in this process and measures it.
pub fn run(path: &Path, opts: &Options) -> io::Result<Results> {
    let plan = Mapped::open(&File::open(path)?)?;
    let slots: Table<AtomicUsize> = Table::new(plan.slots)?;
    let mut sizes: Table<u64> = Table::new(plan.slots)?;
    let mut samples = vec![0usize; plan.threads];
    for (t, count) in samples.iter_mut().enumerate() {
        for s in plan.thread(t) {
            if s.slot != crate::plan::NO_SLOT {
                sizes.slice_mut()[s.slot as usize] = s.size;
            }
            *count += usize::from(s.flags & SAMPLE != 0);
        }
    }
    let statm = Statm::open()?;
    let shared = Shared {
        plan: &plan,
        slots: slots.slice(),
        sizes: sizes.slice(),
        next: AtomicU64::new(0),
        live: AtomicU64::new(0),
        peak_live: AtomicU64::new(0),
        ordered: !opts.threads_free,
        touch: opts.touch,
        statm: &statm,
    };
    let n = plan.threads;
    if n == 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "the plan has no step",
        ));
    }
    // Thread 0 (the recorded program's main thread) runs on this one, as glibc gives the
    // main thread its main arena; the others on threads of their own.
    let (start, end, exit) = (Barrier::new(n), Barrier::new(n), Barrier::new(n));
    let mut measured: Vec<Measured> = samples.iter().map(|&s| Measured::new(s)).collect();
    let mut r = Results::default();
    let (main, others) = measured.split_at_mut(1);
    let base_anon = std::thread::scope(|scope| -> io::Result<u64> {
        let mut handles = Vec::new();
        for (t, m) in others.iter_mut().enumerate() {
            let (sh, start, end, exit) = (&shared, &start, &end, &exit);
            let marker = opts.marker.as_str();
            handles.push(
                std::thread::Builder::new()
                    .name(IDLE_NAME.into())
                    .spawn_scoped(scope, move || {
                        start.wait();
                        set_name(marker);
                        replay::run(sh, t + 1, m);
                        set_name(IDLE_NAME);
                        end.wait();
                        exit.wait();
                    })?,
            );
        }
        let own_name = get_name();
        let base_anon = statm.anon();
        let base_total = memory::status_kb("VmRSS").unwrap_or(base_anon);
        let reset = memory::reset_peak();
        let t0 = Instant::now();
        start.wait();
        set_name(&opts.marker);
        replay::run(&shared, 0, &mut main[0]);
        set_name(&own_name);
        end.wait();
        r.wall_ns = t0.elapsed().as_nanos() as u64;
        r.end_rss = statm.anon().saturating_sub(base_anon);
        let hwm = memory::status_kb("VmHWM").filter(|_| reset);
        exit.wait();
        for h in handles {
            h.join()
                .map_err(|_| io::Error::other("a replay thread panicked"))?;
        }
        r.peak_rss = hwm.map_or(0, |h| h.saturating_sub(base_total));
        Ok(base_anon)
    })?;
    r.baseline_rss = base_anon;
    r.samples = measured
        .iter()
        .flat_map(|m| m.samples.iter())
        .map(|&(seq, live, rss)| (seq, live, rss.saturating_sub(base_anon)))
        .collect();
    r.samples.sort_unstable();
    // Without a peak from the kernel (`VmHWM` not reset), the highest sample.
    let sampled_peak = r.samples.iter().map(|s| s.2).max().unwrap_or(0);
    r.peak_rss = r.peak_rss.max(sampled_peak).max(r.end_rss);
    r.peak_live = shared.peak_live.into_inner();
    r.end_live = shared.live.into_inner();
    summarize(&mut r, &measured);
    r.malloc_from = malloc_from();
    Ok(r)
}

/// The file the dynamic loader took `malloc` from.
fn malloc_from() -> String {
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    let f: unsafe extern "C" fn(usize) -> *mut libc::c_void = libc::malloc;
    if unsafe { libc::dladdr(f as *const libc::c_void, &mut info) } == 0 || info.dli_fname.is_null()
    {
        return String::new();
    }
    unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }
        .to_string_lossy()
        .into_owned()
}

/// The threads' counts, latencies and own system calls, merged.
fn summarize(r: &mut Results, measured: &[Measured]) {
    for call in Call::ALL.into_iter().filter(|c| c.replayed()) {
        let i = call.code() as usize;
        let calls: u64 = measured.iter().map(|m| m.calls[i]).sum();
        if calls == 0 {
            continue;
        }
        r.calls.push((call.name().to_string(), calls));
        let mut l = latency::Latency::default();
        for m in measured {
            l.merge(&m.latency[i]);
        }
        r.latency.push(FnLatency {
            name: call.name().to_string(),
            count: l.count(),
            p50: l.percentile(50.0),
            p99: l.percentile(99.0),
        });
    }
    r.failed = measured.iter().map(|m| m.failed).sum();
    let samples: u64 = measured.iter().map(|m| m.samples.len() as u64).sum();
    r.own_syscalls = vec![
        (
            "sched_yield".into(),
            measured.iter().map(|m| m.yields).sum(),
        ),
        ("pread64".into(), samples),
        ("prctl".into(), measured.len() as u64),
    ];
}

#[cfg(test)]
mod tests;
