//! A recording written by hand here from the documented format replays without root:
//! printf events as text and JSON, `replay` scripts over them (as an unprivileged user when
//! run as root), `delta` measuring the recorded times, and `replay` probes on a recording
//! with no printf event.

use crate::common::{TempDir, is_root, run_sonde};
use crate::{nobody_can_run_sonde, replay, run_as_nobody, share};

/// Pushes `s` as a `str` of the recording format.
fn put_str(b: &mut Vec<u8>, s: &str) {
    b.extend_from_slice(&(s.len() as u32).to_le_bytes());
    b.extend_from_slice(s.as_bytes());
}

/// Pushes an entry: tag, body length, body.
fn put_entry(b: &mut Vec<u8>, tag: u8, body: &[u8]) {
    b.push(tag);
    b.extend_from_slice(&(body.len() as u64).to_le_bytes());
    b.extend_from_slice(body);
}

/// The printf events of [`handmade`]: `(time, int, string)`.
const HANDMADE: [(u64, i64, &str); 3] = [(1000, 7, "abc"), (2000, -2, "xyz"), (3500, 35, "abc")];

/// A recording written by hand from the format documented in `runtime/drivers/src/record/mod.rs`:
/// a script whose one event (when `args` is given) is a printf `"%d %s\n"` with arguments
/// of the encoded types `args`, the `Event` entries of the `(time, payload)` `events`, and
/// exit code 5.
pub(crate) fn recording(args: Option<&[&[u8]]>, events: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let mut h = Vec::new();
    put_str(&mut h, "hand.bt");
    put_str(&mut h, "// written by tests/engine_record.rs\n");
    h.push(1); // print_maps_on_exit
    h.extend_from_slice(&u32::from(args.is_some()).to_le_bytes()); // events
    if let Some(args) = args {
        h.push(0); // Printf
        put_str(&mut h, "%d %s\n");
        h.extend_from_slice(&(args.len() as u32).to_le_bytes());
        for a in args {
            h.extend_from_slice(a);
        }
    }
    h.extend_from_slice(&0u32.to_le_bytes()); // maps
    let mut b = b"SONDEREC".to_vec();
    b.extend_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&0u16.to_le_bytes());
    b.extend_from_slice(&(h.len() as u64).to_le_bytes());
    b.extend_from_slice(&h);
    put_entry(&mut b, 1, &1u64.to_le_bytes()); // Attached
    for (ts, payload) in events {
        let mut record = 0u64.to_le_bytes().to_vec();
        record.extend_from_slice(payload);
        let mut body = ts.to_le_bytes().to_vec();
        body.extend_from_slice(&(record.len() as u32).to_le_bytes());
        body.extend_from_slice(&record);
        put_entry(&mut b, 2, &body); // Event
    }
    put_entry(&mut b, 12, &[0; 16]); // Counters
    put_entry(&mut b, 13, &[5]); // End
    b
}

/// `Type` encodings: `int64` and `string[8]`.
pub(crate) const INT64: &[u8] = &[2, 64, 1];
pub(crate) const STR8: &[u8] = &[3, 8, 0, 0, 0];

/// [`recording`] of a printf of an `int64` and a `string[8]` with the [`HANDMADE`] events, or
/// of no event at all.
pub(crate) fn handmade(printf: bool) -> Vec<u8> {
    if !printf {
        return recording(None, &[]);
    }
    let events: Vec<(u64, Vec<u8>)> = HANDMADE
        .iter()
        .map(|(ts, n, s)| {
            let mut payload = n.to_le_bytes().to_vec();
            let mut text = [0u8; 8];
            text[..s.len()].copy_from_slice(s.as_bytes());
            payload.extend_from_slice(&text);
            (*ts, payload)
        })
        .collect();
    recording(Some(&[INT64, STR8]), &events)
}

/// Where the entries of recording `bytes` start (after its header).
pub(crate) fn header_end(bytes: &[u8]) -> usize {
    20 + u64::from_le_bytes(bytes[12..20].try_into().unwrap()) as usize
}

#[test]
fn a_handmade_recording_replays_without_root() {
    let dir = TempDir::new("rec-hand");
    let file = dir.path().join("hand.rec");
    std::fs::write(&file, handmade(true)).unwrap();
    let f = file.to_str().unwrap();

    let out = replay(&file, &[]);
    assert_eq!(out.code, Some(5), "{out:?}");
    assert_eq!(out.stdout, "7 abc\n-2 xyz\n35 abc\n");
    assert!(out.stderr.contains("Attached 1 probe"), "{}", out.stderr);
    let out = replay(&file, &["-f", "json", "-q"]);
    assert_eq!(out.code, Some(5));
    assert_eq!(
        out.stdout,
        "{\"type\": \"printf\", \"data\": \"7 abc\\n\"}\n\
         {\"type\": \"printf\", \"data\": \"-2 xyz\\n\"}\n\
         {\"type\": \"printf\", \"data\": \"35 abc\\n\"}\n"
    );

    // Scripts: fields of the printed lines, typed arguments, the recorded times, filters.
    let prog = r#"replay { @f[field(2)] = count(); @sum = sum(args.arg0); @t = max(nsecs); }
replay:0 /args.arg0 < 0/ { printf("negative %s at %d: %s\n", args.arg1, nsecs, line); }"#;
    let args = ["replay", f, "-q", "-e", prog];
    let out = if is_root() {
        share(&dir);
        if !nobody_can_run_sonde("a_handmade_recording_replays_without_root (as nobody)") {
            return;
        }
        run_as_nobody(&args)
    } else {
        run_sonde(&args)
    };
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(
        out.stdout,
        "negative xyz at 2000: -2 xyz\n\n\n@f[xyz]: 1\n@f[abc]: 2\n@sum: 40\n@t: 3500\n"
    );
}

/// `delta` in `replay` probes measures the recorded times, so the handmade recording's events
/// (at 1000, 2000 and 3500 ns, the first and the last with key "abc") give exact values: the
/// first firing of the thread (or of a key) is 0 and adds nothing to an aggregation, the
/// thread's gaps are 1000 and 1500, key "abc"'s is 2500.
#[test]
fn delta_in_replay_measures_the_recorded_times() {
    let dir = TempDir::new("rec-delta");
    let file = dir.path().join("hand.rec");
    std::fs::write(&file, handmade(true)).unwrap();
    let prog = r#"replay { @k[args.arg1] = stats(delta(args.arg1)); @t = hist(delta); printf("%s %d %d\n", args.arg1, delta, delta(args.arg1)); }"#;
    let out = run_sonde(&["replay", file.to_str().unwrap(), "-q", "-e", prog]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let bar = "@".repeat(52);
    // No empty line after the stats map: bpftrace 0.26 (0.17 printed one).
    assert_eq!(
        out.stdout,
        format!(
            "abc 0 0\nxyz 1000 0\nabc 1500 2500\n\n\n@k[abc]: {{ .count = 1, .average = 2500, .total = 2500 }}\n\
             @t:\n[512, 1K)              1 |{bar}|\n[1K, 2K)               1 |{bar}|\n\n"
        )
    );
}

#[test]
fn replay_probes_on_a_recording_without_printf_say_so() {
    let dir = TempDir::new("rec-noprintf");
    let file = dir.path().join("silent.rec");
    std::fs::write(&file, handmade(false)).unwrap();
    // The recording itself replays (nothing to print) with its exit code.
    let out = replay(&file, &["-q"]);
    assert_eq!((out.code, out.stdout.as_str()), (Some(5), ""), "{out:?}");
    for prog in ["replay { @n = count(); }", "replay:0 { @n = count(); }"] {
        let out = replay(&file, &["-e", prog]);
        assert_eq!(out.code, Some(1), "{out:?}");
        assert!(out.stdout.is_empty(), "{}", out.stdout);
        for want in ["no recorded printf event matches", "no printf events"] {
            assert!(out.stderr.contains(want), "{want}: {}", out.stderr);
        }
    }
    // replay:N names the kinds there are.
    std::fs::write(&file, handmade(true)).unwrap();
    let out = replay(&file, &["-e", "replay:4 { @n = count(); }"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr.contains("kinds 0 (\"%d %s\\n\")"),
        "{}",
        out.stderr
    );
}
