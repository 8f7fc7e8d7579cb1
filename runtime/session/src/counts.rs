//! The run's error counters reported as they grow (lost events, full maps, cut loops, ...).

use crate::Output;
use sonde_compiler::program::MapRole;
use sonde_present::output::Counts;

impl Output<'_> {
    /// Reports how much the error counters grew since the last report (lost events, full
    /// maps, cut loops), as they happen: on stderr for text, as records for JSON. The engines
    /// call it as they run with the counters read so far, and [`Output::finish`] with the
    /// final ones, so every increase is reported once.
    pub fn report_counts(&mut self, now: Counts) {
        let new = Counts {
            lost_events: now.lost_events.saturating_sub(self.reported.lost_events),
            map_full: now.map_full.saturating_sub(self.reported.map_full),
            loops_cut: now.loops_cut.saturating_sub(self.reported.loops_cut),
            stacks_dropped: now
                .stacks_dropped
                .saturating_sub(self.reported.stacks_dropped),
            maps_lost: now.maps_lost.saturating_sub(self.reported.maps_lost),
            maps_evicted: now.maps_evicted.saturating_sub(self.reported.maps_evicted),
            probes_skipped: now
                .probes_skipped
                .saturating_sub(self.reported.probes_skipped),
        };
        self.reported = Counts {
            lost_events: self.reported.lost_events.max(now.lost_events),
            map_full: self.reported.map_full.max(now.map_full),
            loops_cut: self.reported.loops_cut.max(now.loops_cut),
            stacks_dropped: self.reported.stacks_dropped.max(now.stacks_dropped),
            maps_lost: self.reported.maps_lost.max(now.maps_lost),
            maps_evicted: self.reported.maps_evicted.max(now.maps_evicted),
            probes_skipped: self.reported.probes_skipped.max(now.probes_skipped),
        };
        if new == Counts::default() || self.closed() {
            return;
        }
        let max = self
            .script
            .maps
            .iter()
            .filter(|m| matches!(m.role, MapRole::User { .. }))
            .map(|m| m.max_entries)
            .max()
            .unwrap_or(0);
        let r = self.printer.counts(new, max);
        self.wrote(r);
    }
}
