//! bpftrace 0.26.1's standard library (every `###` heading of its docs/stdlib.md), walked
//! name by name: each either compiles to BPF in a minimal use (`-d bpf`, which type-checks
//! and generates code without loading), or is in [`NOT_SUPPORTED`] and is refused with the
//! diagnostic given there. Then kernel runs of the task, clock and signal functions.

mod common;

use common::{run_sonde, skip_unless_root};

/// Every helper and map value function of bpftrace 0.26.1's stdlib.md, with a minimal use
/// (a whole script).
const STDLIB: &[(&str, &str)] = &[
    ("assert", r#"BEGIN { assert(1 == 1, "m"); }"#),
    ("assert_str", r#"BEGIN { assert_str("a"); }"#),
    ("bswap", "BEGIN { print(bswap((uint32)1)); }"),
    ("buf", "BEGIN { $a = (1, 2); print(buf(&$a, 2)); }"),
    ("cat", r#"BEGIN { cat("/proc/loadavg"); }"#),
    ("cgroup", "BEGIN { print(cgroup); }"),
    (
        "cgroup_path",
        r#"BEGIN { print(cgroup_path(cgroup)); print(cgroup_path(cgroup, "unified")); }"#,
    ),
    ("cgroupid", r#"BEGIN { print(cgroupid("CGROUP2")); }"#),
    ("clear", "BEGIN { @a[1] = 1; clear(@a); }"),
    ("comm", "BEGIN { print(comm); }"),
    ("cpid", "BEGIN { print(cpid); }"),
    ("cpu", "BEGIN { print(cpu); }"),
    ("curtask", "BEGIN { print(curtask); }"),
    ("default_str_length", "BEGIN { print(default_str_length); }"),
    ("delete", "BEGIN { @a[1] = 1; delete(@a, 1); }"),
    ("dw_ustack", "profile:hz:99 { @[dw_ustack] = count(); }"),
    ("elapsed", "BEGIN { print(elapsed); }"),
    ("errorf", r#"BEGIN { errorf("e %d", 1); }"#),
    ("exit", "BEGIN { exit(); }"),
    ("fail", r#"BEGIN { fail("stop %d", 1); }"#),
    (
        "find",
        "BEGIN { @m[2] = 1; let $v; if (find(@m, 2, $v)) { print($v); } }",
    ),
    ("func", "uprobe:/bin/bash:readline { print(func); }"),
    ("getopt", r#"BEGIN { print(getopt("n", 1, "a number")); }"#),
    ("gid", "BEGIN { print(gid); }"),
    ("has_cpid", "BEGIN { print(has_cpid); }"),
    ("has_key", "BEGIN { @a[1] = 1; print(has_key(@a, 1)); }"),
    ("is_array", "BEGIN { print(is_array(1)); }"),
    ("is_err", "BEGIN { print(is_err(curtask)); }"),
    ("is_integer", "BEGIN { print(is_integer(1)); }"),
    ("is_literal", "BEGIN { print(is_literal(1)); }"),
    ("is_ptr", "BEGIN { print(is_ptr(curtask)); }"),
    ("is_str", r#"BEGIN { print(is_str("a")); }"#),
    (
        "is_unsigned_integer",
        "BEGIN { print(is_unsigned_integer(1)); }",
    ),
    ("jiffies", "BEGIN { print(jiffies); }"),
    (
        "join",
        "tracepoint:syscalls:sys_enter_execve { join(args.argv); }",
    ),
    ("kaddr", r#"BEGIN { print(kaddr("vfs_read")); }"#),
    (
        "kfunc_allowed",
        r#"BEGIN { print(kfunc_allowed("bpf_task_from_pid")); }"#,
    ),
    (
        "kfunc_exist",
        r#"BEGIN { print(kfunc_exist("bpf_task_from_pid")); }"#,
    ),
    ("kptr", "BEGIN { print(kptr(curtask)); }"),
    ("kstack", "profile:hz:99 { @[kstack(perf, 3)] = count(); }"),
    ("ksym", "profile:hz:99 { @[ksym(reg(\"ip\"))] = count(); }"),
    ("leader_comm", "BEGIN { print(leader_comm); }"),
    ("leader_tid", "BEGIN { print(leader_tid(curtask)); }"),
    ("len", "BEGIN { @a[1] = 1; print(len(@a)); }"),
    ("macaddr", "BEGIN { print(macaddr(curtask)); }"),
    (
        "memcmp",
        r#"BEGIN { $a = "ab"; $b = "ac"; print(memcmp($a, $b, 2)); }"#,
    ),
    ("ncpus", "BEGIN { print(ncpus); }"),
    ("nsecs", "BEGIN { print(nsecs(monotonic)); }"),
    ("ntop", "BEGIN { print(ntop(0x0100007f)); }"),
    ("numaid", "BEGIN { print(numaid); }"),
    (
        "offsetof",
        "BEGIN { print(offsetof(struct task_struct, pid)); }",
    ),
    ("override", "kprobe:vfs_read { override(1); }"),
    ("path", "BEGIN { print(path(0)); }"),
    ("pcomm", "BEGIN { print(pcomm); }"),
    (
        "percpu_kaddr",
        r#"BEGIN { print(percpu_kaddr("runqueues")); }"#,
    ),
    ("pid", "BEGIN { print(pid(init)); }"),
    ("ppid", "BEGIN { print(ppid); }"),
    ("print", "BEGIN { print(1); }"),
    ("printf", r#"BEGIN { printf("%d\n", 1); }"#),
    ("probe", "BEGIN { print(probe); }"),
    ("probetype", "BEGIN { print(probetype); }"),
    ("pton", r#"BEGIN { print(pton("::1")); }"#),
    ("rand", "BEGIN { print(rand); }"),
    ("reg", r#"profile:hz:99 { print(reg("ip")); }"#),
    ("retval", "uretprobe:/bin/bash:readline { print(retval); }"),
    (
        "signal",
        r#"tracepoint:syscalls:sys_enter_getpid { signal("SIGUSR1"); }"#,
    ),
    ("signal_name", "BEGIN { print(signal_name(2)); }"),
    (
        "signal_thread",
        "tracepoint:syscalls:sys_enter_getpid { signal_thread(10); }",
    ),
    ("sizeof", "BEGIN { print(sizeof(uint32)); }"),
    ("skboutput", r#"BEGIN { skboutput("r.pcap", 0, 64, 0); }"#),
    ("socket_cookie", "BEGIN { print(socket_cookie(0)); }"),
    ("static_assert", r#"BEGIN { static_assert(1 < 2, "m"); }"#),
    ("str", "BEGIN { print(str(0)); }"),
    ("strcap", r#"BEGIN { print(strcap("abc")); }"#),
    (
        "strcontains",
        r#"BEGIN { print(strcontains("abc", "b")); }"#,
    ),
    ("strerror", "BEGIN { print(strerror(1)); }"),
    ("strftime", r#"BEGIN { print(strftime("%H", nsecs)); }"#),
    ("strlen", r#"BEGIN { print(strlen("abc")); }"#),
    ("strncmp", r#"BEGIN { print(strncmp("a", "b", 1)); }"#),
    ("strstr", r#"BEGIN { print(strstr("abc", "b")); }"#),
    ("syscall_name", "BEGIN { print(syscall_name(0)); }"),
    ("system", r#"BEGIN { system("true"); }"#),
    ("tid", "BEGIN { print(tid(curr_ns)); }"),
    ("time", "BEGIN { time(); }"),
    (
        "uaddr",
        r#"uprobe:/bin/bash:readline { printf("PS1: %s\n", str(*uaddr("ps1_prompt"))); }"#,
    ),
    ("uid", "BEGIN { print(uid); }"),
    ("unwatch", "BEGIN { unwatch(0); }"),
    ("uptr", "BEGIN { print(uptr(0)); }"),
    ("usermode", "profile:hz:99 { @[usermode] = count(); }"),
    ("username", "BEGIN { print(username); }"),
    (
        "ustack",
        "profile:hz:99 { @[ustack(raw, 5)] = count(); @b[ustack(build_id, 3)] = count(); }",
    ),
    (
        "usym",
        "uprobe:/bin/bash:readline { print(usym(reg(\"ip\"))); }",
    ),
    ("warnf", r#"BEGIN { warnf("w"); }"#),
    (
        "write_user",
        "tracepoint:syscalls:sys_enter_getpid { $x = 1; write_user(0, $x, 8); }",
    ),
    ("zero", "BEGIN { @a[1] = 1; zero(@a); }"),
    ("avg", "BEGIN { @ = avg(1); }"),
    ("count", "BEGIN { @ = count(); }"),
    ("hist", "BEGIN { @ = hist(1); }"),
    ("lhist", "BEGIN { @ = lhist(1, 0, 10, 1); }"),
    ("max", "BEGIN { @ = max(1); }"),
    ("min", "BEGIN { @ = min(1); }"),
    ("stats", "BEGIN { @ = stats(1); }"),
    ("sum", "BEGIN { @ = sum(1); }"),
    ("tseries", "BEGIN { @ = tseries(1, 1s, 10); }"),
];

/// Names refused here, with what the refusal says. `override` compiles but this kernel's
/// verifier refuses `bpf_override_return` (no `CONFIG_BPF_KPROBE_OVERRIDE`) when loaded;
/// `fail` is a build error by design.
const NOT_SUPPORTED: &[(&str, &str)] = &[
    ("dw_ustack", "dw_ustack"),
    ("fail", "sonde::sema::fail"),
    (
        "kfunc_allowed",
        "`kfunc_allowed()` is not supported by sonde yet: sonde calls only the kfuncs its own functions need",
    ),
    (
        "kfunc_exist",
        "`kfunc_exist()` is not supported by sonde yet: sonde calls only the kfuncs its own functions need",
    ),
    ("path", "`path()` needs fentry/fexit probes"),
    (
        "percpu_kaddr",
        // This kernel's kallsyms lists no data symbols (CONFIG_KALLSYMS_ALL is off).
        "this kernel cannot give the address of `runqueues`",
    ),
    ("skboutput", "`skboutput()` needs fentry/fexit probes"),
    (
        "socket_cookie",
        "`socket_cookie()` needs fentry/fexit probes",
    ),
    (
        "unwatch",
        "`unwatch()` is not supported: it removed the watchpoints of `asyncwatchpoint`",
    ),
];

/// `text` with its blanks collapsed and miette's `│` margins removed: diagnostics wrap long
/// messages at the terminal's width.
fn flat(text: &str) -> String {
    text.split_whitespace()
        .filter(|w| *w != "│")
        .collect::<Vec<_>>()
        .join(" ")
}

/// The mount point of the cgroup2 hierarchy (`/sys/fs/cgroup` or, on hybrid systems,
/// `/sys/fs/cgroup/unified`).
fn cgroup2_mount() -> String {
    let mounts = std::fs::read_to_string("/proc/mounts").expect("/proc/mounts");
    mounts
        .lines()
        .find_map(|l| l.strip_prefix("cgroup2 "))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or("/sys/fs/cgroup")
        .to_string()
}

#[test]
fn every_stdlib_name_compiles_or_is_refused_as_listed() {
    if skip_unless_root("every_stdlib_name_compiles_or_is_refused_as_listed") {
        return;
    }
    let mut failures = Vec::new();
    let cgroup2 = cgroup2_mount();
    for (name, script) in STDLIB {
        let script = script.replace("CGROUP2", &cgroup2);
        let out = run_sonde(&["--unsafe", "-d", "bpf", "-e", &script]);
        let refusal = NOT_SUPPORTED.iter().find(|(n, _)| n == name);
        match refusal {
            Some((_, why)) if out.code == Some(0) || !flat(&out.stderr).contains(why) => {
                failures.push(format!(
                    "{name}: expected a refusal with {why:?}, got {:?}\n{}",
                    out.code, out.stderr
                ));
            }
            None if out.code != Some(0) => {
                failures.push(format!("{name}: does not compile\n{}", out.stderr));
            }
            _ => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn override_is_refused_by_this_kernel_when_loaded() {
    if skip_unless_root("override_is_refused_by_this_kernel_when_loaded") {
        return;
    }
    let out = run_sonde(&[
        "--unsafe",
        "--dry-run",
        "-e",
        "kprobe:vfs_read { override(1); }",
    ]);
    assert_ne!(out.code, Some(0));
    assert!(
        out.stderr.contains("bpf_override_return") || out.stderr.contains("kprobe"),
        "{}",
        out.stderr
    );
}

#[test]
fn task_builtins_read_the_current_task_and_its_parent() {
    if skip_unless_root("task_builtins_read_the_current_task_and_its_parent") {
        return;
    }
    let prog = r#"BEGIN { printf("%d %s %d %d %d\n", ppid - ppid(curtask), pcomm, leader_tid - pid, numaid, has_cpid ? 1 : 0); print(leader_comm == comm); exit(); }"#;
    let out = run_sonde(&["-q", "-e", prog]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let parent = std::fs::read_to_string("/proc/thread-self/comm").expect("comm");
    assert_eq!(out.stdout, format!("0 {} 0 0 0\ntrue\n\n\n", parent.trim()));
}

#[test]
fn assert_reports_and_exits_1() {
    if skip_unless_root("assert_reports_and_exits_1") {
        return;
    }
    let prog = r#"BEGIN { assert(2 == 3, "two is not three"); printf("not reached\n"); }"#;
    let out = run_sonde(&["-q", "-e", prog]);
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(
        out.stderr
            .contains(":1:9-43: ERROR: assert failed: two is not three"),
        "{}",
        out.stderr
    );
    assert!(!out.stdout.contains("not reached"));
}

#[test]
fn signal_kills_the_traced_child() {
    if skip_unless_root("signal_kills_the_traced_child") {
        return;
    }
    let start = std::time::Instant::now();
    let prog =
        r#"tracepoint:syscalls:sys_enter_clock_nanosleep /pid == cpid/ { signal("SIGKILL"); }"#;
    let out = run_sonde(&["-q", "--unsafe", "-e", prog, "-c", "sleep 5"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(start.elapsed().as_secs() < 4, "the child was not killed");
}

#[test]
fn cgroupid_and_cgroup_path_name_the_current_cgroup() {
    if skip_unless_root("cgroupid_and_cgroup_path_name_the_current_cgroup") {
        return;
    }
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").expect("/proc/self/cgroup");
    let own = cgroups
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .expect("a cgroup v2 line")
        .to_string();
    let dir = format!("{}{}", cgroup2_mount(), own.trim_end_matches('/'));
    let prog = format!(
        r#"BEGIN {{ print(cgroupid("{dir}") == cgroup); print(cgroup_path(cgroup)); exit(); }}"#
    );
    let out = run_sonde(&["-q", "-e", &prog]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stdout.starts_with("true\n"), "{}", out.stdout);
    assert!(
        out.stdout.contains(&format!("unified:{own}")),
        "{}",
        out.stdout
    );
    // A filter keeps the hierarchies whose name matches its wildcard (cgroup2 is `unified`).
    let prog = r#"BEGIN { print(cgroup_path(cgroup, "unified")); print(cgroup_path(cgroup, "uni*")); printf("[%s]\n", cgroup_path(cgroup, "no-such-hierarchy")); exit(); }"#;
    let out = run_sonde(&["-q", "-e", prog]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let unified = format!("unified:{own}\n");
    assert_eq!(
        out.stdout,
        format!("{unified}{unified}[]\n\n\n"),
        "{}",
        out.stderr
    );
    // A path that is no cgroup v2 directory is refused when the program is built.
    let out = run_sonde(&["-d", "bpf", "-e", r#"BEGIN { print(cgroupid("/tmp")); }"#]);
    assert_ne!(out.code, Some(0));
    assert!(
        out.stderr.contains("no cgroup v2 at `/tmp`"),
        "{}",
        out.stderr
    );
}

#[test]
fn unavailable_functions_say_why() {
    let out = run_sonde(&["-d", "bpf", "-e", "BEGIN { print(path(0)); }"]);
    assert_ne!(out.code, Some(0));
    assert!(
        flat(&out.stderr).contains("`path()` needs fentry/fexit probes"),
        "{}",
        out.stderr
    );
}

/// `strlen` of an `int8 *` (a syscall's path argument) is the length of the string it
/// points to, read up to `max_strlen` as `str()` reads it.
#[test]
fn strlen_of_a_pointer_reads_the_string() {
    if skip_unless_root("strlen_of_a_pointer_reads_the_string") {
        return;
    }
    let prog = r#"tracepoint:syscalls:sys_enter_openat /pid == cpid && str(args.filename) == "/etc/hostname"/ { printf("%d %d\n", strlen(args.filename), strlen(str(args.filename, 5))); }"#;
    let out = run_sonde(&["-q", "-e", prog, "-c", "/usr/bin/cat /etc/hostname"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stdout.contains("13 4\n"), "{}", out.stdout);
}
