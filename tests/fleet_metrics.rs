//! `--metrics` against real Prometheus servers (Debian's `prometheus`, started by the test
//! on loopback ports with their own configuration and data): what Prometheus's query API
//! returns after scraping a running sonde equals what sonde prints at exit — counters with
//! labels from the keys, a histogram's buckets, its `_sum` and `histogram_quantile` — and
//! the native histogram arrives when Prometheus asks for it. `promtool check metrics`
//! passes on the exposition.

mod common;
mod fleet_support;

use common::{Target, TempDir, Tracer, build_target, skip_unless_root};
use fleet_support::{Prometheus, assert_promtool_accepts, get, prometheus_installed, served_addr};
use std::time::Duration;

/// The load's 3000 getppid() and 700 openat() of a missing file, counted by comm, the
/// getppid ones also in a histogram and a sum of the same values.
const SCRIPT: &str = r#"
tracepoint:syscalls:sys_enter_getppid /pid == $1/ {
    @calls[comm] = count();
    $x = nsecs % 5000;
    @v = hist($x);
    @vs = sum($x);
}
tracepoint:syscalls:sys_enter_openat /pid == $1/ {
    @calls[comm] = count();
    @path[str(args.filename)] = count();
}
"#;

/// sonde's `-f json` exit printout of map `@name`.
fn exit_map(stdout: &str, name: &str) -> serde_json::Value {
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == "map" || v["type"] == "hist")
        .find_map(|v| v["data"].get(name).cloned())
        .unwrap_or_else(|| panic!("no {name} in:\n{stdout}"))
}

/// Every series of instant vector `q` as (labels, value).
fn series(p: &Prometheus, q: &str) -> Vec<(serde_json::Value, f64)> {
    let path = format!("/api/v1/query?query={q}");
    let (_, body) = get(&p.addr, &path, None).expect("prometheus answers");
    let v: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
    v["data"]["result"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|r| {
            let value = r["value"][1]
                .as_str()
                .unwrap_or("nan")
                .parse()
                .unwrap_or(f64::NAN);
            (r["metric"].clone(), value)
        })
        .collect()
}

#[test]
fn prometheus_reads_what_sonde_prints_at_exit() {
    if skip_unless_root("prometheus_reads_what_sonde_prints_at_exit")
        || !prometheus_installed("prometheus_reads_what_sonde_prints_at_exit")
    {
        return;
    }
    let dir = TempDir::new("fleet");
    let bin = build_target(&dir, "tools_syscalls");
    let mut target = Target::spawn(&bin, &[]);
    let pid = target.pid();
    let mut tracer = Tracer::start(&[
        "-f",
        "json",
        "--metrics",
        "127.0.0.1:0",
        "--metrics-name",
        "fleet",
        "-e",
        SCRIPT,
        &pid,
    ]);
    assert!(
        tracer.wait_attached(Duration::from_secs(60)),
        "sonde attached"
    );
    let addr = served_addr(&tracer);
    // Attached, the agent keeps only what reading maps and symbols needs.
    let status = std::fs::read_to_string(format!("/proc/{}/status", tracer.pid())).unwrap();
    let caps = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap();
    assert_eq!(caps & (1 << 21), 0, "CAP_SYS_ADMIN dropped: {caps:x}");
    assert_ne!(caps & (1 << 39), 0, "CAP_BPF kept: {caps:x}");
    assert!(status.contains("NoNewPrivs:\t1"), "{status}");
    let classic = Prometheus::start(&[&addr], &[]);
    let native = Prometheus::start(&[&addr], &["native-histograms"]);
    target.go();
    assert_eq!(target.wait(Duration::from_secs(30)), Some(0));

    // The exposition passes promtool's checks.
    let (status, text) = get(&addr, "/metrics", None).expect("sonde answers");
    assert_eq!(status, 200);
    assert_promtool_accepts(&text);

    // Both servers have scraped the final values before sonde stops.
    let calls = r#"sonde_fleet_calls_total{comm="tools_syscalls"}"#;
    assert_eq!(classic.wait_for(calls, 3700.0), Some(3700.0));
    assert_eq!(
        native.wait_for("histogram_count(sonde_fleet_v)", 3000.0),
        Some(3000.0)
    );
    tracer.interrupt();
    let out = tracer.finish(Duration::from_secs(20));
    assert_eq!(out.code, Some(0), "{}", out.stderr);

    // Counters and labels from the keys.
    assert_eq!(exit_map(&out.stdout, "@calls")["tools_syscalls"], 3700);
    // (A first read of a string the program has not touched yet can fail: compare with
    // what sonde printed, not with 700.)
    let printed = exit_map(&out.stdout, "@path")["/nonexistent/sonde-syscount"].as_f64();
    let path = r#"sonde_fleet_path_total{args_filename="/nonexistent/sonde-syscount"}"#;
    assert_eq!(classic.query(path), printed);
    assert!(printed.is_some_and(|n| n >= 690.0), "{printed:?}");
    let vs = exit_map(&out.stdout, "@vs").as_f64().expect("a sum");
    assert_eq!(classic.query("sonde_fleet_vs_total"), Some(vs));

    // The histogram: every printed bucket is a cumulative `le` series, the sum is the
    // program's, and the median lies in the bucket that holds it.
    let printed = exit_map(&out.stdout, "@v");
    let buckets = printed.as_array().expect("buckets");
    let scraped = series(&classic, "sonde_fleet_v_bucket");
    let mut cumulative = 0.0;
    let mut median_bucket = None;
    for b in buckets {
        cumulative += b["count"].as_f64().unwrap();
        let (min, max) = (b["min"].as_f64().unwrap(), b["max"].as_f64().unwrap());
        if median_bucket.is_none() && cumulative >= 1500.0 {
            median_bucket = Some((min, max));
        }
        let le = scraped
            .iter()
            .find(|(m, _)| m["le"].as_str().and_then(|l| l.parse::<f64>().ok()) == Some(max));
        if let Some((_, v)) = le {
            assert_eq!(*v, cumulative, "bucket le={max}");
        } else {
            assert_eq!(
                cumulative, 3000.0,
                "bucket le={max} missing below the last value"
            );
        }
    }
    assert_eq!(classic.query("sonde_fleet_v_count"), Some(3000.0));
    assert_eq!(classic.query("sonde_fleet_v_sum"), Some(vs));
    let q = classic
        .query("histogram_quantile(0.5, sonde_fleet_v_bucket)")
        .expect("a median");
    let (lo, hi) = median_bucket.expect("a median bucket");
    assert!(q >= lo - 1.0 && q <= hi, "median {q} outside [{lo}, {hi}]");

    // The native histogram (protobuf scrape): the same count and sum.
    assert_eq!(native.query("histogram_sum(sonde_fleet_v)"), Some(vs));
    // sonde's own figures.
    assert_eq!(
        classic.query(r#"sonde_probes_attached{script="fleet"}"#),
        Some(2.0)
    );
}
