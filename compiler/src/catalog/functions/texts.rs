//! `strerror(errno)` and `signal_name(sig)`: the text of an errno and of a signal number,
//! as bpftrace 0.26 words them, looked up in the probe (a binary search writing a string
//! constant, as `syscall_name` does) so the result can be a map key.
//!
//! The errno texts are the comments of the kernel's `asm-generic/errno-base.h` and
//! `errno.h` (bpftrace's table, whose one change is `EAGAIN`'s "Try again (operation would
//! block)"); the signal texts are glibc's `strsignal(3)`. A negative errno reads as its
//! absolute value; numbers outside the tables give "Unknown error" and "N/A".

use super::args::Args;
use super::function;
use crate::ir::{AluOp, Cond, Inst, Label, Operand, VReg, Width};
use crate::lower::cx::{LowerCx, Val};
use sonde_lang::types::Type;

/// Size of the strings both functions yield (bpftrace's `string[64]`).
pub const TEXT_SIZE: u32 = 64;

/// What `strerror` gives for numbers not in [`ERRNOS`].
pub const UNKNOWN_ERROR: &str = "Unknown error";

/// What `signal_name` gives for numbers not in [`SIGNAL_NAMES`].
pub const UNKNOWN_SIGNAL: &str = "N/A";

/// Linux errno numbers and their texts (the kernel's `asm-generic/errno*.h` comments, as
/// bpftrace 0.26 words them), sorted by number.
pub static ERRNOS: &[(u32, &str)] = &[
    (0, "Success"),
    (1, "Operation not permitted"),
    (2, "No such file or directory"),
    (3, "No such process"),
    (4, "Interrupted system call"),
    (5, "I/O error"),
    (6, "No such device or address"),
    (7, "Argument list too long"),
    (8, "Exec format error"),
    (9, "Bad file number"),
    (10, "No child processes"),
    (11, "Try again (operation would block)"),
    (12, "Out of memory"),
    (13, "Permission denied"),
    (14, "Bad address"),
    (15, "Block device required"),
    (16, "Device or resource busy"),
    (17, "File exists"),
    (18, "Cross-device link"),
    (19, "No such device"),
    (20, "Not a directory"),
    (21, "Is a directory"),
    (22, "Invalid argument"),
    (23, "File table overflow"),
    (24, "Too many open files"),
    (25, "Not a typewriter"),
    (26, "Text file busy"),
    (27, "File too large"),
    (28, "No space left on device"),
    (29, "Illegal seek"),
    (30, "Read-only file system"),
    (31, "Too many links"),
    (32, "Broken pipe"),
    (33, "Math argument out of domain of func"),
    (34, "Math result not representable"),
    (35, "Resource deadlock would occur"),
    (36, "File name too long"),
    (37, "No record locks available"),
    (38, "Invalid system call number"),
    (39, "Directory not empty"),
    (40, "Too many symbolic links encountered"),
    (42, "No message of desired type"),
    (43, "Identifier removed"),
    (44, "Channel number out of range"),
    (45, "Level 2 not synchronized"),
    (46, "Level 3 halted"),
    (47, "Level 3 reset"),
    (48, "Link number out of range"),
    (49, "Protocol driver not attached"),
    (50, "No CSI structure available"),
    (51, "Level 2 halted"),
    (52, "Invalid exchange"),
    (53, "Invalid request descriptor"),
    (54, "Exchange full"),
    (55, "No anode"),
    (56, "Invalid request code"),
    (57, "Invalid slot"),
    (59, "Bad font file format"),
    (60, "Device not a stream"),
    (61, "No data available"),
    (62, "Timer expired"),
    (63, "Out of streams resources"),
    (64, "Machine is not on the network"),
    (65, "Package not installed"),
    (66, "Object is remote"),
    (67, "Link has been severed"),
    (68, "Advertise error"),
    (69, "Srmount error"),
    (70, "Communication error on send"),
    (71, "Protocol error"),
    (72, "Multihop attempted"),
    (73, "RFS specific error"),
    (74, "Not a data message"),
    (75, "Value too large for defined data type"),
    (76, "Name not unique on network"),
    (77, "File descriptor in bad state"),
    (78, "Remote address changed"),
    (79, "Can not access a needed shared library"),
    (80, "Accessing a corrupted shared library"),
    (81, ".lib section in a.out corrupted"),
    (82, "Attempting to link in too many shared libraries"),
    (83, "Cannot exec a shared library directly"),
    (84, "Illegal byte sequence"),
    (85, "Interrupted system call should be restarted"),
    (86, "Streams pipe error"),
    (87, "Too many users"),
    (88, "Socket operation on non-socket"),
    (89, "Destination address required"),
    (90, "Message too long"),
    (91, "Protocol wrong type for socket"),
    (92, "Protocol not available"),
    (93, "Protocol not supported"),
    (94, "Socket type not supported"),
    (95, "Operation not supported on transport endpoint"),
    (96, "Protocol family not supported"),
    (97, "Address family not supported by protocol"),
    (98, "Address already in use"),
    (99, "Cannot assign requested address"),
    (100, "Network is down"),
    (101, "Network is unreachable"),
    (102, "Network dropped connection because of reset"),
    (103, "Software caused connection abort"),
    (104, "Connection reset by peer"),
    (105, "No buffer space available"),
    (106, "Transport endpoint is already connected"),
    (107, "Transport endpoint is not connected"),
    (108, "Cannot send after transport endpoint shutdown"),
    (109, "Too many references: cannot splice"),
    (110, "Connection timed out"),
    (111, "Connection refused"),
    (112, "Host is down"),
    (113, "No route to host"),
    (114, "Operation already in progress"),
    (115, "Operation now in progress"),
    (116, "Stale file handle"),
    (117, "Structure needs cleaning"),
    (118, "Not a XENIX named type file"),
    (119, "No XENIX semaphores available"),
    (120, "Is a named type file"),
    (121, "Remote I/O error"),
    (122, "Quota exceeded"),
    (123, "No medium found"),
    (124, "Wrong medium type"),
    (125, "Operation Canceled"),
    (126, "Required key not available"),
    (127, "Key has expired"),
    (128, "Key has been revoked"),
    (129, "Key was rejected by service"),
    (130, "Owner died"),
    (131, "State not recoverable"),
    (132, "Operation not possible due to RF-kill"),
    (133, "Memory page has hardware error"),
];

/// Signal numbers and their texts (glibc's `strsignal(3)`), sorted by number.
pub static SIGNAL_NAMES: &[(u32, &str)] = &[
    (0, "Unknown signal 0"),
    (1, "Hangup"),
    (2, "Interrupt"),
    (3, "Quit"),
    (4, "Illegal instruction"),
    (5, "Trace/breakpoint trap"),
    (6, "Aborted"),
    (7, "Bus error"),
    (8, "Floating point exception"),
    (9, "Killed"),
    (10, "User defined signal 1"),
    (11, "Segmentation fault"),
    (12, "User defined signal 2"),
    (13, "Broken pipe"),
    (14, "Alarm clock"),
    (15, "Terminated"),
    (16, "Stack fault"),
    (17, "Child exited"),
    (18, "Continued"),
    (19, "Stopped (signal)"),
    (20, "Stopped"),
    (21, "Stopped (tty input)"),
    (22, "Stopped (tty output)"),
    (23, "Urgent I/O condition"),
    (24, "CPU time limit exceeded"),
    (25, "File size limit exceeded"),
    (26, "Virtual timer expired"),
    (27, "Profiling timer expired"),
    (28, "Window changed"),
    (29, "I/O possible"),
    (30, "Power failure"),
    (31, "Bad system call"),
    (32, "Unknown signal 32"),
    (33, "Unknown signal 33"),
    (34, "Real-time signal 0"),
    (35, "Real-time signal 1"),
    (36, "Real-time signal 2"),
    (37, "Real-time signal 3"),
    (38, "Real-time signal 4"),
    (39, "Real-time signal 5"),
    (40, "Real-time signal 6"),
    (41, "Real-time signal 7"),
    (42, "Real-time signal 8"),
    (43, "Real-time signal 9"),
    (44, "Real-time signal 10"),
    (45, "Real-time signal 11"),
    (46, "Real-time signal 12"),
    (47, "Real-time signal 13"),
    (48, "Real-time signal 14"),
    (49, "Real-time signal 15"),
    (50, "Real-time signal 16"),
    (51, "Real-time signal 17"),
    (52, "Real-time signal 18"),
    (53, "Real-time signal 19"),
    (54, "Real-time signal 20"),
    (55, "Real-time signal 21"),
    (56, "Real-time signal 22"),
    (57, "Real-time signal 23"),
    (58, "Real-time signal 24"),
    (59, "Real-time signal 25"),
    (60, "Real-time signal 26"),
    (61, "Real-time signal 27"),
    (62, "Real-time signal 28"),
    (63, "Real-time signal 29"),
    (64, "Real-time signal 30"),
];

/// The text of errno `n` (negative numbers read as their absolute value).
pub fn strerror_text(n: i64) -> &'static str {
    lookup(ERRNOS, n.unsigned_abs()).unwrap_or(UNKNOWN_ERROR)
}

/// The text of signal `n`.
pub fn signal_text(n: i64) -> &'static str {
    u64::try_from(n)
        .ok()
        .and_then(|n| lookup(SIGNAL_NAMES, n))
        .unwrap_or(UNKNOWN_SIGNAL)
}

fn lookup(table: &'static [(u32, &'static str)], n: u64) -> Option<&'static str> {
    let n = u32::try_from(n).ok()?;
    table
        .binary_search_by_key(&n, |(k, _)| *k)
        .ok()
        .map(|i| table[i].1)
}

/// Writes `text` (NUL-terminated) at `buf`, which is zeroed beyond it.
fn write_text(cx: &mut LowerCx<'_>, buf: VReg, text: &str) {
    let mut bytes = text.as_bytes().to_vec();
    bytes.push(0);
    bytes.resize(bytes.len().next_multiple_of(8), 0);
    for (i, chunk) in bytes.chunks(8).enumerate() {
        let v = i64::from_le_bytes(chunk.try_into().expect("8-byte chunk"));
        cx.store(buf, (i * 8) as i32, Operand::Imm(v), Width::W64);
    }
}

/// Emits the search of the sorted, non-empty `table` for `n`, writing its text into `buf`
/// (left as is when `n` is not there), then jumps to `done`.
fn search(cx: &mut LowerCx<'_>, n: VReg, buf: VReg, table: &[(u32, &str)], done: Label) {
    if let [(k, text)] = table {
        cx.branch(Cond::Ne, n, Operand::Imm(i64::from(*k)), done);
        cx.zero(buf, 0, TEXT_SIZE);
        write_text(cx, buf, text);
        cx.emit(Inst::Jump(done));
        return;
    }
    let mid = table.len() / 2;
    let upper = cx.label();
    cx.branch(Cond::UGe, n, Operand::Imm(i64::from(table[mid].0)), upper);
    search(cx, n, buf, &table[..mid], done);
    cx.place_label(upper);
    search(cx, n, buf, &table[mid..], done);
}

/// The lowering of both: `n` (as a 32-bit signed value, negated when `abs`) looked up in
/// `table`, `unknown` otherwise.
fn lower_text(
    cx: &mut LowerCx<'_>,
    n: VReg,
    table: &[(u32, &str)],
    unknown: &str,
    abs: bool,
) -> Val {
    let n = cx.alu(AluOp::Shl, n, Operand::Imm(32));
    let n = cx.alu(AluOp::AShr, n, Operand::Imm(32));
    if abs {
        let positive = cx.label();
        cx.branch(Cond::SGe, n, Operand::Imm(0), positive);
        let neg = cx.vreg();
        cx.emit(Inst::Neg { dst: neg, src: n });
        cx.emit(Inst::Mov {
            dst: n,
            src: Operand::Reg(neg),
        });
        cx.place_label(positive);
    }
    let buf = cx.alloc_zeroed(TEXT_SIZE);
    write_text(cx, buf, unknown);
    let done = cx.label();
    search(cx, n, buf, table, done);
    cx.place_label(done);
    Val::Mem {
        ptr: buf,
        size: TEXT_SIZE,
    }
}

function!(
    /// `strerror(errno)`: the text of an errno value.
    Strerror, "strerror", "strerror(errno)",
    "Text of an errno value, as bpftrace words it (\"Operation not permitted\"); a negative value reads as its absolute value",
    unsafe = false,
    |call| {
        let a = Args::new(call, "strerror(errno)");
        a.arity(1, 1)?;
        a.int(0, "an integer errno")?;
        Ok(Type::Str { size: TEXT_SIZE })
    },
    lower |cx, call| {
        let n = cx.lower_int(&call.args[0])?;
        Ok(lower_text(cx, n, ERRNOS, UNKNOWN_ERROR, true))
    }
);

function!(
    /// `signal_name(sig)`: the text of a signal number.
    SignalName, "signal_name", "signal_name(sig)",
    "Text of a signal number, as strsignal(3) words it (\"Interrupt\"); \"N/A\" when unknown",
    unsafe = false,
    |call| {
        let a = Args::new(call, "signal_name(sig)");
        a.arity(1, 1)?;
        a.int(0, "an integer signal number")?;
        Ok(Type::Str { size: TEXT_SIZE })
    },
    lower |cx, call| {
        let n = cx.lower_int(&call.args[0])?;
        Ok(lower_text(cx, n, SIGNAL_NAMES, UNKNOWN_SIGNAL, false))
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables() {
        for t in [ERRNOS, SIGNAL_NAMES] {
            assert!(t.windows(2).all(|w| w[0].0 < w[1].0));
            assert!(t.iter().all(|(_, s)| s.len() < TEXT_SIZE as usize));
        }
        assert_eq!(strerror_text(1), "Operation not permitted");
        assert_eq!(strerror_text(-11), "Try again (operation would block)");
        assert_eq!(strerror_text(41), UNKNOWN_ERROR);
        assert_eq!(signal_text(2), "Interrupt");
        assert_eq!(signal_text(34), "Real-time signal 0");
        assert_eq!(signal_text(-1), UNKNOWN_SIGNAL);
    }
}
