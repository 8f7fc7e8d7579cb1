//! The BPF that small scripts compile to, whole (issue 16): each case is the instruction
//! sequence the optimisations leave, checked by eye once. A change that makes one longer
//! shows here as a diff of instructions.

mod common;

use common::compiled;
use sonde_compiler::bpf::disasm::disassemble;
use sonde_compiler::compile::Engine;

/// The disassembly of the first program of `src`.
fn bpf(src: &str) -> Vec<String> {
    disassemble(&functions(src)[0].insns)
}

/// The first program of `src` and its functions, as emitted.
fn functions(src: &str) -> Vec<sonde_compiler::codegen::emit::Emitted> {
    let compiled = compiled(src, Engine::Bpf).unwrap_or_else(|code| panic!("{src}: {code}"));
    compiled.bpf[0].clone()
}

fn assert_bpf(src: &str, want: &[&str]) {
    let got = bpf(src);
    assert_eq!(
        got,
        want,
        "{src}: got\n{}",
        got.iter()
            .map(|l| format!("        \"{l}\","))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// A count: one lookup; present, the value is incremented in place; missing, the first value
/// is built on the stack and inserted by one update (before: inserted as 0, looked up again,
/// then incremented). A failed insert adds to the map-full counter through the counters'
/// address (before: a lookup of the counters array) and, when the map is full (-E2BIG),
/// sends its warning event (the place's id, 0, and -7) while the place's word (at 40)
/// counts fewer than 11. The key is stored as an immediate
/// (before: zeroed, then written from a register).
#[test]
fn count_looks_up_once_and_inserts_its_first_value() {
    assert_bpf(
        "BEGIN { @[1] = count(); }",
        &[
            "0: (7a) *(u64 *)(r10 -8) = 1",
            "1: (18) r1 = 0x0 ll",
            "3: (bf) r2 = r10",
            "4: (07) r2 += -8",
            "5: (85) call bpf_map_lookup_elem#1",
            "6: (15) if r0 == 0x0 goto pc+4",
            "7: (79) r7 = *(u64 *)(r0 +0)",
            "8: (07) r7 += 1",
            "9: (7b) *(u64 *)(r0 +0) = r7",
            "10: (05) goto pc+37",
            "11: (7a) *(u64 *)(r10 -16) = 1",
            "12: (18) r1 = 0x0 ll",
            "14: (bf) r2 = r10",
            "15: (07) r2 += -8",
            "16: (bf) r3 = r10",
            "17: (07) r3 += -16",
            "18: (b7) r4 = 0",
            "19: (85) call bpf_map_update_elem#2",
            "20: (15) if r0 == 0x0 goto pc+27",
            "21: (55) if r0 != 0xfffffff9 goto pc+22",
            "22: (18) r1 = 0x0 ll",
            "24: (79) r6 = *(u64 *)(r1 +40)",
            "25: (35) if r6 >= 0xb goto pc+18",
            "26: (18) r1 = 0x0 ll",
            "28: (b7) r2 = 1",
            "29: (db) lock *(u64 *)(r1 +40) += r2",
            "30: (7a) *(u64 *)(r10 -32) = 0",
            "31: (7a) *(u64 *)(r10 -24) = -7",
            "32: (18) r1 = 0x0 ll",
            "34: (bf) r2 = r10",
            "35: (07) r2 += -32",
            "36: (b7) r3 = 16",
            "37: (b7) r4 = 1",
            "38: (85) call bpf_ringbuf_output#130",
            "39: (15) if r0 == 0x0 goto pc+4",
            "40: (18) r1 = 0x0 ll",
            "42: (b7) r2 = 1",
            "43: (db) lock *(u64 *)(r1 +0) += r2",
            "44: (18) r1 = 0x0 ll",
            "46: (b7) r2 = 1",
            "47: (db) lock *(u64 *)(r1 +8) += r2",
            "48: (b7) r0 = 0",
            "49: (95) exit",
        ],
    );
}

/// `sum(1)` under an `if` on the pid: the constant is an immediate of the add and of the
/// comparison (before: moved to a register first).
#[test]
fn constants_are_immediates() {
    assert_bpf(
        "BEGIN { if (pid > 1) { @s = sum(1); } }",
        &[
            "0: (85) call bpf_get_current_pid_tgid#14",
            "1: (bf) r7 = r0",
            "2: (77) r7 >>= 32",
            "3: (b5) if r7 <= 0x1 goto pc+48",
            "4: (7a) *(u64 *)(r10 -8) = 0",
            "5: (18) r1 = 0x0 ll",
            "7: (bf) r2 = r10",
            "8: (07) r2 += -8",
            "9: (85) call bpf_map_lookup_elem#1",
            "10: (15) if r0 == 0x0 goto pc+4",
            "11: (79) r7 = *(u64 *)(r0 +0)",
            "12: (07) r7 += 1",
            "13: (7b) *(u64 *)(r0 +0) = r7",
            "14: (05) goto pc+37",
            "15: (7a) *(u64 *)(r10 -16) = 1",
            "16: (18) r1 = 0x0 ll",
            "18: (bf) r2 = r10",
            "19: (07) r2 += -8",
            "20: (bf) r3 = r10",
            "21: (07) r3 += -16",
            "22: (b7) r4 = 0",
            "23: (85) call bpf_map_update_elem#2",
            "24: (15) if r0 == 0x0 goto pc+27",
            "25: (55) if r0 != 0xfffffff9 goto pc+22",
            "26: (18) r1 = 0x0 ll",
            "28: (79) r6 = *(u64 *)(r1 +40)",
            "29: (35) if r6 >= 0xb goto pc+18",
            "30: (18) r1 = 0x0 ll",
            "32: (b7) r2 = 1",
            "33: (db) lock *(u64 *)(r1 +40) += r2",
            "34: (7a) *(u64 *)(r10 -32) = 0",
            "35: (7a) *(u64 *)(r10 -24) = -7",
            "36: (18) r1 = 0x0 ll",
            "38: (bf) r2 = r10",
            "39: (07) r2 += -32",
            "40: (b7) r3 = 16",
            "41: (b7) r4 = 1",
            "42: (85) call bpf_ringbuf_output#130",
            "43: (15) if r0 == 0x0 goto pc+4",
            "44: (18) r1 = 0x0 ll",
            "46: (b7) r2 = 1",
            "47: (db) lock *(u64 *)(r1 +0) += r2",
            "48: (18) r1 = 0x0 ll",
            "50: (b7) r2 = 1",
            "51: (db) lock *(u64 *)(r1 +8) += r2",
            "52: (b7) r0 = 0",
            "53: (95) exit",
        ],
    );
}

/// `hist`: the bucket computed and clamped (for the verifier) before the lookup, once for
/// both the present and the missing key; with no sub-buckets the index is `log2 + 2`. The value
/// is added to the sum after the buckets (`+520`: 65 buckets).
#[test]
fn hist_computes_and_clamps_its_bucket_once() {
    assert_bpf(
        "BEGIN { @h = hist(pid); }",
        &[
            "0: (7a) *(u64 *)(r10 -8) = 0",
            "1: (85) call bpf_get_current_pid_tgid#14",
            "2: (bf) r6 = r0",
            "3: (77) r6 >>= 32",
            "4: (b7) r7 = 0",
            "5: (c5) if r6 s< 0x0 goto pc+27",
            "6: (35) if r6 >= 0x1 goto pc+3",
            "7: (bf) r7 = r6",
            "8: (07) r7 += 1",
            "9: (05) goto pc+23",
            "10: (bf) r8 = r6",
            "11: (b7) r9 = 0",
            "12: (18) r2 = 0x100000000 ll",
            "14: (ad) if r6 < r2 goto pc+2",
            "15: (77) r8 >>= 32",
            "16: (b7) r9 = 32",
            "17: (a5) if r8 < 0x10000 goto pc+2",
            "18: (77) r8 >>= 16",
            "19: (07) r9 += 16",
            "20: (a5) if r8 < 0x100 goto pc+2",
            "21: (77) r8 >>= 8",
            "22: (07) r9 += 8",
            "23: (a5) if r8 < 0x10 goto pc+2",
            "24: (77) r8 >>= 4",
            "25: (07) r9 += 4",
            "26: (a5) if r8 < 0x4 goto pc+2",
            "27: (77) r8 >>= 2",
            "28: (07) r9 += 2",
            "29: (a5) if r8 < 0x2 goto pc+1",
            "30: (07) r9 += 1",
            "31: (bf) r7 = r9",
            "32: (07) r7 += 2",
            "33: (b5) if r7 <= 0x40 goto pc+1",
            "34: (b7) r7 = 64",
            "35: (18) r1 = 0x0 ll",
            "37: (bf) r2 = r10",
            "38: (07) r2 += -8",
            "39: (85) call bpf_map_lookup_elem#1",
            "40: (15) if r0 == 0x0 goto pc+9",
            "41: (67) r7 <<= 3",
            "42: (bf) r9 = r0",
            "43: (0f) r9 += r7",
            "44: (79) r7 = *(u64 *)(r9 +0)",
            "45: (07) r7 += 1",
            "46: (7b) *(u64 *)(r9 +0) = r7",
            "47: (79) r7 = *(u64 *)(r0 +520)",
            "48: (0f) r7 += r6",
            "49: (7b) *(u64 *)(r0 +520) = r7",
            "50: (b7) r0 = 0",
            "51: (95) exit",
        ],
    );
}

/// The number of map lookups in the first program of `src`.
fn lookups(src: &str) -> usize {
    bpf(src)
        .iter()
        .filter(|l| l.contains("call bpf_map_lookup_elem"))
        .count()
}

/// A map element read by the filter and again by the body is looked up once (the enter/exit
/// latency pattern); a write to the map, or a key that may change, makes the next read look
/// up again.
#[test]
fn a_map_element_read_twice_is_looked_up_once_until_written() {
    let with = |probe: &str| format!("{probe} END {{ @s[tid] = 1; }}");
    // Filter, body, delete: one lookup of @s (the other is the histogram's array).
    assert_eq!(
        lookups(&with(
            "BEGIN /@s[tid]/ { @h = hist(nsecs - @s[tid]); delete(@s[tid]); }"
        )),
        2
    );
    assert_eq!(
        lookups(&with(
            "BEGIN /@s[tid]/ { printf(\"%d %d\\n\", @s[tid], @s[tid]); }"
        )),
        1
    );
    // Written in between: looked up again.
    assert_eq!(
        lookups(&with(
            "BEGIN /@s[tid]/ { @s[tid] = 5; printf(\"%d\\n\", @s[tid]); }"
        )),
        2
    );
    // Another key, or a key that may change: looked up again.
    assert_eq!(
        lookups(&with(
            "BEGIN /@s[tid]/ { printf(\"%d %d\\n\", @s[pid], @s[nsecs]); }"
        )),
        3
    );
}

/// The number of `bpf_get_current_pid_tgid` calls in the first program of `src`.
fn pid_calls(src: &str) -> usize {
    bpf(src)
        .iter()
        .filter(|l| l.contains("call bpf_get_current_pid_tgid"))
        .count()
}

/// `pid` is computed once per event, also across the labels aggregations and `if` place
/// (before, a label no jump reached forgot it: the 50-statement probe called the helper 50
/// times); a loop body run by `bpf_loop` is a function of its own and computes it again
/// (before, it used the outer function's register, which it does not have).
#[test]
fn per_event_builtins_are_computed_once() {
    assert_eq!(
        pid_calls(
            "BEGIN { @m0[0] = count(); if (pid > 0) { @s0 = sum(0); } \
             @m1[1] = count(); if (pid > 1) { @s1 = sum(1); } }"
        ),
        1
    );
    assert_eq!(
        pid_calls("BEGIN { @a = pid; while (@a < 5) { @a = pid + 1; } }"),
        2
    );
    let program = "BEGIN { @n = 5; @a = pid; for ($i : 0..@n) { @b = pid; } @c = pid; }";
    assert_eq!(pid_calls(program), 1);
}

/// Two aggregations insert their first values through one function the program calls (a
/// BPF-to-BPF call: the map, key and value pointers in r1–r3, the place's map-full event id
/// in r4), instead of each repeating the update's fourth argument, its result test, the
/// map-full counter and warning (a single one keeps the code inline, as in the count
/// above). The second
/// statement's key and value reuse the first one's stack (16 bytes, not 32).
#[test]
fn inserts_share_one_function_and_statements_share_stack() {
    let src = "BEGIN { @[1] = count(); @b[2] = sum(5); }";
    let f = functions(src);
    assert_eq!(f.len(), 2, "the program and its insert function");
    assert_eq!(f[0].stack, 16);
    let main = disassemble(&f[0].insns);
    let calls: Vec<&String> = main.iter().filter(|l| l.contains("call pc")).collect();
    assert_eq!(calls.len(), 2, "{main:#?}");
    assert!(
        main.iter().any(|l| l.ends_with("*(u64 *)(r10 -8) = 2")),
        "the second key is where the first was: {main:#?}"
    );
    assert_eq!(
        disassemble(&f[1].insns),
        [
            // The place (its event id × 128 + its word's index), read only when the map is
            // full, is kept on the stack.
            "0: (7b) *(u64 *)(r10 -24) = r4",
            "1: (b7) r4 = 0",
            "2: (85) call bpf_map_update_elem#2",
            "3: (15) if r0 == 0x0 goto pc+31",
            "4: (55) if r0 != 0xfffffff9 goto pc+26",
            "5: (79) r6 = *(u64 *)(r10 -24)",
            "6: (57) r6 &= 127",
            "7: (67) r6 <<= 3",
            "8: (18) r7 = 0x0 ll",
            "10: (0f) r7 += r6",
            "11: (79) r6 = *(u64 *)(r10 -24)",
            "12: (77) r6 >>= 7",
            "13: (79) r8 = *(u64 *)(r7 +40)",
            "14: (35) if r8 >= 0xb goto pc+16",
            "15: (b7) r2 = 1",
            "16: (db) lock *(u64 *)(r7 +40) += r2",
            "17: (7b) *(u64 *)(r10 -16) = r6",
            "18: (7a) *(u64 *)(r10 -8) = -7",
            "19: (18) r1 = 0x0 ll",
            "21: (bf) r2 = r10",
            "22: (07) r2 += -16",
            "23: (b7) r3 = 16",
            "24: (b7) r4 = 1",
            "25: (85) call bpf_ringbuf_output#130",
            "26: (15) if r0 == 0x0 goto pc+4",
            "27: (18) r1 = 0x0 ll",
            "29: (b7) r2 = 1",
            "30: (db) lock *(u64 *)(r1 +0) += r2",
            "31: (18) r1 = 0x0 ll",
            "33: (b7) r2 = 1",
            "34: (db) lock *(u64 *)(r1 +8) += r2",
            "35: (b7) r0 = 0",
            "36: (95) exit",
        ]
    );
}

/// An address inside a stack slot passed to a helper (`ntop`'s buffer after its family
/// word): one offset from `r10` (before: the slot's offset, then a second add of 8). The
/// emitter's output, peephole included: the address and the context are made in the
/// argument registers (before: in r7 and r6, then moved).
#[test]
fn an_address_inside_a_stack_slot_is_one_offset() {
    use sonde_compiler::ir::{Function, Inst, Intrinsic, Operand};
    use sonde_lang::span::Span;
    let mut f = Function::new("t");
    let ctx = f.vreg();
    f.params = vec![ctx];
    f.ctx = Some(ctx);
    let slot = f.slot(24);
    let (base, inner) = (f.vreg(), f.vreg());
    let at = Span::default();
    f.push(Inst::SlotAddr { dst: base, slot }, at);
    f.push(
        Inst::Alu {
            op: sonde_compiler::ir::AluOp::Add,
            dst: inner,
            lhs: base,
            rhs: Operand::Imm(8),
        },
        at,
    );
    f.push(
        Inst::Call {
            dst: None,
            func: Intrinsic::ProbeReadKernel,
            args: vec![Operand::Reg(inner), Operand::Imm(4), Operand::Reg(ctx)],
        },
        at,
    );
    f.push(
        Inst::Return {
            value: Operand::Imm(0),
        },
        at,
    );
    let e = sonde_compiler::codegen::emit::emit(&f).expect("emits");
    assert_eq!(
        disassemble(&e.insns),
        [
            "0: (bf) r3 = r1",
            "1: (bf) r1 = r10",
            "2: (07) r1 += -16",
            "3: (b7) r2 = 4",
            "4: (85) call bpf_probe_read_kernel#113",
            "5: (b7) r0 = 0",
            "6: (95) exit",
        ]
    );
}

/// `printf` of `comm` and `str(ptr)`: the event's buffer (88 bytes, on the stack; before, in
/// the per-CPU scratch map, looked up first) is zeroed, then each string is read straight
/// into its field — no buffer of its own, no copy (before: 2 more calls, zeroing and
/// copying); the buffer has 8 bytes more for the cut mark of the last field's `str` read.
/// (At `max_strlen = 64`: the default, 1024, puts the event in the scratch map.)
#[test]
fn printf_strings_are_read_into_the_event() {
    let got =
        bpf(r#"config = { max_strlen = 64 } BEGIN { printf("%s %s\n", comm, str((uint8 *)0)); }"#);
    let calls: Vec<&str> = got.iter().filter_map(|l| l.split("call ").nth(1)).collect();
    assert_eq!(
        calls,
        [
            "bpf_probe_read_kernel#113",
            "bpf_get_current_comm#16",
            "bpf_probe_read_str#45",
            "bpf_ringbuf_output#130",
        ],
        "{got:#?}"
    );
    // The event is 8 + 16 + 64 bytes; its zeroed buffer 8 more.
    assert!(got.iter().any(|l| l.ends_with("r2 = 96")), "{got:#?}");
    assert!(got.iter().any(|l| l.ends_with("r3 = 88")), "{got:#?}");
}

/// `probe` in a printf: a string known when compiling, its characters stored as immediates
/// into the zeroed event (136 bytes, on the stack) at any alignment (before: all 16 words of
/// a buffer of its own, then a copy; then its words, in an 8-aligned field only); elsewhere
/// (a map key) its buffer is zeroed by one call, then the name's words stored.
#[test]
fn probe_names_store_only_their_characters() {
    let got = bpf(r#"BEGIN { printf("%s\n", probe); }"#);
    let calls: Vec<&str> = got.iter().filter_map(|l| l.split("call ").nth(1)).collect();
    assert_eq!(
        calls,
        ["bpf_probe_read_kernel#113", "bpf_ringbuf_output#130",],
        "{got:#?}"
    );
    // "BEGIN": 4 bytes and 1.
    let stores: Vec<&str> = got
        .iter()
        .filter(|l| l.contains(") *(u"))
        .filter_map(|l| l.split_once(") ").map(|x| x.1))
        .collect();
    assert_eq!(
        stores,
        [
            "*(u64 *)(r10 -136) = 0",
            "*(u32 *)(r10 -128) = 1229407554", // "BEGI"
            "*(u8 *)(r10 -124) = 78",
        ],
        "the event id, the name: {got:#?}"
    );
    let key = bpf(r#"BEGIN { @[probe] = count(); }"#);
    let zeroed = key.iter().filter(|l| l.ends_with("r2 = 128")).count();
    assert_eq!(zeroed, 1, "{key:#?}");
}

/// A string compared with a literal: each byte against an immediate, branching on each, up
/// to the literal's NUL (before: the literal stored on the stack, two loads and two tests a
/// byte, and a flag tested at the end).
#[test]
fn a_string_compared_with_a_literal_branches_on_immediates() {
    let got = bpf(r#"BEGIN { if (comm == "ab") { @x = 1; } }"#);
    let tests: Vec<&str> = got
        .iter()
        .filter(|l| l.contains(") if "))
        .filter_map(|l| l.split(") ").nth(1))
        .collect();
    assert_eq!(
        &tests[..3],
        [
            "if r6 != 0x61 goto pc+42",
            "if r6 != 0x62 goto pc+40",
            "if r6 != 0x0 goto pc+38",
        ],
        "{got:#?}"
    );
    let loads = got.iter().filter(|l| l.contains("= *(u8 *)(r10")).count();
    assert_eq!(loads, 3, "{got:#?}");
}

/// Two events sent by one probe go through one function (the event's address and size in
/// r2 and r3, r1 a placeholder the function loads the ring buffer into) instead of each
/// repeating the helper's other arguments, its result test and the lost-event counter.
#[test]
fn outputs_share_one_function() {
    let f = functions(r#"BEGIN { printf("a\n"); printf("b %d\n", 1); }"#);
    assert_eq!(f.len(), 2, "the program and its output function");
    let main = disassemble(&f[0].insns);
    assert_eq!(
        main.iter().filter(|l| l.contains("call pc")).count(),
        2,
        "{main:#?}"
    );
    assert_eq!(
        disassemble(&f[1].insns),
        [
            "0: (18) r1 = 0x0 ll",
            "2: (b7) r4 = 0",
            "3: (85) call bpf_ringbuf_output#130",
            "4: (15) if r0 == 0x0 goto pc+4",
            "5: (18) r1 = 0x0 ll",
            "7: (b7) r2 = 1",
            "8: (db) lock *(u64 *)(r1 +0) += r2",
            "9: (b7) r0 = 0",
            "10: (95) exit",
        ]
    );
}

/// The lines of `got` that call a helper or function, by what they call.
fn calls(got: &[String]) -> Vec<&str> {
    got.iter().filter_map(|l| l.split("call ").nth(1)).collect()
}

/// A tuple key of `comm` and a context array: the key's buffer is the destination of both
/// reads — `bpf_get_current_comm` and one `bpf_probe_read_kernel` write straight into their
/// fields — and only the padding after the array is zeroed (before: each read into a buffer
/// of its own, the key zeroed whole, then copied field by field: 54 instructions, now 40).
#[test]
fn tuple_keys_are_read_into_their_fields() {
    assert_bpf(
        "tracepoint:block:block_rq_issue { @[comm, args->rwbs] = sum(args->bytes / 1024); }",
        &[
            "0: (bf) r6 = r1",
            "1: (bf) r1 = r10",
            "2: (07) r1 += -32",
            "3: (b7) r2 = 16",
            "4: (85) call bpf_get_current_comm#16",
            "5: (7a) *(u64 *)(r10 -8) = 0",
            "6: (bf) r3 = r6",
            "7: (07) r3 += 34",
            "8: (bf) r1 = r10",
            "9: (07) r1 += -16",
            "10: (b7) r2 = 10",
            "11: (85) call bpf_probe_read_kernel#113",
            "12: (61) r7 = *(u32 *)(r6 +28)",
            "13: (77) r7 >>= 10",
            "14: (18) r1 = 0x0 ll",
            "16: (bf) r2 = r10",
            "17: (07) r2 += -32",
            "18: (85) call bpf_map_lookup_elem#1",
            "19: (15) if r0 == 0x0 goto pc+4",
            "20: (79) r8 = *(u64 *)(r0 +0)",
            "21: (0f) r8 += r7",
            "22: (7b) *(u64 *)(r0 +0) = r8",
            "23: (05) goto pc+37",
            "24: (7b) *(u64 *)(r10 -40) = r7",
            "25: (18) r1 = 0x0 ll",
            "27: (bf) r2 = r10",
            "28: (07) r2 += -32",
            "29: (bf) r3 = r10",
            "30: (07) r3 += -40",
            "31: (b7) r4 = 0",
            "32: (85) call bpf_map_update_elem#2",
            "33: (15) if r0 == 0x0 goto pc+27",
            "34: (55) if r0 != 0xfffffff9 goto pc+22",
            "35: (18) r1 = 0x0 ll",
            "37: (79) r6 = *(u64 *)(r1 +40)",
            "38: (35) if r6 >= 0xb goto pc+18",
            "39: (18) r1 = 0x0 ll",
            "41: (b7) r2 = 1",
            "42: (db) lock *(u64 *)(r1 +40) += r2",
            "43: (7a) *(u64 *)(r10 -56) = 0",
            "44: (7a) *(u64 *)(r10 -48) = -7",
            "45: (18) r1 = 0x0 ll",
            "47: (bf) r2 = r10",
            "48: (07) r2 += -56",
            "49: (b7) r3 = 16",
            "50: (b7) r4 = 1",
            "51: (85) call bpf_ringbuf_output#130",
            "52: (15) if r0 == 0x0 goto pc+4",
            "53: (18) r1 = 0x0 ll",
            "55: (b7) r2 = 1",
            "56: (db) lock *(u64 *)(r1 +0) += r2",
            "57: (18) r1 = 0x0 ll",
            "59: (b7) r2 = 1",
            "60: (db) lock *(u64 *)(r1 +8) += r2",
            "61: (b7) r0 = 0",
            "62: (95) exit",
        ],
    );
}

/// One key of per-event values or probe arguments for every map access of a probe: the
/// filter's `@s[tid]` key is the assignment's and the deletes' (before: built again for each,
/// from `tid` reloaded); `pid` and `tid` share one `bpf_get_current_pid_tgid`.
#[test]
fn a_key_of_tid_is_built_once_per_probe() {
    let got = bpf("tracepoint:syscalls:sys_exit_openat /@s[tid]/ \
         { @t[tid] = pid; delete(@s[tid]); delete(@t[tid]); } END { @s[1] = 1; }");
    assert_eq!(
        calls(&got),
        [
            "bpf_get_current_pid_tgid#14",
            "bpf_map_lookup_elem#1",
            "bpf_map_update_elem#2",
            // A full map's warning.
            "bpf_ringbuf_output#130",
            "bpf_map_delete_elem#3",
            "bpf_map_delete_elem#3",
        ],
        "{got:#?}"
    );
    let key_stores = got
        .iter()
        .filter(|l| l.contains("*(u64 *)(r10 -8) ="))
        .count();
    assert_eq!(key_stores, 1, "{got:#?}");
    // The same for two context fields, and a read of one of them.
    let got = bpf(
        "tracepoint:block:block_rq_issue /@s[args->dev, args->sector]/ \
         { @t = args->sector - @s[args->dev, args->sector]; delete(@s[args->dev, args->sector]); } \
         END { @s[1, 2] = 1; }",
    );
    let lookups = calls(&got).iter().filter(|c| c.contains("lookup")).count();
    assert_eq!(lookups, 1, "the filter's read is the body's: {got:#?}");
    let sector_loads = got.iter().filter(|l| l.contains("+16)")).count();
    assert_eq!(sector_loads, 1, "args->sector read once: {got:#?}");
}

/// A key of a variable written once is built once; a variable written twice (or in a loop)
/// has its key built at each use, from its value then.
#[test]
fn a_key_of_a_variable_written_once_is_built_once() {
    let once = bpf("BEGIN { $k = nsecs; @a[$k] = 1; @b[$k] = 2; delete(@a[$k]); }");
    let stores = |got: &[String]| {
        got.iter()
            .filter(|l| l.contains(") *(u64 *)(r10 -8) ="))
            .count()
    };
    assert_eq!(stores(&once), 1, "{once:#?}");
    let twice = bpf("BEGIN { $k = nsecs; @a[$k] = 1; $k = 2; @b[$k] = 2; }");
    assert!(twice.iter().any(|l| l.ends_with("= 2")), "{twice:#?}");
    let keys: Vec<&String> = twice
        .iter()
        .filter(|l| l.contains("*(u64 *)(r10 -"))
        .collect();
    assert!(keys.len() >= 3, "two keys and a value: {twice:#?}");
    let looped = bpf("BEGIN { $k = 0; unroll(2) { @a[$k] = 1; $k = 1; } }");
    let inserts = calls(&looped)
        .iter()
        .filter(|c| c.starts_with("pc"))
        .count();
    assert_eq!(inserts, 2, "{looped:#?}");
    assert!(
        looped
            .iter()
            .any(|l| l.ends_with(") = 1") && l.contains("r10")),
        "{looped:#?}"
    );
}

/// A histogram's first value for a key (520 bytes of buckets) is inserted from the zero area
/// after the counters, looked up again and updated in place by the same code as a present
/// key's (before: the per-CPU scratch buffer looked up, zeroed by a call, the update emitted
/// a second time on it, then inserted: readsize.sd's probe 86 → 73 instructions).
#[test]
fn a_large_first_value_is_inserted_from_the_zero_area() {
    let got = bpf("tracepoint:syscalls:sys_exit_openat { @h[comm] = hist(args->ret); }");
    assert_eq!(
        calls(&got),
        [
            "bpf_get_current_comm#16",
            "bpf_map_lookup_elem#1",
            "bpf_map_update_elem#2",
            // A full map's warning.
            "bpf_ringbuf_output#130",
            "bpf_map_lookup_elem#1",
        ],
        "{got:#?}"
    );
    let zeros = format!("r3 += {}", sonde_compiler::program::COUNTERS_AREA_BYTES);
    assert!(
        got.iter().any(|l| l.ends_with(&zeros)),
        "after the counters, the exit word and the map-full places: {got:#?}"
    );
    let updates = got
        .iter()
        .filter(|l| l.contains(") *(u64 *)(r") && !l.contains("(r10 "))
        .count();
    assert_eq!(updates, 2, "one bucket update, and the sum: {got:#?}");
}

/// Each place of a map update has its own word counting its map-full warnings, numbered
/// script-wide after the counters and the exit word (at 40): BEGIN's insert reads the word
/// at 40, END's the one at 48, and both stop after 11 warnings.
#[test]
fn each_insert_place_counts_its_warnings_in_its_own_word() {
    let compiled = compiled("BEGIN { @a[1] = 1; } END { @b[1] = 1; }", Engine::Bpf)
        .unwrap_or_else(|code| panic!("{code}"));
    let words: Vec<Vec<String>> = compiled
        .bpf
        .iter()
        .map(|p| {
            disassemble(&p[0].insns)
                .into_iter()
                .filter(|l| l.contains("lock *(u64 *)") || l.contains("if r6 >= 0xb"))
                .collect()
        })
        .collect();
    for (program, word) in words.iter().zip(["+40)", "+48)"]) {
        assert!(
            program.iter().any(|l| l.contains("if r6 >= 0xb")),
            "{words:#?}"
        );
        assert!(
            program
                .iter()
                .any(|l| l.ends_with(&format!("{word} += r2"))),
            "{word}: {words:#?}"
        );
    }
}

/// String walks beyond 128 bytes loop: the code of a compare, `strlen()`, `memcmp()` and the
/// searches of `strcontains()` and `strstr()` (a needle of 1024 bytes compared by a loop of
/// its own) is the same for strings of 1024 bytes and of 8192 (unrolled, a search of two
/// 1024-byte strings was a million byte compares and refused), each a `bpf_loop` call.
#[test]
fn string_walks_loop_whatever_the_strings_size() {
    let code = |n: u32| {
        let src = format!(
            r#"BEGIN {{ let $a: string[{n}] = "xy"; let $b: string[{n}] = "y";
               printf("%d %d %d %d %d\n", $a == $b, strlen($a), memcmp($a, $b, {n}),
                      strcontains($a, $b), strstr($a, "y")); }}"#
        );
        let fs = functions(&src);
        let sizes: Vec<usize> = fs.iter().map(|f| f.insns.len()).collect();
        let loops = disassemble(&fs[0].insns)
            .iter()
            .filter(|l| l.ends_with("call bpf_loop#181"))
            .count();
        (sizes, loops)
    };
    let (small, loops) = code(1024);
    assert_eq!(loops, 5, "{small:?}");
    // The program, the callbacks of 5 walks and the needle's loop in the search's.
    assert_eq!(small.len(), 7, "{small:?}");
    assert_eq!(code(8192).0, small);
}
