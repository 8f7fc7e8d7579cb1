//! What this kernel supports of what sonde uses, found by asking it (`sonde --info`, as
//! `bpftrace --info`): tiny programs are loaded (program types, helpers, the instruction
//! limit from the verifier's log), maps created and links opened, then closed at once.
//! Nothing stays attached: a link is released as soon as it was created.
//!
//! Every probe needs the privileges of a kernel run; without them the kernel refuses
//! everything, and the report says so instead of answering "no" everywhere.

use crate::syscall::{BPF_LINK_CREATE, BPF_PROG_LOAD, ProgLoadAttr, sys_bpf_fd};
use sonde_system::btf::Btf;
use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;

/// `enum bpf_prog_type` values used here.
mod prog {
    pub const KPROBE: u32 = 2;
    pub const TRACEPOINT: u32 = 5;
    pub const PERF_EVENT: u32 = 7;
    pub const RAW_TRACEPOINT: u32 = 17;
    pub const TRACING: u32 = 26;
}

/// `enum bpf_attach_type` values used here (read from the kernel's BTF when it has them).
const FENTRY: (&str, u32) = ("BPF_TRACE_FENTRY", 24);
const KPROBE_MULTI: (&str, u32) = ("BPF_TRACE_KPROBE_MULTI", 42);
const UPROBE_MULTI: (&str, u32) = ("BPF_TRACE_UPROBE_MULTI", 48);
const KPROBE_SESSION: (&str, u32) = ("BPF_TRACE_KPROBE_SESSION", 56);
const ITER: (&str, u32) = ("BPF_TRACE_ITER", 28);

/// `BPF_LINK_CREATE` attributes with the multi-probe part (kprobe-multi and uprobe-multi
/// share its first words; zero for a tracing link).
#[repr(C)]
#[derive(Default)]
struct LinkCreateAttr {
    prog_fd: u32,
    target_fd: u32,
    attach_type: u32,
    flags: u32,
    /// kprobe_multi: flags; uprobe_multi: path (low half).
    a: u64,
    b: u64,
    c: u64,
    d: u64,
    e: u64,
}

/// The encoded instructions of `insns`.
fn encode(insns: &[sonde_compiler::bpf::insn::Insn]) -> Vec<u8> {
    insns.iter().flat_map(|i| i.encode()).collect()
}

/// Loads a program; returns it (or the error) and the verifier's log.
fn load(
    prog_type: u32,
    insns: &[u8],
    attach: Option<(u32, u32)>,
    log: bool,
) -> (io::Result<OwnedFd>, String) {
    let license = c"GPL";
    let mut buf = vec![0u8; if log { 1 << 16 } else { 0 }];
    let (expected_attach_type, attach_btf_id) = attach.unwrap_or((0, 0));
    let mut attr = ProgLoadAttr {
        prog_type,
        insn_cnt: (insns.len() / 8) as u32,
        insns: insns.as_ptr() as u64,
        license: license.as_ptr() as u64,
        log_level: u32::from(log),
        log_size: buf.len() as u32,
        log_buf: if log { buf.as_mut_ptr() as u64 } else { 0 },
        expected_attach_type,
        attach_btf_id,
        ..ProgLoadAttr::default()
    };
    // SAFETY: insns, license and the log buffer outlive the call, with the sizes given.
    let fd = unsafe { sys_bpf_fd(BPF_PROG_LOAD, &mut attr) };
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    (fd, String::from_utf8_lossy(&buf[..end]).into_owned())
}

/// `mov r0, 0; exit`.
fn trivial() -> Vec<u8> {
    use sonde_compiler::bpf::insn::{Insn, Reg};
    encode(&[Insn::mov64_imm(Reg::R0, 0), Insn::exit()])
}

/// True when a trivial program of `prog_type` loads.
fn prog_type_loads(prog_type: u32) -> bool {
    load(prog_type, &trivial(), None, false).0.is_ok()
}

/// True when a kprobe-type program may call helper `id` (libbpf's and bpftrace's test: the
/// load fails on the arguments, but the log says whether the helper was known and allowed).
fn helper_allowed(id: i32) -> bool {
    use sonde_compiler::bpf::insn::Insn;
    let insns = encode(&[Insn::call_id(id), Insn::exit()]);
    let (fd, log) = load(prog::KPROBE, &insns, None, true);
    if fd.is_ok() {
        return true;
    }
    !log.is_empty()
        && !log.contains("invalid func ")
        && !log.contains("unknown func ")
        && !log.contains("program of this type cannot use helper ")
}

/// The verifier's instruction limit, from its log ("processed 2 insns (limit 1000000)").
fn instruction_limit() -> Option<u64> {
    use sonde_compiler::bpf::insn::{Insn, Reg};
    let [a, b] = Insn::ld_imm64(Reg::R0, 0);
    let (_, log) = load(prog::KPROBE, &encode(&[a, b, Insn::exit()]), None, true);
    let rest = &log[log.find("processed 2 insns")?..];
    let rest = &rest[rest.find("limit ")? + 6..];
    rest[..rest.find(')')?].trim().parse().ok()
}

/// True when a map of `map_type` can be created (one element of a 4-byte key and an 8-byte
/// value; a ring buffer of 4096 bytes takes neither).
fn map_creates(map_type: u32, ringbuf: bool) -> bool {
    // A program array holds 4-byte program descriptors.
    let value_size = if map_type == 3 { 4 } else { 8 };
    match ringbuf {
        true => crate::syscall::map_create(map_type, 0, 0, 4096).is_ok(),
        false => crate::syscall::map_create(map_type, 4, value_size, 1).is_ok(),
    }
}

/// Creates a link for `prog` of `attach_type` with the multi-probe words `words`; returns
/// the error number when the kernel refused.
fn link(prog: &OwnedFd, attach_type: u32, words: [u64; 5]) -> Result<(), i32> {
    use std::os::fd::AsRawFd;
    let mut attr = LinkCreateAttr {
        prog_fd: prog.as_raw_fd() as u32,
        attach_type,
        a: words[0],
        b: words[1],
        c: words[2],
        d: words[3],
        e: words[4],
        ..LinkCreateAttr::default()
    };
    // SAFETY: every pointer among `words` is valid for the call (see the callers).
    match unsafe { sys_bpf_fd(BPF_LINK_CREATE, &mut attr) } {
        // Dropped at once: nothing stays attached.
        Ok(_) => Ok(()),
        Err(e) => Err(e.raw_os_error().unwrap_or(0)),
    }
}

/// The value of attach type `(name, fallback)` in this kernel.
fn attach_type(btf: Option<&Btf>, (name, fallback): (&str, u32)) -> Option<u32> {
    match btf {
        Some(b) => b.enumerator(name).and_then(|(_, v)| u32::try_from(v).ok()),
        None => Some(fallback),
    }
}

/// A kprobe-multi (or kprobe-session) link on `ksys_read` can be created.
fn kprobe_multi(btf: Option<&Btf>, kind: (&str, u32)) -> bool {
    let Some(at) = attach_type(btf, kind) else {
        return false;
    };
    let Ok(prog) = load(prog::KPROBE, &trivial(), Some((at, 0)), false).0 else {
        return false;
    };
    let sym = c"ksys_read";
    let syms = [sym.as_ptr() as u64];
    // kprobe_multi: { u32 flags, u32 cnt }, u64 syms, u64 addrs, u64 cookies.
    link(&prog, at, [1 << 32, syms.as_ptr() as u64, 0, 0, 0]).is_ok()
}

/// The kernel accepts uprobe-multi links: one at offset 0 of `/` is refused with EBADF (not
/// a regular file) rather than EINVAL (bpftrace's test).
fn uprobe_multi(btf: Option<&Btf>) -> bool {
    let Some(at) = attach_type(btf, UPROBE_MULTI) else {
        return false;
    };
    let Ok(prog) = load(prog::KPROBE, &trivial(), Some((at, 0)), false).0 else {
        return false;
    };
    let path = c"/";
    let offsets = [0u64];
    // uprobe_multi: u64 path, u64 offsets, u64 ref_ctr_offsets, u64 cookies, { u32 cnt, u32 flags }.
    let words = [path.as_ptr() as u64, offsets.as_ptr() as u64, 0, 0, 1];
    link(&prog, at, words) == Err(libc::EBADF)
}

/// A tracing program can attach at the entry of a kernel function (`vfs_read`).
fn fentry(btf: Option<&Btf>) -> bool {
    let (Some(btf), Some(at)) = (btf, attach_type(btf, FENTRY)) else {
        return false;
    };
    let Some(func) = btf.func_named("vfs_read") else {
        return false;
    };
    let Ok(prog) = load(prog::TRACING, &trivial(), Some((at, func)), false).0 else {
        return false;
    };
    link(&prog, at, [0; 5]).is_ok()
}

/// A task iterator program loads and its link can be created (bpftrace's `iter` feature;
/// iterators need no trampoline, so they can work where fentry does not).
fn iter(btf: Option<&Btf>) -> bool {
    let (Some(btf), Some(at)) = (btf, attach_type(btf, ITER)) else {
        return false;
    };
    let Some(func) = btf.func_named("bpf_iter_task") else {
        return false;
    };
    let Ok(prog) = load(prog::TRACING, &trivial(), Some((at, func)), false).0 else {
        return false;
    };
    link(&prog, at, [0; 5]).is_ok()
}

/// One line of the report: a name and its value.
pub type Item = (String, String);

/// What the kernel supports, by section ("Kernel helpers", "Kernel features", "Map types",
/// "Probe types"), in the order printed.
pub fn report() -> Vec<(&'static str, Vec<Item>)> {
    use sonde_compiler::bpf::insn::Helper;
    let yes = |b: bool| if b { "yes" } else { "no" }.to_string();
    let item = |name: &str, b: bool| (name.to_string(), yes(b));
    let vmlinux = Path::new("/sys/kernel/btf/vmlinux");
    let btf = Btf::from_file("/sys/kernel/btf/vmlinux").ok();
    let module_btf = std::fs::read_dir("/sys/kernel/btf").is_ok_and(|d| {
        d.flatten()
            .any(|e| e.file_name() != std::ffi::OsStr::new("vmlinux"))
    });
    let helpers: Vec<Item> = [
        ("probe_read_kernel", Helper::ProbeReadKernel),
        ("probe_read_user", Helper::ProbeReadUser),
        ("ringbuf_output", Helper::RingbufOutput),
        ("loop", Helper::Loop),
        ("for_each_map_elem", Helper::ForEachMapElem),
        ("lookup_percpu_elem", Helper::MapLookupPercpuElem),
        ("get_current_task_btf", Helper::GetCurrentTaskBtf),
        ("get_tai_ns", Helper::KtimeGetTaiNs),
        ("get_boot_ns", Helper::KtimeGetBootNs),
        ("send_signal", Helper::SendSignal),
    ]
    .into_iter()
    .map(|(name, h)| item(name, helper_allowed(h as i32)))
    .collect();
    let limit = instruction_limit().map_or_else(|| "-1".to_string(), |n| n.to_string());
    let features = vec![
        ("Instruction limit".to_string(), limit),
        item("btf", vmlinux.exists() && btf.is_some()),
        item("module btf", module_btf),
        item("tracefs", sonde_system::tracefs::tracefs_root().is_ok()),
    ];
    let maps = vec![
        item("hash", map_creates(1, false)),
        item("percpu_hash", map_creates(5, false)),
        item("percpu_array", map_creates(6, false)),
        item("lru_hash", map_creates(9, false)),
        item("prog_array", map_creates(3, false)),
        item("stack_trace", map_creates(7, false)),
        item("ringbuf", map_creates(27, true)),
    ];
    let btf = btf.as_ref();
    let uprobe_pmu = Path::new("/sys/bus/event_source/devices/uprobe");
    let probes = vec![
        item("tracepoint", prog_type_loads(prog::TRACEPOINT)),
        item("raw_tracepoint", prog_type_loads(prog::RAW_TRACEPOINT)),
        item("perf_event", prog_type_loads(prog::PERF_EVENT)),
        item(
            "kprobe",
            prog_type_loads(prog::KPROBE)
                && sonde_system::kernel_info::SystemKernel::new().has_kprobes(),
        ),
        item(
            "uprobe",
            prog_type_loads(prog::KPROBE) && uprobe_pmu.exists(),
        ),
        item(
            "usdt semaphores",
            uprobe_pmu.join("format/ref_ctr_offset").exists(),
        ),
        item("uprobe_multi", uprobe_multi(btf)),
        item("kprobe_multi", kprobe_multi(btf, KPROBE_MULTI)),
        item("kprobe_session", kprobe_multi(btf, KPROBE_SESSION)),
        item("fentry", fentry(btf)),
        item("iter", iter(btf)),
    ];
    vec![
        ("Kernel helpers", helpers),
        ("Kernel features", features),
        ("Map types", maps),
        ("Probe types", probes),
    ]
}

/// Lays `items` out two per line as bpftrace does (`  name: value`, in columns of 35).
pub fn tabulate(items: &[Item]) -> String {
    let mut out = String::new();
    for pair in items.chunks(2) {
        let first = format!("  {}: {}", pair[0].0, pair[0].1);
        match pair.get(1) {
            Some((k, v)) => out += &format!("{first:<35}{k}: {v}\n"),
            None => out += &format!("{first}\n"),
        }
    }
    out
}

/// `uname`: (sysname, release, version, machine).
pub fn uname() -> (String, String, String, String) {
    // SAFETY: utsname is plain bytes; uname fills it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return Default::default();
    }
    let text = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    (
        text(&u.sysname),
        text(&u.release),
        text(&u.version),
        text(&u.machine),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tabulates_two_per_line() {
        let items: Vec<Item> = [("btf", "yes"), ("module btf", "no"), ("x", "1")]
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        assert_eq!(
            tabulate(&items),
            format!("{:<35}module btf: no\n  x: 1\n", "  btf: yes")
        );
    }

    #[test]
    fn probes_this_kernel_when_privileged() {
        if crate::privilege::missing().is_some() {
            return;
        }
        let report = report();
        let find = |name: &str| {
            report
                .iter()
                .flat_map(|(_, items)| items)
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        // What every kernel sonde runs on has.
        assert_eq!(find("tracepoint"), "yes");
        assert_eq!(find("ringbuf"), "yes");
        assert_eq!(find("loop"), "yes");
        assert!(find("Instruction limit").parse::<u64>().unwrap() >= 4096);
        // A helper that does not exist is not reported as allowed.
        assert!(!helper_allowed(100_000));
    }
}
