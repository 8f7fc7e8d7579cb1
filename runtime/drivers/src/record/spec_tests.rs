//! The header's types and specs: records written once and read back shared, `-k`'s
//! helper-error events read back the same, types too deep to read refused by the writer, and
//! types printing could not handle refused by the reader at their offset.

use crate::record::fixtures::{END, header, read_err, sample, write};
use crate::record::{Entry, MAX_TYPE_DEPTH, RecordWriter, read_recording};
use sonde_compiler::program::EventSpec;
use sonde_lang::types::Type;
use std::sync::Arc;

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
