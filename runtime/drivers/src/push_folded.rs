//! `--push-folded URL`: every interval, what each map keyed by stacks counted since the
//! last push, as folded lines, handed to the agent's pusher (Pyroscope's `/ingest`).

use sonde_agent::push::{Push, Pusher};
use sonde_compiler::program::MapRole;
use sonde_export::scrape::{Reply, Request};
use sonde_present::output::{MapDump, MapSource};
use sonde_session::Output;
use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The state of the pushes of one run.
#[derive(Debug)]
pub struct FoldedPush {
    pusher: Pusher,
    script: String,
    every: Duration,
    next: Instant,
    /// Each map as the last push saw it, and when that was (Unix seconds).
    last: HashMap<String, MapDump>,
    since: u64,
}

/// Unix seconds now.
fn now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl FoldedPush {
    /// Pushes to `url` every `every` the maps of `script` (its name in metric names).
    pub fn start(url: &str, script: &str, every: Duration) -> Result<FoldedPush, String> {
        Ok(FoldedPush {
            pusher: Pusher::start(url)?,
            script: script.to_string(),
            every,
            next: Instant::now() + every,
            last: HashMap::new(),
            since: now_s(),
        })
    }

    /// Pushes if an interval has passed (or `last`: the run ends).
    pub fn tick(&mut self, out: &mut Output<'_>, maps: &dyn MapSource, last: bool) {
        if !last && Instant::now() < self.next {
            return;
        }
        self.next = Instant::now() + self.every;
        let until = now_s().max(self.since + 1);
        let names: Vec<String> = out
            .script()
            .maps
            .iter()
            .filter_map(|m| match &m.role {
                MapRole::User {
                    name, key: Some(k), ..
                } if sonde_session::has_stack(k) => Some(name.clone()),
                _ => None,
            })
            .collect();
        for name in names {
            let Ok(Reply::Dump {
                dump, frequency_hz, ..
            }) = out.answer(&Request::Dump(name.clone()), maps, Default::default())
            else {
                continue;
            };
            let counted = match self.last.get(&name) {
                Some(before) => sonde_export::pprof::delta(before, &dump),
                None => dump.clone(),
            };
            self.last.insert(name.clone(), dump);
            let Some(lines) = sonde_present::output::folded::folded_lines(&counted, out.resolver())
            else {
                continue;
            };
            if lines.is_empty() {
                continue;
            }
            let map = if name.is_empty() { "map" } else { &name };
            self.pusher.push(Push {
                name: format!("sonde.{}.{map}", self.script),
                from: self.since,
                until,
                sample_rate: frequency_hz,
                body: lines.join("\n") + "\n",
            });
        }
        self.since = until;
    }

    /// Pushes dropped so far (queue full, server errors).
    pub fn dropped(&self) -> u64 {
        self.pusher
            .dropped
            .load(std::sync::atomic::Ordering::Relaxed)
    }
}
