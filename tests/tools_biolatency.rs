//! `sonde tool biolatency`: the test writes 200 blocks with O_DIRECT (each followed by
//! fdatasync) to a file on this machine's disk while the tool runs with `-D`, and checks the
//! histogram of that disk counts at least those requests; `interval count` stops by itself.

mod common;

use common::{ATTACH_TIMEOUT, TempDir, Tracer, skip_unless_root};
use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::fs::OpenOptions;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::time::Duration;

const BLOCK: usize = 4096;
const WRITES: u64 = 200;

/// Sum of the counts of the histogram printed under `header` in `text`.
fn hist_total(text: &str, header: &str) -> u64 {
    let mut total = 0;
    let mut inside = false;
    for l in text.lines() {
        if l.starts_with('@') {
            inside = l == header;
            continue;
        }
        if inside && l.starts_with('[') {
            let count = l
                .split(')')
                .nth(1)
                .unwrap_or("")
                .split('|')
                .next()
                .unwrap_or("")
                .trim();
            total += count.parse::<u64>().unwrap_or(0);
        }
    }
    total
}

#[test]
fn biolatency_histogram_counts_direct_writes_on_this_disk() {
    if skip_unless_root("biolatency_histogram_counts_direct_writes_on_this_disk") {
        return;
    }
    // The temporary directory must be on a block device; a tmpfs refuses O_DIRECT (skip).
    let dir = TempDir::new("biolatency");
    let path = dir.path().join("direct.dat");
    let file = match OpenOptions::new()
        .create(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(&path)
    {
        Ok(f) => f,
        Err(e) => {
            eprintln!(
                "skipped: the filesystem of {} refuses O_DIRECT: {e}",
                path.display()
            );
            return;
        }
    };
    let dev = file.metadata().unwrap().dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    if !std::path::Path::new(&format!("/sys/dev/block/{major}:{minor}")).exists() {
        eprintln!(
            "skipped: {} is not on a block device ({major}:{minor})",
            path.display()
        );
        return;
    }
    let mut tracer = Tracer::start(&["tool", "biolatency", "-D"]);
    assert!(tracer.wait_attached(ATTACH_TIMEOUT));
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
        if n < 0 {
            let e = std::io::Error::last_os_error();
            // SAFETY: allocated above with this layout.
            unsafe { dealloc(buf, layout) };
            eprintln!("skipped: O_DIRECT write refused: {e}");
            return;
        }
        assert_eq!(n, BLOCK as isize);
        // SAFETY: a valid descriptor.
        unsafe { libc::fdatasync(file.as_raw_fd()) };
    }
    // SAFETY: allocated above with this layout.
    unsafe { dealloc(buf, layout) };
    std::thread::sleep(Duration::from_millis(300));
    tracer.interrupt();
    let out = tracer.finish(Duration::from_secs(15));
    let text = out.ok_stdout();
    assert!(
        text.starts_with("Tracing block device I/O... Hit Ctrl-C to end.\n"),
        "{text}"
    );
    let header = format!("@disk_usecs[{major}, {minor}]:");
    let total = hist_total(text, &header);
    assert!(
        total >= WRITES,
        "at least {WRITES} requests under {header:?}, got {total}:\n{text}"
    );
    assert!(!text.contains("@usecs:"), "-D keys by disk:\n{text}");
}

#[test]
fn biolatency_interval_and_count_stop_by_themselves() {
    if skip_unless_root("biolatency_interval_and_count_stop_by_themselves") {
        return;
    }
    let start = std::time::Instant::now();
    let out = common::run_sonde_timeout(
        &["tool", "biolatency", "-m", "1", "2"],
        Duration::from_secs(15),
    );
    let text = out.ok_stdout();
    let secs = start.elapsed().as_secs_f64();
    assert!(secs >= 2.0, "two 1-second intervals, ran {secs} s");
    // Two interval headers (HH:MM:SS lines) were printed.
    let stamps = text
        .lines()
        .filter(|l| l.len() == 8 && l.as_bytes()[2] == b':' && l.as_bytes()[5] == b':')
        .count();
    assert_eq!(stamps, 2, "{text}");
}
