//! Syscall tracepoints (`tracepoint:syscalls:sys_enter_*`, `sys_exit_*`) through one raw
//! tracepoint per probe instead of one perf event per syscall.
//!
//! Every syscall tracepoint the kernel offers is synthesized from the `sys_enter`/`sys_exit`
//! raw tracepoints. Attaching 360 of them opens 360 perf events, and closing each waits for an
//! RCU grace period under a global mutex: Ctrl-C after `sys_enter_*` took 13–17 s. Here a
//! probe's syscall tracepoints are compiled as usual, one program per syscall (as raw
//! tracepoint programs), and a small *dispatcher* per probe, attached to `sys_enter` (or
//! `sys_exit`), tail-calls the program in slot `regs->orig_ax` of the probe's table (a
//! `BPF_MAP_TYPE_PROG_ARRAY`). Attaching a syscall is filling its slot; detaching the probe is
//! dropping one raw tracepoint link.
//!
//! The programs see what the tracepoint would show: `args` is a record with the tracepoint's
//! fields and types whose offsets are those of the registers the kernel copies them from
//! (arguments in `di`, `si`, `dx`, `r10`, `r8`, `r9`; `__syscall_nr` in `orig_ax`; `ret` in
//! `ax`), read from the task's `struct pt_regs` (`ctx[0]`). As the kernel's syscall events do,
//! the dispatcher ignores 32-bit (ia32) system calls, whose numbers belong to another table:
//! it runs the program only when the caller's code segment is the 64-bit user segment.
//! Numbers come from sonde's x86-64 table (`functions::syscalls`, the one `syscall_name()`
//! uses). A syscall whose number is unknown or whose format does not have this shape attaches
//! as an ordinary tracepoint.

use crate::bpf::insn::{Helper, Insn, JmpOp, Reg, Size};
use crate::catalog::functions::syscalls::entry_point_number;
use crate::codegen::emit::Emitted;
use crate::program::{AttachSpec, AttachTarget, MapKind, MapRole, MapSpec, ProgramSpec};
use sonde_lang::span::Span;
use sonde_lang::types::Record;

/// Offsets in x86-64 `struct pt_regs` of the six syscall argument registers, in order.
const ARG_REGS: [u32; 6] = [112, 104, 96, 56, 72, 64];
/// Offset of `ax` in `struct pt_regs`: a syscall's return value at `sys_exit`.
const REG_AX: u32 = 80;
/// Offset of `orig_ax` in `struct pt_regs`: the syscall number.
const REG_ORIG_AX: u32 = 120;
/// Offset of `cs` in `struct pt_regs`.
const REG_CS: u32 = 136;
/// `__USER_CS`: the code segment of 64-bit user code.
const USER64_CS: i32 = 0x33;

/// `(exit, number)` of a syscall tracepoint the dispatch can serve, from its category and
/// name (`syscalls`, `sys_enter_openat`).
pub fn syscall_of(category: &str, name: &str) -> Option<(bool, u32)> {
    if category != "syscalls" {
        return None;
    }
    let (exit, call) = match (
        name.strip_prefix("sys_enter_"),
        name.strip_prefix("sys_exit_"),
    ) {
        (Some(call), _) => (false, call),
        (_, Some(call)) => (true, call),
        _ => return None,
    };
    entry_point_number(call).map(|nr| (exit, nr))
}

/// The tracepoint record `record` (a syscall tracepoint's `args`) with each field moved to the
/// register it is copied from, or `None` when a field is not where syscall formats put it.
pub fn regs_record(record: &Record, exit: bool) -> Option<Record> {
    let mut out = record.clone();
    for f in &mut out.fields {
        if f.data_loc || f.bitfield.is_some() || f.ty.size() > 8 {
            return None;
        }
        f.offset = match (f.name.as_str(), f.offset, exit) {
            ("__syscall_nr", 8, _) => REG_ORIG_AX,
            (_, 16, true) => REG_AX,
            (_, off, false) if off >= 16 && off % 8 == 0 => {
                *ARG_REGS.get(usize::try_from((off - 16) / 8).ok()?)?
            }
            _ => return None,
        };
    }
    out.size = out
        .fields
        .iter()
        .map(|f| f.offset + f.ty.size())
        .max()
        .unwrap_or(0);
    Some(out)
}

/// The dispatcher program of one probe's syscall tracepoints: reads `orig_ax` and `cs` from
/// the registers, and tail-calls slot `orig_ax` of the table (map `table`) for 64-bit callers.
pub fn dispatcher(table: u32, slots: u32, span: Span) -> Emitted {
    let mut insns = Vec::new();
    let mut out_jumps = Vec::new();
    // r6 = ctx; r3 = regs + orig_ax; probe_read_kernel(r10 - 24, 24, r3): orig_ax, ip, cs.
    insns.push(Insn::mov64_reg(Reg::R6, Reg::R1));
    insns.push(Insn::ldx(Size::DW, Reg::R3, Reg::R6, 0));
    insns.push(Insn::add64_imm(Reg::R3, REG_ORIG_AX as i32));
    insns.push(Insn::mov64_reg(Reg::R1, Reg::R10));
    insns.push(Insn::add64_imm(Reg::R1, -24));
    insns.push(Insn::mov64_imm(Reg::R2, 24));
    insns.push(Insn::call(Helper::ProbeReadKernel));
    out_jumps.push(insns.len());
    insns.push(Insn::jmp_imm(JmpOp::Ne, Reg::R0, 0, 0));
    let cs_slot = (REG_CS - REG_ORIG_AX) as i16 - 24;
    insns.push(Insn::ldx(Size::DW, Reg::R1, Reg::R10, cs_slot));
    out_jumps.push(insns.len());
    insns.push(Insn::jmp_imm(JmpOp::Ne, Reg::R1, USER64_CS, 0));
    insns.push(Insn::ldx(Size::DW, Reg::R3, Reg::R10, -24));
    out_jumps.push(insns.len());
    insns.push(Insn::jmp_imm(JmpOp::Ge, Reg::R3, slots as i32, 0));
    insns.push(Insn::mov64_reg(Reg::R1, Reg::R6));
    let map_at = insns.len();
    insns.extend(Insn::ld_map_reloc(Reg::R2));
    insns.push(Insn::call(Helper::TailCall));
    let out = insns.len();
    insns.push(Insn::mov64_imm(Reg::R0, 0));
    insns.push(Insn::exit());
    for at in out_jumps {
        insns[at].off = (out - at - 1) as i16;
    }
    Emitted {
        spans: vec![span; insns.len()],
        insns,
        map_relocs: vec![(map_at, table)],
        func_relocs: Vec::new(),
        stack: 24,
    }
}

/// The ELF symbol of the dispatcher of probe `probe_index`'s syscall tracepoints.
fn dispatcher_symbol(probe_index: usize, exit: bool) -> String {
    format!("sysd{probe_index}{}", if exit { "x" } else { "e" })
}

/// What [`add_dispatchers`] adds: the table maps, and the dispatcher programs with their code.
pub struct Dispatchers {
    /// One table per probe and direction.
    pub maps: Vec<MapSpec>,
    /// One dispatcher per table, with its code.
    pub programs: Vec<(ProgramSpec, Emitted)>,
}

/// The tables and dispatchers the syscall slots among `programs` need, one per probe and
/// direction, in the order the probes come (so dispatchers attach, and run, in script order).
/// `first_map` is the index the first table will have in the script's map list.
pub fn add_dispatchers(programs: &[ProgramSpec], first_map: u32) -> Dispatchers {
    // (probe index, exit) -> (number of slots, span of the probe)
    let mut tables: Vec<((usize, bool), u32, Span)> = Vec::new();
    for p in programs {
        for t in &p.attach {
            if let AttachSpec::SyscallSlot { nr, exit, .. } = t.spec {
                let key = (p.probe_index, exit);
                match tables.iter_mut().find(|(k, _, _)| *k == key) {
                    Some(entry) => entry.1 = entry.1.max(nr + 1),
                    None => tables.push((key, nr + 1, p.span)),
                }
            }
        }
    }
    let mut out = Dispatchers {
        maps: Vec::new(),
        programs: Vec::new(),
    };
    for (i, ((probe_index, exit), slots, span)) in tables.into_iter().enumerate() {
        out.maps.push(MapSpec {
            symbol: crate::program::syscall_table_symbol(probe_index, exit),
            kind: MapKind::ProgArray,
            key_size: 4,
            value_size: 4,
            max_entries: slots,
            role: MapRole::SyscallTable,
        });
        let code = dispatcher(first_map + i as u32, slots, span);
        let symbol = dispatcher_symbol(probe_index, exit);
        let tracepoint = if exit { "sys_exit" } else { "sys_enter" };
        out.programs.push((
            ProgramSpec {
                section: format!("raw_tp/{symbol}"),
                symbol,
                attach: vec![AttachTarget {
                    spec: AttachSpec::SyscallDispatch { exit },
                    name: format!("rawtracepoint:{tracepoint}"),
                    span,
                }],
                probe_index,
                span,
                insn_spans: code.spans.clone(),
            },
            code,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_lang::ctypes::tracepoint_record;
    use sonde_lang::kernel::TracepointField;

    fn openat() -> Record {
        let f = |n: &str, c: &str, o, s| TracepointField::new(n, c, o, s, false);
        tracepoint_record(
            "syscalls",
            "sys_enter_openat",
            &[
                f("common_type", "unsigned short", 0, 2),
                f("__syscall_nr", "int", 8, 4),
                f("dfd", "int", 16, 8),
                f("filename", "const char *", 24, 8),
                f("flags", "int", 32, 8),
                f("mode", "umode_t", 40, 8),
            ],
        )
    }

    #[test]
    fn enter_fields_move_to_their_registers() {
        let r = regs_record(&openat(), false).unwrap();
        let at = |n: &str| r.field(n).unwrap().offset;
        assert_eq!(
            [
                at("__syscall_nr"),
                at("dfd"),
                at("filename"),
                at("flags"),
                at("mode")
            ],
            [120, 112, 104, 96, 56]
        );
        assert_eq!(r.size, 124);
        assert_eq!(r.name, "tracepoint:syscalls:sys_enter_openat");
    }

    #[test]
    fn exit_ret_is_ax_and_odd_formats_are_refused() {
        let f = |n: &str, c: &str, o, s| TracepointField::new(n, c, o, s, true);
        let exit = tracepoint_record(
            "syscalls",
            "sys_exit_read",
            &[f("__syscall_nr", "int", 8, 4), f("ret", "long", 16, 8)],
        );
        let r = regs_record(&exit, true).unwrap();
        assert_eq!(r.field("ret").unwrap().offset, 80);
        // An exit record with a second field, or an argument past the sixth, is not a shape
        // the registers hold.
        let odd = tracepoint_record(
            "syscalls",
            "sys_exit_x",
            &[f("ret", "long", 16, 8), f("more", "long", 24, 8)],
        );
        assert!(regs_record(&odd, true).is_none());
        let seventh = tracepoint_record("syscalls", "sys_enter_x", &[f("a7", "long", 64, 8)]);
        assert!(regs_record(&seventh, false).is_none());
    }

    #[test]
    fn only_syscall_tracepoints_with_known_numbers_dispatch() {
        assert_eq!(
            syscall_of("syscalls", "sys_enter_openat"),
            Some((false, 257))
        );
        assert_eq!(syscall_of("syscalls", "sys_exit_newstat"), Some((true, 4)));
        assert_eq!(syscall_of("syscalls", "sys_enter_nosuchcall"), None);
        assert_eq!(syscall_of("sched", "sys_enter_openat"), None);
        assert_eq!(syscall_of("syscalls", "openat"), None);
    }

    #[test]
    fn dispatcher_tail_calls_within_the_table() {
        let code = dispatcher(3, 258, Span::new(0, 5));
        assert_eq!(code.map_relocs.len(), 1);
        let (at, map) = code.map_relocs[0];
        assert_eq!(map, 3);
        assert!(code.insns[at].is_ld_imm64());
        assert!(code.insns[at + 2].is_call());
        assert_eq!(code.insns[at + 2].imm, Helper::TailCall as i32);
        // Every early exit lands on `r0 = 0; exit`.
        let out = code.insns.len() - 2;
        for (i, insn) in code.insns.iter().enumerate() {
            if insn.class() == crate::bpf::insn::class::JMP && !insn.is_call() && !insn.is_exit() {
                assert_eq!(i + 1 + insn.off as usize, out, "jump at {i}");
            }
        }
        assert!(code.insns.iter().any(|i| i.imm == 258));
        assert_eq!(code.spans.len(), code.insns.len());
    }
}
