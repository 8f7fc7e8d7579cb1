//! IR → eBPF instructions, after register allocation. Values live in r6–r9 or in 8-byte
//! spill slots; r0–r5 are temporaries and call arguments.

use super::jumps::{self, Site};
use super::regalloc::{Allocation, Loc, Remat, allocate};
use crate::bpf::insn::{AluOp as BAlu, Helper, Insn, JmpOp, Reg, Size};
use crate::ir::{AluOp, Cond, Function, Inst, Intrinsic, Label, Operand, VReg, Width};
use sonde_lang::diag::Diagnostic;
use sonde_lang::span::Span;
use std::collections::HashMap;

/// The BPF stack size limit.
pub const MAX_STACK: u32 = 512;

/// An emitted program: instructions, the source span of each, and map relocations.
#[derive(Clone, Debug, Default)]
pub struct Emitted {
    /// Instructions (an `ld_imm64` takes two).
    pub insns: Vec<Insn>,
    /// Source span of each instruction.
    pub spans: Vec<Span>,
    /// `(instruction index, map index)` of every map reference.
    pub map_relocs: Vec<(usize, u32)>,
    /// `(instruction index, callback index)` of every callback address (an `ld_imm64`) and
    /// every direct call of a callback (a `call`).
    pub func_relocs: Vec<(usize, u32)>,
    /// Stack bytes used.
    pub stack: u32,
}

struct Emitter<'a> {
    out: Emitted,
    alloc: &'a Allocation,
    slot_off: Vec<i16>,
    spill_base: u32,
    labels: HashMap<Label, usize>,
    fixups: Vec<(usize, Label)>,
    span: Span,
}

const T0: Reg = Reg::R0;
const T1: Reg = Reg::R1;
const T2: Reg = Reg::R2;

fn fits_i32(v: i64) -> bool {
    i32::try_from(v).is_ok()
}

fn size(w: Width) -> Size {
    match w {
        Width::W8 => Size::B,
        Width::W16 => Size::H,
        Width::W32 => Size::W,
        Width::W64 => Size::DW,
    }
}

/// The BPF helper behind an intrinsic; `None` for intrinsics only the userspace engine has.
fn helper(i: Intrinsic) -> Option<Helper> {
    Some(match i {
        Intrinsic::MapLookup => Helper::MapLookupElem,
        Intrinsic::MapUpdate => Helper::MapUpdateElem,
        Intrinsic::MapDelete => Helper::MapDeleteElem,
        Intrinsic::ProbeReadKernel => Helper::ProbeReadKernel,
        Intrinsic::ProbeReadUser => Helper::ProbeReadUser,
        Intrinsic::ProbeReadKernelStr => Helper::ProbeReadKernelStr,
        Intrinsic::ProbeReadUserStr => Helper::ProbeReadUserStr,
        Intrinsic::ProbeRead => Helper::ProbeRead,
        Intrinsic::ProbeReadStr => Helper::ProbeReadStr,
        Intrinsic::KtimeGetNs => Helper::KtimeGetNs,
        Intrinsic::KtimeGetBootNs => Helper::KtimeGetBootNs,
        Intrinsic::GetPidTgid => Helper::GetCurrentPidTgid,
        Intrinsic::GetNsPidTgid => Helper::GetNsCurrentPidTgid,
        Intrinsic::GetUidGid => Helper::GetCurrentUidGid,
        Intrinsic::GetCurrentComm => Helper::GetCurrentComm,
        Intrinsic::GetCpu => Helper::GetSmpProcessorId,
        Intrinsic::Random => Helper::GetPrandomU32,
        Intrinsic::GetCurrentTask => Helper::GetCurrentTask,
        Intrinsic::GetCgroupId => Helper::GetCurrentCgroupId,
        Intrinsic::GetAncestorCgroupId => Helper::GetCurrentAncestorCgroupId,
        Intrinsic::RingbufOutput => Helper::RingbufOutput,
        Intrinsic::GetStackId => Helper::GetStackid,
        Intrinsic::Jiffies => Helper::Jiffies64,
        Intrinsic::ForEachMapElem => Helper::ForEachMapElem,
        Intrinsic::Loop => Helper::Loop,
        Intrinsic::MapLookupPercpu => Helper::MapLookupPercpuElem,
        Intrinsic::NumaNodeId => Helper::GetNumaNodeId,
        Intrinsic::KtimeGetTaiNs => Helper::KtimeGetTaiNs,
        Intrinsic::SendSignal => Helper::SendSignal,
        Intrinsic::SendSignalThread => Helper::SendSignalThread,
        Intrinsic::OverrideReturn => Helper::OverrideReturn,
        Intrinsic::ProbeWriteUser => Helper::ProbeWriteUser,
        Intrinsic::GetFuncIp => Helper::GetFuncIp,
        Intrinsic::SeqPrintf => Helper::SeqPrintf,
        Intrinsic::DPath => Helper::DPath,
        Intrinsic::TracePrintk => Helper::TracePrintk,
        Intrinsic::GetStack => Helper::GetStack,
        Intrinsic::MemCopy => Helper::ProbeReadKernel,
        Intrinsic::InputLine
        | Intrinsic::InputField
        | Intrinsic::InputFieldCount
        | Intrinsic::InputRecordNumber
        | Intrinsic::ParseNum
        | Intrinsic::InputFieldNum
        | Intrinsic::Kfunc(_)
        | Intrinsic::ThisCpuPtr(_)
        | Intrinsic::PerCpuPtr(_) => return None,
    })
}

fn alu(op: AluOp) -> BAlu {
    match op {
        AluOp::Add => BAlu::Add,
        AluOp::Sub => BAlu::Sub,
        AluOp::Mul => BAlu::Mul,
        AluOp::UDiv => BAlu::Div,
        AluOp::SDiv => BAlu::SDiv,
        AluOp::UMod => BAlu::Mod,
        AluOp::SMod => BAlu::SMod,
        AluOp::And => BAlu::And,
        AluOp::Or => BAlu::Or,
        AluOp::Xor => BAlu::Xor,
        AluOp::Shl => BAlu::Lsh,
        AluOp::LShr => BAlu::Rsh,
        AluOp::AShr => BAlu::Arsh,
    }
}

fn jmp(c: Cond) -> JmpOp {
    match c {
        Cond::Eq => JmpOp::Eq,
        Cond::Ne => JmpOp::Ne,
        Cond::UGt => JmpOp::Gt,
        Cond::UGe => JmpOp::Ge,
        Cond::ULt => JmpOp::Lt,
        Cond::ULe => JmpOp::Le,
        Cond::SGt => JmpOp::Sgt,
        Cond::SGe => JmpOp::Sge,
        Cond::SLt => JmpOp::Slt,
        Cond::SLe => JmpOp::Sle,
        Cond::Set => JmpOp::Set,
    }
}

impl Emitter<'_> {
    fn push(&mut self, i: Insn) {
        self.out.insns.push(i);
        self.out.spans.push(self.span);
    }

    fn push2(&mut self, i: [Insn; 2]) {
        self.push(i[0]);
        self.push(i[1]);
    }

    fn loc(&self, r: VReg) -> Loc {
        self.alloc.locs.get(&r).copied().unwrap_or(Loc::Spill(0))
    }

    fn spill_off(&self, s: u32) -> i16 {
        -((self.spill_base + (s + 1) * 8) as i16)
    }

    /// Puts the value of `r` in a physical register, using `tmp` when it is spilled.
    /// Computes a rematerialized value into `dst`.
    fn materialize(&mut self, m: Remat, dst: Reg) {
        match m {
            Remat::Imm(v) => self.load_imm(dst, v),
            Remat::Map(map) => {
                self.out.map_relocs.push((self.out.insns.len(), map.0));
                self.push2(Insn::ld_map_reloc(dst));
            }
            Remat::Slot(slot) => {
                self.push(Insn::mov64_reg(dst, Reg::R10));
                self.push(Insn::add64_imm(
                    dst,
                    i32::from(self.slot_off[slot.0 as usize]),
                ));
            }
        }
    }

    /// `r10`'s offset of `base + offset` when `base` is a stack slot's address.
    fn slot_address(&self, base: VReg, offset: i64) -> Option<i32> {
        let Loc::Remat(Remat::Slot(slot)) = self.loc(base) else {
            return None;
        };
        i32::try_from(i64::from(self.slot_off[slot.0 as usize]) + offset).ok()
    }

    /// The register and offset addressing `base + offset`: a stack slot's address folds into
    /// an `r10`-relative offset instead of being computed into a register.
    fn address(&mut self, base: VReg, offset: i32, tmp: Reg) -> Result<(Reg, i16), String> {
        let (reg, off) = match self.slot_address(base, offset.into()) {
            Some(off) => (Reg::R10, off),
            None => (self.read(base, tmp), offset),
        };
        Ok((
            reg,
            i16::try_from(off).map_err(|_| "memory offset out of range")?,
        ))
    }

    fn read(&mut self, r: VReg, tmp: Reg) -> Reg {
        match self.loc(r) {
            Loc::Remat(m) => {
                self.materialize(m, tmp);
                tmp
            }
            Loc::Reg(p) => Reg(p),
            Loc::Spill(s) => {
                let off = self.spill_off(s);
                self.push(Insn::ldx(Size::DW, tmp, Reg::R10, off));
                tmp
            }
        }
    }

    /// Loads an immediate into `dst`.
    fn load_imm(&mut self, dst: Reg, v: i64) {
        if fits_i32(v) {
            self.push(Insn::mov64_imm(dst, v as i32));
        } else {
            self.push2(Insn::ld_imm64(dst, v as u64));
        }
    }

    /// Puts an operand into `dst` exactly.
    /// Emits `call` with `args` in r1, r2, ... and its result (r0) written to `dst`;
    /// returns the index of the call instruction.
    fn call(&mut self, args: &[Operand], call: Insn, dst: Option<VReg>) -> usize {
        for (i, a) in args.iter().enumerate() {
            self.read_into(*a, Reg(i as u8 + 1));
        }
        let at = self.out.insns.len();
        self.push(call);
        if let Some(d) = dst {
            self.write_back(d, T0);
        }
        at
    }

    fn read_into(&mut self, o: Operand, dst: Reg) {
        match o {
            Operand::Imm(v) => self.load_imm(dst, v),
            Operand::Reg(r) => match self.loc(r) {
                Loc::Remat(m) => self.materialize(m, dst),
                Loc::Reg(p) if p == dst.0 => {}
                Loc::Reg(p) => self.push(Insn::mov64_reg(dst, Reg(p))),
                Loc::Spill(s) => {
                    let off = self.spill_off(s);
                    self.push(Insn::ldx(Size::DW, dst, Reg::R10, off));
                }
            },
        }
    }

    /// The register to compute `dst` in (its own register, or `tmp` when spilled).
    fn target(&self, dst: VReg, tmp: Reg) -> Reg {
        match self.loc(dst) {
            Loc::Reg(p) => Reg(p),
            Loc::Spill(_) | Loc::Remat(_) => tmp,
        }
    }

    /// Writes `val` (held in `reg`) back to `dst` if it is spilled.
    fn write_back(&mut self, dst: VReg, reg: Reg) {
        match self.loc(dst) {
            Loc::Remat(_) => {}
            Loc::Reg(p) if p == reg.0 => {}
            Loc::Reg(p) => self.push(Insn::mov64_reg(Reg(p), reg)),
            Loc::Spill(s) => {
                let off = self.spill_off(s);
                self.push(Insn::stx(Size::DW, Reg::R10, off, reg));
            }
        }
    }

    fn inst(&mut self, inst: &Inst) -> Result<(), String> {
        // A rematerialized value has no code where it is defined, only where it is used.
        if inst
            .def()
            .is_some_and(|d| matches!(self.loc(d), Loc::Remat(_)))
        {
            return Ok(());
        }
        match inst {
            Inst::Mov { dst, src } => {
                let t = self.target(*dst, T0);
                self.read_into(*src, t);
                self.write_back(*dst, t);
            }
            // An address inside a stack slot: one offset from r10 (`r = r10; r += -40;
            // r += 8` is `r = r10; r += -32`).
            Inst::Alu {
                op: AluOp::Add,
                dst,
                lhs,
                rhs: Operand::Imm(k),
            } if self.slot_address(*lhs, *k).is_some() => {
                let off = self.slot_address(*lhs, *k).expect("checked by the guard");
                let t = self.target(*dst, T0);
                self.push(Insn::mov64_reg(t, Reg::R10));
                self.push(Insn::add64_imm(t, off));
                self.write_back(*dst, t);
            }
            Inst::Alu { op, dst, lhs, rhs } => {
                // Compute in dst's own register unless the right operand lives there (then
                // writing lhs first would clobber it): r0 is the fallback.
                let rhs_reg = match rhs {
                    Operand::Reg(r) => match self.loc(*r) {
                        Loc::Reg(p) => Some(p),
                        _ => None,
                    },
                    Operand::Imm(_) => None,
                };
                let mut t = self.target(*dst, T0);
                if rhs_reg == Some(t.0) && self.loc(*lhs) != Loc::Reg(t.0) {
                    t = T0;
                }
                self.read_into(Operand::Reg(*lhs), t);
                match rhs {
                    // Masking to the low 32 bits is a 32-bit move (which zero-extends).
                    Operand::Imm(0xffff_ffff) if *op == AluOp::And => {
                        self.push(Insn::mov32_reg(t, t))
                    }
                    // A constant shift amount is taken modulo 64, as BPF does with a
                    // register amount and the JIT with either (the verifier refuses
                    // immediates outside 0..64).
                    Operand::Imm(v) if matches!(op, AluOp::Shl | AluOp::LShr | AluOp::AShr) => {
                        self.push(Insn::alu64_imm(alu(*op), t, (*v & 63) as i32))
                    }
                    Operand::Imm(v) if fits_i32(*v) => {
                        self.push(Insn::alu64_imm(alu(*op), t, *v as i32))
                    }
                    _ => {
                        let r = match rhs {
                            Operand::Reg(r) => self.read(*r, T1),
                            Operand::Imm(v) => {
                                self.load_imm(T1, *v);
                                T1
                            }
                        };
                        self.push(Insn::alu64_reg(alu(*op), t, r));
                    }
                }
                self.write_back(*dst, t);
            }
            Inst::Neg { dst, src } => {
                self.read_into(Operand::Reg(*src), T0);
                self.push(Insn::neg64(T0));
                self.write_back(*dst, T0);
            }
            Inst::Load {
                dst,
                base,
                offset,
                width,
            } => {
                let (b, off) = self.address(*base, *offset, T1)?;
                let t = self.target(*dst, T0);
                self.push(Insn::ldx(size(*width), t, b, off));
                self.write_back(*dst, t);
            }
            Inst::Store {
                base,
                offset,
                src,
                width,
            } => {
                let (b, off) = self.address(*base, *offset, T1)?;
                match src {
                    // A store narrower than 64 bits writes the immediate's low bytes.
                    Operand::Imm(v) if fits_i32(*v) || *width != Width::W64 => {
                        self.push(Insn::st(size(*width), b, off, *v as i32))
                    }
                    // Two 32-bit halves: two instructions where `ld_imm64` and a store take
                    // three slots.
                    Operand::Imm(v) if *width == Width::W64 && off <= i16::MAX - 4 => {
                        self.push(Insn::st(Size::W, b, off, *v as i32));
                        self.push(Insn::st(Size::W, b, off + 4, (*v >> 32) as i32));
                    }
                    Operand::Imm(v) => {
                        self.load_imm(T2, *v);
                        self.push(Insn::stx(size(*width), b, off, T2));
                    }
                    Operand::Reg(r) => {
                        let s = self.read(*r, T2);
                        self.push(Insn::stx(size(*width), b, off, s));
                    }
                }
            }
            Inst::AtomicAdd { base, offset, src } => {
                let (b, off) = self.address(*base, *offset, T1)?;
                let s = self.read(*src, T2);
                self.push(Insn::atomic_add64(b, off, s));
            }
            Inst::SlotAddr { dst, slot } => {
                let t = self.target(*dst, T0);
                self.push(Insn::mov64_reg(t, Reg::R10));
                self.push(Insn::add64_imm(
                    t,
                    i32::from(self.slot_off[slot.0 as usize]),
                ));
                self.write_back(*dst, t);
            }
            // The same instruction: the map's section tells the loader which (a data section
            // makes it the value's address).
            Inst::MapHandle { dst, map } | Inst::MapValue { dst, map } => {
                let t = self.target(*dst, T0);
                self.out.map_relocs.push((self.out.insns.len(), map.0));
                self.push2(Insn::ld_map_reloc(t));
                self.write_back(*dst, t);
            }
            Inst::FuncAddr { dst, func } => {
                let t = self.target(*dst, T0);
                self.out.func_relocs.push((self.out.insns.len(), *func));
                self.push2(Insn::ld_map_reloc(t));
                self.write_back(*dst, t);
            }
            Inst::Call {
                dst,
                func: Intrinsic::Kfunc(k),
                args,
            } => {
                self.call(args, Insn::call_kfunc(k.btf_id), *dst);
            }
            // The variable's address goes in r1 last: the typed ksym is no value the
            // registers allocated for the program hold.
            Inst::Call {
                dst,
                func: Intrinsic::ThisCpuPtr(var),
                ..
            } => {
                self.push2(Insn::ld_ksym(T1, *var));
                self.call(&[], Insn::call(Helper::ThisCpuPtr), *dst);
            }
            Inst::Call {
                dst,
                func: Intrinsic::PerCpuPtr(var),
                args,
            } => {
                if let Some(cpu) = args.first() {
                    self.read_into(*cpu, T2);
                }
                self.push2(Insn::ld_ksym(T1, *var));
                self.call(&[], Insn::call(Helper::PerCpuPtr), *dst);
            }
            Inst::Call { dst, func, args } => {
                let h = helper(*func).ok_or_else(|| {
                    format!("`{}` exists only in userspace probes", func.host_name())
                })?;
                self.call(args, Insn::call(h), *dst);
            }
            Inst::CallFunc { dst, func, args } => {
                // The loader links the callee into the program and sets the offset.
                let at = self.call(args, Insn::call_local(-1), *dst);
                self.out.func_relocs.push((at, *func));
            }
            Inst::Label(l) => {
                self.labels.insert(*l, self.out.insns.len());
            }
            Inst::Jump(l) => {
                self.fixups.push((self.out.insns.len(), *l));
                self.push(Insn::ja(0));
            }
            Inst::Branch {
                cond,
                lhs,
                rhs,
                target,
            } => {
                let a = self.read(*lhs, T1);
                match rhs {
                    Operand::Imm(v) if fits_i32(*v) => {
                        self.fixups.push((self.out.insns.len(), *target));
                        self.push(Insn::jmp_imm(jmp(*cond), a, *v as i32, 0));
                    }
                    _ => {
                        let b = match rhs {
                            Operand::Reg(r) => self.read(*r, T2),
                            Operand::Imm(v) => {
                                self.load_imm(T2, *v);
                                T2
                            }
                        };
                        self.fixups.push((self.out.insns.len(), *target));
                        self.push(Insn::jmp_reg(jmp(*cond), a, b, 0));
                    }
                }
            }
            Inst::Return { value } => {
                self.read_into(*value, T0);
                self.push(Insn::exit());
            }
        }
        Ok(())
    }
}

/// Allocates registers and emits BPF instructions for `f`.
pub fn emit(f: &Function) -> Result<Emitted, Diagnostic> {
    emit_with_range(f, jumps::SHORT_RANGE)
}

/// [`emit`] with short jumps limited to `range` instructions (tests force long jumps on small
/// programs with it).
pub(crate) fn emit_with_range(f: &Function, range: i64) -> Result<Emitted, Diagnostic> {
    let mut live = f.clone();
    crate::ir::cfg::remove_dead_code(&mut live);
    let f = &live;
    let alloc = allocate(f);
    let mut off = 0u32;
    let mut slot_off = Vec::with_capacity(f.slots.len());
    for s in &f.slots {
        off += s.size;
        slot_off.push(-(off as i64) as i16);
    }
    let stack = off + alloc.spills * 8;
    let first_span = f.insts.first().map(|(_, s)| *s).unwrap_or_default();
    // The kernel counts the frames of a call chain together, each at least 32 bytes.
    let callees = if f
        .insts
        .iter()
        .any(|(i, _)| matches!(i, Inst::CallFunc { .. }))
    {
        32
    } else {
        0
    };
    if stack.next_multiple_of(32) + callees > MAX_STACK {
        let needed = stack + callees;
        return Err(Diagnostic::error(
            "sonde::codegen::stack_overflow",
            first_span,
            format!("this probe needs {needed} bytes of BPF stack; the kernel allows {MAX_STACK}"),
        )
        .with_label("in this probe")
        .with_help(
            "split the probe's work across several probes or use fewer simultaneous temporaries",
        ));
    }
    let mut e = Emitter {
        out: Emitted {
            stack,
            ..Default::default()
        },
        alloc: &alloc,
        slot_off,
        spill_base: off,
        labels: HashMap::new(),
        fixups: Vec::new(),
        span: first_span,
    };
    for (i, &p) in f.params.iter().enumerate() {
        e.write_back(p, Reg(i as u8 + 1));
    }
    for (inst, span) in &f.insts {
        e.span = *span;
        e.inst(inst)
            .map_err(|m| Diagnostic::error("sonde::codegen::internal", *span, m))?;
    }
    let mut sites: Vec<Site> = std::mem::take(&mut e.fixups)
        .into_iter()
        .map(|(at, label)| Site {
            at,
            target: e.labels[&label],
        })
        .collect();
    super::peephole::run(&mut e.out, &mut sites);
    jumps::resolve(&mut e.out, &sites, range).map_err(|m| {
        Diagnostic::error("sonde::codegen::too_large", first_span, m)
            .with_help("split the probe into smaller probes")
    })?;
    Ok(e.out)
}
