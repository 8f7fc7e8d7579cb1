//! Type-checker tests: types of expressions, variables and maps in correct scripts.

use sonde_lang::sema::CheckOptions;
use sonde_lang::testing::{FakeCatalog, FixtureKernel, check_annotated, dump_types};

/// Checks `src` expecting no diagnostics, and compares the dumped types with `expect`.
fn types(src: &str, expect: &str) {
    types_with(src, &CheckOptions::default(), expect);
}

fn types_with(src: &str, options: &CheckOptions, expect: &str) {
    let (checked, _) = check_annotated(src, &FakeCatalog, &FixtureKernel, options);
    assert_eq!(dump_types(&checked), expect.trim(), "script:\n{src}");
}

#[test]
fn literals_and_arithmetic() {
    types(
        r#"BEGIN { $a = 1; $b = 18446744073709551615; $c = "abc"; $d = pid + 1; $e = -$a; $f = 1 < 2; $g = ($a, "x"); $h = $#; }"#,
        "probe 0: $a: int64\nprobe 0: $b: uint64\nprobe 0: $c: string[4]\nprobe 0: $d: uint64\n\
         probe 0: $e: int64\nprobe 0: $f: bool\nprobe 0: $g: (int64, string[2])\nprobe 0: $h: uint64",
    );
}

#[test]
fn tracepoint_args() {
    types(
        "tracepoint:syscalls:sys_enter_openat { $f = args.filename; $m = args->mode; $s = str(args.filename); }",
        "probe 0: $f: int8 *\nprobe 0: $m: uint64\nprobe 0: $s: string[1024]",
    );
    types(
        "t:sched:sched_switch { $c = args.prev_comm; $p = args.next_pid; }",
        "probe 0: $c: string[16]\nprobe 0: $p: int64",
    );
    types(
        "t:block:block_rq_issue { $c = args.cmd; }",
        "probe 0: $c: string[1024]",
    );
}

#[test]
fn maps_unify_over_probes() {
    types(
        r#"
BEGIN { @s[1] = "ab"; @c[comm, pid] = count(); }
END { @s[2] = comm; @h = hist(5); @n++; @v = @c[comm, 1]; }
"#,
        "@c[(string[16], uint64)]: count\n@h: hist\n@n: int64\n@s[int64]: string[16]\n@v: int64",
    );
}

#[test]
fn map_read_before_assignment_in_later_probe() {
    types(
        "BEGIN { $x = @later; } END { @later = comm; }",
        "probe 0: $x: string[16]\n@later: string[16]",
    );
}

#[test]
fn ternary_casts_and_structs() {
    types(
        r#"kprobe:vfs_read { $t = 1 ? "a" : "abcd"; $p = (struct task_struct *)arg0; $q = $p->parent->comm; $r = curtask.pid; $u = (uint8[8])nsecs; $i = (uint32)arg1; }"#,
        "probe 0: $i: uint64\nprobe 0: $p: struct task_struct *\nprobe 0: $q: string[16]\n\
         probe 0: $r: int64\nprobe 0: $t: string[5]\nprobe 0: $u: uint8[8]",
    );
}

#[test]
fn script_structs_and_enums() {
    types(
        "struct foo { int a; char name[8]; struct foo *next; }\nenum color { RED, GREEN = 5 };\n\
         kprobe:vfs_read { $f = (struct foo *)arg0; $n = $f->next->name; $c = GREEN; $k = PIDTYPE_TGID; }",
        "probe 0: $c: enum color\nprobe 0: $f: struct foo *\nprobe 0: $k: enum pid_type\nprobe 0: $n: string[9]",
    );
}

#[test]
fn loops_and_scopes() {
    types(
        "BEGIN { @m[1] = 2; for ($kv : @m) { $k = $kv.0; } for ($i : 0..10) { if ($i > 5) { break; } } \
         let $d; $d = 3; let $s: string[8] = \"ab\"; while ($d) { $d--; continue; } unroll(3) { $d++; } }",
        "probe 0: $d: int64\nprobe 0: $i: int64\nprobe 0: $k: int64\nprobe 0: $kv: (int64, int64)\n\
         probe 0: $s: string[8]\n@m[int64]: int64",
    );
}

#[test]
fn positional_parameters() {
    let options = CheckOptions {
        positional: vec!["42".into(), "bash".into()],
        unsafe_allowed: false,
        ..Default::default()
    };
    types_with(
        "BEGIN { $a = $1; $b = str($2); $c = $3; }",
        &options,
        "probe 0: $a: int64\nprobe 0: $b: string[5]\nprobe 0: $c: int64",
    );
}

#[test]
fn wildcard_instances_share_equal_tables() {
    let src = "t:syscalls:sys_*_openat { @[probe] = count(); }";
    let src = src.replace("probe", "comm");
    let (checked, _) =
        check_annotated(&src, &FakeCatalog, &FixtureKernel, &CheckOptions::default());
    let inst = &checked.probes[0].instances;
    assert_eq!(inst.len(), 2);
    assert!(std::sync::Arc::ptr_eq(&inst[0].types, &inst[1].types));
    assert_eq!(inst[0].attach.name, "tracepoint:syscalls:sys_enter_openat");

    let (checked, _) = check_annotated(
        "t:syscalls:sys_*_openat { $x = args; }",
        &FakeCatalog,
        &FixtureKernel,
        &CheckOptions::default(),
    );
    let inst = &checked.probes[0].instances;
    assert!(!std::sync::Arc::ptr_eq(&inst[0].types, &inst[1].types));
}

#[test]
fn config_block() {
    let (checked, _) = check_annotated(
        "config = { max_strlen = 128; print_maps_on_exit = false; stack_mode = perf }\nBEGIN { $s = str(0); }",
        &FakeCatalog,
        &FixtureKernel,
        &CheckOptions::default(),
    );
    assert_eq!(checked.config.max_strlen, 128);
    assert!(!checked.config.print_maps_on_exit);
    assert_eq!(
        checked.config.stack_mode,
        sonde_lang::types::StackMode::Perf
    );
    assert_eq!(dump_types(&checked), "probe 0: $s: string[128]");
    assert!(
        checked.config.show_debug_info,
        "on by default, as bpftrace 0.27's"
    );
}

/// `show_debug_info` (bpftrace 0.27): a bool, 0/1 or false/true, also from
/// `BPFTRACE_SHOW_DEBUG_INFO`; `config.show_debug_info` reads it.
#[test]
fn show_debug_info_config() {
    let check = |src: &str, env: &[(&str, &str)]| {
        let opts = CheckOptions {
            env_config: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..CheckOptions::default()
        };
        check_annotated(src, &FakeCatalog, &FixtureKernel, &opts).0
    };
    for off in ["0", "false"] {
        let c = check(
            &format!("config = {{ show_debug_info = {off} }} BEGIN {{}}"),
            &[],
        );
        assert!(!c.config.show_debug_info, "{off}");
        let record = c.config.record();
        assert!(record.contains(&(
            "show_debug_info",
            sonde_lang::sema::ConfigEntry::Bool(false)
        )));
    }
    let c = check("config = { show_debug_info = 1 } BEGIN {}", &[]);
    assert!(c.config.show_debug_info);
    let c = check("BEGIN {}", &[("BPFTRACE_SHOW_DEBUG_INFO", "0")]);
    assert!(!c.config.show_debug_info);
}

/// `str_trunc_trailer` (bpftrace 0.26): any string, empty included, a number as its digits;
/// `BPFTRACE_STR_TRUNC_TRAILER` wins and is taken as it is, spaces included.
#[test]
fn str_trunc_trailer_from_config_and_environment() {
    let trailer = |src: &str, env: &[(&str, &str)]| {
        let options = CheckOptions {
            env_config: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..CheckOptions::default()
        };
        let (checked, diags) = check_annotated(src, &FakeCatalog, &FixtureKernel, &options);
        assert!(diags.is_empty(), "{diags:?}");
        String::from_utf8(checked.config.str_trunc_trailer).unwrap()
    };
    assert_eq!(trailer("BEGIN { }", &[]), "..");
    assert_eq!(
        trailer("config = { str_trunc_trailer = \"~\" } BEGIN { }", &[]),
        "~"
    );
    assert_eq!(
        trailer("config = { str_trunc_trailer = \"\" } BEGIN { }", &[]),
        ""
    );
    assert_eq!(
        trailer("config = { str_trunc_trailer = 0 } BEGIN { }", &[]),
        "0"
    );
    let env = [("BPFTRACE_STR_TRUNC_TRAILER", " _xxx")];
    assert_eq!(
        trailer("config = { str_trunc_trailer = \"~\" } BEGIN { }", &env),
        " _xxx"
    );
}

/// A map that is read in its own first assignment (`@n = @n + 1`) is an integer map, as a
/// missing element reads as 0.
#[test]
fn map_read_in_its_own_first_assignment_is_an_integer() {
    let (checked, diags) = check_annotated(
        "BEGIN { @n = @n + 1; @k[1] = @k[1] * 2; }",
        &FakeCatalog,
        &FixtureKernel,
        &CheckOptions::default(),
    );
    assert!(diags.is_empty(), "{diags:?}");
    assert_eq!(checked.maps["n"].value, sonde_lang::types::Type::I64);
    assert_eq!(checked.maps["k"].value, sonde_lang::types::Type::I64);
}
