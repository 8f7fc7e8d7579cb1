//! The recordings the record tests share: a header with one of every type, event kind and
//! map role, one of every entry, and the helpers that write them and read them back.

use super::{Entry, Header, RecordError, RecordWriter, read_recording};
use sonde_compiler::program::{EventSpec, MapKind, MapRole, MapSpec};
use sonde_compiler::value::Frame;
use sonde_lang::types::{AddrSpace, AggKind, Field, Record, StackMode, Type, tuple_layout};
use std::sync::Arc;

/// A field `name` at byte `offset` of type `ty`, neither a bit field nor `__data_loc`.
pub(super) fn field(name: &str, offset: u32, ty: Type) -> Field {
    Field {
        name: name.into(),
        offset,
        ty,
        bitfield: None,
        data_loc: false,
        nul_room: false,
    }
}

/// One of every `Type` variant, with records nested, shared and pointed to.
pub(super) fn every_type() -> Vec<Type> {
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
                nul_room: false,
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

/// A header with one of every event kind, every map role and a user map of every type.
pub(super) fn header() -> Header {
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

/// A stack frame at `addr`, with the symbol and module given.
pub(super) fn frame(addr: u64, symbol: Option<&str>, module: Option<&str>) -> Frame {
    Frame {
        addr,
        symbol: symbol.map(Into::into),
        module: module.map(Into::into),
        ..Frame::default()
    }
}

/// An event record: the 8-byte event index, then `payload`.
pub(super) fn record(index: u64, payload: &[u8]) -> Vec<u8> {
    let mut r = index.to_le_bytes().to_vec();
    r.extend_from_slice(payload);
    r
}

/// One of every entry kind, ending with `End`.
pub(super) fn every_entry() -> Vec<Entry> {
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
                Frame {
                    source: Some("/src/ls.c:12".into()),
                    inlined: true,
                    ..frame(0x55, Some("inner"), Some("/usr/bin/ls"))
                },
                Frame {
                    source: Some("/src/ls.c:40".into()),
                    ..frame(0x55, Some("main+5"), Some("/usr/bin/ls"))
                },
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

/// The bytes of a recording of `header` and `entries`.
pub(super) fn write(header: &Header, entries: &[Entry]) -> Vec<u8> {
    let mut w = RecordWriter::new(Vec::new(), header).unwrap();
    w.write_all(entries).unwrap();
    w.finish().unwrap()
}

/// The bytes of a recording of [`header`] and [`every_entry`].
pub(super) fn sample() -> Vec<u8> {
    write(&header(), &every_entry())
}

/// The error reading `bytes` gives; panics when they read as a recording.
pub(super) fn read_err(bytes: &[u8]) -> RecordError {
    match read_recording(bytes) {
        Ok(r) => panic!("read a recording of {} entries", r.entries.len()),
        Err(e) => e,
    }
}

/// The bytes of an `End` entry with exit code 1.
pub(super) const END: [u8; 10] = [13, 1, 0, 0, 0, 0, 0, 0, 0, 0];
