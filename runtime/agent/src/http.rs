//! The HTTP server of `--metrics` (tiny_http): one thread accepting, one short-lived thread
//! per request, each waiting for the run loop's answer.

use sonde_export::metrics::Format;
use sonde_export::scrape::{Reply, Request, Scrape};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;
use tiny_http::{Header, Response, Server};

/// How long a request waits for the run loop (Prometheus's default scrape timeout).
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a profile's request waits: its stacks' first symbolization reads the symbol
/// tables of every binary they pass through.
pub const PROFILE_TIMEOUT: Duration = Duration::from_secs(60);

/// The most requests handled at once; more get a 503.
pub const MAX_IN_FLIGHT: usize = 16;

/// A running server; dropping it stops it.
pub struct MetricsServer {
    server: Arc<Server>,
    accept: Option<JoinHandle<()>>,
    addr: SocketAddr,
}

/// An HTTP answer: status, content type, body.
pub(crate) type Answer = (u16, &'static str, Vec<u8>);

/// An HTTP server listening on `addr` and the address it is bound to (the port the kernel
/// chose for `:0`), or why it cannot listen (the port in use, an address that is not IP).
pub(crate) fn listen(addr: &str) -> Result<(Arc<Server>, std::net::SocketAddr), String> {
    let server = Server::http(addr).map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let bound = server
        .server_addr()
        .to_ip()
        .ok_or_else(|| format!("cannot listen on {addr}: not an IP address"))?;
    Ok((Arc::new(server), bound))
}

impl MetricsServer {
    /// Listens on `addr` and sends every request's [`Scrape`] to `to_run_loop`. Fails (with
    /// the reason, e.g. the port in use) before anything is traced.
    pub fn start(addr: &str, to_run_loop: mpsc::Sender<Scrape>) -> Result<MetricsServer, String> {
        let (server, bound) = listen(addr)?;
        let s = server.clone();
        let accept = std::thread::Builder::new()
            .name("sonde-metrics".into())
            .spawn(move || accept_loop(&s, &to_run_loop))
            .map_err(|e| format!("cannot start the metrics server: {e}"))?;
        Ok(MetricsServer {
            server,
            accept: Some(accept),
            addr: bound,
        })
    }

    /// The address it listens on (the port chosen when `:0` was asked).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
    }
}

/// Accepts requests until the server is unblocked; each is answered on a thread of its own.
fn accept_loop(server: &Server, to_run_loop: &mpsc::Sender<Scrape>) {
    let in_flight = Arc::new(AtomicUsize::new(0));
    for request in server.incoming_requests() {
        if in_flight.fetch_add(1, Ordering::SeqCst) >= MAX_IN_FLIGHT {
            in_flight.fetch_sub(1, Ordering::SeqCst);
            let _ = request.respond(text(503, "too many requests at once\n"));
            continue;
        }
        let tx = to_run_loop.clone();
        let count = in_flight.clone();
        let spawned = std::thread::Builder::new()
            .name("sonde-scrape".into())
            .spawn(move || {
                let accept = request
                    .headers()
                    .iter()
                    .find(|h| h.field.equiv("Accept"))
                    .map(|h| h.value.as_str().to_string());
                let (status, ctype, body) = route(request.url(), accept.as_deref(), &tx);
                let ctype = Header::from_bytes("Content-Type", ctype).expect("a valid header");
                let response = Response::from_data(body)
                    .with_status_code(status)
                    .with_header(ctype);
                let _ = request.respond(response);
                count.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            in_flight.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// A plain-text response.
fn text(status: u16, body: &str) -> Response<std::io::Cursor<Vec<u8>>> {
    Response::from_data(body.as_bytes().to_vec()).with_status_code(status)
}

/// The answer to a request for `url`.
fn route(url: &str, accept: Option<&str>, tx: &mpsc::Sender<Scrape>) -> Answer {
    let path = url.split('?').next().unwrap_or("");
    match path {
        "/metrics" => ask(tx, Request::Metrics(Format::negotiate(accept))),
        "/maps" => ask(tx, Request::Maps),
        "/-/healthy" => (200, "text/plain", b"OK\n".to_vec()),
        p if p.starts_with("/debug/pprof/") => crate::pprof::profile(url, tx),
        "/" => (200, "text/plain", INDEX.as_bytes().to_vec()),
        _ => (
            404,
            "text/plain",
            format!("no such page: {path}\n{INDEX}").into_bytes(),
        ),
    }
}

/// What the server serves, for `GET /` and unknown pages.
const INDEX: &str = "sonde serves:\n  /metrics                 every map as Prometheus metrics\n  /maps                    every map as JSON\n  /debug/pprof/MAP         a map keyed by stacks as a pprof profile (?seconds=N: what it counts in N seconds)\n  /-/healthy               200 while the script runs\n";

/// Sends `request` to the run loop and waits for its answer (or what to answer the client
/// with).
pub(crate) fn ask_for(tx: &mpsc::Sender<Scrape>, request: Request) -> Result<Reply, Answer> {
    // A dump fails when the map does not exist (404); the whole maps, only when the run
    // cannot read them (500).
    let (timeout, failed) = match request {
        Request::Dump(_) => (PROFILE_TIMEOUT, 404),
        _ => (ANSWER_TIMEOUT, 500),
    };
    let (reply, answer) = mpsc::channel();
    if tx.send(Scrape { request, reply }).is_err() {
        return Err((503, "text/plain", b"the script has ended\n".to_vec()));
    }
    match answer.recv_timeout(timeout) {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(e)) => Err((failed, "text/plain", format!("{e}\n").into_bytes())),
        Err(_) => Err((
            503,
            "text/plain",
            b"the script did not answer in time\n".to_vec(),
        )),
    }
}

/// Sends `request` to the run loop and waits for its answer.
fn ask(tx: &mpsc::Sender<Scrape>, request: Request) -> Answer {
    match ask_for(tx, request) {
        Ok(Reply::Body { content_type, body }) => (200, content_type, body),
        Ok(Reply::Dump { .. }) => (500, "text/plain", b"unexpected answer\n".to_vec()),
        Err(a) => a,
    }
}
