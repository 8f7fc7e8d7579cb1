//! Tests of stack values and frame resolution, with fake symbol tables.

use super::*;
use crate::symbols::testing::{LIBC, USTACK, fake};

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
