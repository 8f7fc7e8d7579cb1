//! User-space probes for real: uprobes and uretprobes on a PIE test program and on its own
//! shared library (`tests/targets/uprobe_target.c`, `libsondetest.c`, built here with
//! `-O0 -fno-omit-frame-pointer`), library resolution by name (`libc`), wildcards, offsets,
//! symbolized user stacks, `usym()`, `str()`, and the `-p`/`-c` process semantics.
//!
//! In `calls` mode the program calls, in order: `getpid()` 3 times, `add(i, i + 10)` for
//! i in 0..3, `lib_work(100)` twice, `add_three(1, 2, 3)`, `greet("hello sonde")`,
//! `outer(5)` (outer → middle → inner → leaf), `lib_call(cb_square, 7)` (library → program
//! callback → leaf), `recurse(4)` (five recurse frames → leaf) and `call_fp(add)`, which
//! calls `add(20, 22)` through a function pointer. Expected outputs are those of bpftrace
//! 0.17 for the same scripts where it resolves them (it prints stacks of exited processes
//! unresolved; sonde holds a `-c` child at its exit to keep them resolvable).

mod common;
mod probes_support;

use common::{ATTACH_TIMEOUT, Target, Tracer, skip_unless_root, with_exit_maps};
use probes_support::{build_probe_target, file_offset, frame_name, parse_stacks, symbol_value};
use std::time::Duration;

/// Runs `sonde -e prog -c cmd` and returns its stdout of a clean run.
fn run_c(prog: &str, cmd: &str) -> String {
    common::run_sonde(&["-e", prog, "-c", cmd])
        .ok_stdout()
        .to_string()
}

#[test]
fn uprobe_args_on_a_pie() {
    if skip_unless_root("uprobe_args_on_a_pie") {
        return;
    }
    let t = build_probe_target("up-args");
    let prog = format!(
        r#"{} {{ printf("%d %d\n", arg0, arg1); }}"#,
        t.at("uprobe", "add")
    );
    assert_eq!(
        run_c(&prog, &t.cmd("calls")),
        with_exit_maps("0 10\n1 11\n2 12\n20 22\n", "")
    );
}

#[test]
fn uretprobe_retval() {
    if skip_unless_root("uretprobe_retval") {
        return;
    }
    let t = build_probe_target("up-ret");
    let prog = format!(
        r#"{} {{ printf("%d\n", retval); }}"#,
        t.at("uretprobe", "add")
    );
    assert_eq!(
        run_c(&prog, &t.cmd("calls")),
        with_exit_maps("10\n12\n14\n42\n", "")
    );
}

/// Several probes on one point fire in declaration order (uprobe-multi links run last
/// attached first: sonde attaches them in reverse), as in bpftrace 0.26.
#[test]
fn probes_on_one_point_fire_in_declaration_order() {
    if skip_unless_root("probes_on_one_point_fire_in_declaration_order") {
        return;
    }
    let t = build_probe_target("up-order");
    let prog = format!(
        r#"{e} {{ printf("A%d ", arg0); }} {e} {{ printf("B%d ", arg0); }} {e} {{ printf("C "); }}
           {r} {{ printf("R1 "); }} {r} {{ printf("R2\n"); }}"#,
        e = t.at("uprobe", "add"),
        r = t.at("uretprobe", "add")
    );
    assert_eq!(
        run_c(&prog, &t.cmd("calls")),
        with_exit_maps(
            "A0 B0 C R1 R2\nA1 B1 C R1 R2\nA2 B2 C R1 R2\nA20 B20 C R1 R2\n",
            ""
        )
    );
}

#[test]
fn shared_library_by_path() {
    if skip_unless_root("shared_library_by_path") {
        return;
    }
    let t = build_probe_target("up-lib");
    let prog = format!(
        r#"uprobe:{lib}:lib_work {{ printf("in %d\n", arg0); }} uretprobe:{lib}:lib_work {{ printf("out %d\n", retval); }}"#,
        lib = t.lib_str()
    );
    assert_eq!(
        run_c(&prog, &t.cmd("calls")),
        with_exit_maps("in 100\nout 4950\nin 100\nout 4950\n", "")
    );
}

#[test]
fn libc_by_name_counts_the_childs_first_calls() {
    if skip_unless_root("libc_by_name_counts_the_childs_first_calls") {
        return;
    }
    let t = build_probe_target("up-libc");
    // getpid() is called exactly 3 times, first thing in main: -c holds the child until the
    // probe is attached, so all three are seen.
    let out = run_c(
        "uprobe:libc:getpid /pid == cpid/ { @ = count(); }",
        &t.cmd("calls"),
    );
    assert_eq!(out, with_exit_maps("", "@: 3\n"));
}

#[test]
fn wildcard_and_func() {
    if skip_unless_root("wildcard_and_func") {
        return;
    }
    let t = build_probe_target("up-wild");
    let prog = format!("{} {{ @[func] = count(); }}", t.at("uprobe", "add*"));
    let out = common::run_sonde(&["-e", &prog, "-c", &t.cmd("calls")]);
    assert_eq!(
        out.ok_stdout(),
        with_exit_maps("", "@[add_three]: 1\n@[add]: 4\n")
    );
    assert!(
        out.stderr.contains("Attached 2 probes"),
        "stderr: {}",
        out.stderr
    );
}

#[test]
fn function_offset_and_raw_file_offset() {
    if skip_unless_root("function_offset_and_raw_file_offset") {
        return;
    }
    let t = build_probe_target("up-off");
    // At -O0 with frame pointers, add starts with `push %rbp` (1 byte) and
    // `mov %rsp,%rbp` (3 bytes): add+4 is an instruction boundary, after the push. The
    // stack pointer there is 8 bytes below its value at the entry.
    let objdump = std::process::Command::new("objdump")
        .args(["-d", "--no-show-raw-insn"])
        .arg(&t.bin)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&objdump.stdout);
    let body: Vec<&str> = text
        .split("<add>:\n")
        .nth(1)
        .unwrap()
        .lines()
        .take(2)
        .collect();
    assert!(
        body[0].contains("push") && body[0].contains("%rbp"),
        "{body:?}"
    );
    assert!(
        body[1].contains("mov") && body[1].contains("%rsp,%rbp"),
        "{body:?}"
    );
    let prog = format!(
        r#"{} {{ @sp[tid] = reg("sp"); }} {} {{ printf("%d %d %d\n", arg0, arg1, @sp[tid] - reg("sp")); }}"#,
        t.at("uprobe", "add"),
        t.at("uprobe", "add+4")
    );
    let out = run_c(&prog, &t.cmd("calls"));
    assert!(
        out.starts_with("0 10 8\n1 11 8\n2 12 8\n20 22 8\n\n\n@sp["),
        "{out}"
    );
    // The same place as a raw file offset of the binary.
    let off = file_offset(&t.bin, symbol_value(&t.bin, "add")) + 4;
    let prog = format!(
        r#"uprobe:{}:{off:#x} {{ printf("%d\n", arg1); }}"#,
        t.bin_str()
    );
    assert_eq!(
        run_c(&prog, &t.cmd("calls")),
        with_exit_maps("10\n11\n12\n22\n", "")
    );
}

/// An address must be an instruction boundary inside a function (bpftrace's "Could not
/// resolve address"), unless `--unsafe`.
#[test]
fn an_address_outside_functions_is_refused() {
    let t = build_probe_target("up-address");
    let add = file_offset(&t.bin, symbol_value(&t.bin, "add"));
    let bin = t.bin_str();
    let dry = |unsafe_: bool, at: String| {
        let prog = format!("uprobe:{bin}:{at} {{ }}");
        let mut args = vec!["--dry-run", "-e", &prog];
        if unsafe_ {
            args.insert(0, "--unsafe");
        }
        common::run_sonde(&args)
    };
    let header = dry(false, "10".into());
    assert_ne!(header.code, Some(0), "{}", header.stderr);
    // (miette may fold the long path.)
    assert!(
        header.stderr.contains("Could not resolve address: /")
            && header.stderr.contains("uprobe_target:0xa"),
        "{}",
        header.stderr
    );
    // `add`'s first instruction (`push %rbp`) is one byte: +2 is inside the next one.
    let middle = dry(false, format!("{:#x}", add + 2));
    assert!(
        middle
            .stderr
            .contains("offset 2 is in the middle of an instruction of `add`"),
        "{}",
        middle.stderr
    );
    for (unsafe_, at) in [
        (false, format!("{add:#x}")),
        (false, format!("{}", add + 1)),
        (true, "10".into()),
    ] {
        let out = dry(unsafe_, at.clone());
        assert_eq!(out.code, Some(0), "{at}: {}", out.stderr);
    }
}

#[test]
fn ustack_frames_of_a_short_lived_child_resolve() {
    if skip_unless_root("ustack_frames_of_a_short_lived_child_resolve") {
        return;
    }
    let t = build_probe_target("up-stack");
    let prog = format!("{} {{ @[ustack] = count(); }}", t.at("uprobe", "leaf"));
    let out = run_c(&prog, &t.cmd("calls"));
    let mut stacks: Vec<Vec<String>> = parse_stacks(&out)
        .into_iter()
        .map(|(frames, n)| {
            assert_eq!(n, 1, "{out}");
            assert_eq!(frames[0], "leaf+0", "{out}");
            // Up to main: what follows (libc's start code) depends on the libc build.
            let names: Vec<String> = frames.iter().map(|f| frame_name(f).to_string()).collect();
            let main = names
                .iter()
                .position(|n| n == "main")
                .unwrap_or_else(|| panic!("no main in {out}"));
            names[..=main].to_vec()
        })
        .collect();
    stacks.sort();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(
        stacks,
        vec![
            s(&["leaf", "cb_square", "lib_call", "main"]),
            s(&["leaf", "inner", "middle", "outer", "main"]),
            s(&[
                "leaf", "recurse", "recurse", "recurse", "recurse", "recurse", "main"
            ]),
        ],
        "{out}"
    );
}

#[test]
fn usym_of_a_function_pointer_and_of_ip() {
    if skip_unless_root("usym_of_a_function_pointer_and_of_ip") {
        return;
    }
    let t = build_probe_target("up-usym");
    let prog = format!(
        r#"{} {{ printf("%s %s\n", usym(arg0), usym(reg("ip"))); @[usym(arg0)] = count(); }}"#,
        t.at("uprobe", "call_fp")
    );
    assert_eq!(
        run_c(&prog, &t.cmd("calls")),
        with_exit_maps("add call_fp\n", "@[add]: 1\n")
    );
}

#[test]
fn user_strings_and_buffers() {
    if skip_unless_root("user_strings_and_buffers") {
        return;
    }
    let t = build_probe_target("up-str");
    let prog = format!(
        r#"{} {{ $n = (uint16)5; printf("%s|%s|%s|%s|%r|%r|%s\n", str(arg0), str(arg0, 5), str(arg0, $n), str(uptr(arg0)), buf(arg0, 5), buf(arg0, 12), macaddr(arg0)); }}"#,
        t.at("uprobe", "greet")
    );
    assert_eq!(
        run_c(&prog, &t.cmd("calls")),
        with_exit_maps(
            "hello sonde|hell|hell|hello sonde|hello|hello sonde\\x00|68:65:6C:6C:6F:20\n",
            ""
        )
    );
}

#[test]
fn pid_filter_sees_only_that_process() {
    if skip_unless_root("pid_filter_sees_only_that_process") {
        return;
    }
    let t = build_probe_target("up-pid");
    let mut a = Target::spawn(&t.bin, &["wait", "calls"]);
    let mut b = Target::spawn(&t.bin, &["wait", "calls"]);
    let prog = format!("{} {{ @[pid] = count(); }}", t.at("uprobe", "add"));
    let pid = a.pid();
    let mut tracer = Tracer::start(&["-p", &pid, "-e", &prog]);
    assert!(tracer.wait_attached(ATTACH_TIMEOUT), "sonde did not attach");
    common::settle();
    a.go();
    b.go();
    assert_eq!(a.wait(Duration::from_secs(10)), Some(0));
    assert_eq!(b.wait(Duration::from_secs(10)), Some(0));
    std::thread::sleep(Duration::from_millis(300));
    tracer.interrupt();
    let out = tracer.finish(Duration::from_secs(10));
    assert_eq!(
        out.ok_stdout(),
        with_exit_maps("", &format!("@[{pid}]: 4\n"))
    );
}

#[test]
fn list_uprobe_symbols_of_the_program_and_library() {
    let t = build_probe_target("up-list");
    let out = common::run_sonde(&["-l", &t.at("uprobe", "add*")]);
    assert_eq!(
        out.ok_stdout(),
        format!(
            "{0}:add\n{0}:add_three\n",
            format!("uprobe:{}", t.bin_str())
        )
    );
    let out = common::run_sonde(&["-l", &format!("uprobe:{}:lib_*", t.lib_str())]);
    assert_eq!(
        out.ok_stdout(),
        format!("uprobe:{0}:lib_call\nuprobe:{0}:lib_work\n", t.lib_str())
    );
    // uretprobes go where uprobes go, listed as bpftrace 0.27 lists them (no parameters
    // under -v); a wildcard provider lists both.
    for flag in ["-l", "-lv"] {
        let out = common::run_sonde(&[flag, &format!("uretprobe:{}:lib_*", t.lib_str())]);
        assert_eq!(
            out.ok_stdout(),
            format!(
                "uretprobe:{0}:lib_call\nuretprobe:{0}:lib_work\n",
                t.lib_str()
            )
        );
    }
    let out = common::run_sonde(&["-l", &format!("*:{}:lib_call", t.lib_str())]);
    assert_eq!(
        out.ok_stdout(),
        format!("uprobe:{0}:lib_call\nuretprobe:{0}:lib_call\n", t.lib_str())
    );
}

#[test]
fn stack_keys_that_print_the_same_frames_are_one_entry() {
    if skip_unless_root("stack_keys_that_print_the_same_frames_are_one_entry") {
        return;
    }
    // recurse(4) calls itself down to recurse(0): five calls, four of them from recurse
    // itself, each on a different full stack (one more recurse frame each) that agrees with
    // the others on its first two frames. bpftrace 0.17 prints those as one entry of 4.
    let t = build_probe_target("up-stackn");
    let prog = format!(
        "{} {{ @[ustack(2)] = count(); @h[ustack(2)] = hist(5); }}",
        t.at("uprobe", "recurse")
    );
    let cmd = t.cmd("calls");
    let out = run_c(&prog, &cmd);
    let counts = &out[..out.find("@h[").unwrap_or(out.len())];
    let stacks: Vec<(Vec<String>, u64)> = parse_stacks(counts)
        .into_iter()
        .map(|(frames, n)| {
            (
                frames.iter().map(|f| frame_name(f).to_string()).collect(),
                n,
            )
        })
        .collect();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(
        stacks,
        vec![
            (s(&["recurse", "main"]), 1),
            (s(&["recurse", "recurse"]), 4)
        ],
        "{out}"
    );
    // The hist of the merged entry merges the four hists.
    assert!(out.contains("[4, 8)                 4 |"), "{out}");
    let json = common::run_sonde(&["-f", "json", "-e", &prog, "-c", &cmd]);
    let json = json.ok_stdout();
    let counts = json
        .lines()
        .find(|l| l.starts_with(r#"{"type": "map""#))
        .unwrap_or_else(|| panic!("{json}"));
    assert_eq!(counts.matches("recurse+0").count(), 2, "{json}");
    assert!(counts.ends_with(r#"\n": 4}}}"#), "{json}");
    assert!(
        json.contains(r#"[{"min": 4, "max": 7, "count": 4}]"#),
        "{json}"
    );
    let folded = common::run_sonde(&["-f", "folded", "-e", &prog, "-c", &cmd]);
    let folded = folded.ok_stdout();
    assert!(
        folded.starts_with("main;recurse 1\nrecurse;recurse 4\n"),
        "{folded}"
    );
}

#[test]
fn offset_inside_an_instruction_is_refused_unless_unsafe() {
    // `add` starts with `push %rbp` (1 byte) and `mov %rsp,%rbp` (3 bytes): add+2 is inside
    // the mov. A breakpoint there would corrupt it and crash the traced process; bpftrace
    // refuses it ("Could not add uprobe into middle of instruction") unless --unsafe.
    let t = build_probe_target("up-badoff");
    let bad = format!("{} {{ }}", t.at("uprobe", "add+2"));
    let out = common::run_sonde(&["--check", "-e", &bad]);
    assert_eq!(
        out.code,
        Some(1),
        "stdout: {}\nstderr: {}",
        out.stdout,
        out.stderr
    );
    assert!(
        out.stderr.contains("sonde::probe::bad_offset"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("offset 2 is in the middle of an instruction of `add`"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("the nearest instruction boundaries are add+1 and add+4"),
        "{}",
        out.stderr
    );
    // Real boundaries are accepted, and --unsafe lets the bad one through.
    for prog in [
        format!("{} {{ }}", t.at("uprobe", "add+1")),
        format!("{} {{ }}", t.at("uprobe", "add+4")),
    ] {
        common::run_sonde(&["--check", "-e", &prog]).ok_stdout();
    }
    common::run_sonde(&["--check", "--unsafe", "-e", &bad]).ok_stdout();
}

#[test]
fn ustacks_of_processes_that_lived_a_millisecond_resolve() {
    if skip_unless_root("ustacks_of_processes_that_lived_a_millisecond_resolve") {
        return;
    }
    // Twenty runs of the target, each alive for about a millisecond and not held by sonde
    // (no -c): they are gone long before the maps print, and before the event loop's next
    // tick could read their /proc/PID/maps. Every frame of every stack must still resolve,
    // in the PIE and in its shared library (lib_call), and usym() as well.
    const RUNS: u64 = 20;
    let t = build_probe_target("up-short");
    let prog = format!(
        r#"{} {{ @[ustack] = count(); @u[usym(reg("ip"))] = count(); }}"#,
        t.at("uprobe", "leaf")
    );
    let mut tracer = Tracer::start(&["-e", &prog]);
    assert!(tracer.wait_attached(ATTACH_TIMEOUT), "sonde did not attach");
    common::settle();
    for _ in 0..RUNS {
        let status = std::process::Command::new(&t.bin)
            .args(["now", "calls"])
            .stdout(std::process::Stdio::null())
            .status()
            .expect("the target runs");
        assert!(status.success());
    }
    std::thread::sleep(Duration::from_millis(300));
    tracer.interrupt();
    let out = tracer.finish(Duration::from_secs(10));
    let text = out.ok_stdout();
    let (stacks_text, usyms) = text.split_at(text.find("@u[").unwrap_or(text.len()));
    let stacks = parse_stacks(stacks_text);
    let frames: Vec<&String> = stacks.iter().flat_map(|(f, _)| f).collect();
    let unresolved: Vec<&&String> = frames
        .iter()
        .filter(|f| {
            // A frame of code with DWARF (libc's, through its debug file) ends with
            // `@FILE:LINE` (show_debug_info).
            let f = f.split('@').next().unwrap_or_default();
            f.starts_with("0x")
                || !f
                    .rsplit_once('+')
                    .is_some_and(|(n, o)| !n.is_empty() && o.parse::<u64>().is_ok())
        })
        .collect();
    assert!(
        unresolved.is_empty(),
        "{} of {} frames unresolved: {unresolved:?}\n{text}",
        unresolved.len(),
        frames.len()
    );
    // The three call paths to leaf, each seen once per run: stacks that print the same are
    // one entry. A few stacks may come back empty (`@[]`), not unresolved: the kernel's stack
    // map refuses a stack whose hash bucket holds another one (-EEXIST), and 60 stacks of
    // distinct addresses in its 4096 buckets collide now and then.
    let empty: u64 = stacks_text
        .lines()
        .filter_map(|l| l.strip_prefix("@[]: ")?.parse::<u64>().ok())
        .sum();
    assert_eq!(stacks.len(), 3, "{text}");
    assert_eq!(
        stacks.iter().map(|(_, n)| n).sum::<u64>() + empty,
        3 * RUNS,
        "{text}"
    );
    assert!(empty <= RUNS / 4, "{text}");
    for name in [
        "leaf",
        "inner",
        "middle",
        "outer",
        "cb_square",
        "lib_call",
        "recurse",
        "main",
    ] {
        assert!(
            frames.iter().any(|f| frame_name(f) == name),
            "no {name} frame in {text}"
        );
    }
    // usym keys hold the pid: one entry per run.
    let usyms: Vec<&str> = usyms.lines().collect();
    assert_eq!(usyms, vec!["@u[leaf]: 3"; RUNS as usize], "{text}");
}

/// sonde allocates as it prints each event: were its own calls traced, a probe on malloc that
/// prints would feed on itself without end. Its own process is left out of uprobes (its
/// allocations never reach the script), other processes are traced as usual.
#[test]
fn uprobes_leave_sonde_itself_out() {
    if skip_unless_root("uprobes_leave_sonde_itself_out") {
        return;
    }
    let mut tracer = Tracer::start(&[
        "-c",
        "sh -c 'ls / >/dev/null; sleep 1'",
        "-e",
        r#"uprobe:libc:malloc { @[pid] = count(); } interval:ms:100 { printf("tick %d\n", elapsed); }"#,
    ]);
    let attached = tracer.wait_attached(ATTACH_TIMEOUT);
    let me = tracer.pid();
    let out = tracer.finish(Duration::from_secs(20));
    assert!(attached && out.code == Some(0), "{}", out.stderr);
    let counted: Vec<&str> = out.stdout.lines().filter(|l| l.starts_with("@[")).collect();
    assert!(
        !counted.is_empty(),
        "no malloc seen at all:\n{}",
        out.stdout
    );
    let own = format!("@[{me}]:");
    assert!(
        !counted.iter().any(|l| l.starts_with(&own)),
        "sonde ({me}) traced itself:\n{}",
        out.stdout
    );
}
