//! A profile read back by `go tool pprof -raw`, the reader Go's tooling (and what Parca and
//! Grafana's agents are written against) uses. Skipped, with the reason printed, when `go`
//! is not installed.

use super::tests::{counts, frame, kstack, names, stack, text, ustack};
use super::*;
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;

/// `go tool pprof -raw FILE`'s output, or `None` when `go` is not installed.
fn go_raw(name: &str, gz: &[u8]) -> Option<String> {
    if Command::new("go").arg("version").output().is_err() {
        eprintln!("skipped: `go` is not installed (Debian's golang-go has `go tool pprof`)");
        return None;
    }
    let path: PathBuf =
        std::env::temp_dir().join(format!("sonde-pprof-{}-{name}.pb.gz", std::process::id()));
    std::fs::write(&path, gz).expect("write the profile");
    let out = Command::new("go")
        .args(["tool", "pprof", "-raw"])
        .arg(&path)
        .env("GOTOOLCHAIN", "local")
        .env("PPROF_TMPDIR", std::env::temp_dir())
        .output()
        .expect("run go tool pprof");
    let _ = std::fs::remove_file(&path);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "go tool pprof failed: {stderr}");
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The samples of `-raw` output: each one's values, its frames leaf first (function names,
/// or `0x` addresses for locations without one) and its label lines.
fn raw_samples(raw: &str) -> Vec<(Vec<i64>, Vec<String>, Vec<String>)> {
    let mut section = "";
    let mut samples: Vec<(Vec<i64>, Vec<u64>, Vec<String>)> = Vec::new();
    let mut locations: HashMap<u64, String> = HashMap::new();
    for line in raw.lines() {
        let t = line.trim();
        if ["Samples:", "Locations", "Mappings"].contains(&t) {
            section = t;
            continue;
        }
        match section {
            "Samples:" => {
                // `  7   70707070: 1 2 3`, then its labels, `comm:[cat]`.
                let Some((vals, locs)) = t.split_once(':') else {
                    continue;
                };
                let values: Option<Vec<i64>> =
                    vals.split_whitespace().map(|v| v.parse().ok()).collect();
                match (values, samples.last_mut()) {
                    (Some(values), _) if !values.is_empty() => {
                        let ids = locs.split_whitespace().filter_map(|i| i.parse().ok());
                        samples.push((values, ids.collect(), Vec::new()));
                    }
                    (_, Some(s)) if locs.starts_with('[') => s.2.push(t.to_string()),
                    _ => {}
                }
            }
            "Locations" => {
                // `     1: 0x401234 M=3 main :0:0 s=0()`; an unresolved one ends at `M=n`.
                let Some((id, rest)) = t.split_once(':') else {
                    continue;
                };
                let Ok(id) = id.trim().parse() else { continue };
                let words: Vec<&str> = rest.split_whitespace().collect();
                let name = match words.get(2) {
                    Some(w) if !w.starts_with(':') => w.to_string(),
                    _ => words.first().map_or(String::new(), |a| a.to_string()),
                };
                locations.insert(id, name);
            }
            _ => {}
        }
    }
    samples
        .into_iter()
        .map(|(v, ids, labels)| {
            let frames = ids.iter().map(|i| locations[i].clone()).collect();
            (v, frames, labels)
        })
        .collect()
}

#[test]
fn go_tool_pprof_reads_frames_counts_and_labels() {
    let unresolved = stack(
        false,
        vec![
            frame(0xabc0, "", None),
            frame(0x40_1234, "main", Some("/usr/bin/cat")),
        ],
    );
    let dump = counts(
        "reads",
        vec![
            (Value::Tuple(vec![kstack(), ustack(), text("cat")]), 7),
            (Value::Tuple(vec![kstack(), unresolved, text("dd")]), 12),
        ],
    );
    let opts = ProfileOptions {
        frequency_hz: 99,
        time_nanos: 1_700_000_000_000_000_000,
        duration_nanos: 5_000_000_000,
        ..ProfileOptions::default()
    };
    let gz = profile(&dump, &names(&["kstack", "ustack", "comm"]), &opts).unwrap();
    let Some(raw) = go_raw("reads", &gz) else {
        return;
    };
    assert!(raw.contains("PeriodType: cpu nanoseconds"), "{raw}");
    assert!(raw.contains("Period: 10101010"), "{raw}");
    assert!(raw.contains("samples/count cpu/nanoseconds"), "{raw}");
    assert!(raw.contains("[kernel.kallsyms]"), "{raw}");
    let samples = raw_samples(&raw);
    assert_eq!(samples.len(), 2, "{raw}");
    let kernel = ["vfs_read", "ksys_read", "do_syscall_64"];
    assert_eq!(samples[0].0, [7, 70_707_070], "{raw}");
    let first: Vec<&str> = kernel.iter().copied().chain(["read", "main"]).collect();
    assert_eq!(samples[0].1, first, "{raw}");
    assert_eq!(samples[0].2, ["comm:[cat]"], "{raw}");
    assert_eq!(samples[1].0, [12, 121_212_120], "{raw}");
    let second: Vec<&str> = kernel.iter().copied().chain(["0xabc0", "main"]).collect();
    assert_eq!(samples[1].1, second, "{raw}");
}

#[test]
fn go_tool_pprof_reads_sums_and_numeric_labels() {
    let dump = MapDump {
        name: "offcpu".into(),
        value_type: Type::Agg(AggKind::Sum { signed: false }),
        entries: vec![(
            Value::Tuple(vec![kstack(), Value::UInt(4242)]),
            Value::Agg(AggValue::Sum {
                value: 123_456,
                signed: false,
            }),
        )],
    };
    let opts = ProfileOptions {
        unit: Some("nanoseconds".into()),
        ..ProfileOptions::default()
    };
    let gz = profile(&dump, &names(&["kstack", "pid"]), &opts).unwrap();
    let Some(raw) = go_raw("offcpu", &gz) else {
        return;
    };
    assert!(raw.contains("value/nanoseconds"), "{raw}");
    let samples = raw_samples(&raw);
    assert_eq!(samples.len(), 1, "{raw}");
    assert_eq!(samples[0].0, [123_456], "{raw}");
    assert_eq!(samples[0].1, ["vfs_read", "ksys_read", "do_syscall_64"]);
    assert_eq!(samples[0].2, ["pid:[4242]"], "{raw}");
}
