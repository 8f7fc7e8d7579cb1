//! Kernel types from BTF for real: `curtask` field chains checked against `/proc`, casts to
//! kernel struct pointers (also inside a uprobe, where plain pointers are user memory),
//! `sizeof`/`offsetof` checked against the kernel's BTF (read here by a small independent
//! parser), tracepoint pointer fields cast to their BTF struct, `ntop()` on a loopback TCP
//! connection made by the test, and `sonde -lv` on a struct.

mod common;
mod probes_support;

use common::{
    ATTACH_TIMEOUT, Target, Tracer, run_sonde, skip_unless_root, trace_target, with_exit_maps,
};
use probes_support::build_probe_target;
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

/// `(size, byte offset of member)` of `struct name` in the kernel's BTF, or `None`.
fn btf_struct(name: &str, member: &str) -> Option<(u32, u32)> {
    let data = std::fs::read("/sys/kernel/btf/vmlinux").ok()?;
    let u32_at = |o: usize| u32::from_le_bytes(data[o..o + 4].try_into().unwrap());
    if data.get(..2)? != [0x9f, 0xeb] {
        return None;
    }
    let (hdr_len, type_off, type_len, str_off) = (
        u32_at(4) as usize,
        u32_at(8) as usize,
        u32_at(12) as usize,
        u32_at(16) as usize,
    );
    let types = hdr_len + type_off;
    let strs = hdr_len + str_off;
    let name_at = |off: u32| {
        let s = &data[strs + off as usize..];
        String::from_utf8_lossy(&s[..s.iter().position(|&b| b == 0).unwrap_or(0)]).into_owned()
    };
    let mut p = types;
    while p < types + type_len {
        let (name_off, info, size) = (u32_at(p), u32_at(p + 4), u32_at(p + 8));
        let (kind, vlen, kflag) = (
            (info >> 24) & 0x1f,
            (info & 0xffff) as usize,
            info >> 31 == 1,
        );
        let members = p + 12;
        if kind == 4 && name_at(name_off) == name {
            for i in 0..vlen {
                let m = members + i * 12;
                if name_at(u32_at(m)) == member {
                    let bits = u32_at(m + 8);
                    let bit_off = if kflag { bits & 0xff_ffff } else { bits };
                    return Some((size, bit_off / 8));
                }
            }
        }
        p = members
            + match kind {
                1 | 14 | 17 => 4,
                3 => 12,
                4 | 5 | 15 | 19 => vlen * 12,
                6 | 13 => vlen * 8,
                _ => 0,
            };
    }
    None
}

#[test]
fn curtask_fields_match_proc() {
    if skip_unless_root("curtask_fields_match_proc") {
        return;
    }
    let t = build_probe_target("btf-task");
    // SAFETY: gettid has no preconditions. The kernel's `parent` is the forking thread.
    let tid = unsafe { libc::gettid() };
    let mut target = Target::spawn(&t.bin, &["wait", "calls"]);
    let pid = target.pid();
    // The target's parent is this test process (the thread `tid` of it); /proc agrees.
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let ppid: u32 = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(ppid, std::process::id());
    assert_eq!(
        std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap(),
        "uprobe_target\n"
    );
    let prog = format!(
        r#"{} /pid == $1/ {{ printf("%d %s %d %d %d %s\n", curtask->pid, ((struct task_struct *)curtask)->comm, curtask->parent->pid, curtask->real_parent->tgid, kptr(curtask)->tgid, curtask->group_leader->comm); exit(); }}"#,
        t.at("uprobe", "add")
    );
    let out = trace_target(&["-e", &prog, &pid], &mut target);
    let line = format!("{pid} uprobe_target {tid} {ppid} {pid} uprobe_target\n");
    assert_eq!(out.ok_stdout(), with_exit_maps(&line, ""));
}

#[test]
fn sizeof_and_offsetof_match_the_kernel_btf() {
    if skip_unless_root("sizeof_and_offsetof_match_the_kernel_btf") {
        return;
    }
    let (size, pid_off) = btf_struct("task_struct", "pid").expect("struct task_struct in BTF");
    let (_, comm_off) = btf_struct("task_struct", "comm").expect("task_struct.comm in BTF");
    // The pid read through offsetof and a raw pointer equals the typed field access.
    let prog = r#"BEGIN { printf("%d %d %d %d\n", sizeof(struct task_struct), offsetof(struct task_struct, pid), offsetof(struct task_struct, comm), *(int32 *)((uint64)curtask + offsetof(struct task_struct, pid)) == curtask->pid); exit(); }"#;
    let out = run_sonde(&["-e", prog]);
    assert_eq!(
        out.ok_stdout(),
        with_exit_maps(&format!("{size} {pid_off} {comm_off} 1\n"), "")
    );
}

#[test]
fn list_verbose_shows_a_struct() {
    let out = run_sonde(&["-lv", "struct task_struct"]);
    let text = out.ok_stdout();
    assert!(
        text.starts_with("vmlinux: struct task_struct {\n"),
        "{text}"
    );
    assert!(text.lines().any(|l| l == "\tpid_t pid;"), "{text}");
    assert!(
        text.lines().any(|l| l == "\tstruct task_struct *parent;"),
        "{text}"
    );
}

#[test]
fn ntop_and_btf_cast_on_a_loopback_tcp_connection() {
    if skip_unless_root("ntop_and_btf_cast_on_a_loopback_tcp_connection") {
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // The client socket going CLOSE (7) -> SYN_SENT (2): once per connection, in connect().
    // skaddr is a `const void *` in the tracepoint: cast to its BTF struct to read the
    // destination port (network byte order) from the socket itself.
    let prog = format!(
        r#"tracepoint:sock:inet_sock_set_state /args->dport == {port} && args->newstate == 2/ {{ printf("%s %s %d %d %d %d %s\n", ntop(args->saddr), ntop(args->daddr), args->dport, args->family, args->oldstate, ((struct sock *)args->skaddr)->__sk_common.skc_dport, ntop(args->daddr_v6)); }}"#
    );
    let mut tracer = Tracer::start(&["-e", &prog]);
    assert!(tracer.wait_attached(ATTACH_TIMEOUT), "sonde did not attach");
    common::settle();
    let client = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let (server, _) = listener.accept().unwrap();
    drop((client, server));
    std::thread::sleep(Duration::from_millis(300));
    tracer.interrupt();
    let out = tracer.finish(Duration::from_secs(10));
    let line = format!(
        "127.0.0.1 127.0.0.1 {port} 2 7 {} ::ffff:127.0.0.1\n",
        port.swap_bytes()
    );
    assert_eq!(out.ok_stdout(), with_exit_maps(&line, ""));
}
