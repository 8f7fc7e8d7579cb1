//! Round trips of every entry and type, and a reader that survives any file.

use super::*;
use sonde_compiler::program::{MapKind, MapRole};
use sonde_lang::types::{AddrSpace, AggKind, Field, Record, StackMode, Type, tuple_layout};
use sonde_present::output::Resolver;
use std::sync::Arc;

fn field(name: &str, offset: u32, ty: Type) -> Field {
    Field {
        name: name.into(),
        offset,
        ty,
        bitfield: None,
        data_loc: false,
    }
}

/// One of every `Type` variant, with records nested, shared and pointed to.
fn every_type() -> Vec<Type> {
    let inner = Arc::new(Record {
        name: "struct inner".into(),
        size: 8,
        fields: vec![
            Field {
                bitfield: Some((3, 5)),
                ..field("flags", 0, Type::U32)
            },
            field("id", 4, Type::I32),
        ],
        is_union: false,
    });
    let outer = Arc::new(Record {
        name: "union outer".into(),
        size: 16,
        fields: vec![
            field("a", 0, Type::Record(inner.clone())),
            field("b", 0, Type::Record(inner.clone())),
            Field {
                data_loc: true,
                ..field("name", 8, Type::Str { size: 64 })
            },
        ],
        is_union: true,
    });
    let aggs = [
        AggKind::Count,
        AggKind::Sum { signed: true },
        AggKind::Avg { signed: false },
        AggKind::Min { signed: true },
        AggKind::Max { signed: false },
        AggKind::Stats { signed: true },
        AggKind::Hist { bits: 3 },
        AggKind::Lhist {
            min: -10,
            max: i64::MAX,
            step: 7,
        },
        AggKind::Tseries {
            interval_ns: 100_000_000,
            num_intervals: 20,
            agg: sonde_lang::types::TseriesAgg::Min,
            signed: true,
        },
        AggKind::Tseries {
            interval_ns: u64::MAX,
            num_intervals: 1,
            agg: sonde_lang::types::TseriesAgg::Last,
            signed: false,
        },
    ];
    let mut types = vec![
        Type::Void,
        Type::Bool,
        Type::U8,
        Type::I64,
        Type::Str { size: 16 },
        Type::Buf { size: 32 },
        Type::Ptr {
            pointee: Box::new(Type::Void),
            space: AddrSpace::Kernel,
        },
        Type::Ptr {
            pointee: Box::new(Type::Record(outer.clone())),
            space: AddrSpace::User,
        },
        Type::Ptr {
            pointee: Box::new(Type::Ptr {
                pointee: Box::new(Type::U8),
                space: AddrSpace::Unknown,
            }),
            space: AddrSpace::Unknown,
        },
        Type::Record(outer),
        Type::Record(inner.clone()),
        Type::Array {
            elem: Box::new(Type::Array {
                elem: Box::new(Type::Record(inner)),
                len: 2,
            }),
            len: 3,
        },
        Type::Tuple(vec![]),
        Type::Tuple(vec![
            Type::U32,
            Type::Tuple(vec![Type::Str { size: 8 }, Type::Inet]),
        ]),
        Type::Enum {
            name: "pid_type".into(),
            bits: 32,
        },
        Type::Stack {
            kernel: true,
            mode: StackMode::Bpftrace,
            limit: 127,
        },
        Type::Stack {
            kernel: false,
            mode: StackMode::Perf,
            limit: 5,
        },
        Type::Stack {
            kernel: false,
            mode: StackMode::Raw,
            limit: 1,
        },
        Type::Stack {
            kernel: false,
            mode: StackMode::BuildId,
            limit: 3,
        },
        Type::Symbol { kernel: true },
        Type::Symbol { kernel: false },
        Type::Inet,
        Type::MacAddr,
        Type::Timestamp,
        Type::Username,
        Type::CgroupPath { filter: None },
        Type::CgroupPath {
            filter: Some("cpu*".into()),
        },
    ];
    types.extend(aggs.into_iter().map(Type::Agg));
    types
}

fn header() -> Header {
    let types = every_type();
    let map = |symbol: &str, kind, role| MapSpec {
        symbol: symbol.into(),
        kind,
        key_size: 8,
        value_size: 16,
        max_entries: 4096,
        role,
    };
    let mut maps = vec![
        map("events", MapKind::RingBuf, MapRole::Events),
        map("scratch", MapKind::PerCpuArray, MapRole::Scratch),
        map(
            "kstacks",
            MapKind::StackTrace,
            MapRole::Stacks { kernel: true },
        ),
        map(
            "ustacks",
            MapKind::StackTrace,
            MapRole::Stacks { kernel: false },
        ),
        map(
            "ustacks_build_id",
            MapKind::BuildIdStackTrace,
            MapRole::BuildIdStacks,
        ),
        map("counters", MapKind::Array, MapRole::Counters),
        map(
            "m_x",
            MapKind::Hash,
            MapRole::User {
                name: "x".into(),
                key: None,
                value: Type::U64,
            },
        ),
    ];
    for (i, t) in types.iter().enumerate() {
        maps.push(map(
            &format!("m_{i}"),
            MapKind::PerCpuHash,
            MapRole::User {
                name: format!("m{i}"),
                key: Some(Type::Tuple(vec![t.clone(), Type::U64])),
                value: t.clone(),
            },
        ));
    }
    Header {
        name: "every.bt".into(),
        source: "BEGIN { printf(\"héllo\\n\"); }\n".into(),
        events: vec![
            EventSpec::Printf {
                format: "%d %s\n".into(),
                args: types.clone(),
            },
            EventSpec::PrintValue {
                ty: Type::Tuple(types),
            },
            EventSpec::PrintMap {
                map: "x".into(),
                top: 3,
                div: 1000,
            },
            EventSpec::ClearMap { map: "x".into() },
            EventSpec::ZeroMap { map: "m0".into() },
            EventSpec::Time {
                format: "%H:%M:%S\n".into(),
            },
            EventSpec::Cat {
                format: "/proc/%d/comm".into(),
                args: vec![Type::I32],
            },
            EventSpec::System {
                format: "echo %s".into(),
                args: vec![Type::Str { size: 16 }],
            },
            EventSpec::Join {
                sep: ",".into(),
                count: 16,
                elem_size: 64,
            },
            EventSpec::Exit,
        ],
        maps,
        print_maps_on_exit: true,
        str_trunc_trailer: b"~>".to_vec(),
    }
}

fn frame(addr: u64, symbol: Option<&str>, module: Option<&str>) -> Frame {
    Frame {
        addr,
        symbol: symbol.map(Into::into),
        module: module.map(Into::into),
    }
}

fn record(index: u64, payload: &[u8]) -> Vec<u8> {
    let mut r = index.to_le_bytes().to_vec();
    r.extend_from_slice(payload);
    r
}

/// One of every entry kind, ending with `End`.
fn every_entry() -> Vec<Entry> {
    vec![
        Entry::Attached { probes: 3 },
        Entry::Event {
            ts_ns: 1,
            // A printf record holds its whole argument layout.
            record: record(0, &vec![1; tuple_layout(&every_type()).1 as usize]),
        },
        Entry::Event {
            ts_ns: 2,
            record: record(9, &[]),
        },
        Entry::Text {
            ts_ns: 3,
            event: 5,
            text: b"12:00:00\n".to_vec(),
        },
        Entry::Text {
            ts_ns: 4,
            event: 6,
            text: vec![0xff, 0, 0xfe],
        },
        Entry::MapPrint {
            ts_ns: 5,
            event: 2,
            entries: vec![
                (vec![1, 0, 0, 0, 0, 0, 0, 0], vec![vec![7; 16]]),
                (vec![0; 8], vec![vec![1; 16], vec![2; 16], vec![3; 16]]),
            ],
        },
        Entry::MapPrint {
            ts_ns: 6,
            event: 2,
            entries: vec![],
        },
        Entry::Stack {
            kernel: true,
            raw: 0xdead_beef,
            limit: 127,
            frames: Some(vec![
                frame(0xffff_ffff_8100_0000, Some("do_sys_open+16"), None),
                frame(0x1234, None, Some("[kernel.kallsyms]")),
                frame(0, Some(""), Some("/usr/bin/ls")),
            ]),
        },
        Entry::Stack {
            kernel: false,
            raw: 1 << 40,
            limit: 3,
            frames: None,
        },
        Entry::Stack {
            kernel: false,
            raw: 2,
            limit: 3,
            frames: Some(vec![]),
        },
        Entry::Symbol {
            kernel: true,
            addr: 0xffff_ffff_8100_0010,
            name: Some("vfs_read".into()),
        },
        Entry::Symbol {
            kernel: false,
            addr: 1,
            name: None,
        },
        Entry::UserSymbol {
            pid: 42,
            addr: 0x40_1000,
            name: Some("main".into()),
        },
        Entry::Username {
            uid: 0,
            name: Some("root".into()),
        },
        Entry::Username {
            uid: 65534,
            name: None,
        },
        Entry::CgroupPath {
            id: 1,
            path: Some("/system.slice/ünïcode.service".into()),
        },
        Entry::Timestamp {
            tag: 5,
            nsecs: 123_456_789,
            text: Some("12:34:56".into()),
        },
        Entry::Counters {
            lost_events: 17,
            map_full: u64::MAX,
            loops_cut: 3,
        },
        Entry::ExitMaps {
            maps: vec![
                ("x".into(), vec![(vec![0; 8], vec![vec![9; 16]])]),
                ("m0".into(), vec![]),
            ],
        },
        Entry::End { exit_code: 3 },
    ]
}

fn write(header: &Header, entries: &[Entry]) -> Vec<u8> {
    let mut w = RecordWriter::new(Vec::new(), header).unwrap();
    w.write_all(entries).unwrap();
    w.finish().unwrap()
}

fn sample() -> Vec<u8> {
    write(&header(), &every_entry())
}

fn read_err(bytes: &[u8]) -> RecordError {
    match read_recording(bytes) {
        Ok(r) => panic!("read a recording of {} entries", r.entries.len()),
        Err(e) => e,
    }
}

#[test]
fn every_entry_and_type_round_trips() {
    let rec = read_recording(&sample()).unwrap();
    assert_eq!(rec.header, header());
    assert_eq!(rec.entries, every_entry());
}

#[test]
fn shared_records_are_written_once_and_read_back_shared() {
    let rec = read_recording(&sample()).unwrap();
    let EventSpec::Printf { args, .. } = &rec.header.events[0] else {
        panic!("not printf");
    };
    let Type::Record(outer) = &args[9] else {
        panic!("not a record: {}", args[9]);
    };
    let (Type::Record(a), Type::Record(b)) = (&outer.fields[0].ty, &outer.fields[1].ty) else {
        panic!("fields are not records");
    };
    assert!(Arc::ptr_eq(a, b));
    // The record is shared with the other events' and maps' types too.
    let EventSpec::PrintValue {
        ty: Type::Tuple(items),
    } = &rec.header.events[1]
    else {
        panic!("not print");
    };
    let Type::Record(again) = &items[9] else {
        panic!("not a record");
    };
    assert!(Arc::ptr_eq(outer, again));
    // Each record's name is in the file once.
    let bytes = sample();
    let count = |needle: &[u8]| bytes.windows(needle.len()).filter(|w| *w == needle).count();
    assert_eq!(count(b"struct inner"), 1);
    assert_eq!(count(b"union outer"), 1);
}

#[test]
fn file_starts_with_magic_and_version() {
    let bytes = sample();
    assert_eq!(&bytes[..8], b"SONDEREC");
    assert_eq!(&bytes[8..12], &[1, 0, 1, 0]);
    let len = u64::from_le_bytes(bytes[12..20].try_into().unwrap());
    // The first entry follows the header: `Attached` with its 8-byte body.
    let first = 20 + len as usize;
    assert_eq!(bytes[first], 1);
    assert_eq!(&bytes[first + 1..first + 9], &8u64.to_le_bytes());
}

#[test]
fn every_truncation_is_an_error_at_or_before_the_cut() {
    let bytes = sample();
    for cut in 0..bytes.len() {
        let e = read_err(&bytes[..cut]);
        assert!(
            e.offset <= cut as u64,
            "cut at {cut}: error at {}: {}",
            e.offset,
            e.message
        );
    }
}

#[test]
fn foreign_files_are_errors() {
    let e = read_err(b"");
    assert_eq!(e.offset, 0);
    assert!(e.message.contains("empty"), "{e}");
    let e = read_err(b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0");
    assert_eq!(e.offset, 0);
    assert!(e.message.contains("not a sonde recording"), "{e}");
    if let Ok(ls) = std::fs::read("/bin/ls") {
        assert_eq!(read_err(&ls).offset, 0);
    }
    assert!(read_err(b"SONDE").message.contains("truncated"));
}

/// A small xorshift generator, so that the "random" files are the same on every run.
fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[test]
fn map_entries_must_have_the_maps_sizes() {
    for (name, key, value) in [("x", 7, 16), ("x", 8, 15), ("nope", 8, 16)] {
        let bytes = write(
            &header(),
            &[
                Entry::ExitMaps {
                    maps: vec![(name.into(), vec![(vec![0; key], vec![vec![0; value]])])],
                },
                Entry::End { exit_code: 0 },
            ],
        );
        let e = read_recording(&bytes).unwrap_err();
        assert!(
            e.message.contains("sizes") || e.message.contains("not in the header"),
            "{e}"
        );
    }
}

#[test]
fn random_bytes_are_errors() {
    let mut s = 0x9e37_79b9_7f4a_7c15;
    for len in [1usize, 7, 8, 20, 100, 4096] {
        let bytes: Vec<u8> = (0..len).map(|_| xorshift(&mut s) as u8).collect();
        read_err(&bytes);
        // Random bytes behind a valid preamble, then random bytes behind a valid header.
        let mut f = sample()[..12].to_vec();
        f.extend_from_slice(&bytes);
        read_err(&f);
    }
}

#[test]
fn random_corruption_never_panics() {
    let good = sample();
    let mut s = 42;
    for _ in 0..3000 {
        let mut bytes = good.clone();
        for _ in 0..1 + xorshift(&mut s) % 4 {
            let i = (xorshift(&mut s) % bytes.len() as u64) as usize;
            bytes[i] = xorshift(&mut s) as u8;
        }
        if let Err(e) = read_recording(&bytes) {
            assert!(e.offset <= bytes.len() as u64, "{e}");
        }
    }
}

#[test]
fn newer_major_version_is_refused() {
    let mut bytes = sample();
    bytes[8] = 2;
    let e = read_err(&bytes);
    assert_eq!(e.offset, 8);
    assert!(e.message.contains("2.1 is newer"), "{e}");
    assert_eq!(
        e.to_string(),
        format!("at byte 8: {}", e.message),
        "Display names the offset"
    );
}

#[test]
fn newer_minor_version_is_read() {
    let mut bytes = sample();
    bytes[10] = 7;
    assert_eq!(read_recording(&bytes).unwrap().entries, every_entry());
}

/// The bytes of a recording with the given header and raw entry bytes.
fn with_entries(raw: &[u8]) -> Vec<u8> {
    let mut bytes = write(&header(), &[]);
    bytes.extend_from_slice(raw);
    bytes
}

fn raw_entry(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut v = vec![tag];
    v.extend_from_slice(&(body.len() as u64).to_le_bytes());
    v.extend_from_slice(body);
    v
}

const END: [u8; 10] = [13, 1, 0, 0, 0, 0, 0, 0, 0, 0];

#[test]
fn unknown_entries_and_appended_fields_are_skipped() {
    let mut raw = raw_entry(200, b"from the future");
    // An `Attached` with a field appended by a newer minor version.
    raw.extend(raw_entry(1, &[5, 0, 0, 0, 0, 0, 0, 0, 0xaa, 0xbb]));
    raw.extend(raw_entry(99, b""));
    raw.extend_from_slice(&END);
    let rec = read_recording(&with_entries(&raw)).unwrap();
    assert_eq!(
        rec.entries,
        vec![Entry::Attached { probes: 5 }, Entry::End { exit_code: 0 }]
    );
}

#[test]
fn bad_streams_are_errors_at_their_offset() {
    let base = write(&header(), &[]).len() as u64;
    let at = |raw: &[u8]| read_err(&with_entries(raw));
    // No End.
    let e = at(&raw_entry(1, &[0; 8]));
    assert_eq!(e.offset, base + 17);
    assert!(e.message.contains("without an End"), "{e}");
    // Tag 0 (a zero-filled tail).
    assert_eq!(at(&[0; 64]).offset, base);
    // Bytes after End.
    let mut raw = END.to_vec();
    raw.push(1);
    assert_eq!(at(&raw).offset, base + 10);
    // An entry length beyond the file.
    let mut raw = vec![1];
    raw.extend_from_slice(&u64::MAX.to_le_bytes());
    let e = at(&raw);
    assert_eq!(e.offset, base + 9);
    assert!(
        e.message.contains("needs 18446744073709551615 bytes"),
        "{e}"
    );
    // A known body shorter than its fields.
    let e = at(&raw_entry(1, &[0; 4]));
    assert_eq!(e.offset, base + 9);
}

#[test]
fn absurd_lengths_and_counts_are_errors() {
    let base = write(&header(), &[]).len() as u64;
    let at = |raw: &[u8]| read_err(&with_entries(raw));
    // An event record claiming 4 GiB.
    let mut body = 0u64.to_le_bytes().to_vec();
    body.extend_from_slice(&u32::MAX.to_le_bytes());
    let e = at(&raw_entry(2, &body));
    assert_eq!(e.offset, base + 9 + 12);
    // Exit maps claiming 2^32 - 1 maps.
    let e = at(&raw_entry(5, &u32::MAX.to_le_bytes()));
    assert_eq!(e.offset, base + 9);
    assert!(e.message.contains("4294967295 elements"), "{e}");
    // A map print claiming 2^32 - 1 values for its one key.
    let mut body = 0u64.to_le_bytes().to_vec();
    body.extend_from_slice(&2u32.to_le_bytes());
    body.extend_from_slice(&1u32.to_le_bytes());
    body.extend_from_slice(&0u32.to_le_bytes());
    body.extend_from_slice(&u32::MAX.to_le_bytes());
    assert_eq!(at(&raw_entry(4, &body)).offset, base + 9 + 20);
    // A header length beyond the file.
    let mut bytes = sample();
    bytes[12..20].copy_from_slice(&(1u64 << 62).to_le_bytes());
    assert_eq!(read_err(&bytes).offset, 20);
    // A header claiming 2^32 - 1 events.
    let mut bytes = write(&header(), &[]);
    let name_len = header().name.len() + header().source.len();
    let events_at = 20 + 4 + 4 + name_len + 1;
    bytes[events_at..events_at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_eq!(read_err(&bytes).offset, events_at as u64);
}

#[test]
fn event_indexes_are_checked() {
    let base = write(&header(), &[]).len() as u64;
    let at = |e: Entry| {
        let mut w = RecordWriter::new(Vec::new(), &header()).unwrap();
        w.write(&e).unwrap();
        read_err(&w.finish().unwrap())
    };
    let e = at(Entry::Event {
        ts_ns: 0,
        record: record(10, b"x"),
    });
    assert_eq!(e.offset, base + 9 + 12);
    assert!(e.message.contains("out of range"), "{e}");
    let e = at(Entry::Event {
        ts_ns: 0,
        record: vec![1, 2],
    });
    assert!(e.message.contains("shorter than its 8-byte header"), "{e}");
    let e = at(Entry::Text {
        ts_ns: 0,
        event: 0,
        text: vec![],
    });
    assert_eq!(e.offset, base + 9 + 8);
    assert!(e.message.contains("time, cat or system"), "{e}");
    let e = at(Entry::MapPrint {
        ts_ns: 0,
        event: 5,
        entries: vec![],
    });
    assert!(e.message.contains("print(@map)"), "{e}");
}

/// A header whose only content is one `PrintValue` of type `ty`, and the offset of the type.
fn type_header_bytes(ty: &[u8]) -> (Vec<u8>, u64) {
    let mut body = vec![0, 0, 0, 0, 0, 0, 0, 0, 0];
    body.extend_from_slice(&1u32.to_le_bytes());
    body.push(1);
    body.extend_from_slice(ty);
    body.extend_from_slice(&0u32.to_le_bytes());
    let mut bytes = b"SONDEREC\x01\0\0\0".to_vec();
    bytes.extend_from_slice(&(body.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&body);
    bytes.extend_from_slice(&END);
    (bytes, 20 + 9 + 4 + 1)
}

#[test]
fn type_errors_name_their_offset() {
    let (ok, _) = type_header_bytes(&[2, 32, 1]);
    let rec = read_recording(&ok).unwrap();
    assert_eq!(
        rec.header.events,
        vec![EventSpec::PrintValue { ty: Type::I32 }]
    );
    // An unknown type tag, inside a tuple.
    let (bytes, at) = type_header_bytes(&[8, 1, 0, 0, 0, 99]);
    let e = read_err(&bytes);
    assert_eq!(e.offset, at + 5);
    assert!(e.message.contains("unknown type tag 99"), "{e}");
    // A bool that is neither 0 nor 1.
    let (bytes, at) = type_header_bytes(&[2, 32, 2]);
    assert_eq!(read_err(&bytes).offset, at + 2);
    // A reference to a record not defined.
    let (bytes, at) = type_header_bytes(&[18, 0, 0, 0, 0]);
    let e = read_err(&bytes);
    assert_eq!(e.offset, at + 1);
    assert!(e.message.contains("not defined"), "{e}");
    // Invalid UTF-8 in an enum name.
    let (bytes, at) = type_header_bytes(&[9, 3, 0, 0, 0, b'a', 0xc3, 0x28, 32]);
    let e = read_err(&bytes);
    assert_eq!(e.offset, at + 6);
    assert!(e.message.contains("UTF-8"), "{e}");
    // Pointers nested deeper than the limit (a stack overflow otherwise).
    let deep = vec![5u8; 100_000];
    let (bytes, at) = type_header_bytes(&deep);
    assert_eq!(read_err(&bytes).offset, at + u64::from(MAX_TYPE_DEPTH));
}

/// `Type` bytes: a record `r` of 8 bytes with one field `a` of type `ty` and `bitfield`.
fn record_bytes(ty: &[u8], bitfield: Option<(u8, u8)>) -> Vec<u8> {
    let mut b = vec![
        6, 1, 0, 0, 0, b'r', 8, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, b'a',
    ];
    b.extend_from_slice(&[0; 4]);
    b.extend_from_slice(ty);
    match bitfield {
        Some((bit, width)) => b.extend_from_slice(&[1, bit, width]),
        None => b.push(0),
    }
    b.push(0);
    b
}

#[test]
fn types_printing_cannot_handle_are_errors() {
    let err = |ty: &[u8]| {
        let (bytes, at) = type_header_bytes(ty);
        let e = read_err(&bytes);
        (e.offset - at, e.message)
    };
    // Integers that are not whole bytes of at most 64 bits (0 bits would shift by 64).
    for bits in [0u8, 7, 72, 255] {
        let (off, m) = err(&[2, bits, 1]);
        assert_eq!(off, 0, "{m}");
        assert!(m.contains(&format!("an integer of {bits} bits")), "{m}");
        let (off, m) = err(&[9, 1, 0, 0, 0, b'e', bits]);
        assert_eq!(off, 0, "{m}");
    }
    // Bit fields of no bits or reaching past bit 63.
    for bf in [(0, 0), (200, 3), (60, 5)] {
        let (off, m) = err(&record_bytes(&[2, 64, 0], Some(bf)));
        assert_eq!(off, 0, "{m}");
        assert!(m.contains("bit field"), "{m}");
    }
    let ok = record_bytes(&[2, 64, 0], Some((59, 5)));
    read_recording(&type_header_bytes(&ok).0).unwrap();
    // Sizes past 32 bits: an array (2^16 strings of 2^16 bytes), a tuple of two 3 GB strings.
    let (off, m) = err(&[7, 3, 0, 0, 1, 0, 0, 0, 1, 0]);
    assert_eq!(off, 0, "{m}");
    assert!(m.contains("4294967296 bytes"), "{m}");
    let big = [3, 0, 0, 0, 0xc0];
    let mut tuple = vec![8, 2, 0, 0, 0];
    tuple.extend_from_slice(&big);
    tuple.extend_from_slice(&big);
    assert_eq!(err(&tuple).0, 0);
    // An array of 2^32 - 1 empty tuples would decode into as many values.
    let (off, m) = err(&[7, 8, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]);
    assert_eq!(off, 0, "{m}");
    assert!(m.contains("more than 1048576 values"), "{m}");
    // The same array behind a pointer is never decoded.
    let behind = [5, 7, 8, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0];
    read_recording(&type_header_bytes(&behind).0).unwrap();
    // Records shared many times over (record n has two fields of record n - 1: 2^40
    // values) are counted without walking every copy.
    let mut nested = record_bytes(&[2, 8, 0], None);
    for n in 0..40u32 {
        let mut def = vec![6, 1, 0, 0, 0, b'r', 8, 0, 0, 0, 0, 2, 0, 0, 0];
        for (field, ty) in [
            (b'a', nested),
            (b'b', [&[18][..], &n.to_le_bytes()].concat()),
        ] {
            def.extend_from_slice(&[1, 0, 0, 0, field, 0, 0, 0, 0]);
            def.extend_from_slice(&ty);
            def.extend_from_slice(&[0, 0]);
        }
        nested = def;
    }
    let start = std::time::Instant::now();
    assert!(err(&nested).1.contains("values"));
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
}

#[test]
fn a_printf_record_shorter_than_its_arguments_is_an_error() {
    let base = write(&header(), &[]).len() as u64;
    let mut w = RecordWriter::new(Vec::new(), &header()).unwrap();
    w.write(&Entry::Event {
        ts_ns: 0,
        record: record(0, &[1, 2, 3, 4]),
    })
    .unwrap();
    let e = read_err(&w.finish().unwrap());
    assert_eq!(e.offset, base + 9 + 12);
    assert!(
        e.message.contains("shorter than its 8-byte header and"),
        "{e}"
    );
}

#[test]
fn writer_refuses_types_too_deep_to_read() {
    let mut t = Type::U8;
    for _ in 0..MAX_TYPE_DEPTH {
        t = Type::Array {
            elem: Box::new(t),
            len: 1,
        };
    }
    let mut h = header();
    h.events = vec![EventSpec::PrintValue { ty: t.clone() }];
    let e = RecordWriter::new(Vec::new(), &h).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    // One level less is fine.
    let Type::Array { elem, .. } = t else {
        unreachable!()
    };
    h.events = vec![EventSpec::PrintValue { ty: *elem }];
    let rec = read_recording(&write(&h, &[Entry::End { exit_code: 0 }])).unwrap();
    assert_eq!(rec.header, h);
}

#[test]
fn invalid_utf8_in_an_entry_is_an_error() {
    let base = write(&header(), &[]).len() as u64;
    let mut body = 7u64.to_le_bytes().to_vec();
    body.extend_from_slice(&[1, 2, 0, 0, 0, 0xff, 0xfe]);
    let e = read_err(&with_entries(&raw_entry(9, &body)));
    assert_eq!(e.offset, base + 9 + 13);
}

/// A live resolver whose answers depend on their arguments.
#[derive(Clone)]
struct Fake;

impl Resolver for Fake {
    fn stack(&self, kernel: bool, raw: u64, limit: u32) -> Option<Vec<Frame>> {
        (raw != 0).then(|| {
            (0..u64::from(limit))
                .map(|i| frame(raw + i, Some(&format!("f{i}")), kernel.then_some("[k]")))
                .collect()
        })
    }
    fn symbol(&self, kernel: bool, addr: u64) -> Option<String> {
        kernel.then(|| format!("ksym{addr}"))
    }
    fn user_symbol(&self, pid: u32, addr: u64) -> Option<String> {
        Some(format!("{pid}:{addr}"))
    }
    fn username(&self, uid: u64) -> Option<String> {
        (uid == 0).then(|| "root".into())
    }
    fn cgroup_path(&self, id: u64) -> Option<String> {
        Some(format!("/cg/{id}"))
    }
    fn timestamp(&self, tag: u64, nsecs: u64) -> Option<String> {
        Some(format!("t{tag}@{nsecs}"))
    }
}

/// Asks `r` one of each query, twice over, with answers and non-answers.
fn ask(r: &dyn Resolver) -> Vec<String> {
    let mut out = Vec::new();
    for _ in 0..2 {
        out.push(format!("{:?}", r.stack(true, 100, 2)));
        out.push(format!("{:?}", r.stack(false, 0, 2)));
        out.push(format!("{:?}", r.symbol(true, 5)));
        out.push(format!("{:?}", r.symbol(false, 5)));
        out.push(format!("{:?}", r.user_symbol(7, 8)));
        out.push(format!("{:?}", r.username(0)));
        out.push(format!("{:?}", r.username(1000)));
        out.push(format!("{:?}", r.cgroup_path(3)));
        out.push(format!("{:?}", r.timestamp(1, 99)));
    }
    out
}

#[test]
fn recorded_resolutions_replay_the_same_answers() {
    let rec = RecordingResolver::new(Fake);
    let clone = rec.clone();
    let live = ask(&clone);
    let entries = rec.take_entries();
    // Each answer once, though asked twice.
    assert_eq!(entries.len(), 9);
    assert!(entries.iter().all(Entry::is_resolution));
    assert!(rec.take_entries().is_empty());
    let mut stream = entries;
    stream.push(Entry::End { exit_code: 0 });
    let replay =
        ReplayResolver::from_recording(&read_recording(&write(&header(), &stream)).unwrap());
    assert_eq!(ask(&replay), live);
    // Asking again the same question records nothing new.
    ask(&rec);
    assert!(rec.take_entries().is_empty());
    // A query never recorded resolves to nothing.
    assert_eq!(replay.username(5), None);
    assert_eq!(replay.stack(true, 100, 3), None);
}

#[test]
fn a_changed_answer_is_recorded_again_and_learnt_in_order() {
    /// Answers with a name that changes on every call.
    #[derive(Default)]
    struct Changing(std::cell::Cell<u32>);
    impl Resolver for Changing {
        fn username(&self, _uid: u64) -> Option<String> {
            self.0.set(self.0.get() + 1);
            Some(format!("user{}", self.0.get()))
        }
    }
    let rec = RecordingResolver::new(Changing::default());
    let replay = ReplayResolver::new();
    for want in ["user1", "user2"] {
        assert_eq!(rec.username(4).as_deref(), Some(want));
        for e in rec.take_entries() {
            assert!(replay.learn(&e));
        }
        assert_eq!(replay.username(4).as_deref(), Some(want));
    }
    assert!(!replay.learn(&Entry::End { exit_code: 0 }));
}

/// `-k`'s helper-error events are recorded with their helper and span.
#[test]
fn helper_error_events_round_trip() {
    let mut h = header();
    h.events = vec![EventSpec::HelperError {
        helper: "probe_read_user_str".into(),
        span: sonde_lang::span::Span::new(12, 30),
    }];
    let rec = read_recording(&write(&h, &[Entry::End { exit_code: 0 }])).unwrap();
    assert_eq!(rec.header, h);
}
