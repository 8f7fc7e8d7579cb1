//! sonde-export: a run's maps as what monitoring systems read.
//!
//! Decoded maps ([`sonde_present::output::MapDump`]) go in; Prometheus metrics (the
//! prometheus-client crate's registry, encoded as text, OpenMetrics or protobuf), pprof
//! profiles and JSON come out.
//!
//! *Invariant:* pure encoding. It reads no kernel state, opens no socket and no file; the
//! state it keeps (counters kept monotonic across `clear()`, series caps) is plain data the
//! caller owns. Serving what it encodes is `sonde-agent`'s job.

pub mod maps_json;
pub mod metrics;
pub mod pprof;
pub mod scrape;
