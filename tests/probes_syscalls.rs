//! Syscall tracepoints (`tracepoint:syscalls:sys_enter_*` / `sys_exit_*`), which sonde serves
//! through one raw tracepoint per probe that dispatches on the syscall number when an attach
//! point matches many syscalls (or `config = { syscall_dispatch = always }`): every argument,
//! the number and the return value read as the tracepoint format says, wildcards count each
//! syscall under its own probe name, and several probes on one syscall run in script order.

mod common;

use common::{TempDir, build_target, run_sonde, skip_unless_root};

/// The same script through the dispatch and through the perf-event tracepoints prints the
/// same arguments, numbers and results.
#[test]
fn arguments_numbers_and_results_are_the_tracepoints() {
    if skip_unless_root("arguments_numbers_and_results_are_the_tracepoints") {
        return;
    }
    let dir = TempDir::new("syscall-args");
    let bin = build_target(&dir, "syscall_args");
    for mode in ["always", "never"] {
        arguments_through(&bin, mode);
    }
}

fn arguments_through(bin: &std::path::Path, mode: &str) {
    let script = r#"
config = { print_maps_on_exit = false; syscall_dispatch = MODE }
tracepoint:syscalls:sys_enter_read /pid == cpid/ {
    printf("read fd=%d buf=%d count=%d nr=%d\n", args.fd, args.buf != 0, args.count, args.__syscall_nr);
}
tracepoint:syscalls:sys_exit_read /pid == cpid/ { printf("read ret=%d nr=%d\n", args.ret, args.__syscall_nr); }
tracepoint:syscalls:sys_enter_openat /pid == cpid && strcontains(str(args.filename), "sonde-syscall-args")/ {
    printf("openat dfd=%d file=%s flags=%x mode=%o\n", args.dfd, str(args.filename), args.flags, args.mode);
    @open_tid = tid;
}
tracepoint:syscalls:sys_exit_openat /tid == @open_tid/ { printf("openat ret=%d\n", args.ret); @open_tid = 0; }
tracepoint:syscalls:sys_enter_mmap /pid == cpid && args.addr == 0x7000/ {
    printf("mmap %x %d %d %x %d %d\n", args.addr, args.len, args.prot, args.flags, (int64)args.fd, args.off);
}
tracepoint:syscalls:sys_exit_close /pid == cpid/ { printf("close ret=%d\n", args.ret); }
"#;
    let script = script.replace("MODE", mode);
    let out = run_sonde(&["-c", bin.to_str().unwrap(), "-e", &script]);
    let stdout = out.ok_stdout();
    let lines: Vec<&str> = stdout.lines().filter(|l| !l.is_empty()).collect();
    // The dynamic loader and libc start-up may read and mmap too: keep the workload's lines.
    let read = lines
        .iter()
        .position(|l| l.starts_with("read fd=-5"))
        .expect(stdout);
    assert_eq!(
        &lines[read..],
        [
            "read fd=-5 buf=1 count=123 nr=0",
            "read ret=-9 nr=0",
            "openat dfd=-100 file=/nonexistent/sonde-syscall-args flags=80000 mode=640",
            "openat ret=-2",
            "mmap 7000 4096 3 22 -1 8192",
            "close ret=-9",
        ],
        "syscall_dispatch = {mode}: {stdout}"
    );
}

#[test]
fn wildcards_count_each_syscall_and_probes_run_in_order() {
    if skip_unless_root("wildcards_count_each_syscall_and_probes_run_in_order") {
        return;
    }
    let dir = TempDir::new("syscall-wild");
    let bin = build_target(&dir, "syscall_args");
    let script = r#"
tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @order = @order * 10 + 1; }
tracepoint:syscalls:sys_enter_g*, tracepoint:syscalls:sys_exit_g* /pid == cpid/ { @[probe] = count(); }
tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @order = @order * 10 + 2; }
END { @order = @order % 100; }
"#;
    let out = run_sonde(&["-c", bin.to_str().unwrap(), "-e", script]);
    let stdout = out.ok_stdout();
    assert!(
        stdout.contains("@[tracepoint:syscalls:sys_enter_getppid]: 5\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("@[tracepoint:syscalls:sys_exit_getppid]: 5\n"),
        "{stdout}"
    );
    // The last getppid ran the first probe, then the third.
    assert!(stdout.contains("@order: 12\n"), "{stdout}");
    // Every syscall of the pattern is a probe, as are the two getppid probes and END (the
    // count bpftrace prints).
    let n = std::fs::read_dir("/sys/kernel/tracing/events/syscalls")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("sys_enter_g") || n.starts_with("sys_exit_g"))
        .count();
    assert!(
        out.stderr.contains(&format!("Attached {} probes", n + 3)),
        "{}",
        out.stderr
    );
}
