//! Detaching: every link of a run is released at once, from several threads, so that the
//! kernel's grace periods overlap; a status line says so on a terminal while it takes.

use std::io;

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
    let status = DetachStatus::show(owned.len());
    drop_in_parallel(owned);
    drop(status);
}

/// Links above which detaching shows a status line: each perf-event link (uprobe, perf
/// tracepoint) takes the kernel ~50 ms to release, one at a time.
const STATUS_LINKS: usize = 20;

/// "Detaching N probes..." on stderr while links are released, when stderr is a terminal and
/// there are enough of them to take a while; the line is erased when dropped.
struct DetachStatus(bool);

impl DetachStatus {
    fn show(links: usize) -> DetachStatus {
        use std::io::{IsTerminal, Write};
        let shown = links > STATUS_LINKS && io::stderr().is_terminal();
        if shown {
            let mut err = io::stderr().lock();
            let _ = write!(err, "Detaching {links} probes...");
            let _ = err.flush();
        }
        DetachStatus(shown)
    }
}

impl Drop for DetachStatus {
    fn drop(&mut self) {
        use std::io::Write;
        if self.0 {
            let mut err = io::stderr().lock();
            let _ = write!(err, "\r\x1b[K");
            let _ = err.flush();
        }
    }
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
