//! The kernel's maps as the printers read them: any [`RawMaps`] (a loaded script's maps, a
//! live session's pinned ones) as a [`MapSource`].

use sonde_compiler::program::{Counter, MapSpec};
use sonde_kernel::maps::RawMaps;
use sonde_present::output::{MapSource, RawEntries};

/// [`RawMaps`] as the printers' [`MapSource`].
pub struct Source<T>(pub T);

impl<T: RawMaps> MapSource for Source<T> {
    fn entries(&self, spec: &MapSpec) -> Option<RawEntries> {
        self.0.raw(spec)?.entries().ok()
    }
    fn entries_up_to(&self, spec: &MapSpec, limit: usize) -> Option<(RawEntries, usize)> {
        let m = self.0.raw(spec)?;
        let keys = m.keys().ok()?;
        let n = keys.len();
        // A key deleted by the program since `keys()` is skipped.
        let e = keys
            .into_iter()
            .take(limit)
            .filter_map(|k| Some((k.clone(), m.lookup_slots(&k).ok()??)))
            .collect();
        Some((e, n))
    }
    fn clear(&self, spec: &MapSpec) {
        if let Some(m) = self.0.raw(spec) {
            let _ = m.clear();
        }
    }
    fn zero(&self, spec: &MapSpec) {
        if let Some(m) = self.0.raw(spec) {
            let _ = m.zero();
        }
    }
    fn counters(&self, spec: &MapSpec) -> [u64; 4] {
        // One element: every counter's u64 at its offset.
        let value = self
            .0
            .raw(spec)
            .and_then(|m| m.lookup(&0u32.to_le_bytes()).ok().flatten())
            .unwrap_or_default();
        Counter::decode_all(&value)
    }
}
