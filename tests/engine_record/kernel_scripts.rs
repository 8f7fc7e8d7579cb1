//! `sonde replay FILE SCRIPT` runs `replay` probes on a recording the kernel made: as an
//! unprivileged user, seeing every recorded printf event with its typed arguments, and with
//! the symbol names recorded with them although the process is gone.

use crate::common::{TempDir, skip_unless_root};
use crate::live::{build, record};
use crate::{nobody_can_run_sonde, replay, run_as_nobody, share};

/// Parses `@name[k1, k2]: v` lines of `map` into `(k1, k2, v)`.
fn pairs<'a>(out: &'a str, map: &str) -> Vec<(&'a str, &'a str, u64)> {
    let prefix = format!("@{map}[");
    out.lines()
        .filter_map(|l| {
            let (key, v) = l.strip_prefix(prefix.as_str())?.split_once("]: ")?;
            let (a, b) = key.split_once(", ")?;
            Some((a, b, v.parse().ok()?))
        })
        .collect()
}

#[test]
fn replay_scripts_run_unprivileged_on_a_kernel_recording() {
    if skip_unless_root("replay_scripts_run_unprivileged_on_a_kernel_recording")
        || !nobody_can_run_sonde("replay_scripts_run_unprivileged_on_a_kernel_recording")
    {
        return;
    }
    let dir = TempDir::new("rec-nobody");
    let bin = build(&dir);
    let rec = record(&dir, &bin, "r", &[]);
    share(&dir);
    let live = &rec.live.stdout;
    let file = rec.file.to_str().unwrap();

    // Every recorded printf line, by the kind of event that printed it and its first field;
    // nsecs (the recorded read times) never goes back.
    let out = run_as_nobody(&[
        "replay",
        file,
        "-e",
        "replay { @k[probe, field(1)] = count(); if (nsecs < @last) { @back = count(); } @last = nsecs; } END { clear(@last); }",
    ]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(!out.stdout.contains("@back"), "{}", out.stdout);
    let kinds = pairs(&out.stdout, "k");
    let count_live = |word: &str| {
        live.lines()
            .filter(|l| l.split_whitespace().next() == Some(word))
            .count() as u64
    };
    let mut words: Vec<(&str, u64)> = kinds.iter().map(|(_, w, n)| (*w, *n)).collect();
    words.sort();
    assert_eq!(
        words,
        [("fp", 1), ("name", 3), ("step", 6)],
        "{}",
        out.stdout
    );
    for (w, n) in &words {
        assert_eq!(*n, count_live(w), "{w} in:\n{live}");
    }
    let kind = |w: &str| {
        kinds
            .iter()
            .find(|(_, word, _)| *word == w)
            .map(|(probe, _, _)| probe.to_string())
            .unwrap()
    };
    assert!(kind("step").starts_with("replay:"));

    // `replay:N` (here from a script file) sees one kind, with its typed arguments: the sum
    // of step's second arguments is the @sum the live run printed.
    let script_file = dir.path().join("sum.sd");
    std::fs::write(
        &script_file,
        format!(
            "{} {{ @s = sum(args.arg1); @n = count(); printf(\"%d|%s|%s\\n\", args.arg0, args.arg3, line); }}\n",
            kind("step")
        ),
    )
    .unwrap();
    share(&dir);
    let out = run_as_nobody(&["replay", file, "-q", script_file.to_str().unwrap()]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let live_sum: u64 = live
        .lines()
        .find_map(|l| l.strip_prefix("@sum: "))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no @sum in {live}"));
    let steps: String = live
        .lines()
        .filter(|l| l.starts_with("step "))
        .map(|l| format!("{}|pad|{l}\n", l.split(' ').nth(1).unwrap()))
        .collect();
    assert_eq!(out.stdout, format!("{steps}\n\n@n: 6\n@s: {live_sum}\n"));
    assert!(!out.stderr.contains("Attached"), "{}", out.stderr);
}

/// A `usym` argument printed by a replay script shows the name recorded with it, as `line`
/// does, although the process is gone: the script's resolver answers from the recording first.
#[test]
fn replay_script_prints_recorded_symbol_names() {
    if skip_unless_root("replay_script_prints_recorded_symbol_names") {
        return;
    }
    let dir = TempDir::new("rec-usym");
    let bin = build(&dir);
    let rec = record(&dir, &bin, "r", &[]);
    let out = replay(
        &rec.file,
        &["-q", "-e", "replay { @k[probe, field(1)] = count(); }"],
    );
    let fp = pairs(&out.stdout, "k")
        .into_iter()
        .find(|(_, w, _)| *w == "fp")
        .map(|(probe, _, _)| probe.to_string())
        .unwrap_or_else(|| panic!("no fp event in {}", out.stdout));
    let prog = format!(r#"{fp} {{ printf("%s\n", args.arg0); }}"#);
    let out = replay(&rec.file, &["-q", "-e", &prog]);
    assert_eq!(out.stdout, "step\n\n\n");
}
