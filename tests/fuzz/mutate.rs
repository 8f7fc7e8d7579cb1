//! Mutations: one to eight of them stacked on a copy of an input. Byte mutations for any
//! format (with a bias to the first bytes, where binary formats keep their headers);
//! token and line mutations for text.

use crate::common::rng::Rng;

/// Boundary values written over bytes of binary inputs (little-endian).
const INTERESTING: [u64; 12] = [
    0,
    1,
    0x7f,
    0x80,
    0xff,
    0x7fff,
    0xffff,
    0x7fff_ffff,
    0xffff_ffff,
    0x8000_0000_0000_0000,
    u64::MAX,
    0x1_0000,
];

/// A mutated copy of `base` of at most `max_len` bytes; `other` is spliced from,
/// `dictionary`'s tokens are inserted.
pub fn mutate(
    rng: &mut Rng,
    base: &[u8],
    other: &[u8],
    dictionary: &[&str],
    max_len: usize,
) -> Vec<u8> {
    let mut out = base.to_vec();
    let count = 1 + rng.below(8);
    for _ in 0..count {
        let kinds = if dictionary.is_empty() { 8 } else { 12 };
        match rng.below(kinds) {
            0 => flip_bit(rng, &mut out),
            1 => set_byte(rng, &mut out),
            2 => insert_bytes(rng, &mut out),
            3 => delete_range(rng, &mut out),
            4 => duplicate_range(rng, &mut out),
            5 => splice(rng, &mut out, other),
            6 | 7 => interesting(rng, &mut out),
            8 | 9 => insert_token(rng, &mut out, dictionary),
            10 => move_line(rng, &mut out),
            _ => replace_token(rng, &mut out, dictionary),
        }
    }
    out.truncate(max_len);
    out
}

/// A position in `0..=len`, half the time in the first 256 bytes.
fn place(rng: &mut Rng, len: usize) -> usize {
    if len == 0 {
        return 0;
    }
    if rng.below(2) == 0 {
        rng.below(len.min(256) + 1)
    } else {
        rng.below(len + 1)
    }
}

/// A range of `data` of at most `max` bytes.
fn range(rng: &mut Rng, len: usize, max: usize) -> (usize, usize) {
    let start = place(rng, len).min(len);
    let end = (start + 1 + rng.below(max)).min(len);
    (start, end)
}

fn flip_bit(rng: &mut Rng, d: &mut [u8]) {
    if !d.is_empty() {
        let at = place(rng, d.len() - 1);
        d[at] ^= 1 << rng.below(8);
    }
}

fn set_byte(rng: &mut Rng, d: &mut [u8]) {
    if !d.is_empty() {
        let at = place(rng, d.len() - 1);
        d[at] = rng.next() as u8;
    }
}

fn insert_bytes(rng: &mut Rng, d: &mut Vec<u8>) {
    let at = place(rng, d.len());
    let n = 1 + rng.below(8);
    let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
    d.splice(at..at, bytes);
}

fn delete_range(rng: &mut Rng, d: &mut Vec<u8>) {
    let max = if rng.below(4) == 0 { 4096 } else { 16 };
    let (s, e) = range(rng, d.len(), max);
    d.drain(s..e);
}

fn duplicate_range(rng: &mut Rng, d: &mut Vec<u8>) {
    let (s, e) = range(rng, d.len(), 256);
    let copy = d[s..e].to_vec();
    let times = if rng.below(8) == 0 { 64 } else { 1 };
    let at = place(rng, d.len());
    for _ in 0..times {
        d.splice(at..at, copy.iter().copied());
    }
}

fn splice(rng: &mut Rng, d: &mut Vec<u8>, other: &[u8]) {
    let (s, e) = range(rng, other.len(), 512);
    let (ds, de) = range(rng, d.len(), 512);
    d.splice(ds..de, other[s..e].iter().copied());
}

fn interesting(rng: &mut Rng, d: &mut [u8]) {
    let v = INTERESTING[rng.below(INTERESTING.len())];
    let v = if rng.below(4) == 0 {
        v.wrapping_sub(1)
    } else {
        v
    };
    let width = [1, 2, 4, 8][rng.below(4)];
    if d.len() < width {
        return;
    }
    let at = place(rng, d.len() - width);
    d[at..at + width].copy_from_slice(&v.to_le_bytes()[..width]);
}

fn insert_token(rng: &mut Rng, d: &mut Vec<u8>, dictionary: &[&str]) {
    let token = dictionary[rng.below(dictionary.len())];
    // At a token boundary (after a blank or punctuation) more often than not.
    let mut at = rng.below(d.len() + 1);
    if rng.below(4) != 0 {
        while at < d.len() && d[at].is_ascii_alphanumeric() {
            at += 1;
        }
    }
    d.splice(at..at, token.bytes());
}

fn replace_token(rng: &mut Rng, d: &mut Vec<u8>, dictionary: &[&str]) {
    let start = rng.below(d.len() + 1);
    let mut end = start;
    while end < d.len() && (d[end].is_ascii_alphanumeric() || d[end] == b'_') {
        end += 1;
    }
    let end = end.max((start + 1).min(d.len()));
    let token = dictionary[rng.below(dictionary.len())];
    d.splice(start..end, token.bytes());
}

/// Moves, duplicates or deletes one line.
fn move_line(rng: &mut Rng, d: &mut Vec<u8>) {
    let mut lines: Vec<Vec<u8>> = d
        .split_inclusive(|b| *b == b'\n')
        .map(<[u8]>::to_vec)
        .collect();
    if lines.is_empty() {
        return;
    }
    let from = rng.below(lines.len());
    match rng.below(3) {
        0 => {
            let line = lines.remove(from);
            let to = rng.below(lines.len() + 1);
            lines.insert(to, line);
        }
        1 => {
            let line = lines[from].clone();
            lines.insert(from, line);
        }
        _ => {
            lines.remove(from);
        }
    }
    *d = lines.concat();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutations_change_inputs_and_stay_bounded() {
        let mut rng = Rng::new(7);
        let base = b"BEGIN { printf(\"%d\\n\", 1); }\n".to_vec();
        let mut changed = 0;
        for _ in 0..1000 {
            let m = mutate(&mut rng, &base, b"END { exit(); }", &["@m", "{"], 64);
            assert!(m.len() <= 64);
            changed += usize::from(m != base);
        }
        assert!(changed > 900, "{changed}");
    }
}
