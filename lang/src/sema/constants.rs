//! Named constants: the script's `#define`s, the `#define`s of the headers it includes, and a
//! built-in table of the constants bpftrace's tools take from kernel headers.
//!
//! One [`Constants`] table serves the checker (an identifier's type) and the code generators
//! (its value), so both agree. A header is read through [`KernelInfo::header_defines`] (the
//! runtime reads it where it is installed, following its own `#include`s); the constants
//! tools rely on whose headers are kernel-internal or often absent (`TASK_*` from
//! `<linux/sched.h>`, `AF_*` from `<net/sock.h>`, signal numbers, errno values) come from
//! [`BUILTIN`] when the script includes one of their headers. A value is evaluated as a C
//! integer expression over the other constants (`#define AF_INET PF_INET`), or is a string.

use crate::ast::{CDef, CDefKind};
use crate::diag::Diagnostic;
use crate::kernel::{HeaderError, KernelInfo};
use crate::syntax::preprocess;
use std::collections::HashMap;

/// The value of a named constant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Constant {
    /// An integer (`#define N 5`, `#define M (N * 2)`).
    Int(i64),
    /// A string literal's bytes, without quotes (`#define NAME "x"`).
    Str(String),
}

/// A group of built-in constants and the headers that define them.
struct BuiltinGroup {
    headers: &'static [&'static str],
    values: &'static [(&'static str, i64)],
}

/// Constants bpftrace's tools take from headers, by the headers a script may include for them.
const BUILTIN: &[BuiltinGroup] = &[
    BuiltinGroup {
        headers: &["linux/sched.h"],
        values: &[
            ("TASK_RUNNING", 0x0),
            ("TASK_INTERRUPTIBLE", 0x1),
            ("TASK_UNINTERRUPTIBLE", 0x2),
            ("__TASK_STOPPED", 0x4),
            ("__TASK_TRACED", 0x8),
            ("EXIT_DEAD", 0x10),
            ("EXIT_ZOMBIE", 0x20),
            ("TASK_PARKED", 0x40),
            ("TASK_DEAD", 0x80),
            ("TASK_WAKEKILL", 0x100),
            ("TASK_WAKING", 0x200),
            ("TASK_NOLOAD", 0x400),
            ("TASK_NEW", 0x800),
            ("TASK_KILLABLE", 0x102),
            ("TASK_STOPPED", 0x104),
            ("TASK_TRACED", 0x8),
            ("TASK_IDLE", 0x402),
        ],
    },
    BuiltinGroup {
        headers: &[
            "sys/socket.h",
            "linux/socket.h",
            "net/sock.h",
            "bits/socket.h",
            "netinet/in.h",
            "linux/in.h",
            "linux/in6.h",
        ],
        values: &[
            ("AF_UNSPEC", 0),
            ("AF_UNIX", 1),
            ("AF_LOCAL", 1),
            ("AF_INET", 2),
            ("AF_AX25", 3),
            ("AF_IPX", 4),
            ("AF_APPLETALK", 5),
            ("AF_BRIDGE", 7),
            ("AF_INET6", 10),
            ("AF_NETLINK", 16),
            ("AF_PACKET", 17),
            ("AF_VSOCK", 40),
            ("AF_XDP", 44),
            ("PF_UNSPEC", 0),
            ("PF_UNIX", 1),
            ("PF_LOCAL", 1),
            ("PF_INET", 2),
            ("PF_INET6", 10),
            ("PF_NETLINK", 16),
            ("PF_PACKET", 17),
            ("SOCK_STREAM", 1),
            ("SOCK_DGRAM", 2),
            ("SOCK_RAW", 3),
            ("SOCK_SEQPACKET", 5),
            ("IPPROTO_IP", 0),
            ("IPPROTO_ICMP", 1),
            ("IPPROTO_TCP", 6),
            ("IPPROTO_UDP", 17),
            ("IPPROTO_IPV6", 41),
        ],
    },
    BuiltinGroup {
        headers: &["net/tcp_states.h", "linux/tcp.h", "netinet/tcp.h"],
        values: &[
            ("TCP_ESTABLISHED", 1),
            ("TCP_SYN_SENT", 2),
            ("TCP_SYN_RECV", 3),
            ("TCP_FIN_WAIT1", 4),
            ("TCP_FIN_WAIT2", 5),
            ("TCP_TIME_WAIT", 6),
            ("TCP_CLOSE", 7),
            ("TCP_CLOSE_WAIT", 8),
            ("TCP_LAST_ACK", 9),
            ("TCP_LISTEN", 10),
            ("TCP_CLOSING", 11),
            ("TCP_NEW_SYN_RECV", 12),
        ],
    },
    BuiltinGroup {
        headers: &["signal.h", "linux/signal.h", "asm/signal.h", "sys/signal.h"],
        values: &[
            ("SIGHUP", 1),
            ("SIGINT", 2),
            ("SIGQUIT", 3),
            ("SIGILL", 4),
            ("SIGTRAP", 5),
            ("SIGABRT", 6),
            ("SIGBUS", 7),
            ("SIGFPE", 8),
            ("SIGKILL", 9),
            ("SIGUSR1", 10),
            ("SIGSEGV", 11),
            ("SIGUSR2", 12),
            ("SIGPIPE", 13),
            ("SIGALRM", 14),
            ("SIGTERM", 15),
            ("SIGSTKFLT", 16),
            ("SIGCHLD", 17),
            ("SIGCONT", 18),
            ("SIGSTOP", 19),
            ("SIGTSTP", 20),
            ("SIGTTIN", 21),
            ("SIGTTOU", 22),
            ("SIGURG", 23),
            ("SIGXCPU", 24),
            ("SIGXFSZ", 25),
            ("SIGVTALRM", 26),
            ("SIGPROF", 27),
            ("SIGWINCH", 28),
            ("SIGIO", 29),
            ("SIGPWR", 30),
            ("SIGSYS", 31),
        ],
    },
    BuiltinGroup {
        headers: &[
            "errno.h",
            "linux/errno.h",
            "asm/errno.h",
            "asm-generic/errno.h",
            "asm-generic/errno-base.h",
        ],
        values: &[
            ("EPERM", 1),
            ("ENOENT", 2),
            ("ESRCH", 3),
            ("EINTR", 4),
            ("EIO", 5),
            ("ENXIO", 6),
            ("E2BIG", 7),
            ("ENOEXEC", 8),
            ("EBADF", 9),
            ("ECHILD", 10),
            ("EAGAIN", 11),
            ("EWOULDBLOCK", 11),
            ("ENOMEM", 12),
            ("EACCES", 13),
            ("EFAULT", 14),
            ("EBUSY", 16),
            ("EEXIST", 17),
            ("EXDEV", 18),
            ("ENODEV", 19),
            ("ENOTDIR", 20),
            ("EISDIR", 21),
            ("EINVAL", 22),
            ("ENFILE", 23),
            ("EMFILE", 24),
            ("ENOTTY", 25),
            ("EFBIG", 27),
            ("ENOSPC", 28),
            ("ESPIPE", 29),
            ("EROFS", 30),
            ("EMLINK", 31),
            ("EPIPE", 32),
            ("EDOM", 33),
            ("ERANGE", 34),
            ("EDEADLK", 35),
            ("ENAMETOOLONG", 36),
            ("ENOSYS", 38),
            ("ENOTEMPTY", 39),
            ("ELOOP", 40),
            ("ENOTSOCK", 88),
            ("EOPNOTSUPP", 95),
            ("EADDRINUSE", 98),
            ("EADDRNOTAVAIL", 99),
            ("ENETUNREACH", 101),
            ("ECONNABORTED", 103),
            ("ECONNRESET", 104),
            ("ENOBUFS", 105),
            ("EISCONN", 106),
            ("ENOTCONN", 107),
            ("ETIMEDOUT", 110),
            ("ECONNREFUSED", 111),
            ("EHOSTUNREACH", 113),
            ("EALREADY", 114),
            ("EINPROGRESS", 115),
        ],
    },
];

/// The header a built-in constant comes from, for a diagnostic about a script that uses it
/// without including it.
pub fn builtin_header(name: &str) -> Option<&'static str> {
    BUILTIN
        .iter()
        .find(|g| g.values.iter().any(|(n, _)| *n == name))
        .map(|g| g.headers[0])
}

/// The value of a built-in constant (`ENOENT` is 2), whatever header defines it.
pub fn builtin_value(name: &str) -> Option<i64> {
    BUILTIN
        .iter()
        .find_map(|g| g.values.iter().find(|(n, _)| *n == name))
        .map(|(_, v)| *v)
}

/// The named constants a script can use.
#[derive(Clone, Debug, Default)]
pub struct Constants {
    /// Name → value text (the script's `#define`s win over headers').
    defines: HashMap<String, String>,
}

impl Constants {
    /// The constants of a script with C definitions `defs` (its `#include`s and `#define`s),
    /// and the errors of the headers that could not be read.
    pub fn of(defs: &[CDef], kernel: &dyn KernelInfo) -> (Constants, Vec<Diagnostic>) {
        let mut defines = HashMap::new();
        let mut errors = Vec::new();
        for d in defs.iter().filter(|d| d.kind == CDefKind::Include) {
            let header = d.name.trim_matches(['<', '>', '"']);
            let written = if d.value.is_empty() {
                format!("<{header}>")
            } else {
                d.value.clone()
            };
            match kernel.header_defines(&written) {
                Ok(found) => {
                    for (name, value) in found {
                        defines.entry(name).or_insert(value);
                    }
                }
                // sonde's table has the constants of a header that is not installed.
                Err(HeaderError::NotFound(_))
                    if BUILTIN.iter().any(|g| g.headers.contains(&header)) => {}
                Err(HeaderError::NotFound(e) | HeaderError::Unread(e)) => errors.push(
                    Diagnostic::error("sonde::parse::include", d.span, e)
                        .with_label("this #include")
                        .with_help(
                            "`#include \"p.h\"` looks beside the script, then in the working \
                             directory; `#include <p.h>` in the -I directories, then the \
                             system's (/usr/local/include, /usr/include)",
                        ),
                ),
            }
            for g in BUILTIN.iter().filter(|g| g.headers.contains(&header)) {
                for (name, value) in g.values {
                    defines
                        .entry((*name).to_string())
                        .or_insert_with(|| value.to_string());
                }
            }
        }
        for d in defs.iter().filter(|d| d.kind == CDefKind::Define) {
            defines.insert(d.name.clone(), d.value.clone());
        }
        (Constants { defines }, errors)
    }

    /// The value of constant `name`, if it is one and its value is an integer expression or
    /// a string literal.
    pub fn get(&self, name: &str) -> Option<Constant> {
        let v = self.defines.get(name)?.trim();
        if v.len() >= 2 && v.starts_with('"') && v.ends_with('"') {
            return Some(Constant::Str(v[1..v.len() - 1].to_string()));
        }
        preprocess::value(v, &self.defines).map(Constant::Int)
    }

    /// Why `#define` `name`'s value is not a constant (`None` when it is one, or is no
    /// `#define`).
    pub fn why_not(&self, name: &str) -> Option<String> {
        let v = self.defines.get(name)?.trim();
        if v.len() >= 2 && v.starts_with('"') && v.ends_with('"') {
            return None;
        }
        preprocess::value_or_why(v, &self.defines).err()
    }

    /// True when `name` is a `#define` of the script or of a header it includes, whatever
    /// its value.
    pub fn is_defined(&self, name: &str) -> bool {
        self.defines.contains_key(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::NoKernel;
    use crate::span::Span;

    fn cdef(kind: CDefKind, name: &str, value: &str) -> CDef {
        CDef {
            kind,
            name: name.into(),
            value: value.into(),
            fields: Vec::new(),
            enumerators: Vec::new(),
            span: Span::new(0, 0),
            packed: false,
        }
    }

    #[test]
    fn defines_evaluate_over_each_other_and_builtins_need_their_header() {
        let defs = [
            cdef(CDefKind::Define, "N", "5"),
            cdef(CDefKind::Define, "M", "(N * 2 + TASK_INTERRUPTIBLE)"),
            cdef(CDefKind::Define, "S", "\"hi\""),
            cdef(CDefKind::Define, "F", "foo(1)"),
            cdef(CDefKind::Include, "<linux/sched.h>", ""),
        ];
        let c = Constants::of(&defs, &NoKernel).0;
        assert_eq!(c.get("N"), Some(Constant::Int(5)));
        assert_eq!(c.get("M"), Some(Constant::Int(11)));
        assert_eq!(c.get("S"), Some(Constant::Str("hi".into())));
        assert_eq!(c.get("F"), None);
        assert!(c.is_defined("F"));
        assert_eq!(c.get("TASK_RUNNING"), Some(Constant::Int(0)));
        assert_eq!(c.get("AF_INET"), None);
        assert_eq!(builtin_header("AF_INET"), Some("sys/socket.h"));
    }

    #[test]
    fn a_script_define_wins_over_a_header() {
        let defs = [
            cdef(CDefKind::Include, "<sys/socket.h>", ""),
            cdef(CDefKind::Define, "AF_INET", "99"),
        ];
        let c = Constants::of(&defs, &NoKernel).0;
        assert_eq!(c.get("AF_INET"), Some(Constant::Int(99)));
        assert_eq!(c.get("AF_INET6"), Some(Constant::Int(10)));
    }
}
