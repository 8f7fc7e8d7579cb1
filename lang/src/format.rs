//! printf-style format strings: parsing and argument checking (pure, no IO).
//!
//! The accepted syntax is C's: `%[flags][width][.precision][length]conversion` with flags
//! `-+ #0`, length modifiers `hh h l ll z j t`, conversions `d i u x X o c s p e f g` and
//! `%%`, plus bpftrace's buffer conversions `%r` (printable bytes, others as `\xNN`), `%rx`
//! (every byte as `\xNN`) and `%rh` (hex bytes separated by spaces).
//!
//! Formatting itself (the runtime's job) follows glibc: without a length modifier an integer
//! conversion works on a C `int` (32 bits), `h` on a `short`, `hh` on a `char`, and `l`, `ll`,
//! `z`, `j`, `t` on 64 bits, exactly as bpftrace does by handing the format to `printf(3)`.

use crate::types::Type;
use std::fmt;

/// A conversion character.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Conv {
    /// `%d` / `%i`: signed decimal.
    Signed,
    /// `%u`: unsigned decimal.
    Unsigned,
    /// `%x`: lower-case hexadecimal.
    HexLower,
    /// `%X`: upper-case hexadecimal.
    HexUpper,
    /// `%o`: octal.
    Octal,
    /// `%c`: one byte.
    Char,
    /// `%s`: a string (or anything printable as text: symbols, stacks, addresses).
    Str,
    /// `%p`: a pointer, `0x...` (`(nil)` for zero).
    Pointer,
    /// `%e`, `%f`, `%g` (and upper-case forms): floating point; sonde has no float values,
    /// so [`check_args`] rejects them.
    Float(char),
    /// `%r`: a buffer with non-printable bytes as `\xNN`.
    Buf,
    /// `%rx`: a buffer with every byte as `\xNN`.
    BufHex,
    /// `%rh`: a buffer as hex bytes separated by spaces (`61 62 01`).
    BufHexSpaced,
    /// `%gr`: an integer as the kernel's GFP flag names (`GFP_KERNEL|__GFP_ZERO`).
    GfpFlags,
}

impl Conv {
    /// True for integer conversions (`d i u x X o c p`).
    pub fn is_integer(self) -> bool {
        matches!(
            self,
            Conv::Signed
                | Conv::Unsigned
                | Conv::HexLower
                | Conv::HexUpper
                | Conv::Octal
                | Conv::Char
                | Conv::Pointer
        )
    }
}

/// A length modifier.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Length {
    /// None: a C `int` (32 bits).
    #[default]
    Int,
    /// `hh`: a `char` (8 bits).
    Char,
    /// `h`: a `short` (16 bits).
    Short,
    /// `l`, `ll`, `z`, `j`, `t`: 64 bits.
    Long,
}

impl Length {
    /// The width in bits an integer is truncated to before formatting.
    pub fn bits(self) -> u32 {
        match self {
            Length::Char => 8,
            Length::Short => 16,
            Length::Int => 32,
            Length::Long => 64,
        }
    }
}

/// The flags of a conversion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Flags {
    /// `-`: left-justify.
    pub left: bool,
    /// `+`: always print a sign for signed conversions.
    pub plus: bool,
    /// ` `: a space instead of a `+` sign.
    pub space: bool,
    /// `#`: alternate form (`0x` prefix, leading `0` for octal).
    pub alt: bool,
    /// `0`: pad with zeros.
    pub zero: bool,
}

/// One conversion specification.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FmtSpec {
    /// Flags.
    pub flags: Flags,
    /// Minimum field width.
    pub width: Option<usize>,
    /// Precision (`.N`).
    pub precision: Option<usize>,
    /// Length modifier.
    pub length: Length,
    /// The conversion.
    pub conv: Conv,
    /// Byte offset of the `%` in the format string.
    pub offset: usize,
    /// The spec as written (`%-16s`), for messages.
    pub text: String,
}

/// A piece of a parsed format string.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum FmtPiece {
    /// Literal text (`%%` already turned into `%`).
    Lit(String),
    /// A conversion consuming one argument.
    Spec(FmtSpec),
}

/// A malformed conversion specification.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormatError {
    /// Byte offset in the format string of the `%` that starts the bad spec.
    pub offset: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at byte {})", self.message, self.offset)
    }
}

impl std::error::Error for FormatError {}

/// Largest width or precision accepted (larger ones are almost certainly mistakes).
pub const MAX_WIDTH: usize = 4096;

/// Parses a printf format string into literal text and conversion specs.
pub fn parse_format(fmt: &str) -> Result<Vec<FmtPiece>, FormatError> {
    let bytes = fmt.as_bytes();
    let mut pieces = Vec::new();
    let mut lit = String::new();
    let mut i = 0;
    while i < bytes.len() {
        let Some(rel) = fmt[i..].find('%') else {
            lit.push_str(&fmt[i..]);
            break;
        };
        lit.push_str(&fmt[i..i + rel]);
        let start = i + rel;
        if bytes.get(start + 1) == Some(&b'%') {
            lit.push('%');
            i = start + 2;
            continue;
        }
        let (spec, end) = parse_spec(fmt, start)?;
        if !lit.is_empty() {
            pieces.push(FmtPiece::Lit(std::mem::take(&mut lit)));
        }
        pieces.push(FmtPiece::Spec(spec));
        i = end;
    }
    if !lit.is_empty() {
        pieces.push(FmtPiece::Lit(lit));
    }
    Ok(pieces)
}

fn parse_spec(fmt: &str, start: usize) -> Result<(FmtSpec, usize), FormatError> {
    let bytes = fmt.as_bytes();
    let err = |message: String| FormatError {
        offset: start,
        message,
    };
    let mut i = start + 1;
    let mut flags = Flags::default();
    while let Some(&c) = bytes.get(i) {
        match c {
            b'-' => flags.left = true,
            b'+' => flags.plus = true,
            b' ' => flags.space = true,
            b'#' => flags.alt = true,
            b'0' => flags.zero = true,
            _ => break,
        }
        i += 1;
    }
    let width = parse_number(bytes, &mut i).map_err(|m| err(m.into()))?;
    let precision = if bytes.get(i) == Some(&b'.') {
        i += 1;
        Some(
            parse_number(bytes, &mut i)
                .map_err(|m| err(m.into()))?
                .unwrap_or(0),
        )
    } else {
        None
    };
    if bytes.get(i) == Some(&b'*') {
        return Err(err(
            "`*` widths are not supported; write the width as a number".into(),
        ));
    }
    let (length, written_len) = match (bytes.get(i), bytes.get(i + 1)) {
        (Some(b'h'), Some(b'h')) => (Length::Char, 2),
        (Some(b'h'), _) => (Length::Short, 1),
        (Some(b'l'), Some(b'l')) => (Length::Long, 2),
        (Some(b'l' | b'z' | b'j' | b't'), _) => (Length::Long, 1),
        _ => (Length::Int, 0),
    };
    i += written_len;
    let conv = match bytes.get(i) {
        None => return Err(err("incomplete conversion specification at the end".into())),
        Some(b'd' | b'i') => Conv::Signed,
        Some(b'u') => Conv::Unsigned,
        Some(b'x') => Conv::HexLower,
        Some(b'X') => Conv::HexUpper,
        Some(b'o') => Conv::Octal,
        Some(b'c') => Conv::Char,
        Some(b's') => Conv::Str,
        Some(b'p') => Conv::Pointer,
        Some(b'g') if bytes.get(i + 1) == Some(&b'r') => {
            i += 1;
            Conv::GfpFlags
        }
        Some(&c @ (b'e' | b'E' | b'f' | b'F' | b'g' | b'G')) => Conv::Float(char::from(c)),
        Some(b'r') => match bytes.get(i + 1) {
            Some(b'x') => {
                i += 1;
                Conv::BufHex
            }
            Some(b'h') => {
                i += 1;
                Conv::BufHexSpaced
            }
            _ => Conv::Buf,
        },
        Some(_) => {
            let c = fmt[i..].chars().next().unwrap_or('?');
            return Err(err(format!("unknown conversion `%{c}`")));
        }
    };
    i += 1;
    let text = fmt[start..i].to_string();
    if written_len > 0 && !conv.is_integer() && conv != Conv::GfpFlags {
        return Err(err(format!(
            "length modifiers cannot be used with `{text}`"
        )));
    }
    let spec = FmtSpec {
        flags,
        width,
        precision,
        length,
        conv,
        offset: start,
        text,
    };
    Ok((spec, i))
}

fn parse_number(bytes: &[u8], i: &mut usize) -> Result<Option<usize>, &'static str> {
    let start = *i;
    let mut n: usize = 0;
    while let Some(d) = bytes.get(*i).filter(|b| b.is_ascii_digit()) {
        n = n.saturating_mul(10).saturating_add(usize::from(d - b'0'));
        *i += 1;
    }
    if *i == start {
        return Ok(None);
    }
    if n > MAX_WIDTH {
        return Err("width or precision too large (at most 4096)");
    }
    Ok(Some(n))
}

/// How a value of type `ty` can be formatted.
fn type_word(ty: &Type) -> String {
    match ty {
        Type::Int { .. } | Type::Bool | Type::Enum { .. } | Type::Ptr { .. } => "integer".into(),
        Type::Str { .. } => "string".into(),
        Type::Buf { .. } => "buffer".into(),
        Type::Tuple(_) => "tuple".into(),
        Type::Agg(k) => crate::types::agg_name(k).into(),
        other => other.to_string(),
    }
}

/// True when `%s` can print a value of type `ty` as text.
fn is_textual(ty: &Type) -> bool {
    matches!(
        ty,
        Type::Str { .. }
            | Type::Enum { .. }
            | Type::Stack { .. }
            | Type::Symbol { .. }
            | Type::Inet
            | Type::MacAddr
            | Type::Timestamp
            | Type::Username
            | Type::CgroupPath { .. }
    )
}

/// Checks the argument types against the conversions of a parsed format string.
///
/// On error returns the index of the offending argument (or, for a count mismatch, the
/// number of arguments given) and a message.
pub fn check_args(pieces: &[FmtPiece], arg_types: &[Type]) -> Result<(), (usize, String)> {
    let specs: Vec<&FmtSpec> = pieces
        .iter()
        .filter_map(|p| match p {
            FmtPiece::Spec(s) => Some(s),
            FmtPiece::Lit(_) => None,
        })
        .collect();
    if specs.len() < arg_types.len() {
        return Err((
            specs.len(),
            format!(
                "too many arguments for the format string ({} given, {} expected)",
                arg_types.len(),
                specs.len()
            ),
        ));
    }
    if specs.len() > arg_types.len() {
        return Err((
            arg_types.len(),
            format!(
                "not enough arguments for the format string ({} given, {} expected)",
                arg_types.len(),
                specs.len()
            ),
        ));
    }
    for (i, (spec, ty)) in specs.iter().zip(arg_types).enumerate() {
        let ok = match spec.conv {
            Conv::Float(c) => {
                return Err((
                    i,
                    format!(
                        "unsupported format specifier: {c} (bpftrace has no floating-point values)"
                    ),
                ));
            }
            c if c.is_integer() || c == Conv::GfpFlags => ty.is_integer() || ty.is_ptr(),
            Conv::Str => is_textual(ty),
            _ => matches!(ty, Type::Buf { .. } | Type::Str { .. }),
        };
        if !ok {
            let wanted = match spec.conv {
                Conv::Str => "string",
                Conv::Buf | Conv::BufHex | Conv::BufHexSpaced => "buffer",
                _ => "integer",
            };
            return Err((
                i,
                format!(
                    "`{}` expects a value of type {wanted} ({} given)",
                    spec.text,
                    type_word(ty)
                ),
            ));
        }
    }
    Ok(())
}

/// The number of conversions (arguments expected) in parsed pieces.
pub fn spec_count(pieces: &[FmtPiece]) -> usize {
    pieces
        .iter()
        .filter(|p| matches!(p, FmtPiece::Spec(_)))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(fmt: &str) -> FmtSpec {
        match parse_format(fmt).unwrap().as_slice() {
            [FmtPiece::Spec(s)] => s.clone(),
            other => panic!("expected one spec, got {other:?}"),
        }
    }

    #[test]
    fn literals_and_percent() {
        assert_eq!(
            parse_format("a%%b %% c\n").unwrap(),
            vec![FmtPiece::Lit("a%b % c\n".into())]
        );
        assert_eq!(parse_format("").unwrap(), vec![]);
    }

    #[test]
    fn mixed_pieces() {
        let p = parse_format("pid %d comm %s\n").unwrap();
        assert_eq!(p.len(), 5);
        assert_eq!(p[0], FmtPiece::Lit("pid ".into()));
        assert!(matches!(&p[1], FmtPiece::Spec(s) if s.conv == Conv::Signed && s.offset == 4));
        assert_eq!(p[2], FmtPiece::Lit(" comm ".into()));
        assert!(matches!(&p[3], FmtPiece::Spec(s) if s.conv == Conv::Str && s.offset == 12));
        assert_eq!(p[4], FmtPiece::Lit("\n".into()));
    }

    #[test]
    fn flags_width_precision_length() {
        let s = spec("%-16s");
        assert!(s.flags.left && !s.flags.zero);
        assert_eq!((s.width, s.precision, s.conv), (Some(16), None, Conv::Str));
        let s = spec("%08.3llx");
        assert!(s.flags.zero);
        assert_eq!((s.width, s.precision), (Some(8), Some(3)));
        assert_eq!((s.length, s.conv), (Length::Long, Conv::HexLower));
        let s = spec("%+ #0d");
        assert!(s.flags.plus && s.flags.space && s.flags.alt && s.flags.zero);
        assert_eq!(spec("%hhu").length, Length::Char);
        assert_eq!(spec("%hd").length, Length::Short);
        assert_eq!(spec("%zu").length, Length::Long);
        assert_eq!(spec("%jd").length, Length::Long);
        assert_eq!(spec("%td").length, Length::Long);
        assert_eq!(spec("%.d").precision, Some(0));
        assert_eq!(spec("%i").conv, Conv::Signed);
        assert_eq!(spec("%X").conv, Conv::HexUpper);
        assert_eq!(spec("%p").conv, Conv::Pointer);
        assert_eq!(spec("%g").conv, Conv::Float('g'));
    }

    #[test]
    fn buffer_conversions() {
        assert_eq!(spec("%r").conv, Conv::Buf);
        assert_eq!(spec("%rx").conv, Conv::BufHex);
        assert_eq!(spec("%rh").conv, Conv::BufHexSpaced);
        let p = parse_format("%ry").unwrap();
        assert_eq!(p[1], FmtPiece::Lit("y".into()));
    }

    #[test]
    fn errors_carry_offsets() {
        let e = parse_format("ab %q").unwrap_err();
        assert_eq!(e.offset, 3);
        assert_eq!(e.message, "unknown conversion `%q`");
        let e = parse_format("100%").unwrap_err();
        assert_eq!(e.offset, 3);
        assert!(parse_format("%*d").is_err());
        assert!(parse_format("%ls").is_err());
        assert!(parse_format("%99999d").is_err());
        assert_eq!(
            parse_format("x %é").unwrap_err().message,
            "unknown conversion `%é`"
        );
    }

    #[test]
    fn check_counts() {
        let p = parse_format("%d %s").unwrap();
        let e = check_args(&p, &[Type::I64]).unwrap_err();
        assert_eq!(
            e,
            (
                1,
                "not enough arguments for the format string (1 given, 2 expected)".into()
            )
        );
        let e = check_args(&p, &[Type::I64, Type::Str { size: 16 }, Type::I64]).unwrap_err();
        assert_eq!(e.0, 2);
        assert!(check_args(&p, &[Type::U32, Type::Str { size: 16 }]).is_ok());
    }

    #[test]
    fn check_types() {
        let p = parse_format("%d").unwrap();
        let e = check_args(&p, &[Type::Str { size: 16 }]).unwrap_err();
        assert_eq!(
            e,
            (
                0,
                "`%d` expects a value of type integer (string given)".into()
            )
        );
        let p = parse_format("%s").unwrap();
        assert_eq!(
            check_args(&p, &[Type::I64]).unwrap_err().1,
            "`%s` expects a value of type string (integer given)"
        );
        assert!(check_args(&p, &[Type::Symbol { kernel: true }]).is_ok());
        assert!(check_args(&p, &[Type::Inet]).is_ok());
        let p = parse_format("%r").unwrap();
        assert!(check_args(&p, &[Type::Buf { size: 8 }]).is_ok());
        assert!(check_args(&p, &[Type::I64]).is_err());
        let p = parse_format("%x %p %c").unwrap();
        let ptr = Type::Ptr {
            pointee: Box::new(Type::Void),
            space: crate::types::AddrSpace::Kernel,
        };
        assert!(check_args(&p, &[Type::Bool, ptr, Type::U8]).is_ok());
        let p = parse_format("%d").unwrap();
        let e = check_args(&p, &[Type::Agg(crate::types::AggKind::Count)]).unwrap_err();
        assert_eq!(e.1, "`%d` expects a value of type integer (count given)");
        let p = parse_format("%f").unwrap();
        assert!(check_args(&p, &[Type::I64]).is_err());
    }
}
