//! Kernel tests of the data paths: ring-buffer events, BEGIN/END one-shot runs, and raw map
//! access from userspace.

mod kernel_support;

use std::time::{Duration, Instant};

use kernel_support::{Asm, map, my_pid, script, serial, target};
use sonde_compiler::bpf::insn::{AluOp, Helper, Insn, JmpOp, Reg, Size};
use sonde_compiler::program::{AttachSpec, MapKind};
use sonde_kernel::attach::{AttachOptions, attach_all};
use sonde_kernel::detach::detach_probes;
use sonde_kernel::load::load;
use sonde_kernel::syscall::BPF_ANY;
use sonde_kernel::trigger::{Trigger, run};

const R0: Reg = Reg::R0;
const R1: Reg = Reg::R1;
const R2: Reg = Reg::R2;
const R3: Reg = Reg::R3;
const R4: Reg = Reg::R4;
const R6: Reg = Reg::R6;
const R10: Reg = Reg::R10;

const MAGIC: i32 = 0x5344_4e4f;

/// Emits `ringbuf_output(events, {MAGIC, pid_tgid}, 16, 0)`.
fn output_magic_and_pid(a: &mut Asm) {
    a.push(Insn::st(Size::DW, R10, -16, MAGIC));
    a.push(Insn::call(Helper::GetCurrentPidTgid));
    a.push(Insn::stx(Size::DW, R10, -8, R0));
    a.ld_map(R1, "events");
    a.push(Insn::mov64_reg(R2, R10));
    a.push(Insn::add64_imm(R2, -16));
    a.push(Insn::mov64_imm(R3, 16));
    a.push(Insn::mov64_imm(R4, 0));
    a.push(Insn::call(Helper::RingbufOutput));
}

fn u64_at(b: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(b[8 * i..8 * i + 8].try_into().unwrap())
}

#[test]
fn ring_buffer_records_from_a_tracepoint() {
    let _serial = serial();
    let mut a = Asm::new();
    a.push(Insn::call(Helper::GetCurrentPidTgid));
    a.push(Insn::alu64_imm(AluOp::Rsh, R0, 32));
    a.jmp_imm(JmpOp::Ne, R0, my_pid(), "out");
    output_magic_and_pid(&mut a);
    a.label("out");
    a.ret0();
    let prog = a.finish("ev_tp", "tracepoint/syscalls/sys_enter_getppid");
    let spec = AttachSpec::Tracepoint {
        category: "syscalls".into(),
        name: "sys_enter_getppid".into(),
    };
    let s = script(
        vec![(prog, vec![target(spec)])],
        vec![map("events", MapKind::RingBuf, 0, 0, 1 << 16)],
    );
    let mut loaded =
        load(&s).unwrap_or_else(|e| panic!("{:?}\n{:?}", e.diagnostic, e.verifier_log));
    let mut reader = loaded.take_events("events").unwrap();
    attach_all(&mut loaded, &AttachOptions::default()).unwrap();
    for _ in 0..5 {
        unsafe { libc::getppid() };
    }
    detach_probes(&mut loaded);

    let mut records = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(2);
    while records.len() < 5 && Instant::now() < deadline {
        reader
            .poll(Duration::from_millis(100), &mut |r: &[u8]| {
                records.push(r.to_vec())
            })
            .unwrap();
    }
    assert_eq!(records.len(), 5);
    for r in &records {
        assert_eq!(r.len(), 16);
        assert_eq!(u64_at(r, 0), MAGIC as u64);
        assert_eq!(u64_at(r, 1) >> 32, my_pid() as u64);
    }
    // Nothing more arrives: a poll times out with no records.
    let started = Instant::now();
    let n = reader
        .poll(Duration::from_millis(50), &mut |_: &[u8]| {})
        .unwrap();
    assert_eq!(n, 0);
    assert!(started.elapsed() >= Duration::from_millis(45));
}

#[test]
fn begin_program_sends_events_and_reserved_records() {
    // BEGIN 1: ringbuf_output of {MAGIC, pid_tgid}.
    let mut a = Asm::new();
    output_magic_and_pid(&mut a);
    a.ret0();
    let out = a.finish("begin_out", "raw_tp/begin");
    // BEGIN 2: reserve 24 bytes, fill {7, 8, 9}, submit.
    let mut a = Asm::new();
    a.ld_map(R1, "events");
    a.push(Insn::mov64_imm(R2, 24));
    a.push(Insn::mov64_imm(R3, 0));
    a.push(Insn::call(Helper::RingbufReserve));
    a.jmp_imm(JmpOp::Eq, R0, 0, "out");
    a.push(Insn::mov64_reg(R6, R0));
    for (i, v) in [7, 8, 9].into_iter().enumerate() {
        a.push(Insn::st(Size::DW, R6, 8 * i as i16, v));
    }
    a.push(Insn::mov64_reg(R1, R6));
    a.push(Insn::mov64_imm(R2, 0));
    a.push(Insn::call(Helper::RingbufSubmit));
    a.label("out");
    a.ret0();
    let reserve = a.finish("begin_rsv", "raw_tp/begin");

    let s = script(
        vec![
            (out, vec![target(AttachSpec::Begin)]),
            (reserve, vec![target(AttachSpec::Begin)]),
        ],
        vec![map("events", MapKind::RingBuf, 0, 0, 1 << 16)],
    );
    let mut loaded =
        load(&s).unwrap_or_else(|e| panic!("{:?}\n{:?}", e.diagnostic, e.verifier_log));
    let mut reader = loaded.take_events("events").unwrap();
    assert_eq!(run(&loaded, Trigger::Begin).unwrap(), 2);
    assert_eq!(run(&loaded, Trigger::End).unwrap(), 0);
    let mut records = Vec::new();
    let n = reader
        .poll(Duration::from_secs(1), &mut |r: &[u8]| {
            records.push(r.to_vec())
        })
        .unwrap();
    assert_eq!(n, 2);
    assert_eq!(records[0].len(), 16);
    assert_eq!(u64_at(&records[0], 0), MAGIC as u64);
    // BEGIN runs in sonde's own task.
    assert_eq!(u64_at(&records[0], 1) >> 32, my_pid() as u64);
    assert_eq!(records[1].len(), 24);
    assert_eq!(
        [
            u64_at(&records[1], 0),
            u64_at(&records[1], 1),
            u64_at(&records[1], 2)
        ],
        [7, 8, 9]
    );
}

/// Emits `values[key] = tgid` into array map `values` (u32 key, u64 value).
fn store_tgid_at(a: &mut Asm, key: i32) {
    a.push(Insn::st(Size::W, R10, -4, key));
    a.push(Insn::call(Helper::GetCurrentPidTgid));
    a.push(Insn::alu64_imm(AluOp::Rsh, R0, 32));
    a.push(Insn::stx(Size::DW, R10, -16, R0));
    a.ld_map(R1, "values");
    a.push(Insn::mov64_reg(R2, R10));
    a.push(Insn::add64_imm(R2, -4));
    a.push(Insn::mov64_reg(R3, R10));
    a.push(Insn::add64_imm(R3, -16));
    a.push(Insn::mov64_imm(Reg::R4, 0));
    a.push(Insn::call(Helper::MapUpdateElem));
    a.ret0();
}

#[test]
fn begin_and_end_write_map_values() {
    let mut a = Asm::new();
    store_tgid_at(&mut a, 0);
    let begin = a.finish("begin", "raw_tp/begin");
    let mut a = Asm::new();
    store_tgid_at(&mut a, 1);
    let end = a.finish("end", "raw_tp/end");
    let s = script(
        vec![
            (begin, vec![target(AttachSpec::Begin)]),
            (end, vec![target(AttachSpec::End)]),
        ],
        vec![map("values", MapKind::Array, 4, 8, 2)],
    );
    let loaded = load(&s).unwrap_or_else(|e| panic!("{:?}\n{:?}", e.diagnostic, e.verifier_log));
    let values = loaded.raw_map("values").unwrap();
    let get = |k: u32| {
        u64::from_le_bytes(
            values.lookup(&k.to_le_bytes()).unwrap().unwrap()[..8]
                .try_into()
                .unwrap(),
        )
    };
    assert_eq!((get(0), get(1)), (0, 0));
    assert_eq!(run(&loaded, Trigger::Begin).unwrap(), 1);
    assert_eq!((get(0), get(1)), (my_pid() as u64, 0));
    assert_eq!(run(&loaded, Trigger::End).unwrap(), 1);
    assert_eq!((get(0), get(1)), (my_pid() as u64, my_pid() as u64));
}

#[test]
fn raw_map_operations() {
    let mut a = Asm::new();
    a.ld_map(R1, "h");
    a.ld_map(R1, "pa");
    a.ret0();
    let prog = a.finish("uses_maps", "raw_tp/begin");
    let s = script(
        vec![(prog, vec![target(AttachSpec::Begin)])],
        vec![
            map("h", MapKind::Hash, 4, 8, 16),
            map("pa", MapKind::PerCpuArray, 4, 12, 2),
        ],
    );
    let loaded = load(&s).unwrap_or_else(|e| panic!("{:?}\n{:?}", e.diagnostic, e.verifier_log));

    let h = loaded.raw_map("h").unwrap();
    assert_eq!((h.slots(), h.value_buf_len()), (1, 8));
    for k in 1u32..=3 {
        h.update(&k.to_le_bytes(), &(k as u64 * 10).to_le_bytes(), BPF_ANY)
            .unwrap();
    }
    let mut keys: Vec<u32> = h
        .keys()
        .unwrap()
        .iter()
        .map(|k| u32::from_le_bytes(k[..4].try_into().unwrap()))
        .collect();
    keys.sort();
    assert_eq!(keys, vec![1, 2, 3]);
    assert_eq!(
        h.lookup(&2u32.to_le_bytes()).unwrap(),
        Some(20u64.to_le_bytes().to_vec())
    );
    assert_eq!(h.lookup(&9u32.to_le_bytes()).unwrap(), None);
    assert!(h.delete(&2u32.to_le_bytes()).unwrap());
    assert!(!h.delete(&2u32.to_le_bytes()).unwrap());
    assert_eq!(h.entries().unwrap().len(), 2);
    h.zero().unwrap();
    let entries = h.entries().unwrap();
    assert_eq!(entries.len(), 2);
    assert!(entries.iter().all(|(_, v)| v == &vec![vec![0u8; 8]]));
    h.clear().unwrap();
    assert_eq!(h.keys().unwrap().len(), 0);
    assert!(h.lookup(&[0u8; 3]).is_err(), "wrong key size is refused");

    // Per-CPU array: 12-byte values padded to 16 per possible CPU.
    let pa = loaded.raw_map("pa").unwrap();
    let cpus = sonde_system::cpus::possible_cpus().unwrap();
    assert_eq!(
        (pa.slots(), pa.stride(), pa.value_buf_len()),
        (cpus, 16, 16 * cpus)
    );
    let v: Vec<u8> = (1..=12).collect();
    pa.update(&1u32.to_le_bytes(), &v, BPF_ANY).unwrap();
    let slots = pa.lookup_slots(&1u32.to_le_bytes()).unwrap().unwrap();
    assert_eq!(slots, vec![v.clone(); cpus]);
    pa.clear().unwrap(); // arrays cannot delete: values are zeroed
    let slots = pa.lookup_slots(&1u32.to_le_bytes()).unwrap().unwrap();
    assert_eq!(slots, vec![vec![0u8; 12]; cpus]);
}

#[test]
fn begin_runs_in_the_calling_thread() {
    // `comm` in a BEGIN program is the name of the thread that triggered it.
    let mut a = Asm::new();
    a.push(Insn::mov64_reg(R1, R10));
    a.push(Insn::add64_imm(R1, -16));
    a.push(Insn::mov64_imm(R2, 16));
    a.push(Insn::call(Helper::GetCurrentComm));
    a.ld_map(R1, "events");
    a.push(Insn::mov64_reg(R2, R10));
    a.push(Insn::add64_imm(R2, -16));
    a.push(Insn::mov64_imm(R3, 16));
    a.push(Insn::mov64_imm(R4, 0));
    a.push(Insn::call(Helper::RingbufOutput));
    a.ret0();
    let prog = a.finish("comm", "raw_tp/begin");
    let s = script(
        vec![(prog, vec![target(AttachSpec::Begin)])],
        vec![map("events", MapKind::RingBuf, 0, 0, 4096)],
    );
    let mut loaded =
        load(&s).unwrap_or_else(|e| panic!("{:?}\n{:?}", e.diagnostic, e.verifier_log));
    let mut reader = loaded.take_events("events").unwrap();
    run(&loaded, Trigger::Begin).unwrap();
    let mut comm = Vec::new();
    reader
        .poll(Duration::from_secs(1), &mut |r: &[u8]| comm = r.to_vec())
        .unwrap();
    let expected = std::fs::read_to_string("/proc/thread-self/comm").unwrap();
    let got = String::from_utf8_lossy(&comm[..comm.iter().position(|&b| b == 0).unwrap_or(16)])
        .into_owned();
    assert_eq!(got, expected.trim_end());
}

#[test]
fn cpu_v4_instructions_compute_what_the_compiler_expects() {
    // results[i] for: -7 s/ 2, -7 s% 2, (s8)0x80 as i64, bswap64(0x0102030405060708).
    let mut a = Asm::new();
    let store = |a: &mut Asm, key: i32| {
        a.push(Insn::stx(Size::DW, R10, -16, R0));
        a.push(Insn::st(Size::W, R10, -4, key));
        a.ld_map(R1, "values");
        a.push(Insn::mov64_reg(R2, R10));
        a.push(Insn::add64_imm(R2, -4));
        a.push(Insn::mov64_reg(R3, R10));
        a.push(Insn::add64_imm(R3, -16));
        a.push(Insn::mov64_imm(R4, 0));
        a.push(Insn::call(Helper::MapUpdateElem));
    };
    a.push(Insn::mov64_imm(R0, -7));
    a.push(Insn::alu64_imm(AluOp::SDiv, R0, 2));
    store(&mut a, 0);
    a.push(Insn::mov64_imm(R0, -7));
    a.push(Insn::alu64_imm(AluOp::SMod, R0, 2));
    store(&mut a, 1);
    a.push(Insn::mov64_imm(R6, 0x80));
    a.push(Insn::alu64_reg(AluOp::MovSx8, R0, R6));
    store(&mut a, 2);
    a.push2(Insn::ld_imm64(R0, 0x0102_0304_0506_0708));
    a.push(Insn::bswap(R0, 64));
    store(&mut a, 3);
    a.ret0();
    let prog = a.finish("v4", "raw_tp/begin");
    let s = script(
        vec![(prog, vec![target(AttachSpec::Begin)])],
        vec![map("values", MapKind::Array, 4, 8, 4)],
    );
    let loaded = load(&s).unwrap_or_else(|e| panic!("{:?}\n{:?}", e.diagnostic, e.verifier_log));
    run(&loaded, Trigger::Begin).unwrap();
    let values = loaded.raw_map("values").unwrap();
    let get = |k: u32| {
        let v = values.lookup(&k.to_le_bytes()).unwrap().unwrap();
        i64::from_le_bytes(v[..8].try_into().unwrap())
    };
    assert_eq!([get(0), get(1), get(2)], [-3, -1, -128]);
    assert_eq!(get(3) as u64, 0x0807_0605_0403_0201);
}
