//! Kernel tests of attaching: tracepoint, raw tracepoint, perf event, uprobe and the kprobe
//! diagnostic, each counting only events of this process.

mod kernel_support;

use std::time::{Duration, Instant};

use kernel_support::{Asm, map, my_pid, script, serial, target};
use sonde_compiler::bpf::insn::{AluOp, Helper, Insn, JmpOp, Reg, Size};
use sonde_compiler::program::{AttachSpec, MapKind, PerfEventKind, PerfSample};
use sonde_kernel::attach::{AttachOptions, attach_all};
use sonde_kernel::detach::detach_probes;
use sonde_kernel::load::load;
use sonde_kernel::maps::sum_u64;

const R0: Reg = Reg::R0;
const R1: Reg = Reg::R1;
const R2: Reg = Reg::R2;
const R3: Reg = Reg::R3;
const R4: Reg = Reg::R4;
const R10: Reg = Reg::R10;

/// Emits: if the current tgid is not `pid`, return 0; then count one event in the per-CPU
/// hash `map` under key tgid (u64), creating the entry when absent.
fn count_by_tgid(a: &mut Asm, pid: i32, map: &str) {
    a.push(Insn::call(Helper::GetCurrentPidTgid));
    a.push(Insn::alu64_imm(AluOp::Rsh, R0, 32));
    a.jmp_imm(JmpOp::Ne, R0, pid, "out");
    a.push(Insn::stx(Size::DW, R10, -8, R0));
    a.push(Insn::mov64_reg(R2, R10));
    a.push(Insn::add64_imm(R2, -8));
    a.ld_map(R1, map);
    a.push(Insn::call(Helper::MapLookupElem));
    a.jmp_imm(JmpOp::Eq, R0, 0, "init");
    a.push(Insn::mov64_imm(R1, 1));
    a.push(Insn::atomic_add64(R0, 0, R1));
    a.ja("out");
    a.label("init");
    a.push(Insn::st(Size::DW, R10, -16, 1));
    a.ld_map(R1, map);
    a.push(Insn::mov64_reg(R2, R10));
    a.push(Insn::add64_imm(R2, -8));
    a.push(Insn::mov64_reg(R3, R10));
    a.push(Insn::add64_imm(R3, -16));
    a.push(Insn::mov64_imm(R4, 0));
    a.push(Insn::call(Helper::MapUpdateElem));
    a.label("out");
    a.ret0();
}

fn count_for_me(loaded: &sonde_kernel::load::Loaded, symbol: &str) -> u64 {
    let m = loaded.raw_map(symbol).unwrap();
    let key = (my_pid() as u64).to_le_bytes();
    m.lookup_slots(&key)
        .unwrap()
        .map_or(0, |slots| sum_u64(&slots))
}

#[test]
fn tracepoint_counts_exactly_my_getppid_calls() {
    let _serial = serial();
    let mut a = Asm::new();
    count_by_tgid(&mut a, my_pid(), "counts");
    let prog = a.finish("getppid", "tracepoint/syscalls/sys_enter_getppid");
    let spec = AttachSpec::Tracepoint {
        category: "syscalls".into(),
        name: "sys_enter_getppid".into(),
    };
    let s = script(
        vec![(prog, vec![target(spec)])],
        vec![map("counts", MapKind::PerCpuHash, 8, 8, 64)],
    );

    let started = Instant::now();
    let mut loaded =
        load(&s).unwrap_or_else(|e| panic!("{:?}\n{:?}", e.diagnostic, e.verifier_log));
    eprintln!("load() took {:?}", started.elapsed());
    assert_eq!(
        attach_all(&mut loaded, &AttachOptions::default()).unwrap(),
        1
    );
    for _ in 0..1000 {
        // SAFETY: getppid has no preconditions.
        unsafe { libc::getppid() };
    }
    detach_probes(&mut loaded);
    unsafe { libc::getppid() };
    assert_eq!(count_for_me(&loaded, "counts"), 1000);
}

#[test]
fn raw_tracepoint_sys_enter_counts_my_getppid_calls() {
    let _serial = serial();
    // ctx of raw_tp/sys_enter: [struct pt_regs *regs, long id].
    let mut a = Asm::new();
    a.push(Insn::ldx(Size::DW, R2, R1, 8));
    a.jmp_imm(JmpOp::Ne, R2, libc::SYS_getppid as i32, "skip");
    count_by_tgid(&mut a, my_pid(), "rcounts");
    a.label("skip");
    a.ret0();
    let prog = a.finish("rawgetppid", "raw_tp/sys_enter");
    let spec = AttachSpec::RawTracepoint {
        name: "sys_enter".into(),
    };
    let s = script(
        vec![(prog, vec![target(spec)])],
        vec![map("rcounts", MapKind::PerCpuHash, 8, 8, 64)],
    );
    let mut loaded =
        load(&s).unwrap_or_else(|e| panic!("{:?}\n{:?}", e.diagnostic, e.verifier_log));
    attach_all(&mut loaded, &AttachOptions::default()).unwrap();
    for _ in 0..1000 {
        unsafe { libc::syscall(libc::SYS_getppid) };
    }
    detach_probes(&mut loaded);
    assert_eq!(count_for_me(&loaded, "rcounts"), 1000);
}

#[test]
fn perf_event_cpu_clock_samples_while_spinning() {
    let mut a = Asm::new();
    count_by_tgid(&mut a, my_pid(), "samples");
    let prog = a.finish("profile", "perf_event");
    let spec = AttachSpec::PerfEvent {
        event: PerfEventKind::Software(0), // PERF_COUNT_SW_CPU_CLOCK
        sample: PerfSample::Frequency(499),
        all_cpus: true,
    };
    let s = script(
        vec![(prog, vec![target(spec)])],
        vec![map("samples", MapKind::PerCpuHash, 8, 8, 64)],
    );
    let mut loaded =
        load(&s).unwrap_or_else(|e| panic!("{:?}\n{:?}", e.diagnostic, e.verifier_log));
    attach_all(&mut loaded, &AttachOptions::default()).unwrap();
    let cpus = sonde_system::cpus::online_cpus().unwrap().len();
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut x = 0u64;
    while Instant::now() < deadline && count_for_me(&loaded, "samples") < 20 {
        for i in 0..100_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
    }
    detach_probes(&mut loaded);
    let n = count_for_me(&loaded, "samples");
    assert!(
        n >= 20,
        "only {n} samples on {cpus} CPUs in 3 s of spinning"
    );
}

#[test]
fn perf_event_on_one_cpu_attaches_once() {
    let mut a = Asm::new();
    a.ret0();
    let prog = a.finish("interval", "perf_event");
    let spec = AttachSpec::PerfEvent {
        event: PerfEventKind::Software(0),
        sample: PerfSample::Period(100_000_000),
        all_cpus: false,
    };
    let s = script(vec![(prog, vec![target(spec.clone())])], vec![]);
    let mut loaded = load(&s).unwrap();
    let program = loaded.programs()[0].clone();
    let n = sonde_kernel::attach::attach_target(
        &mut loaded,
        &program,
        &target(spec),
        &AttachOptions::default(),
    )
    .unwrap();
    assert_eq!(n, 1);
}

/// The uprobe target: a function of this test binary.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn sonde_test_uprobe_target(x: u64) -> u64 {
    std::hint::black_box(x.wrapping_mul(3))
}

#[test]
fn uprobe_on_own_function_counts_calls() {
    let mut a = Asm::new();
    count_by_tgid(&mut a, my_pid(), "ucounts");
    let prog = a.finish("uprobe_t", "uprobe");
    let exe = std::fs::read_link("/proc/self/exe").unwrap();
    let spec = AttachSpec::Uprobe {
        path: exe.to_string_lossy().into_owned(),
        symbol: Some("sonde_test_uprobe_target".into()),
        offset: 0,
        ret: false,

        ref_ctr_offset: 0,
    };
    let s = script(
        vec![(prog, vec![target(spec)])],
        vec![map("ucounts", MapKind::PerCpuHash, 8, 8, 64)],
    );
    let mut loaded =
        load(&s).unwrap_or_else(|e| panic!("{:?}\n{:?}", e.diagnostic, e.verifier_log));
    let options = AttachOptions {
        pid: Some(std::process::id()),
        ..AttachOptions::default()
    };
    attach_all(&mut loaded, &options).unwrap();
    for i in 0..50 {
        std::hint::black_box(sonde_test_uprobe_target(std::hint::black_box(i)));
    }
    detach_probes(&mut loaded);
    std::hint::black_box(sonde_test_uprobe_target(1));
    assert_eq!(count_for_me(&loaded, "ucounts"), 50);
}

#[test]
fn kprobe_attach_reaches_the_kernel_and_becomes_a_diagnostic() {
    let mut a = Asm::new();
    a.ret0();
    let prog = a.finish("kp", "kprobe");
    let spec = AttachSpec::Kprobe {
        function: "tcp_set_state".into(),
        offset: 0,
        ret: false,
    };
    let s = script(vec![(prog, vec![target(spec)])], vec![]);
    // BPF_PROG_TYPE_KPROBE programs load (uprobes use the same type); attaching fails.
    let mut loaded = load(&s).unwrap();
    let d = attach_all(&mut loaded, &AttachOptions::default()).unwrap_err();
    if std::path::Path::new("/sys/bus/event_source/devices/kprobe/type").exists() {
        // A kernel with kprobes: the attach must have worked instead.
        panic!("kprobes exist here, yet attach failed: {d:?}");
    }
    assert_eq!(d.code, "sonde::attach::kprobe_unavailable");
    assert_eq!(d.span, sonde_lang::span::Span::new(1000, 1010));
    assert_eq!(
        d.help.as_deref(),
        Some("use `tracepoint:sock:inet_sock_set_state` instead; it serves the same purpose")
    );
}

#[test]
fn fentry_load_failure_becomes_a_diagnostic() {
    let mut a = Asm::new();
    a.ret0();
    let prog = a.finish("fe", "fentry/tcp_v4_connect");
    let spec = AttachSpec::Fentry {
        function: "tcp_v4_connect".into(),
        ret: false,
    };
    let s = script(vec![(prog, vec![target(spec)])], vec![]);
    let err = load(&s).unwrap_err();
    assert_eq!(err.diagnostic.code, "sonde::attach::fentry_unavailable");
    assert_eq!(err.diagnostic.span, sonde_lang::span::Span::new(1000, 1010));
    assert_eq!(
        err.diagnostic.help.as_deref(),
        Some("use `tracepoint:sock:inet_sock_set_state` instead; it serves the same purpose")
    );
}
