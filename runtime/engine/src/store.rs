//! In-process maps for the userspace engine, with the kernel maps' key and value encodings
//! (a per-CPU map has one CPU here), so that the same decoders and printers serve both engines.
//!
//! Value pointers handed to JIT code stay valid until the probe returns: values live in their
//! own boxes, and a deleted value is kept until [`HostMaps::release`] runs after the probe.

use hashbrown::HashTable;
use sonde_compiler::program::{Counter, MapKind, MapRole, MapSpec};
use sonde_present::output::{MapSource, RawEntries};
use std::cell::RefCell;

/// `-EEXIST`
const EEXIST: i64 = -17;
/// `-ENOENT`
const ENOENT: i64 = -2;
/// `-E2BIG`
const E2BIG: i64 = -7;
/// `-EINVAL`
const EINVAL: i64 = -22;
/// `BPF_NOEXIST`
const NOEXIST: u64 = 1;
/// `BPF_EXIST`
const EXIST: u64 = 2;

/// The little-endian u64 at `at` (which must be in bounds).
#[inline(always)]
fn word(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Multiplies and folds the 128-bit product (foldhash's mixing step).
#[inline(always)]
fn fold(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

const K1: u64 = 0xf135_7aea_2e62_a9c5;
const K2: u64 = 0x2d35_8dcc_aa6c_78a5;

/// The hash of a fixed-size binary key (NUL-padded strings, integers, tuples): two lanes of
/// eight-byte words, so that the multiplies overlap, folded at the end.
///
/// A string key (`string_key`) is NUL-padded: hashing stops after the first word holding a NUL
/// byte, as the rest is padding (equal keys still hash equal, and keys are compared whole).
#[inline]
fn key_hash(key: &[u8], string_key: bool) -> u64 {
    let (mut a, mut b) = (K1, K2);
    let n = if string_key {
        string_prefix(key)
    } else {
        key.len()
    };
    let mut i = 0;
    while i + 16 <= n {
        a = (a ^ word(key, i)).wrapping_mul(K1).rotate_left(29);
        b = (b ^ word(key, i + 8)).wrapping_mul(K2).rotate_left(31);
        i += 16;
    }
    if i < n {
        let mut tail = [0u8; 16];
        tail[..n - i].copy_from_slice(&key[i..n]);
        a = (a ^ word(&tail, 0)).wrapping_mul(K1).rotate_left(29);
        b = (b ^ word(&tail, 8)).wrapping_mul(K2).rotate_left(31);
    }
    fold(a ^ n as u64, b ^ K1)
}

/// The length of a NUL-padded string key up to the end of the first word holding a NUL.
#[inline]
fn string_prefix(key: &[u8]) -> usize {
    let mut i = 0;
    while i + 8 <= key.len() {
        let w = word(key, i);
        i += 8;
        if w.wrapping_sub(0x0101_0101_0101_0101) & !w & 0x8080_8080_8080_8080 != 0 {
            return i;
        }
    }
    key.len()
}

/// Key equality, eight bytes at a time.
#[inline]
fn key_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    let mut diff = 0u64;
    while i + 8 <= a.len() {
        diff |= word(a, i) ^ word(b, i);
        i += 8;
    }
    diff == 0 && a[i..] == b[i..]
}

/// A hash map's elements: key and value, each in its own box (value pointers stay put).
type Table = HashTable<(Box<[u8]>, Box<[u8]>)>;

/// One map's storage.
enum Store {
    /// Array maps: `max_entries` values back to back.
    Array(Vec<u8>),
    /// Hash maps.
    Hash(Table),
    /// The event ring buffer and stack maps hold nothing here.
    None,
}

/// One in-process map.
struct HostMap {
    /// Keys are NUL-padded strings (hashed up to their NUL).
    string_key: bool,
    key_size: usize,
    value_size: usize,
    max_entries: usize,
    /// A full map makes room by dropping an element (`lruhash`: the kernel drops
    /// approximately the least recently used; here any one).
    lru: bool,
    store: RefCell<Store>,
    /// Values deleted while a probe may still point at them.
    graveyard: RefCell<Vec<Box<[u8]>>>,
}

/// Every map of a script, indexed like the script's map list (the IR's `MapRef`).
pub struct HostMaps {
    maps: Vec<HostMap>,
    /// Whether a probe deleted a value since the last [`HostMaps::release`].
    deleted: std::cell::Cell<bool>,
}

impl HostMaps {
    /// Empty maps for `specs`.
    pub fn new(specs: &[MapSpec]) -> Self {
        HostMaps {
            maps: specs
                .iter()
                .map(|s| {
                    let value_size = s.value_size as usize;
                    let store = match s.kind {
                        MapKind::Array | MapKind::PerCpuArray => {
                            Store::Array(vec![0; value_size.saturating_mul(s.max_entries as usize)])
                        }
                        MapKind::Hash
                        | MapKind::PerCpuHash
                        | MapKind::LruHash
                        | MapKind::LruPerCpuHash => Store::Hash(Table::new()),
                        MapKind::RingBuf
                        | MapKind::StackTrace
                        | MapKind::BuildIdStackTrace
                        | MapKind::ProgArray => Store::None,
                    };
                    HostMap {
                        string_key: matches!(
                            &s.role,
                            MapRole::User {
                                key: Some(sonde_lang::types::Type::Str { .. }),
                                ..
                            }
                        ),
                        key_size: s.key_size as usize,
                        value_size,
                        max_entries: s.max_entries as usize,
                        lru: matches!(s.kind, MapKind::LruHash | MapKind::LruPerCpuHash),
                        store: RefCell::new(store),
                        graveyard: RefCell::new(Vec::new()),
                    }
                })
                .collect(),
            deleted: std::cell::Cell::new(false),
        }
    }

    fn map(&self, handle: i64) -> Option<&HostMap> {
        self.maps.get(usize::try_from(handle).ok()?)
    }

    /// `bpf_map_lookup_elem`: a pointer to the value, or null.
    ///
    /// # Safety
    /// `key` must point to the map's key size in bytes.
    pub unsafe fn lookup(&self, handle: i64, key: *const u8) -> *mut u8 {
        let Some(m) = self.map(handle) else {
            return std::ptr::null_mut();
        };
        // SAFETY: the caller passes a key of the map's key size.
        let key = unsafe { std::slice::from_raw_parts(key, m.key_size) };
        match &mut *m.store.borrow_mut() {
            Store::Array(values) => match array_index(key, m.max_entries) {
                Some(i) => values[i * m.value_size..].as_mut_ptr(),
                None => std::ptr::null_mut(),
            },
            Store::Hash(h) => h
                .find_mut(key_hash(key, m.string_key), |e| key_eq(&e.0, key))
                .map_or(std::ptr::null_mut(), |e| e.1.as_mut_ptr()),
            Store::None => std::ptr::null_mut(),
        }
    }

    /// `bpf_map_update_elem`: 0 or a negative errno, with the kernel's flag semantics.
    ///
    /// # Safety
    /// `key` and `value` must point to the map's key and value sizes in bytes.
    pub unsafe fn update(&self, handle: i64, key: *const u8, value: *const u8, flags: u64) -> i64 {
        let Some(m) = self.map(handle) else {
            return EINVAL;
        };
        // SAFETY: the caller passes a key and a value of the map's sizes.
        let (key, value) = unsafe {
            (
                std::slice::from_raw_parts(key, m.key_size),
                std::slice::from_raw_parts(value, m.value_size),
            )
        };
        match &mut *m.store.borrow_mut() {
            Store::Array(values) => {
                let Some(i) = array_index(key, m.max_entries) else {
                    return E2BIG;
                };
                if flags & 3 == NOEXIST {
                    return EEXIST;
                }
                values[i * m.value_size..(i + 1) * m.value_size].copy_from_slice(value);
                0
            }
            Store::Hash(h) => {
                let hash = key_hash(key, m.string_key);
                if let Some((_, v)) = h.find_mut(hash, |e| key_eq(&e.0, key)) {
                    if flags & 3 == NOEXIST {
                        return EEXIST;
                    }
                    v.copy_from_slice(value);
                    return 0;
                }
                if flags & 3 == EXIST {
                    return ENOENT;
                }
                if h.len() >= m.max_entries && m.lru {
                    let victim = h.iter().next().map(|e| key_hash(&e.0, m.string_key));
                    if let Some(Ok(entry)) = victim.map(|hash| h.find_entry(hash, |_| true)) {
                        let ((_, v), _) = entry.remove();
                        m.graveyard.borrow_mut().push(v);
                        self.deleted.set(true);
                    }
                }
                if h.len() >= m.max_entries {
                    return E2BIG;
                }
                let string_key = m.string_key;
                h.insert_unique(hash, (key.into(), value.into()), |e| {
                    key_hash(&e.0, string_key)
                });
                0
            }
            Store::None => EINVAL,
        }
    }

    /// `bpf_map_delete_elem`: 0 or a negative errno.
    ///
    /// # Safety
    /// `key` must point to the map's key size in bytes.
    pub unsafe fn delete(&self, handle: i64, key: *const u8) -> i64 {
        let Some(m) = self.map(handle) else {
            return EINVAL;
        };
        // SAFETY: the caller passes a key of the map's key size.
        let key = unsafe { std::slice::from_raw_parts(key, m.key_size) };
        match &mut *m.store.borrow_mut() {
            Store::Hash(h) => {
                match h.find_entry(key_hash(key, m.string_key), |e| key_eq(&e.0, key)) {
                    Ok(entry) => {
                        let ((_, v), _) = entry.remove();
                        m.graveyard.borrow_mut().push(v);
                        self.deleted.set(true);
                        0
                    }
                    Err(_) => ENOENT,
                }
            }
            Store::Array(_) | Store::None => EINVAL,
        }
    }

    /// The keys of a map, for iteration (a snapshot: the loop body may delete).
    pub fn keys(&self, handle: i64) -> Vec<Box<[u8]>> {
        let Some(m) = self.map(handle) else {
            return Vec::new();
        };
        match &*m.store.borrow() {
            Store::Array(_) => (0..m.max_entries)
                .map(|i| array_key(i, m.key_size).into_boxed_slice())
                .collect(),
            Store::Hash(h) => h.iter().map(|e| e.0.clone()).collect(),
            Store::None => Vec::new(),
        }
    }

    /// Frees the values deleted during the probe that just returned.
    pub fn release(&self) {
        if !self.deleted.replace(false) {
            return;
        }
        for m in &self.maps {
            if let Ok(mut g) = m.graveyard.try_borrow_mut()
                && !g.is_empty()
            {
                g.clear();
            }
        }
    }
}

/// The key of array element `i` (a little-endian u32 in `key_size` bytes).
fn array_key(i: usize, key_size: usize) -> Vec<u8> {
    let mut k = vec![0u8; key_size];
    let n = key_size.min(4);
    k[..n].copy_from_slice(&(i as u32).to_le_bytes()[..n]);
    k
}

/// The index an array key selects, if in range (the inverse of [`array_key`]).
fn array_index(key: &[u8], max: usize) -> Option<usize> {
    let mut b = [0u8; 4];
    let n = key.len().min(4);
    b[..n].copy_from_slice(&key[..n]);
    let i = u32::from_le_bytes(b) as usize;
    (i < max).then_some(i)
}

/// The in-process maps of one script, as the session reads them: the main thread's maps,
/// plus those of the workers that ran `input` probes in parallel. Like the kernel's CPUs,
/// each part holds its own slot of every per-CPU map (merged by the printers); other maps
/// live in the main part only, and error counters are summed.
pub struct HostMapSource<'a> {
    /// The main thread's maps first, then each worker's.
    pub parts: Vec<&'a HostMaps>,
    /// The script's map specs (same order as each part's maps).
    pub specs: &'a [MapSpec],
}

impl<'a> HostMapSource<'a> {
    /// The maps of the main thread and of the parallel workers.
    pub fn new(main: &'a HostMaps, workers: &'a [HostMaps], specs: &'a [MapSpec]) -> Self {
        HostMapSource {
            parts: std::iter::once(main).chain(workers).collect(),
            specs,
        }
    }
}

impl HostMapSource<'_> {
    fn index(&self, spec: &MapSpec) -> Option<usize> {
        self.specs.iter().position(|s| s.symbol == spec.symbol)
    }

    /// The parts holding a slot of this map.
    /// `keys`' per-part values in map `i` (zeros where a part lacks a key).
    fn entries_of(
        &self,
        spec: &MapSpec,
        holders: &[&HostMaps],
        i: usize,
        keys: Vec<Vec<u8>>,
    ) -> Option<RawEntries> {
        let value_size = spec.value_size as usize;
        let maps: Vec<&HostMap> = holders
            .iter()
            .map(|p| p.maps.get(i))
            .collect::<Option<_>>()?;
        Some(
            keys.into_iter()
                .map(|k| {
                    let slots = maps
                        .iter()
                        .map(|m| part_value(m, &k).unwrap_or_else(|| vec![0; value_size]))
                        .collect();
                    (k, slots)
                })
                .collect(),
        )
    }

    fn holders(&self, spec: &MapSpec) -> &[&HostMaps] {
        if spec.kind.per_cpu() {
            &self.parts
        } else {
            &self.parts[..self.parts.len().min(1)]
        }
    }
}

/// The value of `key` in one map of one part.
fn part_value(m: &HostMap, key: &[u8]) -> Option<Vec<u8>> {
    match &*m.store.borrow() {
        Store::Array(values) => {
            let i = array_index(key, m.max_entries)?;
            Some(values[i * m.value_size..(i + 1) * m.value_size].to_vec())
        }
        Store::Hash(h) => h
            .find(key_hash(key, m.string_key), |e| key_eq(&e.0, key))
            .map(|e| e.1.to_vec()),
        Store::None => None,
    }
}

/// The entries of one map of one part: (key, value).
fn part_entries(m: &HostMap) -> Vec<(Vec<u8>, Vec<u8>)> {
    match &*m.store.borrow() {
        Store::Array(values) => (0..m.max_entries)
            .map(|i| {
                (
                    array_key(i, m.key_size),
                    values[i * m.value_size..(i + 1) * m.value_size].to_vec(),
                )
            })
            .collect(),
        Store::Hash(h) => h.iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect(),
        Store::None => Vec::new(),
    }
}

impl MapSource for HostMapSource<'_> {
    fn entries(&self, spec: &MapSpec) -> Option<RawEntries> {
        let i = self.index(spec)?;
        let holders = self.holders(spec);
        let mut keys: Vec<Vec<u8>> = Vec::new();
        for part in holders {
            keys.extend(part_entries(part.maps.get(i)?).into_iter().map(|(k, _)| k));
        }
        keys.sort();
        keys.dedup();
        self.entries_of(spec, holders, i, keys)
    }

    fn entries_up_to(&self, spec: &MapSpec, limit: usize) -> Option<(RawEntries, usize)> {
        let i = self.index(spec)?;
        let holders = self.holders(spec);
        // One part (no parallel workers): its first `limit` keys in the table's own order,
        // which stays the same while its keys do, without reading or sorting the others.
        if let [one] = holders
            && let Store::Hash(h) = &*one.maps.get(i)?.store.borrow()
        {
            let keys: Vec<Vec<u8>> = h.iter().take(limit).map(|e| e.0.to_vec()).collect();
            return Some((self.entries_of(spec, holders, i, keys)?, h.len()));
        }
        let mut keys: Vec<Vec<u8>> = Vec::new();
        for part in holders {
            keys.extend(part_entries(part.maps.get(i)?).into_iter().map(|(k, _)| k));
        }
        keys.sort_unstable();
        keys.dedup();
        let n = keys.len();
        keys.truncate(limit);
        Some((self.entries_of(spec, holders, i, keys)?, n))
    }

    fn clear(&self, spec: &MapSpec) {
        let Some(i) = self.index(spec) else { return };
        for part in self.holders(spec) {
            if let Some(m) = part.maps.get(i) {
                match &mut *m.store.borrow_mut() {
                    Store::Array(values) => values.fill(0),
                    Store::Hash(h) => h.clear(),
                    Store::None => {}
                }
            }
        }
    }

    fn zero(&self, spec: &MapSpec) {
        let Some(i) = self.index(spec) else { return };
        for part in self.holders(spec) {
            if let Some(m) = part.maps.get(i) {
                match &mut *m.store.borrow_mut() {
                    Store::Array(values) => values.fill(0),
                    Store::Hash(h) => h.iter_mut().for_each(|(_, v)| v.fill(0)),
                    Store::None => {}
                }
            }
        }
    }

    fn counters(&self, spec: &MapSpec) -> [u64; 4] {
        let key = 0u32.to_le_bytes();
        let mut total = [0u64; 4];
        let Some(i) = self.index(spec) else {
            return total;
        };
        for part in &self.parts {
            // SAFETY: the key buffer is 4 bytes, the counters map's key size.
            let p = unsafe { part.lookup(i as i64, key.as_ptr()) };
            if p.is_null() {
                continue;
            }
            // SAFETY: a value of the map is `value_size` bytes.
            let value = unsafe { std::slice::from_raw_parts(p, spec.value_size as usize) };
            for (t, v) in total.iter_mut().zip(Counter::decode_all(value)) {
                *t = t.wrapping_add(v);
            }
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_compiler::program::MapRole;

    fn spec(kind: MapKind, key: u32, value: u32, max: u32) -> MapSpec {
        MapSpec {
            symbol: format!("m{kind:?}"),
            kind,
            key_size: key,
            value_size: value,
            max_entries: max,
            role: MapRole::Counters,
        }
    }

    #[test]
    fn hash_maps_follow_the_kernel_flags_and_limits() {
        let m = HostMaps::new(&[spec(MapKind::Hash, 8, 8, 2)]);
        let (k1, k2, k3) = (1u64.to_le_bytes(), 2u64.to_le_bytes(), 3u64.to_le_bytes());
        let v = 7u64.to_le_bytes();
        unsafe {
            assert!(m.lookup(0, k1.as_ptr()).is_null());
            assert_eq!(m.update(0, k1.as_ptr(), v.as_ptr(), EXIST), ENOENT);
            assert_eq!(m.update(0, k1.as_ptr(), v.as_ptr(), 0), 0);
            assert_eq!(m.update(0, k1.as_ptr(), v.as_ptr(), NOEXIST), EEXIST);
            assert_eq!(m.update(0, k2.as_ptr(), v.as_ptr(), 0), 0);
            assert_eq!(m.update(0, k3.as_ptr(), v.as_ptr(), 0), E2BIG);
            let p = m.lookup(0, k1.as_ptr());
            assert_eq!(std::ptr::read_unaligned(p as *const u64), 7);
            assert_eq!(m.delete(0, k1.as_ptr()), 0);
            // The deleted value stays readable until the probe returns.
            assert_eq!(std::ptr::read_unaligned(p as *const u64), 7);
            m.release();
            assert_eq!(m.delete(0, k1.as_ptr()), ENOENT);
            assert_eq!(m.keys(0).len(), 1);
        }
    }

    #[test]
    fn string_keys_hash_up_to_their_nul() {
        let key = |s: &[u8]| {
            let mut k = vec![0u8; 64];
            k[..s.len()].copy_from_slice(s);
            k
        };
        assert_eq!(string_prefix(&key(b"k12")), 8);
        assert_eq!(string_prefix(&key(b"abcdefgh")), 16);
        assert_eq!(string_prefix(&[b'x'; 64]), 64);
        assert_eq!(key_hash(&key(b"k12"), true), key_hash(&key(b"k12"), true));
        assert_ne!(key_hash(&key(b"k12"), true), key_hash(&key(b"k13"), true));
        // Different strings sharing their first words still differ as keys.
        let specs = [MapSpec {
            symbol: "s".into(),
            kind: MapKind::Hash,
            key_size: 64,
            value_size: 8,
            max_entries: 8,
            role: MapRole::User {
                name: "s".into(),
                key: Some(sonde_lang::types::Type::Str { size: 64 }),
                value: sonde_lang::types::Type::U64,
            },
        }];
        let m = HostMaps::new(&specs);
        let (a, b) = (key(b"abcdefgh1"), key(b"abcdefgh2"));
        let v = 1u64.to_le_bytes();
        unsafe {
            assert_eq!(m.update(0, a.as_ptr(), v.as_ptr(), 0), 0);
            assert!(m.lookup(0, b.as_ptr()).is_null());
            assert!(!m.lookup(0, a.as_ptr()).is_null());
        }
    }

    #[test]
    fn arrays_have_every_element() {
        let specs = [spec(MapKind::PerCpuArray, 4, 8, 3)];
        let m = HostMaps::new(&specs);
        let k = 2u32.to_le_bytes();
        let out = 3u32.to_le_bytes();
        unsafe {
            assert!(!m.lookup(0, k.as_ptr()).is_null());
            assert!(m.lookup(0, out.as_ptr()).is_null());
            assert_eq!(m.delete(0, k.as_ptr()), EINVAL);
        }
        let src = HostMapSource::new(&m, &[], &specs);
        assert_eq!(src.entries(&specs[0]).unwrap().len(), 3);
    }
}
