//! Functions a program calls directly (BPF-to-BPF calls) where several places would repeat
//! the same code around a helper call: a map update (an assignment, an aggregation's first
//! value for a key) and the output of an event, each with the counting of its failure. Each
//! place emits a pending call; once the probe is lowered, a single place gets the code
//! inline, and two or more call one function appended to the program's callbacks.
//!
//! A map update the kernel refuses because the map is full (`-E2BIG`) is counted and also
//! reported with its place in the script, as bpftrace warns ("Map full; can't update
//! element"): each place passes the id of its [`EventSpec::HelperError`] event and the
//! index of its word among the map-full places, which the failure path alone reads: the
//! word counts the warnings sent, at most [`MAP_FULL_WARNINGS_PER_PLACE`] + 1.

use super::cx::LowerCx;
use crate::ir::{AluOp, Cond, Function, Inst, Intrinsic, MapRef, Operand, VReg, Width};
use crate::program::{
    Counter, EventSpec, MAP_FULL_PLACES, MAP_FULL_PLACES_OFFSET, MAP_FULL_WARNINGS_PER_PLACE,
    MAP_UPDATE_HELPER, WARNING_OUTPUT_FLAGS,
};

/// `-E2BIG`: `bpf_map_update_elem`'s result when the map is full (and an array's index is
/// out of range, which no array map of a script can have).
const E2BIG: i64 = -7;

/// Code shared by the places of a probe that need it (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shared {
    /// `(map, key*, value*, place)`: `map[key] = *value` (`BPF_ANY`), a failure counted as
    /// a full map and, when the map is full, the place's map-full event sent while its word
    /// allows (`place`: the event id × [`MAP_FULL_PLACES`] + the word's index): an
    /// assignment, or an aggregation's first value for a key.
    Insert,
    /// `(_, event*, size)`: the event sent through the ring buffer, a failure counted as a
    /// lost event. The first argument is a placeholder, so that the others arrive in the
    /// registers the helper takes them in (r2, r3), the map going to r1. The call costs a
    /// few nanoseconds against the event's handling in user space.
    Output,
}

impl Shared {
    const ALL: [Shared; 2] = [Shared::Insert, Shared::Output];

    /// The callee of a call of this code until [`LowerCx::finish_shared`] decides.
    fn pending(self) -> u32 {
        u32::MAX - self as u32
    }

    fn params(self) -> usize {
        match self {
            Shared::Insert => 4,
            Shared::Output => 3,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Shared::Insert => "insert",
            Shared::Output => "output",
        }
    }
}

impl LowerCx<'_> {
    /// Inserts `map[key] = *value` (`BPF_ANY`), counting a map-full error when the kernel
    /// refuses it, and reporting a full map at the current span: an assignment, or an
    /// aggregation's first value for a key.
    pub(crate) fn insert(&mut self, map: MapRef, key: VReg, value: VReg) {
        self.forget_map(map);
        let h = self.map_handle(map);
        let event = self.event_id(EventSpec::HelperError {
            helper: MAP_UPDATE_HELPER.to_string(),
            span: self.span,
        });
        // The places are numbered in the order of their events, script-wide.
        let word = self.events[..event as usize]
            .iter()
            .filter(|e| matches!(e, EventSpec::HelperError { helper, .. } if helper == MAP_UPDATE_HELPER))
            .count()
            .min(MAP_FULL_PLACES as usize - 1);
        let place = event * u64::from(MAP_FULL_PLACES) + word as u64;
        let args = vec![
            Operand::Reg(h),
            Operand::Reg(key),
            Operand::Reg(value),
            Operand::Imm(place as i64),
        ];
        self.call_shared(Shared::Insert, args);
    }

    /// Sends the `size` bytes at `ptr` as one event record through the ring buffer, counting
    /// a lost event when it is full.
    pub fn output(&mut self, ptr: VReg, size: u32) {
        let args = vec![
            Operand::Imm(0),
            Operand::Reg(ptr),
            Operand::Imm(size.into()),
        ];
        self.call_shared(Shared::Output, args);
    }

    fn call_shared(&mut self, what: Shared, args: Vec<Operand>) {
        self.emit(Inst::CallFunc {
            dst: None,
            func: what.pending(),
            args,
        });
    }

    /// The code of `what` on `args`.
    fn shared_code(&mut self, what: Shared, args: Vec<Operand>) {
        let (func, args, counter) = match what {
            Shared::Insert => {
                let mut args = args;
                let place = args.pop().expect("an insert's place");
                args.push(Operand::Imm(0));
                let rc = self.call(Intrinsic::MapUpdate, args);
                let ok = self.label();
                self.branch(Cond::Eq, rc, Operand::Imm(0), ok);
                // The result is tested again at once, before anything else is called: it
                // stays in the helper's result register, which the success path leaves.
                let count = self.label();
                self.branch(Cond::Ne, rc, Operand::Imm(E2BIG), count);
                self.map_full_event(place);
                self.place_label(count);
                self.count_error(Counter::MapFull);
                self.place_label(ok);
                return;
            }
            Shared::Output => {
                let rb = self.maps.events_map();
                let h = self.vreg();
                self.emit(Inst::MapHandle { dst: h, map: rb });
                let mut all = args;
                all[0] = Operand::Reg(h);
                all.push(Operand::Imm(0));
                (Intrinsic::RingbufOutput, all, Counter::LostEvents)
            }
        };
        let rc = self.call(func, args);
        let ok = self.label();
        self.branch(Cond::Eq, rc, Operand::Imm(0), ok);
        self.count_error(counter);
        self.place_label(ok);
    }

    /// Sends the map-full event of `place` ([`Shared::Insert`]'s argument: the event id ×
    /// [`MAP_FULL_PLACES`] + the place's word) unless its word says it was sent
    /// [`MAP_FULL_WARNINGS_PER_PLACE`] + 1 times already (read, then added to: CPUs racing
    /// may send a few more). The payload is the update's result, `-E2BIG`; the event goes
    /// from a stack slot of the current function, a lost one counted. The output is inline,
    /// not the shared [`Shared::Output`]: a shared insert calling it would make a third
    /// frame in the kernel's count of the stack.
    fn map_full_event(&mut self, place: Operand) {
        let counters = self.maps.counters_map();
        let base = self.vreg();
        self.emit(Inst::MapValue {
            dst: base,
            map: counters,
        });
        let places = u64::from(MAP_FULL_PLACES);
        // The word at `word + offset`, and the event id.
        let (word, offset, event) = match place {
            Operand::Imm(p) => {
                let p = p as u64;
                let offset = MAP_FULL_PLACES_OFFSET + 8 * (p % places) as i32;
                (base, offset, Operand::Imm((p / places) as i64))
            }
            Operand::Reg(p) => {
                let index = self.alu(AluOp::And, p, Operand::Imm(places as i64 - 1));
                let at = self.alu(AluOp::Shl, index, Operand::Imm(3));
                let word = self.alu(AluOp::Add, base, Operand::Reg(at));
                let shift = Operand::Imm(places.trailing_zeros().into());
                let event = self.alu(AluOp::LShr, p, shift);
                (word, MAP_FULL_PLACES_OFFSET, Operand::Reg(event))
            }
        };
        let done = self.label();
        let sent = self.load(word, offset, Width::W64);
        let limit = MAP_FULL_WARNINGS_PER_PLACE as i64 + 1;
        self.branch(Cond::UGe, sent, Operand::Imm(limit), done);
        let one = self.imm(1);
        self.emit(Inst::AtomicAdd {
            base: word,
            offset,
            src: one,
        });
        let slot = self.f.slot(16);
        let buf = self.vreg();
        self.emit(Inst::SlotAddr { dst: buf, slot });
        self.store(buf, 0, event, Width::W64);
        self.store(buf, 8, Operand::Imm(E2BIG), Width::W64);
        let rb = self.maps.events_map();
        let h = self.vreg();
        self.emit(Inst::MapHandle { dst: h, map: rb });
        let args = vec![
            Operand::Reg(h),
            Operand::Reg(buf),
            Operand::Imm(16),
            Operand::Imm(WARNING_OUTPUT_FLAGS),
        ];
        let rc = self.call(Intrinsic::RingbufOutput, args);
        self.branch(Cond::Eq, rc, Operand::Imm(0), done);
        self.count_error(Counter::LostEvents);
        self.place_label(done);
    }

    /// Emits `code` into a function of its own whose registers and labels continue the
    /// probe's, and returns it.
    fn detached(&mut self, name: String, code: impl FnOnce(&mut Self)) -> Function {
        let mut f = Function::new(name);
        f.vregs = std::iter::once(&self.f)
            .chain(&self.callbacks)
            .map(|f| f.vregs)
            .max()
            .unwrap_or(0);
        f.labels = self.f.labels;
        let outer = std::mem::replace(&mut self.f, f);
        let outer_reuse = std::mem::take(&mut self.reuse);
        code(self);
        let f = std::mem::replace(&mut self.f, outer);
        self.reuse = outer_reuse;
        self.f.labels = self.f.labels.max(f.labels);
        f
    }

    /// Resolves the pending calls of shared code: one place gets the code inline; several
    /// call one function (the arguments and a call at each place instead of the helper's
    /// other arguments, the result test and the counter's increment).
    pub(crate) fn finish_shared(&mut self) {
        for what in Shared::ALL {
            self.finish(what);
        }
    }

    fn finish(&mut self, what: Shared) {
        let pending = what.pending();
        let is_pending = |i: &Inst| matches!(i, Inst::CallFunc { func, .. } if *func == pending);
        let mut sites = Vec::new();
        for (which, f) in std::iter::once(&self.f).chain(&self.callbacks).enumerate() {
            for (at, (inst, span)) in f.insts.iter().enumerate() {
                if is_pending(inst) {
                    sites.push((which, at, *span));
                }
            }
        }
        match sites.as_slice() {
            [] => {}
            [(which, at, span)] => {
                let Inst::CallFunc { args, .. } = self.function_mut(*which).insts[*at].0.clone()
                else {
                    unreachable!("a pending call is a call");
                };
                let saved = std::mem::replace(&mut self.span, *span);
                let mut code = self.detached(String::new(), |cx| cx.shared_code(what, args));
                self.span = saved;
                let f = self.function_mut(*which);
                // The code's stack slots become the function's.
                let first_slot = f.slots.len() as u32;
                for (inst, _) in &mut code.insts {
                    if let Inst::SlotAddr { slot, .. } = inst {
                        slot.0 += first_slot;
                    }
                }
                f.slots.extend(code.slots);
                f.insts.splice(*at..=*at, code.insts);
                f.vregs = f.vregs.max(code.vregs);
                f.labels = f.labels.max(code.labels);
            }
            [(_, _, span), ..] => {
                let saved = std::mem::replace(&mut self.span, *span);
                let name = format!("{}_{}", self.f.name, what.name());
                let shared = self.detached(name, |cx| {
                    let params: Vec<VReg> = (0..what.params()).map(|_| cx.f.vreg()).collect();
                    cx.f.params = params.clone();
                    cx.shared_code(what, params.into_iter().map(Operand::Reg).collect());
                    cx.emit(Inst::Return {
                        value: Operand::Imm(0),
                    });
                });
                self.span = saved;
                self.callbacks.push(shared);
                let index = self.callbacks.len() as u32 - 1;
                for (which, at, _) in sites {
                    if let Inst::CallFunc { func, .. } = &mut self.function_mut(which).insts[at].0 {
                        *func = index;
                    }
                }
            }
        }
    }

    /// The probe's function (0) or callback `which - 1`.
    fn function_mut(&mut self, which: usize) -> &mut Function {
        match which {
            0 => &mut self.f,
            i => &mut self.callbacks[i - 1],
        }
    }
}
