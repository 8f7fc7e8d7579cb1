//! Limits the kernel imposes are the same in both engines.

use crate::common::skip_unless_root;
use crate::compare::compare_scripts;

/// Limits the kernel imposes that the userspace engine reproduces: the ring buffer's
/// capacity (records lost when a probe prints more than it holds) and full maps (the
/// count of refused updates, and each place's warnings).
#[test]
fn kernel_limits_are_the_same_in_both_engines() {
    if skip_unless_root("kernel_limits_are_the_same_in_both_engines") {
        return;
    }
    let scripts: &[(&str, i32)] = &[
        (
            r#"BEGIN { for ($i : 0..100000) { printf("%d %s\n", $i, "abcdefghijklmnop"); } exit(); }"#,
            0,
        ),
        (
            r#"BEGIN { for ($i : 0..60000) { printf("%d\n", $i); if ($i % 3 == 0) { print(($i, "x")); } } exit(); }"#,
            0,
        ),
        (
            r#"config = { max_map_keys = 10 }
BEGIN { for ($i : 0..20) { @m[$i] = $i * 16 + $i; @h[$i] = hist($i); @c[$i % 13] = sum($i * 16 + $i % 13); }
  printf("%d %d %d\n", len(@m), len(@h), len(@c)); exit(); }"#,
            0,
        ),
    ];
    compare_scripts(
        "kernel limits",
        scripts,
        false,
        &["Lost", "map updates failed", "WARNING: Map full"],
    );
}
