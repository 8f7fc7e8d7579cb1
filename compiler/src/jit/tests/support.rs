//! What the JIT's tests share: one-line IR builders, a test host (`extern "C"` functions
//! registered under intrinsics' host names, with thread-local state), and the reference: BPF's
//! ALU and jump semantics, an interpreter of the register subset of the IR, operand generators
//! and a random program generator.

use crate::ir::Operand::{Imm, Reg};
use crate::ir::{AluOp, Cond, Function, Inst, Label, Operand, VReg, Width};
use crate::jit::JitProgram;
use crate::lower::Lowered;
use sonde_lang::span::Span;
use std::cell::{RefCell, UnsafeCell};
use std::collections::HashMap;

// ---------------------------------------------------------------- building IR

pub(super) fn sp(n: usize) -> Span {
    Span::new(n, n + 1)
}

/// A program function whose first parameter is the context; returns it and the ctx register.
pub(super) fn program(name: &str) -> (Function, VReg) {
    let mut f = Function::new(name);
    let ctx = f.vreg();
    f.params = vec![ctx];
    f.ctx = Some(ctx);
    (f, ctx)
}

/// Builders for the instructions the tests use, numbering spans by position.
mod build {
    use super::sp;
    use crate::ir::{
        AluOp, Cond, Function, Inst, Intrinsic, Label, MapRef, Operand, Slot, VReg, Width,
    };

    pub fn push(f: &mut Function, i: Inst) {
        let n = f.insts.len();
        f.push(i, sp(n));
    }
    pub fn mov(f: &mut Function, dst: VReg, src: Operand) {
        push(f, Inst::Mov { dst, src })
    }
    pub fn alu(f: &mut Function, op: AluOp, dst: VReg, lhs: VReg, rhs: Operand) {
        push(f, Inst::Alu { op, dst, lhs, rhs })
    }
    pub fn branch(f: &mut Function, cond: Cond, lhs: VReg, rhs: Operand, target: Label) {
        push(
            f,
            Inst::Branch {
                cond,
                lhs,
                rhs,
                target,
            },
        )
    }
    pub fn store(f: &mut Function, base: VReg, offset: i32, src: Operand, width: Width) {
        push(
            f,
            Inst::Store {
                base,
                offset,
                src,
                width,
            },
        )
    }
    pub fn load(f: &mut Function, dst: VReg, base: VReg, offset: i32, width: Width) {
        push(
            f,
            Inst::Load {
                dst,
                base,
                offset,
                width,
            },
        )
    }
    pub fn atomic_add(f: &mut Function, base: VReg, offset: i32, src: VReg) {
        push(f, Inst::AtomicAdd { base, offset, src })
    }
    pub fn slot_addr(f: &mut Function, dst: VReg, slot: Slot) {
        push(f, Inst::SlotAddr { dst, slot })
    }
    pub fn map_handle(f: &mut Function, dst: VReg, map: u32) {
        push(
            f,
            Inst::MapHandle {
                dst,
                map: MapRef(map),
            },
        )
    }
    pub fn label(f: &mut Function, l: Label) {
        push(f, Inst::Label(l))
    }
    pub fn ret(f: &mut Function, value: Operand) {
        push(f, Inst::Return { value })
    }
    pub fn call(f: &mut Function, dst: Option<VReg>, func: Intrinsic, args: Vec<Operand>) {
        push(f, Inst::Call { dst, func, args })
    }
    /// `N` fresh registers.
    pub fn regs<const N: usize>(f: &mut Function) -> [VReg; N] {
        std::array::from_fn(|_| f.vreg())
    }
}
pub(super) use build::*;

pub(super) fn lowered(main: Function) -> Lowered {
    Lowered {
        main,
        callbacks: vec![],
    }
}

pub(super) fn compile(programs: &[Lowered]) -> JitProgram {
    match JitProgram::compile(programs, &host()) {
        Ok(p) => p,
        Err(d) => panic!("{}: {}", d.code, d.message),
    }
}

pub(super) fn run(p: &JitProgram, i: usize, ctx: *mut u8) -> u64 {
    // SAFETY: the test programs only touch memory `ctx` points to, slots and host buffers.
    unsafe { p.entry(i)(ctx) }
}

pub(super) fn run_words(p: &JitProgram, i: usize, words: &mut [u64]) -> u64 {
    run(p, i, words.as_mut_ptr().cast())
}

// ---------------------------------------------------------------- the test host

thread_local! {
    pub(super) static MAP_VALUE: UnsafeCell<[u64; 4]> = const { UnsafeCell::new([0; 4]) };
    pub(super) static LOOKUPS: RefCell<Vec<(i64, u64)>> = const { RefCell::new(Vec::new()) };
    pub(super) static OUTPUT: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// Map 3 holds one value for every key; other maps are empty.
pub(super) extern "C" fn map_lookup(map: i64, key: i64) -> i64 {
    // SAFETY: programs pass a pointer to an 8-byte key.
    let k = unsafe { (key as *const u64).read_unaligned() };
    LOOKUPS.with(|l| l.borrow_mut().push((map, k)));
    if map == 3 {
        MAP_VALUE.with(|v| v.get() as i64)
    } else {
        0
    }
}

/// `bpf_loop`: runs `cb(i, ctx)` for i in 0..n until it returns non-zero.
pub(super) extern "C" fn run_loop(n: i64, cb: i64, ctx: i64, _flags: i64) -> i64 {
    // SAFETY: programs pass the address of a callback taking (index, ctx).
    let cb = unsafe { std::mem::transmute::<i64, F2>(cb) };
    for i in 0..n {
        if cb(i, ctx) != 0 {
            return i + 1;
        }
    }
    n
}

pub(super) extern "C" fn ringbuf_output(_map: i64, data: i64, size: i64, _flags: i64) -> i64 {
    // SAFETY: programs pass `size` readable bytes.
    let bytes = unsafe { std::slice::from_raw_parts(data as *const u8, size as usize) };
    OUTPUT.with(|o| o.borrow_mut().push(bytes.to_vec()));
    0
}

pub(super) extern "C" fn ktime() -> i64 {
    42
}

/// Shows the order of its three arguments.
pub(super) extern "C" fn three(a: i64, b: i64, c: i64) -> i64 {
    a * 1_000_000 + b * 1000 + c
}

pub(super) type F0 = extern "C" fn() -> i64;
pub(super) type F2 = extern "C" fn(i64, i64) -> i64;
pub(super) type F3 = extern "C" fn(i64, i64, i64) -> i64;
pub(super) type F4 = extern "C" fn(i64, i64, i64, i64) -> i64;

pub(super) fn host() -> Vec<(&'static str, *const u8)> {
    vec![
        ("sonde_map_lookup", map_lookup as F2 as *const u8),
        ("sonde_loop", run_loop as F4 as *const u8),
        ("sonde_ringbuf_output", ringbuf_output as F4 as *const u8),
        ("sonde_ktime_get_ns", ktime as F0 as *const u8),
        ("sonde_input_field", three as F3 as *const u8),
    ]
}

// ---------------------------------------------------------------- the reference

pub(super) const ALU_OPS: [AluOp; 13] = [
    AluOp::Add,
    AluOp::Sub,
    AluOp::Mul,
    AluOp::UDiv,
    AluOp::SDiv,
    AluOp::UMod,
    AluOp::SMod,
    AluOp::And,
    AluOp::Or,
    AluOp::Xor,
    AluOp::Shl,
    AluOp::LShr,
    AluOp::AShr,
];

pub(super) const CONDS: [Cond; 11] = [
    Cond::Eq,
    Cond::Ne,
    Cond::UGt,
    Cond::UGe,
    Cond::ULt,
    Cond::ULe,
    Cond::SGt,
    Cond::SGe,
    Cond::SLt,
    Cond::SLe,
    Cond::Set,
];

/// BPF's ALU64 semantics, written independently of the translation.
pub(super) fn ref_alu(op: AluOp, a: u64, b: u64) -> u64 {
    let (sa, sb) = (a as i64, b as i64);
    match op {
        AluOp::Add => a.wrapping_add(b),
        AluOp::Sub => a.wrapping_sub(b),
        AluOp::Mul => a.wrapping_mul(b),
        AluOp::UDiv => a.checked_div(b).unwrap_or(0),
        AluOp::UMod => a.checked_rem(b).unwrap_or(a),
        AluOp::SDiv if sb == 0 => 0,
        AluOp::SDiv => sa.wrapping_div(sb) as u64,
        AluOp::SMod if sb == 0 => a,
        AluOp::SMod => sa.wrapping_rem(sb) as u64,
        AluOp::And => a & b,
        AluOp::Or => a | b,
        AluOp::Xor => a ^ b,
        AluOp::Shl => a << (b % 64),
        AluOp::LShr => a >> (b % 64),
        AluOp::AShr => (sa >> (b % 64)) as u64,
    }
}

pub(super) fn ref_cond(c: Cond, a: u64, b: u64) -> bool {
    let (sa, sb) = (a as i64, b as i64);
    match c {
        Cond::Eq => a == b,
        Cond::Ne => a != b,
        Cond::UGt => a > b,
        Cond::UGe => a >= b,
        Cond::ULt => a < b,
        Cond::ULe => a <= b,
        Cond::SGt => sa > sb,
        Cond::SGe => sa >= sb,
        Cond::SLt => sa < sb,
        Cond::SLe => sa <= sb,
        Cond::Set => a & b != 0,
    }
}

/// Runs the register-only subset of the IR (plus 64-bit loads from the context) with a
/// register read before any write reading 0, and falling off the end returning 0.
pub(super) fn interp(f: &Function, mem: &[u64]) -> u64 {
    let mut regs = vec![0u64; f.vregs as usize];
    let labels: HashMap<Label, usize> = (f.insts.iter().enumerate())
        .filter_map(|(i, (inst, _))| match inst {
            Inst::Label(l) => Some((*l, i)),
            _ => None,
        })
        .collect();
    let val = |regs: &[u64], o: Operand| match o {
        Reg(r) => regs[r.0 as usize],
        Imm(v) => v as u64,
    };
    let mut pc = 0;
    while let Some((inst, _)) = f.insts.get(pc) {
        pc += 1;
        match inst {
            Inst::Mov { dst, src } => regs[dst.0 as usize] = val(&regs, *src),
            Inst::Alu { op, dst, lhs, rhs } => {
                regs[dst.0 as usize] = ref_alu(*op, regs[lhs.0 as usize], val(&regs, *rhs))
            }
            Inst::Neg { dst, src } => regs[dst.0 as usize] = regs[src.0 as usize].wrapping_neg(),
            Inst::Load { dst, offset, .. } => regs[dst.0 as usize] = mem[*offset as usize / 8],
            Inst::Label(_) => {}
            Inst::Jump(l) => pc = labels[l],
            Inst::Branch {
                cond,
                lhs,
                rhs,
                target,
            } => {
                if ref_cond(*cond, regs[lhs.0 as usize], val(&regs, *rhs)) {
                    pc = labels[target];
                }
            }
            Inst::Return { value } => return val(&regs, *value),
            other => panic!("the reference interpreter does not run {other:?}"),
        }
    }
    0
}

/// xorshift64: operands that are mostly not small.
pub(super) struct Rng(pub(super) u64);

impl Rng {
    pub(super) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub(super) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// A value of random magnitude and sign, often an edge case.
    pub(super) fn operand(&mut self) -> u64 {
        match self.below(4) {
            0 => EDGES[self.below(EDGES.len())] as u64,
            1 => self.next() >> self.below(64),
            2 => (self.next() >> self.below(64)).wrapping_neg(),
            _ => self.next(),
        }
    }
}

pub(super) const EDGES: [i64; 30] = [
    0,
    1,
    2,
    3,
    -1,
    -2,
    -3,
    7,
    8,
    31,
    32,
    33,
    63,
    64,
    65,
    127,
    128,
    255,
    256,
    i32::MAX as i64,
    i32::MIN as i64,
    u32::MAX as i64,
    1 << 32,
    i64::MAX,
    i64::MIN,
    i64::MIN + 1,
    i64::MAX - 1,
    0x5555_5555_5555_5555,
    -0x1234_5678_9abc,
    1000,
];

/// Every pair of edge values, then random pairs.
pub(super) fn operand_pairs(seed: u64, random: usize) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = EDGES
        .iter()
        .flat_map(|&a| EDGES.iter().map(move |&b| (a as u64, b as u64)))
        .collect();
    let mut rng = Rng(seed);
    v.extend((0..random).map(|_| (rng.operand(), rng.operand())));
    v
}

// ---------------------------------------------------------------- random programs

/// A random program over six registers (four loaded from the context, two starting
/// uninitialised) with forward branches and jumps, and returns in the middle followed by
/// unreachable code.
pub(super) fn random_program(rng: &mut Rng, len: usize) -> Function {
    let (mut f, ctx) = program("fuzz");
    let regs: Vec<VReg> = (0..6).map(|_| f.vreg()).collect();
    for (i, &r) in regs.iter().take(4).enumerate() {
        load(&mut f, r, ctx, 8 * i as i32, Width::W64);
    }
    let labels: Vec<Label> = (0..rng.below(6) + 1).map(|_| f.label()).collect();
    let mut placed = 0;
    let operand = |rng: &mut Rng| {
        if rng.below(2) == 0 {
            Reg(regs[rng.below(regs.len())])
        } else {
            Imm(rng.operand() as i64)
        }
    };
    for _ in 0..len {
        let reg = |rng: &mut Rng| regs[rng.below(regs.len())];
        let forward = |rng: &mut Rng| labels[placed + rng.below(labels.len() - placed)];
        let inst = match rng.below(20) {
            0..=9 => Inst::Alu {
                op: ALU_OPS[rng.below(ALU_OPS.len())],
                dst: reg(rng),
                lhs: reg(rng),
                rhs: operand(rng),
            },
            10 | 11 => Inst::Mov {
                dst: reg(rng),
                src: operand(rng),
            },
            12 => Inst::Neg {
                dst: reg(rng),
                src: reg(rng),
            },
            13..=15 if placed < labels.len() => Inst::Branch {
                cond: CONDS[rng.below(CONDS.len())],
                lhs: reg(rng),
                rhs: operand(rng),
                target: forward(rng),
            },
            16 if placed < labels.len() => Inst::Jump(forward(rng)),
            17 => Inst::Return {
                value: operand(rng),
            },
            _ if placed < labels.len() => {
                placed += 1;
                Inst::Label(labels[placed - 1])
            }
            _ => Inst::Mov {
                dst: reg(rng),
                src: Reg(reg(rng)),
            },
        };
        push(&mut f, inst);
    }
    for &l in &labels[placed..] {
        label(&mut f, l);
    }
    let r = regs[rng.below(regs.len())];
    let (a, b) = (regs[0], regs[1]);
    // Mix every register into the result so that no computation is dead.
    for &x in &regs[1..] {
        alu(&mut f, AluOp::Xor, a, a, Reg(x));
    }
    alu(&mut f, AluOp::Add, b, r, Reg(a));
    ret(&mut f, Reg(b));
    f
}
