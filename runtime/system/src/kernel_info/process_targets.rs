//! User-space attach point targets as bpftrace 0.26 resolves them: in the process `-p PID`
//! names (its executable, the objects it maps, paths through its mount namespace), and
//! binaries given with wildcards (`./prog*`, `*`), expanded by a glob.
//!
//! bpftrace names the objects of a process through `/proc/PID/root` (`uprobe:*:f -p 42`
//! probes `/proc/42/root/usr/lib/libc.so.6:f`), whether or not the process lives in another
//! mount namespace, and resolves an explicit path (`uprobe:/opt/app:f -p 42`) through it
//! only when it does. These names are valid in any mount namespace: the kernel opens the
//! file the process sees.

use super::binaries;
use sonde_lang::kernel::TargetProcess;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// `/proc/PID/root`: the root directory of process `pid`, as it sees it.
pub fn pid_root(pid: u32) -> String {
    format!("/proc/{pid}/root")
}

/// `path` as seen from sonde through the root of process `pid` (`/proc/PID/root/path`);
/// unchanged when it already is.
pub fn in_pid_root(pid: u32, path: &str) -> String {
    let root = pid_root(pid);
    if path.starts_with(&format!("{root}/")) || path == root {
        return path.to_string();
    }
    let sep = if path.starts_with('/') { "" } else { "/" };
    format!("{root}{sep}{path}")
}

/// The device and inode of a file, following symbolic links.
fn file_id(path: &str) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// True when process `pid` lives in another mount namespace than sonde (false when either
/// cannot be read, as bpftrace falls back to sonde's own paths then).
pub fn other_mount_ns(pid: u32) -> bool {
    match (
        file_id("/proc/self/ns/mnt"),
        file_id(&format!("/proc/{pid}/ns/mnt")),
    ) {
        (Some(a), Some(b)) => a != b,
        _ => false,
    }
}

/// The files process `pid` maps, in the order of `/proc/PID/maps`, each once, as the process
/// sees them (deleted files left out).
fn mapped_paths(pid: u32) -> Result<Vec<String>, String> {
    let text =
        std::fs::read_to_string(format!("/proc/{pid}/maps")).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => format!("no process with pid {pid}"),
            _ => format!("cannot read the mappings of process {pid}: {e}"),
        })?;
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        let Some(path) = line.splitn(6, ' ').nth(5).map(str::trim_start) else {
            continue;
        };
        if path.starts_with('/') && !path.contains("(deleted)") && !out.iter().any(|p| p == path) {
            out.push(path.to_string());
        }
    }
    Ok(out)
}

/// The process `-p PID` names, as [`TargetProcess`] describes it.
pub fn target_process(pid: u32) -> Result<TargetProcess, String> {
    let mapped = mapped_paths(pid)?;
    let exe = std::fs::read_link(format!("/proc/{pid}/exe"))
        .ok()
        .map(|p| p.to_string_lossy().into_owned())
        .filter(|p| !p.contains("(deleted)"));
    let mut objects: Vec<String> = Vec::new();
    for path in exe.iter().chain(&mapped) {
        let named = in_pid_root(pid, path);
        if !objects.contains(&named) {
            objects.push(named);
        }
    }
    Ok(TargetProcess {
        pid,
        exe: exe.map(|e| in_pid_root(pid, &e)),
        objects,
    })
}

/// The name under which `process` maps the file at `path` (same device and inode).
pub fn mapping_of(process: &TargetProcess, path: &str) -> Option<String> {
    let id = file_id(path)?;
    process
        .objects
        .iter()
        .find(|o| file_id(o) == Some(id))
        .cloned()
}

/// The value of `$PATH` in the environment of process `pid`.
fn process_path_var(pid: u32) -> Option<String> {
    let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    environ
        .split(|&b| b == 0)
        .find_map(|v| v.strip_prefix(b"PATH="))
        .map(|v| String::from_utf8_lossy(v).into_owned())
}

/// Resolves a uprobe target for the `-p` process `pid`: a library name (`libc`, `libfoo`) is
/// first looked up among the objects the process maps, as bcc's `which_so` does for
/// bpftrace; in another mount namespace, paths and program names (searched in the process's
/// own `$PATH`) are resolved through `/proc/PID/root`. Otherwise as
/// [`binaries::resolve_binary`].
pub fn resolve_in_process(target: &str, pid: u32) -> Option<String> {
    let other_ns = other_mount_ns(pid);
    let here = |path: &str| {
        if other_ns {
            in_pid_root(pid, path)
        } else {
            path.to_string()
        }
    };
    if target.starts_with("lib") && !target.contains('/') {
        let mapped = mapped_paths(pid).unwrap_or_default();
        if let Some(lib) = mapped.iter().find(|p| {
            Path::new(p)
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| binaries::library_matches(n, target))
        }) {
            return Some(here(lib));
        }
    }
    if !other_ns {
        return binaries::resolve_binary(target);
    }
    if target.contains('/') {
        let inside = in_pid_root(pid, target);
        return Path::new(&inside).exists().then_some(inside);
    }
    let path_var = process_path_var(pid).unwrap_or_default();
    path_var
        .split(':')
        .filter(|d| !d.is_empty())
        .map(|d| in_pid_root(pid, &format!("{d}/{target}")))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file()))
        .or_else(|| {
            // A library the process has not mapped: where the linker cache puts it, in the
            // process's file system.
            binaries::resolve_binary(target)
                .map(|p| in_pid_root(pid, &p))
                .filter(|p| Path::new(p).exists())
        })
}

/// ELF type of an executable file (`ET_EXEC`).
const ET_EXEC: u16 = 2;
/// ELF type of a shared object or PIE (`ET_DYN`).
const ET_DYN: u16 = 3;

/// True when `path` is an ELF shared object (or PIE), or an ELF executable its owner may
/// run: what bpftrace accepts from a glob.
pub fn is_probe_binary(path: &str) -> bool {
    use std::io::Read;
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    if !meta.is_file() {
        return false;
    }
    let mut head = [0u8; 18];
    // Opened without blocking (a FIFO swapped in after the check above).
    let read = crate::user_files::open(path.as_ref(), crate::user_files::Pipes::Refuse)
        .and_then(|mut f| f.read_exact(&mut head));
    if read.is_err() || &head[..4] != b"\x7fELF" {
        return false;
    }
    let e_type = if head[5] == 2 {
        u16::from_be_bytes([head[16], head[17]])
    } else {
        u16::from_le_bytes([head[16], head[17]])
    };
    e_type == ET_DYN || (e_type == ET_EXEC && meta.mode() & 0o100 != 0)
}

/// The paths a glob `pattern` matches, in the order `glob(3)` gives them (sorted).
fn glob(pattern: &str) -> Vec<String> {
    let Ok(c) = std::ffi::CString::new(pattern) else {
        return Vec::new();
    };
    // SAFETY: `c` is a NUL-terminated pattern; `g` is zeroed as glob(3) expects and freed
    // below; the paths are copied out before `globfree`.
    unsafe {
        let mut g: libc::glob_t = std::mem::zeroed();
        let mut out = Vec::new();
        if libc::glob(c.as_ptr(), 0, None, &mut g) == 0 {
            for i in 0..g.gl_pathc {
                let p = *g.gl_pathv.add(i);
                if !p.is_null() {
                    out.push(std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned());
                }
            }
        }
        libc::globfree(&mut g);
        out
    }
}

/// bpftrace's expansion of a binary with wildcards (see `KernelInfo::glob_binaries`): the
/// glob of `pattern`, and of `DIR/pattern` for each `$PATH` directory when it has no `/`
/// (the process's `$PATH` and root when `pid` lives in another mount namespace), keeping
/// the files [`is_probe_binary`] accepts. Sorted, without duplicates.
pub fn glob_binaries(pattern: &str, pid: Option<u32>) -> Vec<String> {
    let ns_pid = pid.filter(|&p| other_mount_ns(p));
    let path_var = match ns_pid {
        Some(p) => process_path_var(p),
        None => std::env::var("PATH").ok(),
    };
    let mut candidates = vec![pattern.to_string()];
    if !pattern.contains('/') {
        for dir in path_var.unwrap_or_default().split(':') {
            if !dir.is_empty() {
                candidates.push(format!("{dir}/{pattern}"));
            }
        }
    }
    let mut out: Vec<String> = candidates
        .iter()
        .map(|c| match ns_pid {
            Some(p) => in_pid_root(p, c),
            None => c.clone(),
        })
        .flat_map(|c| glob(&c))
        .filter(|p| is_probe_binary(p))
        .collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_through_a_process_root() {
        assert_eq!(in_pid_root(42, "/usr/bin/x"), "/proc/42/root/usr/bin/x");
        assert_eq!(in_pid_root(42, "rel/x"), "/proc/42/root/rel/x");
        assert_eq!(in_pid_root(42, "/proc/42/root/x"), "/proc/42/root/x");
        assert_eq!(
            in_pid_root(42, "/proc/420/root/x"),
            "/proc/42/root/proc/420/root/x"
        );
    }

    #[test]
    fn this_process_as_a_target() {
        let pid = std::process::id();
        assert!(!other_mount_ns(pid));
        let me = target_process(pid).unwrap();
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        let named = format!("/proc/{pid}/root{}", exe.display());
        assert_eq!(me.exe.as_deref(), Some(named.as_str()));
        assert_eq!(me.objects[0], named);
        let libc = me
            .objects
            .iter()
            .find(|o| o.ends_with("/libc.so.6"))
            .expect("libc is mapped");
        // The file found by its own path is the process's mapping of it.
        let plain = libc.strip_prefix(&format!("/proc/{pid}/root")).unwrap();
        assert_eq!(mapping_of(&me, plain).as_ref(), Some(libc));
        assert_eq!(mapping_of(&me, "/etc/hostname"), None);
        // A library name is found among the mapped objects first.
        assert_eq!(resolve_in_process("libc", pid).as_deref(), Some(plain));
        assert!(target_process(u32::MAX).unwrap_err().contains("no process"));
    }

    #[test]
    fn globs_keep_elf_binaries() {
        let bins = glob_binaries("/bin/bas?", None);
        assert!(bins.iter().any(|b| b == "/bin/bash"), "{bins:?}");
        // Without a `/`, the pattern is also looked up in each $PATH directory.
        let bins = glob_binaries("bas?", None);
        assert!(bins.iter().any(|b| b.ends_with("/bash")), "{bins:?}");
        assert!(glob_binaries("/etc/host*", None).is_empty());
        assert!(is_probe_binary("/bin/bash"));
        assert!(!is_probe_binary("/etc/hostname"));
        assert!(!is_probe_binary("/bin"));
    }
}
