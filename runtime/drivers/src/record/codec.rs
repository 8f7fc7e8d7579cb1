//! Primitive encoding: little-endian integers, strings, byte strings, options, lists.
//!
//! Decoding goes through a [`Cursor`] that knows its absolute offset in the file, so every
//! error names where the file went wrong, and checks every length and count against the bytes
//! left before allocating.

use super::RecordError;
use std::io;

/// Decoding result.
pub(crate) type Result<T> = std::result::Result<T, RecordError>;

/// A read position in a slice of the file.
#[derive(Clone, Debug)]
pub(crate) struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// Offset of `bytes[0]` in the file.
    base: u64,
}

impl<'a> Cursor<'a> {
    /// A cursor over `bytes`, which start at `base` in the file.
    pub(crate) fn new(bytes: &'a [u8], base: u64) -> Self {
        Cursor {
            bytes,
            pos: 0,
            base,
        }
    }

    /// The file offset of the next byte.
    pub(crate) fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Bytes not read yet.
    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// An error at the current position.
    pub(crate) fn error(&self, message: impl Into<String>) -> RecordError {
        self.error_at(self.offset(), message)
    }

    /// An error at a file offset.
    pub(crate) fn error_at(&self, offset: u64, message: impl Into<String>) -> RecordError {
        RecordError {
            offset,
            message: message.into(),
        }
    }

    /// The next `n` bytes (`what` names them in the error when fewer are left).
    pub(crate) fn take(&mut self, n: u64, what: &str) -> Result<&'a [u8]> {
        let left = self.remaining();
        match usize::try_from(n) {
            Ok(n) if n <= left => {
                let s = &self.bytes[self.pos..self.pos + n];
                self.pos += n;
                Ok(s)
            }
            _ => Err(self.error(format!(
                "{what} needs {n} byte{} but only {left} {} left (the file is truncated or \
                 corrupt)",
                if n == 1 { "" } else { "s" },
                if left == 1 { "is" } else { "are" },
            ))),
        }
    }

    /// A cursor over the next `n` bytes, which this one skips.
    pub(crate) fn sub(&mut self, n: u64, what: &str) -> Result<Cursor<'a>> {
        let base = self.offset();
        Ok(Cursor::new(self.take(n, what)?, base))
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let s = self.take(N as u64, what)?;
        let mut a = [0; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    /// A `u8`.
    pub(crate) fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.array::<1>(what)?[0])
    }

    /// A little-endian `u16`.
    pub(crate) fn u16(&mut self, what: &str) -> Result<u16> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }

    /// A little-endian `u32`.
    pub(crate) fn u32(&mut self, what: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    /// A little-endian `u64`.
    pub(crate) fn u64(&mut self, what: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    /// A little-endian `i64`.
    pub(crate) fn i64(&mut self, what: &str) -> Result<i64> {
        Ok(i64::from_le_bytes(self.array(what)?))
    }

    /// A `bool` (one byte, 0 or 1).
    pub(crate) fn bool(&mut self, what: &str) -> Result<bool> {
        let at = self.offset();
        match self.u8(what)? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(self.error_at(at, format!("{what} is {b}, not a boolean (0 or 1)"))),
        }
    }

    /// A `u32`-length-prefixed byte string.
    pub(crate) fn bytes(&mut self, what: &str) -> Result<Vec<u8>> {
        let n = self.u32(what)?;
        Ok(self.take(u64::from(n), what)?.to_vec())
    }

    /// A `u32`-length-prefixed UTF-8 string.
    pub(crate) fn string(&mut self, what: &str) -> Result<String> {
        let n = self.u32(what)?;
        let at = self.offset();
        let s = self.take(u64::from(n), what)?;
        match std::str::from_utf8(s) {
            Ok(s) => Ok(s.to_string()),
            Err(e) => Err(self.error_at(
                at + e.valid_up_to() as u64,
                format!("{what} is not valid UTF-8"),
            )),
        }
    }

    /// An option: a presence byte (0 or 1), then the value.
    pub(crate) fn option<T>(
        &mut self,
        what: &str,
        f: impl FnOnce(&mut Self) -> Result<T>,
    ) -> Result<Option<T>> {
        Ok(if self.bool(what)? {
            Some(f(self)?)
        } else {
            None
        })
    }

    /// A list count whose elements take at least `min_size` bytes each, checked against the
    /// bytes left (so that nothing is allocated for elements the file cannot hold).
    pub(crate) fn count(&mut self, min_size: usize, what: &str) -> Result<usize> {
        let at = self.offset();
        let n = self.u32(what)? as usize;
        if n.saturating_mul(min_size) > self.remaining() {
            return Err(self.error_at(
                at,
                format!(
                    "{what} claims {n} elements but only {} bytes are left",
                    self.remaining()
                ),
            ));
        }
        Ok(n)
    }

    /// A `u32`-counted list whose elements take at least `min_size` bytes each.
    pub(crate) fn list<T>(
        &mut self,
        min_size: usize,
        what: &str,
        mut f: impl FnMut(&mut Self) -> Result<T>,
    ) -> Result<Vec<T>> {
        let n = self.count(min_size, what)?;
        // Elements are larger in memory than in the file: reserve no more than the bytes
        // left, and let the vector grow as elements are actually read.
        let cap = n.min(self.remaining() / std::mem::size_of::<T>().max(1));
        let mut v = Vec::with_capacity(cap);
        for _ in 0..n {
            v.push(f(self)?);
        }
        Ok(v)
    }
}

/// An `InvalidInput` error for values the format cannot hold.
pub(crate) fn too_big(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{what} is too large for a recording"),
    )
}

/// A `u32` length or count.
pub(crate) fn len32(n: usize, what: &str) -> io::Result<u32> {
    u32::try_from(n).map_err(|_| too_big(what))
}

/// Appends a `u8`.
pub(crate) fn put_u8(out: &mut Vec<u8>, v: u8) {
    out.push(v);
}

/// Appends a little-endian `u16`.
pub(crate) fn put_u16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends a little-endian `u32`.
pub(crate) fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends a little-endian `u64`.
pub(crate) fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends a little-endian `i64`.
pub(crate) fn put_i64(out: &mut Vec<u8>, v: i64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends a `bool`.
pub(crate) fn put_bool(out: &mut Vec<u8>, v: bool) {
    out.push(u8::from(v));
}

/// Appends a `u32`-length-prefixed byte string.
pub(crate) fn put_bytes(out: &mut Vec<u8>, v: &[u8]) -> io::Result<()> {
    put_u32(out, len32(v.len(), "a byte string")?);
    out.extend_from_slice(v);
    Ok(())
}

/// Appends a `u32`-length-prefixed string.
pub(crate) fn put_str(out: &mut Vec<u8>, v: &str) -> io::Result<()> {
    put_bytes(out, v.as_bytes())
}

/// Appends an optional string.
pub(crate) fn put_opt_str(out: &mut Vec<u8>, v: Option<&str>) -> io::Result<()> {
    put_bool(out, v.is_some());
    match v {
        Some(s) => put_str(out, s),
        None => Ok(()),
    }
}

/// Appends a `u32` list count.
pub(crate) fn put_count(out: &mut Vec<u8>, n: usize) -> io::Result<()> {
    put_u32(out, len32(n, "a list")?);
    Ok(())
}
