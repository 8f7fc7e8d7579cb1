//! Round trips of every entry and type, and a reader that survives any file.

use super::fixtures::*;
use super::*;
use sonde_lang::types::Type;
use std::sync::Arc;

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
