//! [`SourceFrames`] on `tests/targets/inlined_stack.c`, built here with gcc: the functions
//! inlined at an address and the lines of each frame, in the binary and in a separate debug
//! file, and a binary without DWARF.

use super::frames::{InlinedFunction, SourceFrames};
use super::load::Loaded;
use super::tests::{Scratch, run};
use crate::kernel_info::debug_search::DebugPath;
use sonde_lang::kernel::DebugInfoError;
use std::path::Path;

const SOURCE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/targets/inlined_stack.c"
);

/// The line of the source holding `/* LINE:tag */`.
fn marker(tag: &str) -> u64 {
    let text = std::fs::read_to_string(SOURCE).unwrap();
    let needle = format!("/* LINE:{tag} */");
    1 + text.lines().position(|l| l.contains(&needle)).unwrap() as u64
}

/// `FILE:LINE` of line `line` of the source, as gcc names it (the path it was given).
fn at(line: u64) -> Option<String> {
    Some(format!("{SOURCE}:{line}"))
}

fn build(dir: &Scratch, flags: &[&str]) -> String {
    let bin = dir.join("inl");
    let mut args = flags.to_vec();
    args.extend(["-o", &bin, SOURCE]);
    run("gcc", &args);
    bin
}

/// The address of the probe's statement (inside `leaf_step`, inlined twice over).
fn probe_address(bin: &str) -> u64 {
    let loaded = Loaded::open(bin, &DebugPath::default()).unwrap();
    loaded
        .dwarf
        .line_address("inlined_stack.c", marker("probe"), 0)
        .unwrap()
}

#[test]
fn inlined_functions_innermost_first_with_their_call_lines() {
    let dir = Scratch::new("frames");
    let bin = build(&dir, &["-O2", "-g"]);
    let addr = probe_address(&bin);
    let frames = SourceFrames::open(Path::new(&bin), &DebugPath::default()).unwrap();
    let info = frames.lookup(addr).unwrap();
    assert_eq!(
        info.inlined,
        [
            InlinedFunction {
                name: "leaf_step".into(),
                location: at(marker("probe")),
            },
            InlinedFunction {
                name: "middle_step".into(),
                location: at(marker("leaf_call")),
            },
        ]
    );
    assert_eq!(info.location, at(marker("middle_call")));
    // Asked again: the same answer, kept.
    assert!(std::sync::Arc::ptr_eq(&info, &frames.lookup(addr).unwrap()));
    // An address in no unit, and the last address (no range ends after it).
    assert_eq!(frames.lookup(8), None);
    assert_eq!(frames.lookup(u64::MAX), None);
    assert_eq!(frames.debug_path(), Path::new(&bin));
}

#[test]
fn a_separate_debug_file_is_read_and_no_dwarf_is_an_error() {
    let dir = Scratch::new("frames-debuglink");
    let bin = build(&dir, &["-O2", "-g"]);
    let addr = probe_address(&bin);
    let debug = dir.join("inl.debug");
    run("objcopy", &["--only-keep-debug", &bin, &debug]);
    let stripped = dir.join("inl-stripped");
    let link = format!("--add-gnu-debuglink={debug}");
    run("objcopy", &["--strip-debug", &link, &bin, &stripped]);
    let frames = SourceFrames::open(Path::new(&stripped), &DebugPath::default()).unwrap();
    assert_eq!(frames.debug_path(), Path::new(&debug));
    let info = frames.lookup(addr).unwrap();
    assert_eq!(info.inlined.len(), 2);
    assert_eq!(info.location, at(marker("middle_call")));
    // No DWARF anywhere.
    std::fs::remove_file(&debug).unwrap();
    let err = SourceFrames::open(Path::new(&stripped), &DebugPath::default()).unwrap_err();
    assert!(matches!(err, DebugInfoError::Missing(_)), "{err:?}");
    let plain = build(&dir, &["-O2"]);
    assert!(SourceFrames::open(Path::new(&plain), &DebugPath::default()).is_err());
}

#[test]
fn split_dwarf_units_are_read_from_their_dwo_file() {
    let dir = Scratch::new("frames-split");
    let bin = build(&dir, &["-O2", "-g", "-gsplit-dwarf"]);
    let dwo: Vec<_> = std::fs::read_dir(&dir.0)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "dwo"))
        .collect();
    assert_eq!(
        dwo.len(),
        1,
        "gcc writes the .dwo next to the binary: {dwo:?}"
    );
    let addr = probe_address(&bin);
    let frames = SourceFrames::open(Path::new(&bin), &DebugPath::default()).unwrap();
    let info = frames.lookup(addr).unwrap();
    assert_eq!(info.inlined.len(), 2, "{info:?}");
    assert_eq!(info.location, at(marker("middle_call")));
    // Without it: the skeleton's line table still gives the address's line.
    std::fs::remove_file(&dwo[0]).unwrap();
    let frames = SourceFrames::open(Path::new(&bin), &DebugPath::default()).unwrap();
    let info = frames.lookup(addr).unwrap();
    assert!(info.inlined.is_empty(), "{info:?}");
    assert_eq!(info.location, at(marker("probe")));
}
