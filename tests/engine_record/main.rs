//! `sonde record` and `sonde replay` end to end.
//!
//! - [`live`]: a kernel run recorded replays byte for byte, in either output format.
//! - [`kernel_scripts`]: `replay` probes run as an unprivileged user on a kernel recording.
//! - [`handmade`]: a recording written by hand from the documented format (no root needed).
//! - [`bad_files`]: bad recordings are one-line errors.
//! - [`killed`]: a recording run killed by SIGKILL replays up to where it was cut.
//! - [`usage`]: `sonde record` usage errors.
//!
//! This module holds what they share: running `sonde replay`, and running sonde as nobody.

#[path = "../common/mod.rs"]
mod common;

mod bad_files;
mod handmade;
mod kernel_scripts;
mod killed;
mod live;
mod usage;

use common::{Output, TempDir, run_command, run_sonde_timeout, sonde};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Hard limit for one replay (bad files included).
const REPLAY_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs `sonde replay FILE extra...`.
fn replay(file: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["replay", file.to_str().unwrap()];
    args.extend_from_slice(extra);
    let out = run_sonde_timeout(&args, REPLAY_TIMEOUT);
    assert!(!out.timed_out, "replay {args:?} timed out");
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    out
}

/// Runs `sonde` with `args` as user and group 65534 (nobody).
fn run_as_nobody(args: &[&str]) -> Output {
    let mut cmd = Command::new("setpriv");
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(sonde())
        .args(args);
    run_command(cmd, REPLAY_TIMEOUT)
}

/// True when the sonde binary runs as nobody (setpriv present, binary reachable).
fn nobody_can_run_sonde(test: &str) -> bool {
    let ok = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(sonde())
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!(
            "skipping {test}: cannot run {} as nobody",
            sonde().display()
        );
    }
    ok
}

/// Makes `dir` and the files in it readable by everyone.
fn share(dir: &TempDir) {
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    for e in std::fs::read_dir(dir.path()).unwrap() {
        let p = e.unwrap().path();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
}
