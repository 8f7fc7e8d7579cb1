//! Helper errors shown with their place in the script, and the limit on a full map's
//! warnings: bpftrace warns at every update a full map refuses, so a busy probe writing a
//! full map would print thousands of warnings a second. sonde prints the first
//! [`MAP_FULL_WARNINGS_PER_PLACE`] of each place, then says once that it stops; the count of
//! failed updates (the "map updates failed" line, JSON's `map_full` record, the metric
//! `sonde_map_full_drops`) keeps the total.

use crate::Output;
use sonde_compiler::program::{MAP_FULL_WARNINGS_PER_PLACE, MAP_UPDATE_HELPER};
use sonde_lang::span::Span;
use std::io;

impl Output<'_> {
    /// Shows that helper `helper` failed with `retcode` at `span` (event `id`): every
    /// failure of `-k`'s helpers, the first [`MAP_FULL_WARNINGS_PER_PLACE`] map-full
    /// failures of each place; nothing under `--no-warnings` (which `-k` refuses), in any
    /// format.
    pub(crate) fn helper_error(
        &mut self,
        id: usize,
        helper: &str,
        retcode: i64,
        span: Span,
    ) -> io::Result<()> {
        if sonde_system::warnings::silenced() {
            return Ok(());
        }
        if helper == MAP_UPDATE_HELPER {
            let shown = self.map_full_shown.entry(id).or_insert(0);
            *shown = shown.saturating_add(1);
            if *shown > MAP_FULL_WARNINGS_PER_PLACE {
                if *shown == MAP_FULL_WARNINGS_PER_PLACE + 1 {
                    let place = sonde_system::warnings::place(span);
                    sonde_system::warnings::warn(&format!(
                        "more map updates failed at {} because the map was full; their warnings are not shown (the count of failed updates has them all)",
                        sonde_system::warnings::place_text(&place)
                    ));
                }
                return Ok(());
            }
        }
        self.printer.helper_error(helper, retcode, span)
    }
}
