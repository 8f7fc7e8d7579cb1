//! `sonde tool bitesize` side by side with libbpf-tools' bitesize: the load
//! (`tests/targets/tools_events.c bio`) writes 40 blocks of 16 KiB with O_DIRECT, each
//! followed by fdatasync(), to a file on this machine's disk; both tools, filtered on the
//! load's name (`-c`) and on the file's disk (`-d`), print the same histogram, with the 40
//! writes in the `16 -> 31` Kbytes slot.

mod common;
mod tools_support;

use common::{Target, TempDir, compile_target, run_sonde, skip_unless_root};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use tools_support::libbpf::side_by_side;

/// The name of the disk (`vda`, `sda`) that holds `path`: the partition's parent, if any.
fn disk_of(path: &std::path::Path) -> String {
    let dev = std::fs::metadata(path).expect("stat").dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let sys = std::path::PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    let real = std::fs::canonicalize(&sys).expect("its /sys/dev/block entry");
    let disk = if real.join("partition").exists() {
        real.parent().expect("a partition's disk").to_path_buf()
    } else {
        real
    };
    disk.file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned()
}

#[test]
fn bitesize_matches_libbpf_tools() {
    if skip_unless_root("bitesize_matches_libbpf_tools") {
        return;
    }
    let dir = TempDir::new("bitesize");
    let file = dir.path().join("direct.dat");
    // The temporary directory must be on a block device; a tmpfs refuses O_DIRECT (skip).
    let direct = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_DIRECT)
        .open(&file);
    if direct.is_err() {
        eprintln!("skipping: {} refuses O_DIRECT", dir.path().display());
        return;
    }
    let disk = disk_of(&file);
    let bin = compile_target(&dir, "tools_events", &["-O2", "-g", "-pthread"]);
    let path = file.to_str().expect("utf-8 path");
    for flags in [
        vec!["-c", "tools_events"],
        vec!["-c", "tools_events", "-d", &disk],
    ] {
        let mut target = Target::spawn(&bin, &["bio", path]);
        let (sonde, bcc) = side_by_side("bitesize", &flags, &flags, &mut target);
        let text = sonde.ok_stdout();
        assert_eq!(text, bcc.stdout, "{flags:?}: sonde, then libbpf-tools");
        assert!(
            text.starts_with(
                "Tracing block device I/O... Hit Ctrl-C to end.\n\n\nProcess Name = tools_events\n     Kbytes              : count    distribution\n"
            ),
            "{text}"
        );
        let slot = text
            .lines()
            .find(|l| l.trim_start().starts_with("16 -> 31 "));
        let count = slot.and_then(|l| {
            l.split(':')
                .nth(1)?
                .split('|')
                .next()?
                .trim()
                .parse::<u64>()
                .ok()
        });
        // 40 writes of 16 KiB; the block layer may merge two that meet on a busy disk (then
        // one is a 32 KiB request: both tools see the same, checked above).
        assert!(count.is_some_and(|c| (36..=40).contains(&c)), "{text}");
    }
    // A disk that is not there is a usage error.
    let out = run_sonde(&["tool", "bitesize", "-d", "nosuchdisk0"]);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("is not a disk"), "{}", out.stderr);
    // Another disk's name (a loop or ram device the load does not write to): nothing of it.
    let Some(other) = std::fs::read_dir("/sys/block")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| {
            ["loop", "ram", "nbd", "zram"]
                .iter()
                .any(|p| n.starts_with(p))
        })
    else {
        eprintln!("no loop or ram device in /sys/block: -d of another disk not checked");
        return;
    };
    let mut target = Target::spawn(&bin, &["bio", path]);
    let flags = ["-c", "tools_events", "-d", other.as_str()];
    let mut sonde_flags = flags.to_vec();
    sonde_flags.push("-T");
    let (sonde, _) = side_by_side(
        "bitesize",
        &sonde_flags,
        &["-c", "tools_events"],
        &mut target,
    );
    let text = sonde.ok_stdout();
    assert!(!text.contains("Process Name"), "{text}");
    let time = text.lines().nth(2).unwrap_or_default();
    assert!(
        time.len() == 8 && time.as_bytes()[2] == b':',
        "-T: HH:MM:SS\n{text}"
    );
}
