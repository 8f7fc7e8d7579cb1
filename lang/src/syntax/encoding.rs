//! A script's bytes as text: scripts are UTF-8, and one that is not is refused with the
//! first invalid bytes named and pointed at (in the text read with those bytes replaced).

use crate::diag::Diagnostic;
use crate::span::Span;

/// Code of a script that is not UTF-8 text.
pub const NOT_UTF8: &str = "sonde::parse::encoding";

/// The text of a script read as `bytes`. Bytes that are not UTF-8 give, besides the text
/// with each bad sequence replaced by U+FFFD (what the diagnostic shows), a diagnostic
/// naming the first one (`byte 0xFF`), pointing at it, and counting the others.
pub fn decode(bytes: Vec<u8>) -> Result<String, (String, Diagnostic)> {
    let err = match String::from_utf8(bytes) {
        Ok(text) => return Ok(text),
        Err(e) => e,
    };
    let first = err.utf8_error();
    let at = first.valid_up_to();
    let bytes = err.into_bytes();
    let bad_len = first.error_len().unwrap_or(bytes.len() - at);
    let bad = &bytes[at..at + bad_len];
    let named = bad
        .iter()
        .map(|b| format!("0x{b:02X}"))
        .collect::<Vec<_>>()
        .join(" ");
    let what = if bad.len() == 1 {
        format!("byte {named}")
    } else {
        format!("bytes {named}")
    };
    let others = invalid_sequences(&bytes[at + bad_len..]);
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let line = text[..at].matches('\n').count() + 1;
    let mut message = format!("the script is not UTF-8 text: {what} on line {line}");
    if others > 0 {
        message += &format!(" (and {others} more invalid sequence{})", plural(others));
    }
    let why = if first.error_len().is_none() {
        "an unfinished UTF-8 sequence at the end of the file"
    } else {
        "not UTF-8"
    };
    let d = Diagnostic::error(NOT_UTF8, Span::new(at, at + '\u{FFFD}'.len_utf8()), message)
        .with_label(format!("{what}: {why}"))
        .with_help(
            "sonde reads scripts as UTF-8: convert the file (e.g. `iconv -f latin1 -t utf-8`), \
             or write the character as an escape in a string (`\\xff`)",
        );
    Err((text, d))
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// How many invalid UTF-8 sequences `bytes` holds.
fn invalid_sequences(mut bytes: &[u8]) -> usize {
    let mut n = 0;
    while let Err(e) = std::str::from_utf8(bytes) {
        n += 1;
        let skip = e.valid_up_to() + e.error_len().unwrap_or(bytes.len() - e.valid_up_to());
        bytes = &bytes[skip..];
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_text_is_kept() {
        assert_eq!(
            decode("BEGIN { $é = 1; }".into()).unwrap(),
            "BEGIN { $é = 1; }"
        );
    }

    #[test]
    fn a_bad_byte_is_named_and_pointed_at() {
        let (text, d) = decode(b"BEGIN {\n  $a\xff = 1; $b\xfe\xfe = 2; }".to_vec()).unwrap_err();
        assert_eq!(&text[12..15], "\u{FFFD}");
        assert_eq!(d.span, Span::new(12, 15));
        assert_eq!(d.code, NOT_UTF8);
        assert_eq!(
            d.message,
            "the script is not UTF-8 text: byte 0xFF on line 2 (and 2 more invalid sequences)"
        );
    }

    #[test]
    fn an_unfinished_sequence_names_its_bytes() {
        let (_, d) = decode(b"BEGIN { } \xe2\x82".to_vec()).unwrap_err();
        assert_eq!(
            d.message,
            "the script is not UTF-8 text: bytes 0xE2 0x82 on line 1"
        );
        assert_eq!(d.span, Span::new(10, 13));
    }
}
