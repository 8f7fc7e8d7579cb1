//! Raw byte access to BPF maps by file descriptor.
//!
//! aya's typed maps need fixed-size `Pod` keys and values; sonde's are sized at compile
//! time of the *script*, so this module works on byte slices whose sizes come from the
//! [`MapSpec`]. A per-CPU map's value, as seen from userspace, is one slot per *possible*
//! CPU, each slot the value size rounded up to 8 bytes.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use sonde_compiler::program::MapSpec;

use crate::syscall;
use sonde_system::cpus::possible_cpus;

/// One map entry: the key and its value, split into per-CPU slots (one slot for ordinary
/// maps).
pub type Entry = (Vec<u8>, Vec<Vec<u8>>);

/// A map opened for raw access: an owned file descriptor and its geometry.
#[derive(Debug)]
pub struct RawMap {
    fd: OwnedFd,
    key_size: usize,
    value_size: usize,
    per_cpu: bool,
    cpus: usize,
}

impl RawMap {
    /// A map from its file descriptor and sizes (`per_cpu` for the per-CPU map types).
    pub fn new(fd: OwnedFd, key_size: u32, value_size: u32, per_cpu: bool) -> io::Result<RawMap> {
        let cpus = if per_cpu { possible_cpus()? } else { 1 };
        Ok(RawMap {
            fd,
            key_size: key_size as usize,
            value_size: value_size as usize,
            per_cpu,
            cpus,
        })
    }

    /// A map described by `spec`, reached through `fd`.
    pub fn from_spec(fd: OwnedFd, spec: &MapSpec) -> io::Result<RawMap> {
        RawMap::new(fd, spec.key_size, spec.value_size, spec.kind.per_cpu())
    }

    /// Key size in bytes.
    pub fn key_size(&self) -> usize {
        self.key_size
    }

    /// Value size in bytes (of one CPU's slot for per-CPU maps).
    pub fn value_size(&self) -> usize {
        self.value_size
    }

    /// Number of values a lookup returns: the possible CPUs for per-CPU maps, else 1.
    pub fn slots(&self) -> usize {
        self.cpus
    }

    /// Bytes between consecutive per-CPU slots (the value size rounded up to 8), or the
    /// value size for ordinary maps.
    pub fn stride(&self) -> usize {
        if self.per_cpu {
            self.value_size.next_multiple_of(8)
        } else {
            self.value_size
        }
    }

    /// Size of the buffer a lookup fills and an update reads: `stride() * slots()`.
    pub fn value_buf_len(&self) -> usize {
        self.stride() * self.cpus
    }

    /// The map's file descriptor.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    fn check_key(&self, key: &[u8]) -> io::Result<()> {
        if key.len() == self.key_size {
            Ok(())
        } else {
            Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "key of {} bytes for a map with {}-byte keys",
                    key.len(),
                    self.key_size
                ),
            ))
        }
    }

    /// All keys, in the kernel's iteration order. Keys are collected before returning, so
    /// the caller may update or delete while walking the result.
    pub fn keys(&self) -> io::Result<Vec<Vec<u8>>> {
        let mut keys: Vec<Vec<u8>> = Vec::new();
        let mut next = vec![0u8; self.key_size];
        while syscall::map_next_key(self.fd(), keys.last().map(Vec::as_slice), &mut next)? {
            keys.push(next.clone());
        }
        Ok(keys)
    }

    /// The raw value of `key` (`value_buf_len()` bytes), or `None` when absent.
    pub fn lookup(&self, key: &[u8]) -> io::Result<Option<Vec<u8>>> {
        self.check_key(key)?;
        let mut value = vec![0u8; self.value_buf_len()];
        Ok(syscall::map_lookup(self.fd(), key, &mut value)?.then_some(value))
    }

    /// The value of `key` split into one `value_size()` slice per slot (one slot for
    /// ordinary maps), or `None` when absent.
    pub fn lookup_slots(&self, key: &[u8]) -> io::Result<Option<Vec<Vec<u8>>>> {
        let Some(raw) = self.lookup(key)? else {
            return Ok(None);
        };
        Ok(Some(
            raw.chunks(self.stride())
                .map(|c| c[..self.value_size].to_vec())
                .collect(),
        ))
    }

    /// Every `(key, per-slot values)` pair.
    pub fn entries(&self) -> io::Result<Vec<Entry>> {
        let mut out = Vec::new();
        for key in self.keys()? {
            // A key deleted by the program since `keys()` is skipped.
            if let Some(values) = self.lookup_slots(&key)? {
                out.push((key, values));
            }
        }
        Ok(out)
    }

    /// Sets `key` to `value`. For per-CPU maps `value` may be one slot (copied to every
    /// CPU) or the full `value_buf_len()` buffer.
    pub fn update(&self, key: &[u8], value: &[u8], flags: u64) -> io::Result<()> {
        self.check_key(key)?;
        if value.len() == self.value_buf_len() {
            return syscall::map_update(self.fd(), key, value, flags);
        }
        if value.len() != self.value_size {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "value of {} bytes for a map with {}-byte values",
                    value.len(),
                    self.value_size
                ),
            ));
        }
        let mut buf = vec![0u8; self.value_buf_len()];
        for slot in buf.chunks_mut(self.stride()) {
            slot[..self.value_size].copy_from_slice(value);
        }
        syscall::map_update(self.fd(), key, &buf, flags)
    }

    /// Deletes `key`; `Ok(false)` when it was absent.
    pub fn delete(&self, key: &[u8]) -> io::Result<bool> {
        self.check_key(key)?;
        syscall::map_delete(self.fd(), key)
    }

    /// Removes every entry (bpftrace `clear()`). Array maps cannot delete, so their values
    /// are zeroed instead.
    pub fn clear(&self) -> io::Result<()> {
        for key in self.keys()? {
            match syscall::map_delete(self.fd(), &key) {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                    let zero = vec![0u8; self.value_buf_len()];
                    syscall::map_update(self.fd(), &key, &zero, syscall::BPF_EXIST)?;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Sets every existing value to zero, keeping the keys (bpftrace `zero()`).
    pub fn zero(&self) -> io::Result<()> {
        let zero = vec![0u8; self.value_buf_len()];
        for key in self.keys()? {
            match syscall::map_update(self.fd(), &key, &zero, syscall::BPF_EXIST) {
                Ok(()) => {}
                // Deleted by the program meanwhile: nothing to zero.
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// Sums little-endian u64 counters over per-CPU slots (helper for counters and tests).
pub fn sum_u64(slots: &[Vec<u8>]) -> u64 {
    slots
        .iter()
        .filter_map(|s| s.get(..8))
        .map(|b| u64::from_le_bytes(b.try_into().expect("8-byte slice")))
        .fold(0u64, u64::wrapping_add)
}

/// Maps reached as [`RawMap`]s by their spec (the kernel's, through a loaded object or a live
/// session's descriptors).
pub trait RawMaps {
    /// The map of `spec`, or `None` when it cannot be opened.
    fn raw(&self, spec: &sonde_compiler::program::MapSpec) -> Option<RawMap>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums() {
        let slots = vec![5u64.to_le_bytes().to_vec(), 7u64.to_le_bytes().to_vec()];
        assert_eq!(sum_u64(&slots), 12);
    }
}
