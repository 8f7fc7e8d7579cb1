//! `typeof(...)` where a type goes (bpftrace 0.26): in `let` annotations, casts and macros,
//! with the written types it gives enforced as bpftrace enforces them.

use sonde_lang::sema::CheckOptions;
use sonde_lang::testing::{FakeCatalog, FixtureKernel, check_annotated, dump_types};

/// Checks `src` expecting no diagnostics, and compares the dumped types with `expect`.
fn types(src: &str, expect: &str) {
    let (checked, _) = check_annotated(src, &FakeCatalog, &FixtureKernel, &CheckOptions::default());
    assert_eq!(dump_types(&checked), expect.trim(), "script:\n{src}");
}

/// Checks `src` whose `^^^` lines mark the expected diagnostics.
fn check(src: &str) -> Vec<sonde_lang::Diagnostic> {
    check_annotated(src, &FakeCatalog, &FixtureKernel, &CheckOptions::default()).1
}

#[test]
fn typeof_of_variables_types_and_strings() {
    types(
        r#"BEGIN { $x = "foo"; let $y: typeof($x); $y = "bar"; let $n: typeof(uint32) = 1; let $s: typeof("abcdef") = "xy"; $c = (typeof($n))300; }"#,
        "probe 0: $c: uint64\nprobe 0: $n: uint32\nprobe 0: $s: string[7]\nprobe 0: $x: string[4]\nprobe 0: $y: string[4]",
    );
}

#[test]
fn typeof_of_a_keyed_map_is_its_key_and_of_a_scalar_map_its_value() {
    types(
        r#"BEGIN { @a["hi", 2] = 1; let $x: typeof(@a) = ("hello", (int16)1); @a["hello", (int32)2] = 2; $v = (typeof(@a["x", 1]))7; $s = (typeof(@s))1; @s = (uint16)5; }"#,
        "probe 0: $s: uint64\nprobe 0: $v: int64\nprobe 0: $x: (string[6], int64)\n\
         @a[(string[6], int64)]: int64\n@s: uint64",
    );
}

#[test]
fn typeof_of_an_untyped_variable_ties_the_two() {
    types(
        r#"BEGIN { let $x; let $y: typeof($x); $y = "bar"; $x = "foo"; }"#,
        "probe 0: $x: string[4]\nprobe 0: $y: string[4]",
    );
    check(
        r#"
BEGIN { let $x; let $y: typeof($x); $x = "foo"; $y = 2; }
                                                     ^ error: sonde::sema::type_mismatch
"#,
    );
}

#[test]
fn typeof_in_macros_expands_and_renames() {
    types(
        r#"macro add(x) { let $y: typeof(x); if (true) { $y = 1 } x + $y } macro one() { 1 } BEGIN { $a = add(1); $b = (typeof(one()))$a; }"#,
        "probe 0: $__add1_y: int64\nprobe 0: $a: int64\nprobe 0: $b: int64",
    );
}

#[test]
fn written_types_are_enforced() {
    check(
        r#"
BEGIN { let $x: string[3] = "hello"; }
                            ^^^^^^^ error: sonde::sema::type_mismatch
"#,
    );
    check(
        r#"
BEGIN { let $x: string[3] = "hi"; $x = "hello"; }
                                       ^^^^^^^ error: sonde::sema::type_mismatch
"#,
    );
    check(
        r#"
BEGIN { $a = (1, "hi"); let $x: typeof($a) = (1, "helllooo"); }
                                             ^^^^^^^^^^^^^^^ error: sonde::sema::type_mismatch
"#,
    );
    types(
        r#"BEGIN { let $y: string = "hi"; $y = "muchmuchlongerstr"; $k = 1; let $p: int64 * = &$k; }"#,
        "probe 0: $k: int64\nprobe 0: $p: int64 *\nprobe 0: $y: string[1024]",
    );
}

#[test]
fn typeof_is_no_value_and_assigns_no_map() {
    check(
        r#"
BEGIN { let $b: typeof({ @a = 1; 1 }) = 1; }
                         ^^ error: sonde::sema::typeof_map_assign
"#,
    );
    check(
        r#"
BEGIN { $s = typeof(1); }
             ^^^^^^ error: sonde::sema::unknown_function
"#,
    );
    check(
        r#"
struct foo { int x; } BEGIN { $x = (struct foo *)0; $y = (typeof(*$x))0; }
                                                         ^^^^^^^^^^^^^^ error: sonde::sema::invalid_cast
"#,
    );
}
