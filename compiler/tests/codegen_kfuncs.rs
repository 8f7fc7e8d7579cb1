//! The BPF of calls that name kernel objects by their BTF id (the fixture kernel's ids):
//! `comm(pid)`'s kfunc calls, with the NULL check and the release the verifier requires,
//! and `percpu_kaddr()`'s typed ksym; and where each is refused.

mod common;

use common::compiled;
use sonde_compiler::bpf::disasm::disassemble;
use sonde_compiler::compile::Engine;

/// The disassembly of the first program of `src`.
fn bpf(src: &str) -> Vec<String> {
    let c = compiled(src, Engine::Bpf).unwrap_or_else(|code| panic!("{src}: {code}"));
    disassemble(&c.bpf[0][0].insns)
}

fn print(lines: &[String]) -> String {
    lines
        .iter()
        .map(|l| format!("        \"{l}\","))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `comm(pid)` as a map key: the task taken by pid (sign-extended `next_pid`), NULL-checked
/// at once, its comm (offset 4 in the fixture's `task_struct`) read into the key, the task
/// released on that path only (kept in r6 across the read); without a task, `N/A\0` stored
/// as one word (4271950) and the warning event (pid in its payload) sent; the map update's
/// failure counted, and its map-full event sent when the map is full (at most 11 times).
#[test]
fn comm_of_pid_takes_checks_reads_and_releases_the_task() {
    let got = bpf("tracepoint:sched:sched_switch { @[comm(args.next_pid)] = 1; }");
    let want = [
        "0: (61) r7 = *(u32 *)(r1 +56)",
        "1: (67) r7 <<= 32",
        "2: (c7) r7 s>>= 32",
        "3: (7a) *(u64 *)(r10 -16) = 0",
        "4: (7a) *(u64 *)(r10 -8) = 0",
        "5: (bf) r1 = r7",
        "6: (85) call kfunc#65900",
        "7: (bf) r6 = r0",
        "8: (15) if r0 == 0x0 goto pc+9",
        "9: (bf) r3 = r0",
        "10: (07) r3 += 4",
        "11: (bf) r1 = r10",
        "12: (07) r1 += -16",
        "13: (b7) r2 = 16",
        "14: (85) call bpf_probe_read_kernel#113",
        "15: (bf) r1 = r6",
        "16: (85) call kfunc#65910",
        "17: (05) goto pc+15",
        "18: (62) *(u32 *)(r10 -16) = 4271950",
        "19: (7a) *(u64 *)(r10 -32) = 0",
        "20: (7b) *(u64 *)(r10 -24) = r7",
        "21: (18) r1 = 0x0 ll",
        "23: (bf) r2 = r10",
        "24: (07) r2 += -32",
        "25: (b7) r3 = 16",
        "26: (b7) r4 = 0",
        "27: (85) call bpf_ringbuf_output#130",
        "28: (15) if r0 == 0x0 goto pc+4",
        "29: (18) r1 = 0x0 ll",
        "31: (b7) r2 = 1",
        "32: (db) lock *(u64 *)(r1 +0) += r2",
        "33: (7a) *(u64 *)(r10 -40) = 1",
        "34: (18) r1 = 0x0 ll",
        "36: (bf) r2 = r10",
        "37: (07) r2 += -16",
        "38: (bf) r3 = r10",
        "39: (07) r3 += -40",
        "40: (b7) r4 = 0",
        "41: (85) call bpf_map_update_elem#2",
        "42: (15) if r0 == 0x0 goto pc+27",
        // A full map (-E2BIG): while its place's word (at 40) counts fewer than 11, the
        // warning event (the place's id, 1, and -7) is sent, without waking the reader; the
        // failure is counted in any case.
        "43: (55) if r0 != 0xfffffff9 goto pc+22",
        "44: (18) r1 = 0x0 ll",
        "46: (79) r6 = *(u64 *)(r1 +40)",
        "47: (35) if r6 >= 0xb goto pc+18",
        "48: (18) r1 = 0x0 ll",
        "50: (b7) r2 = 1",
        "51: (db) lock *(u64 *)(r1 +40) += r2",
        "52: (7a) *(u64 *)(r10 -56) = 1",
        "53: (7a) *(u64 *)(r10 -48) = -7",
        "54: (18) r1 = 0x0 ll",
        "56: (bf) r2 = r10",
        "57: (07) r2 += -56",
        "58: (b7) r3 = 16",
        "59: (b7) r4 = 1",
        "60: (85) call bpf_ringbuf_output#130",
        "61: (15) if r0 == 0x0 goto pc+4",
        "62: (18) r1 = 0x0 ll",
        "64: (b7) r2 = 1",
        "65: (db) lock *(u64 *)(r1 +0) += r2",
        "66: (18) r1 = 0x0 ll",
        "68: (b7) r2 = 1",
        "69: (db) lock *(u64 *)(r1 +8) += r2",
        "70: (b7) r0 = 0",
        "71: (95) exit",
    ];
    assert_eq!(got, want, "got\n{}", print(&got));
    assert_eq!(u32::from_le_bytes(*b"N/A\0"), 4271950);
}

#[test]
fn percpu_kaddr_loads_the_typed_ksym_for_the_helper() {
    let got = bpf(
        r#"tracepoint:sched:sched_switch { @a = percpu_kaddr("runqueues"); @b = percpu_kaddr("runqueues", args.next_pid); }"#,
    );
    // Each helper call is preceded by the ksym's load into r1.
    for helper in ["call bpf_this_cpu_ptr#154", "call bpf_per_cpu_ptr#153"] {
        let i = got
            .iter()
            .position(|l| l.ends_with(helper))
            .unwrap_or_else(|| panic!("no {helper} in\n{}", print(&got)));
        assert!(
            got[i - 1].ends_with("r1 = ksym[btf:10671] ll"),
            "{helper}: {}",
            print(&got)
        );
    }
}

#[test]
fn refused_where_the_kernel_or_the_engine_cannot_run_them() {
    for (src, engine, code) in [
        // BEGIN is a raw tracepoint program: no kfuncs.
        (
            "BEGIN { print(comm(1)); }",
            Engine::Bpf,
            "sonde::compile::kfunc_program_type",
        ),
        (
            "BEGIN { print(comm(1)); }",
            Engine::Jit,
            "sonde::jit::kernel_only",
        ),
        (
            r#"BEGIN { print(percpu_kaddr("runqueues")); }"#,
            Engine::Jit,
            "sonde::jit::kernel_only",
        ),
        (
            r#"BEGIN { print(percpu_kaddr("runqueues", 1)); }"#,
            Engine::Jit,
            "sonde::jit::kernel_only",
        ),
        (
            r#"BEGIN { print(percpu_kaddr("nope")); }"#,
            Engine::Bpf,
            "sonde::sema::unknown_kernel_variable",
        ),
        (
            r#"BEGIN { print(percpu_kaddr("process_counts")); }"#,
            Engine::Bpf,
            "sonde::sema::unresolvable_kernel_variable",
        ),
    ] {
        assert_eq!(compiled(src, engine).err(), Some(code), "{src}");
    }
    // The script `tests/run_kfuncs.rs` runs on kernels whose kallsyms lists `runqueues`.
    let e2e = r#"interval:ms:50 { printf("%d %d %d %d %d\n", cpu, (uint64)percpu_kaddr("runqueues"), (uint64)percpu_kaddr("runqueues", cpu), (uint64)percpu_kaddr("runqueues", 0), (uint64)percpu_kaddr("runqueues", 1)); printf("%d\n", (uint64)percpu_kaddr("runqueues", 100000)); exit(); }"#;
    assert!(compiled(e2e, Engine::Bpf).is_ok());
    // percpu_kaddr calls helpers, which BEGIN may call.
    assert!(
        compiled(
            r#"BEGIN { print(percpu_kaddr("runqueues")); }"#,
            Engine::Bpf
        )
        .is_ok()
    );
}
