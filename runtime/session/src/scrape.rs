//! A running script's maps served while it runs (`--metrics`): the answers to a server's
//! [`Scrape`]s, and counters kept across `clear()`/`zero()` by the exporter
//! ([`sonde_export::metrics::Exporter`]).

use crate::Output;
use sonde_compiler::program::MapRole;
use sonde_export::metrics::{Exporter, RunStats, encode};
use sonde_export::scrape::{Reply, Request, Scrape, Scrapes};
use sonde_present::output::{MapDump, MapSource};
use std::time::Instant;

/// What the session keeps for the metrics of a run.
pub(crate) struct Metrics {
    exporter: Exporter,
    /// Event records handled so far.
    pub events: u64,
    /// How long the last scrape took.
    last_scrape: f64,
}

impl Output<'_> {
    /// Exports the run's maps as metrics through `exporter` (`--metrics`).
    pub fn set_metrics(&mut self, exporter: Exporter) {
        self.metrics = Some(Metrics {
            exporter,
            events: 0,
            last_scrape: 0.0,
        });
    }

    /// Every user map, read and decoded now.
    fn current_maps(&self, maps: &dyn MapSource) -> Vec<MapDump> {
        self.decode_maps(self.raw_user_maps(maps))
    }

    /// Every user map, read now up to `cap` entries, with how many each holds in all.
    fn capped_maps(&self, maps: &dyn MapSource, cap: usize) -> Vec<(MapDump, usize)> {
        self.script
            .maps
            .iter()
            .filter_map(|m| match &m.role {
                MapRole::User { name, .. } => {
                    let (raw, total) = maps.entries_up_to(m, cap)?;
                    Some((self.dump(name, raw)?, total))
                }
                _ => None,
            })
            .collect()
    }

    /// Map `name` is about to be cleared or zeroed: the exporter keeps its counters.
    pub(crate) fn before_reset(&mut self, name: &str, maps: &dyn MapSource) {
        if self.metrics.is_none() {
            return;
        }
        let Some(dump) = self
            .user_map(name)
            .and_then(|s| maps.entries(s))
            .and_then(|e| self.dump(name, e))
        else {
            return;
        };
        if let Some(m) = self.metrics.as_mut() {
            m.exporter.before_reset(&dump, self.resolver.as_ref());
        }
    }

    /// Answers every scrape waiting in `scrapes` with the maps as they are now; `stats` are
    /// the run's own figures (probes, lost events, full maps).
    pub fn answer_scrapes(&mut self, scrapes: &Scrapes, maps: &dyn MapSource, stats: RunStats) {
        while let Ok(Scrape { request, reply }) = scrapes.try_recv() {
            let started = Instant::now();
            let answer = self.answer(&request, maps, stats);
            if let Some(m) = self.metrics.as_mut() {
                m.last_scrape = started.elapsed().as_secs_f64();
            }
            // The server may have given up waiting: nothing to do then.
            let _ = reply.send(answer);
        }
    }

    /// One request's answer, with the maps as they are now.
    pub fn answer(
        &mut self,
        request: &Request,
        maps: &dyn MapSource,
        stats: RunStats,
    ) -> Result<Reply, String> {
        match request {
            Request::Metrics(format) => {
                let cap = self.metrics.as_ref().map_or(0, |m| m.exporter.max_series());
                let dumps = self.capped_maps(maps, cap);
                let Some(m) = self.metrics.as_mut() else {
                    return Err("this run exports no metrics".into());
                };
                let stats = RunStats {
                    events: m.events,
                    last_scrape_seconds: m.last_scrape,
                    ..stats
                };
                let families = m.exporter.families(&dumps, self.resolver.as_ref(), &stats);
                Ok(Reply::Body {
                    content_type: format.content_type(),
                    body: encode(families, *format)?,
                })
            }
            Request::Maps => Ok(Reply::Body {
                content_type: "application/json",
                body: sonde_export::maps_json::maps_json(
                    &self.current_maps(maps),
                    self.resolver.as_ref(),
                ),
            }),
            Request::Dump(name) => {
                let spec = self
                    .user_map(name)
                    .ok_or_else(|| format!("the script has no map @{name}"))?;
                let entries = maps
                    .entries(spec)
                    .ok_or_else(|| format!("cannot read @{name}"))?;
                let dump = self
                    .dump(name, entries)
                    .ok_or_else(|| format!("cannot decode @{name}"))?;
                Ok(Reply::Dump {
                    dump,
                    key_names: self
                        .metrics
                        .as_ref()
                        .map(|m| m.exporter.key_names(name))
                        .unwrap_or_default(),
                    frequency_hz: profile_frequency(self.script),
                })
            }
        }
    }
}

/// The frequency of the script's sampling probe (`profile:hz:N`), 0 without one.
fn profile_frequency(script: &sonde_compiler::program::CompiledScript) -> u64 {
    use sonde_compiler::program::{AttachSpec, PerfSample};
    script
        .programs
        .iter()
        .flat_map(|p| &p.attach)
        .find_map(|a| match a.spec {
            AttachSpec::PerfEvent {
                sample: PerfSample::Frequency(hz),
                ..
            } => Some(hz),
            _ => None,
        })
        .unwrap_or(0)
}

/// What a run serves while it runs (`--metrics`, `--metrics-file`), as both engines' run
/// loops call it: given the output once it exists, then at each tick.
pub trait Served {
    /// Hands what the output needs (the exporter) to it.
    fn attach(&mut self, out: &mut Output<'_>);
    /// Answers what waits (scrapes, a file due) with the maps as they are now; `last` when
    /// the run ends.
    fn serve(&mut self, out: &mut Output<'_>, maps: &dyn MapSource, stats: RunStats, last: bool);
}
