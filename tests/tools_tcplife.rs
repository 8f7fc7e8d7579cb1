//! `sonde tool tcplife`: the test opens a loopback TCP connection from a thread with a known
//! name, sends 300 KiB one way and 70 KiB back, and closes the client first; the tool,
//! filtered on this process with `-p`, shows both ends with the right ports and kilobytes,
//! and `-L PORT` keeps only the server end. `-w` (wide address columns) runs side by side
//! with libbpf-tools' tcplife on IPv6 connections of `tests/targets/tcp_pair.c`, and `-s`
//! (bcc's comma-separated values) on IPv4 ones.

mod common;
mod tools_support;

use common::{
    ATTACH_TIMEOUT, Target, TempDir, Tracer, compile_target, settle, skip_unless_root, trace_target,
};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Mutex;
use std::time::Duration;
use tools_support::libbpf::{installed, side_by_side};

/// The tests of this file run one at a time: each filters on this process.
static SERIAL: Mutex<()> = Mutex::new(());

const CLIENT_TX: usize = 300 * 1024;
const SERVER_TX: usize = 70 * 1024;

/// Runs one connection in a thread named `tcplife-peer`; returns (server port, client port).
fn loopback_session() -> (u16, u16) {
    std::thread::Builder::new()
        .name("tcplife-peer".into())
        .spawn(|| {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let sport = listener.local_addr().unwrap().port();
            let mut client = TcpStream::connect(("127.0.0.1", sport)).unwrap();
            let cport = client.local_addr().unwrap().port();
            let (mut server, _) = listener.accept().unwrap();
            let writer = std::thread::spawn(move || {
                client.write_all(&vec![b'x'; CLIENT_TX]).unwrap();
                let mut back = vec![0u8; SERVER_TX];
                client.read_exact(&mut back).unwrap();
                client
            });
            let mut got = vec![0u8; CLIENT_TX];
            server.read_exact(&mut got).unwrap();
            server.write_all(&vec![b'y'; SERVER_TX]).unwrap();
            let client = writer.join().unwrap();
            // The client closes first; the server then sees EOF and closes (LAST_ACK).
            drop(client);
            let mut rest = Vec::new();
            server.read_to_end(&mut rest).unwrap();
            let _ = server.shutdown(Shutdown::Both);
            drop(server);
            (sport, cport)
        })
        .unwrap()
        .join()
        .unwrap()
}

#[test]
fn tcplife_shows_both_ends_of_a_loopback_session() {
    if skip_unless_root("tcplife_shows_both_ends_of_a_loopback_session") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let pid = std::process::id().to_string();
    let mut all = Tracer::start(&["tool", "tcplife", "-p", &pid]);
    assert!(all.wait_attached(ATTACH_TIMEOUT));
    settle();
    let (sport, cport) = loopback_session();
    std::thread::sleep(Duration::from_millis(300));
    all.interrupt();
    let out = all.finish(Duration::from_secs(10));
    let text = out.ok_stdout();
    let lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(
        lines[0],
        "PID     COMM             LADDR           LPORT RADDR           RPORT TX_KB RX_KB MS"
    );
    let cols = |l: &str| l.split_whitespace().map(String::from).collect::<Vec<_>>();
    let find = |lport: u16| {
        lines[1..]
            .iter()
            .map(|l| cols(l))
            .find(|c| c[3] == lport.to_string())
            .unwrap_or_else(|| panic!("no line with LPORT {lport}:\n{text}"))
    };
    let client = find(cport);
    let server = find(sport);
    let (s, c) = (sport.to_string(), cport.to_string());
    assert_eq!(
        &client[..8],
        [
            &pid,
            "tcplife-peer",
            "127.0.0.1",
            &c,
            "127.0.0.1",
            &s,
            "300",
            "70"
        ],
        "{text}"
    );
    assert_eq!(
        &server[..8],
        [
            &pid,
            "tcplife-peer",
            "127.0.0.1",
            &s,
            "127.0.0.1",
            &c,
            "70",
            "300"
        ],
        "{text}"
    );
    for l in [&client, &server] {
        let (ms, frac) = l[8].split_once('.').expect("MS has two decimals");
        assert!(
            ms.parse::<u64>().is_ok() && frac.len() == 2 && frac.parse::<u64>().is_ok(),
            "{text}"
        );
    }
    assert_eq!(lines.len(), 3, "only this process's two sockets:\n{text}");
}

#[test]
fn tcplife_local_port_filter_keeps_the_server_end() {
    if skip_unless_root("tcplife_local_port_filter_keeps_the_server_end") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Reserve a port by binding and releasing it, then let the session's listener use it.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let lport = port.to_string();
    let mut tracer = Tracer::start(&["tool", "tcplife", "-t", "-4", "-L", &lport]);
    assert!(tracer.wait_attached(ATTACH_TIMEOUT));
    settle();
    let sport = std::thread::Builder::new()
        .name("tcplife-peer".into())
        .spawn(move || {
            let listener = TcpListener::bind(("127.0.0.1", port)).unwrap();
            let mut client = TcpStream::connect(("127.0.0.1", port)).unwrap();
            let (mut server, _) = listener.accept().unwrap();
            client.write_all(b"ping").unwrap();
            let mut buf = [0u8; 4];
            server.read_exact(&mut buf).unwrap();
            drop(client);
            let _ = server.read_to_end(&mut Vec::new());
            drop(server);
            port
        })
        .unwrap()
        .join()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    tracer.interrupt();
    let out = tracer.finish(Duration::from_secs(10));
    let text = out.ok_stdout();
    let lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    assert!(lines[0].starts_with("TIME(s)   PID     COMM"), "{text}");
    assert_eq!(lines.len(), 2, "one server socket:\n{text}");
    let c: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(c[1], std::process::id().to_string(), "{text}");
    assert_eq!(c[4], sport.to_string(), "{text}");
    assert_eq!([c[7], c[8]], ["0", "0"], "4 bytes are 0 KB:\n{text}");
}

/// A loopback port free now (of IPv6's `::1` when `v6`).
fn free_port(v6: bool) -> String {
    let addr = if v6 { "[::1]:0" } else { "127.0.0.1:0" };
    let l = TcpListener::bind(addr).expect("bind a loopback port");
    l.local_addr().expect("its address").port().to_string()
}

/// The load: two connections to `port` of IPv4 (`family` 4) or IPv6 (6), each client
/// sending 3000 bytes, blocked until go.
fn pair(dir: &TempDir, family: &str, port: &str) -> Target {
    let bin = compile_target(dir, "tcp_pair", &["-O2"]);
    Target::spawn(&bin, &[family, port, "2", "3000"])
}

#[test]
fn tcplife_wide_side_by_side_with_libbpf_tools() {
    if skip_unless_root("tcplife_wide_side_by_side_with_libbpf_tools")
        || installed("tcplife").is_none()
    {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("tcplife-wide");
    let port = free_port(true);
    let mut target = pair(&dir, "6", &port);
    let flags = ["-w", "-6"];
    let (sonde, bcc) = side_by_side("tcplife", &flags, &flags, &mut target);
    let mine = sonde.ok_stdout();
    let why = format!("sonde:\n{mine}\nlibbpf-tools:\n{}", bcc.stdout);
    let header = |t: &str| t.lines().next().unwrap_or("").split_whitespace().count();
    let words = |t: &str| -> Vec<String> {
        let first = t.lines().next().unwrap_or("");
        first.split_whitespace().map(String::from).collect()
    };
    assert_eq!(words(mine), words(&bcc.stdout), "{why}");
    assert_eq!(header(mine), 9, "{why}");
    // The rows of the load's port: the same sockets, addresses and ports, and kilobytes (a
    // whole number in sonde, two decimals in libbpf-tools); PID (the task at close), COMM
    // and MS left out.
    let of_port = |t: &str| -> Vec<Vec<String>> {
        let mut rows: Vec<Vec<String>> = t
            .lines()
            .skip(1)
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .filter(|c| c.len() == 9 && (c[3] == port || c[5] == port))
            .map(|c| {
                let kb = |v: &str| (v.parse::<f64>().expect("KB") as u64).to_string();
                vec![
                    c[2].into(),
                    c[3].into(),
                    c[4].into(),
                    c[5].into(),
                    kb(c[6]),
                    kb(c[7]),
                ]
            })
            .collect();
        rows.sort();
        rows
    };
    assert_eq!(of_port(mine), of_port(&bcc.stdout), "{why}");
    assert_eq!(of_port(mine).len(), 4, "two connections, both ends:\n{why}");
    // The address columns are 39 wide: RADDR starts at the same place in every line.
    let lines: Vec<&str> = mine.lines().filter(|l| l.contains(&port)).collect();
    for l in &lines {
        assert_eq!(l.find("::1"), Some(25), "LADDR at column 25: {l:?}\n{why}");
        assert_eq!(
            l.rfind("::1"),
            Some(71),
            "RADDR after 39 + LPORT: {l:?}\n{why}"
        );
    }
}

#[test]
fn tcplife_csv_prints_comma_separated_fields() {
    if skip_unless_root("tcplife_csv_prints_comma_separated_fields") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("tcplife-csv");
    let port = free_port(false);
    let mut target = pair(&dir, "4", &port);
    let out = trace_target(&["tool", "tcplife", "-s", "-t", "-T"], &mut target);
    let text = out.ok_stdout();
    assert_eq!(
        text.lines().next(),
        Some("TIME,TIME(s),PID,COMM,IP,LADDR,LPORT,RADDR,RPORT,TX_KB,RX_KB,MS"),
        "{text}"
    );
    let rows: Vec<Vec<&str>> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|c| c.len() == 12 && (c[6] == port || c[8] == port))
        .collect();
    assert_eq!(rows.len(), 4, "two connections, both ends:\n{text}");
    for r in &rows {
        let why = format!("{r:?}\n{text}");
        assert_eq!(r[0].len(), 8, "HH:MM:SS: {why}");
        let (s, us) = r[1].split_once('.').expect("TIME(s) has decimals");
        assert!(s.parse::<u64>().is_ok() && us.len() == 6, "{why}");
        // The clients send from a child process of the load: PID is one of the two.
        assert!(r[2].parse::<u32>().is_ok(), "{why}");
        assert_eq!((r[3], r[4]), ("tcp_pair", "4"), "{why}");
        assert_eq!((r[5], r[7]), ("127.0.0.1", "127.0.0.1"), "{why}");
        let kb: (u64, u64) = (r[9].parse().unwrap(), r[10].parse().unwrap());
        assert!(kb == (2, 0) || kb == (0, 2), "3000 bytes one way: {why}");
        let (ms, frac) = r[11].split_once('.').expect("MS has two decimals");
        assert!(ms.parse::<u64>().is_ok() && frac.len() == 2, "{why}");
    }
}
