//! Input records for the userspace engine: reading lines in large chunks, splitting them into
//! fields the way awk does, and awk's string-to-number conversion (`num()`).

use std::io::{self, Read};
use std::os::fd::RawFd;

/// How lines are split into fields.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum FieldSep {
    /// awk's default: runs of blanks (space, tab) separate fields; leading and trailing blanks
    /// are ignored.
    #[default]
    Blanks,
    /// Every occurrence of this byte string separates two fields (empty fields included).
    Literal(Vec<u8>),
}

impl FieldSep {
    /// The separator `-F SEP` names: a single space means the default, `\t` is a tab, and any
    /// other text is taken literally (awk would read a longer one as a regular expression).
    pub fn from_flag(sep: &str) -> FieldSep {
        match sep {
            " " | "" => FieldSep::Blanks,
            "\\t" | "t" => FieldSep::Literal(b"\t".to_vec()),
            s => FieldSep::Literal(s.as_bytes().to_vec()),
        }
    }
}

/// The record a probe is looking at: its bytes (without the newline) and its fields, split
/// as far as a probe has asked.
#[derive(Debug, Default)]
pub struct Record {
    line: Vec<u8>,
    /// Fields found so far, as (start, end) offsets.
    fields: Vec<(u32, u32)>,
    /// Where splitting stopped (`usize::MAX` once the whole line is split).
    scan: usize,
    sep: FieldSep,
    /// Records read so far (awk's NR).
    pub nr: u64,
}

impl Record {
    /// A record splitting its fields on `sep`.
    pub fn new(sep: FieldSep) -> Self {
        Record {
            sep,
            ..Default::default()
        }
    }

    /// Makes `line` the current record and counts it.
    pub fn set(&mut self, line: &[u8]) {
        self.line.clear();
        self.line.extend_from_slice(line);
        self.fields.clear();
        self.scan = 0;
        self.nr += 1;
    }

    /// The current line.
    pub fn line(&self) -> &[u8] {
        &self.line
    }

    /// Splits until `want` fields are known or the line ends.
    fn split_to(&mut self, want: usize) {
        let l = &self.line;
        let mut i = self.scan;
        if i == usize::MAX {
            return;
        }
        match &self.sep {
            FieldSep::Blanks => {
                let blank = |b: u8| b == b' ' || b == b'\t' || b == b'\n';
                while self.fields.len() < want {
                    while i < l.len() && blank(l[i]) {
                        i += 1;
                    }
                    if i >= l.len() {
                        i = usize::MAX;
                        break;
                    }
                    let start = i;
                    while i < l.len() && !blank(l[i]) {
                        i += 1;
                    }
                    self.fields.push((start as u32, i as u32));
                }
            }
            FieldSep::Literal(sep) => {
                if l.is_empty() {
                    i = usize::MAX;
                }
                while i != usize::MAX && self.fields.len() < want {
                    let rest = &l[i..];
                    let at = if sep.len() == 1 {
                        memchr::memchr(sep[0], rest)
                    } else {
                        memchr::memmem::find(rest, sep)
                    };
                    match at {
                        Some(n) => {
                            self.fields.push((i as u32, (i + n) as u32));
                            i += n + sep.len();
                        }
                        None => {
                            self.fields.push((i as u32, l.len() as u32));
                            i = usize::MAX;
                        }
                    }
                }
            }
        }
        self.scan = i;
    }

    /// The number of fields (awk's NF).
    pub fn nf(&mut self) -> u64 {
        self.split_to(usize::MAX);
        self.fields.len() as u64
    }

    /// Field `n` (1-based); field 0 is the whole line, an absent field is empty.
    pub fn field(&mut self, n: i64) -> &[u8] {
        if n == 0 {
            return &self.line;
        }
        let Some(i) = usize::try_from(n - 1).ok() else {
            return &[];
        };
        if i >= self.fields.len() {
            self.split_to(i.saturating_add(1));
        }
        match self.fields.get(i) {
            Some(&(s, e)) => &self.line[s as usize..e as usize],
            None => &[],
        }
    }
}

/// Copies `src` into the `size`-byte string buffer at `dst`: at most `size - 1` bytes, then
/// NUL padding (so equal strings are equal keys). Returns the bytes copied.
///
/// # Safety
/// `dst` must be valid for `size` bytes of writes.
pub unsafe fn write_str(dst: *mut u8, size: usize, src: &[u8]) -> usize {
    if size == 0 || dst.is_null() {
        return 0;
    }
    let n = src.len().min(size - 1);
    // SAFETY: the caller guarantees `size` writable bytes; `n < size`.
    unsafe {
        std::ptr::copy_nonoverlapping(src.as_ptr(), dst, n);
        std::ptr::write_bytes(dst.add(n), 0, size - n);
    }
    n
}

/// awk's conversion of a string's leading number, in integers: blanks are skipped, then an
/// optional sign, digits, an optional fraction and an optional exponent; the number times
/// `scale` is returned with its fraction dropped (toward zero), saturated to the `i64` range.
/// A string with no leading number gives 0.
pub fn parse_num(s: &[u8], scale: i64) -> i64 {
    // Fast path: a plain run of up to 18 digits ending the string (or before a NUL or a
    // blank), with scale 1 — the common case of numeric fields.
    if scale == 1 && !s.is_empty() && s[0].is_ascii_digit() {
        let mut v: u64 = 0;
        let mut i = 0;
        while i < s.len().min(18) && s[i].is_ascii_digit() {
            v = v * 10 + u64::from(s[i] - b'0');
            i += 1;
        }
        if i == s.len() || matches!(s[i], 0 | b' ' | b'\t' | b'\n' | b'\r') {
            return v as i64;
        }
    }
    let s = match memchr::memchr(0, s) {
        Some(end) => &s[..end],
        None => s,
    };
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) {
        i += 1;
    }
    let mut neg = false;
    if i < s.len() && (s[i] == b'-' || s[i] == b'+') {
        neg = s[i] == b'-';
        i += 1;
    }
    // The number is mantissa × 10^exp, keeping at most 30 significant digits.
    let mut mantissa: i128 = 0;
    let mut exp: i64 = 0;
    let mut digits = 0;
    let mut any = false;
    while i < s.len() && s[i].is_ascii_digit() {
        any = true;
        if digits < 30 {
            mantissa = mantissa * 10 + i128::from(s[i] - b'0');
            if mantissa != 0 {
                digits += 1;
            }
        } else {
            exp += 1;
        }
        i += 1;
    }
    if i < s.len() && s[i] == b'.' {
        i += 1;
        while i < s.len() && s[i].is_ascii_digit() {
            any = true;
            if digits < 30 {
                mantissa = mantissa * 10 + i128::from(s[i] - b'0');
                if mantissa != 0 {
                    digits += 1;
                }
                exp -= 1;
            }
            i += 1;
        }
    }
    if !any {
        return 0;
    }
    if i < s.len() && (s[i] == b'e' || s[i] == b'E') {
        let mut j = i + 1;
        let mut eneg = false;
        if j < s.len() && (s[j] == b'-' || s[j] == b'+') {
            eneg = s[j] == b'-';
            j += 1;
        }
        if j < s.len() && s[j].is_ascii_digit() {
            let mut e: i64 = 0;
            while j < s.len() && s[j].is_ascii_digit() {
                e = (e * 10 + i64::from(s[j] - b'0')).min(1_000_000);
                j += 1;
            }
            exp += if eneg { -e } else { e };
        }
    }
    let mut v = mantissa.saturating_mul(i128::from(scale));
    if exp > 0 {
        for _ in 0..exp.min(40) {
            v = v.saturating_mul(10);
        }
    } else {
        for _ in 0..(-exp).min(40) {
            v /= 10;
        }
        if -exp > 40 {
            v = 0;
        }
    }
    if neg {
        v = -v;
    }
    v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// Longest record kept whole: a longer line is still one record, but of its first
/// `MAX_LINE` bytes only (the rest is skipped, with a warning), so that memory stays bounded
/// whatever the input.
pub const MAX_LINE: usize = 16 << 20;

/// The warning for a line longer than [`MAX_LINE`] (given once per run).
pub fn long_line_warning(max: usize) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        sonde_system::warnings::warn(&format!(
            "an input line is longer than {} MiB: the probes see its first {} MiB only \
             (line, fields); the rest of it is skipped",
            max >> 20,
            max >> 20
        ));
    });
}

/// Reads lines from a file descriptor in large chunks.
pub struct LineReader {
    file: Box<dyn Read>,
    fd: RawFd,
    buf: Vec<u8>,
    /// Start of the unread part of `buf`.
    pos: usize,
    /// End of the valid bytes of `buf`.
    end: usize,
    eof: bool,
    /// Longest record ([`MAX_LINE`]).
    max_line: usize,
    /// True while the rest of a line cut at `max_line` is being skipped.
    skipping: bool,
}

/// What [`LineReader::next_line`] found.
pub enum Next<'a> {
    /// A line (without its `\n`).
    Line(&'a [u8]),
    /// No complete line is buffered; [`LineReader::fill`] reads more.
    NeedInput,
    /// The input ended.
    Eof,
}

impl LineReader {
    /// A reader of `file`, whose descriptor is `fd` (polled for readiness).
    pub fn new(file: Box<dyn Read>, fd: RawFd) -> Self {
        LineReader {
            file,
            fd,
            buf: vec![0; 1 << 20],
            pos: 0,
            end: 0,
            eof: false,
            max_line: MAX_LINE,
            skipping: false,
        }
    }

    /// A reader whose records are at most `max_line` bytes (tests).
    #[cfg(test)]
    fn with_max_line(file: Box<dyn Read>, max_line: usize) -> Self {
        LineReader {
            max_line,
            buf: vec![0; 16],
            ..LineReader::new(file, -1)
        }
    }

    /// The descriptor read.
    pub fn fd(&self) -> RawFd {
        self.fd
    }

    /// The next buffered line. A line longer than [`MAX_LINE`] is one record of its first
    /// `MAX_LINE` bytes; the rest of it is skipped (with a warning, once per run).
    pub fn next_line(&mut self) -> Next<'_> {
        if self.skipping {
            let avail = &self.buf[self.pos..self.end];
            match memchr::memchr(b'\n', avail) {
                Some(n) => {
                    self.pos += n + 1;
                    self.skipping = false;
                }
                None => {
                    self.pos = self.end;
                    return if self.eof { Next::Eof } else { Next::NeedInput };
                }
            }
        }
        let avail = &self.buf[self.pos..self.end];
        if let Some(n) = memchr::memchr(b'\n', &avail[..avail.len().min(self.max_line + 1)]) {
            let start = self.pos;
            self.pos += n + 1;
            return Next::Line(&self.buf[start..start + n]);
        }
        if avail.len() > self.max_line {
            // No newline in the first `max_line + 1` bytes: the line is cut.
            long_line_warning(self.max_line);
            let start = self.pos;
            self.pos += self.max_line;
            self.skipping = true;
            return Next::Line(&self.buf[start..start + self.max_line]);
        }
        if self.eof && !avail.is_empty() {
            let start = self.pos;
            self.pos = self.end;
            return Next::Line(&self.buf[start..self.end]);
        }
        if self.eof { Next::Eof } else { Next::NeedInput }
    }

    /// Reads more input (blocking). Returns the number of bytes read (0 at end of input).
    pub fn fill(&mut self) -> io::Result<usize> {
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.pos = 0;
        }
        if self.end == self.buf.len() {
            let grown = (self.buf.len() * 2).min(self.max_line + (1 << 20));
            self.buf.resize(grown.max(self.end + 1), 0);
        }
        loop {
            match self.file.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(0);
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                    if sonde_system::signals::stop_requested() {
                        return Err(e);
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_splitting_is_awks() {
        let mut r = Record::new(FieldSep::Blanks);
        r.set(b"  a \t bb   c  ");
        assert_eq!(r.nf(), 3);
        assert_eq!(r.field(1), b"a");
        assert_eq!(r.field(3), b"c");
        assert_eq!(r.field(4), b"");
        assert_eq!(r.field(-1), b"");
        assert_eq!(r.field(0), b"  a \t bb   c  ");
        r.set(b"");
        assert_eq!(r.nf(), 0);
        assert_eq!(r.nr, 2);
    }

    #[test]
    fn literal_separators_keep_empty_fields() {
        let mut r = Record::new(FieldSep::from_flag(","));
        r.set(b"a,,b,");
        assert_eq!(r.nf(), 4);
        assert_eq!(r.field(2), b"");
        assert_eq!(r.field(3), b"b");
        let mut r = Record::new(FieldSep::from_flag("\\t"));
        r.set(b"x y\tz");
        assert_eq!(r.field(1), b"x y");
        let mut r = Record::new(FieldSep::from_flag("::"));
        r.set(b"a::b:c");
        assert_eq!(r.field(2), b"b:c");
    }

    #[test]
    fn numbers_as_awk_reads_them() {
        assert_eq!(parse_num(b"42", 1), 42);
        assert_eq!(parse_num(b"  -17xyz", 1), -17);
        assert_eq!(parse_num(b"+5", 1), 5);
        assert_eq!(parse_num(b"12.5", 1000), 12500);
        assert_eq!(parse_num(b"12.5", 1), 12);
        assert_eq!(parse_num(b"-12.5", 1), -12);
        assert_eq!(parse_num(b".5", 10), 5);
        assert_eq!(parse_num(b"1e3", 1), 1000);
        assert_eq!(parse_num(b"1.5E-1", 100), 15);
        assert_eq!(parse_num(b"abc", 1), 0);
        assert_eq!(parse_num(b"", 1), 0);
        assert_eq!(parse_num(b"-", 1), 0);
        assert_eq!(parse_num(b"99999999999999999999999", 1), i64::MAX);
        assert_eq!(parse_num(b"-99999999999999999999999", 1), i64::MIN);
        assert_eq!(parse_num(b"7\0garbage", 1), 7);
        assert_eq!(parse_num(b"1e999999999", 1), i64::MAX);
        assert_eq!(parse_num(b"5e", 1), 5);
    }

    /// Every record of `data` read with records of at most `max` bytes, read `chunk` bytes
    /// at a time.
    fn records(data: &[u8], max: usize, chunk: usize) -> Vec<Vec<u8>> {
        struct Trickle(std::io::Cursor<Vec<u8>>, usize);
        impl Read for Trickle {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = buf.len().min(self.1);
                self.0.read(&mut buf[..n])
            }
        }
        let file = Trickle(std::io::Cursor::new(data.to_vec()), chunk);
        let mut r = LineReader::with_max_line(Box::new(file), max);
        let mut lines = Vec::new();
        loop {
            match r.next_line() {
                Next::Line(l) => lines.push(l.to_vec()),
                Next::NeedInput => {
                    r.fill().unwrap();
                }
                Next::Eof => break,
            }
        }
        lines
    }

    #[test]
    fn a_long_line_is_one_record_cut_at_the_bound() {
        let mut data = vec![b'a'; 100];
        data.extend_from_slice(b"\nshort\n");
        data.extend(vec![b'b'; 33]);
        data.extend_from_slice(b"\nlast");
        for chunk in [1, 3, 7, 64, 4096] {
            assert_eq!(
                records(&data, 32, chunk),
                vec![
                    vec![b'a'; 32],
                    b"short".to_vec(),
                    vec![b'b'; 32],
                    b"last".to_vec()
                ],
                "chunk {chunk}"
            );
        }
        // Exactly the bound is whole, with or without its newline.
        assert_eq!(records(&[b'c'; 32], 32, 5), vec![vec![b'c'; 32]]);
        assert_eq!(records(b"0123\n", 4, 1), vec![b"0123".to_vec()]);
    }

    #[test]
    fn reader_splits_lines_across_chunks() {
        let data = b"one\ntwo\r\n\nlast".to_vec();
        let mut r = LineReader::new(Box::new(std::io::Cursor::new(data)), -1);
        let mut lines = Vec::new();
        loop {
            match r.next_line() {
                Next::Line(l) => lines.push(l.to_vec()),
                Next::NeedInput => {
                    r.fill().unwrap();
                }
                Next::Eof => break,
            }
        }
        assert_eq!(
            lines,
            vec![
                b"one".to_vec(),
                b"two\r".to_vec(),
                b"".to_vec(),
                b"last".to_vec()
            ]
        );
    }
}
