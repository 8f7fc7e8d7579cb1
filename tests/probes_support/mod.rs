//! Helpers shared by the `probes_*` end-to-end tests: building the uprobe test program
//! (`tests/targets/uprobe_target.c`, a PIE built with `-O0 -fno-omit-frame-pointer`) and its
//! own shared library (`tests/targets/libsondetest.c`), and reading stacks out of sonde's
//! map output.

#![allow(dead_code)]

use crate::common::{TempDir, repo_root};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The built test program and its library.
pub struct ProbeTarget {
    /// Keeps the build directory alive.
    pub dir: TempDir,
    /// The PIE executable.
    pub bin: PathBuf,
    /// `libsondetest.so`, found by the program through its rpath.
    pub lib: PathBuf,
}

impl ProbeTarget {
    /// The executable's path as a string (for attach points and `-c`).
    pub fn bin_str(&self) -> &str {
        self.bin.to_str().expect("utf-8 temp path")
    }

    /// The library's path as a string.
    pub fn lib_str(&self) -> &str {
        self.lib.to_str().expect("utf-8 temp path")
    }

    /// `uprobe:BIN:func` style attach point on the executable.
    pub fn at(&self, kind: &str, func: &str) -> String {
        format!("{kind}:{}:{func}", self.bin_str())
    }

    /// A `-c` command line running `mode` at once (`now MODE [N]`).
    pub fn cmd(&self, mode: &str) -> String {
        format!("{} now {mode}", self.bin_str())
    }
}

fn gcc(args: &[&str]) {
    let out = Command::new("gcc")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run gcc: {e}"));
    assert!(
        out.status.success(),
        "gcc {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Builds the library and the program (a PIE linked to the library with an rpath).
pub fn build_probe_target(tag: &str) -> ProbeTarget {
    let dir = TempDir::new(tag);
    let targets = repo_root().join("tests/targets");
    let lib = dir.path().join("libsondetest.so");
    let bin = dir.path().join("uprobe_target");
    let (lib_s, bin_s, d) = (
        lib.to_str().unwrap(),
        bin.to_str().unwrap(),
        dir.path().to_str().unwrap(),
    );
    let lib_src = targets.join("libsondetest.c");
    let bin_src = targets.join("uprobe_target.c");
    gcc(&[
        "-O0",
        "-fno-omit-frame-pointer",
        "-fPIC",
        "-shared",
        "-o",
        lib_s,
        lib_src.to_str().unwrap(),
    ]);
    let rpath = format!("-Wl,-rpath,{d}");
    gcc(&[
        "-O0",
        "-fno-omit-frame-pointer",
        "-fPIE",
        "-pie",
        "-o",
        bin_s,
        bin_src.to_str().unwrap(),
        "-L",
        d,
        "-lsondetest",
        &rpath,
    ]);
    ProbeTarget { dir, bin, lib }
}

/// The value of symbol `name` in `file` (from `nm`).
pub fn symbol_value(file: &Path, name: &str) -> u64 {
    let out = Command::new("nm").arg(file).output().expect("nm runs");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| {
            let mut f = l.split_whitespace();
            let (v, _, n) = (f.next()?, f.next()?, f.next()?);
            (n == name)
                .then(|| u64::from_str_radix(v, 16).ok())
                .flatten()
        })
        .unwrap_or_else(|| panic!("no symbol {name} in {}", file.display()))
}

/// The file offset of virtual address `vaddr` of `file`, through its LOAD program headers
/// (from `readelf -lW`).
pub fn file_offset(file: &Path, vaddr: u64) -> u64 {
    let out = Command::new("readelf")
        .arg("-lW")
        .arg(file)
        .output()
        .expect("readelf runs");
    let text = String::from_utf8_lossy(&out.stdout);
    for line in text
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("LOAD"))
    {
        let f: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .take(5)
            .filter_map(|x| u64::from_str_radix(x.trim_start_matches("0x"), 16).ok())
            .collect();
        // Offset, VirtAddr, PhysAddr, FileSiz, MemSiz.
        if let [off, va, _, filesz, _] = f[..]
            && vaddr >= va
            && vaddr < va + filesz
        {
            return vaddr - va + off;
        }
    }
    panic!("{vaddr:#x} is in no LOAD segment of {}", file.display());
}

/// The stacks of a `@[ustack]`/`@[kstack]` map in sonde's text output, each as its frame
/// lines (trimmed), with its count.
pub fn parse_stacks(out: &str) -> Vec<(Vec<String>, u64)> {
    let mut stacks = Vec::new();
    let mut cur: Option<Vec<String>> = None;
    for line in out.lines() {
        if line.ends_with("[") && line.starts_with('@') {
            cur = Some(Vec::new());
        } else if let Some(rest) = line.strip_prefix("]: ") {
            if let Some(frames) = cur.take() {
                stacks.push((frames, rest.trim().parse().unwrap_or(0)));
            }
        } else if let Some(frames) = cur.as_mut() {
            let f = line.trim();
            if !f.is_empty() {
                frames.push(f.to_string());
            }
        }
    }
    stacks
}

/// The function name of a frame line (`name+off` → `name`).
pub fn frame_name(frame: &str) -> &str {
    frame.rsplit_once('+').map_or(frame, |(n, _)| n)
}
