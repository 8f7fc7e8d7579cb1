//! One IR function → one cranelift function.
//!
//! A first pass checks what cranelift would refuse or what would make it panic (undefined or
//! duplicate labels, callback indices, call arities, slots) and what the host lacks, and
//! declares the function's imports; the second pass builds the code and cannot fail.
//!
//! VRegs are frontend `Variable`s (SSA construction reads an undefined variable as 0). Each
//! `Label` starts a block; the fall-through of a `Branch` is a fresh block; code after a `Jump`
//! or `Return` and before the next label goes to a fresh block without predecessors. Blocks are
//! sealed as soon as their last predecessor is emitted, which keeps SSA construction cheap.

use super::{first_span, internal, short_name};
use crate::ir::{AluOp, Cond, Function, Inst, Intrinsic, Operand, VReg, Width};
use cranelift_codegen::Context;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::I64;
use cranelift_codegen::ir::{
    AbiParam, Block, FuncRef, InstBuilder, MemFlagsData, Signature, StackSlot, StackSlotData,
    StackSlotKind, UserFuncName, Value,
};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use cranelift_jit::JITModule;
use cranelift_module::{FuncId, Linkage, Module};
use sonde_lang::diag::Diagnostic;
use sonde_lang::span::Span;
use std::collections::HashMap;

/// `fn(i64 × params) -> i64` in the host's C calling convention.
pub(super) fn signature(module: &JITModule, params: usize) -> Signature {
    let mut sig = module.make_signature();
    sig.params
        .extend(std::iter::repeat_n(AbiParam::new(I64), params));
    sig.returns.push(AbiParam::new(I64));
    sig
}

/// Memory accesses: any alignment, never trapping (the IR only touches valid memory).
fn mem() -> MemFlagsData {
    MemFlagsData::new().with_notrap()
}

/// State shared by the translation of all functions of a module.
pub(super) struct Translator<'h> {
    ctx: Context,
    fctx: FunctionBuilderContext,
    host: &'h HashMap<&'h str, *const u8>,
    /// Imports declared in the module so far.
    imports: HashMap<Intrinsic, FuncId>,
}

/// What the checking pass learns about a function.
struct Plan {
    /// Per label: index of its `Label` instruction.
    def: Vec<Option<usize>>,
    /// Per label: index of the last `Jump`/`Branch` to it.
    last_ref: Vec<Option<usize>>,
    /// The function's references to imported intrinsics.
    imports: Vec<(Intrinsic, FuncRef)>,
    /// The function's references to the program's callbacks.
    callbacks: Vec<Option<FuncRef>>,
}

fn grow<T: Clone>(v: &mut Vec<Option<T>>, i: usize) -> &mut Option<T> {
    if v.len() <= i {
        v.resize(i + 1, None);
    }
    &mut v[i]
}

impl<'h> Translator<'h> {
    /// A translator for `module`, whose imports resolve through `host`.
    pub(super) fn new(module: &JITModule, host: &'h HashMap<&'h str, *const u8>) -> Self {
        Translator {
            ctx: module.make_context(),
            fctx: FunctionBuilderContext::new(),
            host,
            imports: HashMap::new(),
        }
    }

    /// Translates `f` and defines it in `module` as `id`; `callbacks` are the ids of the
    /// functions its `FuncAddr`s refer to.
    pub(super) fn define(
        &mut self,
        module: &mut JITModule,
        f: &Function,
        id: FuncId,
        callbacks: &[FuncId],
    ) -> Result<(), Diagnostic> {
        module.clear_context(&mut self.ctx);
        self.ctx.func.signature = signature(module, f.params.len());
        self.ctx.func.name = UserFuncName::user(0, id.as_u32());
        let plan = self.plan(module, f, callbacks)?;
        build(&mut self.ctx, &mut self.fctx, module, f, &plan);
        let r = module
            .define_function(id, &mut self.ctx)
            .map_err(|e| internal(first_span(f), e));
        module.clear_context(&mut self.ctx);
        r
    }

    /// The checking pass: everything that could make the build fail or panic, and the
    /// function's references to other functions.
    fn plan(
        &mut self,
        module: &mut JITModule,
        f: &Function,
        callbacks: &[FuncId],
    ) -> Result<Plan, Diagnostic> {
        let mut plan = Plan {
            def: Vec::new(),
            last_ref: Vec::new(),
            imports: Vec::new(),
            callbacks: vec![None; callbacks.len()],
        };
        let mut refs: Vec<(usize, Span)> = Vec::new();
        for (k, (inst, span)) in f.insts.iter().enumerate() {
            match inst {
                Inst::Label(l) => {
                    let d = grow(&mut plan.def, l.0 as usize);
                    if d.is_some() {
                        return Err(internal(*span, format!("label L{} defined twice", l.0)));
                    }
                    *d = Some(k);
                }
                Inst::Jump(l) | Inst::Branch { target: l, .. } => {
                    *grow(&mut plan.last_ref, l.0 as usize) = Some(k);
                    refs.push((l.0 as usize, *span));
                }
                Inst::SlotAddr { slot, .. } if slot.0 as usize >= f.slots.len() => {
                    return Err(internal(*span, format!("no stack slot {}", slot.0)));
                }
                Inst::FuncAddr { func, .. } | Inst::CallFunc { func, .. } => {
                    let i = *func as usize;
                    let Some(&cb) = callbacks.get(i) else {
                        return Err(internal(*span, format!("no callback {i}")));
                    };
                    if plan.callbacks[i].is_none() {
                        plan.callbacks[i] =
                            Some(module.declare_func_in_func(cb, &mut self.ctx.func));
                    }
                }
                Inst::MapValue { .. } => {
                    // In userspace the value is found by a lookup of key 0.
                    let func = Intrinsic::MapLookup;
                    if !plan.imports.iter().any(|(i, _)| *i == func) {
                        let id = self.import(module, func, *span)?;
                        let r = module.declare_func_in_func(id, &mut self.ctx.func);
                        plan.imports.push((func, r));
                    }
                }
                Inst::Call { func, args, .. } => {
                    if args.len() != func.arity() {
                        return Err(internal(
                            *span,
                            format!(
                                "`{}` called with {} arguments instead of {}",
                                func.host_name(),
                                args.len(),
                                func.arity()
                            ),
                        ));
                    }
                    if !plan.imports.iter().any(|(i, _)| i == func) {
                        let id = self.import(module, *func, *span)?;
                        let r = module.declare_func_in_func(id, &mut self.ctx.func);
                        plan.imports.push((*func, r));
                    }
                }
                _ => {}
            }
        }
        for (l, span) in refs {
            if plan.def.get(l).copied().flatten().is_none() {
                return Err(internal(span, format!("jump to undefined label L{l}")));
            }
        }
        Ok(plan)
    }

    /// The module's import of `func`, declared on first use; an error when the host lacks it.
    fn import(
        &mut self,
        module: &mut JITModule,
        func: Intrinsic,
        span: Span,
    ) -> Result<FuncId, Diagnostic> {
        if let Some(id) = self.imports.get(&func) {
            return Ok(*id);
        }
        let name = func.host_name();
        if !self.host.contains_key(name) {
            let short = short_name(func);
            return Err(Diagnostic::error(
                "sonde::jit::unsupported",
                span,
                format!("`{short}` is not available in userspace probes"),
            )
            .with_label(format!("needs `{short}`"))
            .with_help("use this only in kernel probes, or compute the value another way"));
        }
        let sig = signature(module, func.arity());
        let id = module
            .declare_function(name, Linkage::Import, &sig)
            .map_err(|e| internal(span, e))?;
        self.imports.insert(func, id);
        Ok(id)
    }
}

/// Builds `f` into `ctx.func` (checked by `plan`: cannot fail).
fn build(
    ctx: &mut Context,
    fctx: &mut FunctionBuilderContext,
    module: &JITModule,
    f: &Function,
    plan: &Plan,
) {
    let mut b = FunctionBuilder::new(&mut ctx.func, fctx);
    let zero_key = b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 8, 3));
    let mut fx = Fx {
        b,
        vars: Vec::with_capacity(f.vregs as usize),
        blocks: Vec::new(),
        slots: Vec::with_capacity(f.slots.len()),
        zero_key,
        open: true,
    };
    for _ in 0..f.vregs {
        let v = fx.b.declare_var(I64);
        fx.vars.push(v);
    }
    for s in &f.slots {
        let slot = fx.b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            s.size,
            3,
        ));
        fx.slots.push(slot);
    }
    let entry = fx.b.create_block();
    fx.b.append_block_params_for_function_params(entry);
    fx.b.switch_to_block(entry);
    fx.b.seal_block(entry);
    for (i, &p) in f.params.iter().enumerate() {
        let v = fx.b.block_params(entry)[i];
        let var = fx.var(p);
        fx.b.def_var(var, v);
    }
    for (k, (inst, _)) in f.insts.iter().enumerate() {
        fx.inst(k, inst, plan);
    }
    if fx.open {
        // Falling off the end (the IR verifier forbids it): return 0.
        let zero = fx.b.ins().iconst(I64, 0);
        fx.b.ins().return_(&[zero]);
    }
    fx.b.seal_all_blocks();
    fx.b.finalize(module.target_config());
}

/// The translation of one function.
struct Fx<'a> {
    b: FunctionBuilder<'a>,
    vars: Vec<Variable>,
    /// Per label: its block, created on first reference.
    blocks: Vec<Option<Block>>,
    slots: Vec<StackSlot>,
    /// A slot holding the key 0 of [`Inst::MapValue`]'s lookups.
    zero_key: StackSlot,
    /// The current block can still get instructions (it has no terminator yet).
    open: bool,
}

fn intcc(c: Cond) -> IntCC {
    match c {
        Cond::Eq => IntCC::Equal,
        Cond::Ne => IntCC::NotEqual,
        Cond::UGt => IntCC::UnsignedGreaterThan,
        Cond::UGe => IntCC::UnsignedGreaterThanOrEqual,
        Cond::ULt => IntCC::UnsignedLessThan,
        Cond::ULe => IntCC::UnsignedLessThanOrEqual,
        Cond::SGt => IntCC::SignedGreaterThan,
        Cond::SGe => IntCC::SignedGreaterThanOrEqual,
        Cond::SLt => IntCC::SignedLessThan,
        Cond::SLe => IntCC::SignedLessThanOrEqual,
        // Handled before: `(lhs & rhs) != 0`.
        Cond::Set => IntCC::NotEqual,
    }
}

impl Fx<'_> {
    fn var(&mut self, r: VReg) -> Variable {
        while self.vars.len() <= r.0 as usize {
            let v = self.b.declare_var(I64);
            self.vars.push(v);
        }
        self.vars[r.0 as usize]
    }

    fn get(&mut self, r: VReg) -> Value {
        let v = self.var(r);
        self.b.use_var(v)
    }

    fn set(&mut self, r: VReg, val: Value) {
        let v = self.var(r);
        self.b.def_var(v, val);
    }

    fn operand(&mut self, o: Operand) -> Value {
        match o {
            Operand::Reg(r) => self.get(r),
            Operand::Imm(v) => self.b.ins().iconst(I64, v),
        }
    }

    fn block(&mut self, l: crate::ir::Label) -> Block {
        if let Some(b) = self.blocks.get(l.0 as usize).copied().flatten() {
            return b;
        }
        let b = self.b.create_block();
        *grow(&mut self.blocks, l.0 as usize) = Some(b);
        b
    }

    /// Seals the block of `l` once instruction `k`, its last reference, has been emitted (if
    /// the label itself is already placed; otherwise placing it seals it).
    fn seal_after_ref(&mut self, l: crate::ir::Label, k: usize, plan: &Plan) {
        let i = l.0 as usize;
        let defined_before = plan.def.get(i).copied().flatten().is_some_and(|d| d < k);
        if defined_before && plan.last_ref.get(i).copied().flatten() == Some(k) {
            let b = self.block(l);
            self.b.seal_block(b);
        }
    }

    fn inst(&mut self, k: usize, inst: &Inst, plan: &Plan) {
        if let Inst::Label(l) = inst {
            let block = self.block(*l);
            if self.open {
                self.b.ins().jump(block, &[]);
            }
            self.b.switch_to_block(block);
            self.open = true;
            if plan
                .last_ref
                .get(l.0 as usize)
                .copied()
                .flatten()
                .is_none_or(|r| r < k)
            {
                self.b.seal_block(block);
            }
            return;
        }
        if !self.open {
            // Unreachable code: give it a block of its own, without predecessors.
            let block = self.b.create_block();
            self.b.switch_to_block(block);
            self.b.seal_block(block);
            self.open = true;
        }
        match inst {
            Inst::Label(_) => {}
            Inst::Mov { dst, src } => {
                let v = self.operand(*src);
                self.set(*dst, v);
            }
            Inst::Alu { op, dst, lhs, rhs } => {
                let a = self.get(*lhs);
                let v = match rhs {
                    Operand::Imm(c) => self.alu_imm(*op, a, *c),
                    Operand::Reg(r) => {
                        let r = self.get(*r);
                        self.alu_reg(*op, a, r)
                    }
                };
                self.set(*dst, v);
            }
            Inst::Neg { dst, src } => {
                let a = self.get(*src);
                let v = self.b.ins().ineg(a);
                self.set(*dst, v);
            }
            Inst::Load {
                dst,
                base,
                offset,
                width,
            } => {
                let p = self.get(*base);
                let ins = self.b.ins();
                let v = match width {
                    Width::W8 => ins.uload8(I64, mem(), p, *offset),
                    Width::W16 => ins.uload16(I64, mem(), p, *offset),
                    Width::W32 => ins.uload32(mem(), p, *offset),
                    Width::W64 => ins.load(I64, mem(), p, *offset),
                };
                self.set(*dst, v);
            }
            Inst::Store {
                base,
                offset,
                src,
                width,
            } => {
                let p = self.get(*base);
                let v = self.operand(*src);
                let ins = self.b.ins();
                match width {
                    Width::W8 => ins.istore8(mem(), v, p, *offset),
                    Width::W16 => ins.istore16(mem(), v, p, *offset),
                    Width::W32 => ins.istore32(mem(), v, p, *offset),
                    Width::W64 => ins.store(mem(), v, p, *offset),
                };
            }
            Inst::AtomicAdd { base, offset, src } => {
                // Probes run on one thread: a plain read-modify-write is atomic enough.
                let p = self.get(*base);
                let add = self.get(*src);
                let old = self.b.ins().load(I64, mem(), p, *offset);
                let new = self.b.ins().iadd(old, add);
                self.b.ins().store(mem(), new, p, *offset);
            }
            Inst::SlotAddr { dst, slot } => {
                let s = self.slots[slot.0 as usize];
                let v = self.b.ins().stack_addr(I64, s, 0);
                self.set(*dst, v);
            }
            Inst::MapHandle { dst, map } => {
                let v = self.b.ins().iconst(I64, i64::from(map.0));
                self.set(*dst, v);
            }
            Inst::MapValue { dst, map } => {
                let (_, r) = plan
                    .imports
                    .iter()
                    .find(|(i, _)| *i == Intrinsic::MapLookup)
                    .copied()
                    .expect("planned");
                let h = self.b.ins().iconst(I64, i64::from(map.0));
                let zero = self.b.ins().iconst(I64, 0);
                self.b.ins().stack_store(I64, zero, self.zero_key, 0);
                let key = self.b.ins().stack_addr(I64, self.zero_key, 0);
                let call = self.b.ins().call(r, &[h, key]);
                let v = self.b.inst_results(call)[0];
                self.set(*dst, v);
            }
            Inst::FuncAddr { dst, func } => {
                let r = plan.callbacks[*func as usize].expect("planned");
                let v = self.b.ins().func_addr(I64, r);
                self.set(*dst, v);
            }
            Inst::Call { dst, func, args } => {
                let r = plan
                    .imports
                    .iter()
                    .find(|(i, _)| i == func)
                    .map(|(_, r)| *r)
                    .expect("planned");
                let args: Vec<Value> = args.iter().map(|a| self.operand(*a)).collect();
                let call = self.b.ins().call(r, &args);
                if let Some(d) = dst {
                    let v = self.b.inst_results(call)[0];
                    self.set(*d, v);
                }
            }
            Inst::CallFunc { dst, func, args } => {
                let r = plan.callbacks[*func as usize].expect("planned");
                let args: Vec<Value> = args.iter().map(|a| self.operand(*a)).collect();
                let call = self.b.ins().call(r, &args);
                if let Some(d) = dst {
                    let v = self.b.inst_results(call)[0];
                    self.set(*d, v);
                }
            }
            Inst::Jump(l) => {
                let block = self.block(*l);
                self.b.ins().jump(block, &[]);
                self.open = false;
                self.seal_after_ref(*l, k, plan);
            }
            Inst::Branch {
                cond,
                lhs,
                rhs,
                target,
            } => {
                let c = self.cond(*cond, *lhs, *rhs);
                let then = self.block(*target);
                let next = self.b.create_block();
                self.b.ins().brif(c, then, &[], next, &[]);
                self.seal_after_ref(*target, k, plan);
                self.b.switch_to_block(next);
                self.b.seal_block(next);
            }
            Inst::Return { value } => {
                let v = self.operand(*value);
                self.b.ins().return_(&[v]);
                self.open = false;
            }
        }
    }

    /// The `i8` truth value of `lhs cond rhs`.
    fn cond(&mut self, cond: Cond, lhs: VReg, rhs: Operand) -> Value {
        let a = self.get(lhs);
        match (cond, rhs) {
            (Cond::Set, Operand::Imm(c)) => {
                let m = self.b.ins().band_imm_s(a, c);
                self.b.ins().icmp_imm_s(IntCC::NotEqual, m, 0)
            }
            (Cond::Set, Operand::Reg(r)) => {
                let r = self.get(r);
                let m = self.b.ins().band(a, r);
                self.b.ins().icmp_imm_s(IntCC::NotEqual, m, 0)
            }
            (c, Operand::Imm(v)) => self.b.ins().icmp_imm_s(intcc(c), a, v),
            (c, Operand::Reg(r)) => {
                let r = self.get(r);
                self.b.ins().icmp(intcc(c), a, r)
            }
        }
    }

    /// `a op c` for a constant `c`: the special divisors are decided here, so the division
    /// instructions emitted never see 0 (nor -1 for signed ones) and need no run-time checks.
    fn alu_imm(&mut self, op: AluOp, a: Value, c: i64) -> Value {
        let ins = self.b.ins();
        match op {
            AluOp::Add => ins.iadd_imm_s(a, c),
            AluOp::Sub => ins.iadd_imm_s(a, c.wrapping_neg()),
            AluOp::Mul => ins.imul_imm_s(a, c),
            AluOp::And => ins.band_imm_s(a, c),
            AluOp::Or => ins.bor_imm_s(a, c),
            AluOp::Xor => ins.bxor_imm_s(a, c),
            AluOp::Shl => ins.ishl_imm_s(a, c & 63),
            AluOp::LShr => ins.ushr_imm_s(a, c & 63),
            AluOp::AShr => ins.sshr_imm_s(a, c & 63),
            AluOp::UDiv | AluOp::SDiv if c == 0 => ins.iconst(I64, 0),
            AluOp::UMod | AluOp::SMod if c == 0 => a,
            AluOp::SDiv if c == -1 => ins.ineg(a),
            AluOp::SMod if c == -1 => ins.iconst(I64, 0),
            AluOp::UDiv | AluOp::UMod | AluOp::SDiv | AluOp::SMod => {
                let d = ins.iconst(I64, c);
                let ins = self.b.ins();
                match op {
                    AluOp::UDiv => ins.udiv(a, d),
                    AluOp::UMod => ins.urem(a, d),
                    AluOp::SDiv => ins.sdiv(a, d),
                    _ => ins.srem(a, d),
                }
            }
        }
    }

    /// `a op r` for a run-time `r`. Divisions use a divisor of 1 where BPF's result is not the
    /// machine's (`r == 0`, and `r == -1` for signed ones) and pick BPF's result by `select`.
    fn alu_reg(&mut self, op: AluOp, a: Value, r: Value) -> Value {
        let ins = self.b.ins();
        match op {
            AluOp::Add => ins.iadd(a, r),
            AluOp::Sub => ins.isub(a, r),
            AluOp::Mul => ins.imul(a, r),
            AluOp::And => ins.band(a, r),
            AluOp::Or => ins.bor(a, r),
            AluOp::Xor => ins.bxor(a, r),
            // cranelift takes shift amounts modulo the type's width, as BPF does.
            AluOp::Shl => ins.ishl(a, r),
            AluOp::LShr => ins.ushr(a, r),
            AluOp::AShr => ins.sshr(a, r),
            AluOp::UDiv | AluOp::UMod => {
                let is0 = ins.icmp_imm_s(IntCC::Equal, r, 0);
                let one = self.b.ins().iconst(I64, 1);
                let d = self.b.ins().select(is0, one, r);
                if op == AluOp::UDiv {
                    let q = self.b.ins().udiv(a, d);
                    let zero = self.b.ins().iconst(I64, 0);
                    self.b.ins().select(is0, zero, q)
                } else {
                    let m = self.b.ins().urem(a, d);
                    self.b.ins().select(is0, a, m)
                }
            }
            AluOp::SDiv => {
                let is0 = ins.icmp_imm_s(IntCC::Equal, r, 0);
                let is_m1 = self.b.ins().icmp_imm_s(IntCC::Equal, r, -1);
                let bad = self.b.ins().bor(is0, is_m1);
                let one = self.b.ins().iconst(I64, 1);
                let d = self.b.ins().select(bad, one, r);
                // `a / 1` when bad: negated for -1 (wrapping: MIN / -1 == MIN), 0 for 0.
                let q = self.b.ins().sdiv(a, d);
                let neg = self.b.ins().ineg(q);
                let q = self.b.ins().select(is_m1, neg, q);
                let zero = self.b.ins().iconst(I64, 0);
                self.b.ins().select(is0, zero, q)
            }
            AluOp::SMod => {
                // r + 1 <= 1 (unsigned) exactly when r is 0 or -1.
                let r1 = ins.iadd_imm_s(r, 1);
                let bad = self
                    .b
                    .ins()
                    .icmp_imm_s(IntCC::UnsignedLessThanOrEqual, r1, 1);
                let one = self.b.ins().iconst(I64, 1);
                let d = self.b.ins().select(bad, one, r);
                // `a % 1 == 0`, BPF's result for -1; for 0 it is `a`.
                let m = self.b.ins().srem(a, d);
                let is0 = self.b.ins().icmp_imm_s(IntCC::Equal, r, 0);
                self.b.ins().select(is0, a, m)
            }
        }
    }
}
