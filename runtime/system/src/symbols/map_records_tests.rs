//! Perf record parsing, bytes in and events out, and the tracker against the real kernel.

use super::*;

/// A record as the kernel writes it: the header, `body`, the `sample_id` trailer (`pid`,
/// `tid`, `time`), the size rounded up to 8 bytes.
fn record(ty: u32, misc: u16, body: &[u8], time: u64) -> Vec<u8> {
    let mut body = body.to_vec();
    while !body.len().is_multiple_of(8) {
        body.push(0);
    }
    let size = 8 + body.len() + SAMPLE_ID_LEN;
    let mut r = Vec::new();
    r.extend_from_slice(&ty.to_le_bytes());
    r.extend_from_slice(&misc.to_le_bytes());
    r.extend_from_slice(&(size as u16).to_le_bytes());
    r.extend_from_slice(&body);
    r.extend_from_slice(&7u32.to_le_bytes());
    r.extend_from_slice(&8u32.to_le_bytes());
    r.extend_from_slice(&time.to_le_bytes());
    r
}

/// The body of an MMAP2 record.
#[allow(clippy::too_many_arguments)]
fn mmap2_body(
    pid: u32,
    tid: u32,
    addr: u64,
    len: u64,
    pgoff: u64,
    ino: u64,
    prot: u32,
    name: &str,
) -> Vec<u8> {
    let mut b = Vec::new();
    for v in [pid, tid] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    for v in [addr, len, pgoff] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.extend_from_slice(&8u32.to_le_bytes()); // maj
    b.extend_from_slice(&1u32.to_le_bytes()); // min
    b.extend_from_slice(&ino.to_le_bytes());
    b.extend_from_slice(&0u64.to_le_bytes()); // ino_generation
    b.extend_from_slice(&prot.to_le_bytes());
    b.extend_from_slice(&2u32.to_le_bytes()); // flags: MAP_PRIVATE
    b.extend_from_slice(name.as_bytes());
    b.push(0);
    b
}

fn u32s(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn mapping(start: u64, end: u64, offset: u64, inode: u64, path: &str) -> Mapping {
    Mapping {
        start,
        end,
        offset,
        inode,
        executable: true,
        path: path.into(),
    }
}

#[test]
fn mmap2_of_a_library() {
    let r = record(
        RECORD_MMAP2,
        2, // PERF_RECORD_MISC_USER
        &mmap2_body(
            4242,
            4243,
            0x7f00_0002_8000,
            0x19_5000,
            0x28000,
            99,
            5,
            "/usr/lib/libc.so.6",
        ),
        123_456,
    );
    assert_eq!(
        parse_record(&r),
        Some(MapRecord {
            time: 123_456,
            event: MapEvent::Map {
                pid: 4242,
                mapping: mapping(
                    0x7f00_0002_8000,
                    0x7f00_001b_d000,
                    0x28000,
                    99,
                    "/usr/lib/libc.so.6"
                ),
            },
        })
    );
}

#[test]
fn mmap2_of_a_deleted_file_of_the_vdso_and_with_a_build_id() {
    let r = record(
        RECORD_MMAP2,
        2,
        &mmap2_body(1, 1, 0x1000, 0x1000, 0, 7, 5, "/tmp/x.so (deleted)"),
        1,
    );
    let Some(MapRecord {
        event: MapEvent::Map { mapping, .. },
        ..
    }) = parse_record(&r)
    else {
        panic!("{r:?}")
    };
    assert_eq!(mapping.path, "/tmp/x.so");
    let r = record(
        RECORD_MMAP2,
        2,
        &mmap2_body(1, 1, 0x1000, 0x2000, 0, 0, 5, "[vdso]"),
        1,
    );
    let Some(MapRecord {
        event: MapEvent::Map { mapping, .. },
        ..
    }) = parse_record(&r)
    else {
        panic!("{r:?}")
    };
    assert_eq!(mapping, mapping_of(0x1000, 0x3000, "[vdso]"));
    // With a build id the inode is not known.
    let r = record(
        RECORD_MMAP2,
        2 | MISC_MMAP_BUILD_ID,
        &mmap2_body(1, 1, 0x1000, 0x1000, 0, 77, 5, "/bin/sh"),
        1,
    );
    let Some(MapRecord {
        event: MapEvent::Map { mapping, .. },
        ..
    }) = parse_record(&r)
    else {
        panic!("{r:?}")
    };
    assert_eq!(mapping.inode, 0);
    // prot without PROT_EXEC (only with mmap_data, which the tracker does not ask for).
    let r = record(
        RECORD_MMAP2,
        2,
        &mmap2_body(1, 1, 0x1000, 0x1000, 0, 7, 1, "/bin/sh"),
        1,
    );
    let Some(MapRecord {
        event: MapEvent::Map { mapping, .. },
        ..
    }) = parse_record(&r)
    else {
        panic!("{r:?}")
    };
    assert!(!mapping.executable);
}

fn mapping_of(start: u64, end: u64, path: &str) -> Mapping {
    mapping(start, end, 0, 0, path)
}

#[test]
fn legacy_mmap_record() {
    let mut body = u32s(&[10, 11]);
    for v in [0x40_0000u64, 0x1000, 0x2000] {
        body.extend_from_slice(&v.to_le_bytes());
    }
    body.extend_from_slice(b"/bin/app\0");
    let r = record(RECORD_MMAP, 2, &body, 5);
    assert_eq!(
        parse_record(&r).map(|r| r.event),
        Some(MapEvent::Map {
            pid: 10,
            mapping: mapping(0x40_0000, 0x40_1000, 0x2000, 0, "/bin/app"),
        })
    );
}

#[test]
fn exec_fork_exit_and_lost() {
    let comm = |misc| {
        record(
            RECORD_COMM,
            misc,
            &[u32s(&[30, 31]), b"true\0".to_vec()].concat(),
            9,
        )
    };
    assert_eq!(
        parse_record(&comm(MISC_COMM_EXEC)),
        Some(MapRecord {
            time: 9,
            event: MapEvent::Exec { pid: 30 }
        })
    );
    // A rename (prctl, /proc/self/comm) is no exec.
    assert_eq!(parse_record(&comm(0)), None);

    let task = |ty, pid, ppid, tid, ptid| {
        let mut b = u32s(&[pid, ppid, tid, ptid]);
        b.extend_from_slice(&77u64.to_le_bytes());
        record(ty, 0, &b, 77)
    };
    assert_eq!(
        parse_record(&task(RECORD_FORK, 50, 40, 50, 40)).map(|r| r.event),
        Some(MapEvent::Fork {
            pid: 50,
            parent: 40
        })
    );
    // A new thread shares its process's maps.
    assert_eq!(parse_record(&task(RECORD_FORK, 40, 40, 41, 40)), None);
    assert_eq!(
        parse_record(&task(RECORD_EXIT, 50, 40, 50, 40)).map(|r| r.event),
        Some(MapEvent::Exit { pid: 50 })
    );
    assert_eq!(parse_record(&task(RECORD_EXIT, 40, 1, 41, 40)), None);

    let mut lost = 1234u64.to_le_bytes().to_vec();
    lost.extend_from_slice(&17u64.to_le_bytes());
    assert_eq!(
        parse_record(&record(RECORD_LOST, 0, &lost, 3)).map(|r| r.event),
        Some(MapEvent::Lost { count: 17 })
    );
    // Other record types.
    assert_eq!(parse_record(&record(14, 0, &[0; 8], 3)), None);
}

#[test]
fn malformed_records_are_refused_without_panicking() {
    let good = record(
        RECORD_MMAP2,
        2,
        &mmap2_body(1, 1, 0x1000, 0x1000, 0, 7, 5, "/bin/sh"),
        1,
    );
    // Every truncation, and sizes that lie.
    for n in 0..good.len() {
        assert_eq!(parse_record(&good[..n]), None, "{n}");
    }
    for size in [0u16, 7, 8, 16, 23, 80, 4000] {
        let mut r = good.clone();
        r[6..8].copy_from_slice(&size.to_le_bytes());
        let _ = parse_record(&r);
    }
    // A zero-length or wrapping mapping.
    assert_eq!(
        parse_record(&record(
            RECORD_MMAP2,
            2,
            &mmap2_body(1, 1, 0x1000, 0, 0, 7, 5, "/a"),
            1
        )),
        None
    );
    assert_eq!(
        parse_record(&record(
            RECORD_MMAP2,
            2,
            &mmap2_body(1, 1, u64::MAX - 5, 0x1000, 0, 7, 5, "/a"),
            1
        )),
        None
    );
    // A name without its NUL.
    let mut body = mmap2_body(1, 1, 0x1000, 0x1000, 0, 7, 5, "/abcdefg");
    body.pop();
    let Some(MapRecord {
        event: MapEvent::Map { mapping, .. },
        ..
    }) = parse_record(&record(RECORD_MMAP2, 2, &body, 1))
    else {
        panic!()
    };
    assert_eq!(mapping.path, "/abcdefg");
}

/// The events applied to a cache give the maps `/proc` would have shown.
#[test]
fn events_applied_to_the_cache() {
    use super::super::ProcessCache;
    let map = |pid, start, end, path: &str| MapEvent::Map {
        pid,
        mapping: mapping(start, end, 0x1000, 1, path),
    };
    let cache = ProcessCache::new();
    // A shell (already running: unknown) forks 100 twice, and both exec the same program.
    let shell = u32::MAX - 7; // no such process: /proc cannot be read for it
    cache.apply(&[
        map(shell, 0x1000, 0x2000, "/bin/sh"),
        MapEvent::Fork {
            pid: 100,
            parent: shell,
        },
    ]);
    assert_eq!(cache.find(100, 0x1800).unwrap().path, "/bin/sh");
    cache.apply(&[
        MapEvent::Exec { pid: 100 },
        map(100, 0x5000, 0x6000, "/tmp/app"),
        map(100, 0x7000, 0x9000, "/lib/libc.so.6"),
        MapEvent::Exit { pid: 100 },
    ]);
    let maps = cache.get(100).unwrap();
    assert_eq!(
        maps.mappings()
            .iter()
            .map(|m| m.path.as_str())
            .collect::<Vec<_>>(),
        ["/tmp/app", "/lib/libc.so.6"]
    );
    assert_eq!(cache.find(100, 0x8000).unwrap().file_offset(0x8000), 0x2000);
    // An address of the program before the exec still resolves (the older generation).
    assert_eq!(cache.find(100, 0x1800).unwrap().path, "/bin/sh");
    // The shell's own maps did not change.
    assert_eq!(cache.find(shell, 0x5800), None);
    // The pid is reused: its maps start over from the new parent's, the old ones are kept.
    cache.apply(&[
        MapEvent::Fork {
            pid: 100,
            parent: shell,
        },
        MapEvent::Exec { pid: 100 },
        map(100, 0x5000, 0x5800, "/tmp/other"),
    ]);
    assert_eq!(cache.find(100, 0x5400).unwrap().path, "/tmp/other");
    assert_eq!(cache.find(100, 0x5c00).unwrap().path, "/tmp/app");
    assert_eq!(cache.evicted(), 0);
}
