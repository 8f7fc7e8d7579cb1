//! Allocation recordings written by the recording writer read back as calls; other files,
//! other scripts' recordings, corrupt and cut ones refused with the byte offset.

use super::*;
use crate::record::{Header, RecordWriter};
use sonde_compiler::program::{MapKind, MapRole, MapSpec};

fn header() -> Header {
    let int = Type::Int {
        bits: 64,
        signed: false,
    };
    Header {
        name: SCRIPT_NAME.into(),
        source: "// allocrecord\n".into(),
        events: vec![
            EventSpec::Printf {
                format: TARGET_FORMAT.into(),
                args: vec![int.clone(), Type::Str { size: 200 }],
            },
            EventSpec::Printf {
                format: CALL_FORMAT.into(),
                args: vec![int; 8],
            },
            EventSpec::ClearMap {
                map: "depth".into(),
            },
            EventSpec::Exit,
        ],
        maps: vec![
            MapSpec {
                symbol: "m_unfinished".into(),
                kind: MapKind::Hash,
                key_size: 8,
                value_size: 8,
                max_entries: 1,
                role: MapRole::User {
                    name: "unfinished".into(),
                    key: None,
                    value: Type::Int {
                        bits: 64,
                        signed: false,
                    },
                },
            },
            MapSpec {
                symbol: "m_unstarted".into(),
                kind: MapKind::PerCpuArray,
                key_size: 4,
                value_size: 8,
                max_entries: 1,
                role: MapRole::User {
                    name: "unstarted".into(),
                    key: None,
                    value: Type::Int {
                        bits: 64,
                        signed: false,
                    },
                },
            },
        ],
        print_maps_on_exit: false,
        str_trunc_trailer: Vec::new(),
    }
}

/// The record of a call event: index 1, then the eight fields.
fn call(fields: [u64; 8]) -> Entry {
    let mut record = 1u64.to_le_bytes().to_vec();
    for f in fields {
        record.extend_from_slice(&f.to_le_bytes());
    }
    Entry::Event { ts_ns: 0, record }
}

fn target(pid: u64, command: &str) -> Entry {
    let mut record = 0u64.to_le_bytes().to_vec();
    record.extend_from_slice(&pid.to_le_bytes());
    let mut text = command.as_bytes().to_vec();
    text.resize(200, 0);
    record.extend_from_slice(&text);
    Entry::Event { ts_ns: 0, record }
}

fn write(header: &Header, entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut w = RecordWriter::new(&mut out, header).unwrap();
    w.write_all(entries).unwrap();
    w.finish().unwrap();
    out
}

fn entries() -> Vec<Entry> {
    vec![
        Entry::Attached { probes: 20 },
        target(4242, ""),
        // Returned at 300: a malloc of 100 (its event came after free's, sent at entry).
        call([4, 7, 200, 0, 0, 0x1000, 0, 5]),
        call([1, 7, 300, 100, 0, 0, 0x2000, 6]),
        call([5, 8, 250, 64, 32, 0, 0x3000, 6]),
        call([1, 7, 300, 8, 0, 0, 0x4000, 6]),
        Entry::ExitMaps {
            maps: vec![
                (
                    "unstarted".into(),
                    vec![(
                        vec![0; 4],
                        vec![2u64.to_le_bytes().to_vec(), 1u64.to_le_bytes().to_vec()],
                    )],
                ),
                (
                    "unfinished".into(),
                    vec![(vec![0; 8], vec![3u64.to_le_bytes().to_vec()])],
                ),
            ],
        },
        Entry::Counters {
            lost_events: 9,
            map_full: 0,
            loops_cut: 0,
        },
        Entry::End { exit_code: 0 },
    ]
}

fn read_bytes(bytes: &[u8]) -> Result<Recording, Diagnostic> {
    read_from(bytes, bytes.len() as u64, "app.allocs")
}

#[test]
fn calls_read_back_in_time_order() {
    let rec = read_bytes(&write(&header(), &entries())).unwrap();
    let calls: Vec<(Call, u64, u64)> = rec
        .ops
        .iter()
        .map(|o| (o.call, o.time_ns, o.result))
        .collect();
    assert_eq!(
        calls,
        [
            (Call::Free, 200, 0),
            (Call::PosixMemalign, 250, 0x3000),
            (Call::Malloc, 300, 0x2000),
            (Call::Malloc, 300, 0x4000),
        ]
    );
    assert_eq!(
        rec.ops[1],
        Op {
            call: Call::PosixMemalign,
            tid: 8,
            time_ns: 250,
            size: 64,
            align: 32,
            ptr: 0,
            result: 0x3000,
            stack: 6
        }
    );
    assert_eq!(rec.pid, Some(4242));
    assert_eq!(rec.target, "pid 4242");
    assert_eq!((rec.unstarted, rec.unfinished, rec.lost_events), (3, 3, 9));
}

#[test]
fn a_command_is_the_target() {
    let mut e = entries();
    e[1] = target(77, "./app --fast");
    let rec = read_bytes(&write(&header(), &e)).unwrap();
    assert_eq!((rec.pid, rec.target.as_str()), (Some(77), "./app --fast"));
}

fn error(bytes: &[u8]) -> String {
    read_bytes(bytes).unwrap_err().message
}

#[test]
fn other_files_and_scripts_are_refused() {
    assert_eq!(
        error(b"#!/bin/sh\necho hello, this is not a recording\n"),
        "app.allocs: at byte 0: not a sonde recording (it does not start with `SONDEREC`)"
    );
    let mut other = header();
    other.name = "foo.bt".into();
    assert_eq!(
        error(&write(&other, &entries())),
        "app.allocs is not an allocation recording: at byte 20 its header names the script `foo.bt`"
    );
    let mut layout = header();
    layout.events[1] = EventSpec::Printf {
        format: CALL_FORMAT.into(),
        args: vec![Type::Str { size: 8 }; 8],
    };
    assert!(
        error(&write(&layout, &entries()))
            .starts_with("app.allocs is not an allocation recording: at byte 20 its event 1 is not one of allocrecord's"),
    );
}

#[test]
fn a_cut_recording_is_refused_with_its_offset() {
    let whole = write(&header(), &entries());
    // Cut inside the third call event: two calls before it.
    let full = read_bytes(&whole).unwrap();
    assert_eq!(full.ops.len(), 4);
    let mut at = 0;
    for cut in (0..whole.len()).rev() {
        let e = error(&whole[..cut]);
        if e.contains("after 2 calls") {
            at = cut;
            assert!(e.starts_with("app.allocs was cut at byte "), "{e}");
            break;
        }
    }
    assert!(at > 0);
    // Cut just before End: every call is there, the run did not end.
    let e = error(&whole[..whole.len() - 10]);
    assert!(e.contains("(after 4 calls)"), "{e}");
}

#[test]
fn a_corrupt_entry_is_refused_with_its_offset() {
    let mut bytes = write(&header(), &entries());
    // The End entry's tag set to 0.
    let end = bytes.len() - 10;
    bytes[end] = 0;
    let e = error(&bytes);
    assert_eq!(
        e,
        format!(
            "app.allocs is corrupt at byte {end}: entry tag 0 is not valid (the file is corrupt) (after 4 calls)"
        )
    );
}
