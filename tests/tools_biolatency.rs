//! `sonde tool biolatency`: the test writes 200 blocks with O_DIRECT (each followed by
//! fdatasync) to a file on this machine's disk while the tool runs, and checks bcc's
//! histograms count at least those requests: per disk by name with `-D`, only that disk
//! with `-d NAME`, per set of flags with `-F` (`Sync-Write`...), from the queue with `-Q`;
//! `-T -m interval count` stops by itself. Side by side with libbpf-tools' biolatency (`-F
//! -d DISK`), the same lines and, within 10%, the same count of the test's writes.

mod common;
mod tools_support;

use common::{ATTACH_TIMEOUT, TempDir, Tracer, run_sonde, skip_unless_root};
use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::time::Duration;
use tools_support::libbpf::{installed, side_by_side_on};

const BLOCK: usize = 4096;

/// The tests that write to the disk run one at a time: each counts its own writes.
static DISK: std::sync::Mutex<()> = std::sync::Mutex::new(());
const WRITES: u64 = 200;

/// Sum of the counts of bcc's histogram lines (`  2 -> 3  : 95  |***|`) in `text`.
fn total(text: &str) -> u64 {
    text.lines()
        .filter(|l| l.contains(" -> "))
        .filter_map(|l| {
            l.split(':')
                .nth(1)?
                .split('|')
                .next()?
                .trim()
                .parse::<u64>()
                .ok()
        })
        .sum()
}

/// The histograms of `text` under lines starting with `prefix`, by that line, with totals.
fn sections(text: &str, prefix: &str) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = Vec::new();
    let mut inside = false;
    for l in text.lines() {
        if l.starts_with(prefix) {
            out.push((l.to_string(), 0));
            inside = true;
        } else if l.starts_with("disk = ") || l.starts_with("flags = ") {
            inside = false;
        } else if inside && let Some(last) = out.last_mut() {
            last.1 += total(l);
        }
    }
    out
}

/// A file opened with O_DIRECT in `dir` and the name of its disk; `None` (the test is
/// skipped) when the file system refuses O_DIRECT or is not on a block device.
fn direct_file(dir: &TempDir) -> Option<(File, String)> {
    let path = dir.path().join("direct.dat");
    let file = OpenOptions::new()
        .create(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(&path)
        .map_err(|e| eprintln!("skipped: {} refuses O_DIRECT: {e}", path.display()))
        .ok()?;
    let dev = file.metadata().unwrap().dev();
    let sys = format!("/sys/dev/block/{}:{}", libc::major(dev), libc::minor(dev));
    let Ok(real) = std::fs::canonicalize(&sys) else {
        eprintln!("skipped: {} is not on a block device", path.display());
        return None;
    };
    // A partition's requests are its disk's.
    let disk = match real.join("partition").exists() {
        true => real.parent()?.to_path_buf(),
        false => real,
    };
    Some((file, disk.file_name()?.to_string_lossy().into_owned()))
}

/// Writes WRITES blocks to `file`, each followed by fdatasync: WRITES write requests.
fn write_blocks(file: &File) {
    let layout = Layout::from_size_align(BLOCK, BLOCK).unwrap();
    // SAFETY: a non-zero size layout; freed below with the same layout.
    let buf = unsafe { alloc_zeroed(layout) };
    for i in 0..WRITES {
        // SAFETY: buf holds BLOCK bytes aligned to BLOCK, as O_DIRECT needs.
        let n = unsafe {
            libc::pwrite(
                file.as_raw_fd(),
                buf.cast(),
                BLOCK,
                (i * BLOCK as u64) as libc::off_t,
            )
        };
        assert_eq!(n, BLOCK as isize, "{}", std::io::Error::last_os_error());
        // SAFETY: a valid descriptor.
        unsafe { libc::fdatasync(file.as_raw_fd()) };
    }
    // SAFETY: allocated above with this layout.
    unsafe { dealloc(buf, layout) };
}

/// Runs `sonde tool biolatency <flags>` while the blocks are written.
fn biolatency(file: &File, flags: &[&str]) -> String {
    let mut args = vec!["tool", "biolatency"];
    args.extend_from_slice(flags);
    let mut tracer = Tracer::start(&args);
    assert!(tracer.wait_attached(ATTACH_TIMEOUT));
    write_blocks(file);
    std::thread::sleep(Duration::from_millis(300));
    tracer.interrupt();
    let out = tracer.finish(Duration::from_secs(15));
    let text = out.ok_stdout().to_string();
    // bcc's -j prints the histograms only.
    assert_eq!(
        text.starts_with("Tracing block device I/O... Hit Ctrl-C to end.\n"),
        !flags.contains(&"-j"),
        "{text}"
    );
    text
}

#[test]
fn biolatency_histograms_of_direct_writes_by_disk_flags_and_queue() {
    if skip_unless_root("biolatency_histograms_of_direct_writes_by_disk_flags_and_queue") {
        return;
    }
    let _disk = DISK.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("biolatency");
    let Some((file, disk)) = direct_file(&dir) else {
        return;
    };
    // -D: a histogram per disk, named.
    let text = biolatency(&file, &["-D"]);
    let s = sections(&text, "disk = ");
    let mine = s.iter().find(|(k, _)| *k == format!("disk = {disk}\t"));
    assert!(mine.is_some_and(|(_, n)| *n >= WRITES), "{disk}:\n{text}");
    assert!(text.contains("\n     usecs               : count    distribution\n"));

    // -d DISK -F: that disk only, per set of flags; the writes are among the `...Write` ones.
    let text = biolatency(&file, &["-d", &disk, "-F"]);
    let s = sections(&text, "flags = ");
    let writes: u64 = s
        .iter()
        .filter(|(k, _)| k.ends_with("Write"))
        .map(|(_, n)| n)
        .sum();
    assert!(writes >= WRITES, "{text}");
    assert!(!text.contains("disk = "), "{text}");

    // -Q -m: from the queue, in milliseconds.
    let text = biolatency(&file, &["-Q", "-m", "-d", &disk]);
    assert!(total(&text) >= WRITES, "{text}");
    assert!(
        text.contains("\n     msecs               : count"),
        "{text}"
    );

    // -e: bcc's extension line after the histogram, counting what the histogram counts.
    let text = biolatency(&file, &["-e", "-d", &disk]);
    let avg = text
        .lines()
        .find(|l| l.starts_with("avg = "))
        .unwrap_or_else(|| panic!("no avg line:\n{text}"));
    let count: u64 = avg
        .rsplit("count: ")
        .next()
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("{avg}"));
    assert_eq!(count, total(&text), "{text}");
    assert!(avg.contains(" usecs, total: "), "{avg}");

    // -j -D: a line of JSON per disk, bcc's keys; the slots count what the histogram counts.
    let text = biolatency(&file, &["-j", "-D", "-d", &disk]);
    let line = text
        .lines()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("no JSON line:\n{text}"));
    let j: serde_json::Value = serde_json::from_str(line).expect("valid JSON");
    assert_eq!(j["disk"], disk.as_str(), "{line}");
    assert_eq!(j["val_type"], "usecs", "{line}");
    assert_eq!(j["ts"].as_str().map(str::len), Some(19), "{line}");
    let slots = j["data"].as_array().expect("data");
    assert_eq!(slots[0]["interval-start"], 0);
    assert_eq!(slots[0]["interval-end"], 1);
    assert_eq!(slots[4]["interval-start"], 16);
    assert_eq!(slots[4]["interval-end"], 31);
    let n: u64 = slots.iter().map(|s| s["count"].as_u64().unwrap()).sum();
    assert!(n >= WRITES, "{line}");

    // Another disk's name: none of these.
    let other = std::fs::read_dir("/sys/block")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| *n != disk && n.starts_with("loop"));
    if let Some(other) = other {
        let text = biolatency(&file, &["-d", &other]);
        assert!(total(&text) < WRITES, "{other}:\n{text}");
    }
}

#[test]
fn biolatency_interval_count_and_timestamps_stop_by_themselves() {
    if skip_unless_root("biolatency_interval_count_and_timestamps_stop_by_themselves") {
        return;
    }
    let start = std::time::Instant::now();
    let out = common::run_sonde_timeout(
        &["tool", "biolatency", "-T", "-m", "1", "2"],
        Duration::from_secs(15),
    );
    let text = out.ok_stdout();
    let secs = start.elapsed().as_secs_f64();
    assert!(secs >= 2.0, "two 1-second intervals, ran {secs} s");
    // Two interval headers (an empty line, then HH:MM:SS) were printed.
    let lines: Vec<&str> = text.lines().collect();
    let stamps: Vec<usize> = (0..lines.len())
        .filter(|&i| {
            let l = lines[i].as_bytes();
            l.len() == 8 && l[2] == b':' && l[5] == b':'
        })
        .collect();
    assert_eq!(stamps.len(), 2, "{text}");
    assert!(stamps.iter().all(|&i| lines[i - 1].is_empty()), "{text}");
}

#[test]
fn biolatency_unknown_disk_is_a_usage_error() {
    let out = run_sonde(&["tool", "biolatency", "-d", "nodisk0"]);
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(
        out.stderr
            .contains("bad value for --disk: `nodisk0` is not a disk"),
        "{}",
        out.stderr
    );
}

#[test]
fn biolatency_side_by_side_with_libbpf_tools() {
    if skip_unless_root("biolatency_side_by_side_with_libbpf_tools") {
        return;
    }
    if installed("biolatency").is_none() {
        return;
    }
    let _disk = DISK.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("biolatency-bcc");
    let Some((file, disk)) = direct_file(&dir) else {
        return;
    };
    // Per set of flags, on the test's disk: the test's synchronous direct writes have a line
    // of their own, apart from the writeback of the programs building on this machine.
    let args = ["-F", "-d", disk.as_str()];
    let (sonde, bcc) = side_by_side_on("biolatency", &args, &args, || write_blocks(&file));
    let (mine, theirs) = (sonde.ok_stdout().to_string(), bcc.stdout);
    let why = format!("sonde:\n{mine}\nbcc:\n{theirs}");
    let (m, t) = (sections(&mine, "flags = "), sections(&theirs, "flags = "));
    // The same lines: the banner, the flags' lines, the histograms' header.
    assert_eq!(mine.lines().next(), theirs.lines().next(), "{why}");
    let head = "\n     usecs               : count    distribution\n";
    assert!(mine.contains(head) && theirs.contains(head), "{why}");
    // The test's writes: direct writes are REQ_SYNC | REQ_IDLE, `Idle-Sync-Write`. bcc counts
    // the same requests but for those in flight when either started or stopped (other
    // programs may write directly too): within 10%.
    let flags = "flags = Idle-Sync-Write";
    let a = m.iter().find(|(k, _)| *k == flags).map_or(0, |(_, n)| *n);
    let b = t.iter().find(|(k, _)| *k == flags).map_or(0, |(_, n)| *n);
    // A write of the test's may go out with other flags (the first, with the file's
    // metadata, say): 95% of them at least.
    assert!(
        a * 100 >= WRITES * 95 && a.abs_diff(b) * 10 <= a.max(b),
        "{flags}: {a} / {b}\n{why}"
    );
}
