//! Tests of stack values and frame resolution, with fake symbol tables.

use super::*;
use crate::symbols::testing::{LIBC, USTACK, fake, fake_with_sources};

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
                module: Some(KERNEL_MODULE.into()),
                ..Frame::default()
            },
            Frame {
                addr: 0xffffffffc0001004,
                symbol: Some("mod_fn+4".into()),
                module: Some("[mymod]".into()),
                ..Frame::default()
            },
            Frame {
                addr: 0x10,
                symbol: None,
                module: None,
                ..Frame::default()
            },
        ]
    );
    let frames = resolve_frames(&USTACK, false, 77, 1, &fake());
    assert_eq!(
        frames,
        vec![Frame {
            addr: USTACK[0],
            symbol: Some("getppid+7".into()),
            module: Some(LIBC.into()),
            ..Frame::default()
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
fn inlined_functions_come_before_their_frame_and_limit_counts_addresses() {
    let frames = resolve_frames(&USTACK, false, 77, 3, &fake_with_sources());
    let m = Some("/tmp/sym/m".to_string());
    let at = |line: u32| Some(format!("/src/m.c:{line}"));
    assert_eq!(
        frames,
        vec![
            Frame::new(USTACK[0], Some("getppid+7".into()), Some(LIBC.into())),
            Frame {
                addr: USTACK[1],
                symbol: Some("leaf".into()),
                module: m.clone(),
                source: at(3),
                inlined: true,
            },
            Frame {
                addr: USTACK[1],
                symbol: Some("helper".into()),
                module: m.clone(),
                source: at(8),
                inlined: true,
            },
            Frame {
                source: at(12),
                ..Frame::new(USTACK[1], Some("mid+24".into()), m.clone())
            },
            Frame {
                source: at(20),
                ..Frame::new(USTACK[2], Some("main+26".into()), m.clone())
            },
        ]
    );
    // Kernel frames ask for no source.
    let k = resolve_frames(&[0xffffffff81389be8], true, 0, 1, &fake_with_sources());
    assert_eq!(k[0].source, None);
}
