//! Where the maps a run prints come from ([`MapSource`]: the kernel's maps, the userspace
//! engine's, a recording's) and the run's error counters read from them ([`Counts`]).

use sonde_compiler::program::{CompiledScript, MapRole, MapSpec};

/// Raw map entries: key bytes and one value per CPU.
pub type RawEntries = Vec<(Vec<u8>, Vec<Vec<u8>>)>;

/// Where the maps a session prints live.
pub trait MapSource {
    /// The raw entries of a map, or `None` when it cannot be read.
    fn entries(&self, spec: &MapSpec) -> Option<RawEntries>;
    /// At most `limit` raw entries of a map and how many it holds in all (metrics read a
    /// map of a million keys this way: the values of `limit` of them only).
    fn entries_up_to(&self, spec: &MapSpec, limit: usize) -> Option<(RawEntries, usize)> {
        let mut e = self.entries(spec)?;
        let n = e.len();
        e.truncate(limit);
        Some((e, n))
    }
    /// Removes every entry (`clear(@m)`).
    fn clear(&self, spec: &MapSpec);
    /// Zeroes every value (`zero(@m)`).
    fn zero(&self, spec: &MapSpec);
    /// Every error counter (summed over CPUs; [`sonde_compiler::program::Counter::ALL`]'s order).
    fn counters(&self, spec: &MapSpec) -> [u64; 4];
}

/// The error counters of a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Events that did not fit in the ring buffer.
    pub lost_events: u64,
    /// Map updates dropped because a map was full.
    pub map_full: u64,
    /// `for` ranges cut to the `bpf_loop` limit.
    pub loops_cut: u64,
    /// Stacks the stack map could not store (their keys print empty).
    pub stacks_dropped: u64,
    /// Process address-map records the kernel dropped (see
    /// the mmap tracker): user addresses of some processes may not resolve.
    pub maps_lost: u64,
    /// Probe firings the kernel skipped because a BPF program was already running on that
    /// CPU (its recursion guard, `recursion_misses`): events the maps never saw.
    pub probes_skipped: u64,
    /// Exited processes whose address maps were dropped (beyond
    /// [`MAX_EXITED_KEPT`](sonde_system::symbols::procmaps::MAX_EXITED_KEPT)).
    pub maps_evicted: u64,
}

/// The error counters of a run, read from its counters map.
pub fn counters(script: &CompiledScript, maps: &dyn MapSource) -> Counts {
    let Some(spec) = script.maps.iter().find(|m| m.role == MapRole::Counters) else {
        return Counts::default();
    };
    let [lost_events, map_full, loops_cut, stacks_dropped] = maps.counters(spec);
    Counts {
        lost_events,
        map_full,
        loops_cut,
        stacks_dropped,
        ..Counts::default()
    }
}
