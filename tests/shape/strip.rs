//! Blanks out comments and the contents of string and char literals so that the other
//! scanners only ever see code.
//!
//! The result has exactly the bytes of the input, position for position: every blanked byte
//! becomes a space and every newline stays, so byte offsets and line numbers found in the
//! stripped text are those of the original file (and a string's contents can be read back
//! from the original at the offsets of its quotes, as `#[path = "..."]` needs).

/// Returns `src` with comments (`//`, `/* */` nested, doc comments) and the contents of
/// string literals (`"..."`, `b"..."`, `c"..."`, raw `r#"..."#`) and char literals (`'"'`,
/// `b'\''`) replaced by spaces. Quotes stay; lifetimes (`'a`) and labels stay as code.
pub fn strip(src: &str) -> String {
    let bytes = src.as_bytes();
    let mut out = bytes.to_vec();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        i = if b == b'/' && bytes.get(i + 1) == Some(&b'/') {
            line_comment(bytes, &mut out, i)
        } else if b == b'/' && bytes.get(i + 1) == Some(&b'*') {
            block_comment(bytes, &mut out, i)
        } else if b == b'"' {
            string(bytes, &mut out, i)
        } else if b == b'\'' {
            quote(bytes, &mut out, i)
        } else if is_ident_byte(b) {
            word(bytes, &mut out, i)
        } else {
            i + 1
        };
    }
    // Only whole UTF-8 sequences were blanked (to spaces) or kept, so this cannot fail.
    String::from_utf8(out).expect("stripping keeps UTF-8 intact")
}

/// Whether `b` can be part of an identifier or number (non-ASCII bytes count: Rust allows
/// Unicode identifiers, and a multi-byte character is then kept whole).
fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

/// Replaces `out[from..to]` by spaces, keeping newlines.
fn blank(out: &mut [u8], from: usize, to: usize) {
    for byte in &mut out[from..to] {
        if *byte != b'\n' {
            *byte = b' ';
        }
    }
}

/// Blanks a `//` comment starting at `i`; returns the index of its newline (or the end).
fn line_comment(bytes: &[u8], out: &mut [u8], i: usize) -> usize {
    let end = bytes[i..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len(), |n| i + n);
    blank(out, i, end);
    end
}

/// Blanks a (possibly nested) `/* */` comment starting at `i`; returns the index after it.
fn block_comment(bytes: &[u8], out: &mut [u8], i: usize) -> usize {
    let mut depth = 0usize;
    let mut j = i;
    while j < bytes.len() {
        if bytes[j] == b'/' && bytes.get(j + 1) == Some(&b'*') {
            depth += 1;
            j += 2;
        } else if bytes[j] == b'*' && bytes.get(j + 1) == Some(&b'/') {
            depth -= 1;
            j += 2;
            if depth == 0 {
                break;
            }
        } else {
            j += 1;
        }
    }
    let end = j.min(bytes.len());
    blank(out, i, end);
    end
}

/// Blanks the contents of a `"..."` literal whose opening quote is at `i` (escapes such as
/// `\"` and `\\` are honoured); returns the index after the closing quote.
fn string(bytes: &[u8], out: &mut [u8], i: usize) -> usize {
    let mut j = i + 1;
    while j < bytes.len() && bytes[j] != b'"' {
        j += if bytes[j] == b'\\' { 2 } else { 1 };
    }
    let end = j.min(bytes.len());
    blank(out, i + 1, end);
    end + 1
}

/// Handles a `'` at `i`: a char literal (`'x'`, `'"'`, `'\''`, `'\u{1F600}'`) has its
/// contents blanked; a lifetime or label (`'a`, `'outer:`) is left alone. Returns the index
/// to continue from.
fn quote(bytes: &[u8], out: &mut [u8], i: usize) -> usize {
    match bytes.get(i + 1) {
        Some(b'\\') => {
            let mut j = i + 3;
            while j < bytes.len() && bytes[j] != b'\'' && bytes[j] != b'\n' {
                j += 1;
            }
            let end = j.min(bytes.len());
            blank(out, i + 1, end);
            end + 1
        }
        Some(&first) => {
            let len = utf8_len(first);
            if bytes.get(i + 1 + len) == Some(&b'\'') {
                blank(out, i + 1, i + 1 + len);
                i + 2 + len
            } else {
                i + 1
            }
        }
        None => i + 1,
    }
}

/// The length in bytes of the UTF-8 character whose first byte is `first`.
fn utf8_len(first: u8) -> usize {
    match first {
        0xf0..=0xff => 4,
        0xe0..=0xef => 3,
        0xc0..=0xdf => 2,
        _ => 1,
    }
}

/// Skips an identifier, keyword or number starting at `i`; when it is a raw-string prefix
/// (`r`, `br`, `cr`) followed by `#`s and a quote, blanks that raw string. Byte and C string
/// prefixes (`b"`, `c"`, `b'`) need nothing: the quote after them is handled next.
fn word(bytes: &[u8], out: &mut [u8], i: usize) -> usize {
    let mut j = i;
    while j < bytes.len() && is_ident_byte(bytes[j]) {
        j += 1;
    }
    if !matches!(&bytes[i..j], b"r" | b"br" | b"cr") {
        return j;
    }
    let hashes = bytes[j..].iter().take_while(|&&b| b == b'#').count();
    if bytes.get(j + hashes) != Some(&b'"') {
        return j; // `r#ident` (a raw identifier) or a plain `r`.
    }
    let open = j + hashes + 1;
    let mut k = open;
    while k < bytes.len() {
        if bytes[k] == b'"' && bytes[k + 1..].iter().take_while(|&&b| b == b'#').count() >= hashes {
            blank(out, open, k);
            return k + 1 + hashes;
        }
        k += 1;
    }
    blank(out, open, bytes.len());
    bytes.len()
}

/// Stripping tricky sources.
#[cfg(test)]
mod tests {
    use super::strip;

    /// Comments of every kind go; offsets and lines stay.
    #[test]
    fn comments_go_and_lines_stay() {
        let src = "a // crate::x\n/* crate::y\n /* nested */ crate::z */ b\n/// doc crate::d\nc";
        let out = strip(src);
        assert_eq!(out.len(), src.len());
        assert_eq!(out.lines().count(), src.lines().count());
        assert!(!out.contains("crate"), "{out}");
        assert!(out.contains('a') && out.contains('b') && out.contains('c'));
    }

    /// Strings (with escaped quotes, byte and C strings) keep only their quotes.
    #[test]
    fn strings_keep_their_quotes_only() {
        let out = strip(r#"f("crate::a \" crate::b", b"x\\", c"y") + g"#);
        assert_eq!(out, r#"f("                    ", b"   ", c" ") + g"#);
    }

    /// Raw strings end only at a quote with as many hashes as they opened with.
    #[test]
    fn raw_strings_with_hashes_and_quotes_inside() {
        let src = "let s = r#\"a \"quoted\" crate::x\"#; let t = br##\"\"#\"##; crate::y";
        let out = strip(src);
        assert!(
            !out.contains("crate::x") && !out.contains("quoted"),
            "{out}"
        );
        assert!(out.ends_with("; crate::y"), "{out}");
        assert!(out.starts_with("let s = r#\""), "{out}");
    }

    /// `'"'` and `'\''` are chars, not strings; lifetimes and labels stay.
    #[test]
    fn char_literals_that_look_like_strings_and_lifetimes() {
        let src = "let q = '\"'; let e = '\\''; let b = b'\"'; fn f<'a>(x: &'a str) { 'l: loop {} } let u = '\\u{1F600}'; let s = \"crate::in\";";
        let out = strip(src);
        assert!(
            !out.contains("crate::in"),
            "a '\"' char must not open a string: {out}"
        );
        assert!(out.contains("<'a>") && out.contains("&'a str") && out.contains("'l: loop"));
        assert!(!out.contains("1F600"), "{out}");
    }

    /// Raw identifiers and non-ASCII text keep the offsets intact.
    #[test]
    fn raw_identifiers_and_unicode_are_kept() {
        let src = "let r#type = 'é'; let π = \"ü\"; crate::x";
        let out = strip(src);
        assert_eq!(out.len(), src.len());
        assert!(
            out.starts_with("let r#type = '") && out.contains("π") && out.ends_with("crate::x")
        );
    }
}
