//! Output functions run in user space: print, time, strftime, cat, system and join (and
//! `debugf`, which the kernel writes to its trace buffer). Expected
//! text is what bpftrace 0.17 prints for the same program.

mod common;

use common::{TempDir, build_target, run_sonde, skip_unless_root};
use std::process::Command;

fn year() -> String {
    let out = Command::new("date").arg("+%Y").output().expect("date runs");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn print_time_strftime_and_cat() {
    if skip_unless_root("print_time_strftime_and_cat") {
        return;
    }
    let prog = r#"BEGIN { print(5); print("str"); print((1, "a")); time("%Y\n"); printf("%s\n", strftime("%Y", nsecs)); cat("/proc/sys/kernel/ostype"); exit(); }"#;
    let out = run_sonde(&["-q", "-e", prog]);
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let y = year();
    assert_eq!(out.stdout, format!("5\nstr\n(1, a)\n{y}\n{y}\nLinux\n\n\n"));
}

#[test]
fn system_needs_unsafe_and_then_runs_the_command() {
    if skip_unless_root("system_needs_unsafe_and_then_runs_the_command") {
        return;
    }
    let prog = r#"BEGIN { system("echo hi %d", 5); exit(); }"#;
    let refused = run_sonde(&["-q", "-e", prog]);
    assert_eq!(refused.code, Some(1));
    assert!(
        refused.stderr.contains("--unsafe"),
        "stderr: {}",
        refused.stderr
    );
    let out = run_sonde(&["-q", "--unsafe", "-e", prog]);
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "hi 5\n\n\n");
}

/// `join(args.argv)` prints the arguments of an exec: the `-c` child's own exec is seen
/// because the child is held until the probe is attached.
#[test]
fn join_prints_the_argv_of_an_exec() {
    if skip_unless_root("join_prints_the_argv_of_an_exec") {
        return;
    }
    let prog = "tracepoint:syscalls:sys_enter_execve /pid == cpid/ { join(args.argv); join(args.argv, \",\"); }";
    let out = run_sonde(&["-q", "-c", "/bin/true a b c", "-e", prog]);
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "/bin/true a b c\n/bin/true,a,b,c\n\n\n");
}

#[test]
fn len_of_maps_and_kaddr_of_a_kernel_symbol() {
    if skip_unless_root("len_of_maps_and_kaddr_of_a_kernel_symbol") {
        return;
    }
    let kallsyms = std::fs::read_to_string("/proc/kallsyms").expect("kallsyms");
    let addr = kallsyms
        .lines()
        .find_map(|l| {
            let mut f = l.split_whitespace();
            let a = f.next()?;
            let _kind = f.next()?;
            (f.next()? == "schedule").then(|| u64::from_str_radix(a, 16).ok())?
        })
        .expect("schedule in kallsyms");
    let prog = r#"BEGIN { @a[1] = 1; @a[2] = 2; @a[3] = 3; @c[1] = count(); }
BEGIN { printf("%d %d %lx %s\n", len(@a), len(@c), kaddr("schedule"), ksym(kaddr("schedule"))); clear(@a); clear(@c); exit(); }"#;
    let out = run_sonde(&["-q", "-e", prog]);
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout, format!("3 1 {addr:x} schedule\n\n\n"));
}

/// `zero()` keeps a key-less aggregation printed as 0 (bpftrace prints `@z: 0`), while an
/// untouched one is not printed.
#[test]
fn zero_keeps_a_keyless_aggregation_printed() {
    if skip_unless_root("zero_keeps_a_keyless_aggregation_printed") {
        return;
    }
    let prog = "BEGIN { @z = count(); @k = count(); zero(@z); exit(); } END { @never = count(); @never = count(); clear(@never); }";
    let out = run_sonde(&["-q", "-e", prog]);
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "\n\n@k: 1\n@z: 0\n");
}

/// Strings cut to their size print with bpftrace 0.26's `str_trunc_trailer` (`..`): its
/// `types_format.cpp` marks a string that fills its type without a NUL, and `str()` reads one
/// byte more than `max_strlen` (below 1024) so that a longer string fills it.
///
/// This is bpftrace 0.26.1's `str_truncated` runtime test, at `max_strlen = 8`: `str()` keeps 8
/// characters and marks the cut in `printf`, `print` and map keys; `str(p, 5)` keeps 4 and
/// the NUL: it fits, and is not marked.
#[test]
fn cut_strings_end_with_the_trailer() {
    if skip_unless_root("cut_strings_end_with_the_trailer") {
        return;
    }
    let prog = r#"config = { max_strlen = 8 } tracepoint:syscalls:sys_enter_openat /pid == cpid && strncmp(str(args.filename), "/etc/hos", 8) == 0/ { printf("%s|\n", str(args.filename)); print(str(args.filename, 5)); @[str(args.filename)] = count(); }"#;
    let out = run_sonde(&["-q", "-e", prog, "-c", "/usr/bin/cat /etc/hostname"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stdout.contains("/etc/hos..|\n"), "{}", out.stdout);
    assert!(out.stdout.contains("\n/etc\n"), "{}", out.stdout);
    assert!(out.stdout.contains("@[/etc/hos..]: 1\n"), "{}", out.stdout);
}

/// bpftrace 0.27's default `max_strlen`, 1024: a path of 200 bytes prints whole (in
/// `printf`, as a map key, its `strlen()`; a `__data_loc` string, the exec's file name,
/// too), and `strcontains()` over the 1024-byte string finds a needle past its 64th byte; at
/// `max_strlen = 64` (sonde's default before) the needle is beyond the string and the probe
/// never fires, and the file name is cut.
#[test]
fn long_paths_print_whole_at_the_default_max_strlen() {
    if skip_unless_root("long_paths_print_whole_at_the_default_max_strlen") {
        return;
    }
    let dir = TempDir::new("long-path");
    let bin = build_target(&dir, "long_path");
    // Run through a link of a long name: the exec's `__data_loc` file name is long too.
    let link = dir.path().join("l".repeat(100));
    std::os::unix::fs::symlink(&bin, &link).expect("symlink");
    let path = format!(
        "/nonexistent/{}/sonde-long-needle/{}",
        "d".repeat(100),
        "e".repeat(68)
    );
    assert_eq!(path.len(), 200);
    let command = format!("{} {path}", link.display());
    let prog = r#"tracepoint:sched:sched_process_exec /pid == cpid/ { printf("exec %s\n", str(args.filename)); } tracepoint:syscalls:sys_enter_openat /pid == cpid && strcontains(str(args.filename), "sonde-long-needle")/ { printf("%s|%d\n", str(args.filename), strlen(str(args.filename))); @[str(args.filename)] = count(); }"#;
    let out = run_sonde(&["-q", "-e", prog, "-c", &command]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let exec = link.display().to_string();
    assert!(exec.len() > 100, "{exec}");
    assert_eq!(
        out.stdout,
        format!("exec {exec}\n{path}|200\n\n\n@[{path}]: 1\n")
    );
    let short = format!("config = {{ max_strlen = 64 }} {prog}");
    let out = run_sonde(&["-q", "-e", &short, "-c", &command]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.stdout, format!("exec {}\n\n\n", &exec[..63]));
}

/// Ctrl-C reaches the whole process group: END still runs its `system()` calls (a command
/// that started after the signal is not stopped by it; skbdrop's END report was lost).
#[test]
fn end_runs_its_system_calls_after_ctrl_c() {
    if skip_unless_root("end_runs_its_system_calls_after_ctrl_c") {
        return;
    }
    use std::io::{BufRead, BufReader, Read};
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    let mut child = Command::new(common::sonde())
        .args([
            "--unsafe",
            "-e",
            r#"i:ms:50 { @n = 1; } END { system("echo from-end"); printf("end\n"); }"#,
        ])
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while err.read_line(&mut line).unwrap_or(0) > 0 && !line.contains("Attached") {
        line.clear();
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    // SAFETY: kill(2) of the process group of a child started here, in its own group.
    unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGINT) };
    let (status, timed_out) =
        common::wait_with_timeout(&mut child, std::time::Duration::from_secs(10));
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert!(!timed_out && status.is_some(), "sonde did not end");
    assert!(out.starts_with("from-end\nend\n"), "{out}");
}

/// `debugf` writes through `bpf_trace_printk` into the kernel's trace buffer, as bpftrace
/// 0.27 does, with its warning; a marker unique to this run finds the line among others'.
#[test]
fn debugf_writes_to_the_trace_buffer() {
    if skip_unless_root("debugf_writes_to_the_trace_buffer") {
        return;
    }
    let marker = format!("sonde-debugf-{}", std::process::id());
    let prog = format!(r#"BEGIN {{ debugf("{marker} %d %x %s\n", 42, 255, comm); exit(); }}"#);
    let out = run_sonde(&["-q", "-e", &prog]);
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert!(
        out.stderr
            .contains("The debugf() builtin is not recommended for production use"),
        "stderr: {}",
        out.stderr
    );
    let trace = std::fs::read_to_string("/sys/kernel/tracing/trace").expect("trace buffer");
    let line = trace
        .lines()
        .find(|l| l.contains(&marker))
        .unwrap_or_else(|| panic!("no {marker} line in the trace buffer"));
    assert!(
        line.ends_with(&format!("bpf_trace_printk: {marker} 42 ff sonde")),
        "{line}"
    );
    // bpftrace's rules: 3 arguments at most, `%i` is not one of its conversions.
    let four = run_sonde(&[
        "-q",
        "-e",
        r#"BEGIN { debugf("%d %d %d %d", 1, 2, 3, 4); }"#,
    ]);
    assert_ne!(four.code, Some(0));
    assert!(
        four.stderr.contains("at most 3 arguments"),
        "{}",
        four.stderr
    );
    let conv = run_sonde(&["-q", "-e", r#"BEGIN { debugf("%i", 1); }"#]);
    assert_ne!(conv.code, Some(0));
    assert!(
        conv.stderr
            .contains("Invalid format specifier for `debugf`: i"),
        "{}",
        conv.stderr
    );
}

/// `str($1)` of a numeric parameter, and `str(42)` of an integer literal, is its text, as
/// bpftrace 0.27 folds it (not a read of memory at that address), in both engines;
/// `str($1, n)` keeps its first n characters.
#[test]
fn str_of_a_numeric_parameter_is_its_text() {
    let prog = r#"BEGIN { printf("[%s] [%s] [%s] %d %d [%s] [%s] %d\n", str($1), str($2), str($1, 1), str($1) == "42", $1 + 1, str(42), str(-7, 9), sizeof(str(1000))); @s[str($3)] = 1; exit(); }"#;
    let engines: &[&str] = if common::is_root() {
        &["bpf", "jit"]
    } else {
        &["jit"]
    };
    for engine in engines {
        let out = run_sonde(&[
            "-q", "--engine", engine, "-e", prog, "--", "42", "0x10", "-7",
        ]);
        assert_eq!(out.code, Some(0), "{engine}: {}", out.stderr);
        assert_eq!(
            out.stdout, "[42] [0x10] [4] 1 43 [42] [-7] 5\n\n\n@s[-7]: 1\n",
            "{engine}: {}",
            out.stderr
        );
    }
}

/// `len(kstack)` and `len(ustack)` are the numbers of frames the stacks taken at the same
/// place print (bpftrace 0.27), cut to a stack's frame limit; a stack kept in a variable is
/// refused with a diagnostic naming the argument.
#[test]
fn len_of_stacks_counts_their_frames() {
    if skip_unless_root("len_of_stacks_counts_their_frames") {
        return;
    }
    let prog = r#"tracepoint:syscalls:sys_enter_execve /pid == cpid/ { printf("%d %d %d\n", len(kstack), len(ustack), len(kstack(raw, 2))); printf("%s|%s|\n", kstack(raw), ustack(raw)); exit(); }"#;
    let out = run_sonde(&["-q", "-c", "/bin/true", "-e", prog]);
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let mut lines = out.stdout.lines();
    let counts: Vec<usize> = lines
        .next()
        .expect("a line of counts")
        .split(' ')
        .map(|n| n.parse().expect("a count"))
        .collect();
    let rest: Vec<&str> = lines.collect();
    let text = rest.join("\n");
    let mut stacks = text.split('|');
    let frames = |s: &str| s.lines().filter(|l| !l.trim().is_empty()).count();
    let kernel = frames(stacks.next().expect("kernel stack"));
    let user = frames(stacks.next().expect("user stack"));
    assert!(kernel > 0, "{}", out.stdout);
    assert_eq!(counts, vec![kernel, user, kernel.min(2)], "{}", out.stdout);
    let stored = run_sonde(&["-q", "-e", "BEGIN { $s = kstack; print(len($s)); }"]);
    assert_ne!(stored.code, Some(0));
    assert!(
        stored
            .stderr
            .contains("argument 1 of `len` must be `kstack` or `ustack` itself"),
        "{}",
        stored.stderr
    );
}

/// `ctx` outside iterators is the program's context pointer (bpftrace's `(struct x *)ctx`):
/// a tracepoint's record (its fields after the 8 bytes of common fields, which the kernel
/// overwrites before the program runs), a uprobe's `struct pt_regs`.
#[test]
fn ctx_is_the_programs_context_pointer() {
    if skip_unless_root("ctx_is_the_programs_context_pointer") {
        return;
    }
    let prog = r#"struct exec_rec { unsigned long common; int filename; int pid; int old_pid; }
        tracepoint:sched:sched_process_exec /pid == cpid/ {
          $r = (struct exec_rec *)ctx;
          printf("%d %d\n", $r->pid == args.pid, $r->old_pid == args.old_pid);
          exit();
        }"#;
    let out = run_sonde(&["-q", "-c", "/bin/true", "-e", prog]);
    assert_eq!(out.ok_stdout(), "1 1\n\n\n", "{}", out.stderr);
    let prog = r#"uprobe:/bin/bash:echo_builtin /pid == cpid/ { $r = (struct pt_regs *)ctx; printf("%d\n", $r->di == arg0); exit(); }"#;
    let out = run_sonde(&["-q", "-c", "/bin/bash -c 'echo hi >/dev/null'", "-e", prog]);
    assert_eq!(out.ok_stdout(), "1\n\n\n", "{}", out.stderr);
}
