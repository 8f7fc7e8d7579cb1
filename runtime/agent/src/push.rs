//! `--push-folded URL`: profiles pushed where pulling does not fit — Pyroscope's `/ingest`
//! in the folded format, one push per interval of what each stack-keyed map counted in it.
//! Pushes go out from a thread of their own (the run loop never waits on the network);
//! when the server is slower than the intervals, pushes are dropped and counted.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError, sync_channel};
use std::time::Duration;

/// How many pushes may wait for the network.
const QUEUE: usize = 16;

/// One push: a profile's folded lines and what it covers.
#[derive(Debug)]
pub struct Push {
    /// The application name (`sonde.<script>.<map>`).
    pub name: String,
    /// When the interval began and ended (Unix seconds).
    pub from: u64,
    /// See `from`.
    pub until: u64,
    /// The sampling frequency (0 when the map is not sampled at a frequency).
    pub sample_rate: u64,
    /// The folded lines, newline-terminated.
    pub body: String,
}

/// The pusher: a queue and the thread that empties it.
#[derive(Debug)]
pub struct Pusher {
    tx: SyncSender<Push>,
    /// Pushes dropped: the queue was full, or the server refused them.
    pub dropped: Arc<AtomicU64>,
}

impl Pusher {
    /// Pushes to `base` (`http://host:port`, Pyroscope's address); an address that is not
    /// plain HTTP is refused here.
    pub fn start(base: &str) -> Result<Pusher, String> {
        let base = base.trim_end_matches('/').to_string();
        if !base.starts_with("http://") {
            return Err(format!("{base}: only http:// addresses are supported"));
        }
        let (tx, rx) = sync_channel::<Push>(QUEUE);
        let dropped = Arc::new(AtomicU64::new(0));
        let d = dropped.clone();
        std::thread::Builder::new()
            .name("sonde-push".into())
            .spawn(move || {
                let agent: ureq::Agent = ureq::Agent::config_builder()
                    .timeout_global(Some(Duration::from_secs(10)))
                    .http_status_as_error(true)
                    .build()
                    .into();
                let mut warned = false;
                for p in rx {
                    if let Err(e) = send(&agent, &base, &p) {
                        d.fetch_add(1, Ordering::Relaxed);
                        if !warned {
                            eprintln!("sonde: warning: --push-folded {base}: {e} (further failures are counted, not shown)");
                            warned = true;
                        }
                    }
                }
            })
            .map_err(|e| format!("cannot start the pusher: {e}"))?;
        Ok(Pusher { tx, dropped })
    }

    /// Queues `p`; counted as dropped when the queue is full.
    pub fn push(&self, p: Push) {
        if let Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) = self.tx.try_send(p) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// `s` percent-encoded for a query string.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'.' | b'-' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The `/ingest` URL of a push.
fn ingest_url(base: &str, p: &Push) -> String {
    let mut url = format!(
        "{base}/ingest?name={}&from={}&until={}&format=folded&spyName=sonde&units=samples&aggregationType=sum",
        encode(&p.name),
        p.from,
        p.until
    );
    if p.sample_rate > 0 {
        url.push_str(&format!("&sampleRate={}", p.sample_rate));
    }
    url
}

/// POSTs one push.
fn send(agent: &ureq::Agent, base: &str, p: &Push) -> Result<(), String> {
    agent
        .post(&ingest_url(base, p))
        .header("Content-Type", "text/plain")
        .send(p.body.as_bytes())
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ingest_urls_say_what_the_push_is() {
        let p = Push {
            name: "sonde.e.cpu{}".into(),
            from: 10,
            until: 20,
            sample_rate: 99,
            body: String::new(),
        };
        assert_eq!(
            ingest_url("http://h:4040", &p),
            "http://h:4040/ingest?name=sonde.e.cpu%7B%7D&from=10&until=20&format=folded&spyName=sonde&units=samples&aggregationType=sum&sampleRate=99"
        );
        assert!(Pusher::start("https://h").is_err());
    }
}
