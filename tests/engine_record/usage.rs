//! `sonde record` usage errors (and `sonde replay` without a file), and a recording that
//! cannot be written.

use crate::common::{TempDir, run_sonde, skip_unless_root};

#[test]
fn record_usage_errors() {
    let dir = TempDir::new("rec-usage");
    let file = dir.path().join("x.rec");
    let f = file.to_str().unwrap();
    // No -o: a usage error, whatever else is there.
    for args in [
        &["record"][..],
        &["record", "-e", "BEGIN { exit(); }"][..],
        &["record", "-q", "-e", "BEGIN { exit(); }"][..],
    ] {
        let out = run_sonde(args);
        assert_eq!(out.code, Some(2), "{args:?}: {out:?}");
        assert!(out.stderr.contains("usage"), "{}", out.stderr);
        assert!(out.stdout.is_empty());
    }
    // -o without a script.
    let out = run_sonde(&["record", "-o", f]);
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(!file.exists());
    // A recording that cannot be created: a clear error before anything runs.
    let bad = "/nonexistent-dir/x.rec";
    let out = run_sonde(&[
        "record",
        "-o",
        bad,
        "-e",
        r#"BEGIN { printf("ran\n"); exit(); }"#,
    ]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    assert!(!out.stderr.contains("Attached"), "{}", out.stderr);
    let err = out.stderr.trim_end();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(bad) && err.contains("No such file or directory"),
        "{err}"
    );
    // Scripts that do not compile, or that run in the userspace engine, leave no file.
    let out = run_sonde(&["record", "-o", f, "-e", "BEGIN { nosuchfn(); }"]);
    assert_eq!(out.code, Some(1), "{out:?}");
    let out = run_sonde(&["record", "-o", f, "-e", "input { @n = count(); }"]);
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(out.stderr.contains("record"), "{}", out.stderr);
    assert!(!file.exists());
    // replay without a file.
    let out = run_sonde(&["replay"]);
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(out.stderr.contains("usage"), "{}", out.stderr);
}

/// A recording whose writes fail (`/dev/full`: every write is ENOSPC) is an error: the
/// header is written (flushed) before the run starts, so the run does not start; one
/// message, exit code 1.
#[test]
fn a_recording_that_cannot_be_written_fails_the_run() {
    if skip_unless_root("a_recording_that_cannot_be_written_fails_the_run") {
        return;
    }
    let script = r#"BEGIN { printf("x\n"); exit(); }"#;
    let out = run_sonde(&["record", "-o", "/dev/full", "-e", script]);
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    assert_eq!(out.code, Some(1), "{out:?}");
    let msg = "cannot write recording /dev/full: No space left on device";
    assert_eq!(out.stderr.matches(msg).count(), 1, "{}", out.stderr);
    assert_eq!(out.stdout, "", "{out:?}");
}
