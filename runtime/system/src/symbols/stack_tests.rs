//! Golden tests of the stack layouts, with fake symbol tables. The expected texts were
//! taken from bpftrace 0.17 runs on this machine (addresses and names reused from them).

use super::*;
use crate::symbols::{SymbolSource, UserSymbol};

/// The largest size of a fake function.
const SPAN: u64 = 0x1000;

/// Fake symbols: functions by start address, each extending to the next start (at most
/// [`SPAN`] bytes).
struct Fake {
    kernel: Vec<(u64, &'static str)>,
    user: Vec<(u64, &'static str, &'static str)>,
}

impl SymbolSource for Fake {
    fn ksym(&self, addr: u64) -> Option<(String, u64)> {
        self.kernel
            .iter()
            .filter(|(start, _)| addr >= *start && addr - start < SPAN)
            .max_by_key(|(start, _)| *start)
            .map(|(start, name)| (name.to_string(), addr - start))
    }

    fn usym(&self, pid: u32, addr: u64) -> Option<UserSymbol> {
        assert_eq!(pid, 77, "user lookups carry the stack's pid");
        self.user
            .iter()
            .filter(|(start, _, _)| addr >= *start && addr - start < SPAN)
            .max_by_key(|(start, _, _)| *start)
            .map(|(start, name, module)| UserSymbol {
                name: name.to_string(),
                offset: addr - start,
                module: module.to_string(),
            })
    }

    fn kmodule(&self, addr: u64) -> Option<String> {
        (addr >= 0xffffffffc0000000).then(|| "[mymod]".to_string())
    }
}

const LIBC: &str = "/usr/lib/x86_64-linux-gnu/libc.so.6";

fn fake() -> Fake {
    Fake {
        kernel: vec![
            (0xffffffff815fa742 - 1122, "page_vma_mapped_walk"),
            (0xffffffff816a4334 - 132, "damon_folio_mkold_one"),
            (0xffffffff81389be8 - 248, "kthread"),
            (0xffffffffc0001000, "mod_fn"),
        ],
        user: vec![
            (0x7f8352dd54f7 - 7, "getppid", LIBC),
            (0x5607f2b03161 - 24, "mid", "/tmp/sym/m"),
            (0x5607f2b0317d - 26, "main", "/tmp/sym/m"),
        ],
    }
}

const KSTACK: [u64; 4] = [
    0xffffffff815fa742,
    0xffffffff816a4334,
    0xffffffff81389be8,
    0,
];
const USTACK: [u64; 4] = [
    0x7f8352dd54f7,
    0x5607f2b03161,
    0x5607f2b0317d,
    0x7f8352d2724a,
];

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
fn frames_for_the_output_model() {
    let frames = resolve_frames(
        &[0xffffffff81389be8, 0xffffffffc0001004, 0x10],
        true,
        0,
        127,
        &fake(),
    );
    assert_eq!(
        frames,
        vec![
            Frame {
                addr: 0xffffffff81389be8,
                symbol: Some("kthread+248".into()),
                module: Some(KERNEL_MODULE.into())
            },
            Frame {
                addr: 0xffffffffc0001004,
                symbol: Some("mod_fn+4".into()),
                module: Some("[mymod]".into())
            },
            Frame {
                addr: 0x10,
                symbol: None,
                module: None
            },
        ]
    );
    let frames = resolve_frames(&USTACK, false, 77, 1, &fake());
    assert_eq!(
        frames,
        vec![Frame {
            addr: USTACK[0],
            symbol: Some("getppid+7".into()),
            module: Some(LIBC.into())
        }]
    );
}

#[test]
fn stack_map_values_decode_up_to_the_first_zero() {
    let mut value = Vec::new();
    for a in [0xffffffff81389be8u64, 0x1234, 0, 0x99] {
        value.extend_from_slice(&a.to_le_bytes());
    }
    assert_eq!(decode_stack(&value), vec![0xffffffff81389be8, 0x1234]);
    assert_eq!(decode_stack(&[0u8; 16]), Vec::<u64>::new());
    assert_eq!(split_stack_key(0x0000_1234_0000_0007), (7, 0x1234));
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
    let text = sonde_present::output::text::stack_text(&frames, StackMode::BuildId, false, true);
    let one = "01".repeat(20);
    assert_eq!(text, format!("\n{ab} 0x11a0\n7f001234\n{one} 0x05\n"));
    assert_eq!(decode_build_id_stack(&value, 1).len(), 1);
    assert!(decode_build_id_stack(&[0; 64], 127).is_empty());
}
