//! Type-checker tests: every diagnostic code the checker emits, with its primary span.
//!
//! Each `^^^` line marks the primary span of a diagnostic on the line above it.

use sonde_lang::sema::CheckOptions;
use sonde_lang::testing::{FakeCatalog, FixtureKernel, check_annotated};

fn check(src: &str) -> Vec<sonde_lang::Diagnostic> {
    check_annotated(src, &FakeCatalog, &FixtureKernel, &CheckOptions::default()).1
}

#[test]
fn unknown_provider_suggests() {
    let d = check(
        r#"
tracepont:syscalls:sys_enter_openat { }
^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ error: sonde::sema::unknown_provider
"#,
    );
    assert_eq!(d[0].help.as_deref(), Some("did you mean `tracepoint`?"));
}

#[test]
fn provider_errors_pass_through_and_hide_the_body() {
    check(
        r#"
tracepoint:nope:nothing { $x = nosuch; }
^^^^^^^^^^^^^^^^^^^^^^^ error: sonde::probe::not_found
"#,
    );
}

#[test]
fn unknown_ident_and_function() {
    let d = check(
        r#"
BEGIN { $x = nsec; printff("x"); }
             ^^^^ error: sonde::sema::unknown_ident
                   ^^^^^^^ error: sonde::sema::unknown_function
"#,
    );
    assert_eq!(d[0].help.as_deref(), Some("did you mean `nsecs`?"));
    assert_eq!(d[1].help.as_deref(), Some("did you mean `printf`?"));
}

#[test]
fn unknown_field_lists_fields() {
    let d = check(
        r#"
tracepoint:syscalls:sys_enter_openat { $x = args.filname; }
                                                 ^^^^^^^ error: sonde::sema::unknown_field
"#,
    );
    assert_eq!(
        d[0].help.as_deref(),
        Some(
            "did you mean `args.filename`? (fields of tracepoint:syscalls:sys_enter_openat: \
             __syscall_nr, dfd, filename, flags, mode)"
        )
    );
}

#[test]
fn builtin_unavailable() {
    let d = check(
        r#"
kprobe:vfs_read { $r = retval; }
                       ^^^^^^ error: sonde::sema::builtin_unavailable
kretprobe:vfs_read { $r = retval; $a = arg0; }
                                       ^^^^ error: sonde::sema::builtin_unavailable
"#,
    );
    assert_eq!(
        d[0].help.as_deref(),
        Some("`retval` exists only in uretprobe/kretprobe/fexit")
    );
}

#[test]
fn variable_type_mismatch_and_undefined() {
    check(
        r#"
BEGIN { $x = 1; $x = "a"; $y = $z + 1; if (1) { $w = 1; } $v = $w; }
                     ^^^ error: sonde::sema::type_mismatch
                               ^^ error: sonde::sema::undefined_variable
                                                               ^^ error: sonde::sema::undefined_variable
"#,
    );
}

#[test]
fn errors_do_not_cascade() {
    // `$x` is poisoned by its bad definition: its uses stay silent.
    check(
        r#"
BEGIN { $x = nosuch + 1; $y = $x * 2; @m = $y; print(@m); }
             ^^^^^^ error: sonde::sema::unknown_ident
"#,
    );
}

#[test]
fn redefined_variable() {
    check(
        r#"
BEGIN { let $a = 1; let $a = 2; }
                        ^^ error: sonde::sema::redefined_variable
"#,
    );
}

#[test]
fn maps() {
    let d = check(
        r#"
kprobe:vfs_read { @x = count(); @x = 1; }
                                ^^ error: sonde::sema::map_type_mismatch
BEGIN { @k[1] = 1; @k = 2; $v = @never; }
                   ^^ error: sonde::sema::map_key_mismatch
                                ^^^^^^ error: sonde::sema::undefined_map
"#,
    );
    assert_eq!(d[0].secondary[0].0.start, 19);
}

#[test]
fn aggregations_only_as_map_values() {
    check(
        r#"
BEGIN { $c = count(); @h = hist(1); $v = @h; @c = count(); $n = @c + 1; }
             ^^^^^^^ error: sonde::sema::agg_position
                                         ^^ error: sonde::sema::agg_value
"#,
    );
}

#[test]
fn loops() {
    check(
        r#"
BEGIN { unroll(101) { } break; for ($kv : @s) { } @s = 1; }
               ^^^ error: sonde::sema::unroll_count
                        ^^^^^ error: sonde::sema::break_outside_loop
                                          ^^ error: sonde::sema::for_map
"#,
    );
}

#[test]
fn return_values_are_integers() {
    let d = check(
        r#"
BEGIN { return 1; } BEGIN { $x = (int16)-1; return $x; } BEGIN { return; }
BEGIN { return "tomato"; return 1 == 1; return printf("a"); }
               ^^^^^^^^ error: sonde::sema::return_type
                         ^^^^^^^^^^^^^ warning: sonde::sema::unreachable
                                ^^^^^^ error: sonde::sema::return_type
                                               ^^^^^^^^^^^ error: sonde::sema::void_value
"#,
    );
    assert_eq!(
        d[0].message,
        "Probe return values can only be integers. Found string[7]"
    );
    assert_eq!(d[1].message, "Unreachable statement.");
    assert_eq!(
        d[2].message,
        "Probe return values can only be integers. Found bool"
    );
}

/// A way out that a macro's body brings in is not the script's dead code (bpftrace's
/// runtime test "macro it can exit early"); one written in the probe is.
#[test]
fn unreachable_after_a_macros_exit_is_not_warned() {
    check(
        r#"
macro early() { exit(); } BEGIN { early(); print(1); } BEGIN { exit(); print(2); }
                                                                       ^^^^^^^^ warning: sonde::sema::unreachable
"#,
    );
}

#[test]
fn void_and_unsafe() {
    check(
        r#"
BEGIN { $x = printf("a"); system("ls"); }
             ^^^^^^^^^^^ error: sonde::sema::void_value
                          ^^^^^^ error: sonde::sema::unsafe_function
"#,
    );
    let options = CheckOptions {
        unsafe_allowed: true,
        ..CheckOptions::default()
    };
    let (_, d) = check_annotated(
        "BEGIN { system(\"ls\"); }",
        &FakeCatalog,
        &FixtureKernel,
        &options,
    );
    assert!(d.is_empty());
}

#[test]
fn config_errors() {
    check(
        r#"
config = { max_strlenn = 5; max_strlen = "x" }
           ^^^^^^^^^^^ error: sonde::sema::unknown_config
                                         ^^^ error: sonde::sema::config_value
BEGIN { }
"#,
    );
}

#[test]
fn operators_and_conditions() {
    check(
        r#"
BEGIN { $a = "a" - 1; if ("s") { } $b = comm < "x"; }
             ^^^^^^^ error: sonde::sema::operand_type
                          ^^^ error: sonde::sema::condition_type
                                        ^^^^^^^^^^ error: sonde::sema::operand_type
"#,
    );
}

#[test]
fn access_errors() {
    check(
        r#"
BEGIN { $a = pid.x; $t = (1, 2); $b = $t.2; $c = pid[0]; $d = *comm; $e = &pid; }
                 ^ error: sonde::sema::field_access
                                      ^^^^ error: sonde::sema::tuple_index
                                                 ^^^^^^ error: sonde::sema::index_base
                                                              ^^^^^ error: sonde::sema::deref
                                                                          ^^^^ error: sonde::sema::deref
"#,
    );
}

#[test]
fn casts_and_types() {
    check(
        r#"
BEGIN { $a = (uint16[2])nsecs; $b = (struct nope *)0; $c = $b->x; let $d: struct nope; $e = (int64)comm; }
             ^^^^^^^^^^^^^^^^ error: sonde::sema::invalid_cast
                                                           ^^ error: sonde::sema::unknown_record
                                                                          ^^^^^^^^^^^ error: sonde::sema::unknown_record
                                                                                            ^^^^^^^^^^^ error: sonde::sema::invalid_cast
"#,
    );
}

#[test]
fn assign_target_and_arity() {
    check(
        r#"
BEGIN { pid = 1; $x = pid(1); }
        ^^^ error: sonde::sema::assign_target
                      ^^^^^^ error: sonde::sema::arity
"#,
    );
}

#[test]
fn positional_string_outside_call() {
    let options = CheckOptions {
        positional: vec!["bash".into()],
        unsafe_allowed: false,
        ..Default::default()
    };
    check_annotated(
        r#"
BEGIN { $x = $1 + 1; printf("%s", $1); $y = $1 * 2; }
                                            ^^^^^^ error: sonde::sema::operand_type
"#,
        &FakeCatalog,
        &FixtureKernel,
        &options,
    );
}

/// Every size a script declares is bounded (docs/reference.md, Limits): each is one
/// `too_large` error on the size as written, computed without wrapping, and nothing that
/// uses the refused type is reported again.
#[test]
fn declared_sizes_are_bounded() {
    let d = check(
        r#"
config = { max_strlen = 4294967295; max_map_keys = 4294967296 }
                        ^^^^^^^^^^ error: sonde::sema::too_large
                                                   ^^^^^^^^^^ error: sonde::sema::too_large
struct s { char name[2147483647]; int x; }
           ^^^^^^^^^ error: sonde::sema::too_large
union u { char c[4294967295]; }
          ^^^^^^ error: sonde::sema::too_large
struct w { union u inner; int y; }
struct big { int a[8000]; long b[1000]; }
                          ^^^^^^ error: sonde::sema::too_large
BEGIN {
  let $g: string[2147483648];
          ^^^^^^^^^^^^^^^^^^ error: sonde::sema::too_large
  let $h: uint64[536870912];
          ^^^^^^^^^^^^^^^^^ error: sonde::sema::too_large
  $a = (int8[40000])1;
        ^^^^^^^^^^^ error: sonde::sema::too_large
  $p = (struct s *)0; printf("%s\n", $p->name);
  $q = (struct w *)0; $y = $q->y;
  $big = (struct big *)0;
  let $ok: uint8[32768];
}
"#,
    );
    assert_eq!(d[0].label, "4294967295 bytes, the limit is 32768");
    assert_eq!(d[1].label, "4294967296 keys, the limit is 1048576");
    assert!(
        d[2].message.contains("`char[2147483647]`"),
        "{}",
        d[2].message
    );
    assert_eq!(d[5].label, "2147483648 bytes, the limit is 32768");
    assert_eq!(d[6].label, "4294967296 bytes, the limit is 32768");
}

/// Values built in a probe are bounded too: a tuple, or a multi-key map key, of large
/// strings.
#[test]
fn built_values_are_bounded() {
    check(
        r#"
config = { max_strlen = 20000 }
tracepoint:syscalls:sys_enter_openat {
  $t = (str(args.filename), str(args.filename));
       ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ error: sonde::sema::too_large
  @m[str(args.filename), str(args.filename)] = 1;
     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ error: sonde::sema::too_large
  $one = (str(args.filename), 1);
}
"#,
    );
}

/// A shift by a constant outside 0..=63 shifts every bit out (a warning says so, on the
/// amount); in range, and by run-time amounts, nothing is said.
#[test]
fn shift_by_constant_out_of_range_warns() {
    check(
        r#"
BEGIN {
  $a = 1 << 64; $b = 1 >> -1; $c = $a << 63; $d = $a >> $b;
            ^^ warning: sonde::sema::shift_amount
                          ^^ warning: sonde::sema::shift_amount
  $a <<= 100; $a >>= 0;
         ^^^ warning: sonde::sema::shift_amount
}
"#,
    );
}

/// A constant index outside an array's bounds is an error (as bpftrace): the element would
/// be read at a constant offset outside the array (in the userspace engine, outside the
/// memory the array lives in). Pointers may be indexed anywhere.
#[test]
fn constant_array_index_out_of_bounds() {
    check(
        r#"
struct x { int a[4]; }
BEGIN {
  $v = (int8[8])1; $p = (struct x *)0;
  $i = 2; $ok = $v[7] + $p->a[3] + $v[$i] + ((int64 *)0)[100000000];
  $b = $v[8] + $p->a[-1] + $v[100000000];
       ^^^^^ error: sonde::sema::index_bounds
               ^^^^^^^^^ error: sonde::sema::index_bounds
                           ^^^^^^^^^^^^^ error: sonde::sema::index_bounds
}
"#,
    );
}
