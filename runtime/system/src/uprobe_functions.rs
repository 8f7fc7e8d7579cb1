//! Where a uprobe on a function goes: the one place that turns "function `name` in the ELF
//! file at `path`" into the file offset a uprobe is attached at. Wildcard expansion
//! ([`crate::kernel_info::SystemKernel`]'s `elf_function_groups`), `sonde -l`, the
//! instruction-boundary check of `func+offset` (`elf_function_code`) and attachment
//! ([`crate::attach`]) all ask [`FileFunctions`], so they agree on every function.
//!
//! Two things make a symbol's value the wrong place, or one place twice:
//!
//! - **IFUNCs.** An `STT_GNU_IFUNC` symbol (glibc's `strlen`, `memcpy`, libm's `sin`, ...)
//!   points at a *resolver* that the dynamic linker runs once per relocation to pick an
//!   implementation for this CPU (`__strlen_avx2`, usually a local symbol absent from a
//!   stripped library). A uprobe on the resolver fires once per process, not once per call.
//!   The implementation is found by asking glibc's dynamic linker itself, `dlsym`, which runs
//!   the resolver and returns the chosen address; that address becomes a file offset through
//!   `/proc/self/maps`, after checking that the mapping there is the same file (device and
//!   inode) as the one probed.
//!   - A library already loaded in sonde (libc always is, with its dynamic linker) is asked in
//!     process: `dlopen(path, RTLD_NOLOAD | RTLD_LAZY)` returns the loaded copy without loading
//!     anything or running any constructor.
//!   - Any other library (libm, say) is loaded by a short-lived helper: the sonde executable
//!     re-executed (`/proc/self/exe`) with the hidden argument [`HELPER_ARG`], which
//!     `dlopen`s the library, prints the offsets and exits, within [`HELPER_TIMEOUT`]. The
//!     library's constructors thus run in that helper, **never in sonde**. An executable
//!     opts in by calling [`serve_helper`] first thing in `main` (the `sonde` binary does);
//!     in any other program (unit tests), or when the helper fails (an executable rather
//!     than a library, a library whose dependencies are missing), the probe falls back to
//!     the resolver and attaching prints a one-time warning naming the function.
//!
//!   The choice is this machine's: the same CPU features decide for the traced processes,
//!   unless one of them overrides glibc's choice (`GLIBC_TUNABLES=glibc.cpu.hwcaps=...`).
//! - **Aliases.** Several names of one address (`malloc` and `__libc_malloc`), and IFUNCs that
//!   resolve to the same implementation (`memcpy` and `memmove` may both land on
//!   `__memmove_avx_unaligned_erms`), are one place: they form one [`Site`], listed and
//!   attached once, under its preferred name ([`preference`]: a public name over
//!   `_`-prefixed ones, then the shorter, then alphabetical: `malloc`, `memcpy`).
//!
//! Whatever the function, [`check_probe_instruction`] refuses a uprobe whose instruction is
//! AVX-encoded (VEX/EVEX): the kernel loses what such an instruction writes when it steps
//! over the probe, and IFUNC implementations often start with one (glibc's `memset`,
//! `strchr`, `strchrnul`, `rawmemchr`, `wcschr` on an AVX-512 machine). Attaching says so,
//! and a wildcard skips them with a warning.
//!
//! Versioned symbols: a name defined in several versions (`memcpy@GLIBC_2.2.5` and the
//! default `memcpy@@GLIBC_2.14`) is the default version, the one programs link against and
//! `dlsym` returns.
//!
//! Answers are cached per path and checked against the file's identity (device, inode, size,
//! modification time), so the expansion and the attachment of one run resolve once.

use crate::elf_symbols::{address_to_offset, parse, read};
use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol, SymbolFlags, SymbolKind};
use std::collections::{BTreeMap, HashMap};
use std::ffi::{CStr, CString, OsString};
use std::io::{BufRead, Read, Write};
use std::os::unix::fs::MetadataExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The hidden first argument that makes the sonde executable resolve IFUNCs for its parent:
/// `sonde --sonde-internal-resolve-ifuncs PATH NAME...` (see [`serve_helper`]).
pub const HELPER_ARG: &str = "--sonde-internal-resolve-ifuncs";

/// How long the IFUNC helper may take before it is killed (and the resolvers are probed).
pub const HELPER_TIMEOUT: Duration = Duration::from_secs(10);

/// Prefix of the helper's answer lines (a constructor of the library may print too).
const ANSWER: &str = "sonde-ifunc";

/// The helper's last line.
const END: &str = "sonde-ifunc-end";

/// Set by [`serve_helper`]: this executable can be re-executed as the helper.
static HELPER_READY: AtomicBool = AtomicBool::new(false);

/// One place uprobes attach to in a file, with every function name found there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    /// The file offset of the first instruction (of the implementation, for an IFUNC), or
    /// `None` when the symbol lies in no loadable segment.
    pub offset: Option<u64>,
    /// The names of this place, the preferred one first.
    pub names: Vec<String>,
    /// The length of the code there, when a symbol size or the unwind table tells.
    pub code_len: Option<u64>,
    /// Set when this is the resolver of an IFUNC whose implementation could not be found:
    /// why (a probe here fires once per process, not once per call).
    pub unresolved_ifunc: Option<String>,
}

/// The functions of one ELF file, grouped by the place a uprobe on them goes.
#[derive(Debug)]
pub struct FileFunctions {
    path: String,
    sites: Vec<Site>,
    by_name: HashMap<String, usize>,
    /// Sites whose fallback warning was already printed.
    warned: Mutex<Vec<usize>>,
}

/// The order of preference among names of one place: a public name before `_`-prefixed ones,
/// then the shorter, then alphabetical.
pub fn preference(name: &str) -> (bool, usize, &str) {
    (name.starts_with('_'), name.len(), name)
}

/// What identifies one version of a file on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FileId {
    dev_major: u64,
    dev_minor: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
}

fn file_id(path: &str) -> Result<FileId, String> {
    let m = std::fs::metadata(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    Ok(FileId {
        dev_major: u64::from(libc::major(m.dev())),
        dev_minor: u64::from(libc::minor(m.dev())),
        ino: m.ino(),
        size: m.size(),
        mtime: (m.mtime(), m.mtime_nsec()),
    })
}

type Cache = Mutex<HashMap<String, (FileId, Arc<FileFunctions>)>>;

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// One defined function symbol, as chosen for its name.
#[derive(Clone, Copy, Debug)]
struct Chosen {
    address: u64,
    size: u64,
    ifunc: bool,
    /// Lower is better: `.symtab`, then default `.dynsym` versions, then hidden versions.
    rank: u8,
}

/// Whether dynamic symbol `index` is a hidden (non-default) version, from `.gnu.version`.
fn hidden_version(versym: Option<&[u8]>, index: usize) -> bool {
    versym
        .and_then(|v| v.get(index * 2..index * 2 + 2))
        .is_some_and(|b| u16::from_le_bytes([b[0], b[1]]) & 0x8000 != 0)
}

/// The function symbol each name stands for.
fn choose_symbols(file: &object::File<'_>) -> BTreeMap<String, Chosen> {
    let versym = file
        .section_by_name(".gnu.version")
        .and_then(|s| s.data().ok());
    let tables = [(file.symbols(), false), (file.dynamic_symbols(), true)];
    let mut out: BTreeMap<String, Chosen> = BTreeMap::new();
    for (symbols, dynamic) in tables {
        for sym in symbols {
            if sym.kind() != SymbolKind::Text || sym.is_undefined() {
                continue;
            }
            let Ok(name) = sym.name() else { continue };
            if name.is_empty() {
                continue;
            }
            let ifunc = matches!(sym.flags(), SymbolFlags::Elf { st_info, .. }
                if st_info & 0xf == object::elf::STT_GNU_IFUNC);
            let rank = match (dynamic, hidden_version(versym, sym.index().0)) {
                (false, _) => 0,
                (true, false) => 1,
                (true, true) => 2,
            };
            let new = Chosen {
                address: sym.address(),
                size: sym.size(),
                ifunc,
                rank,
            };
            match out.get(name) {
                Some(old) if old.rank <= rank => {}
                _ => {
                    out.insert(name.to_string(), new);
                }
            }
        }
    }
    out
}

/// The names of the functions of the ELF file at `path`, as [`function_groups`] holds them,
/// without working out where their uprobes go (cheap: to rule a file out of a wildcard).
pub fn function_names(path: &str) -> Result<Vec<String>, String> {
    let data = read(path)?;
    Ok(choose_symbols(&parse(path, &data)?).into_keys().collect())
}

/// The virtual address at file offset `off`, through the loadable segment holding it.
fn offset_to_address(file: &object::File<'_>, off: u64) -> Option<(u64, u64)> {
    file.segments().find_map(|seg| {
        let (file_off, file_size) = seg.file_range();
        (off >= file_off && off - file_off < file_size)
            .then(|| (seg.address() + (off - file_off), file_off + file_size))
    })
}

/// Size in bytes of a DWARF pointer encoding's value (`None` for unsupported ones).
fn encoded_size(enc: u8) -> Option<usize> {
    match enc & 0x0f {
        0x00 | 0x04 | 0x0c => Some(8),
        0x02 | 0x0a => Some(2),
        0x03 | 0x0b => Some(4),
        _ => None,
    }
}

/// The start addresses of the functions in `.eh_frame_hdr`'s search table (every function
/// with unwind information, stripped or not), sorted; empty when absent or unusual.
fn unwind_starts(file: &object::File<'_>) -> Vec<u64> {
    let Some(section) = file.section_by_name(".eh_frame_hdr") else {
        return Vec::new();
    };
    let Ok(d) = section.data() else {
        return Vec::new();
    };
    // version 1, eh_frame_ptr encoding, fde_count encoding, table encoding; the table must be
    // `DW_EH_PE_datarel | DW_EH_PE_sdata4` (what GNU ld, gold and lld write).
    let (Some(&1), Some(&ptr_enc), Some(&count_enc), Some(&0x3b)) =
        (d.first(), d.get(1), d.get(2), d.get(3))
    else {
        return Vec::new();
    };
    let (Some(ptr_len), Some(4)) = (encoded_size(ptr_enc), encoded_size(count_enc)) else {
        return Vec::new();
    };
    let count_at = 4 + ptr_len;
    let Some(count) = d.get(count_at..count_at + 4) else {
        return Vec::new();
    };
    let count = u32::from_le_bytes([count[0], count[1], count[2], count[3]]) as usize;
    let table = &d[count_at + 4..];
    let mut out: Vec<u64> = table
        .chunks_exact(8)
        .take(count)
        .map(|e| {
            let rel = i32::from_le_bytes([e[0], e[1], e[2], e[3]]);
            section.address().wrapping_add_signed(i64::from(rel))
        })
        .collect();
    out.sort_unstable();
    out
}

impl FileFunctions {
    /// The functions of the ELF file at `path`, computed once per version of the file.
    /// The error says which file failed and why (missing, unreadable, not ELF).
    pub fn of(path: &str) -> Result<Arc<FileFunctions>, String> {
        let id = file_id(path)?;
        let mut table = cache().lock().unwrap_or_else(|p| p.into_inner());
        if let Some((old, f)) = table.get(path)
            && *old == id
        {
            return Ok(f.clone());
        }
        let f = Arc::new(FileFunctions::compute(path, id)?);
        table.insert(path.to_string(), (id, f.clone()));
        Ok(f)
    }

    fn compute(path: &str, id: FileId) -> Result<FileFunctions, String> {
        let data = read(path)?;
        let file = parse(path, &data)?;
        let chosen = choose_symbols(&file);
        let ifuncs: Vec<&str> = chosen
            .iter()
            .filter(|(_, c)| c.ifunc)
            .map(|(n, _)| n.as_str())
            .collect();
        let resolved = resolve_ifuncs(path, id, &ifuncs);
        // Sized, non-IFUNC symbols by address: the length of code starting there.
        let mut sized: HashMap<u64, u64> = HashMap::new();
        for c in chosen.values().filter(|c| !c.ifunc && c.size > 0) {
            let e = sized.entry(c.address).or_default();
            *e = (*e).max(c.size);
        }
        let mut starts: Vec<u64> = chosen.values().map(|c| c.address).collect();
        starts.extend(unwind_starts(&file));
        starts.sort_unstable();
        starts.dedup();

        // offset -> (names, code length, fallback reason); unplaceable names stand alone.
        let mut places: BTreeMap<u64, Site> = BTreeMap::new();
        let mut loose: Vec<Site> = Vec::new();
        for (name, c) in &chosen {
            let (offset, code_len, unresolved) = match (c.ifunc, resolved.get(name.as_str())) {
                (true, Some(Ok(off))) => {
                    let len = offset_to_address(&file, *off).and_then(|(addr, seg_end)| {
                        sized.get(&addr).copied().or_else(|| {
                            let next = starts.iter().find(|&&s| s > addr)?;
                            let end = (*off + (next - addr)).min(seg_end);
                            Some(end - off)
                        })
                    });
                    (Some(*off), len, None)
                }
                (true, other) => {
                    let why = match other {
                        Some(Err(e)) => e.clone(),
                        _ => "it was not resolved".to_string(),
                    };
                    (
                        address_to_offset(&file, c.address),
                        (c.size > 0).then_some(c.size),
                        Some(why),
                    )
                }
                (false, _) => (
                    address_to_offset(&file, c.address),
                    sized.get(&c.address).copied(),
                    None,
                ),
            };
            let Some(offset) = offset else {
                loose.push(Site {
                    offset: None,
                    names: vec![name.clone()],
                    code_len,
                    unresolved_ifunc: unresolved,
                });
                continue;
            };
            let site = places.entry(offset).or_insert_with(|| Site {
                offset: Some(offset),
                names: Vec::new(),
                code_len: None,
                unresolved_ifunc: None,
            });
            site.names.push(name.clone());
            site.code_len = site.code_len.max(code_len);
            if unresolved.is_some() {
                site.unresolved_ifunc = unresolved;
            }
        }
        let mut sites: Vec<Site> = places.into_values().chain(loose).collect();
        for s in &mut sites {
            s.names.sort_by(|a, b| preference(a).cmp(&preference(b)));
        }
        let by_name = sites
            .iter()
            .enumerate()
            .flat_map(|(i, s)| s.names.iter().map(move |n| (n.clone(), i)))
            .collect();
        Ok(FileFunctions {
            path: path.to_string(),
            sites,
            by_name,
            warned: Mutex::new(Vec::new()),
        })
    }

    /// Every place of the file, each with its names (preferred first).
    pub fn sites(&self) -> &[Site] {
        &self.sites
    }

    /// The names of each place, preferred first: what `elf_function_groups` answers.
    pub fn groups(&self) -> Vec<Vec<String>> {
        self.sites.iter().map(|s| s.names.clone()).collect()
    }

    /// The place function `name` goes to.
    pub fn site(&self, name: &str) -> Option<&Site> {
        self.by_name.get(name).map(|&i| &self.sites[i])
    }

    /// The function whose code holds file offset `offset` (its preferred name) and the
    /// distance from its start; `None` when no function of known length does.
    pub fn containing(&self, offset: u64) -> Option<(String, u64)> {
        self.sites.iter().find_map(|s| {
            let (start, len) = (s.offset?, s.code_len?);
            let within = offset >= start && offset - start < len;
            within.then(|| (s.names.first().cloned().unwrap_or_default(), offset - start))
        })
    }

    /// The file offset a uprobe on function `name` is attached at, or an error text naming
    /// the function and the file.
    pub fn offset(&self, name: &str) -> Result<u64, String> {
        let path = &self.path;
        let site = self
            .site(name)
            .ok_or_else(|| format!("function `{name}` not found in {path}"))?;
        site.offset
            .ok_or_else(|| format!("function `{name}` lies in no loadable segment of {path}"))
    }

    /// Like [`FileFunctions::offset`], printing once per place the warning that an IFUNC is
    /// probed at its resolver. For attaching.
    pub fn attach_offset(&self, name: &str) -> Result<u64, String> {
        let offset = self.offset(name)?;
        if let Some(&i) = self.by_name.get(name)
            && let Some(why) = &self.sites[i].unresolved_ifunc
        {
            let mut warned = self.warned.lock().unwrap_or_else(|p| p.into_inner());
            if !warned.contains(&i) {
                warned.push(i);
                crate::warnings::warn(&format!(
                    "`{name}` in {} is an IFUNC whose implementation could not be found ({why}); \
                     its probe is on the resolver, which runs once per process, not once per call",
                    self.path
                ));
            }
        }
        Ok(offset)
    }

    /// The machine code at the place of function `name` (of the implementation, for an
    /// IFUNC), when its length is known and the file is x86-64.
    pub fn code(&self, name: &str) -> Option<Vec<u8>> {
        let site = self.site(name)?;
        let (start, len) = (site.offset?, site.code_len?);
        let data = read(&self.path).ok()?;
        let file = parse(&self.path, &data).ok()?;
        if file.architecture() != object::Architecture::X86_64 {
            return None;
        }
        let start = usize::try_from(start).ok()?;
        let end = start.checked_add(usize::try_from(len).ok()?)?;
        data.get(start..end).map(<[u8]>::to_vec)
    }
}

/// The file offset a uprobe on function `name` of the ELF file at `path` is attached at.
pub fn function_offset(path: &str, name: &str) -> Result<u64, String> {
    FileFunctions::of(path)?.offset(name)
}

/// The names of the functions of the ELF file at `path`, one entry per place, preferred
/// name first.
pub fn function_groups(path: &str) -> Result<Vec<Vec<String>>, String> {
    Ok(FileFunctions::of(path)?.groups())
}

/// The function of the ELF file at `path` whose code holds file offset `offset`, with the
/// distance from its start (see [`FileFunctions::containing`]).
pub fn function_at(path: &str, offset: u64) -> Result<Option<(String, u64)>, String> {
    Ok(FileFunctions::of(path)?.containing(offset))
}

/// The machine code a uprobe on function `name` of `path` lands in (see [`FileFunctions::code`]).
pub fn function_code(path: &str, name: &str) -> Option<Vec<u8>> {
    FileFunctions::of(path).ok()?.code(name)
}

/// Whether the x86-64 instruction at the start of `code` is VEX- or EVEX-encoded (AVX,
/// AVX2, AVX-512: a `0xc4`, `0xc5` or `0x62` byte after any legacy prefixes; in 64-bit mode
/// these bytes always start such an encoding).
pub fn vector_encoded(code: &[u8]) -> bool {
    let prefixes = [
        0x26, 0x2e, 0x36, 0x3e, 0x64, 0x65, 0x66, 0x67, 0xf0, 0xf2, 0xf3,
    ];
    let start = code.iter().take_while(|b| prefixes.contains(b)).count();
    matches!(code.get(start), Some(0xc4 | 0xc5 | 0x62))
}

/// Refuses a uprobe at file offset `offset` of the x86-64 ELF file at `path` when the
/// instruction there is VEX- or EVEX-encoded. The kernel runs a probed instruction by
/// single-stepping a copy of it, and (measured on Linux 6.18) the AVX state that step writes
/// is lost: a uprobe on glibc's `__memset_evex_unaligned_erms`, whose first instruction is
/// `vpbroadcastb %esi,%zmm16`, made 996 of 1000 `memset` calls fill garbage, in every
/// process of the system. IFUNC implementations often start so. Files of other
/// architectures, and offsets that cannot be read, are left to the kernel.
pub fn check_probe_instruction(path: &str, offset: u64) -> Result<(), String> {
    use std::io::{Seek, SeekFrom};
    let mut f = match crate::user_files::open(path.as_ref(), crate::user_files::Pipes::Refuse) {
        Ok(f) => f,
        // Not a regular file (a FIFO would block the open): no uprobe goes there.
        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
            return Err(format!("cannot read {path}: {e}"));
        }
        Err(_) => return Ok(()),
    };
    let mut header = [0u8; 20];
    let x86_64 = f.read_exact(&mut header).is_ok()
        && header.starts_with(b"\x7fELF")
        && header[4] == 2
        && u16::from_le_bytes([header[18], header[19]]) == object::elf::EM_X86_64;
    let mut code = [0u8; 15];
    let read = match x86_64 && f.seek(SeekFrom::Start(offset)).is_ok() {
        true => f.read(&mut code).unwrap_or(0),
        false => 0,
    };
    if vector_encoded(&code[..read]) {
        return Err(format!(
            "the instruction at file offset {offset:#x} is AVX-encoded (VEX/EVEX): the kernel \
             loses the vector registers such an instruction writes when a uprobe steps over it, \
             which would corrupt the traced processes; probe the next instruction (`func+N`, \
             see `objdump -d`) or the callers"
        ));
    }
    Ok(())
}

// ---- IFUNC resolution -----------------------------------------------------------------

/// One file-backed mapping of this process, with the identity of its file.
struct OwnMapping {
    start: u64,
    end: u64,
    offset: u64,
    dev: (u64, u64),
    ino: u64,
}

/// This process's file-backed mappings.
fn own_mappings() -> Vec<OwnMapping> {
    let text = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let mut f = line.split_ascii_whitespace();
            let (start, end) = f.next()?.split_once('-')?;
            let _perms = f.next()?;
            let offset = f.next()?;
            let (major, minor) = f.next()?.split_once(':')?;
            let ino: u64 = f.next()?.parse().ok()?;
            (ino != 0).then_some(())?;
            Some(OwnMapping {
                start: u64::from_str_radix(start, 16).ok()?,
                end: u64::from_str_radix(end, 16).ok()?,
                offset: u64::from_str_radix(offset, 16).ok()?,
                dev: (
                    u64::from_str_radix(major, 16).ok()?,
                    u64::from_str_radix(minor, 16).ok()?,
                ),
                ino,
            })
        })
        .collect()
}

fn same_file(m: &OwnMapping, id: FileId) -> bool {
    m.dev == (id.dev_major, id.dev_minor) && m.ino == id.ino
}

/// The last `dlerror()` text.
fn dl_error() -> String {
    // SAFETY: dlerror returns null or a NUL-terminated string valid until the next dl call
    // in this thread; it is copied at once.
    let e = unsafe { libc::dlerror() };
    if e.is_null() {
        "unknown dynamic linker error".to_string()
    } else {
        // SAFETY: non-null, NUL-terminated (see above).
        unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
    }
}

/// Asks this process's dynamic linker for the implementations of `names` in the library at
/// `path` (`dlopen` with `flags`, `dlsym`, then `/proc/self/maps`): per name, the file offset
/// of the implementation in that same file (`None` when `dlsym` fails or lands elsewhere).
fn resolve_here(
    path: &str,
    id: FileId,
    names: &[&str],
    flags: libc::c_int,
) -> Result<Vec<Option<u64>>, String> {
    let c_path = CString::new(path).map_err(|_| format!("{path} contains a NUL byte"))?;
    // SAFETY: a valid C string and documented flags. With RTLD_NOLOAD nothing is loaded and
    // no constructor runs; without it (only in the helper) the library's constructors run in
    // the helper process, which is what it is for.
    let handle = unsafe { libc::dlopen(c_path.as_ptr(), flags) };
    if handle.is_null() {
        return Err(dl_error());
    }
    let addrs: Vec<Option<u64>> = names
        .iter()
        .map(|n| {
            let c = CString::new(*n).ok()?;
            // SAFETY: a live handle and a valid C string; the result is only used as a number.
            let p = unsafe { libc::dlsym(handle, c.as_ptr()) };
            (!p.is_null()).then_some(p as u64)
        })
        .collect();
    // Read while the library is still open: closing the helper's only reference unmaps it.
    let maps = own_mappings();
    // SAFETY: the handle came from dlopen above and is closed once (this only drops the
    // reference that dlopen took).
    unsafe { libc::dlclose(handle) };
    Ok(addrs
        .into_iter()
        .map(|a| {
            let a = a?;
            let m = maps.iter().find(|m| m.start <= a && a < m.end)?;
            same_file(m, id).then(|| a - m.start + m.offset)
        })
        .collect())
}

/// Per IFUNC name of the file at `path`: the file offset of its implementation, or why it is
/// unknown.
fn resolve_ifuncs(path: &str, id: FileId, names: &[&str]) -> HashMap<String, Result<u64, String>> {
    if names.is_empty() {
        return HashMap::new();
    }
    let loaded_here = own_mappings().iter().any(|m| same_file(m, id));
    let answers: Result<Vec<Option<u64>>, String> = if loaded_here {
        resolve_here(path, id, names, libc::RTLD_NOLOAD | libc::RTLD_LAZY)
    } else if HELPER_READY.load(Ordering::Relaxed) {
        run_helper(path, names)
    } else {
        Err("the library is not loaded in sonde and no resolution helper is available".into())
    };
    names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let r =
                match &answers {
                    Ok(v) => v.get(i).copied().flatten().ok_or_else(|| {
                        "the dynamic linker did not find it in this file".to_string()
                    }),
                    Err(e) => Err(e.clone()),
                };
            (n.to_string(), r)
        })
        .collect()
}

/// Runs the helper (this executable with [`HELPER_ARG`]) on `path` and `names`.
fn run_helper(path: &str, names: &[&str]) -> Result<Vec<Option<u64>>, String> {
    let mut child = Command::new("/proc/self/exe")
        .arg(HELPER_ARG)
        .arg(path)
        .args(names)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start the resolution helper: {e}"))?;
    let stdout = child.stdout.take().ok_or("the helper has no output")?;
    // Read up to the helper's end line, not to end of file: a process the library's
    // constructor left behind may hold the pipe open.
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if line == END {
                break;
            }
            text.push_str(&line);
            text.push('\n');
        }
        text
    });
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) if start.elapsed() < HELPER_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(5));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    if status.is_none() {
        return Err(format!(
            "the resolution helper took more than {}s",
            HELPER_TIMEOUT.as_secs()
        ));
    }
    let text = wait_for_text(reader, Duration::from_secs(1)).unwrap_or_default();
    let mut found: HashMap<&str, Option<u64>> = HashMap::new();
    let mut error = None;
    for line in text.lines() {
        let mut f = line.split('\t');
        match (f.next(), f.next(), f.next()) {
            (Some(ANSWER), Some(name), Some(off)) => {
                found.insert(name, u64::from_str_radix(off, 16).ok());
            }
            (Some("sonde-ifunc-error"), Some(e), None) => error = Some(e.to_string()),
            _ => {}
        }
    }
    if let Some(e) = error {
        return Err(e);
    }
    if found.is_empty() {
        return Err("the resolution helper gave no answer".into());
    }
    Ok(names
        .iter()
        .map(|n| found.get(n).copied().flatten())
        .collect())
}

/// The reader thread's text, if it finishes within `limit`.
fn wait_for_text(reader: std::thread::JoinHandle<String>, limit: Duration) -> Option<String> {
    let start = Instant::now();
    while !reader.is_finished() {
        if start.elapsed() > limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    reader.join().ok()
}

/// Call first thing in `main` of an executable that may serve as the IFUNC helper (the
/// `sonde` binary): when `argv[1]` is [`HELPER_ARG`], resolves the IFUNCs `argv[3..]` of the
/// library `argv[2]` by loading it (its constructors run here, in the helper), prints one
/// `sonde-ifunc\tNAME\tHEX_OFFSET` line per name found in that file, then `sonde-ifunc-end`,
/// and exits without returning. Otherwise it only records that this executable can be
/// re-executed as the helper, and returns.
pub fn serve_helper(argv: &[OsString]) {
    if argv.get(1).and_then(|a| a.to_str()) != Some(HELPER_ARG) {
        HELPER_READY.store(true, Ordering::Relaxed);
        return;
    }
    let args: Vec<String> = argv[2..]
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let mut out = String::new();
    match args.split_first() {
        None => out.push_str("sonde-ifunc-error\tno library named\n"),
        Some((path, names)) => {
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let answers =
                file_id(path).and_then(|id| resolve_here(path, id, &names, libc::RTLD_LAZY));
            match answers {
                Ok(offsets) => {
                    for (n, off) in names.iter().zip(offsets) {
                        if let Some(off) = off {
                            out.push_str(&format!("{ANSWER}\t{n}\t{off:x}\n"));
                        }
                    }
                }
                Err(e) => out.push_str(&format!("sonde-ifunc-error\t{}\n", e.replace('\n', " "))),
            }
        }
    }
    out.push_str(END);
    out.push('\n');
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(out.as_bytes());
    let _ = stdout.flush();
    // SAFETY: ends this helper process at once, without running the destructors of the
    // library it loaded; everything it had to say is written.
    unsafe { libc::_exit(0) }
}

#[cfg(test)]
mod tests;
