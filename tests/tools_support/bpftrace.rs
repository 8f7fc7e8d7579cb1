//! Helpers of the tests that compare sonde with bpftrace 0.17 on bpftrace's own shipped tools
//! (`/usr/sbin/*.bt`): telling whether bpftrace 0.17 is there, its dry run of a tool, and
//! reading sonde's diagnostics.

use crate::common::{TempDir, run_command};
use std::process::Command;
use std::time::Duration;

/// Hard limit for one run of a tool (or of its dry run).
pub const RUN_TIMEOUT: Duration = Duration::from_secs(20);

/// True when bpftrace 0.17 is installed (the reference); prints why not otherwise.
pub fn bpftrace_017() -> bool {
    let v = Command::new("bpftrace").arg("--version").output();
    match v {
        Ok(o) if String::from_utf8_lossy(&o.stdout).starts_with("bpftrace v0.17.") => true,
        Ok(o) => {
            let v = String::from_utf8_lossy(&o.stdout);
            eprintln!(
                "{}, not 0.17: the comparisons are written for 0.17",
                v.trim()
            );
            false
        }
        Err(e) => panic!("bpftrace is not installed ({e}); .ci/test installs it"),
    }
}

/// Each diagnostic sonde printed, in order, as `code: message`.
pub fn diagnostics(stderr: &str) -> Vec<String> {
    let lines: Vec<&str> = stderr.lines().collect();
    let message = |i: usize| lines.get(i + 2).map_or("", |m| m.trim_start());
    let codes = lines.iter().enumerate();
    let codes = codes.filter(|(_, l)| l.starts_with("sonde::") && !l.contains(' '));
    let diag = |(i, l)| format!("{l}: {}", message(i).trim_start_matches("× "));
    codes.map(diag).collect()
}

/// bpftrace 0.17's dry run of `tool`: Ok when it compiles, else its stderr.
pub fn bpftrace_dry_run(tool: &str) -> Result<(), String> {
    let dir = TempDir::new("bt-elf");
    let mut cmd = Command::new("bpftrace");
    cmd.arg("--emit-elf")
        .arg(dir.path().join("out.o"))
        .arg(format!("/usr/sbin/{tool}"));
    let out = run_command(cmd, RUN_TIMEOUT);
    (out.code == Some(0)).then_some(()).ok_or(out.stderr)
}
