//! What the writer writes reads back the same: one of every entry and type, behind the
//! magic, the version and the header length.

use crate::record::fixtures::{every_entry, header, sample};
use crate::record::read_recording;

#[test]
fn every_entry_and_type_round_trips() {
    let rec = read_recording(&sample()).unwrap();
    assert_eq!(rec.header, header());
    assert_eq!(rec.entries, every_entry());
}

#[test]
fn file_starts_with_magic_and_version() {
    let bytes = sample();
    assert_eq!(&bytes[..8], b"SONDEREC");
    assert_eq!(&bytes[8..12], &[1, 0, 2, 0]);
    let len = u64::from_le_bytes(bytes[12..20].try_into().unwrap());
    // The first entry follows the header: `Attached` with its 8-byte body.
    let first = 20 + len as usize;
    assert_eq!(bytes[first], 1);
    assert_eq!(&bytes[first + 1..first + 9], &8u64.to_le_bytes());
}
