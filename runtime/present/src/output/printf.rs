//! `printf()` formatting with glibc's semantics, as bpftrace gets by calling `printf(3)`:
//! the length modifier decides the C type an argument is truncated to (`%d` is a 32-bit `int`,
//! `%ld` 64 bits), `%p` prints `0x...` or `(nil)`, and bpftrace's `%r`, `%rx`, `%rh` print
//! buffers.

use super::text::value_text;
use super::{NoResolver, Resolver};
use sonde_compiler::value::Value;
use sonde_lang::format::{Conv, FmtPiece, FmtSpec};

/// Formats `args` with parsed `pieces` into text (invalid UTF-8 replaced); see
/// [`format_printf_with`] for the exact bytes.
pub fn format_printf(pieces: &[FmtPiece], args: &[Value]) -> String {
    String::from_utf8_lossy(&format_printf_with(pieces, args, &NoResolver)).into_owned()
}

/// Formats `args` with parsed `pieces`, resolving symbols and stacks with `resolver`.
/// A spec without a matching argument prints as written.
pub fn format_printf_with(pieces: &[FmtPiece], args: &[Value], resolver: &dyn Resolver) -> Vec<u8> {
    let mut out = Vec::new();
    let mut args = args.iter();
    for piece in pieces {
        match piece {
            FmtPiece::Lit(s) => out.extend_from_slice(s.as_bytes()),
            FmtPiece::Spec(spec) => match args.next() {
                Some(v) => format_one(&mut out, spec, v, resolver),
                None => out.extend_from_slice(spec.text.as_bytes()),
            },
        }
    }
    out
}

/// Pads `body` to the spec's width with spaces.
fn pad(out: &mut Vec<u8>, spec: &FmtSpec, body: &[u8]) {
    let fill = spec.width.unwrap_or(0).saturating_sub(body.len());
    if spec.flags.left {
        out.extend_from_slice(body);
        out.resize(out.len() + fill, b' ');
    } else {
        out.resize(out.len() + fill, b' ');
        out.extend_from_slice(body);
    }
}

/// Pads `prefix` + `digits` to the width: zeros between them with `0` (and no precision),
/// spaces otherwise.
fn pad_number(out: &mut Vec<u8>, spec: &FmtSpec, prefix: &str, digits: &str, zero_ok: bool) {
    let len = prefix.len() + digits.len();
    let fill = spec.width.unwrap_or(0).saturating_sub(len);
    if spec.flags.left {
        out.extend_from_slice(prefix.as_bytes());
        out.extend_from_slice(digits.as_bytes());
        out.resize(out.len() + fill, b' ');
    } else if spec.flags.zero && zero_ok {
        out.extend_from_slice(prefix.as_bytes());
        out.resize(out.len() + fill, b'0');
        out.extend_from_slice(digits.as_bytes());
    } else {
        out.resize(out.len() + fill, b' ');
        out.extend_from_slice(prefix.as_bytes());
        out.extend_from_slice(digits.as_bytes());
    }
}

/// Applies a precision (minimum digit count) to digits; `.0` with a zero value prints none.
fn with_precision(digits: String, precision: Option<usize>, is_zero: bool) -> String {
    match precision {
        Some(0) if is_zero => String::new(),
        Some(p) if digits.len() < p => format!("{}{digits}", "0".repeat(p - digits.len())),
        _ => digits,
    }
}

fn format_int(out: &mut Vec<u8>, spec: &FmtSpec, raw: u64) {
    let bits = spec.length.bits();
    let mask = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let unsigned = raw & mask;
    let shift = 64 - bits;
    let signed = ((raw << shift) as i64) >> shift;
    let zero_ok = spec.precision.is_none();
    match spec.conv {
        Conv::Signed => {
            let digits = with_precision(
                signed.unsigned_abs().to_string(),
                spec.precision,
                signed == 0,
            );
            let sign = if signed < 0 {
                "-"
            } else if spec.flags.plus {
                "+"
            } else if spec.flags.space {
                " "
            } else {
                ""
            };
            pad_number(out, spec, sign, &digits, zero_ok);
        }
        Conv::Unsigned => {
            let digits = with_precision(unsigned.to_string(), spec.precision, unsigned == 0);
            pad_number(out, spec, "", &digits, zero_ok);
        }
        Conv::HexLower | Conv::HexUpper => {
            let mut digits = with_precision(format!("{unsigned:x}"), spec.precision, unsigned == 0);
            let mut prefix = if spec.flags.alt && unsigned != 0 {
                "0x"
            } else {
                ""
            }
            .to_string();
            if spec.conv == Conv::HexUpper {
                digits = digits.to_uppercase();
                prefix = prefix.to_uppercase();
            }
            pad_number(out, spec, &prefix, &digits, zero_ok);
        }
        Conv::Octal => {
            let mut digits = with_precision(format!("{unsigned:o}"), spec.precision, unsigned == 0);
            if spec.flags.alt && !digits.starts_with('0') {
                digits.insert(0, '0');
            }
            pad_number(out, spec, "", &digits, zero_ok);
        }
        Conv::Char => pad(out, spec, &[raw as u8]),
        Conv::Pointer => {
            if raw == 0 {
                pad(out, spec, b"(nil)");
            } else {
                let digits = with_precision(format!("{raw:x}"), spec.precision, false);
                pad_number(out, spec, "0x", &digits, zero_ok);
            }
        }
        _ => out.extend_from_slice(spec.text.as_bytes()),
    }
}

/// `%r`: printable ASCII as is, every other byte as `\xNN`.
pub fn escape_buf(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    for &b in bytes {
        if (0x20..0x7f).contains(&b) {
            out.push(b);
        } else {
            out.extend_from_slice(format!("\\x{b:02x}").as_bytes());
        }
    }
    out
}

fn format_one(out: &mut Vec<u8>, spec: &FmtSpec, v: &Value, resolver: &dyn Resolver) {
    match spec.conv {
        c if c.is_integer() => match Value::int_bits(v) {
            Some(raw) => format_int(out, spec, raw),
            None => out.extend_from_slice(spec.text.as_bytes()),
        },
        Conv::GfpFlags => match Value::int_bits(v) {
            Some(raw) => pad(out, spec, super::gfp::gfp_text(raw, resolver).as_bytes()),
            None => out.extend_from_slice(spec.text.as_bytes()),
        },
        Conv::Str => {
            let mut text = value_text(v, resolver, false);
            if let Some(p) = spec.precision {
                text.truncate(p);
            }
            pad(out, spec, &text);
        }
        Conv::Buf | Conv::BufHex | Conv::BufHexSpaced => {
            let bytes = match v {
                Value::Buf(b) | Value::Str(b) => b.clone(),
                other => value_text(other, resolver, false),
            };
            let body = match spec.conv {
                Conv::Buf => escape_buf(&bytes),
                Conv::BufHex => bytes
                    .iter()
                    .flat_map(|b| format!("\\x{b:02x}").into_bytes())
                    .collect(),
                _ => bytes
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect::<Vec<_>>()
                    .join(" ")
                    .into_bytes(),
            };
            pad(out, spec, &body);
        }
        _ => out.extend_from_slice(spec.text.as_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_lang::format::parse_format;

    fn f(fmt: &str, args: &[Value]) -> String {
        format_printf(&parse_format(fmt).unwrap(), args)
    }

    fn s(x: &str) -> Value {
        Value::Str(x.as_bytes().to_vec())
    }

    #[test]
    fn widths_and_flags_match_bpftrace() {
        // Each expected string was printed by bpftrace 0.17 for the same format and value.
        assert_eq!(f("<%d>", &[Value::Int(42)]), "<42>");
        assert_eq!(f("<%5d>", &[Value::Int(42)]), "<   42>");
        assert_eq!(f("<%-5d>", &[Value::Int(42)]), "<42   >");
        assert_eq!(f("<%05d>", &[Value::Int(42)]), "<00042>");
        assert_eq!(f("<%5.3d>", &[Value::Int(42)]), "<  042>");
        assert_eq!(f("<%-08d>", &[Value::Int(42)]), "<42      >");
        assert_eq!(
            f(
                "[%08.3d][%.0d][%-3c|]",
                &[Value::Int(5), Value::Int(0), Value::Int(66)]
            ),
            "[     005][][B  |]"
        );
        assert_eq!(
            f(
                "<%X><%o><%lx>",
                &[Value::Int(42), Value::Int(42), Value::Int(42)]
            ),
            "<2A><52><2a>"
        );
        assert_eq!(
            f(
                "<%c><%5c><%-5c>",
                &[Value::Int(42), Value::Int(42), Value::Int(42)]
            ),
            "<*><    *><*    >"
        );
        assert_eq!(f("<%.5x|>", &[Value::Int(3)]), "<00003|>");
    }

    #[test]
    fn c_integer_types() {
        // bpftrace 0.17: printf("[%x][%X][%o][%u][%d][%hd][%hhd][%hu][%hhx][%ld][%lu][%c][%c][%p][%p]",
        //   -1, -255, -8, -1, (uint64)-1, 70000, 300, -1, -1, -1, -1, 256+65, -1, -1, 0)
        let args = [
            -1, -255, -8, -1, -1, 70000, 300, -1, -1, -1, -1, 321, -1, -1, 0,
        ]
        .map(Value::Int);
        assert_eq!(
            f(
                "[%x][%X][%o][%u][%d][%hd][%hhd][%hu][%hhx][%ld][%lu][%c][%c][%p][%p]",
                &args
            ),
            "[ffffffff][FFFFFF01][37777777770][4294967295][-1][4464][44][65535][ff][-1][18446744073709551615][A][\u{fffd}][0xffffffffffffffff][(nil)]"
        );
        // bpftrace 0.17: 5000000000 with %d %u %x.
        let big = Value::Int(5_000_000_000);
        assert_eq!(
            f("[%d][%u][%x]", &[big.clone(), big.clone(), big]),
            "[705032704][705032704][2a05f200]"
        );
        assert_eq!(
            f("%lld %llu", &[Value::Int(-3), Value::UInt(u64::MAX)]),
            "-3 18446744073709551615"
        );
        assert_eq!(f("%d", &[Value::Bool(true)]), "1");
        assert_eq!(
            f(
                "%+d % d %+d",
                &[Value::Int(5), Value::Int(5), Value::Int(-5)]
            ),
            "+5  5 -5"
        );
        assert_eq!(
            f(
                "%#x %#X %#o %#x",
                &[
                    Value::Int(255),
                    Value::Int(255),
                    Value::Int(8),
                    Value::Int(0)
                ]
            ),
            "0xff 0XFF 010 0"
        );
    }

    #[test]
    fn pointers() {
        // bpftrace 0.17: %p, %10p, %-10p, %.4p, %010p of 65.
        let v = [Value::Int(65)];
        assert_eq!(f("%p|", &v), "0x41|");
        assert_eq!(f("%10p|", &v), "      0x41|");
        assert_eq!(f("%-10p|", &v), "0x41      |");
        assert_eq!(f("%.4p|", &v), "0x0041|");
        assert_eq!(f("%010p|", &v), "0x00000041|");
        assert_eq!(f("%lp|", &v), "0x41|");
    }

    #[test]
    fn strings() {
        // bpftrace 0.17: %-s, %.3s, %10.3s, %-20s, %08s.
        assert_eq!(f("%-s|", &[s("ab")]), "ab|");
        assert_eq!(f("%.3s|", &[s("abcdef")]), "abc|");
        assert_eq!(f("%10.3s|", &[s("abcdef")]), "       abc|");
        assert_eq!(f("%-20s|", &[s("bpftrace")]), "bpftrace            |");
        assert_eq!(f("%08s|", &[s("ab")]), "      ab|");
        assert_eq!(f("%s|", &[s("a\x01b")]), "a\x01b|");
        assert_eq!(f("a%%b %%%d\n", &[Value::Int(3)]), "a%b %3\n");
        let sym = Value::Symbol {
            kernel: true,
            addr: 1234,
            pid: 0,
            name: None,
        };
        assert_eq!(f("%s|%s|", &[sym.clone(), sym]), "0x4d2|0x4d2|");
        assert_eq!(
            f("%s", &[Value::Inet("0.0.0.0".parse().unwrap())]),
            "0.0.0.0"
        );
    }

    #[test]
    fn buffers() {
        // bpftrace 0.17: %r of "a\tb\x01\x7fz\"\\", %rx and %rh of "ab\x01".
        let b = Value::Buf(b"a\tb\x01\x7fz\"\\".to_vec());
        assert_eq!(f("%r", &[b]), "a\\x09b\\x01\\x7fz\"\\");
        let b = Value::Buf(b"ab\x01".to_vec());
        assert_eq!(f("%rx", std::slice::from_ref(&b)), "\\x61\\x62\\x01");
        assert_eq!(f("%rh", &[b]), "61 62 01");
    }

    #[test]
    fn missing_arguments_print_the_spec() {
        assert_eq!(f("%d and %s", &[Value::Int(1)]), "1 and %s");
        let bytes = format_printf_with(
            &parse_format("%s").unwrap(),
            &[Value::Str(vec![0xff])],
            &NoResolver,
        );
        assert_eq!(bytes, vec![0xff]);
    }
}
