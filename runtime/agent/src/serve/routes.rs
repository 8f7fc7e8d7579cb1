//! The agent's HTTP server: the scripts' expositions merged, their maps, their status.

use super::Scripts;
use super::child::State;
use crate::http::PROFILE_TIMEOUT;
use sonde_export::metrics::Format;
use sonde_export::metrics::merge::merge;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;
use tiny_http::{Header, Response, Server};

/// The running server (stopped when dropped).
pub struct AgentServer {
    server: Arc<Server>,
    addr: SocketAddr,
}

impl AgentServer {
    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for AgentServer {
    fn drop(&mut self) {
        self.server.unblock();
    }
}

/// Listens on `addr` and serves `scripts`.
pub fn start(addr: &str, scripts: Scripts) -> Result<AgentServer, String> {
    let (server, bound) = crate::http::listen(addr)?;
    let s = server.clone();
    std::thread::spawn(move || {
        for request in s.incoming_requests() {
            let scripts = scripts.clone();
            std::thread::spawn(move || {
                let accept = request
                    .headers()
                    .iter()
                    .find(|h| h.field.equiv("Accept"))
                    .map(|h| h.value.as_str().to_string());
                let (status, ctype, body) = route(request.url(), accept.as_deref(), &scripts);
                let ctype = Header::from_bytes("Content-Type", ctype).expect("a valid header");
                let _ = request.respond(
                    Response::from_data(body)
                        .with_status_code(status)
                        .with_header(ctype),
                );
            });
        }
    });
    Ok(AgentServer {
        server,
        addr: bound,
    })
}

/// The answer to `url`.
fn route(url: &str, accept: Option<&str>, scripts: &Scripts) -> (u16, &'static str, Vec<u8>) {
    let path = url.split('?').next().unwrap_or("");
    match path {
        "/metrics" => {
            let format = Format::negotiate(accept);
            let bodies: Vec<Vec<u8>> = running(scripts)
                .into_iter()
                .filter_map(|(_, addr)| fetch(&addr, "/metrics", Some(format.content_type())))
                .collect();
            let mut body = merge(&bodies, format);
            if format != Format::Protobuf {
                let own = status_metrics(scripts);
                body = merge(&[own, body], format);
            }
            (200, format.content_type(), body)
        }
        "/maps" => {
            let mut out = String::from("{");
            for (i, (name, addr)) in running(scripts).into_iter().enumerate() {
                let maps = fetch(&addr, "/maps", None).unwrap_or_else(|| b"null".to_vec());
                let sep = if i > 0 { ", " } else { "" };
                out.push_str(&format!(
                    "{sep}{}: {}",
                    serde_json::json!(name),
                    String::from_utf8_lossy(&maps).trim()
                ));
            }
            out.push_str("}\n");
            (200, "application/json", out.into_bytes())
        }
        "/scripts" => (200, "application/json", scripts_json(scripts)),
        p if p.starts_with("/debug/pprof/") => profile(url, scripts),
        "/-/healthy" => (200, "text/plain", b"OK\n".to_vec()),
        _ => (
            404,
            "text/plain",
            format!(
                "no such page: {path}\nsonde serve serves /metrics, /maps, /scripts, /debug/pprof/SCRIPT/MAP, /-/healthy\n"
            )
            .into_bytes(),
        ),
    }
}

/// `/debug/pprof/SCRIPT/MAP[?seconds=N]`: the profile script SCRIPT serves for MAP.
fn profile(url: &str, scripts: &Scripts) -> (u16, &'static str, Vec<u8>) {
    let rest = url.trim_start_matches("/debug/pprof/");
    let (script, map) = rest.split_once('/').unwrap_or((rest, ""));
    let Some((_, addr)) = running(scripts).into_iter().find(|(n, _)| n == script) else {
        return (
            404,
            "text/plain",
            format!("no script {script:?} is running\n").into_bytes(),
        );
    };
    let query = url
        .split_once('?')
        .map_or(String::new(), |(_, q)| format!("?{q}"));
    match fetch(&addr, &format!("/debug/pprof/{map}{query}"), None) {
        Some(body) => (200, "application/octet-stream", body),
        None => (
            502,
            "text/plain",
            format!("script {script:?} gave no profile of {map:?} (see its /debug/pprof/{map})\n")
                .into_bytes(),
        ),
    }
}

/// The scripts serving now, with their addresses.
fn running(scripts: &Scripts) -> Vec<(String, String)> {
    let s = scripts.lock().expect("scripts lock");
    s.values()
        .filter_map(|p| Some((p.name.clone(), p.addr()?)))
        .collect()
}

/// `sonde_serve_script_up{script}`: 1 for a script serving, 0 for one starting or failed.
fn status_metrics(scripts: &Scripts) -> Vec<u8> {
    let s = scripts.lock().expect("scripts lock");
    let mut out = String::from(
        "# HELP sonde_serve_script_up 1 while a script of the agent runs, 0 when it failed\n# TYPE sonde_serve_script_up gauge\n",
    );
    for p in s.values() {
        let up = u8::from(p.addr().is_some());
        out.push_str(&format!(
            "sonde_serve_script_up{{script=\"{}\"}} {up}\n",
            p.name.escape_default()
        ));
    }
    out.into_bytes()
}

/// Every script's state and last errors, as JSON.
fn scripts_json(scripts: &Scripts) -> Vec<u8> {
    let s = scripts.lock().expect("scripts lock");
    let list: Vec<serde_json::Value> = s
        .values()
        .map(|p| {
            let st = p.status.lock().expect("status lock");
            let (state, addr, code) = match &st.state {
                State::Starting => ("starting", None, None),
                State::Running(a) => ("running", Some(a.clone()), None),
                State::Failed(c) => ("failed", None, *c),
            };
            serde_json::json!({
                "name": p.name, "path": p.path.display().to_string(), "state": state,
                "addr": addr, "exit_code": code, "errors": st.errors,
            })
        })
        .collect();
    let mut out = serde_json::to_vec(&list).unwrap_or_default();
    out.push(b'\n');
    out
}

/// `GET http://addr/path` from a script's server: its body when it answers 200 in time.
fn fetch(addr: &str, path: &str, accept: Option<&str>) -> Option<Vec<u8>> {
    let mut s = TcpStream::connect(addr).ok()?;
    // A profile over N seconds takes N seconds, and its first symbolization more.
    s.set_read_timeout(Some(PROFILE_TIMEOUT + Duration::from_secs(300)))
        .ok()?;
    let accept = accept
        .map(|a| format!("Accept: {a}\r\n"))
        .unwrap_or_default();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n{accept}\r\n").ok()?;
    let mut buf = Vec::new();
    s.take(256 << 20).read_to_end(&mut buf).ok()?;
    let split = buf.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&buf[..split]);
    if head.split_whitespace().nth(1) != Some("200") {
        return None;
    }
    Some(buf[split + 4..].to_vec())
}
