//! sonde-agent: a running script's maps served over HTTP, for Prometheus, profilers and
//! people (`--metrics ADDR`).
//!
//! `GET /metrics` (Prometheus text, OpenMetrics or protobuf, as the `Accept` header asks),
//! `GET /maps` (JSON), `GET /debug/pprof/<map>` (a stack-keyed map as a pprof profile,
//! `?seconds=N` for what it counted in the next N seconds), `GET /-/healthy`. The server
//! answers nothing from the maps itself: each request becomes a
//! [`sonde_export::scrape::Scrape`] that the run loop answers between two batches of events.
//!
//! *Invariant:* sockets and threads only: no map access, no encoding of its own beyond what
//! `sonde-export` gives it; every request ends in bounded time (a run loop that does not
//! answer within [`ANSWER_TIMEOUT`] gets a 503) and at most [`MAX_IN_FLIGHT`] run at once.

pub mod http;
pub mod pprof;
pub mod push;
pub mod serve;
pub mod textfile;

pub use http::{ANSWER_TIMEOUT, MAX_IN_FLIGHT, MetricsServer};
pub use textfile::Textfile;
