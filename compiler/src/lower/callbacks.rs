//! Loops whose bodies run as BPF callbacks: `for ($kv : @map)` through
//! `bpf_for_each_map_elem`, and `for ($i : a..b)` with bounds known only at run time through
//! `bpf_loop`.
//!
//! The body becomes a separate IR function (a callback of the program). The caller stores
//! its scratch variables — scalar values, and pointers to variables held in memory — and the
//! probe context in a struct on its stack, passed to the callback; the callback loads them,
//! runs the body, and stores the scalars back before it returns (0 to go on, 1 to stop). A
//! `return` or `exit()` in the body sets a flag in the struct that the caller checks, and
//! `return EXPR` leaves its value there too: the caller returns it.

use super::cx::{LoopLabels, LowerCx, Val, VarHome, is_scalar};
use super::maps::write_converted;
use crate::ir::{AluOp, Cond, Function, Inst, Intrinsic, MapRef, Operand, VReg, Width};
use crate::program::MapRole;
use sonde_lang::ast::{Block, Ident};
use sonde_lang::diag::Diagnostic;
use sonde_lang::span::Span;
use sonde_lang::types::{Type, tuple_layout};

type R<T> = Result<T, Diagnostic>;

/// Offset of the "leave the probe" flag in the callback struct.
const FLAG_OFF: i32 = 0;
/// Offset of the probe context pointer.
const CTX_OFF: i32 = 8;
/// Offset of the extra word (the range start of a `bpf_loop`).
const EXTRA_OFF: i32 = 16;
/// Offset of the value the probe returns when the flag is set (`return EXPR`; 0 otherwise).
const RET_OFF: i32 = 24;
/// Offset of the first variable.
const VARS_OFF: i32 = 32;

/// What the callback iterates.
pub(crate) enum LoopSource {
    /// The elements of a user map.
    Map(MapRef),
    /// `count` iterations; the loop variable is `start + index`.
    Range { start: VReg, count: VReg },
}

/// Stack slots with their sizes.
type SizedSlots = Vec<(crate::ir::Slot, u32)>;

/// What [`LowerCx::enter_callback`] sets aside of the function being built while a callback
/// is built, and [`LowerCx::leave_callback`] restores.
pub(crate) struct Outer {
    f: Function,
    vars: std::collections::HashMap<String, VarHome>,
    loops: Vec<LoopLabels>,
    reuse: Vec<(super::reuse::Reuse, VReg, usize)>,
    exit: crate::ir::Label,
    ret_slot: Option<VReg>,
    scratch: Option<VReg>,
    stack: (u32, u32),
    /// The stack slots taken and free (with their sizes).
    slots: (SizedSlots, SizedSlots),
    loop_frame: Option<crate::ir::Slot>,
}

/// The outer variables passed to a callback, in struct order.
struct Passed {
    vars: Vec<(String, VarHome)>,
    size: u32,
}

impl Passed {
    fn offset(i: usize) -> i32 {
        VARS_OFF + 8 * i as i32
    }
}

impl LowerCx<'_> {
    /// Lowers a loop whose body runs as a callback.
    pub(crate) fn lower_callback_loop(
        &mut self,
        source: LoopSource,
        var: &Ident,
        body: &Block,
        span: Span,
    ) -> R<()> {
        let mut vars: Vec<(String, VarHome)> =
            self.vars.iter().map(|(n, h)| (n.clone(), *h)).collect();
        vars.sort_by(|a, b| a.0.cmp(&b.0));
        let passed = Passed {
            size: VARS_OFF as u32 + 8 * vars.len() as u32,
            vars,
        };

        // The struct lives on the caller's stack (the helper requires a stack pointer).
        let slot = self.f.slot(passed.size);
        let p = self.vreg();
        self.emit(Inst::SlotAddr { dst: p, slot });
        self.store(p, FLAG_OFF, Operand::Imm(0), Width::W64);
        let ctx = self.ctx();
        self.store(p, CTX_OFF, Operand::Reg(ctx), Width::W64);
        let extra = match &source {
            LoopSource::Range { start, .. } => Operand::Reg(*start),
            LoopSource::Map(_) => Operand::Imm(0),
        };
        self.store(p, EXTRA_OFF, extra, Width::W64);
        self.store(p, RET_OFF, Operand::Imm(0), Width::W64);
        for (i, (_, home)) in passed.vars.iter().enumerate() {
            let v = match home {
                VarHome::Reg(r) | VarHome::Mem { ptr: r, .. } => *r,
            };
            self.store(p, Passed::offset(i), Operand::Reg(v), Width::W64);
        }

        let index = self.build_callback(&source, var, body, &passed)?;

        let cb = self.vreg();
        self.emit(Inst::FuncAddr {
            dst: cb,
            func: index,
        });
        let (func, first) = match source {
            LoopSource::Map(m) => (Intrinsic::ForEachMapElem, Operand::Reg(self.map_handle(m))),
            LoopSource::Range { count, .. } => (Intrinsic::Loop, Operand::Reg(count)),
        };
        self.emit(Inst::Call {
            dst: None,
            func,
            args: vec![first, Operand::Reg(cb), Operand::Reg(p), Operand::Imm(0)],
        });
        for (i, (_, home)) in passed.vars.iter().enumerate() {
            if let VarHome::Reg(r) = home {
                let v = self.load(p, Passed::offset(i), Width::W64);
                self.emit(Inst::Mov {
                    dst: *r,
                    src: Operand::Reg(v),
                });
            }
        }
        let flag = self.load(p, FLAG_OFF, Width::W64);
        let go_on = self.label();
        self.branch(Cond::Eq, flag, Operand::Imm(0), go_on);
        let value = self.load(p, RET_OFF, Width::W64);
        self.lower_return(value);
        self.place_label(go_on);
        let _ = span;
        Ok(())
    }

    /// `return EXPR`: the probe returns `value`. The probe's own function returns it at once;
    /// a loop body's callback leaves it in its struct and stops, as for `return;`, and its
    /// caller returns it in turn.
    pub(crate) fn lower_return(&mut self, value: VReg) {
        match self.ret_slot {
            Some(cbctx) => {
                self.store(cbctx, RET_OFF, Operand::Reg(value), Width::W64);
                let exit = self.exit_label;
                self.emit(Inst::Jump(exit));
            }
            None => self.emit(Inst::Return {
                value: Operand::Reg(value),
            }),
        }
    }

    /// Builds the callback function and returns its index.
    fn build_callback(
        &mut self,
        source: &LoopSource,
        var: &Ident,
        body: &Block,
        passed: &Passed,
    ) -> R<u32> {
        let nparams = match source {
            LoopSource::Map(_) => 4,
            LoopSource::Range { .. } => 2,
        };
        let (outer, params) = self.enter_callback(nparams);
        let result = self.callback_body(source, var, body, passed, &params);
        // The body may write maps the outer function read: only per-event builtins survive.
        self.leave_callback(outer, false, result)
    }

    /// Starts building a callback of `nparams` parameters in place of the function being
    /// built (set aside, with what belongs to it, in the returned [`Outer`]); returns the
    /// parameters' registers. Its registers and labels continue the outer function's, and
    /// its temporaries go to the scratch map (the frames share the 512-byte stack).
    pub(crate) fn enter_callback(&mut self, nparams: usize) -> (Outer, Vec<VReg>) {
        let name = format!("{}_c{}", self.f.name, self.callbacks.len());
        let mut f = Function::new(name);
        f.params = (0..nparams).map(|_| f.vreg()).collect();
        let params = f.params.clone();
        // The outer function's counters continue so that labels and registers stay unique.
        f.vregs = f.vregs.max(self.f.vregs);
        f.labels = self.f.labels;
        let outer = Outer {
            f: std::mem::replace(&mut self.f, f),
            vars: std::mem::take(&mut self.vars),
            loops: std::mem::take(&mut self.loops),
            // Remembered values are registers of the outer function.
            reuse: std::mem::take(&mut self.reuse),
            exit: self.exit_label,
            ret_slot: self.ret_slot,
            scratch: self.scratch_ptr.take(),
            stack: (self.stack_used, self.stack_budget),
            // Free slots are the outer frame's.
            slots: (
                std::mem::take(&mut self.stack_taken),
                std::mem::take(&mut self.stack_free),
            ),
            loop_frame: self.loop_frame.take(),
        };
        self.stack_used = 0;
        self.stack_budget = 0;
        (outer, params)
    }

    /// Ends the callback [`LowerCx::enter_callback`] started: the outer function is built
    /// again, and the callback, given the scratch map's lookup when it used scratch space
    /// (leaving through `result`'s label, which returns 0, when it fails), joins the
    /// program's callbacks; returns its index. `keep_reuse`: the callback wrote no map, and
    /// the values the outer function remembered stay valid (else only per-event builtins).
    pub(crate) fn leave_callback(
        &mut self,
        outer: Outer,
        keep_reuse: bool,
        result: R<crate::ir::Label>,
    ) -> R<u32> {
        let mut f = std::mem::replace(&mut self.f, outer.f);
        self.f.vregs = self.f.vregs.max(f.vregs);
        self.f.labels = self.f.labels.max(f.labels);
        self.vars = outer.vars;
        self.loops = outer.loops;
        self.reuse = outer.reuse;
        if !keep_reuse {
            self.reuse
                .retain(|r| matches!(r.0, super::reuse::Reuse::Builtin(_)));
        }
        self.exit_label = outer.exit;
        self.ret_slot = outer.ret_slot;
        let scratch = std::mem::replace(&mut self.scratch_ptr, outer.scratch);
        (self.stack_used, self.stack_budget) = outer.stack;
        (self.stack_taken, self.stack_free) = outer.slots;
        self.loop_frame = outer.loop_frame;
        let bail = result?;
        if let Some(base) = scratch {
            let map = self.maps.scratch_map(self.scratch_peak);
            super::prepend_scratch_lookup(&mut f, base, map, bail);
        }
        self.callbacks.push(f);
        Ok(self.callbacks.len() as u32 - 1)
    }

    /// Emits the callback's body into `self.f`; returns the label that returns 0 at once.
    fn callback_body(
        &mut self,
        source: &LoopSource,
        var: &Ident,
        body: &Block,
        passed: &Passed,
        params: &[VReg],
    ) -> R<crate::ir::Label> {
        let cbctx = *params.last().expect("callbacks have parameters");
        let ctx = self.load(cbctx, CTX_OFF, Width::W64);
        self.f.ctx = Some(ctx);
        for (i, (name, home)) in passed.vars.iter().enumerate() {
            let v = self.load(cbctx, Passed::offset(i), Width::W64);
            let home = match home {
                VarHome::Reg(_) => VarHome::Reg(v),
                VarHome::Mem { size, .. } => VarHome::Mem {
                    ptr: v,
                    size: *size,
                },
            };
            self.vars.insert(name.clone(), home);
        }
        let cont = self.label();
        let brk = self.label();
        let ret = self.label();
        let bail = self.label();
        self.loops = vec![LoopLabels { brk, cont }];
        self.exit_label = ret;
        self.ret_slot = Some(cbctx);

        let var_ty = self.types.vars.get(&var.name).cloned().unwrap_or(Type::I64);
        match source {
            LoopSource::Range { .. } => {
                let start = self.load(cbctx, EXTRA_OFF, Width::W64);
                let i = self.alu(AluOp::Add, start, Operand::Reg(params[0]));
                self.vars.insert(var.name.clone(), VarHome::Reg(i));
            }
            LoopSource::Map(map) => {
                let kv = self.map_element(*map, params[1], params[2], &var_ty)?;
                let size = var_ty.size();
                self.vars
                    .insert(var.name.clone(), VarHome::Mem { ptr: kv, size });
            }
        }
        self.lower_block(body)?;
        self.emit(Inst::Jump(cont));
        for (label, flag, rc) in [(cont, None, 0), (brk, None, 1), (ret, Some(1), 1)] {
            self.place_label(label);
            if let Some(flag) = flag {
                self.store(cbctx, FLAG_OFF, Operand::Imm(flag), Width::W64);
            }
            for (i, (name, home)) in passed.vars.iter().enumerate() {
                if let (VarHome::Reg(_), Some(VarHome::Reg(r))) = (home, self.vars.get(name)) {
                    let r = *r;
                    self.store(cbctx, Passed::offset(i), Operand::Reg(r), Width::W64);
                }
            }
            self.emit(Inst::Return {
                value: Operand::Imm(rc),
            });
        }
        self.place_label(bail);
        self.emit(Inst::Return {
            value: Operand::Imm(0),
        });
        Ok(bail)
    }

    /// Builds the `(key, value)` tuple of the current map element in owned memory. Values of
    /// per-CPU aggregations are combined over every CPU.
    fn map_element(&mut self, map: MapRef, key: VReg, value: VReg, tuple: &Type) -> R<VReg> {
        let spec = self.maps.spec(map).clone();
        let MapRole::User {
            key: Some(key_ty),
            value: value_ty,
            ..
        } = &spec.role
        else {
            return Err(self.unsupported(self.span, "`for` over this map"));
        };
        let Type::Tuple(items) = tuple else {
            return Err(self.unsupported(self.span, "this loop variable"));
        };
        let (offs, size) = tuple_layout(items);
        let buf = self.alloc_zeroed(size);
        let k = Val::Place {
            base: key,
            offset: 0,
            space: super::PlaceSpace::Own,
        };
        write_converted(self, k, key_ty, &items[0], buf, offs[0] as i32);
        let v = match value_ty {
            Type::Agg(kind) => Val::Int(super::maps::combine_cpus(self, map, key, kind)?),
            t if is_scalar(t) => Val::Int(self.read_place_int(
                Val::Place {
                    base: value,
                    offset: 0,
                    space: super::PlaceSpace::Own,
                },
                t,
            )),
            _ => Val::Place {
                base: value,
                offset: 0,
                space: super::PlaceSpace::Own,
            },
        };
        let from = match value_ty {
            Type::Agg(_) => Type::I64,
            t => t.clone(),
        };
        write_converted(self, v, &from, &items[1], buf, offs[1] as i32);
        Ok(buf)
    }
}
impl LowerCx<'_> {
    /// The number of elements of `map`: `bpf_for_each_map_elem` with a callback that only
    /// counts (it returns the number of elements it visited).
    pub fn lower_map_len(&mut self, map: MapRef) -> VReg {
        let name = format!("{}_c{}", self.f.name, self.callbacks.len());
        let mut f = Function::new(name);
        f.params = (0..4).map(|_| f.vreg()).collect();
        f.vregs = f.vregs.max(self.f.vregs);
        f.push(
            Inst::Return {
                value: Operand::Imm(0),
            },
            self.span,
        );
        self.f.vregs = self.f.vregs.max(f.vregs);
        self.callbacks.push(f);
        let index = self.callbacks.len() as u32 - 1;
        let cb = self.vreg();
        self.emit(Inst::FuncAddr {
            dst: cb,
            func: index,
        });
        let h = self.map_handle(map);
        self.call(
            Intrinsic::ForEachMapElem,
            vec![
                Operand::Reg(h),
                Operand::Reg(cb),
                Operand::Imm(0),
                Operand::Imm(0),
            ],
        )
    }
}
