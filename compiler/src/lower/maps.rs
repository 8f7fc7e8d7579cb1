//! The script's maps (user maps and internal ones) and the code that reads and writes them.

use super::cx::{LowerCx, Val};
use crate::ir::{AluOp, Cond, Inst, Intrinsic, Label, MapRef, Operand, VReg, Width};
use crate::program::{MapKind, MapRole, MapSpec};
use sonde_lang::ast::Expr;
use sonde_lang::diag::Diagnostic;
use sonde_lang::sema::MapInfo;
use sonde_lang::types::{AggKind, Type};
use std::collections::BTreeMap;

/// Default number of entries of a user map (bpftrace's `max_map_keys`).
pub const DEFAULT_MAX_ENTRIES: u32 = 4096;
/// Frames kept per stack trace (bpftrace's and the kernel's default limit).
pub const MAX_STACK_DEPTH: u32 = 127;
/// The size of one frame of a build-id stack (`struct bpf_stack_build_id`).
pub const BUILD_ID_FRAME_SIZE: u32 = 32;
/// Size of the events ring buffer in bytes, unless `perf_rb_pages` says otherwise.
pub const RINGBUF_BYTES: u32 = 1 << 20;

/// The events ring buffer's size for `perf_rb_pages` (0: [`RINGBUF_BYTES`]): that many 4 KiB
/// pages, rounded up to the power of two the kernel requires.
pub fn ringbuf_bytes(perf_rb_pages: u32) -> u32 {
    match perf_rb_pages {
        0 => RINGBUF_BYTES,
        n => n.next_power_of_two().saturating_mul(4096),
    }
}

/// All maps of one script, in ELF order.
#[derive(Clone, Debug, Default)]
pub struct MapTable {
    /// Map specs; a `MapRef` indexes this list.
    pub specs: Vec<MapSpec>,
    by_name: BTreeMap<String, MapRef>,
    events: Option<MapRef>,
    counters: Option<MapRef>,
    scratch: Option<MapRef>,
    stacks: [Option<MapRef>; 2],
    /// The stack-trace map of `ustack(build_id)`.
    build_id_stacks: Option<MapRef>,
    /// `delta`'s timestamp maps: per thread (`None`) and per key type of `delta(KEY)`.
    deltas: Vec<(Option<Type>, MapRef)>,
    /// The script's `max_map_keys` (the size of internal maps that grow with the traced
    /// system).
    max_entries: u32,
    /// The events ring buffer's size in bytes (`perf_rb_pages`).
    pub ringbuf_bytes: u32,
}

impl MapTable {
    /// Builds the table of user maps from the checker's map infos.
    pub fn new(maps: &BTreeMap<String, MapInfo>, max_entries: u32) -> MapTable {
        let mut t = MapTable {
            max_entries,
            ringbuf_bytes: RINGBUF_BYTES,
            ..MapTable::default()
        };
        for (i, (name, info)) in maps.iter().enumerate() {
            let per_cpu = matches!(info.value, Type::Agg(_));
            // A key-less aggregation other than `sum` lives in a one-element per-CPU array,
            // whose lookup the kernel inlines; an untouched element (all counts zero) is not
            // printed, so it behaves like an absent hash element.
            let array = info.key.is_none()
                && matches!(&info.value, Type::Agg(k) if !matches!(k, AggKind::Sum { .. }));
            // A declaration (`let @m = lruhash(100);`) sets the size and the eviction.
            let lru = info.decl.is_some_and(|d| d.lru);
            let max_entries = info.decl.map_or(max_entries, |d| d.max_entries);
            let key_size = info.key.as_ref().map_or(8, |k| k.size().max(1));
            let (kind, key_size, max_entries) = match (array, per_cpu, lru) {
                (true, _, _) => (MapKind::PerCpuArray, 4, 1),
                (false, true, false) => (MapKind::PerCpuHash, key_size, max_entries),
                (false, true, true) => (MapKind::LruPerCpuHash, key_size, max_entries),
                (false, false, false) => (MapKind::Hash, key_size, max_entries),
                (false, false, true) => (MapKind::LruHash, key_size, max_entries),
            };
            let spec = MapSpec {
                symbol: format!("m{i}_{}", sanitize(name)),
                kind,
                key_size,
                value_size: value_size(&info.value),
                max_entries,
                role: MapRole::User {
                    name: name.clone(),
                    key: info.key.clone(),
                    value: info.value.clone(),
                },
            };
            let m = t.push(spec);
            t.by_name.insert(name.clone(), m);
        }
        t
    }

    fn push(&mut self, mut spec: MapSpec) -> MapRef {
        spec.symbol.truncate(15);
        self.specs.push(spec);
        MapRef(self.specs.len() as u32 - 1)
    }

    /// The user map `@name`.
    pub fn user(&self, name: &str) -> Option<MapRef> {
        self.by_name.get(name).copied()
    }

    /// The spec of a map.
    pub fn spec(&self, m: MapRef) -> &MapSpec {
        &self.specs[m.0 as usize]
    }

    /// The events ring buffer (created on first use).
    pub fn events_map(&mut self) -> MapRef {
        if let Some(m) = self.events {
            return m;
        }
        let m = self.push(MapSpec {
            symbol: "events".into(),
            kind: MapKind::RingBuf,
            key_size: 0,
            value_size: 0,
            max_entries: if self.ringbuf_bytes == 0 {
                RINGBUF_BYTES
            } else {
                self.ringbuf_bytes
            },
            role: MapRole::Events,
        });
        self.events = Some(m);
        m
    }

    /// The error counters (created on first use): one array element of [`crate::program::Counter::ALL`]
    /// `u64`s, the exit word ([`crate::program::EXITED_OFFSET`]) and the map-full places'
    /// words ([`crate::program::MAP_FULL_PLACES`]), in a data section so that a probe adds to a counter without a lookup.
    pub fn counters_map(&mut self) -> MapRef {
        if let Some(m) = self.counters {
            return m;
        }
        let m = self.push(MapSpec {
            symbol: crate::program::COUNTERS_SECTION.into(),
            kind: MapKind::Array,
            key_size: 4,
            value_size: crate::program::COUNTERS_AREA_BYTES,
            max_entries: 1,
            role: MapRole::Counters,
        });
        self.counters = Some(m);
        m
    }

    /// `size` zero bytes programs only read: the address of the counters' value and the
    /// offset of an area after the counters, grown to the largest size asked for. A large
    /// aggregation's first value for a key is inserted from there ([`update_value`]).
    pub fn zeros(&mut self, size: u32) -> (MapRef, i32) {
        let m = self.counters_map();
        let counters = crate::program::COUNTERS_AREA_BYTES;
        let spec = &mut self.specs[m.0 as usize];
        spec.value_size = spec.value_size.max(counters + size);
        (m, counters as i32)
    }

    /// The stack-trace map for kernel (`true`) or user stacks (created on first use).
    pub fn stack_map(&mut self, kernel: bool) -> MapRef {
        if let Some(m) = self.stacks[usize::from(kernel)] {
            return m;
        }
        let m = self.push(MapSpec {
            symbol: if kernel {
                "kstacks".into()
            } else {
                "ustacks".into()
            },
            kind: MapKind::StackTrace,
            key_size: 4,
            value_size: 8 * MAX_STACK_DEPTH,
            max_entries: DEFAULT_MAX_ENTRIES,
            role: MapRole::Stacks { kernel },
        });
        self.stacks[usize::from(kernel)] = Some(m);
        m
    }

    /// The stack-trace map of user stacks in `build_id` mode (created on first use): each
    /// frame a 32-byte `struct bpf_stack_build_id`.
    pub fn build_id_stack_map(&mut self) -> MapRef {
        if let Some(m) = self.build_id_stacks {
            return m;
        }
        let m = self.push(MapSpec {
            symbol: "ustacks_build_id".into(),
            kind: MapKind::BuildIdStackTrace,
            key_size: 4,
            value_size: BUILD_ID_FRAME_SIZE * MAX_STACK_DEPTH,
            max_entries: DEFAULT_MAX_ENTRIES,
            role: MapRole::BuildIdStacks,
        });
        self.build_id_stacks = Some(m);
        m
    }

    /// The timestamp map of `delta` (`key` = `None`: per thread) or of `delta(KEY)` for keys
    /// of type `key` (created on first use): an LRU hash of `max_map_keys` elements whose key
    /// is the probe's index (a `u64`) followed by the thread id (a `u64`) or the key, and
    /// whose value is the last firing time and the delta measured then, in nanoseconds.
    pub fn delta_map(&mut self, key: Option<&Type>) -> MapRef {
        if let Some((_, m)) = self.deltas.iter().find(|(k, _)| k.as_ref() == key) {
            return *m;
        }
        let key_size = key.map_or(8, |k| sonde_lang::types::align_up(k.size().max(1), 8));
        let symbol = match key {
            None => "delta_tid".to_string(),
            Some(_) => format!("delta{}", self.deltas.len()),
        };
        let max_entries = if self.max_entries == 0 {
            DEFAULT_MAX_ENTRIES
        } else {
            self.max_entries
        };
        let m = self.push(MapSpec {
            symbol,
            kind: MapKind::LruHash,
            key_size: 8 + key_size,
            value_size: 16,
            max_entries,
            role: MapRole::Delta,
        });
        self.deltas.push((key.cloned(), m));
        m
    }

    /// The per-CPU scratch map, grown to at least `size` bytes.
    pub fn scratch_map(&mut self, size: u32) -> MapRef {
        if let Some(m) = self.scratch {
            let spec = &mut self.specs[m.0 as usize];
            spec.value_size = spec.value_size.max(size);
            return m;
        }
        let m = self.push(MapSpec {
            symbol: "scratch".into(),
            kind: MapKind::PerCpuArray,
            key_size: 4,
            value_size: size.max(8),
            max_entries: 1,
            role: MapRole::Scratch,
        });
        self.scratch = Some(m);
        m
    }
}

/// Keeps `[A-Za-z0-9_]` of a map name.
fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// Bytes of one (per-CPU) value of a map holding `ty`.
pub fn value_size(ty: &Type) -> u32 {
    match ty {
        Type::Agg(kind) => agg_value_size(kind),
        other => sonde_lang::types::align_up(other.size().max(1), 8),
    }
}

/// Per-CPU value size of an aggregation (see `catalog::aggs` for the layouts).
pub fn agg_value_size(kind: &AggKind) -> u32 {
    crate::catalog::aggs::value_size(kind)
}

/// Builds the key of `map` from already lowered key values (none for a scalar map).
pub fn build_key(cx: &mut LowerCx<'_>, key_ty: Option<&Type>, keys: &[(Val, Type)]) -> VReg {
    let Some(key_ty) = key_ty else {
        let k = cx.alloc(8);
        cx.store(k, 0, Operand::Imm(0), Width::W64);
        return k;
    };
    let size = key_ty.size().max(1);
    // A string key that is already a whole string of the key's size (`@[field(1)]`,
    // `@[comm]`) is its own key: no copy.
    if let [(Val::Mem { ptr, size: have }, vt)] = keys
        && *have == size
        && vt == key_ty
        && matches!(key_ty, Type::Str { .. })
    {
        return *ptr;
    }
    let end = sonde_lang::types::align_up(size, 8);
    let ptr = cx.alloc(size);
    match key_ty {
        Type::Tuple(items) if keys.len() > 1 => {
            let (offs, _) = sonde_lang::types::tuple_layout(items);
            for (i, ((v, vt), ty)) in keys.iter().zip(items).enumerate() {
                let to = offs.get(i + 1).copied().unwrap_or(end);
                write_field(cx, *v, vt, ty, ptr, offs[i], to);
            }
        }
        _ => match keys.first() {
            Some((v, vt)) => write_field(cx, *v, vt, key_ty, ptr, 0, end),
            None => cx.zero_bytes(ptr, 0, end),
        },
    }
    ptr
}

/// Writes `v` into the field at `off` of `dst` and zeroes the rest of `[off, end)` (the
/// field's padding, or what the write leaves): the bytes a write covers whole are not zeroed
/// first, and a zeroed word a store then overwrites goes in the peephole pass.
fn write_field(
    cx: &mut LowerCx<'_>,
    v: Val,
    from: &Type,
    to: &Type,
    dst: VReg,
    off: u32,
    end: u32,
) {
    // A read of memory at least the field's size fills it (a failed read zeroes it).
    let whole = matches!(v, Val::Place { .. })
        && !super::cx::is_scalar(from)
        && from.size() >= to.size()
        && !matches!((from, to), (Type::Tuple(a), Type::Tuple(b)) if a != b);
    // An integer is read first: its store then follows the zeroing, which goes.
    let v = if super::cx::is_scalar(from) {
        cx.materialize(v, from)
    } else {
        v
    };
    zero_after(cx, dst, off, if whole { to.size() } else { 0 }, end);
    write_converted(cx, v, from, to, dst, off as i32);
}

/// Zeroes `[off + written, end)` of `dst` before a write of `written` bytes at `off`, by
/// whole words where they stay within `[off, end)` (the write then covers the word's start).
fn zero_after(cx: &mut LowerCx<'_>, dst: VReg, off: u32, written: u32, end: u32) {
    let from = (off + written).min(end);
    let from = (from & !7).max(off);
    cx.zero_bytes(dst, from as i32, end - from);
}

/// Writes a value of type `from` into a field of type `to` (widths may differ: integers are
/// already 64-bit in registers, strings are copied up to the smaller size).
pub fn write_converted(cx: &mut LowerCx<'_>, v: Val, from: &Type, to: &Type, dst: VReg, off: i32) {
    // The elements to convert: (offset and type in `from`, offset and type in `to`).
    let parts: Vec<(u32, &Type, u32, &Type)> = match (from, to) {
        (Type::Tuple(fs), Type::Tuple(ts)) if fs != ts => {
            let (fo, _) = sonde_lang::types::tuple_layout(fs);
            let (tof, _) = sonde_lang::types::tuple_layout(ts);
            (0..fs.len().min(ts.len()))
                .map(|i| (fo[i], &fs[i], tof[i], &ts[i]))
                .collect()
        }
        // Records of the same fields in another order or with other widths: by name.
        (Type::Record(fr), Type::Record(tr)) if fr != tr => tr
            .fields
            .iter()
            .filter_map(|t| {
                fr.field(&t.name)
                    .map(|f| (f.offset, &f.ty, t.offset, &t.ty))
            })
            .collect(),
        _ => return cx.write_val(v, from, dst, off, to.size()),
    };
    let Val::Mem { ptr, .. } = cx.materialize(v, from) else {
        return;
    };
    for (from_off, from_ty, to_off, to_ty) in parts {
        let field = Val::Place {
            base: ptr,
            offset: from_off as i32,
            space: super::cx::PlaceSpace::Own,
        };
        write_converted(cx, field, from_ty, to_ty, dst, off + to_off as i32);
    }
}

/// Builds the key of type `key_ty` from key expressions: a tuple's buffer first, then each
/// element lowered and written in turn, as an event's arguments are: a string known when
/// compiling by immediates ([`super::events::constant_field`]), `comm`, `str()` and `ntop`
/// straight into their field ([`super::events::in_place_read`]; `str`'s cut mark, one byte
/// beyond its field, only where the next field starts there and covers it), and only the
/// bytes the writes leave zeroed.
pub fn lower_key(
    cx: &mut LowerCx<'_>,
    key_ty: Option<&Type>,
    keys: &[Expr],
) -> Result<VReg, Diagnostic> {
    let tuple = match key_ty {
        Some(Type::Tuple(items)) if keys.len() > 1 && keys.len() == items.len() => items,
        _ => {
            let mut vals = Vec::new();
            for k in keys {
                let v = cx.lower_expr(k)?;
                vals.push((v, cx.type_of(k)));
            }
            return Ok(build_key(cx, key_ty, &vals));
        }
    };
    let (offs, size) = sonde_lang::types::tuple_layout(tuple);
    let end = sonde_lang::types::align_up(size.max(1), 8);
    // One byte more than the key: the last field may be read in place with a byte beyond
    // it (a `str()` that marks a cut string), which must stay inside the buffer.
    let key = cx.alloc(size.max(1) + 1);
    for (i, (k, ty)) in keys.iter().zip(tuple).enumerate() {
        let off = offs[i];
        let next = offs.get(i + 1).copied().unwrap_or(end);
        let from = cx.type_of(k);
        if let Some(bytes) = super::events::constant_field(cx, k, ty) {
            zero_after(cx, key, off, 0, next);
            super::strings::constant_into(cx, &bytes, key, off as i32);
            continue;
        }
        match super::events::in_place_read(k, off).filter(|_| from == *ty) {
            Some((beyond, fills)) => {
                zero_after(cx, key, off, if fills { ty.size() } else { 0 }, next);
                let ptr = cx.offset_ptr(key, off as i32);
                let room = if next == off + ty.size() {
                    ty.size() + beyond
                } else {
                    ty.size()
                };
                if let Some(v) = cx.lower_in_place(k, ptr, room)? {
                    write_converted(cx, v, &from, ty, key, off as i32);
                }
            }
            None => {
                let v = cx.lower_expr(k)?;
                write_field(cx, v, &from, ty, key, off, next);
            }
        }
    }
    Ok(key)
}

/// Looks up `key` in `map`; returns the value pointer register (0 when absent).
pub fn lookup(cx: &mut LowerCx<'_>, map: MapRef, key: VReg) -> VReg {
    let h = cx.map_handle(map);
    cx.call(
        Intrinsic::MapLookup,
        vec![Operand::Reg(h), Operand::Reg(key)],
    )
}

/// Stores a plain (non-aggregation) value into `map[key]`.
pub fn store(cx: &mut LowerCx<'_>, map: MapRef, key: VReg, v: Val, from: &Type) {
    let spec = cx.maps.spec(map).clone();
    let MapRole::User { value, .. } = &spec.role else {
        return;
    };
    let buf = cx.alloc_zeroed(spec.value_size);
    write_converted(cx, v, from, value, buf, 0);
    cx.insert(map, key, buf);
}

/// Reads `map[key]` as a value of the map's value type (zero when absent).
pub fn load(
    cx: &mut LowerCx<'_>,
    map: MapRef,
    key: VReg,
) -> Result<Val, sonde_lang::diag::Diagnostic> {
    let spec = cx.maps.spec(map).clone();
    let MapRole::User { value, .. } = &spec.role else {
        return Ok(Val::None);
    };
    if let Type::Agg(kind) = value {
        // Reading an aggregation gives its total over every CPU.
        return combine_cpus(cx, map, key, kind).map(Val::Int);
    }
    let p = lookup(cx, map, key);
    if cx.options.helper_errors && !cx.updating {
        cx.report_missing_key(p);
    }
    let done = cx.label();
    match value {
        Type::Agg(_) => unreachable!("handled above"),
        ty if super::cx::is_scalar(ty) => {
            let out = cx.imm(0);
            cx.branch(Cond::Eq, p, Operand::Imm(0), done);
            let v = cx.load(p, 0, Width::from_bytes(ty.size().clamp(1, 8)));
            let v = cx.normalize(v, ty);
            cx.emit(Inst::Mov {
                dst: out,
                src: Operand::Reg(v),
            });
            cx.place_label(done);
            Ok(Val::Int(out))
        }
        ty => {
            let size = ty.size();
            let buf = cx.alloc_zeroed(size);
            cx.branch(Cond::Eq, p, Operand::Imm(0), done);
            cx.copy(buf, 0, p, 0, size);
            cx.place_label(done);
            Ok(Val::Mem { ptr: buf, size })
        }
    }
}

/// Updates the element `map[key]` of an aggregation with `apply(cx, value, end)`, which
/// emits the update of the value at `value` (and may jump to `end` to leave it as it is).
/// The update is emitted twice: on the map's value when the key is present, and on a zeroed
/// buffer inserted afterwards when it is missing, so that each path makes one map call
/// (no insert-then-look-up-again) and a missing key's first value is stored directly (the
/// peephole pass folds `0 + 1` into the store of `1`). A value of [`LARGE_VALUE`] bytes or
/// more (a histogram) is instead inserted as zeroes from the shared zero area
/// ([`MapTable::zeros`]), looked up again and updated by the same code as a present one.
/// Per-CPU maps make the insert safe against another CPU inserting the same key meanwhile
/// (`BPF_ANY` writes only this CPU's copy); elements of array maps always exist.
pub fn update_value(
    cx: &mut LowerCx<'_>,
    map: MapRef,
    key: VReg,
    apply: &mut dyn FnMut(&mut LowerCx<'_>, VReg, Label),
) {
    cx.forget_map(map);
    let size = cx.maps.spec(map).value_size;
    let end = cx.label();
    let found = lookup(cx, map, key);
    if matches!(
        cx.maps.spec(map).kind,
        MapKind::Array | MapKind::PerCpuArray
    ) {
        cx.branch(Cond::Eq, found, Operand::Imm(0), end);
        apply(cx, found, end);
        cx.place_label(end);
        return;
    }
    if size >= LARGE_VALUE {
        // A large value (a histogram's buckets): a missing key gets zeroes from the shared
        // zero area, then the update is applied in place once for both paths (a buffer to
        // zero, and the update emitted twice, cost more code than a second lookup that runs
        // once per key).
        let have = cx.label();
        cx.branch(Cond::Ne, found, Operand::Imm(0), have);
        let (zeros, at) = cx.maps.zeros(size);
        let base = cx.vreg();
        cx.emit(Inst::MapValue {
            dst: base,
            map: zeros,
        });
        let value = cx.offset_ptr(base, at);
        cx.insert(map, key, value);
        let again = lookup(cx, map, key);
        cx.emit(Inst::Mov {
            dst: found,
            src: Operand::Reg(again),
        });
        cx.branch(Cond::Eq, found, Operand::Imm(0), end);
        cx.place_label(have);
        apply(cx, found, end);
        cx.place_label(end);
        return;
    }
    let missing = cx.label();
    cx.branch(Cond::Eq, found, Operand::Imm(0), missing);
    apply(cx, found, end);
    cx.emit(Inst::Jump(end));
    cx.place_label(missing);
    let buf = cx.alloc_zeroed(size);
    let insert = cx.label();
    apply(cx, buf, insert);
    cx.place_label(insert);
    cx.insert(map, key, buf);
    cx.place_label(end);
}

/// The value size from which an aggregation's first value is inserted from the shared zero
/// area rather than built in a buffer of its own (see [`update_value`]).
const LARGE_VALUE: u32 = 64;

/// Deletes `map[key]`.
pub fn delete(cx: &mut LowerCx<'_>, map: MapRef, key: VReg) -> VReg {
    cx.forget_map(map);
    let h = cx.map_handle(map);
    let rc = cx.call(
        Intrinsic::MapDelete,
        vec![Operand::Reg(h), Operand::Reg(key)],
    );
    // true when something was deleted
    cx.flag(Cond::Eq, rc, Operand::Imm(0))
}

/// For an aggregation call: updates the element of the target map with `apply` (see
/// [`update_value`]); its arguments are evaluated by the caller, before.
pub fn agg_update(
    cx: &mut LowerCx<'_>,
    call: &super::cx::LowerCall<'_>,
    apply: &mut dyn FnMut(&mut LowerCx<'_>, VReg, Label),
) -> Result<super::cx::Val, sonde_lang::diag::Diagnostic> {
    let Some((map, key)) = call.target else {
        return Err(cx.unsupported(call.span, "an aggregation outside a map assignment"));
    };
    update_value(cx, map, key, apply);
    Ok(super::cx::Val::None)
}

/// `*(u64 *)(p + off) += v` (the value is per CPU, so no atomic is needed).
pub fn add_to(cx: &mut LowerCx<'_>, p: VReg, off: i32, v: Operand) {
    let old = cx.load(p, off, Width::W64);
    let new = cx.alu(crate::ir::AluOp::Add, old, v);
    cx.store(p, off, Operand::Reg(new), Width::W64);
}

/// Clamps the bucket index `idx` to `buckets - 1`, so that the verifier sees
/// [`add_bucket`]'s access stay inside the value. Done once, before the update (whose code
/// is emitted for the present and the missing key).
pub fn clamp_bucket(cx: &mut LowerCx<'_>, idx: VReg, buckets: usize) {
    let last = buckets.saturating_sub(1) as i64;
    let ok = cx.label();
    cx.branch(Cond::ULe, idx, Operand::Imm(last), ok);
    cx.emit(Inst::Mov {
        dst: idx,
        src: Operand::Imm(last),
    });
    cx.place_label(ok);
}

/// `((u64 *)p)[idx] += 1`, `idx` clamped by [`clamp_bucket`].
pub fn add_bucket(cx: &mut LowerCx<'_>, p: VReg, idx: VReg) {
    let off = cx.alu(crate::ir::AluOp::Shl, idx, Operand::Imm(3));
    let q = cx.alu(crate::ir::AluOp::Add, p, Operand::Reg(off));
    add_to(cx, q, 0, Operand::Imm(1));
}

/// The value of a per-CPU aggregation element summed (or min/max-ed, averaged) over every
/// CPU, as printing shows it.
pub fn combine_cpus(
    cx: &mut LowerCx<'_>,
    map: MapRef,
    key: VReg,
    kind: &AggKind,
) -> Result<VReg, sonde_lang::diag::Diagnostic> {
    let total = cx.imm(0);
    let count = cx.imm(0);
    let ncpus = cx.options.ncpus.max(1);
    for cpu in 0..ncpus {
        let h = cx.map_handle(map);
        let p = cx.call(
            Intrinsic::MapLookupPercpu,
            vec![Operand::Reg(h), Operand::Reg(key), Operand::Imm(cpu.into())],
        );
        let skip = cx.label();
        cx.branch(Cond::Eq, p, Operand::Imm(0), skip);
        let v = cx.load(p, 0, Width::W64);
        match kind {
            AggKind::Count | AggKind::Sum { .. } => {
                cx.emit(Inst::Alu {
                    op: AluOp::Add,
                    dst: total,
                    lhs: total,
                    rhs: Operand::Reg(v),
                });
            }
            AggKind::Avg { .. } => {
                cx.emit(Inst::Alu {
                    op: AluOp::Add,
                    dst: total,
                    lhs: total,
                    rhs: Operand::Reg(v),
                });
                let c = cx.load(p, 8, Width::W64);
                cx.emit(Inst::Alu {
                    op: AluOp::Add,
                    dst: count,
                    lhs: count,
                    rhs: Operand::Reg(c),
                });
            }
            AggKind::Min { signed } | AggKind::Max { signed } => {
                let set = cx.load(p, 8, Width::W64);
                cx.branch(Cond::Eq, set, Operand::Imm(0), skip);
                let take = cx.label();
                // The first set CPU's value is taken as is.
                cx.branch(Cond::Eq, count, Operand::Imm(0), take);
                let min = matches!(kind, AggKind::Min { .. });
                let keep = match (min, *signed) {
                    (true, true) => Cond::SGe,
                    (true, false) => Cond::UGe,
                    (false, true) => Cond::SLe,
                    (false, false) => Cond::ULe,
                };
                cx.branch(keep, v, Operand::Reg(total), skip);
                cx.place_label(take);
                cx.emit(Inst::Mov {
                    dst: total,
                    src: Operand::Reg(v),
                });
                cx.emit(Inst::Mov {
                    dst: count,
                    src: Operand::Imm(1),
                });
            }
            AggKind::Stats { .. }
            | AggKind::Hist { .. }
            | AggKind::Lhist { .. }
            | AggKind::Tseries { .. } => {
                return Err(
                    cx.unsupported(cx.span, "`for` over a stats, hist, lhist or tseries map")
                );
            }
        }
        cx.place_label(skip);
    }
    if matches!(kind, AggKind::Avg { .. }) {
        let done = cx.label();
        let out = cx.imm(0);
        cx.branch(Cond::Eq, count, Operand::Imm(0), done);
        let signed = matches!(kind, AggKind::Avg { signed: true });
        let q = cx.alu(
            if signed { AluOp::SDiv } else { AluOp::UDiv },
            total,
            Operand::Reg(count),
        );
        cx.emit(Inst::Mov {
            dst: out,
            src: Operand::Reg(q),
        });
        cx.place_label(done);
        return Ok(out);
    }
    Ok(total)
}
