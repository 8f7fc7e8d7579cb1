//! Functions of bpftrace's standard library that cannot work here, with why: a call is
//! refused by the type rule with a diagnostic that says so, rather than as an unknown
//! function. Each is one [`Unavailable`] entry.

use sonde_lang::catalog::{CallCheck, Function};
use sonde_lang::diag::Diagnostic;
use sonde_lang::types::Type;

/// Code of a call of a function that this kernel or sonde does not provide.
pub const UNAVAILABLE: &str = "sonde::sema::function_unavailable";

/// A function that is known but refused, with the reason and what to do instead.
pub struct Unavailable {
    /// Its name.
    pub name: &'static str,
    /// Its signature in bpftrace.
    pub signature: &'static str,
    /// What it does in bpftrace, and that it is unavailable (the `--help` line).
    pub doc: &'static str,
    /// Why it cannot work (the diagnostic's message follows `` `name()` ``).
    pub why: &'static str,
    /// What to do instead.
    pub help: &'static str,
}

impl Function for Unavailable {
    fn name(&self) -> &'static str {
        self.name
    }
    fn signature(&self) -> &'static str {
        self.signature
    }
    fn doc(&self) -> &'static str {
        self.doc
    }
    fn check(&self, call: &CallCheck<'_>) -> Result<Type, Diagnostic> {
        Err(Diagnostic::error(
            UNAVAILABLE,
            call.span,
            format!("`{}()` {}", self.name, self.why),
        )
        .with_label("not available")
        .with_help(self.help))
    }
}

impl crate::catalog::FunctionBackend for Unavailable {}

/// The reason of the functions that read `fentry` arguments.
const NEEDS_FENTRY: &str =
    "needs fentry/fexit probes (BTF-typed kernel function arguments), which this kernel lacks";

/// `path(p)`: a `struct path *` as a file name (`bpf_d_path`, fentry only).
pub static PATH: Unavailable = Unavailable {
    name: "path",
    signature: "path(struct path *p[, size])",
    doc: "Full path of a struct path (bpftrace: fentry/fexit only; unavailable here, this kernel lacks fentry)",
    why: NEEDS_FENTRY,
    help: "read the file name from a tracepoint instead, e.g. `str(args.filename)` in `tracepoint:syscalls:sys_enter_openat`",
};

/// `skboutput(path, skb, len, offset)`: packets to a pcap file (fentry only).
pub static SKBOUTPUT: Unavailable = Unavailable {
    name: "skboutput",
    signature: "skboutput(path, skb, len, offset)",
    doc: "Writes packets to a pcap file (bpftrace: fentry/fexit only; unavailable here, this kernel lacks fentry)",
    why: NEEDS_FENTRY,
    help: "the `net:` and `skb:` tracepoints give packet metadata (`sonde -l 'tracepoint:net:*'`)",
};

/// `socket_cookie(sk)`: the cookie of a socket (`bpf_get_socket_cookie`, fentry only).
pub static SOCKET_COOKIE: Unavailable = Unavailable {
    name: "socket_cookie",
    signature: "socket_cookie(struct sock *sk)",
    doc: "Cookie of a socket (bpftrace: fentry/fexit only; unavailable here, this kernel lacks fentry)",
    why: NEEDS_FENTRY,
    help: "identify the socket by its address instead, e.g. `(uint64)args.skaddr` in `tracepoint:sock:inet_sock_set_state`",
};

/// `kfunc_allowed(name)`: whether a kfunc may be called from this probe.
pub static KFUNC_ALLOWED: Unavailable = Unavailable {
    name: "kfunc_allowed",
    signature: "kfunc_allowed(name)",
    doc: "Whether a BPF kfunc may be called here (not supported by sonde yet)",
    why: "is not supported by sonde yet: sonde calls only the kfuncs its own functions need (`comm(pid)` calls `bpf_task_from_pid`)",
    help: "sonde's builtins and functions use BPF helpers only; `sonde --info` lists what this kernel supports",
};

/// `kfunc_exist(name)`: whether a kfunc exists in the kernel.
pub static KFUNC_EXIST: Unavailable = Unavailable {
    name: "kfunc_exist",
    signature: "kfunc_exist(name)",
    doc: "Whether a BPF kfunc exists in the kernel (not supported by sonde yet)",
    why: "is not supported by sonde yet: sonde calls only the kfuncs its own functions need (`comm(pid)` calls `bpf_task_from_pid`)",
    help: "sonde's builtins and functions use BPF helpers only; `sonde --info` lists what this kernel supports",
};

/// `unwatch(addr)`: removed the watchpoints that `asyncwatchpoint` and
/// `watchpoint:FUNC+argN` probes set at run time; bpftrace 0.26 dropped those probes and,
/// with them, what `unwatch` did (it still type-checks there, but nothing implements it).
pub static UNWATCH: Unavailable = Unavailable {
    name: "unwatch",
    signature: "unwatch(addr)",
    doc: "Removes a watchpoint (not supported: bpftrace 0.26 removed the watchpoints it removed)",
    why: "is not supported: it removed the watchpoints of `asyncwatchpoint` and `watchpoint:FUNC+argN` probes, which bpftrace 0.26 dropped",
    help: "remove the call; a `watchpoint:ADDR:LEN:MODE` probe stays attached until the run ends (end it with `exit()`)",
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::functions::testutil::{check, int};

    #[test]
    fn calls_are_refused_with_the_reason() {
        for f in [
            &PATH,
            &SKBOUTPUT,
            &SOCKET_COOKIE,
            &KFUNC_ALLOWED,
            &KFUNC_EXIST,
            &UNWATCH,
        ] {
            let e = check(f, vec![int(0)]).unwrap_err();
            assert_eq!(e.code, UNAVAILABLE);
            assert!(
                e.message.starts_with(&format!("`{}()` ", f.name)),
                "{}",
                e.message
            );
            assert!(f.signature.starts_with(f.name));
        }
        let e = check(&PATH, vec![int(0)]).unwrap_err();
        assert!(e.message.contains("fentry"), "{}", e.message);
    }
}
