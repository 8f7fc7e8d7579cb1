//! What the allocation record and replay tests share: the allocpattern program
//! (tests/targets/allocpattern.c), built, started waiting for its signal, its report read, and
//! its own calls found in a recording between its markers.

#![allow(dead_code)]

use crate::common::{TempDir, compile_target};
use sonde_allocs::ops::{Call, Op, Recording};
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// allocpattern, with frame pointers (its callers' stacks walk cleanly).
pub fn build(dir: &TempDir) -> PathBuf {
    compile_target(
        dir,
        "allocpattern",
        &["-O2", "-g", "-fno-omit-frame-pointer", "-pthread"],
    )
}

/// The numbers of allocpattern's last line (`allocpattern calls malloc=N ...`).
pub fn program_report(stdout: &str) -> HashMap<String, u64> {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("allocpattern calls"))
        .unwrap_or_else(|| panic!("no allocpattern line in:\n{stdout}"));
    line.split_whitespace()
        .filter_map(|w| w.split_once('='))
        .map(|(k, v)| {
            (
                k.to_string(),
                v.parse().unwrap_or_else(|_| panic!("{line}")),
            )
        })
        .collect()
}

/// The program's calls: those from its start marker (malloc(3)) to the free of its end
/// marker (malloc(5)), both included.
pub fn between_markers(rec: &Recording) -> &[Op] {
    let start = rec
        .ops
        .iter()
        .position(|o| o.call == Call::Malloc && o.size == 3)
        .expect("the start marker, malloc(3)");
    let mark = start
        + rec.ops[start..]
            .iter()
            .position(|o| o.call == Call::Malloc && o.size == 5)
            .expect("the end marker, malloc(5)");
    let end_block = rec.ops[mark].result;
    let end = mark
        + rec.ops[mark..]
            .iter()
            .position(|o| o.call == Call::Free && o.ptr == end_block)
            .expect("the end marker's free");
    &rec.ops[start..=end]
}

/// Starts allocpattern --wait; returns it and its pid once it said `ready PID`.
pub fn spawn_waiting(
    bin: &Path,
) -> (
    std::process::Child,
    BufReader<std::process::ChildStdout>,
    u32,
) {
    let mut child = Command::new(bin)
        .arg("--wait")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("allocpattern starts");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let pid = line
        .strip_prefix("ready ")
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("allocpattern said `{line}`"));
    (child, out, pid)
}
