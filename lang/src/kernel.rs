//! The seam through which the front end learns facts about the running kernel and binaries.
//!
//! The runtime implements [`KernelInfo`] from tracefs, BTF and ELF files; tests implement it
//! with fixtures, so that parsing and checking never need root or a kernel.

use crate::types::{Record, Type};
use std::sync::Arc;

/// What a kernel BTF id names ([`KernelInfo::kernel_btf_id`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BtfObject {
    /// A function (`BTF_KIND_FUNC`): a kfunc a program calls.
    Func,
    /// A global variable (`BTF_KIND_VAR`): a typed ksym a program loads.
    Var,
}

/// One field line of a tracepoint's `format` file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TracepointField {
    /// Field name (`filename`).
    pub name: String,
    /// C type as written, without the name (`const char *`, `__data_loc char[]`, `int`).
    pub c_type: String,
    /// Byte offset in the record.
    pub offset: u32,
    /// Size in bytes.
    pub size: u32,
    /// Whether the field is signed.
    pub signed: bool,
}

impl TracepointField {
    /// A field with the given name, C type, offset, size and signedness.
    pub fn new(name: &str, c_type: &str, offset: u32, size: u32, signed: bool) -> Self {
        TracepointField {
            name: name.into(),
            c_type: c_type.into(),
            offset,
            size,
            signed,
        }
    }
}

/// One USDT probe of an ELF file (a note of type 3, owner `stapsdt`, in `.note.stapsdt`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UsdtProbe {
    /// Provider name (`sondetest`, `libc`).
    pub provider: String,
    /// Probe name (`work`, `setjmp`).
    pub name: String,
    /// Address of the probe instruction, adjusted for prelinking (virtual address).
    pub pc: u64,
    /// The note's recorded address of `.stapsdt.base`.
    pub base: u64,
    /// Address of the semaphore counter, or 0 when the probe has none.
    pub semaphore: u64,
    /// File offset of the semaphore counter (what the kernel's uprobe reference counter
    /// takes), or 0 when the probe has none.
    pub semaphore_offset: u64,
    /// File offset of the probe instruction: where the uprobe goes.
    pub offset: u64,
    /// The argument specification (`-4@%edi 8@%rsi 8@-16(%rbp) 4@$5`), empty when none.
    pub args: String,
}

/// One formal parameter of a function, from the debug info (DWARF) of its binary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionParam {
    /// The parameter's name; empty when the debug info gives none.
    pub name: String,
    /// Its C type as `bpftrace -lv` prints it (`int`, `char*`, `struct Foo*`, `const char*`).
    pub c_type: String,
    /// The sonde type. Pointers are in [`crate::types::AddrSpace::User`]; unlike kernel
    /// records (see [`KernelInfo::record`]), records behind pointers are expanded too, a few
    /// pointers deep (the kernel knows nothing of a program's types), and only past that
    /// depth are they opaque. Enums are plain integers, as bpftrace types them.
    pub ty: Type,
    /// Where the value is when the function is entered.
    pub location: ParamLocation,
}

/// Where a parameter is at a function's entry, under the x86-64 System V calling convention.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParamLocation {
    /// The Nth integer argument register (0..=5: rdi, rsi, rdx, rcx, r8, r9), which `argN`
    /// reads.
    Register(u8),
    /// A place `args` cannot read (an SSE register, the stack, two registers): why.
    Elsewhere(String),
}

/// The formal parameters of a function, from debug info.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionParams {
    /// The file the debug info was read from: the binary or its separate debug file.
    pub debug_file: String,
    /// The parameters, in declaration order.
    pub params: Vec<FunctionParam>,
}

/// Why the parameters of a function cannot be read from debug info.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DebugInfoError {
    /// The binary has no DWARF and no separate debug file was found: where sonde looked.
    Missing(String),
    /// The debug info was read but does not describe the function: the file read.
    NoFunction(String),
    /// The debug info could not be read (a corrupt or unsupported file): why.
    Invalid(String),
}

/// Whether a BTF aggregate is a struct or a union.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordKind {
    /// `struct x`
    Struct,
    /// `union x`
    Union,
}

/// A place in a program's source as `uprobe:path@file:line[:col]` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SourceLine<'a> {
    /// The source file: a suffix of a path the line table names.
    pub file: &'a str,
    /// The line, from 1.
    pub line: u64,
    /// The column, from 1; 0 for the line's first statement.
    pub column: u64,
}

/// Facts about the kernel and the binaries a script refers to. Every answer has a default
/// that knows nothing (no tracepoints, no types, no binaries): an implementation gives the
/// facts it has.
pub trait KernelInfo {
    /// All tracepoints as `(category, name)` pairs.
    fn tracepoints(&self) -> Vec<(String, String)> {
        Vec::new()
    }
    /// The fields of a tracepoint's format (common fields included), or `None` if it does not exist.
    fn tracepoint_format(&self, category: &str, name: &str) -> Option<Vec<TracepointField>> {
        let _ = (category, name);
        None
    }
    /// sonde's own pid namespace (the device and inode of `/proc/self/ns/pid`) when it is not
    /// the initial one: `pid` and `tid` are then read as seen from it, as bpftrace does.
    fn pid_namespace(&self) -> Option<(u64, u64)> {
        None
    }
    /// The loaded kernel modules with BTF (`/sys/kernel/btf/NAME` other than `vmlinux`): the
    /// modules `rawtracepoint:MODULE:name` may name besides `vmlinux`.
    fn btf_modules(&self) -> Vec<String> {
        Vec::new()
    }
    /// Raw tracepoint names (from BTF `btf_trace_*` typedefs).
    fn raw_tracepoints(&self) -> Vec<String> {
        Vec::new()
    }
    /// The kernel's BPF iterators (`task`, `task_file`, ...): the names `X` of the
    /// `struct bpf_iter__X` context types in BTF that have a `bpf_iter_X` function, sorted.
    fn iterators(&self) -> Vec<String> {
        Vec::new()
    }
    /// Kernel functions that kprobes/fentry could attach to, or `None` when this kernel has
    /// no kprobe support.
    fn kernel_functions(&self) -> Option<Vec<String>> {
        None
    }
    /// A struct or union type from kernel BTF (or the script's own C definitions are consulted
    /// first by the checker).
    ///
    /// `name` is the tag (`task_struct`; a `struct `/`union ` prefix is also accepted, and a
    /// typedef of an anonymous record, such as `atomic_t`, is found by its typedef name).
    ///
    /// Contract of the returned record (shared with [`crate::ctypes`]):
    /// - Records held by value are expanded in full, nested records included.
    /// - A pointer to a *named* struct or union points to an *opaque* record (same name, no
    ///   fields, size 0: [`crate::ctypes::is_opaque`]). A consumer following the pointer
    ///   (`curtask->parent->pid`) calls `record` again with the pointee's name
    ///   ([`crate::ctypes::record_ref`]); answers are cached, so this is cheap. Pointers to
    ///   anonymous records are expanded (they have no name to ask for).
    /// - Anonymous struct/union members are flattened into the parent (bpftrace's
    ///   `sk->skc_family`), with offsets relative to the parent.
    /// - `char[N]` is `Str { size: N }`; other arrays (`u8[6]`) are `Array`.
    /// - A bitfield has `offset` = the byte holding its first bit, `ty` = the smallest
    ///   integer (8/16/32/64 bits) covering it from there, `bitfield = (shift, width)`.
    /// - Kernel pointers are in `AddrSpace::Kernel`.
    fn record(&self, kind: RecordKind, name: &str) -> Option<Arc<Record>> {
        let _ = (kind, name);
        None
    }
    /// An enumerator of some kernel enum: `(enum name, value)`.
    fn enum_value(&self, name: &str) -> Option<(String, i64)> {
        let _ = name;
        None
    }
    /// The enumerators of kernel enum `tag` (`enum tag`), in declaration order; empty when
    /// there is no such enum.
    fn enum_variants(&self, tag: &str) -> Vec<(String, i64)> {
        let _ = tag;
        Vec::new()
    }
    /// Resolves a uprobe target (`/bin/bash`, `libc`, `./prog`) to a path, like the dynamic
    /// linker would for library names.
    fn resolve_binary(&self, target: &str) -> Option<String> {
        let _ = target;
        None
    }
    /// Function symbols of an ELF file, or an error text.
    fn elf_functions(&self, path: &str) -> Result<Vec<String>, String> {
        Err(format!("cannot read {path}"))
    }
    /// The functions of the ELF file at `path` as uprobes attach to them: one entry per
    /// distinct place, holding every name found there, the preferred name first (a public
    /// name before `_`-prefixed ones, then the shorter, then alphabetical). Aliases
    /// (`malloc`, `__libc_malloc`) share an entry, and so do IFUNCs whose implementations are
    /// one (`memcpy`, `memmove`): a wildcard probes each entry once. The default makes each
    /// name of [`KernelInfo::elf_functions`] its own entry.
    fn elf_function_groups(&self, path: &str) -> Result<Vec<Vec<String>>, String> {
        Ok(self
            .elf_functions(path)?
            .into_iter()
            .map(|name| vec![name])
            .collect())
    }
    /// The address of a kernel symbol (`kaddr()`), when it is known.
    fn kernel_symbol_address(&self, name: &str) -> Option<u64> {
        let _ = name;
        None
    }
    /// The id of the kernel function (a kfunc) or global variable (a typed ksym) `name` in
    /// the kernel's BTF (`/sys/kernel/btf/vmlinux`): what a kfunc call's `imm` or a typed
    /// ksym's `ld_imm64` names. `None` when the kernel's BTF has no such object.
    fn kernel_btf_id(&self, kind: BtfObject, name: &str) -> Option<u32> {
        let _ = (kind, name);
        None
    }
    /// The id of the cgroup v2 directory at `path` (`cgroupid()`), when it is one.
    fn cgroup_id(&self, path: &str) -> Option<u64> {
        let _ = path;
        None
    }
    /// Symbol `name` of the ELF file at `path`, function or data (`uaddr()`), when it is known.
    fn elf_symbol(&self, path: &str, name: &str) -> Option<ElfSymbol> {
        let _ = (path, name);
        None
    }
    /// The link-time virtual address in the ELF file at `path` where a uprobe lands: at
    /// function `symbol` plus `offset` (an IFUNC at its implementation), or at file offset
    /// `offset` when there is no symbol (addresses and USDT probes). `uaddr()` in a PIE or a
    /// library adds the distance from there to its symbol to the probe's run-time address.
    fn uprobe_address(&self, path: &str, symbol: Option<&str>, offset: u64) -> Option<u64> {
        let _ = (path, symbol, offset);
        None
    }
    /// The machine code of function `name` in the ELF file at `path` where a uprobe on it
    /// lands (its symbol's bytes, from its start to its size; for an IFUNC, the
    /// implementation's), when it is known and the file is x86-64: uprobe offsets are
    /// checked against its instruction boundaries. `None` means the check cannot be made.
    fn elf_function_code(&self, path: &str, name: &str) -> Option<Vec<u8>> {
        let _ = (path, name);
        None
    }
    /// The function of the ELF file at `path` whose code holds file offset `offset` (where
    /// `uprobe:path:ADDRESS` lands), under its preferred name, with the distance from its
    /// start; `Ok(None)` when no function does, `Err` when that cannot be told.
    fn elf_function_at(&self, path: &str, offset: u64) -> Result<Option<(String, u64)>, String> {
        let _ = offset;
        Err(format!("the functions of {path} are not known"))
    }
    /// The formal parameters of function `func` of the ELF file at `path`, from its DWARF
    /// (in the file, or a separate debug file found by build id or `.gnu_debuglink`): what
    /// `args` of `uprobe:path:func` is made of. Read only when a probe uses `args`.
    fn function_params(
        &self,
        path: &str,
        func: &str,
    ) -> Result<Arc<FunctionParams>, DebugInfoError> {
        let _ = func;
        Err(DebugInfoError::Missing(format!(
            "the debug info of {path} is not read here"
        )))
    }
    /// The file offset where a uprobe on source line `at` goes in the ELF file at `path`,
    /// from its DWARF line table.
    fn source_line_offset(&self, path: &str, at: SourceLine<'_>) -> Result<u64, DebugInfoError> {
        let _ = at;
        Err(DebugInfoError::Missing(format!(
            "the debug info of {path} is not read here"
        )))
    }
    /// The USDT probes of the ELF file at `path`, in note order, or an error text.
    fn usdt_probes(&self, path: &str) -> Result<Vec<UsdtProbe>, String> {
        Err(format!("cannot read the USDT notes of {path}"))
    }
    /// The process `-p PID` names, when there is one: user-space attach points resolve in it
    /// (`uprobe:FUNC` in its executable, `uprobe:*:FUNC` and `usdt:*:NAME` over the objects it
    /// maps, paths through its mount namespace). An error text when it cannot be read.
    fn target_process(&self) -> Option<Result<TargetProcess, String>> {
        None
    }
    /// The name under which the `-p` process maps the file at `path` (the same file, found
    /// by device and inode: `/proc/PID/root/usr/lib/libc.so.6`), when it maps it.
    fn process_mapping_of(&self, path: &str) -> Option<String> {
        let _ = path;
        None
    }
    /// bpftrace's expansion of a binary with wildcards (`./prog*`, `*`): the files its glob
    /// matches (a pattern without `/` also in each `$PATH` directory) that are ELF shared
    /// objects, or ELF executables the owner may run; in the `-p` process's mount namespace
    /// when it has its own. Sorted, without duplicates.
    fn glob_binaries(&self, pattern: &str) -> Vec<String> {
        let _ = pattern;
        Vec::new()
    }
    /// The object-like `#define`s of the header of `#include INCLUDE` (as written:
    /// `<sys/socket.h>`, `"p.h"`) and of the headers it includes, as `(name, value text)`,
    /// first definition first. An error (shown on the `#include`) says that the header was
    /// not found, or which bound its headers reached; a kernel header that is not installed
    /// gives no definitions and no error (its types come from BTF).
    fn header_defines(&self, include: &str) -> Result<Vec<(String, String)>, HeaderError> {
        let _ = include;
        Ok(Vec::new())
    }
    /// The printf events of the recording a `replay` probe reads (`sonde replay FILE SCRIPT`),
    /// empty when the script is not run against a recording.
    fn recorded_events(&self) -> Vec<RecordedEvent> {
        Vec::new()
    }
    /// True when the script runs against a recording, even one without printf events (so
    /// that a `replay` probe can say which of the two it lacks).
    fn replaying(&self) -> bool {
        false
    }
}

/// The process user-space attach points resolve in (`-p PID`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TargetProcess {
    /// Its pid.
    pub pid: u32,
    /// Its executable, as bpftrace names it: `/proc/PID/root` and the path the process sees
    /// (`/proc/42/root/usr/bin/prog`), readable from any mount namespace. `None` when it
    /// cannot be read or was deleted.
    pub exe: Option<String>,
    /// Every file it maps (`/proc/PID/maps`), the executable first, named like `exe`; not
    /// every one is an ELF object.
    pub objects: Vec<String>,
}

/// A symbol of an ELF file's symbol tables (`.symtab` or `.dynsym`), as `uaddr()` needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ElfSymbol {
    /// The symbol's value: its link-time virtual address.
    pub address: u64,
    /// The symbol's size in bytes (0 when the table does not say).
    pub size: u64,
    /// True when the file is position independent (`ET_DYN`: a PIE or a shared library), so
    /// that its symbols are at their address plus the file's load bias at run time.
    pub relocatable: bool,
}

/// One kind of printf event stored in a recording: what a `replay` probe sees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedEvent {
    /// Index of the event kind in the recording.
    pub index: u32,
    /// The printf format string.
    pub format: String,
    /// The argument types, laid out as a tuple (`tuple_layout`).
    pub args: Vec<crate::types::Type>,
}

/// A [`KernelInfo`] that knows nothing: every lookup fails. Useful for parse-only paths.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoKernel;

impl KernelInfo for NoKernel {}

/// Why the `#define`s of an included header could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeaderError {
    /// The header is not where `#include` looks (the text says where it looked).
    NotFound(String),
    /// It was found, but it or the headers it includes could not be read whole (a bound
    /// reached, a file that is not a regular file).
    Unread(String),
}
