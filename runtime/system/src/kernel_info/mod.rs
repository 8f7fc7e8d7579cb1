//! [`SystemKernel`]: the [`KernelInfo`] of the running machine, read from tracefs, kernel
//! BTF (`/sys/kernel/btf/vmlinux`) and ELF files.
//!
//! Everything is lazy: [`SystemKernel::new`] touches nothing; the BTF is read and indexed on
//! the first question that needs it, and each answer that is expensive to compute (the
//! tracepoint list, raw tracepoints, the name indexes, converted records) is computed once.

pub mod binaries;
pub mod debug_file;
pub mod debug_search;
pub mod dwarf;
mod header_conditions;
pub mod headers;
pub mod iterators;
pub mod process_targets;
pub mod tracepoints;
pub mod usdt;

use crate::btf::convert::{self, RecordCache};
use crate::btf::{Btf, Kind};
use crate::tracefs;
use sonde_lang::kernel::{
    DebugInfoError, FunctionParams, KernelInfo, RecordKind, SourceLine, TargetProcess,
    TracepointField, UsdtProbe,
};
use sonde_lang::types::{Record, Type};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

pub use crate::elf_symbols::elf_function_offset;

/// Where the kernel publishes its own BTF.
pub const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";
/// The perf event source whose presence means the kernel supports kprobes.
pub const KPROBE_PMU: &str = "/sys/bus/event_source/devices/kprobe";

/// One argument of a raw tracepoint, from the BTF of its `__bpf_trace_<name>` function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawTracepointArg {
    /// Argument name (`prev`).
    pub name: String,
    /// C type without the name (`struct task_struct *`).
    pub c_type: String,
    /// The sonde type (conventions of `KernelInfo::record`).
    pub ty: Type,
}

/// A tracepoint's fields, as [`KernelInfo::tracepoint_format`] returns them.
type Fields = Vec<TracepointField>;

/// A function's parameters from debug info, or why there are none.
type ParamsAnswer = Result<Arc<FunctionParams>, DebugInfoError>;

/// Kernel facts from the running system, computed on demand and cached.
pub struct SystemKernel {
    btf_path: PathBuf,
    btf: OnceLock<Result<Btf, String>>,
    records: Mutex<RecordCache>,
    tracepoints: OnceLock<Vec<(String, String)>>,
    raw_tracepoints: OnceLock<Vec<String>>,
    kernel_functions: OnceLock<Option<Vec<String>>>,
    /// Tracepoint formats already read, by `(category, name)`: a script of thousands of
    /// probes on one tracepoint reads its format file once.
    formats: Mutex<HashMap<(String, String), Option<Fields>>>,
    /// Directories searched for `#include`d headers before the system's (`-I DIR`).
    include_dirs: Vec<PathBuf>,
    /// The script's directory, where `#include "p.h"` looks first.
    script_dir: Option<PathBuf>,
    /// Function parameters read from debug info, by `(binary, function)`.
    params: Mutex<HashMap<(String, String), ParamsAnswer>>,
    /// The DWARF of each binary read, opened once.
    dwarf: dwarf::DwarfCache,
    /// The process `-p PID` names: user-space attach points resolve in it.
    target_pid: Option<u32>,
    /// That process, read once.
    target: OnceLock<Result<TargetProcess, String>>,
}

impl std::fmt::Debug for SystemKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SystemKernel")
            .field("btf_path", &self.btf_path)
            .field("btf_loaded", &self.btf.get().is_some())
            .finish()
    }
}

impl Default for SystemKernel {
    fn default() -> Self {
        SystemKernel::new()
    }
}

impl SystemKernel {
    /// A view of this machine's kernel using [`VMLINUX_BTF`]. Cheap: reads nothing yet.
    pub fn new() -> SystemKernel {
        SystemKernel::with_btf_path(VMLINUX_BTF)
    }

    /// Like [`SystemKernel::new`] with BTF read from another file (a saved vmlinux BTF).
    pub fn with_btf_path(path: impl Into<PathBuf>) -> SystemKernel {
        SystemKernel {
            btf_path: path.into(),
            btf: OnceLock::new(),
            records: Mutex::new(RecordCache::new()),
            tracepoints: OnceLock::new(),
            raw_tracepoints: OnceLock::new(),
            kernel_functions: OnceLock::new(),
            formats: Mutex::new(HashMap::new()),
            include_dirs: Vec::new(),
            script_dir: None,
            params: Mutex::new(HashMap::new()),
            dwarf: dwarf::DwarfCache::default(),
            target_pid: None,
            target: OnceLock::new(),
        }
    }

    /// Resolves user-space attach points in process `pid` (`-p PID`; see
    /// [`process_targets`]): `uprobe:FUNC` in its executable, `*` over the objects it maps,
    /// paths through its mount namespace.
    pub fn with_target_pid(mut self, pid: Option<u32>) -> SystemKernel {
        self.target_pid = pid;
        self
    }

    /// Searches the directories of `--debuginfo DIR[:DIR]` options for separate debug files
    /// before the default places (`debug_search`).
    pub fn with_debuginfo(mut self, options: &[String]) -> SystemKernel {
        self.dwarf = dwarf::DwarfCache::new(debug_search::DebugPath::with_dirs(options));
        self
    }

    /// The DWARF of the binaries this run reads, each opened once.
    pub fn dwarf(&self) -> &dwarf::DwarfCache {
        &self.dwarf
    }

    /// Searches `dirs` for `#include`d headers before the system's directories (`-I DIR`).
    pub fn with_include_dirs(mut self, dirs: Vec<PathBuf>) -> SystemKernel {
        self.include_dirs = dirs;
        self
    }

    /// Looks for `#include "p.h"` headers in `dir` (the script's directory) first.
    pub fn with_script_dir(mut self, dir: Option<PathBuf>) -> SystemKernel {
        self.script_dir = dir;
        self
    }

    /// The kernel BTF, parsed on first use; the error says which file failed and why.
    pub fn btf(&self) -> Result<&Btf, String> {
        self.btf
            .get_or_init(|| Btf::from_file(&self.btf_path.to_string_lossy()))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// True when the kernel can create kprobes (a `kprobe` perf event source, or a
    /// `kprobe_events` file in tracefs).
    pub fn has_kprobes(&self) -> bool {
        Path::new(KPROBE_PMU).exists()
            || tracefs::tracefs_root().is_ok_and(|root| root.join("kprobe_events").exists())
    }

    /// The C definition of a struct or union from BTF, as `bpftrace -lv 'struct x'` prints
    /// it (`name` is `struct x`, `union x` or a bare tag, tried as a struct then a union).
    pub fn record_definition(&self, name: &str) -> Result<String, String> {
        let btf = self.btf()?;
        let (tag, kinds): (&str, &[bool]) = if let Some(t) = name.strip_prefix("struct ") {
            (t.trim(), &[false])
        } else if let Some(t) = name.strip_prefix("union ") {
            (t.trim(), &[true])
        } else {
            (name.trim(), &[false, true])
        };
        kinds
            .iter()
            .find_map(|&u| btf.find_record(tag, u))
            .and_then(|id| crate::btf::cdecl::record_definition(btf, id))
            .ok_or_else(|| format!("no type `{name}` in the kernel BTF"))
    }

    /// The arguments of raw tracepoint `name` (`sched_switch`: `preempt`, `prev`, `next`,
    /// `prev_state`), without the leading `void *__data`; `None` when BTF has no
    /// `__bpf_trace_<name>` function.
    pub fn raw_tracepoint_args(&self, name: &str) -> Option<Vec<RawTracepointArg>> {
        self.func_params_after_first(&format!("__bpf_trace_{name}"))
    }

    /// The parameters of kernel function `func` from BTF, without the first (a raw
    /// tracepoint's `__data`, an iterator's `meta`); `None` when BTF has no such function.
    pub(crate) fn func_params_after_first(&self, func: &str) -> Option<Vec<RawTracepointArg>> {
        let btf = self.btf().ok()?;
        let func = btf.ty(btf.func_named(func)?)?;
        let proto = btf.ty(func.size_or_type)?;
        let mut cache = self.records.lock().unwrap_or_else(|p| p.into_inner());
        let args = proto
            .params(btf)
            .into_iter()
            .skip(1)
            .map(|(n, ty)| RawTracepointArg {
                name: n.to_string(),
                c_type: crate::btf::cdecl::declaration(btf, ty, ""),
                ty: convert::to_type(btf, ty, &mut cache),
            })
            .collect();
        Some(args)
    }

    fn compute_tracepoints() -> Vec<(String, String)> {
        if let Ok(text) = tracefs::read_tracefs_file("available_events") {
            return tracepoints::parse_available_events(&text);
        }
        let Ok(root) = tracefs::tracefs_root() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for cat in read_dir_names(&root.join("events")) {
            for name in read_dir_names(&root.join("events").join(&cat)) {
                if root
                    .join("events")
                    .join(&cat)
                    .join(&name)
                    .join("format")
                    .is_file()
                {
                    out.push((cat.clone(), name));
                }
            }
        }
        out.sort();
        out
    }

    fn find_record_id(&self, btf: &Btf, kind: RecordKind, name: &str) -> Option<u32> {
        let union = kind == RecordKind::Union;
        let tag = name
            .strip_prefix(if union { "union " } else { "struct " })
            .unwrap_or(name);
        btf.find_record(tag, union).or_else(|| {
            // `typedef struct { ... } atomic_t;` is reachable by its typedef name.
            btf.ids_named(tag)
                .into_iter()
                .map(|id| btf.strip(id))
                .find(|&id| {
                    btf.ty(id)
                        .is_some_and(|t| t.kind == if union { Kind::Union } else { Kind::Struct })
                })
        })
    }
}

fn read_dir_names(dir: &Path) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    rd.filter_map(|e| {
        let e = e.ok()?;
        e.file_type()
            .ok()?
            .is_dir()
            .then(|| e.file_name().into_string().ok())?
    })
    .collect()
}

impl KernelInfo for SystemKernel {
    fn tracepoints(&self) -> Vec<(String, String)> {
        self.tracepoints
            .get_or_init(SystemKernel::compute_tracepoints)
            .clone()
    }

    fn tracepoint_format(&self, category: &str, name: &str) -> Option<Vec<TracepointField>> {
        let valid = |s: &str| !s.is_empty() && !s.contains(['/', '.']);
        if !valid(category) || !valid(name) {
            return None;
        }
        let key = (category.to_string(), name.to_string());
        if let Some(known) = self.formats.lock().ok()?.get(&key) {
            return known.clone();
        }
        let fields = tracefs::read_tracefs_file(&format!("events/{category}/{name}/format"))
            .ok()
            .map(|text| tracepoints::parse_format(&text));
        if let Ok(mut formats) = self.formats.lock() {
            formats.insert(key, fields.clone());
        }
        fields
    }

    fn pid_namespace(&self) -> Option<(u64, u64)> {
        use std::os::unix::fs::MetadataExt;
        // The inode of the initial pid namespace (the kernel's PROC_PID_INIT_INO).
        const INIT_PID_NS: u64 = 0xEFFF_FFFC;
        let m = std::fs::metadata("/proc/self/ns/pid").ok()?;
        (m.ino() != INIT_PID_NS).then(|| (m.dev(), m.ino()))
    }

    fn btf_modules(&self) -> Vec<String> {
        let Ok(dir) = std::fs::read_dir("/sys/kernel/btf") else {
            return Vec::new();
        };
        let mut out: Vec<String> = dir
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n != "vmlinux")
            .collect();
        out.sort();
        out
    }

    fn raw_tracepoints(&self) -> Vec<String> {
        self.raw_tracepoints
            .get_or_init(|| {
                let Ok(btf) = self.btf() else {
                    return Vec::new();
                };
                let mut out: Vec<String> = btf
                    .iter()
                    .filter(|(_, t)| t.kind == Kind::Typedef)
                    .filter_map(|(_, t)| t.name.strip_prefix("btf_trace_").map(str::to_string))
                    .collect();
                out.sort();
                out.dedup();
                out
            })
            .clone()
    }

    fn iterators(&self) -> Vec<String> {
        self.btf().map(iterators::iterators).unwrap_or_default()
    }

    fn kernel_functions(&self) -> Option<Vec<String>> {
        self.kernel_functions
            .get_or_init(|| {
                if !self.has_kprobes() {
                    return None;
                }
                let text =
                    tracefs::read_tracefs_file("available_filter_functions").unwrap_or_default();
                let mut out: Vec<String> = text
                    .lines()
                    .filter_map(|l| l.split_whitespace().next().map(str::to_string))
                    .collect();
                out.sort();
                out.dedup();
                Some(out)
            })
            .clone()
    }

    fn record(&self, kind: RecordKind, name: &str) -> Option<Arc<Record>> {
        let btf = self.btf().ok()?;
        let id = self.find_record_id(btf, kind, name)?;
        let mut cache = self.records.lock().unwrap_or_else(|p| p.into_inner());
        convert::to_record(btf, id, &mut cache)
    }

    fn header_defines(
        &self,
        include: &str,
    ) -> Result<Vec<(String, String)>, sonde_lang::kernel::HeaderError> {
        headers::header_defines(include, &self.include_dirs, self.script_dir.as_deref())
    }

    fn enum_value(&self, name: &str) -> Option<(String, i64)> {
        let (ty, value) = self.btf().ok()?.enumerator(name)?;
        Some((ty.to_string(), value))
    }

    fn enum_variants(&self, tag: &str) -> Vec<(String, i64)> {
        let Ok(btf) = self.btf() else {
            return Vec::new();
        };
        btf.ids_named(tag)
            .into_iter()
            .filter_map(|id| btf.ty(id))
            .find(|t| matches!(t.kind, crate::btf::Kind::Enum | crate::btf::Kind::Enum64))
            .map(|t| {
                t.enumerators(btf)
                    .into_iter()
                    .map(|(n, v)| (n.to_string(), v))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn resolve_binary(&self, target: &str) -> Option<String> {
        match self.target_pid {
            Some(pid) => process_targets::resolve_in_process(target, pid),
            None => binaries::resolve_binary(target),
        }
    }

    fn target_process(&self) -> Option<Result<TargetProcess, String>> {
        let pid = self.target_pid?;
        Some(
            self.target
                .get_or_init(|| process_targets::target_process(pid))
                .clone(),
        )
    }

    fn process_mapping_of(&self, path: &str) -> Option<String> {
        let process = self.target_process()?.ok()?;
        process_targets::mapping_of(&process, path)
    }

    fn glob_binaries(&self, pattern: &str) -> Vec<String> {
        process_targets::glob_binaries(pattern, self.target_pid)
    }

    fn elf_functions(&self, path: &str) -> Result<Vec<String>, String> {
        // Every name a uprobe group holds (unsized symbols too), so that a wildcard can rule
        // a binary out by its names alone.
        crate::uprobe_functions::function_names(path)
    }

    fn elf_function_groups(&self, path: &str) -> Result<Vec<Vec<String>>, String> {
        crate::uprobe_functions::function_groups(path)
    }

    fn kernel_symbol_address(&self, name: &str) -> Option<u64> {
        crate::symbols::resolve_kaddr(name)
    }

    fn kernel_btf_id(&self, kind: sonde_lang::kernel::BtfObject, name: &str) -> Option<u32> {
        let btf = self.btf().ok()?;
        match kind {
            sonde_lang::kernel::BtfObject::Func => btf.func_named(name),
            sonde_lang::kernel::BtfObject::Var => btf.var_named(name),
        }
    }

    fn elf_symbol(&self, path: &str, name: &str) -> Option<sonde_lang::kernel::ElfSymbol> {
        crate::elf_symbols::elf_symbol(path, name)
    }

    fn uprobe_address(&self, path: &str, symbol: Option<&str>, offset: u64) -> Option<u64> {
        crate::elf_symbols::uprobe_address(path, symbol, offset)
    }

    fn cgroup_id(&self, path: &str) -> Option<u64> {
        cgroup_id(path)
    }

    fn elf_function_code(&self, path: &str, name: &str) -> Option<Vec<u8>> {
        crate::uprobe_functions::function_code(path, name)
    }

    fn elf_function_at(&self, path: &str, offset: u64) -> Result<Option<(String, u64)>, String> {
        crate::uprobe_functions::function_at(path, offset)
    }

    fn usdt_probes(&self, path: &str) -> Result<Vec<UsdtProbe>, String> {
        usdt::usdt_probes(path)
    }

    fn function_params(&self, path: &str, func: &str) -> ParamsAnswer {
        let key = (path.to_string(), func.to_string());
        if let Some(known) = self.params.lock().ok().and_then(|m| m.get(&key).cloned()) {
            return known;
        }
        let answer = self.dwarf.function_params(path, func).map(Arc::new);
        if let Ok(mut m) = self.params.lock() {
            m.insert(key, answer.clone());
        }
        answer
    }

    fn source_line_offset(&self, path: &str, at: SourceLine<'_>) -> Result<u64, DebugInfoError> {
        self.dwarf.line_offset(path, at)
    }
}

/// The id of the cgroup v2 directory at `path`: its inode number (the kernfs node id the
/// kernel's `bpf_get_current_cgroup_id()` returns), when `path` is on a cgroup2 file system.
fn cgroup_id(path: &str) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;
    let c = std::ffi::CString::new(path).ok()?;
    // SAFETY: `c` is a NUL-terminated path and `fs` a writable statfs buffer.
    let mut fs: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(c.as_ptr(), &mut fs) } != 0 || fs.f_type as i64 != CGROUP2_SUPER_MAGIC
    {
        return None;
    }
    let meta = std::fs::metadata(path).ok()?;
    meta.is_dir().then(|| meta.ino())
}

#[cfg(test)]
mod tests;
