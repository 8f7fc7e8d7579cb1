//! `sonde tool gethostlatency`: a test program resolves "localhost" with getaddrinfo() three
//! times and gethostbyname() once; the tool, filtered with `-p`, prints those four lookups.

mod common;
mod tools_support;

use common::{ATTACH_TIMEOUT, Target, TempDir, Tracer, settle, skip_unless_root};
use std::time::Duration;
use tools_support::build_work;

#[test]
fn gethostlatency_shows_each_localhost_lookup() {
    if skip_unless_root("gethostlatency_shows_each_localhost_lookup") {
        return;
    }
    let dir = TempDir::new("gethost");
    let bin = build_work(&dir);
    let mut target = Target::spawn(&bin, &["wait", "resolve", "3"]);
    let pid = target.pid();
    let mut tracer = Tracer::start(&["tool", "gethostlatency", "-p", &pid]);
    let attached = tracer.wait_attached(ATTACH_TIMEOUT);
    settle();
    target.go();
    let code = target.wait(Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(300));
    tracer.interrupt();
    let out = tracer.finish(Duration::from_secs(10));
    assert!(attached && code == Some(0), "{}", out.stderr);
    let text = out.ok_stdout();
    let lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(
        lines[0],
        "TIME     PID     COMM                  LATms HOST"
    );
    assert_eq!(lines.len(), 5, "four lookups:\n{text}");
    for l in &lines[1..] {
        let c: Vec<&str> = l.split_whitespace().collect();
        assert_eq!(c.len(), 5, "{l}");
        assert!(
            c[0].len() == 8 && c[0].as_bytes()[2] == b':',
            "HH:MM:SS: {l}"
        );
        assert_eq!(
            [c[1], c[2], c[4]],
            [pid.as_str(), "tools_work", "localhost"],
            "{l}"
        );
        let (ms, us) = c[3].split_once('.').expect("ms.us");
        assert!(ms.parse::<u64>().is_ok() && us.len() == 3, "{l}");
    }
}
