//! Bad recordings (empty, an ELF binary, random bytes, absurd lengths, header types printing
//! cannot handle, missing, truncated in their header) give exit status 1 and one line naming
//! the byte offset, never a panic, in bounded time. A recording cut after its header (a
//! recording run killed) replays up to its last whole entry, then says where it was cut,
//! with exit status 1.

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
        assert!(!err.contains("was cut"), "{what}: {err}");
        assert_offset(what, err, file.to_str().unwrap(), max_offset);
    }
}

/// Asserts that `line` names `file` and a byte offset of at most `max_offset`.
fn assert_offset(what: &str, line: &str, file: &str, max_offset: u64) {
    assert!(line.contains(file), "{what}: {line}");
    let offset: u64 = line
        .split_once("at byte ")
        .and_then(|(_, rest)| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .unwrap_or_else(|| panic!("{what}: no byte offset in {line}"));
    assert!(
        offset <= max_offset,
        "{what}: offset {offset} > {max_offset}: {line}"
    );
}

/// Checks that replaying `bytes`, a recording cut after its header, prints a prefix of
/// `whole` (what the whole recording prints, with `-q`), then says where it was cut, and
/// exits with status 1.
fn assert_cut_file(dir: &TempDir, what: &str, bytes: &[u8], max_offset: u64, whole: &str) {
    let file = dir.path().join("cut.rec");
    std::fs::write(&file, bytes).unwrap();
    let start = Instant::now();
    let out = replay(&file, &["-q"]);
    assert!(start.elapsed() < Duration::from_secs(5), "{what}: slow");
    assert_eq!(out.code, Some(1), "{what}: {out:?}");
    assert!(whole.starts_with(&out.stdout), "{what}: {out:?}");
    let last = out.stderr.trim_end().lines().last().unwrap_or_default();
    assert!(last.contains("was cut at byte"), "{what}: {}", out.stderr);
    assert_offset(what, last, file.to_str().unwrap(), max_offset);
}

/// Truncations of the recording `file` at offsets through the preamble, the header and the
/// entries: through the header each is an error at or before the cut; after it, a replay of
/// the entries before the cut that says where it was.
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
    let whole = replay(file, &["-q"]).stdout;
    for cut in cuts {
        let what = format!("{} cut at {cut} of {}", file.display(), bytes.len());
        if cut < header_end {
            assert_bad_file(&dir, &what, &bytes[..cut], cut as u64);
        } else {
            assert_cut_file(&dir, &what, &bytes[..cut], cut as u64, &whole);
        }
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
        // A valid header followed by random entries: corrupt, or cut (an entry's length
        // passes the end of the file).
        let mut b = good[..entries].to_vec();
        b.extend(random(n));
        let file = dir.path().join("random.rec");
        std::fs::write(&file, &b).unwrap();
        let out = replay(&file, &["-q"]);
        assert_eq!(out.code, Some(1), "{out:?}");
        let last = out.stderr.trim_end().lines().last().unwrap_or_default();
        assert_offset(
            "header + random",
            last,
            file.to_str().unwrap(),
            b.len() as u64,
        );
    }
    // Lengths far beyond the file: the header's, an entry's (the first, Attached).
    let mut b = good.clone();
    b[12..20].copy_from_slice(&u64::MAX.to_le_bytes());
    assert_bad_file(&dir, "huge header length", &b, 20);
    // An entry's length past the end of the file: where the file was cut.
    let mut b = good.clone();
    b[entries + 1..entries + 9].copy_from_slice(&(1u64 << 62).to_le_bytes());
    assert_cut_file(&dir, "huge entry length", &b, entries as u64, "");
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
