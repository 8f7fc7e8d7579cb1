//! The TCP tools (`tcpstates` and `tcpconnect` on the `sock:inet_sock_set_state` tracepoint,
//! `tcpaccept` on the accept syscalls, `tcpretrans` on `tcp:tcp_retransmit_skb`, `tcptop` on
//! `sock:sock_send_length` and `sock_recv_length`): the load (`tests/targets/tcp_pair.c`) listens on a loopback port the test
//! picks and makes a known number of connections to it, so the tools' lines of that port are
//! known exactly. Side by side with libbpf-tools' namesake where it runs here (tcpstates;
//! tcpconnect needs kprobes): the same header and the same rows.

mod common;
mod tools_support;

use common::{Target, TempDir, compile_target, skip_unless_root, trace_target};
use tools_support::libbpf::{installed, side_by_side};

/// A loopback port free now (of IPv6's `::1` when `v6`).
fn free_port(v6: bool) -> String {
    let addr = if v6 { "[::1]:0" } else { "127.0.0.1:0" };
    let l = std::net::TcpListener::bind(addr).expect("bind a loopback port");
    l.local_addr().expect("its address").port().to_string()
}

/// The load: `n` connections to `port` of IPv4 (`family` 4) or IPv6 (6), blocked until go.
fn load(dir: &TempDir, family: &str, port: &str, n: &str) -> Target {
    let bin = compile_target(dir, "tcp_pair", &["-O2"]);
    Target::spawn(&bin, &[family, port, n])
}

/// Runs `sonde tool TOOL FLAGS` (`PORT` in flags is the load's port) on `n` connections.
fn run(tool: &str, flags: &[&str], family: &str, n: &str) -> (String, String) {
    let dir = TempDir::new(tool);
    let port = free_port(family == "6");
    let mut target = load(&dir, family, &port, n);
    let mut args = vec!["tool", tool];
    let flags: Vec<String> = flags.iter().map(|f| f.replace("PORT", &port)).collect();
    args.extend(flags.iter().map(String::as_str));
    let out = trace_target(&args, &mut target);
    (out.ok_stdout().to_string(), port)
}

/// The lines of `text` with `port` as a whole word, split on whitespace.
fn of_port<'a>(text: &'a str, port: &str) -> Vec<Vec<&'a str>> {
    text.lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|c| c.contains(&port))
        .collect()
}

/// tcpstates' (OLDSTATE, NEWSTATE) of each row, sorted.
fn transitions(rows: &[Vec<&str>]) -> Vec<(String, String)> {
    let mut t: Vec<(String, String)> = rows
        .iter()
        .map(|r| {
            let arrow = r.iter().position(|c| *c == "->").expect("OLD -> NEW");
            (r[arrow - 1].to_string(), r[arrow + 1].to_string())
        })
        .collect();
    t.sort();
    t
}

/// The state changes of one connection on its client side and on its server side.
const CLIENT: [(&str, &str); 5] = [
    ("CLOSE", "SYN_SENT"),
    ("SYN_SENT", "ESTABLISHED"),
    ("ESTABLISHED", "FIN_WAIT1"),
    ("FIN_WAIT1", "FIN_WAIT2"),
    ("FIN_WAIT2", "CLOSE"),
];
const SERVER: [(&str, &str); 5] = [
    ("LISTEN", "SYN_RECV"),
    ("SYN_RECV", "ESTABLISHED"),
    ("ESTABLISHED", "CLOSE_WAIT"),
    ("CLOSE_WAIT", "LAST_ACK"),
    ("LAST_ACK", "CLOSE"),
];
const LISTENER: [(&str, &str); 2] = [("CLOSE", "LISTEN"), ("LISTEN", "CLOSE")];

/// `n` times each of `changes`, sorted as [`transitions`] sorts.
fn times(n: usize, changes: &[&[(&str, &str)]]) -> Vec<(String, String)> {
    let mut t: Vec<(String, String)> = changes
        .iter()
        .flat_map(|c| c.iter())
        .flat_map(|(a, b)| std::iter::repeat_n((a.to_string(), b.to_string()), n))
        .collect();
    t.sort();
    t
}

#[test]
fn tcpstates_prints_each_state_change_of_the_loads_sockets() {
    if skip_unless_root("tcpstates_prints_each_state_change_of_the_loads_sockets") {
        return;
    }
    const HEADER: &str = "SKADDR           PID     COMM       LADDR           LPORT RADDR           RPORT OLDSTATE    -> NEWSTATE    MS";
    let (text, port) = run("tcpstates", &[], "4", "3");
    assert_eq!(text.lines().next(), Some(HEADER), "{text}");
    let rows = of_port(&text, &port);
    let mut want = times(3, &[&CLIENT, &SERVER]);
    want.extend(times(1, &[&LISTENER]));
    want.sort();
    assert_eq!(transitions(&rows), want, "{text}");
    for r in &rows {
        assert!(
            u64::from_str_radix(r[0], 16).is_ok() && r[0].len() == 16,
            "{r:?}"
        );
        assert_eq!(r[3], "127.0.0.1", "{r:?}");
        assert!(["127.0.0.1", "0.0.0.0"].contains(&r[5]), "{r:?}");
        let ms = r.last().expect("MS");
        assert!(
            ms.split_once('.').is_some_and(|(_, f)| f.len() == 3),
            "{r:?}"
        );
    }

    // -L: the local port's changes (the listener's and the server side's); -D: the remote's.
    let (text, port) = run("tcpstates", &["-L", "PORT"], "4", "2");
    let mut want = times(2, &[&SERVER]);
    want.extend(times(1, &[&LISTENER]));
    want.sort();
    assert_eq!(transitions(&of_port(&text, &port)), want, "{text}");
    assert_eq!(
        of_port(&text, &port).len(),
        text.lines().skip(1).filter(|l| !l.is_empty()).count(),
        "{text}"
    );
    let (text, port) = run("tcpstates", &["-D", "1,PORT,3"], "4", "2");
    assert_eq!(
        transitions(&of_port(&text, &port)),
        times(2, &[&CLIENT]),
        "{text}"
    );

    // -6 on an IPv6 load: its changes, with -T's time and -w's IP column; -4: none of them.
    let (text, port) = run("tcpstates", &["-6", "-T", "-w"], "6", "1");
    assert!(
        text.starts_with("TIME(s)  SKADDR           PID     COMM             IP LADDR "),
        "{text}"
    );
    let rows = of_port(&text, &port);
    assert_eq!(rows.len(), 12, "{text}");
    for r in &rows {
        assert!(r[0].len() == 8 && r[0].as_bytes()[2] == b':', "{r:?}");
        assert_eq!(r[4], "6", "{r:?}");
    }
    let (text, port) = run("tcpstates", &["-4"], "6", "1");
    assert!(of_port(&text, &port).is_empty(), "{text}");
}

#[test]
fn tcpstates_side_by_side_with_libbpf_tools() {
    if skip_unless_root("tcpstates_side_by_side_with_libbpf_tools")
        || installed("tcpstates").is_none()
    {
        return;
    }
    for (flags, family) in [(&["-L", "PORT"][..], "4"), (&["-T", "-w"][..], "6")] {
        let dir = TempDir::new("tcpstates-bcc");
        let port = free_port(family == "6");
        let mut target = load(&dir, family, &port, "2");
        let flags: Vec<&str> = flags
            .iter()
            .map(|f| if *f == "PORT" { port.as_str() } else { f })
            .collect();
        let (sonde, bcc) = side_by_side("tcpstates", &flags, &flags, &mut target);
        let mine = sonde.ok_stdout();
        let why = format!("{flags:?}\nsonde:\n{mine}\nbcc:\n{}", bcc.stdout);
        assert_eq!(mine.lines().next(), bcc.stdout.lines().next(), "{why}");
        // The same changes of the same sockets, by the same tasks; the MS column (each
        // tool's own clock) and -T's time left out.
        let strip = |t: &str| -> Vec<Vec<String>> {
            let mut rows: Vec<Vec<String>> = of_port(t, &port)
                .iter()
                .map(|r| {
                    let from = if flags.contains(&"-T") { 1 } else { 0 };
                    r[from..r.len() - 1].iter().map(|c| c.to_string()).collect()
                })
                .collect();
            rows.sort();
            rows
        };
        assert_eq!(strip(mine), strip(&bcc.stdout), "{why}");
        assert_eq!(
            strip(mine).len(),
            if family == "4" { 12 } else { 22 },
            "{why}"
        );
    }
}

#[test]
fn tcpconnect_prints_each_established_connect() {
    if skip_unless_root("tcpconnect_prints_each_established_connect") {
        return;
    }
    // libbpf-tools' tcpconnect needs kprobes: its columns are the reference.
    let (text, port) = run("tcpconnect", &[], "4", "3");
    assert_eq!(
        text.lines().next(),
        Some("PID    COMM         IP SADDR            DADDR            DPORT"),
        "{text}"
    );
    let rows = of_port(&text, &port);
    assert_eq!(rows.len(), 3, "{text}");
    for r in &rows {
        assert_eq!(
            r[1..],
            ["tcp_pair", "4", "127.0.0.1", "127.0.0.1", port.as_str()],
            "{text}"
        );
    }

    // -t -U -s: seconds, uid and source port columns; IPv6.
    let (text, port) = run("tcpconnect", &["-t", "-U", "-s", "-P", "PORT"], "6", "2");
    assert_eq!(
        text.lines().next(),
        Some("TIME(s)  UID   PID    COMM         IP SADDR            DADDR            SPORT DPORT"),
        "{text}"
    );
    let rows = of_port(&text, &port);
    assert_eq!(rows.len(), 2, "{text}");
    assert_eq!(
        rows.len(),
        text.lines().skip(1).filter(|l| !l.is_empty()).count(),
        "-P: {text}"
    );
    for r in &rows {
        assert!(
            r[0].split_once('.').is_some_and(|(_, f)| f.len() == 3),
            "{r:?}"
        );
        assert_eq!(
            [r[1], r[3], r[4], r[5], r[6]],
            ["0", "tcp_pair", "6", "::1", "::1"],
            "{r:?}"
        );
        assert!(
            r[7].parse::<u16>().is_ok_and(|p| p > 0) && r[8] == port,
            "{r:?}"
        );
    }

    // -p, -u: other processes' and users' connects only: none of the load's.
    for flags in [&["-p", "1"][..], &["-u", "12345"]] {
        let (text, port) = run("tcpconnect", flags, "4", "1");
        assert!(of_port(&text, &port).is_empty(), "{flags:?}: {text}");
    }

    // -c: a count per address pair and port, printed at the end.
    let (text, port) = run("tcpconnect", &["-c", "-P", "PORT"], "4", "3");
    let lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(
        lines[0].trim_end(),
        "LADDR                     RADDR                     RPORT                CONNECTS",
        "{text}"
    );
    let counts = of_port(&text, &port);
    assert_eq!(
        counts,
        [vec!["127.0.0.1", "127.0.0.1", port.as_str(), "3"]],
        "{text}"
    );
}

#[test]
fn tcpaccept_prints_each_accepted_connection() {
    if skip_unless_root("tcpaccept_prints_each_accepted_connection") {
        return;
    }
    // bcc's tcpaccept (not in libbpf-tools) is the reference for the columns.
    let (text, port) = run("tcpaccept", &[], "4", "3");
    assert_eq!(
        text.lines().next(),
        Some("PID     COMM         IP RADDR            RPORT LADDR            LPORT"),
        "{text}"
    );
    let rows = of_port(&text, &port);
    assert_eq!(rows.len(), 3, "{text}");
    for r in &rows {
        assert_eq!(
            [r[1], r[2], r[3], r[5], r[6]],
            ["tcp_pair", "4", "127.0.0.1", "127.0.0.1", port.as_str()],
            "{r:?}"
        );
        assert!(r[4].parse::<u16>().is_ok_and(|p| p > 0), "{r:?}");
    }

    // -T -t: time and seconds columns; -6 and -P: the IPv6 load's port only.
    let (text, port) = run("tcpaccept", &["-T", "-t", "-6", "-P", "PORT"], "6", "2");
    assert!(
        text.starts_with("TIME     TIME(s)  PID     COMM         IP RADDR "),
        "{text}"
    );
    let rows = of_port(&text, &port);
    assert_eq!(rows.len(), 2, "{text}");
    assert_eq!(
        rows.len(),
        text.lines().skip(1).filter(|l| !l.is_empty()).count(),
        "-P: {text}"
    );
    for r in &rows {
        assert!(r[0].len() == 8 && r[0].as_bytes()[2] == b':', "{r:?}");
        assert!(
            r[1].split_once('.').is_some_and(|(_, f)| f.len() == 3),
            "{r:?}"
        );
        assert_eq!(
            [r[3], r[4], r[5], r[7]],
            ["tcp_pair", "6", "::1", "::1"],
            "{r:?}"
        );
    }

    // -4 on the IPv6 load, -p of another process: none of the load's.
    for flags in [&["-4"][..], &["-p", "1"]] {
        let (text, port) = run("tcpaccept", flags, "6", "1");
        assert!(of_port(&text, &port).is_empty(), "{flags:?}: {text}");
    }
}

#[test]
fn tcpretrans_prints_the_retransmitted_syn() {
    if skip_unless_root("tcpretrans_prints_the_retransmitted_syn") {
        return;
    }
    // The load's second connect finds the accept queue full: its SYN is retransmitted once.
    // bcc's tcpretrans (not in libbpf-tools) is the reference for the columns.
    let (text, port) = run("tcpretrans", &[], "4", "syn");
    assert_eq!(
        text.lines().next(),
        Some("TIME     PID     IP LADDR:LPORT          T> RADDR:RPORT          STATE"),
        "{text}"
    );
    let dst = format!("127.0.0.1:{port}");
    let lines: Vec<&str> = text.lines().filter(|l| l.contains(&dst)).collect();
    assert_eq!(lines.len(), 1, "{text}");
    let l = lines[0];
    assert_eq!(&l[41..43], "R>", "LADDR:LPORT padded to 20: {l}");
    let cols: Vec<&str> = l.split_whitespace().collect();
    assert_eq!(
        [cols[2], cols[4], cols[5], cols[6]],
        ["4", "R>", dst.as_str(), "SYN_SENT"],
        "{l}"
    );
    assert!(cols[3].starts_with("127.0.0.1:"), "{l}");

    // -c: the count per flow at the end; -6: not this IPv4 flow.
    let (text, port) = run("tcpretrans", &["-c"], "4", "syn");
    let lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(
        lines[0].trim_end(),
        "LADDR:LPORT               RADDR:RPORT               RETRANSMITS",
        "{text}"
    );
    let dst = format!("127.0.0.1:{port}");
    let ours: Vec<Vec<&str>> = lines
        .iter()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|c| c.get(1) == Some(&dst.as_str()))
        .collect();
    assert_eq!(ours.len(), 1, "{text}");
    assert_eq!(ours[0][2], "1", "{text}");
    let (text, port) = run("tcpretrans", &["-6"], "4", "syn");
    assert!(!text.contains(&format!(":{port} ")), "{text}");
}

/// Runs `sonde tool tcptop FLAGS 2 1` (one table, after 2 s) on one connection that sends
/// 200 KiB from a child of the load; returns the output and the port.
fn tcptop(flags: &[&str]) -> (String, String) {
    let dir = TempDir::new("tcptop");
    let port = free_port(false);
    let mut target = load_bytes(&dir, &port, "204800");
    let mut args = vec!["tool", "tcptop"];
    args.extend_from_slice(flags);
    args.extend_from_slice(&["2", "1"]);
    let mut tracer = common::Tracer::start(&args);
    assert!(tracer.wait_attached(common::ATTACH_TIMEOUT));
    common::settle();
    target.go();
    assert_eq!(target.wait(std::time::Duration::from_secs(10)), Some(0));
    let out = tracer.finish(std::time::Duration::from_secs(10));
    (out.ok_stdout().to_string(), port)
}

/// The load with one connection of `bytes` bytes.
fn load_bytes(dir: &TempDir, port: &str, bytes: &str) -> Target {
    let bin = compile_target(dir, "tcp_pair", &["-O2"]);
    Target::spawn(&bin, &["4", port, "1", bytes])
}

#[test]
fn tcptop_prints_the_kilobytes_of_each_connection() {
    if skip_unless_root("tcptop_prints_the_kilobytes_of_each_connection") {
        return;
    }
    // libbpf-tools' tcptop needs kprobes: its columns are the reference.
    let (text, port) = tcptop(&["-C", "-4"]);
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("Tracing... Output every 2 secs. Hit Ctrl-C to end"),
        "{text}"
    );
    let summary = lines.next().unwrap_or_default();
    assert!(summary.get(8..18) == Some(" loadavg: "), "{text}");
    assert_eq!(
        lines.next().map(str::trim_end),
        Some("PID    COMM         LADDR                 RADDR                 RX_KB  TX_KB"),
        "{text}"
    );
    // The client sent 200 KiB, the server received them (within a table: 200 exactly).
    let local = format!("127.0.0.1:{port}");
    let rows = of_conn(&text, &local);
    assert_eq!(rows.len(), 2, "{text}");
    let server: Vec<&Vec<&str>> = rows.iter().filter(|r| r[2] == local).collect();
    let client: Vec<&Vec<&str>> = rows.iter().filter(|r| r[3] == local).collect();
    assert_eq!(server.len(), 1, "{text}");
    assert_eq!(
        [server[0][1], server[0][4], server[0][5]],
        ["tcp_pair", "200", "0"],
        "{text}"
    );
    assert_eq!(
        [client[0][1], client[0][4], client[0][5]],
        ["tcp_pair", "0", "200"],
        "{text}"
    );

    // -s sent: the client's row first; -s received and -r 1: the server's only; -S: no summary.
    let (text, port) = tcptop(&["-C", "-s", "sent"]);
    let rows = of_conn(&text, &format!("127.0.0.1:{port}"));
    assert_eq!(rows[0][5], "200", "{text}");
    let (text, port) = tcptop(&["-C", "-S", "-s", "received", "-r", "1"]);
    assert!(!text.contains("loadavg"), "{text}");
    let local = format!("127.0.0.1:{port}");
    let table: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("PID"))
        .skip(1)
        .collect();
    assert!(
        table[0].contains(&local) && table[1].is_empty(),
        "-r 1: {text}"
    );
    assert_eq!(of_conn(&text, &local)[0][4], "200", "{text}");
    // A bad -s is refused.
    let out = common::run_sonde(&["tool", "tcptop", "-s", "nope"]);
    assert_ne!(out.code, Some(0));
    assert!(
        out.stderr.contains("Invalid sort method: nope"),
        "{}",
        out.stderr
    );
}

/// tcptop's rows of connections to or from `addr` (`127.0.0.1:PORT`), split on whitespace.
fn of_conn<'a>(text: &'a str, addr: &str) -> Vec<Vec<&'a str>> {
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|c| c.len() == 6 && (c[2] == addr || c[3] == addr))
        .collect()
}
