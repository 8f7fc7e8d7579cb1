//! Detaching: every link of a run is released at once, from several threads, so that the
//! kernel's grace periods overlap. (The drivers show a status line while it takes.)

use aya::programs::Program;

use crate::link::{LinkId, LinkRecord};
use crate::load::Loaded;

/// Detaches every probe attached so far (BEGIN and END programs stay loaded, so END can
/// still run). Errors are ignored: a link that cannot be detached is closed on drop.
pub fn detach_probes(loaded: &mut Loaded) {
    let mut owned: Vec<Box<dyn Send>> = Vec::with_capacity(loaded.links.len());
    for LinkRecord { symbol, id } in loaded.links.drain(..) {
        let Some(program) = loaded.ebpf.program_mut(&symbol) else {
            continue;
        };
        let link: Option<Box<dyn Send>> = match (program, id) {
            (_, LinkId::Owned(fd)) => Some(Box::new(fd)),
            (Program::TracePoint(p), LinkId::TracePoint(id)) => {
                p.take_link(id).ok().map(|l| Box::new(l) as _)
            }
            (Program::RawTracePoint(p), LinkId::RawTracePoint(id)) => {
                p.take_link(id).ok().map(|l| Box::new(l) as _)
            }
            (Program::PerfEvent(p), LinkId::PerfEvent(id)) => {
                p.take_link(id).ok().map(|l| Box::new(l) as _)
            }
            (Program::UProbe(p), LinkId::UProbe(id)) => {
                p.take_link(id).ok().map(|l| Box::new(l) as _)
            }
            (Program::KProbe(p), LinkId::KProbe(id)) => {
                p.take_link(id).ok().map(|l| Box::new(l) as _)
            }
            (Program::FEntry(p), LinkId::FEntry(id)) => {
                p.take_link(id).ok().map(|l| Box::new(l) as _)
            }
            (Program::FExit(p), LinkId::FExit(id)) => {
                p.take_link(id).ok().map(|l| Box::new(l) as _)
            }
            _ => None,
        };
        owned.extend(link);
    }
    drop_in_parallel(owned);
}

/// Most threads used to drop links.
const DETACH_THREADS: usize = 64;

/// Drops (detaches) links from several threads. Detaching a tracepoint or perf event waits
/// for an RCU grace period in the kernel; one at a time, hundreds of probes take tens of
/// seconds, while concurrent detaches share their grace periods.
fn drop_in_parallel(links: Vec<Box<dyn Send>>) {
    if links.len() <= 1 {
        return;
    }
    let per_thread = links.len().div_ceil(DETACH_THREADS);
    let mut links = links;
    std::thread::scope(|scope| {
        while !links.is_empty() {
            let chunk: Vec<Box<dyn Send>> = links.drain(..per_thread.min(links.len())).collect();
            scope.spawn(move || drop(chunk));
        }
    });
}
