//! Bad recordings (truncated at many offsets, empty, an ELF binary, random bytes, absurd
//! lengths, header types printing cannot handle, missing) give exit status 1 and one line
//! naming the byte offset, never a panic, in bounded time.

use crate::common::TempDir;
use crate::handmade::{INT64, STR8, handmade, header_end, recording};
use crate::replay;
use std::path::Path;
use std::time::{Duration, Instant};

/// Checks that replaying `bytes` (written to a file in `dir`) fails cleanly: exit status 1,
/// nothing on stdout, one line on stderr naming the file and, for format errors, a byte
/// offset at most `max_offset`; no panic; quickly.
fn assert_bad_file(dir: &TempDir, what: &str, bytes: &[u8], max_offset: u64) {
    let file = dir.path().join("bad.rec");
    std::fs::write(&file, bytes).unwrap();
    for extra in [&[][..], &["-e", "replay { @n = count(); }"][..]] {
        let start = Instant::now();
        let out = replay(&file, extra);
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{what}: took {:?}",
            start.elapsed()
        );
        assert_eq!(out.code, Some(1), "{what}: {out:?}");
        assert!(out.stdout.is_empty(), "{what}: {out:?}");
        let err = out.stderr.trim_end();
        assert_eq!(err.lines().count(), 1, "{what}: {err}");
        assert!(err.contains(file.to_str().unwrap()), "{what}: {err}");
        let offset: u64 = err
            .split_once("at byte ")
            .and_then(|(_, rest)| rest.split(':').next()?.parse().ok())
            .unwrap_or_else(|| panic!("{what}: no byte offset in {err}"));
        assert!(
            offset <= max_offset,
            "{what}: offset {offset} > {max_offset}: {err}"
        );
    }
}

/// Truncations of the recording `file` at offsets through the preamble, the header and the
/// entries: each is an error at or before the cut.
pub(crate) fn check_truncations(file: &Path) {
    let bytes = std::fs::read(file).unwrap();
    let header_end = header_end(&bytes);
    let dir = TempDir::new("rec-trunc");
    let mut cuts: Vec<usize> = vec![0, 1, 7, 8, 9, 11, 12, 19, 20, 21, 24];
    cuts.extend((1..8).map(|k| 20 + (header_end - 20) * k / 8));
    cuts.extend([header_end, header_end + 1, header_end + 9]);
    cuts.extend((1..16).map(|k| header_end + (bytes.len() - header_end) * k / 16));
    cuts.extend([bytes.len() - 2, bytes.len() - 1]);
    cuts.sort();
    cuts.dedup();
    for cut in cuts {
        let what = format!("{} cut at {cut} of {}", file.display(), bytes.len());
        assert_bad_file(&dir, &what, &bytes[..cut], cut as u64);
    }
}

#[test]
fn bad_recordings_are_one_line_errors() {
    let dir = TempDir::new("rec-bad");
    let good = handmade(true);
    let file = dir.path().join("good.rec");
    std::fs::write(&file, &good).unwrap();
    check_truncations(&file);

    assert_bad_file(&dir, "empty file", b"", 0);
    let ls = std::fs::read("/bin/ls").unwrap();
    assert_bad_file(&dir, "/bin/ls", &ls, 0);
    // Random bytes, alone and after a valid magic and version (deterministic).
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut random = |n: usize| -> Vec<u8> {
        (0..n)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                (seed >> 24) as u8
            })
            .collect()
    };
    let entries = header_end(&good);
    for n in [1, 7, 64, 4096] {
        assert_bad_file(&dir, &format!("{n} random bytes"), &random(n), 0);
        let mut b = b"SONDEREC\x01\0\0\0".to_vec();
        b.extend(random(n));
        assert_bad_file(
            &dir,
            &format!("magic + {n} random bytes"),
            &b,
            b.len() as u64,
        );
        // A valid header followed by random entries.
        let mut b = good[..entries].to_vec();
        b.extend(random(n));
        assert_bad_file(
            &dir,
            &format!("header + {n} random bytes"),
            &b,
            b.len() as u64,
        );
    }
    // Lengths far beyond the file: the header's, an entry's (the first, Attached).
    let mut b = good.clone();
    b[12..20].copy_from_slice(&u64::MAX.to_le_bytes());
    assert_bad_file(&dir, "huge header length", &b, 20);
    let mut b = good.clone();
    b[entries + 1..entries + 9].copy_from_slice(&(1u64 << 62).to_le_bytes());
    assert_bad_file(&dir, "huge entry length", &b, b.len() as u64);
    // Types printing would choke on are refused when the header is read: an integer of 0
    // bits (sign extension would shift by 64), an array of 2^32 - 1 empty tuples (as many
    // values), 2^16 strings of 2^16 bytes (a size past 32 bits). And a printf record shorter
    // than its arguments, which a replay script would read past.
    let empty_tuples: &[u8] = &[7, 8, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff];
    let huge_array: &[u8] = &[7, 3, 0, 0, 1, 0, 0, 0, 1, 0];
    for (what, ty) in [
        ("integer of 0 bits", &[2u8, 0, 1][..]),
        ("2^32 - 1 empty tuples", empty_tuples),
        ("array of 4 GiB", huge_array),
    ] {
        let b = recording(Some(&[ty, STR8]), &[(1, vec![0; 16])]);
        assert_bad_file(&dir, what, &b, header_end(&b) as u64);
    }
    let b = recording(Some(&[INT64, STR8]), &[(1, vec![0; 15])]);
    assert_bad_file(&dir, "short printf record", &b, b.len() as u64);

    // A missing file: a one-line error naming it.
    let missing = dir.path().join("missing.rec");
    let out = replay(&missing, &[]);
    assert_eq!(out.code, Some(1), "{out:?}");
    let err = out.stderr.trim_end();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(missing.to_str().unwrap()), "{err}");
    // A directory.
    let out = replay(dir.path(), &[]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert_eq!(out.stderr.trim_end().lines().count(), 1, "{}", out.stderr);
}
