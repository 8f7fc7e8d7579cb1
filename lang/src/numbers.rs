//! Numbers written as text outside the script: positional parameters (`$1`), read as
//! bpftrace 0.27 reads them (`util::to_uint`): decimal, `0x` hex, `0b` binary, `0` octal,
//! `_` separators, an exponent (`1e6`), C's integer suffixes (`u`, `ul`, `ull`, `l`, `ll`)
//! and time units (`ns`, `us`, `ms`, `s`, `m`, `h`, `d`), a leading `-` for a negative one.

/// The value of an unsigned number (see the module docs), `None` when it is no number or
/// does not fit its type.
pub fn parse_uint(text: &str) -> Option<u64> {
    let n: String = text.chars().filter(|c| *c != '_').collect();
    let (digits, radix) = if let Some(h) = n.strip_prefix("0x").or(n.strip_prefix("0X")) {
        (h, 16)
    } else if let Some(b) = n.strip_prefix("0b").or(n.strip_prefix("0B")) {
        (b, 2)
    } else if n.len() >= 2 && n.starts_with('0') && matches!(n.as_bytes()[1], b'0'..=b'7') {
        (&n[1..], 8)
    } else {
        (n.as_str(), 10)
    };
    let end = digits
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(digits.len());
    if end == 0 {
        return None;
    }
    let mut value = u64::from_str_radix(&digits[..end], radix).ok()?;
    let mut rest = &digits[end..];
    // An exponent: `1e6`, its coefficient 1 to 9.
    if let Some(exp) = rest.strip_prefix(['e', 'E'])
        && exp.starts_with(|c: char| ('1'..='9').contains(&c))
    {
        if !(1..10).contains(&value) {
            return None;
        }
        let end = exp.find(|c: char| !c.is_ascii_digit()).unwrap_or(exp.len());
        let pow: u32 = exp[..end].parse().ok()?;
        value = value.checked_mul(10u64.checked_pow(pow)?)?;
        rest = &exp[end..];
    }
    let (max, unit) = match rest {
        "" | "ns" => (u64::MAX, 1),
        "u" => (u64::from(u32::MAX), 1),
        "ul" | "ull" => (u64::MAX, 1),
        "l" | "ll" => (i64::MAX as u64, 1),
        "us" => (u64::MAX, 1_000),
        "ms" => (u64::MAX, 1_000_000),
        "s" => (u64::MAX, 1_000_000_000),
        "m" => (u64::MAX, 60_000_000_000),
        "h" => (u64::MAX, 3_600_000_000_000),
        "d" => (u64::MAX, 86_400_000_000_000),
        _ => return None,
    };
    if value > max / unit {
        return None;
    }
    Some(value * unit)
}

/// A positional parameter's value as a number: its 64 bits and whether it is unsigned
/// (above `i64::MAX`); `None` when it is text (or does not fit).
pub fn parse_positional(text: &str) -> Option<(i64, bool)> {
    if let Some(neg) = text.strip_prefix('-') {
        let v = parse_uint(neg)?;
        let n = 0i64.checked_sub_unsigned(v)?;
        return Some((n, false));
    }
    let v = parse_uint(text)?;
    Some((v as i64, v > i64::MAX as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bases_separators_exponents_and_suffixes() {
        assert_eq!(parse_uint("42"), Some(42));
        assert_eq!(parse_uint("0x10"), Some(16));
        assert_eq!(parse_uint("0X1f"), Some(31));
        assert_eq!(parse_uint("0b101"), Some(5));
        assert_eq!(parse_uint("010"), Some(8));
        assert_eq!(parse_uint("0"), Some(0));
        assert_eq!(parse_uint("1_000"), Some(1000));
        assert_eq!(parse_uint("1e6"), Some(1_000_000));
        assert_eq!(parse_uint("10e2"), None);
        assert_eq!(parse_uint("5ms"), Some(5_000_000));
        assert_eq!(parse_uint("7u"), Some(7));
        assert_eq!(parse_uint("18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_uint("18446744073709551616"), None);
        assert_eq!(parse_uint("0x"), None);
        assert_eq!(parse_uint("12abc"), None);
        assert_eq!(parse_uint("hello"), None);
        assert_eq!(parse_uint(""), None);
        assert_eq!(parse_uint("99e99"), None);
    }

    #[test]
    fn positionals_signed_and_unsigned() {
        assert_eq!(parse_positional("-5"), Some((-5, false)));
        assert_eq!(parse_positional("-0x10"), Some((-16, false)));
        assert_eq!(
            parse_positional("-9223372036854775808"),
            Some((i64::MIN, false))
        );
        assert_eq!(parse_positional("-9223372036854775809"), None);
        assert_eq!(parse_positional("0x10"), Some((16, false)));
        assert_eq!(parse_positional("18446744073709551615"), Some((-1, true)));
        assert_eq!(parse_positional("-"), None);
    }
}
