//! Functions a program calls directly (BPF-to-BPF calls) where several places would repeat
//! the same cold code. Today one: the insert of an aggregation's first value for a key.
//! Each place emits a pending call; once the probe is lowered, a single place gets the code
//! inline, and two or more call one function appended to the program's callbacks.

use super::cx::LowerCx;
use crate::ir::{Cond, Function, Inst, Intrinsic, MapRef, Operand, VReg};
use crate::program::Counter;

/// The callee of an insert call until [`LowerCx::finish_inserts`] decides.
const PENDING_INSERT: u32 = u32::MAX;

impl LowerCx<'_> {
    /// Inserts `map[key] = *value` (`BPF_ANY`), counting a map-full error when the kernel
    /// refuses it: an aggregation's first value for a key (code that runs once per key).
    pub(crate) fn insert(&mut self, map: MapRef, key: VReg, value: VReg) {
        self.forget_map(map);
        let h = self.map_handle(map);
        self.emit(Inst::CallFunc {
            dst: None,
            func: PENDING_INSERT,
            args: vec![Operand::Reg(h), Operand::Reg(key), Operand::Reg(value)],
        });
    }

    /// The insert's code on `args` (map, key pointer, value pointer).
    fn insert_code(&mut self, args: Vec<Operand>) {
        let mut args = args;
        args.push(Operand::Imm(0));
        let rc = self.call(Intrinsic::MapUpdate, args);
        let ok = self.label();
        self.branch(Cond::Eq, rc, Operand::Imm(0), ok);
        self.count_error(Counter::MapFull);
        self.place_label(ok);
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

    /// Resolves the pending insert calls: one is replaced by the insert's code; several call
    /// one function `(map, key*, value*)` (3 argument registers and a call at each place
    /// instead of 4 arguments, the result test and the counter's increment).
    pub(crate) fn finish_inserts(&mut self) {
        let is_pending =
            |i: &Inst| matches!(i, Inst::CallFunc { func, .. } if *func == PENDING_INSERT);
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
                    unreachable!("a pending insert is a call");
                };
                let saved = std::mem::replace(&mut self.span, *span);
                let code = self.detached(String::new(), |cx| cx.insert_code(args));
                self.span = saved;
                let f = self.function_mut(*which);
                f.insts.splice(*at..=*at, code.insts);
                f.vregs = f.vregs.max(code.vregs);
                f.labels = f.labels.max(code.labels);
            }
            [(_, _, span), ..] => {
                let saved = std::mem::replace(&mut self.span, *span);
                let name = format!("{}_insert", self.f.name);
                let insert = self.detached(name, |cx| {
                    let params: Vec<VReg> = (0..3).map(|_| cx.f.vreg()).collect();
                    cx.f.params = params.clone();
                    cx.insert_code(params.into_iter().map(Operand::Reg).collect());
                    cx.emit(Inst::Return {
                        value: Operand::Imm(0),
                    });
                });
                self.span = saved;
                self.callbacks.push(insert);
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
