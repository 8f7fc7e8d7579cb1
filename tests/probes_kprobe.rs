//! kprobe, kretprobe and fentry scripts on a kernel without kprobes and BPF trampolines (the
//! project's machines): they type-check (`--check`), compile to BPF (`--dump bpf`), and at run
//! time fail with exit code 1 and a diagnostic on the probe that names the tracepoint serving
//! the same purpose — never a panic.

mod common;

use common::{run_sonde, skip_unless_root};

/// Whether this kernel can attach kprobes (then the failure paths cannot be observed).
fn kernel_has_kprobes() -> bool {
    std::path::Path::new("/sys/bus/event_source/devices/kprobe").exists()
        || std::path::Path::new("/sys/kernel/tracing/kprobe_events").exists()
}

/// The stderr words, without miette's line wrapping and `│` gutter.
fn words(s: &str) -> String {
    s.split_whitespace()
        .filter(|w| *w != "│")
        .collect::<Vec<_>>()
        .join(" ")
}

const CASES: &[(&str, &str, &str, &str)] = &[
    (
        "kprobe:tcp_set_state { @[comm] = count(); }",
        "sonde::attach::kprobe_unavailable",
        "this kernel does not support kprobes",
        "use `tracepoint:sock:inet_sock_set_state` instead",
    ),
    (
        "kretprobe:do_sys_openat2 { @ = hist(retval); }",
        "sonde::attach::kprobe_unavailable",
        "this kernel does not support kretprobes",
        "use `tracepoint:syscalls:sys_exit_openat` instead",
    ),
    (
        "fentry:vfs_read { @ = count(); }",
        "sonde::attach::fentry_unavailable",
        "this kernel does not support fentry probes (no BPF trampolines)",
        "use `tracepoint:syscalls:sys_enter_read` instead",
    ),
];

#[test]
fn kprobe_scripts_type_check_and_compile() {
    for (prog, ..) in CASES {
        let out = run_sonde(&["--check", "-e", prog]);
        assert_eq!(out.code, Some(0), "{prog}: {}", out.stderr);
        let out = run_sonde(&["--dump", "bpf", "-e", prog]);
        let text = out.ok_stdout();
        assert!(text.contains("exit"), "{prog}: {text}");
        let section = prog.split(':').next().unwrap();
        assert!(
            text.contains(&format!("({section}/")),
            "{prog}: program section in {text}"
        );
    }
}

#[test]
fn kprobe_attach_fails_with_the_tracepoint_alternative() {
    if skip_unless_root("kprobe_attach_fails_with_the_tracepoint_alternative") {
        return;
    }
    if kernel_has_kprobes() {
        eprintln!("skipping: this kernel has kprobes, the attach would succeed");
        return;
    }
    eprintln!(
        "this kernel has no /sys/bus/event_source/devices/kprobe and no kprobe_events, and no \
         BPF trampolines: kprobes, kretprobes and fentry cannot attach for real here"
    );
    for (prog, code, message, help) in CASES {
        let out = run_sonde(&["-e", prog]);
        assert_eq!(out.code, Some(1), "{prog}: {}", out.stderr);
        assert!(!out.stderr.contains("panicked"), "{prog}: {}", out.stderr);
        assert_eq!(out.stdout, "", "{prog}");
        let w = words(&out.stderr);
        assert!(w.contains(code), "{prog}: {w}");
        assert!(w.contains(message), "{prog}: {w}");
        assert!(w.contains(help), "{prog}: {w}");
        // The label points at the attach point (line 1, column 1).
        assert!(out.stderr.contains("[-e:1:1]"), "{prog}: {}", out.stderr);
    }
}
