//! A recording run killed by SIGKILL (issue 30, item 7): the recorder writes its entries out
//! at least once a second, so the file replays up to its last whole entry, and `replay` says
//! where the recording was cut (exit status 1: the run did not finish).

use crate::common::{ATTACH_TIMEOUT, TempDir, Tracer, skip_unless_root};
use crate::replay;
use std::time::Duration;

#[test]
fn a_recording_killed_by_sigkill_replays_up_to_the_cut() {
    if skip_unless_root("a_recording_killed_by_sigkill_replays_up_to_the_cut") {
        return;
    }
    let dir = TempDir::new("rec-killed");
    let file = dir.path().join("killed.rec");
    let prog = "interval:ms:100 { printf(\"tick %d\\n\", @n); @n = @n + 1; }";
    let mut tracer = Tracer::start(&["record", "-o", file.to_str().unwrap(), "-e", prog]);
    assert!(tracer.wait_attached(ATTACH_TIMEOUT), "not attached");
    std::thread::sleep(Duration::from_millis(3500));
    // SIGKILL: nothing runs in sonde after this.
    let pid = tracer.pid();
    // SAFETY: a plain kill(2) of the child this test started.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
    let live = tracer.finish(Duration::from_secs(5));
    assert_eq!(live.code, None, "not killed: {live:?}");
    let len = std::fs::metadata(&file).unwrap().len();
    assert!(len > 20, "the recording holds {len} bytes");

    let out = replay(&file, &[]);
    assert_eq!(out.code, Some(1), "{out:?}");
    let ticks: Vec<&str> = out.stdout.lines().collect();
    // About 35 ticks were printed live; at most the last second's are lost.
    assert!(
        ticks.len() >= 20,
        "{} ticks replayed:\n{}",
        ticks.len(),
        out.stdout
    );
    for (i, t) in ticks.iter().enumerate() {
        assert_eq!(*t, format!("tick {i}"), "{}", out.stdout);
    }
    let warning = format!("the recording {} was cut at byte ", file.display());
    assert!(out.stderr.contains(&warning), "{}", out.stderr);
    assert!(out.stderr.contains(" records)"), "{}", out.stderr);
}
