//! A consumer of a BPF ring buffer (`BPF_MAP_TYPE_RINGBUF`) that maps a sliding window of
//! the data area rather than all of it.
//!
//! For `mmap` the kernel lays the map out as one page holding the consumer position (the
//! only page that may be mapped writable), one page holding the producer position, then the
//! data area twice in a row (`kernel/bpf/ringbuf.c`, `ringbuf_map_mmap_kern`); any page
//! range of that may be mapped read-only, and a range that runs past the end of the data
//! area goes on at its start, so a record that wraps around reads contiguously. Every page
//! of such a mapping is inserted at `mmap` time (`remap_vmalloc_range`) and counts in the
//! resident set from then on: mapping the whole area as aya's `RingBuf` and libbpf do costs
//! twice the ring's size (2 MiB of sonde's 1 MiB ring). Here only a window of
//! [`DEFAULT_WINDOW`] bytes is mapped, moved to the page of the next record whenever that
//! record is not inside it (once per window's worth of records), and made larger for a
//! record that does not fit.
//!
//! Records are read as libbpf's `ringbuf.c` reads them: at data offset `pos & mask` an
//! 8-byte header (`u32` length with the busy and discard bits, `u32` page offset), then the
//! sample; a record takes `round_up(len + 8, 8)` bytes. The producer position and the header
//! are loaded with acquire ordering, the consumer position is stored with release ordering
//! once the record's callback has returned (the kernel may then reuse its space).

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

/// Bytes of the data area mapped at a time (unless a record needs more): one remap per this
/// many bytes of records.
pub const DEFAULT_WINDOW: usize = 128 << 10;

/// `BPF_RINGBUF_HDR_SZ`.
const HDR: usize = 8;
/// `BPF_RINGBUF_BUSY_BIT`: the record is reserved but not yet submitted or discarded.
const BUSY: u32 = 1 << 31;
/// `BPF_RINGBUF_DISCARD_BIT`: the record was discarded; its space is skipped.
const DISCARD: u32 = 1 << 30;

/// The system's page size.
fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).ok().filter(|&n| n > 0).unwrap_or(4096)
}

/// One shared mapping of a ring buffer map, unmapped on drop.
#[derive(Debug)]
struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain shared memory owned by this value; nothing about it is tied
// to the thread that created it.
unsafe impl Send for Mapping {}
// SAFETY: as above; `&Mapping` only gives out the address.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `len` bytes of `fd` at byte `offset` (shared; `prot` as for `mmap`).
    fn new(fd: BorrowedFd<'_>, len: usize, prot: libc::c_int, offset: usize) -> io::Result<Self> {
        let offset = libc::off_t::try_from(offset).map_err(|_| io::ErrorKind::InvalidInput)?;
        // SAFETY: a new mapping at an address of the kernel's choosing; nothing is replaced.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                prot,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                offset,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(ptr.cast::<u8>()).ok_or(io::ErrorKind::InvalidData)?;
        Ok(Mapping { ptr, len })
    }

    /// The `usize` at the start of the mapping (a position page).
    fn position(&self) -> &AtomicUsize {
        // SAFETY: the mapping is at least a page, page-aligned, and lives as long as `self`;
        // the kernel only accesses this word atomically.
        unsafe { self.ptr.cast::<AtomicUsize>().as_ref() }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: this value owns the range [ptr, ptr + len), mapped by `Mapping::new`, and
        // no borrow of it outlives `self`.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

/// The consumer of one ring buffer map.
pub struct Ring {
    /// The consumer position page (read-write).
    consumer: Mapping,
    /// The producer position page (read-only).
    producer: Mapping,
    /// The mapped part of the data area (read-only); `None` after a failed remap.
    window: Option<Mapping>,
    /// The data offset of the window's first byte: page-aligned, below `size`. The window
    /// may run past the end of the data area into its second mapping.
    start: usize,
    /// The data area's size: a power of two, a multiple of the page size.
    size: usize,
    page: usize,
    /// The window's usual size: at least a page, at most `size`.
    default_window: usize,
    /// The consumer position (this process is its only writer).
    pos: usize,
    /// The producer position last loaded.
    prod: usize,
    /// How many times the window was mapped (the first time included).
    moves: u64,
    fd: OwnedFd,
}

impl std::fmt::Debug for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring")
            .field("fd", &self.fd.as_raw_fd())
            .field("size", &self.size)
            .field("pos", &self.pos)
            .finish()
    }
}

impl Ring {
    /// A consumer of ring buffer map `fd`, whose data area is `size` bytes (the map's
    /// `max_entries`), mapping `window` bytes of it at a time (rounded up to whole pages,
    /// at most `size`).
    pub fn new(fd: OwnedFd, size: usize, window: usize) -> io::Result<Ring> {
        let page = page_size();
        if !size.is_power_of_two() || !size.is_multiple_of(page) || size.checked_mul(2).is_none() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("a ring buffer of {size} bytes (not a power of two of whole pages)"),
            ));
        }
        let consumer = Mapping::new(fd.as_fd(), page, libc::PROT_READ | libc::PROT_WRITE, 0)?;
        let producer = Mapping::new(fd.as_fd(), page, libc::PROT_READ, page)?;
        let pos = consumer.position().load(Ordering::Acquire);
        let prod = producer.position().load(Ordering::Acquire);
        if pos % 8 != 0 {
            // Records are 8-aligned; the header is read as an aligned atomic word.
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("a ring buffer consumer position of {pos}"),
            ));
        }
        let mut ring = Ring {
            consumer,
            producer,
            window: None,
            start: 0,
            size,
            page,
            default_window: window.max(1).next_multiple_of(page).min(size),
            pos,
            prod,
            moves: 0,
            fd,
        };
        // Mapped now so that a failure is an error here rather than a silent stall later.
        ring.slide(pos & (size - 1), HDR)?;
        Ok(ring)
    }

    /// The map's descriptor.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Hands up to `max` available records to `f`, in place; each record's space is given
    /// back to the kernel once `f` returns. Returns how many, or the error of a window
    /// remap that failed before any record was read (after one, the records read so far:
    /// the next call meets the error again).
    pub fn read(&mut self, max: usize, f: &mut impl FnMut(&[u8])) -> io::Result<usize> {
        let mut n = 0;
        let mask = self.size - 1;
        while n < max {
            if self.pos == self.prod {
                self.prod = self.producer.position().load(Ordering::Acquire);
                if self.pos == self.prod {
                    break;
                }
            }
            let avail = self.prod.wrapping_sub(self.pos);
            if avail < HDR || avail > self.size {
                // Not a state the kernel produces: leave the ring alone.
                break;
            }
            let off = self.pos & mask;
            let hdr = match self.view(off, HDR) {
                Ok(p) => p,
                Err(e) => return if n > 0 { Ok(n) } else { Err(e) },
            };
            // SAFETY: `view` returned a mapped, 8-aligned address with 8 readable bytes; the
            // kernel writes the length word atomically.
            let word = unsafe { hdr.cast::<AtomicU32>().as_ref() }.load(Ordering::Acquire);
            if word & BUSY != 0 {
                break;
            }
            let len = (word & !(BUSY | DISCARD)) as usize;
            let total = (len + HDR).next_multiple_of(8);
            if total > avail {
                break;
            }
            if word & DISCARD == 0 {
                let rec = match self.view(off, HDR + len) {
                    Ok(p) => p,
                    Err(e) => return if n > 0 { Ok(n) } else { Err(e) },
                };
                // SAFETY: `view` mapped `HDR + len` readable bytes at `rec`; the kernel does
                // not touch a submitted record until the consumer position passes it, which
                // happens below, after `f` (and its borrow) is done.
                let sample =
                    unsafe { std::slice::from_raw_parts(rec.as_ptr().add(HDR).cast_const(), len) };
                f(sample);
                n += 1;
            }
            self.pos = self.pos.wrapping_add(total);
            self.consumer.position().store(self.pos, Ordering::Release);
        }
        Ok(n)
    }

    /// The address of data offset `off` (below `size`), with `need` bytes from it mapped;
    /// moves the window there if they are not.
    fn view(&mut self, off: usize, need: usize) -> io::Result<NonNull<u8>> {
        // Where `off` is in the window: past its start in this lap, or in the next lap (in
        // the window's part beyond the end of the data area).
        let rel = if off >= self.start {
            off - self.start
        } else {
            off + self.size - self.start
        };
        if let Some(w) = &self.window
            && rel + need <= w.len
        {
            // SAFETY: rel + need <= w.len: inside the mapping.
            return Ok(unsafe { w.ptr.add(rel) });
        }
        self.slide(off, need)?;
        let w = self.window.as_ref().ok_or(io::ErrorKind::InvalidData)?;
        // SAFETY: `slide` mapped the window from the page of `off` with `need` bytes past it.
        Ok(unsafe { w.ptr.add(off - self.start) })
    }

    /// Maps the window from the page of data offset `off` (below `size`), at least `need`
    /// bytes past `off` (at most `size`: a record never takes more).
    fn slide(&mut self, off: usize, need: usize) -> io::Result<()> {
        let start = off - off % self.page;
        let len = (off - start + need)
            .next_multiple_of(self.page)
            .max(self.default_window)
            .min(2 * self.size - start);
        if off - start + need > len {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("a ring buffer record of {need} bytes at offset {off}"),
            ));
        }
        // The old window goes first, so that the two never count in the resident set at
        // once; after an error there is none, and the next read tries again.
        self.window = None;
        self.start = start;
        let w = Mapping::new(self.fd.as_fd(), len, libc::PROT_READ, 2 * self.page + start)?;
        self.window = Some(w);
        self.moves += 1;
        Ok(())
    }

    /// How many times the window was mapped.
    pub fn moves(&self) -> u64 {
        self.moves
    }

    /// The number of bytes of the data area mapped now.
    pub fn window_len(&self) -> usize {
        self.window.as_ref().map_or(0, |w| w.len)
    }
}

/// Test support: real ring buffer maps and a tiny program that writes into them (needs the
/// privileges of a kernel run, as the other tests that load programs).
#[cfg(test)]
pub(crate) mod testing {
    use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

    use sonde_compiler::bpf::insn::{Helper, Insn, JmpOp, Reg, Size};

    use crate::syscall::{BPF_PROG_LOAD, ProgLoadAttr, sys_bpf_fd};

    const BPF_MAP_TYPE_ARRAY: u32 = 2;
    const BPF_MAP_TYPE_RINGBUF: u32 = 27;
    const BPF_PROG_TYPE_RAW_TRACEPOINT: u32 = 17;
    /// The size of a record [`Producer::discard`] reserves.
    pub const DISCARD_LEN: usize = 64;

    fn map_create(map_type: u32, key_size: u32, value_size: u32, max_entries: u32) -> OwnedFd {
        crate::syscall::map_create(map_type, key_size, value_size, max_entries)
            .unwrap_or_else(|e| panic!("BPF_MAP_CREATE (type {map_type}): {e}"))
    }

    /// A new ring buffer map of `size` bytes.
    pub fn ring_map(size: u32) -> OwnedFd {
        map_create(BPF_MAP_TYPE_RINGBUF, 0, 0, size)
    }

    /// A raw tracepoint program run through `BPF_PROG_TEST_RUN` that submits the contents
    /// of a one-element array map to a ring buffer, or reserves and discards a record.
    pub struct Producer {
        prog: OwnedFd,
        buf: OwnedFd,
        max: usize,
    }

    impl Producer {
        /// A producer into ring buffer `ring` of records up to `max` bytes.
        pub fn new(ring: BorrowedFd<'_>, max: usize) -> Producer {
            let buf = map_create(BPF_MAP_TYPE_ARRAY, 4, max as u32, 1);
            let ring = ring.as_raw_fd();
            let b = buf.as_raw_fd();
            let [r0, r1] = Insn::ld_map_fd(Reg::R1, ring);
            let [b0, b1] = Insn::ld_map_fd(Reg::R1, b);
            // ctx[0]: the length; ctx[1]: non-zero to reserve and discard instead.
            // Returns bpf_ringbuf_output's result, or -1.
            let insns = [
                /* 0 */ Insn::ldx(Size::DW, Reg::R6, Reg::R1, 0),
                /* 1 */ Insn::ldx(Size::DW, Reg::R7, Reg::R1, 8),
                /* 2 */ Insn::jmp_imm(JmpOp::Ne, Reg::R7, 0, 17), // -> 20
                /* 3 */ Insn::st(Size::W, Reg::R10, -4, 0),
                /* 4 */ Insn::mov64_reg(Reg::R2, Reg::R10),
                /* 5 */ Insn::add64_imm(Reg::R2, -4),
                /* 6 */ b0,
                /* 7 */ b1,
                /* 8 */ Insn::call(Helper::MapLookupElem),
                /* 9 */ Insn::jmp_imm(JmpOp::Eq, Reg::R0, 0, 8), // -> 18
                /* 10 */ Insn::jmp_imm(JmpOp::Gt, Reg::R6, max as i32, 7), // -> 18
                /* 11 */ r0,
                /* 12 */ r1,
                /* 13 */ Insn::mov64_reg(Reg::R2, Reg::R0),
                /* 14 */ Insn::mov64_reg(Reg::R3, Reg::R6),
                /* 15 */ Insn::mov64_imm(Reg::R4, 0),
                /* 16 */ Insn::call(Helper::RingbufOutput),
                /* 17 */ Insn::exit(),
                /* 18 */ Insn::mov64_imm(Reg::R0, -1),
                /* 19 */ Insn::exit(),
                /* 20 */ r0,
                /* 21 */ r1,
                /* 22 */ Insn::mov64_imm(Reg::R2, DISCARD_LEN as i32),
                /* 23 */ Insn::mov64_imm(Reg::R3, 0),
                /* 24 */ Insn::call(Helper::RingbufReserve),
                /* 25 */ Insn::jmp_imm(JmpOp::Eq, Reg::R0, 0, -8), // -> 18
                /* 26 */ Insn::mov64_reg(Reg::R1, Reg::R0),
                /* 27 */ Insn::mov64_imm(Reg::R2, 0),
                /* 28 */ Insn::call(Helper::RingbufDiscard),
                /* 29 */ Insn::mov64_imm(Reg::R0, 0),
                /* 30 */ Insn::exit(),
            ];
            let code: Vec<u8> = insns.iter().flat_map(|i| i.encode()).collect();
            let license = c"GPL";
            let mut log = vec![0u8; 1 << 16];
            let mut attr = ProgLoadAttr {
                prog_type: BPF_PROG_TYPE_RAW_TRACEPOINT,
                insn_cnt: insns.len() as u32,
                insns: code.as_ptr() as u64,
                license: license.as_ptr() as u64,
                log_level: 1,
                log_size: log.len() as u32,
                log_buf: log.as_mut_ptr() as u64,
                ..ProgLoadAttr::default()
            };
            // SAFETY: code, license and log outlive the call, with the sizes given.
            let prog = unsafe { sys_bpf_fd(BPF_PROG_LOAD, &mut attr) }.unwrap_or_else(|e| {
                let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
                panic!(
                    "BPF_PROG_LOAD: {e}\n{}",
                    String::from_utf8_lossy(&log[..end])
                )
            });
            Producer { prog, buf, max }
        }

        fn run(&self, len: usize, discard: bool) -> bool {
            let ret =
                crate::syscall::prog_test_run(self.prog.as_fd(), &[len as u64, discard as u64])
                    .expect("BPF_PROG_TEST_RUN");
            ret == 0
        }

        /// Submits `bytes` as one record; false when the ring has no room for it.
        pub fn output(&self, bytes: &[u8]) -> bool {
            assert!(bytes.len() <= self.max);
            let mut value = vec![0u8; self.max];
            value[..bytes.len()].copy_from_slice(bytes);
            crate::syscall::map_update(self.buf.as_fd(), &0u32.to_ne_bytes(), &value, 0)
                .expect("BPF_MAP_UPDATE_ELEM");
            self.run(bytes.len(), false)
        }

        /// Reserves a record of [`DISCARD_LEN`] bytes and discards it; false when the ring
        /// has no room for it.
        pub fn discard(&self) -> bool {
            self.run(0, true)
        }
    }

    /// The bytes of test record `seq`, `len` long.
    pub fn pattern(seq: u64, len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| (seq.wrapping_mul(131) as usize + i * 7 + (i >> 8)) as u8)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{DISCARD_LEN, Producer, pattern, ring_map};
    use super::*;
    use std::collections::VecDeque;

    /// What the kernel allows, checked rather than assumed: read-only mappings of any page
    /// range of [consumer, producer, data, data again], the data area's pages mapped twice
    /// in a row (a window past its end reads its start), nothing beyond, and writable
    /// mappings of the consumer page only.
    #[test]
    fn kernel_maps_the_data_area_twice_in_a_row() {
        let page = page_size();
        let size = 4 * page;
        let fd = ring_map(size as u32);
        let producer = Producer::new(fd.as_fd(), 64);
        assert!(producer.output(&pattern(7, 40)));
        let ro = libc::PROT_READ;
        let rw = libc::PROT_READ | libc::PROT_WRITE;

        let first = Mapping::new(fd.as_fd(), page, ro, 2 * page).unwrap();
        let again = Mapping::new(fd.as_fd(), page, ro, (2 + 4) * page).unwrap();
        // The last data page and the first one again, contiguous.
        let across = Mapping::new(fd.as_fd(), 2 * page, ro, (2 + 3) * page).unwrap();
        // SAFETY: each mapping is at least one page, readable.
        let (a, b, c) = unsafe {
            (
                std::slice::from_raw_parts(first.ptr.as_ptr(), page),
                std::slice::from_raw_parts(again.ptr.as_ptr(), page),
                std::slice::from_raw_parts(across.ptr.as_ptr().add(page), page),
            )
        };
        assert_eq!(u32::from_ne_bytes(a[..4].try_into().unwrap()), 40);
        assert_eq!(&a[HDR..HDR + 40], &pattern(7, 40)[..]);
        assert_eq!(a, b);
        assert_eq!(a, c);

        // The whole of [consumer, producer, data, data] read-only, but not a page more.
        assert!(Mapping::new(fd.as_fd(), (2 + 8) * page, ro, 0).is_ok());
        let err = Mapping::new(fd.as_fd(), 2 * page, ro, (2 + 7) * page).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EINVAL), "{err}");
        // Writable: the consumer page alone.
        assert!(Mapping::new(fd.as_fd(), page, rw, 0).is_ok());
        for (len, offset) in [(page, page), (2 * page, 0), (page, 2 * page)] {
            let err = Mapping::new(fd.as_fd(), len, rw, offset).unwrap_err();
            assert_eq!(err.raw_os_error(), Some(libc::EPERM), "{err}");
        }
    }

    /// Reads every available record of `ring` (`max` at a time), checking each against the
    /// front of `expected`.
    fn drain_checked(ring: &mut Ring, expected: &mut VecDeque<Vec<u8>>, max: usize) -> usize {
        let mut total = 0;
        loop {
            let n = ring
                .read(max, &mut |r: &[u8]| {
                    let want = expected
                        .pop_front()
                        .expect("a record more than was written");
                    assert_eq!(r.len(), want.len());
                    assert!(r == want, "record of {} bytes differs", r.len());
                })
                .unwrap();
            total += n;
            if n < max {
                return total;
            }
        }
    }

    /// Many laps of a 16 KiB ring through a one-page window: records of every size up to
    /// three quarters of the ring, straddling the end of the data area (header before it
    /// and sample after, or the header itself in its last 8 bytes), discarded records in
    /// between, partial reads; every record's bytes checked in order.
    #[test]
    fn window_slides_and_wraps_over_many_laps() {
        let page = page_size();
        let size = 16 << 10;
        let max = 12 << 10;
        let fd = ring_map(size as u32);
        let producer = Producer::new(fd.as_fd(), max);
        let mut ring = Ring::new(fd, size, page).unwrap();
        assert_eq!(ring.window_len(), page);

        let mut expected = VecDeque::new();
        // The producer position as this test computes it, and what it saw happen.
        let mut pos = 0usize;
        let (mut straddles, mut header_at_end, mut bigger_than_window, mut discards) = (0, 0, 0, 0);
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut rand = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut read = 0;
        for seq in 0..3000u64 {
            let off = pos % size;
            let (len, discard) = match seq % 100 {
                // A record after which the next one's header takes the data area's last 8
                // bytes (the next one is not a discarded one).
                50 if (size - 8 - off) % size >= 8 && (size - 8 - off) % size - 8 <= max => {
                    ((size - 8 - off) % size - 8, false)
                }
                1..=6 => (DISCARD_LEN, true),
                7..=9 => (page + 1 + rand() as usize % (max - page), false),
                _ => (rand() as usize % 1200, false),
            };
            for attempt in 0.. {
                let ok = if discard {
                    producer.discard()
                } else {
                    producer.output(&pattern(seq, len))
                };
                if ok {
                    break;
                }
                // Full: read everything (sometimes a few records at a time), then retry.
                assert!(attempt < 1, "no room for record {seq} in an empty ring");
                read += drain_checked(&mut ring, &mut expected, 1 + seq as usize % 5);
                assert!(expected.is_empty());
            }
            let total = (len + HDR).next_multiple_of(8);
            if !discard {
                expected.push_back(pattern(seq, len));
                straddles += usize::from(off + HDR < size && off + HDR + len > size);
                header_at_end += usize::from(off == size - HDR);
                bigger_than_window += usize::from(len > page);
            } else {
                discards += 1;
            }
            pos += total;
        }
        read += drain_checked(&mut ring, &mut expected, usize::MAX);
        assert!(expected.is_empty());
        assert_eq!(read, 3000 - discards);
        assert_eq!(ring.pos, pos);

        let laps = pos / size;
        assert!(laps > 50, "{laps} laps");
        assert!(straddles > 20, "{straddles} records straddle the end");
        assert!(
            header_at_end >= 10,
            "{header_at_end} headers in the last 8 bytes"
        );
        assert!(bigger_than_window > 50, "{bigger_than_window} big records");
        assert!(discards > 100);
        assert!(
            ring.moves() as usize > 2 * laps,
            "{} window moves",
            ring.moves()
        );
    }

    /// A record larger than the window maps a larger one, then the window shrinks back.
    #[test]
    fn a_record_larger_than_the_window_gets_a_larger_window() {
        let page = page_size();
        let size = 16 << 10;
        let fd = ring_map(size as u32);
        let producer = Producer::new(fd.as_fd(), 12 << 10);
        let mut ring = Ring::new(fd, size, page).unwrap();
        let big = pattern(1, 2 * page + 100);
        assert!(producer.output(&big));
        assert!(producer.output(&pattern(2, 10)));
        let mut got = Vec::new();
        assert_eq!(
            ring.read(1, &mut |r: &[u8]| got.push(r.to_vec())).unwrap(),
            1
        );
        assert_eq!(got, [big]);
        assert_eq!(ring.window_len(), 3 * page);
        assert_eq!(ring.moves(), 2);
        // The next record is still inside the large window.
        assert_eq!(
            ring.read(9, &mut |r: &[u8]| got.push(r.to_vec())).unwrap(),
            1
        );
        assert_eq!(got[1], pattern(2, 10));
        assert_eq!(ring.moves(), 2);
        // Small records up to and across the end of the data area: the window moves on at
        // its usual size (two pages where a record straddles a page boundary).
        for seq in 0..80 {
            assert!(producer.output(&pattern(seq, 100)));
        }
        assert_eq!(
            ring.read(99, &mut |r: &[u8]| got.push(r.to_vec())).unwrap(),
            80
        );
        assert!(ring.moves() > 3, "{} moves", ring.moves());
        assert_eq!(ring.pos, (2 * page + 112) + 24 + 80 * 112);
        assert!(ring.window_len() <= 2 * page, "{}", ring.window_len());
        for (seq, r) in got[2..].iter().enumerate() {
            assert_eq!(*r, pattern(seq as u64, 100));
        }
    }

    /// Discarded records are stepped over without a callback, and their space given back.
    #[test]
    fn discarded_records_are_skipped() {
        let size = 16 << 10;
        let fd = ring_map(size as u32);
        let producer = Producer::new(fd.as_fd(), 256);
        let mut ring = Ring::new(fd, size, DEFAULT_WINDOW).unwrap();
        assert!(producer.discard());
        assert!(producer.output(&pattern(1, 5)));
        assert!(producer.discard());
        assert!(producer.discard());
        let mut got = Vec::new();
        assert_eq!(
            ring.read(usize::MAX, &mut |r: &[u8]| got.push(r.to_vec()))
                .unwrap(),
            1
        );
        assert_eq!(got, [pattern(1, 5)]);
        let step = (DISCARD_LEN + HDR).next_multiple_of(8);
        assert_eq!(ring.pos, 3 * step + 16);
        assert_eq!(ring.consumer.position().load(Ordering::Relaxed), ring.pos);
        assert_eq!(ring.read(usize::MAX, &mut |_: &[u8]| panic!()).unwrap(), 0);
    }

    /// A window of the default size over a ring smaller than it maps the ring once; a bad
    /// size is an error, not a crash.
    #[test]
    fn window_and_ring_sizes() {
        let page = page_size();
        let ring = Ring::new(ring_map(16 << 10), 16 << 10, DEFAULT_WINDOW).unwrap();
        assert_eq!(ring.window_len(), 16 << 10);
        let ring = Ring::new(ring_map(1 << 20), 1 << 20, DEFAULT_WINDOW).unwrap();
        assert_eq!(ring.window_len(), DEFAULT_WINDOW);
        assert!(format!("{ring:?}").starts_with("Ring { fd: "));
        for bad in [0, 3 * page, page / 2] {
            let err = Ring::new(ring_map(16 << 10), bad, page).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        }
        // Wrong size for the map: the kernel refuses a window past its end.
        let err = Ring::new(ring_map(16 << 10), 1 << 20, 1 << 20).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EINVAL), "{err}");
    }
}
