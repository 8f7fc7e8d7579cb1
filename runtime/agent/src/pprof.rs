//! `GET /debug/pprof/<map>[?seconds=N]`: a map keyed by stacks as a gzipped pprof profile
//! (what Parca and Grafana Alloy scrape, `go tool pprof` reads): the map as it is, or what
//! it counted in the next N seconds (two dumps N seconds apart, their difference).

use crate::http::{Answer, ask_for};
use sonde_export::pprof::{ProfileOptions, delta, profile as encode};
use sonde_export::scrape::{Reply, Request, Scrape};
use std::sync::mpsc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The longest `?seconds=N`.
pub const MAX_SECONDS: u64 = 300;

/// The `seconds` parameter of a query string, if any (an error for a bad one).
fn seconds(url: &str) -> Result<Option<u64>, String> {
    let Some(query) = url.split_once('?').map(|(_, q)| q) else {
        return Ok(None);
    };
    for pair in query.split('&') {
        if let Some(v) = pair.strip_prefix("seconds=") {
            return match v.parse::<u64>() {
                Ok(n) if (1..=MAX_SECONDS).contains(&n) => Ok(Some(n)),
                _ => Err(format!(
                    "seconds must be a whole number from 1 to {MAX_SECONDS}, not {v:?}"
                )),
            };
        }
    }
    Ok(None)
}

/// Nanoseconds since the Unix epoch.
fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

/// The answer to `GET url` (a `/debug/pprof/` path).
pub fn profile(url: &str, tx: &mpsc::Sender<Scrape>) -> Answer {
    let path = url.split('?').next().unwrap_or("");
    let name = path
        .trim_start_matches("/debug/pprof/")
        .trim_start_matches('@');
    let secs = match seconds(url) {
        Ok(s) => s,
        Err(e) => return (400, "text/plain", format!("{e}\n").into_bytes()),
    };
    let dump = |tx| match ask_for(tx, Request::Dump(name.to_string())) {
        Ok(Reply::Dump {
            dump,
            key_names,
            frequency_hz,
        }) => Ok((dump, key_names, frequency_hz)),
        Ok(Reply::Body { .. }) => Err((500, "text/plain", b"unexpected answer\n".to_vec())),
        Err(a) => Err(a),
    };
    let started = now_ns();
    let (mut map, key_names, hz) = match dump(tx) {
        Ok(d) => d,
        Err(a) => return a,
    };
    let mut duration = 0;
    if let Some(n) = secs {
        std::thread::sleep(Duration::from_secs(n));
        let after = match dump(tx) {
            Ok(d) => d.0,
            Err(a) => return a,
        };
        map = delta(&map, &after);
        duration = (n * 1_000_000_000) as i64;
    }
    let opts = ProfileOptions {
        frequency_hz: hz,
        time_nanos: started,
        duration_nanos: duration,
        ..ProfileOptions::default()
    };
    match encode(&map, &key_names, &opts) {
        Ok(body) => (200, "application/octet-stream", body),
        Err(e) => (400, "text/plain", format!("{e}\n").into_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_bounded() {
        assert_eq!(seconds("/debug/pprof/x"), Ok(None));
        assert_eq!(seconds("/debug/pprof/x?seconds=5"), Ok(Some(5)));
        assert!(seconds("/debug/pprof/x?seconds=0").is_err());
        assert!(seconds("/debug/pprof/x?seconds=301").is_err());
        assert!(seconds("/debug/pprof/x?seconds=abc").is_err());
    }
}
