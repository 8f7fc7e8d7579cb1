//! Parallel input: when the `input` probes only aggregate (every map they touch is per-CPU,
//! they print nothing and read neither `nr` nor merged aggregation values), lines are
//! processed by several worker threads, each with its own slot of every per-CPU map — as the
//! kernel runs one program on several CPUs — and the printers merge the slots. The only
//! events they send are warnings (a full map's, [`WARNING_OUTPUT_FLAGS`]), each worker's
//! queued until its end and handled then.
//!
//! The main thread reads the input in large chunks cut at line ends and hands them out; the
//! workers run the probes on each line of their chunks.

use super::host::Host;
use super::input::{FieldSep, MAX_LINE, Record};
use super::store::HostMaps;
use sonde_compiler::compile::Compiled;
use sonde_compiler::ir::Operand;
use sonde_compiler::ir::{Inst, Intrinsic};
use sonde_compiler::jit::ProbeFn;
use sonde_compiler::program::{MapKind, MapRole, WARNING_OUTPUT_FLAGS};
use std::io::Read;
use std::sync::mpsc;

/// Bytes per chunk handed to a worker.
const CHUNK: usize = 1 << 20;

/// Bytes of warnings a worker queues (a full map sends a few per place and worker: 11 ×
/// 128 places × 24 bytes is 33 KiB); beyond, they are counted as lost events.
const WARNINGS_CAP: usize = 64 << 10;

/// Whether `progs` may run on several threads at once: they only update per-CPU maps (and
/// the error counters), emit no event but warnings, and read nothing another thread writes.
pub fn eligible(compiled: &Compiled, progs: &[usize]) -> bool {
    let maps = &compiled.script.maps;
    progs.iter().all(|&p| {
        let Some(l) = compiled.ir.get(p) else {
            return false;
        };
        std::iter::once(&l.main)
            .chain(&l.callbacks)
            .flat_map(|f| &f.insts)
            .all(|(inst, _)| match inst {
                Inst::MapHandle { map, .. } | Inst::MapValue { map, .. } => {
                    maps.get(map.0 as usize).is_some_and(|m| {
                        m.kind.per_cpu()
                            || (m.role == MapRole::Counters && m.kind == MapKind::Array)
                            // Only warnings are sent (below).
                            || m.role == MapRole::Events
                    })
                }
                Inst::Call {
                    func: Intrinsic::RingbufOutput,
                    args,
                    ..
                } => args.get(3) == Some(&Operand::Imm(WARNING_OUTPUT_FLAGS)),
                Inst::Call { func, .. } => !matches!(
                    func,
                    Intrinsic::MapLookupPercpu
                        | Intrinsic::ForEachMapElem
                        | Intrinsic::InputRecordNumber
                ),
                _ => true,
            })
    })
}

/// What the workers of a parallel run leave.
pub struct Done {
    /// Each worker's maps (their per-CPU slots and counters).
    pub maps: Vec<HostMaps>,
    /// The warnings' event records the workers queued, one worker's after another's, each
    /// a `u32` length and the record, as the host queues them.
    pub warnings: Vec<u8>,
    /// The number of lines read.
    pub lines: u64,
}

/// Runs `progs` on every line of `input` with `workers` threads. Returns what the workers
/// leave ([`Done`]), and the read error if any.
pub fn run(
    input: &mut dyn Read,
    entries: &[ProbeFn],
    specs: &[sonde_compiler::program::MapSpec],
    sep: &FieldSep,
    workers: usize,
    stop: &dyn Fn() -> bool,
) -> (Done, std::io::Result<()>) {
    let mut senders = Vec::new();
    let mut handles = Vec::new();
    for _ in 0..workers {
        let (tx, rx) = mpsc::sync_channel::<Vec<u8>>(4);
        senders.push(tx);
        let entries = entries.to_vec();
        let specs = specs.to_vec();
        let sep = sep.clone();
        handles.push(std::thread::spawn(move || {
            let mut host = Host::new(HostMaps::new(&specs), Record::new(sep), WARNINGS_CAP);
            for chunk in rx {
                host.enter(|| {
                    let mut start = 0;
                    let ends = memchr::memchr_iter(b'\n', &chunk).chain([chunk.len()]);
                    for end in ends {
                        let mut line = &chunk[start..end];
                        if line.len() > MAX_LINE {
                            // Carried over a read, a line may pass the bound here.
                            super::input::long_line_warning(MAX_LINE);
                            line = &line[..MAX_LINE];
                        }
                        // SAFETY: host functions reach this thread's host, set by `enter`.
                        unsafe { (*super::host::current()).record.set(line) };
                        start = end + 1;
                        for f in &entries {
                            // SAFETY: compiled for these maps and intrinsics; no context.
                            unsafe { f(std::ptr::null_mut()) };
                        }
                    }
                });
                host.maps.release();
            }
            (host.maps, host.events, host.record.nr)
        }));
    }
    let mut carry: Vec<u8> = Vec::new();
    // True while the rest of a line cut at MAX_LINE is skipped.
    let mut skipping = false;
    let mut next = 0;
    let mut result = Ok(());
    loop {
        if stop() {
            break;
        }
        let mut buf = std::mem::take(&mut carry);
        let start = buf.len();
        buf.resize(start + CHUNK, 0);
        let n = match read_some(input, &mut buf[start..]) {
            Ok(n) => n,
            Err(e) => {
                result = Err(e);
                break;
            }
        };
        buf.truncate(start + n);
        if skipping {
            match memchr::memchr(b'\n', &buf) {
                Some(i) => {
                    buf.drain(..=i);
                    skipping = false;
                }
                None if n == 0 => break,
                None => continue,
            }
        }
        if n == 0 {
            if !buf.is_empty() {
                let _ = senders[next].send(buf);
            }
            break;
        }
        // Hand out complete lines; keep the tail for the next read (a line longer than
        // MAX_LINE is one record of its first MAX_LINE bytes, the rest skipped, as the
        // sequential reader does).
        let cut = match memchr::memrchr(b'\n', &buf) {
            Some(i) => i + 1,
            None if buf.len() > MAX_LINE => {
                super::input::long_line_warning(MAX_LINE);
                buf.truncate(MAX_LINE);
                skipping = true;
                buf.len()
            }
            None => {
                carry = buf;
                continue;
            }
        };
        carry = buf[cut..].to_vec();
        buf.truncate(cut);
        if buf.last() == Some(&b'\n') {
            buf.pop();
        }
        if senders[next].send(buf).is_err() {
            break;
        }
        next = (next + 1) % workers;
    }
    drop(senders);
    let mut done = Done {
        maps: Vec::new(),
        warnings: Vec::new(),
        lines: 0,
    };
    for (m, events, n) in handles.into_iter().filter_map(|h| h.join().ok()) {
        done.maps.push(m);
        done.warnings.extend(events);
        done.lines += n;
    }
    (done, result)
}

/// Reads into `buf`, retrying on EINTR unless a stop was requested.
fn read_some(input: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    loop {
        match input.read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {
                if sonde_system::signals::stop_requested() {
                    return Ok(0);
                }
            }
            r => return r,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::eligible;
    use sonde_compiler::compile::{Compiled, Engine, compile_for};
    use sonde_compiler::options::CompileOptions;
    use sonde_lang::sema::{CheckOptions, check};
    use sonde_lang::testing::FixtureKernel;

    fn compiled(src: &str) -> Compiled {
        let program = sonde_lang::syntax::parse(src).expect("parses");
        let (checked, diags) = check(
            &program,
            &sonde_compiler::catalog::SondeCatalog,
            &FixtureKernel,
            &CheckOptions::default(),
        );
        assert!(diags.iter().all(|d| !d.is_error()), "{diags:?}");
        let opts = CompileOptions {
            ncpus: 1,
            ..Default::default()
        };
        compile_for(&program, &checked, &FixtureKernel, &opts, Engine::Jit).expect("compiles")
    }

    #[test]
    fn aggregations_run_in_parallel_with_their_map_full_warnings_but_printf_does_not() {
        // An insert sends a warning when the map is full: that alone keeps a probe parallel.
        let agg = compiled("input { @[field(1)] = count(); @s = sum(1); }");
        assert!(eligible(&agg, &[0]));
        let printf = compiled("input { @[field(1)] = count(); printf(\"x\\n\"); }");
        assert!(!eligible(&printf, &[0]));
        // A map every thread writes is not per-CPU.
        assert!(!eligible(&compiled("input { @m[field(1)] = 1; }"), &[0]));
    }
}
