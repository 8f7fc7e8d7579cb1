//! The JIT against a reference interpreter of the IR (ALU, conditions, random programs) and
//! hand-written programs for memory, slots, calls and callbacks, run through a small test host.

mod support;

use super::*;
use crate::ir::Operand::{Imm, Reg};
use crate::ir::{AluOp, Cond, Inst, Label, Slot, VReg, Width};
use support::*;

// ---------------------------------------------------------------- ALU and conditions

/// `return *ctx op ctx[1]`, or `return *ctx op imm`.
fn alu_program(op: AluOp, imm: Option<i64>) -> Lowered {
    let (mut f, ctx) = program("alu");
    let [a, b, d] = regs(&mut f);
    load(&mut f, a, ctx, 0, Width::W64);
    load(&mut f, b, ctx, 8, Width::W64);
    let rhs = imm.map_or(Reg(b), Imm);
    alu(&mut f, op, d, a, rhs);
    ret(&mut f, Reg(d));
    lowered(f)
}

/// `return *ctx cond ctx[1]` (or `imm`) as 1 or 0, through a branch.
fn cond_program(cond: Cond, imm: Option<i64>) -> Lowered {
    let (mut f, ctx) = program("cond");
    let [a, b] = regs(&mut f);
    let yes = f.label();
    load(&mut f, a, ctx, 0, Width::W64);
    load(&mut f, b, ctx, 8, Width::W64);
    let rhs = imm.map_or(Reg(b), Imm);
    branch(&mut f, cond, a, rhs, yes);
    ret(&mut f, Imm(0));
    label(&mut f, yes);
    ret(&mut f, Imm(1));
    lowered(f)
}

#[test]
fn every_alu_op_with_a_register_operand_matches_the_reference() {
    let programs: Vec<Lowered> = ALU_OPS.iter().map(|&op| alu_program(op, None)).collect();
    let p = compile(&programs);
    for (i, &op) in ALU_OPS.iter().enumerate() {
        for (a, b) in operand_pairs(0x9e37_79b9_7f4a_7c15 + i as u64, 3000) {
            let got = run_words(&p, i, &mut [a, b]);
            assert_eq!(got, ref_alu(op, a, b), "{op:?} {a:#x} {b:#x}");
        }
    }
}

#[test]
fn every_alu_op_with_an_immediate_matches_the_reference() {
    let cases: Vec<(AluOp, i64)> = ALU_OPS
        .iter()
        .flat_map(|&op| EDGES.iter().map(move |&c| (op, c)))
        .collect();
    let programs: Vec<Lowered> = cases
        .iter()
        .map(|&(op, c)| alu_program(op, Some(c)))
        .collect();
    let p = compile(&programs);
    let mut rng = Rng(7);
    let lhs: Vec<u64> = (EDGES.iter().map(|&e| e as u64))
        .chain((0..100).map(|_| rng.operand()))
        .collect();
    for (i, &(op, c)) in cases.iter().enumerate() {
        for &a in &lhs {
            let got = run_words(&p, i, &mut [a, 0xdead]);
            assert_eq!(got, ref_alu(op, a, c as u64), "{op:?} {a:#x} imm {c:#x}");
        }
    }
}

#[test]
fn bpf_division_edge_cases() {
    let ops = [AluOp::UDiv, AluOp::SDiv, AluOp::UMod, AluOp::SMod];
    let programs: Vec<Lowered> = ops.iter().map(|&op| alu_program(op, None)).collect();
    let p = compile(&programs);
    let min = i64::MIN as u64;
    let m1 = u64::MAX;
    // (op, a, b, BPF's result)
    let table = [
        (0, 7, 0, 0),
        (1, 7, 0, 0),
        (2, 7, 0, 7),
        (3, 7, 0, 7),
        (3, (-7i64) as u64, 0, (-7i64) as u64),
        (1, min, m1, min),
        (3, min, m1, 0),
        (1, (-7i64) as u64, 2, (-3i64) as u64),
        (3, (-7i64) as u64, 2, (-1i64) as u64),
        (3, 7, (-2i64) as u64, 1),
        (0, m1, 2, m1 / 2),
        (2, m1, 10, m1 % 10),
    ];
    for (op, a, b, want) in table {
        assert_eq!(
            run_words(&p, op, &mut [a, b]),
            want,
            "{:?} {a:#x} {b:#x}",
            ops[op]
        );
    }
}

#[test]
fn every_condition_matches_the_reference() {
    let mut programs: Vec<Lowered> = CONDS.iter().map(|&c| cond_program(c, None)).collect();
    let imm_cases: Vec<(Cond, i64)> = CONDS
        .iter()
        .flat_map(|&c| EDGES.iter().map(move |&v| (c, v)))
        .collect();
    programs.extend(imm_cases.iter().map(|&(c, v)| cond_program(c, Some(v))));
    let p = compile(&programs);
    for (i, &c) in CONDS.iter().enumerate() {
        for (a, b) in operand_pairs(0x1234 + i as u64, 2000) {
            let got = run_words(&p, i, &mut [a, b]);
            assert_eq!(got, ref_cond(c, a, b) as u64, "{c:?} {a:#x} {b:#x}");
        }
    }
    for (k, &(c, v)) in imm_cases.iter().enumerate() {
        for &a in &EDGES {
            let got = run_words(&p, CONDS.len() + k, &mut [a as u64, 0]);
            assert_eq!(
                got,
                ref_cond(c, a as u64, v as u64) as u64,
                "{c:?} {a:#x} imm {v:#x}"
            );
        }
    }
}

#[test]
fn neg_wraps() {
    let (mut f, ctx) = program("neg");
    let [a, d] = regs(&mut f);
    load(&mut f, a, ctx, 0, Width::W64);
    push(&mut f, Inst::Neg { dst: d, src: a });
    ret(&mut f, Reg(d));
    let p = compile(&[lowered(f)]);
    for &a in &EDGES {
        assert_eq!(run_words(&p, 0, &mut [a as u64]), (a as u64).wrapping_neg());
    }
}

#[test]
fn random_programs_match_the_reference_with_and_without_pruning() {
    let mut rng = Rng(0xfeed_beef);
    let programs: Vec<Lowered> = (0..150)
        .map(|_| lowered(random_program(&mut rng, 40)))
        .collect();
    let start = std::time::Instant::now();
    let pruned = compile(&programs);
    let took = start.elapsed();
    eprintln!(
        "jit: {} random programs of ~50 instructions in {took:?}",
        programs.len()
    );
    let raw = match compile_programs(&programs, &host(), false) {
        Ok(p) => p,
        Err(d) => panic!("{}: {}", d.code, d.message),
    };
    for (i, prog) in programs.iter().enumerate() {
        for _ in 0..12 {
            let mut mem = [rng.operand(), rng.operand(), rng.operand(), rng.operand()];
            let want = interp(&prog.main, &mem);
            assert_eq!(
                run_words(&pruned, i, &mut mem),
                want,
                "program {i} on {mem:x?}"
            );
            assert_eq!(
                run_words(&raw, i, &mut mem),
                want,
                "unpruned program {i} on {mem:x?}"
            );
        }
    }
}

// ---------------------------------------------------------------- registers and control flow

#[test]
fn mov_of_immediates_and_registers() {
    let (mut f, _) = program("mov");
    let [a, b] = regs(&mut f);
    mov(&mut f, a, Imm(0x1234_5678_9abc_def0));
    mov(&mut f, b, Reg(a));
    mov(&mut f, a, Imm(-1));
    alu(&mut f, AluOp::Add, b, b, Reg(a));
    ret(&mut f, Reg(b));
    let p = compile(&[lowered(f)]);
    assert_eq!(run(&p, 0, std::ptr::null_mut()), 0x1234_5678_9abc_deef);
}

#[test]
fn registers_read_before_any_write_are_zero() {
    // return u + 5, where u is never written
    let (mut f, _) = program("uninit");
    let [u, d] = regs(&mut f);
    alu(&mut f, AluOp::Add, d, u, Imm(5));
    ret(&mut f, Reg(d));
    // x is written only when *ctx != 0: return x
    let (mut g, ctx) = program("join");
    let [a, x] = regs(&mut g);
    let skip = g.label();
    load(&mut g, a, ctx, 0, Width::W64);
    branch(&mut g, Cond::Eq, a, Imm(0), skip);
    mov(&mut g, x, Imm(9));
    label(&mut g, skip);
    ret(&mut g, Reg(x));
    let p = compile(&[lowered(f), lowered(g)]);
    assert_eq!(run(&p, 0, std::ptr::null_mut()), 5);
    assert_eq!(run_words(&p, 1, &mut [1]), 9);
    assert_eq!(run_words(&p, 1, &mut [0]), 0);
}

#[test]
fn a_backward_branch_loops() {
    // i = 0; s = 0; L: s += i; i += 1; if i < *ctx goto L; return s
    let (mut f, ctx) = program("loop");
    let [n, i, s] = regs(&mut f);
    let top = f.label();
    load(&mut f, n, ctx, 0, Width::W64);
    mov(&mut f, i, Imm(0));
    label(&mut f, top);
    alu(&mut f, AluOp::Add, s, s, Reg(i));
    alu(&mut f, AluOp::Add, i, i, Imm(1));
    branch(&mut f, Cond::ULt, i, Reg(n), top);
    ret(&mut f, Reg(s));
    let p = compile(&[lowered(f)]);
    assert_eq!(run_words(&p, 0, &mut [10]), 45);
    assert_eq!(run_words(&p, 0, &mut [1]), 0);
}

#[test]
fn code_after_return_and_jump_is_unreachable_and_falling_off_returns_zero() {
    // jump L; r = 1; return r; L: return 7; r = 2 (dead, unterminated)
    let (mut f, _) = program("dead");
    let r = f.vreg();
    let l = f.label();
    push(&mut f, Inst::Jump(l));
    mov(&mut f, r, Imm(1));
    ret(&mut f, Reg(r));
    label(&mut f, l);
    ret(&mut f, Imm(7));
    mov(&mut f, r, Imm(2));
    let (mut g, _) = program("falls_off");
    let v = g.vreg();
    mov(&mut g, v, Imm(3));
    let (empty, _) = program("empty");
    let programs = [lowered(f), lowered(g), lowered(empty)];
    for prune in [true, false] {
        let p = compile_programs(&programs, &host(), prune).expect("compiles");
        assert_eq!(run(&p, 0, std::ptr::null_mut()), 7);
        assert_eq!(run(&p, 1, std::ptr::null_mut()), 0);
        assert_eq!(run(&p, 2, std::ptr::null_mut()), 0);
    }
}

// ---------------------------------------------------------------- memory

#[test]
fn loads_of_every_width_zero_extend_at_any_alignment() {
    let bytes: [u8; 24] = std::array::from_fn(|i| 0x80 | (i as u8 * 7));
    let cases: Vec<(Width, i32)> = [Width::W8, Width::W16, Width::W32, Width::W64]
        .iter()
        .flat_map(|&w| [0, 1, 3, 8, 13].map(|o| (w, o)))
        .collect();
    let programs: Vec<Lowered> = cases
        .iter()
        .map(|&(w, o)| {
            let (mut f, ctx) = program("load");
            let d = f.vreg();
            load(&mut f, d, ctx, o, w);
            ret(&mut f, Reg(d));
            lowered(f)
        })
        .collect();
    let p = compile(&programs);
    for (i, &(w, o)) in cases.iter().enumerate() {
        let mut buf = bytes;
        let mut want = [0u8; 8];
        let (o, n) = (o as usize, w.bytes() as usize);
        want[..n].copy_from_slice(&bytes[o..o + n]);
        assert_eq!(
            run(&p, i, buf.as_mut_ptr()),
            u64::from_le_bytes(want),
            "{w:?} at {o}"
        );
    }
}

#[test]
fn stores_of_every_width_truncate_and_touch_nothing_else() {
    let values = [Imm(-1), Imm(0x1122_3344_5566_7788), Reg(VReg(1))];
    let mut cases = Vec::new();
    for w in [Width::W8, Width::W16, Width::W32, Width::W64] {
        for v in values {
            for o in [0, 3, 8] {
                cases.push((w, v, o));
            }
        }
    }
    let programs: Vec<Lowered> = cases
        .iter()
        .map(|&(width, src, offset)| {
            let (mut f, base) = program("store");
            let v = f.vreg(); // VReg(1)
            mov(&mut f, v, Imm(0x0102_0304_0506_0708));
            store(&mut f, base, offset, src, width);
            ret(&mut f, Imm(0));
            lowered(f)
        })
        .collect();
    let p = compile(&programs);
    for (i, &(w, v, o)) in cases.iter().enumerate() {
        let mut buf = [0xaau8; 24];
        run(&p, i, buf.as_mut_ptr());
        let value = match v {
            Imm(x) => x as u64,
            Reg(_) => 0x0102_0304_0506_0708,
        };
        let mut want = [0xaau8; 24];
        let (o, n) = (o as usize, w.bytes() as usize);
        want[o..o + n].copy_from_slice(&value.to_le_bytes()[..n]);
        assert_eq!(buf, want, "{w:?} {v:?} at {o}");
    }
}

#[test]
fn atomic_add_adds_to_memory_wrapping() {
    let (mut f, ctx) = program("atomic");
    let [one, two] = regs(&mut f);
    mov(&mut f, one, Imm(1));
    mov(&mut f, two, Imm(2));
    atomic_add(&mut f, ctx, 8, two);
    atomic_add(&mut f, ctx, 3, one);
    ret(&mut f, Imm(0));
    let p = compile(&[lowered(f)]);
    let mut buf = [0u8; 24];
    buf[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
    run(&p, 0, buf.as_mut_ptr());
    // u64::MAX + 2 wraps to 1 at 8, then +1 at the unaligned offset 3 (bytes 3..11).
    let mut want = [0u8; 24];
    want[8] = 1;
    let v3 = u64::from_le_bytes(want[3..11].try_into().unwrap()) + 1;
    want[3..11].copy_from_slice(&v3.to_le_bytes());
    assert_eq!(buf, want);
}

#[test]
fn slots_are_separate_and_their_addresses_reach_the_host() {
    // two slots: a (8 bytes) and b (20 → 24); fill, read back, output b, return a + b[2]
    let (mut f, _) = program("slots");
    let sa = f.slot(8);
    let sb = f.slot(20);
    let [pa, pb, x, y, z] = regs(&mut f);
    slot_addr(&mut f, pa, sa);
    slot_addr(&mut f, pb, sb);
    store(&mut f, pa, 0, Imm(100), Width::W64);
    for k in 0..3 {
        let src = Imm(0x0101_0101_0101_0101 * (k + 1));
        store(&mut f, pb, 8 * k as i32, src, Width::W64);
    }
    load(&mut f, x, pa, 0, Width::W64);
    load(&mut f, y, pb, 16, Width::W8);
    alu(&mut f, AluOp::Add, z, x, Reg(y));
    let m = f.vreg();
    map_handle(&mut f, m, 1);
    let args = vec![Reg(m), Reg(pb), Imm(24), Imm(0)];
    call(&mut f, None, Intrinsic::RingbufOutput, args);
    ret(&mut f, Reg(z));
    let p = compile(&[lowered(f)]);
    OUTPUT.with(|o| o.borrow_mut().clear());
    assert_eq!(run(&p, 0, std::ptr::null_mut()), 103);
    let out = OUTPUT.with(|o| o.borrow().clone());
    let want: Vec<u8> = [1u8, 2, 3].iter().flat_map(|&b| [b; 8]).collect();
    assert_eq!(out, vec![want]);
}

// ---------------------------------------------------------------- calls and callbacks

#[test]
fn calls_pass_arguments_in_order_and_map_handles_are_indices() {
    let (mut f, ctx) = program("calls");
    let [key, pk, m, v, t, a, r] = regs(&mut f);
    let missing = f.label();
    let slot = f.slot(8);
    load(&mut f, key, ctx, 0, Width::W64);
    slot_addr(&mut f, pk, slot);
    store(&mut f, pk, 0, Reg(key), Width::W64);
    map_handle(&mut f, m, 3);
    call(&mut f, Some(v), Intrinsic::MapLookup, vec![Reg(m), Reg(pk)]);
    branch(&mut f, Cond::Eq, v, Imm(0), missing);
    load(&mut f, v, v, 8, Width::W64);
    call(&mut f, Some(t), Intrinsic::KtimeGetNs, vec![]);
    let args = vec![Imm(1), Reg(t), Imm(3)];
    call(&mut f, Some(a), Intrinsic::InputField, args);
    alu(&mut f, AluOp::Add, r, v, Reg(a));
    ret(&mut f, Reg(r));
    label(&mut f, missing);
    ret(&mut f, Imm(-1));
    let p = compile(&[lowered(f)]);
    MAP_VALUE.with(|v| unsafe { (*v.get())[1] = 5 });
    LOOKUPS.with(|l| l.borrow_mut().clear());
    assert_eq!(run_words(&p, 0, &mut [77]), 5 + 1_042_003);
    assert_eq!(LOOKUPS.with(|l| l.borrow().clone()), vec![(3, 77)]);
}

/// A callback `(index, ctx) -> 0`: `*(u64 *)ctx += index`, stopping (returning 1) at `stop`.
fn summing_callback(stop: i64) -> Function {
    let mut cb = Function::new("cb");
    let [i, c] = regs(&mut cb);
    cb.params = vec![i, c];
    let brk = cb.label();
    branch(&mut cb, Cond::Eq, i, Imm(stop), brk);
    atomic_add(&mut cb, c, 0, i);
    ret(&mut cb, Imm(0));
    label(&mut cb, brk);
    ret(&mut cb, Imm(1));
    cb
}

/// `sum = 0; n = loop(count, callback 0, &sum); return sum * 1000 + n`.
fn looping_main(count: i64) -> Function {
    let (mut f, _) = program("main");
    let slot = f.slot(8);
    let [ps, cb, n, s, r] = regs(&mut f);
    slot_addr(&mut f, ps, slot);
    store(&mut f, ps, 0, Imm(0), Width::W64);
    push(&mut f, Inst::FuncAddr { dst: cb, func: 0 });
    let args = vec![Imm(count), Reg(cb), Reg(ps), Imm(0)];
    call(&mut f, Some(n), Intrinsic::Loop, args);
    load(&mut f, s, ps, 0, Width::W64);
    alu(&mut f, AluOp::Mul, r, s, Imm(1000));
    alu(&mut f, AluOp::Add, r, r, Reg(n));
    ret(&mut f, Reg(r));
    f
}

#[test]
fn callbacks_run_through_the_host_by_their_address() {
    let all = Lowered {
        main: looping_main(10),
        callbacks: vec![summing_callback(-1)],
    };
    let early = Lowered {
        main: looping_main(10),
        callbacks: vec![summing_callback(3)],
    };
    // A callback that itself loops over callback 1 (nested loops).
    let mut outer = looping_main(4);
    outer.name = "outer".into();
    let mut middle = looping_main(3);
    for (inst, _) in &mut middle.insts {
        if let Inst::FuncAddr { func, .. } = inst {
            *func = 1;
        }
    }
    // callback 0 takes (index, ctx): add the inner result to *ctx.
    let [i, c] = regs(&mut middle);
    middle.params = vec![i, c];
    let last = middle.insts.pop().expect("return");
    let Inst::Return { value: Reg(r) } = last.0 else {
        panic!()
    };
    atomic_add(&mut middle, c, 0, r);
    ret(&mut middle, Imm(0));
    let nested = Lowered {
        main: outer,
        callbacks: vec![middle, summing_callback(-1)],
    };
    let p = compile(&[all, early, nested]);
    assert_eq!(p.len(), 3);
    assert_eq!(run(&p, 0, std::ptr::null_mut()), 45_010);
    assert_eq!(run(&p, 1, std::ptr::null_mut()), 3_004);
    // each of 4 outer iterations adds 3 * 1000 + 3 (sum 0+1+2, three iterations)
    assert_eq!(run(&p, 2, std::ptr::null_mut()), 4 * 3003 * 1000 + 4);
}

// ---------------------------------------------------------------- diagnostics

#[test]
fn a_call_the_host_lacks_is_a_diagnostic_on_its_span() {
    let mut cb = summing_callback(-1);
    let t = cb.vreg();
    cb.insts.insert(
        0,
        (
            Inst::Call {
                dst: Some(t),
                func: Intrinsic::GetCpu,
                args: vec![],
            },
            sp(99),
        ),
    );
    let prog = Lowered {
        main: looping_main(1),
        callbacks: vec![cb],
    };
    // A null address is no entry either.
    let mut host = host();
    host.push(("sonde_get_cpu", std::ptr::null()));
    let err = JitProgram::compile(&[prog], &host).expect_err("no sonde_get_cpu");
    assert_eq!(err.code, "sonde::jit::unsupported");
    assert_eq!(err.span, sp(99));
    assert!(err.message.contains("`get_cpu`"), "{}", err.message);
    assert!(err.help.is_some());
}

#[test]
fn malformed_ir_is_an_internal_diagnostic() {
    let cases: Vec<(Inst, &str)> = vec![
        (Inst::Jump(Label(9)), "undefined label"),
        (
            Inst::FuncAddr {
                dst: VReg(0),
                func: 2,
            },
            "no callback",
        ),
        (
            Inst::SlotAddr {
                dst: VReg(0),
                slot: Slot(4),
            },
            "no stack slot",
        ),
        (
            Inst::Call {
                dst: None,
                func: Intrinsic::KtimeGetNs,
                args: vec![Imm(1)],
            },
            "arguments",
        ),
    ];
    for (inst, what) in cases {
        let (mut f, _) = program("bad");
        mov(&mut f, VReg(0), Imm(0));
        push(&mut f, inst);
        ret(&mut f, Imm(0));
        let err = JitProgram::compile(&[lowered(f)], &host()).expect_err(what);
        assert_eq!(err.code, "sonde::jit::internal");
        assert_eq!(err.span, sp(1), "{what}");
        assert!(err.message.contains(what), "{}", err.message);
    }
}

#[test]
fn kernel_only_uses_reports_each_live_kernel_call() {
    let (mut f, ctx) = program("k");
    let slot = f.slot(16);
    let p = f.vreg();
    slot_addr(&mut f, p, slot);
    let args = vec![Reg(p), Imm(16), Reg(ctx)];
    call(&mut f, None, Intrinsic::ProbeReadUser, args.clone()); // sp(1)
    call(&mut f, None, Intrinsic::ProbeReadKernel, args.clone()); // own memory: fine
    call(&mut f, None, Intrinsic::KtimeGetNs, vec![]);
    push(&mut f, Inst::FuncAddr { dst: p, func: 0 });
    ret(&mut f, Imm(0));
    call(&mut f, None, Intrinsic::ProbeReadUserStr, args); // dead
    let mut cb = Function::new("cb");
    call(&mut cb, None, Intrinsic::GetCurrentTask, vec![]); // sp(0)
    ret(&mut cb, Imm(0));
    let prog = Lowered {
        main: f,
        callbacks: vec![cb],
    };
    let diags = kernel_only_uses(&[prog.clone(), lowered(looping_main(1))]);
    let found: Vec<(&str, Span)> = diags.iter().map(|d| (d.code, d.span)).collect();
    assert_eq!(
        found,
        vec![
            ("sonde::jit::kernel_only", sp(1)),
            ("sonde::jit::kernel_only", sp(0))
        ]
    );
    assert!(
        diags[0].message.contains("`probe_read_user`"),
        "{}",
        diags[0].message
    );
    assert!(diags[0].message.contains("kernel state"));
    assert!(diags[1].message.contains("`get_current_task`"));
    assert!(
        diags
            .iter()
            .all(|d| !d.message.contains("sonde_") && d.help.is_some())
    );
}

#[test]
fn no_programs_compile_to_nothing_and_programs_can_be_dropped() {
    fn send<T: Send>() {}
    send::<JitProgram>();
    let p = compile(&[]);
    assert!(p.is_empty());
    let prog = Lowered {
        main: looping_main(3),
        callbacks: vec![summing_callback(-1)],
    };
    for _ in 0..20 {
        let p = compile(&[prog.clone(), prog.clone()]);
        assert_eq!(run(&p, 1, std::ptr::null_mut()), 3003);
        drop(p);
    }
}

// ---------------------------------------------------------------- compile time

/// A probe-sized function: loads from the context, a map lookup, arithmetic, branches.
fn typical_probe() -> Function {
    let (mut f, ctx) = program("typical");
    let slot = f.slot(16);
    let r: Vec<VReg> = (0..12).map(|_| f.vreg()).collect();
    let (out, skip) = (f.label(), f.label());
    for (k, &reg) in r[..4].iter().enumerate() {
        load(&mut f, reg, ctx, 8 * k as i32, Width::W64);
    }
    slot_addr(&mut f, r[4], slot);
    store(&mut f, r[4], 0, Reg(r[0]), Width::W64);
    map_handle(&mut f, r[5], 3);
    call(
        &mut f,
        Some(r[6]),
        Intrinsic::MapLookup,
        vec![Reg(r[5]), Reg(r[4])],
    );
    branch(&mut f, Cond::Eq, r[6], Imm(0), out);
    for k in 0..8 {
        let op = ALU_OPS[k % ALU_OPS.len()];
        let (d, a) = (r[7 + k % 4], r[k % 4]);
        alu(&mut f, op, d, a, Reg(r[(k + 1) % 4]));
        alu(&mut f, AluOp::Add, r[11], r[11], Reg(d));
        branch(&mut f, CONDS[k], d, Imm(k as i64), skip);
        atomic_add(&mut f, r[6], 8, d);
    }
    label(&mut f, skip);
    store(&mut f, r[6], 0, Reg(r[11]), Width::W32);
    call(&mut f, Some(r[8]), Intrinsic::KtimeGetNs, vec![]);
    label(&mut f, out);
    ret(&mut f, Reg(r[11]));
    f
}

#[test]
fn compile_time_of_a_typical_probe() {
    let f = typical_probe();
    let n = f.insts.len();
    let programs = [lowered(f)];
    let mut times: Vec<std::time::Duration> = (0..10)
        .map(|_| {
            let start = std::time::Instant::now();
            let p = compile(&programs);
            let t = start.elapsed();
            MAP_VALUE.with(|v| unsafe { (*v.get())[1] = 0 });
            run_words(&p, 0, &mut [1, 2, 3, 4]);
            t
        })
        .collect();
    times.sort();
    eprintln!(
        "jit: a {n}-instruction probe compiles in {:?} (median of 10)",
        times[5]
    );
}
