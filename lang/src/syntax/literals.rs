//! Integer and string literal decoding.
//!
//! The grammar lexes literals generously (an integer is any alphanumeric run starting with a
//! digit, a string escape is a backslash and any character) so that malformed literals reach
//! this module, which explains precisely what is wrong with them.

/// Why an integer literal was rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IntError {
    /// Not a valid literal; the text says why.
    Invalid(String),
    /// The value does not fit in 64 bits.
    Overflow,
}

/// Multipliers of the duration suffixes (`100ms`, `1s`), in nanoseconds; attach points such
/// as `interval:1s` use the same table.
pub const DURATIONS: &[(&str, u64)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
    ("d", 86_400_000_000_000),
];

/// True for the C integer suffixes bpftrace accepts and ignores (`u`, `l`, `ul`, `ull`, `ll`, ...).
fn is_c_suffix(s: &str) -> bool {
    let lower = s.to_ascii_lowercase();
    matches!(
        lower.as_str(),
        "u" | "l" | "ul" | "lu" | "ll" | "ull" | "llu"
    )
}

/// Decodes an integer literal: decimal, hex (`0x`), octal (leading `0`), `_` separators,
/// exponents (`1e6`), C suffixes (`UL`, ignored) and duration suffixes (`ms`, → nanoseconds).
pub fn parse_int(text: &str) -> Result<u64, IntError> {
    if text.ends_with('_') {
        return Err(IntError::Invalid(
            "a digit separator `_` cannot end a number".into(),
        ));
    }
    let clean: String = text.chars().filter(|&c| c != '_').collect();
    if let Some(hex) = clean
        .strip_prefix("0x")
        .or_else(|| clean.strip_prefix("0X"))
    {
        let end = hex
            .find(|c: char| !c.is_ascii_hexdigit())
            .unwrap_or(hex.len());
        let (digits, suffix) = hex.split_at(end);
        if digits.is_empty() {
            return Err(IntError::Invalid(
                "`0x` must be followed by hexadecimal digits".into(),
            ));
        }
        if !suffix.is_empty() && !is_c_suffix(suffix) {
            return Err(IntError::Invalid(format!(
                "unknown suffix `{suffix}` on a hexadecimal number"
            )));
        }
        return digits_value(digits, 16);
    }
    let end = clean
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(clean.len());
    let (digits, mut suffix) = clean.split_at(end);
    let mut value = if digits.len() > 1 && digits.starts_with('0') {
        if let Some(bad) = digits.chars().find(|c| *c > '7') {
            return Err(IntError::Invalid(format!(
                "`{bad}` is not an octal digit (a leading `0` means octal)"
            )));
        }
        digits_value(digits, 8)?
    } else {
        digits_value(digits, 10)?
    };
    if let Some(rest) = suffix.strip_prefix(['e', 'E']) {
        let exp_end = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if exp_end == 0 {
            return Err(IntError::Invalid(
                "an exponent `e` must be followed by digits".into(),
            ));
        }
        let exp: u32 = rest[..exp_end].parse().map_err(|_| IntError::Overflow)?;
        let scale = 10u64.checked_pow(exp).ok_or(IntError::Overflow)?;
        value = value.checked_mul(scale).ok_or(IntError::Overflow)?;
        suffix = &rest[exp_end..];
    }
    if suffix.is_empty() || is_c_suffix(suffix) {
        return Ok(value);
    }
    if let Some((_, mult)) = DURATIONS.iter().find(|(name, _)| *name == suffix) {
        return value.checked_mul(*mult).ok_or(IntError::Overflow);
    }
    Err(IntError::Invalid(format!(
        "unknown suffix `{suffix}` on a number"
    )))
}

/// The value of a run of digits in `radix` (digits already validated).
fn digits_value(digits: &str, radix: u32) -> Result<u64, IntError> {
    u64::from_str_radix(digits, radix).map_err(|_| IntError::Overflow)
}

/// A bad escape inside a string literal: byte offset (within the literal's body) and length
/// of the escape, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EscapeError {
    /// Offset of the backslash within the string body (after the opening quote).
    pub offset: usize,
    /// Length of the offending escape in bytes.
    pub len: usize,
    /// What is wrong, in words.
    pub message: String,
}

/// Decodes the body of a string literal (between the quotes): `\n \t \r \\ \" \xNN` and octal
/// `\NNN` (so `\0` is a NUL byte). Every bad escape is reported; the others still decode.
pub fn decode_string(body: &str) -> (Vec<u8>, Vec<EscapeError>) {
    let bytes = body.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut errors = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b != b'\\' {
            out.push(b);
            i += 1;
            continue;
        }
        let start = i;
        let Some(&e) = bytes.get(i + 1) else {
            errors.push(EscapeError {
                offset: start,
                len: 1,
                message: "a lone `\\` ends the string".into(),
            });
            break;
        };
        i += 2;
        match e {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'\\' => out.push(b'\\'),
            b'"' => out.push(b'"'),
            b'x' => {
                let n = bytes[i..]
                    .iter()
                    .take(2)
                    .take_while(|c| c.is_ascii_hexdigit())
                    .count();
                if n == 0 {
                    errors.push(EscapeError {
                        offset: start,
                        len: 2,
                        message: "`\\x` must be followed by one or two hexadecimal digits".into(),
                    });
                } else {
                    let text = &body[i..i + n];
                    out.push(u8::from_str_radix(text, 16).unwrap_or(0));
                    i += n;
                }
            }
            b'0'..=b'7' => {
                let n = 1 + bytes[i..]
                    .iter()
                    .take(2)
                    .take_while(|c| (b'0'..=b'7').contains(c))
                    .count();
                let text = &body[i - 1..i - 1 + n];
                let value = u32::from_str_radix(text, 8).unwrap_or(0);
                if value > 255 {
                    errors.push(EscapeError {
                        offset: start,
                        len: n + 1,
                        message: format!("octal escape `\\{text}` is larger than 255"),
                    });
                } else {
                    out.push(value as u8);
                }
                i += n - 1;
            }
            _ => {
                let ch_len = body[i - 1..].chars().next().map_or(1, char::len_utf8);
                let shown = &body[i - 1..i - 1 + ch_len];
                errors.push(EscapeError {
                    offset: start,
                    len: 1 + ch_len,
                    message: format!("unknown escape sequence `\\{shown}`"),
                });
                i += ch_len - 1;
            }
        }
    }
    (out, errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_hex_octal() {
        assert_eq!(parse_int("0"), Ok(0));
        assert_eq!(parse_int("42"), Ok(42));
        assert_eq!(parse_int("0x10"), Ok(16));
        assert_eq!(parse_int("0XfF"), Ok(255));
        assert_eq!(parse_int("010"), Ok(8));
        assert_eq!(parse_int("1_000_000"), Ok(1_000_000));
        assert_eq!(parse_int("18446744073709551615"), Ok(u64::MAX));
    }

    #[test]
    fn exponents_and_suffixes() {
        assert_eq!(parse_int("1e6"), Ok(1_000_000));
        assert_eq!(parse_int("2E3"), Ok(2_000));
        assert_eq!(parse_int("10UL"), Ok(10));
        assert_eq!(parse_int("10ull"), Ok(10));
        assert_eq!(parse_int("10u"), Ok(10));
        assert_eq!(parse_int("7L"), Ok(7));
        assert_eq!(parse_int("0x10ULL"), Ok(16));
        assert_eq!(parse_int("5ms"), Ok(5_000_000));
        assert_eq!(parse_int("1s"), Ok(1_000_000_000));
        assert_eq!(parse_int("2us"), Ok(2_000));
        assert_eq!(parse_int("3ns"), Ok(3));
    }

    #[test]
    fn rejected_integers() {
        assert!(matches!(parse_int("08"), Err(IntError::Invalid(_))));
        assert!(matches!(parse_int("0x"), Err(IntError::Invalid(_))));
        assert!(matches!(parse_int("12abc"), Err(IntError::Invalid(_))));
        assert!(matches!(parse_int("1e"), Err(IntError::Invalid(_))));
        assert!(matches!(parse_int("1_"), Err(IntError::Invalid(_))));
        assert_eq!(parse_int("18446744073709551616"), Err(IntError::Overflow));
        assert_eq!(parse_int("1e20"), Err(IntError::Overflow));
        assert_eq!(parse_int("0x1ffffffffffffffff"), Err(IntError::Overflow));
        assert_eq!(parse_int("100000000000d"), Err(IntError::Overflow));
    }

    #[test]
    fn simple_escapes() {
        let (s, e) = decode_string(r#"a\n\t\r\\\"b"#);
        assert_eq!(s, b"a\n\t\r\\\"b");
        assert!(e.is_empty());
    }

    #[test]
    fn hex_and_octal_escapes() {
        let (s, e) = decode_string(r"\x41\x7a\0\101\7x\x4g");
        assert_eq!(s, b"Az\0A\x07x\x04g");
        assert!(e.is_empty());
    }

    #[test]
    fn bad_escapes_are_all_reported() {
        let (s, e) = decode_string(r"a\qb\xZ\400\é");
        assert_eq!(s, b"abZ");
        assert_eq!(e.len(), 4);
        assert_eq!((e[0].offset, e[0].len), (1, 2));
        assert_eq!(e[0].message, "unknown escape sequence `\\q`");
        assert_eq!((e[1].offset, e[1].len), (4, 2));
        assert_eq!((e[2].offset, e[2].len), (7, 4));
        assert_eq!(e[2].message, "octal escape `\\400` is larger than 255");
        assert_eq!((e[3].offset, e[3].len), (11, 3));
    }

    #[test]
    fn utf8_passes_through() {
        let (s, e) = decode_string("héllo");
        assert_eq!(s, "héllo".as_bytes());
        assert!(e.is_empty());
    }
}
