//! What attaching leaves: one record per live link, by the mechanism that made it, for
//! detaching ([`crate::detach`]).

use aya::programs::fentry::FEntryLinkId;
use aya::programs::fexit::FExitLinkId;
use aya::programs::kprobe::KProbeLinkId;
use aya::programs::perf_event::PerfEventLinkId;
use aya::programs::raw_trace_point::RawTracePointLinkId;
use aya::programs::trace_point::TracePointLinkId;
use aya::programs::uprobe::UProbeLinkId;

/// One live attachment, remembered for detaching.
#[derive(Debug)]
pub struct LinkRecord {
    /// The program's symbol.
    pub symbol: String,
    /// The link.
    pub id: LinkId,
}

/// A link by the mechanism that made it.
#[derive(Debug)]
pub enum LinkId {
    /// A perf event sonde opened itself (a uprobe with a reference counter).
    Owned(std::os::fd::OwnedFd),
    TracePoint(TracePointLinkId),
    RawTracePoint(RawTracePointLinkId),
    PerfEvent(PerfEventLinkId),
    UProbe(UProbeLinkId),
    KProbe(KProbeLinkId),
    FEntry(FEntryLinkId),
    FExit(FExitLinkId),
}
