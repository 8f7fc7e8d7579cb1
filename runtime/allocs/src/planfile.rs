//! The binary form of a [`Plan`] that the harness maps into memory: a header, a table of
//! each thread's run of steps, then the steps grouped by thread (each run in global order),
//! 40 bytes each, little-endian, as [`Step`] lays them out. Read with no allocation: the
//! harness's steps are slices of the mapping.

use crate::ops::Call;
use crate::plan::{NO_SLOT, Plan, Step};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsRawFd;

/// The first 8 bytes of a plan file.
pub const MAGIC: &[u8; 8] = b"SNDPLAN1";
const HEADER: usize = 32;
const STEP: usize = std::mem::size_of::<Step>();

/// Writes `plan` to `out` in the plan file form.
pub fn write(plan: &Plan, out: &mut impl Write) -> io::Result<()> {
    let threads = plan.threads.len();
    let mut head = Vec::with_capacity(HEADER + threads * 16);
    head.extend_from_slice(MAGIC);
    head.extend_from_slice(&(threads as u32).to_le_bytes());
    head.extend_from_slice(&0u32.to_le_bytes());
    head.extend_from_slice(&u64::from(plan.slots).to_le_bytes());
    head.extend_from_slice(&(plan.steps.len() as u64).to_le_bytes());
    let mut counts = vec![0u64; threads];
    for s in &plan.steps {
        counts[s.thread as usize] += 1;
    }
    let mut start = 0u64;
    for c in &counts {
        head.extend_from_slice(&start.to_le_bytes());
        head.extend_from_slice(&c.to_le_bytes());
        start += c;
    }
    out.write_all(&head)?;
    let mut buf = Vec::with_capacity(64 * 1024);
    for t in 0..threads {
        for s in plan.thread_steps(t as u16) {
            buf.extend_from_slice(&s.seq.to_le_bytes());
            buf.extend_from_slice(&s.size.to_le_bytes());
            buf.extend_from_slice(&s.align.to_le_bytes());
            buf.extend_from_slice(&s.slot.to_le_bytes());
            buf.extend_from_slice(&s.old.to_le_bytes());
            buf.extend_from_slice(&[s.call, s.flags]);
            buf.extend_from_slice(&s.thread.to_le_bytes());
            buf.extend_from_slice(&0u32.to_le_bytes());
            if buf.len() >= 60 * 1024 {
                out.write_all(&buf)?;
                buf.clear();
            }
        }
    }
    out.write_all(&buf)
}

/// A plan file mapped into memory.
pub struct Mapped {
    base: *const u8,
    len: usize,
    /// The number of threads.
    pub threads: usize,
    /// The number of slots.
    pub slots: usize,
    /// The number of steps.
    pub steps: usize,
}

// The mapping is read-only and lives as long as `Mapped`.
unsafe impl Send for Mapped {}
unsafe impl Sync for Mapped {}

impl Drop for Mapped {
    fn drop(&mut self) {
        if self.len > 0 {
            unsafe { libc::munmap(self.base as *mut libc::c_void, self.len) };
        }
    }
}

fn bad(why: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]))
}

impl Mapped {
    /// Maps `file` (read-only, its pages read in now) and checks it whole.
    pub fn open(file: &File) -> io::Result<Mapped> {
        let len = file.metadata()?.len() as usize;
        if len < HEADER {
            return Err(bad(format!(
                "plan file of {len} bytes: shorter than its header"
            )));
        }
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_POPULATE,
                file.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let mut m = Mapped {
            base: base as *const u8,
            len,
            threads: 0,
            slots: 0,
            steps: 0,
        };
        m.check()?;
        Ok(m)
    }

    fn bytes(&self) -> &[u8] {
        unsafe { std::slice::from_raw_parts(self.base, self.len) }
    }

    fn check(&mut self) -> io::Result<()> {
        // The mapping outlives this borrow (it is unmapped on drop only).
        let b = unsafe { std::slice::from_raw_parts(self.base, self.len) };
        if &b[..8] != MAGIC {
            return Err(bad("not a plan file (bad magic at offset 0)".into()));
        }
        let threads = u32::from_le_bytes(b[8..12].try_into().unwrap_or([0; 4])) as usize;
        let slots = u64_at(b, 16) as usize;
        let steps = u64_at(b, 24) as usize;
        let want = threads
            .checked_mul(16)
            .and_then(|t| steps.checked_mul(STEP)?.checked_add(t)?.checked_add(HEADER));
        if want != Some(b.len()) || threads > usize::from(u16::MAX) + 1 {
            return Err(bad(format!(
                "plan file of {} bytes does not hold {threads} threads and {steps} steps",
                b.len()
            )));
        }
        (self.threads, self.slots, self.steps) = (threads, slots, steps);
        let mut next = 0;
        for t in 0..threads {
            let (start, count) = (u64_at(b, HEADER + t * 16), u64_at(b, HEADER + t * 16 + 8));
            if start != next || start.checked_add(count).is_none_or(|e| e > steps as u64) {
                return Err(bad(format!("plan file: thread {t}'s steps out of bounds")));
            }
            next = start + count;
            for s in self.thread(t) {
                let slot_ok = |x: u32| x == NO_SLOT || (x as usize) < slots;
                if Call::from_code(u64::from(s.call)).is_none_or(|c| !c.replayed())
                    || !slot_ok(s.slot)
                    || !slot_ok(s.old)
                    || usize::from(s.thread) != t
                    || s.seq >= steps as u64
                {
                    return Err(bad(format!("plan file: step {} is malformed", s.seq)));
                }
            }
        }
        if next != steps as u64 {
            return Err(bad("plan file: the threads do not cover the steps".into()));
        }
        Ok(())
    }

    /// The steps of thread `t`, in global order.
    pub fn thread(&self, t: usize) -> &[Step] {
        let b = self.bytes();
        let start = u64_at(b, HEADER + t * 16) as usize;
        let count = u64_at(b, HEADER + t * 16 + 8) as usize;
        let at = HEADER + self.threads * 16 + start * STEP;
        // The mapping is page-aligned and every offset a multiple of 8: `Step`'s alignment.
        unsafe { std::slice::from_raw_parts(self.base.add(at) as *const Step, count) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::{Op, Recording};

    #[test]
    fn a_plan_file_maps_back_to_its_steps() {
        let op = |call, tid, ptr, result| Op {
            call,
            tid,
            time_ns: 0,
            size: 32,
            align: 0,
            ptr,
            result,
            stack: 0,
        };
        let rec = Recording {
            ops: vec![
                op(Call::Malloc, 1, 0, 0x10),
                op(Call::Malloc, 2, 0, 0x20),
                op(Call::Free, 2, 0x10, 0),
                op(Call::Free, 1, 0x20, 0),
            ],
            ..Recording::default()
        };
        let plan = Plan::new(&rec);
        let path = std::env::temp_dir().join(format!("sonde-plan-{}", std::process::id()));
        write(&plan, &mut File::create(&path).unwrap()).unwrap();
        let m = Mapped::open(&File::open(&path).unwrap()).unwrap();
        assert_eq!((m.threads, m.slots, m.steps), (2, 2, 4));
        let t0: Vec<Step> = plan.thread_steps(0).copied().collect();
        assert_eq!(m.thread(0), &t0[..]);
        assert_eq!(m.thread(1)[1].seq, 2);
        // A file cut short is refused.
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 8]).unwrap();
        let err = Mapped::open(&File::open(&path).unwrap()).err().unwrap();
        assert!(err.to_string().contains("does not hold"), "{err}");
        std::fs::remove_file(&path).unwrap();
    }
}
