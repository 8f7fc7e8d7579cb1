//! Golden tests of the stack layouts, with fake symbol tables. The expected texts were
//! taken from bpftrace 0.17 runs on this machine (addresses and names reused from them).

use super::*;
use sonde_system::symbols::decode_build_id_stack;
use sonde_system::symbols::testing::{KSTACK, USTACK, fake, fake_with_sources};

#[test]
fn kernel_stack_in_a_map_key() {
    let s = format_stack(
        &KSTACK,
        true,
        0,
        StackMode::Bpftrace,
        127,
        KEY_INDENT,
        &fake(),
    );
    assert_eq!(
        s,
        "\n    page_vma_mapped_walk+1122\n    damon_folio_mkold_one+132\n    kthread+248\n"
    );
    // What the printer makes of it: `@[` + stack + `]: 2`.
    assert_eq!(
        format!("@[{s}]: 2"),
        "@[\n    page_vma_mapped_walk+1122\n    damon_folio_mkold_one+132\n    kthread+248\n]: 2"
    );
}

#[test]
fn kernel_stack_as_a_value_and_limited() {
    let s = format_stack(
        &KSTACK,
        true,
        0,
        StackMode::Bpftrace,
        2,
        VALUE_INDENT,
        &fake(),
    );
    assert_eq!(
        s,
        "\n        page_vma_mapped_walk+1122\n        damon_folio_mkold_one+132\n"
    );
}

#[test]
fn kernel_stack_perf_mode_has_no_module() {
    let s = format_stack(&KSTACK, true, 0, StackMode::Perf, 127, KEY_INDENT, &fake());
    assert_eq!(
        s,
        "\n\tffffffff815fa742 page_vma_mapped_walk+1122\n\tffffffff816a4334 damon_folio_mkold_one+132\n\
         \tffffffff81389be8 kthread+248\n"
    );
}

#[test]
fn unresolved_kernel_frames_print_as_pointers() {
    let s = format_stack(
        &[0xffffffff90000000, 0xffffffff815fa742],
        true,
        0,
        StackMode::Bpftrace,
        127,
        4,
        &fake(),
    );
    assert_eq!(
        s,
        "\n    0xffffffff90000000\n    page_vma_mapped_walk+1122\n"
    );
    let s = format_stack(
        &[0xffffffff90000000],
        true,
        0,
        StackMode::Perf,
        127,
        4,
        &fake(),
    );
    assert_eq!(s, "\n\tffffffff90000000 0xffffffff90000000\n");
}

#[test]
fn user_stack_default_and_perf_modes() {
    let s = format_stack(
        &USTACK,
        false,
        77,
        StackMode::Bpftrace,
        127,
        KEY_INDENT,
        &fake(),
    );
    assert_eq!(
        s,
        "\n    getppid+7\n    mid+24\n    main+26\n    0x7f8352d2724a\n"
    );
    let s = format_stack(
        &USTACK,
        false,
        77,
        StackMode::Perf,
        127,
        KEY_INDENT,
        &fake(),
    );
    assert_eq!(
        s,
        "\n\t7f8352dd54f7 getppid+7 (/usr/lib/x86_64-linux-gnu/libc.so.6)\n\t5607f2b03161 mid+24 (/tmp/sym/m)\n\
         \t5607f2b0317d main+26 (/tmp/sym/m)\n\t7f8352d2724a 0x7f8352d2724a ([unknown])\n"
    );
}

#[test]
fn raw_mode_prints_bare_hex_addresses() {
    let s = format_stack(&USTACK, false, 77, StackMode::Raw, 2, KEY_INDENT, &fake());
    assert_eq!(s, "\n7f8352dd54f7\n5607f2b03161\n");
}

#[test]
fn empty_stacks_print_nothing() {
    assert_eq!(
        format_stack(&[], true, 0, StackMode::Bpftrace, 127, 4, &fake()),
        ""
    );
    assert_eq!(
        format_stack(&[0, 0], false, 77, StackMode::Perf, 127, 4, &fake()),
        ""
    );
    assert_eq!(folded(&[], true, 0, &fake()), "");
}

#[test]
fn folded_is_root_first_without_offsets() {
    assert_eq!(
        folded(&KSTACK, true, 0, &fake()),
        "kthread;damon_folio_mkold_one;page_vma_mapped_walk"
    );
    assert_eq!(
        folded(&USTACK, false, 77, &fake()),
        "0x7f8352d2724a;main;mid;getppid"
    );
}

#[test]
fn single_symbols_as_ksym_and_usym_print_them() {
    let f = fake();
    assert_eq!(
        symbol_text(0xffffffff81389be8, true, 0, false, &f),
        "kthread"
    );
    assert_eq!(
        symbol_text(0xffffffff81389be8, true, 0, true, &f),
        "kthread+248"
    );
    assert_eq!(symbol_text(0x5607f2b03161, false, 77, false, &f), "mid");
    assert_eq!(
        symbol_text(0x7f8352d2724a, false, 77, false, &f),
        "0x7f8352d2724a"
    );
    assert_eq!(symbol_text(0x10, true, 0, true, &f), "0x10");
}

/// `ustack(build_id)`: bpftrace's `format_build_id_stack` lines from `bpf_stack_build_id`s.
#[test]
fn build_id_stacks() {
    let frame = |status: i32, id: u8, addr: u64| {
        let mut f = status.to_le_bytes().to_vec();
        f.extend([id; 20]);
        f.extend(addr.to_le_bytes());
        f
    };
    let mut value = frame(1, 0xab, 0x11a0);
    value.extend(frame(2, 0, 0x7f00_1234));
    value.extend(frame(1, 0x01, 0x5));
    value.extend(vec![0; 32 * 2]);
    let frames = decode_build_id_stack(&value, 127);
    assert_eq!(frames.len(), 3);
    let ab = "ab".repeat(20);
    assert_eq!(frames[0].symbol.as_deref(), Some(ab.as_str()));
    assert_eq!(
        (frames[1].symbol.as_deref(), frames[1].addr),
        (None, 0x7f00_1234)
    );
    let text = crate::output::text::stack_text(&frames, StackMode::BuildId, false, true);
    let one = "01".repeat(20);
    assert_eq!(text, format!("\n{ab} 0x11a0\n7f001234\n{one} 0x05\n"));
    assert_eq!(decode_build_id_stack(&value, 1).len(), 1);
    assert!(decode_build_id_stack(&[0; 64], 127).is_empty());
}

/// bpftrace 0.27's layout with DWARF (tests/runtime/call, `ustack_with_inlined_funcs*`): the
/// inlined functions first, leaf first, `[inlined] name@file:line`; each frame `@file:line`.
#[test]
fn user_stack_with_source_lines_and_inlined_functions() {
    let syms = fake_with_sources();
    let text = |mode, limit, indent| format_stack(&USTACK, false, 77, mode, limit, indent, &syms);
    assert_eq!(
        text(StackMode::Bpftrace, 127, VALUE_INDENT),
        "\n        getppid+7\n        [inlined] leaf@/src/m.c:3\n        \
         [inlined] helper@/src/m.c:8\n        mid+24@/src/m.c:12\n        \
         main+26@/src/m.c:20\n        0x7f8352d2724a\n"
    );
    // ustack(2): two addresses, four lines.
    assert_eq!(
        text(StackMode::Bpftrace, 2, KEY_INDENT),
        "\n    getppid+7\n    [inlined] leaf@/src/m.c:3\n    [inlined] helper@/src/m.c:8\n    \
         mid+24@/src/m.c:12\n"
    );
    // Perf mode: `(inlined)` for the inlined functions, no lines.
    assert_eq!(
        text(StackMode::Perf, 3, VALUE_INDENT),
        "\n\t7f8352dd54f7 getppid+7 (/usr/lib/x86_64-linux-gnu/libc.so.6)\n\
         \t5607f2b03161 leaf (inlined)\n\t5607f2b03161 helper (inlined)\n\
         \t5607f2b03161 mid+24 (/tmp/sym/m)\n\t5607f2b0317d main+26 (/tmp/sym/m)\n"
    );
    // Raw mode: one line per address.
    assert_eq!(
        text(StackMode::Raw, 3, VALUE_INDENT),
        "\n7f8352dd54f7\n5607f2b03161\n5607f2b0317d\n"
    );
    // Folded lines keep one name per address.
    assert_eq!(
        folded(&USTACK, false, 77, &syms),
        "0x7f8352d2724a;main;mid;getppid"
    );
}
