//! `sonde tool tcplife`: the test opens a loopback TCP connection from a thread with a known
//! name, sends 300 KiB one way and 70 KiB back, and closes the client first; the tool,
//! filtered on this process with `-p`, shows both ends with the right ports and kilobytes,
//! and `-L PORT` keeps only the server end.

mod common;

use common::{ATTACH_TIMEOUT, Tracer, settle, skip_unless_root};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Mutex;
use std::time::Duration;

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
