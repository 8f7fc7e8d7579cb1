//! The reader refuses what is not a sound recording (foreign, random, corrupt or absurd
//! bytes, a truncated header, entries that do not fit the header) with an error at the
//! offset where it went wrong, reads a recording cut after its header up to its last whole
//! entry, and skips what a newer minor version added.

use super::read_recording;
use crate::record::fixtures::{END, every_entry, header, read_err, record, sample, write};
use crate::record::{Entry, RecordWriter};

#[test]
fn every_truncation_reads_the_whole_entries_before_the_cut() {
    let bytes = sample();
    let whole = read_recording(&bytes).unwrap();
    assert_eq!(whole.cut, None);
    let header_end = 20 + u64::from_le_bytes(bytes[12..20].try_into().unwrap()) as usize;
    for cut in 0..bytes.len() {
        if cut < header_end {
            // Without its whole header a recording cannot be replayed at all.
            let e = read_err(&bytes[..cut]);
            assert!(
                e.offset <= cut as u64,
                "cut at {cut}: error at {}: {}",
                e.offset,
                e.message
            );
            continue;
        }
        let r = read_recording(&bytes[..cut]).unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
        let c = r.cut.expect("a cut recording says so");
        assert!(c.offset <= cut as u64, "cut at {cut}: {c:?}");
        assert_eq!(c.entries as usize, r.entries.len());
        assert_eq!(
            r.entries[..],
            whole.entries[..r.entries.len()],
            "cut at {cut}"
        );
        assert_eq!(r.header, whole.header);
    }
    // The last entry whole but no End: cut between entries, at the file's end.
    let mut no_end = bytes.clone();
    no_end.truncate(bytes.len() - END.len());
    let r = read_recording(&no_end).unwrap();
    assert_eq!(r.cut.unwrap().offset, no_end.len() as u64);
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
    assert!(e.message.contains("2.2 is newer"), "{e}");
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
    let cut = |raw: &[u8]| {
        let r = read_recording(&with_entries(raw)).unwrap();
        let c = r.cut.expect("cut");
        assert_eq!(c.entries as usize, r.entries.len());
        c
    };
    // No End: cut after the last entry.
    let c = cut(&raw_entry(1, &[0; 8]));
    assert_eq!((c.offset, c.entries), (base + 17, 1));
    // Tag 0 (a zero-filled tail).
    assert_eq!(at(&[0; 64]).offset, base);
    // Bytes after End.
    let mut raw = END.to_vec();
    raw.push(1);
    assert_eq!(at(&raw).offset, base + 10);
    // An entry length beyond the file: cut at that entry.
    let mut raw = vec![1];
    raw.extend_from_slice(&u64::MAX.to_le_bytes());
    let c = cut(&raw);
    assert_eq!((c.offset, c.entries), (base, 0));
    // An entry head cut short.
    let c = cut(&raw[..5]);
    assert_eq!((c.offset, c.entries), (base, 0));
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
fn invalid_utf8_in_an_entry_is_an_error() {
    let base = write(&header(), &[]).len() as u64;
    let mut body = 7u64.to_le_bytes().to_vec();
    body.extend_from_slice(&[1, 2, 0, 0, 0, 0xff, 0xfe]);
    let e = read_err(&with_entries(&raw_entry(9, &body)));
    assert_eq!(e.offset, base + 9 + 13);
}

/// A stack body of format 1.1 (no sources after the frames) reads with frames without
/// source lines; since 1.2 a sources list of another length than the frames' is an error.
#[test]
fn stack_frames_without_sources_are_read() {
    // kernel false, raw 9, limit 4, frames present, one frame: addr 0x10, no symbol, no
    // module.
    let mut body = vec![0];
    body.extend(9u64.to_le_bytes());
    body.extend(4u32.to_le_bytes());
    body.push(1);
    body.extend(1u32.to_le_bytes());
    body.extend(0x10u64.to_le_bytes());
    body.extend([0, 0]);
    let mut raw = raw_entry(6, &body);
    raw.extend_from_slice(&END);
    let rec = read_recording(&with_entries(&raw)).unwrap();
    let Entry::Stack {
        frames: Some(frames),
        ..
    } = &rec.entries[0]
    else {
        panic!("{:?}", rec.entries);
    };
    assert_eq!(
        frames[..],
        [sonde_compiler::value::Frame::new(0x10, None, None)]
    );
    // Two sources for one frame.
    body.extend(2u32.to_le_bytes());
    body.extend([0, 0, 0, 0]);
    let mut raw = raw_entry(6, &body);
    raw.extend_from_slice(&END);
    let e = read_err(&with_entries(&raw));
    assert!(e.message.contains("2 frame sources for 1 frames"), "{e}");
}
